//! Opening the connection that watches for waiting writers, for the commands that build.

use anyhow::{Context, Result};

use super::live::{Interrupt, open};
use crate::cli::SessionArgs;
use crate::compare::writers::WriterPolicy;
use crate::db::connect::Connection;
use crate::db::conninfo::ConnParams;
use crate::measure::writers::Writers;

/// The writer policy of a command on `worker`'s server, with the watch's own connection (the
/// worker's is busy with the statement it watches) when writers are watched and the command
/// `builds` anything.
pub async fn open_writers(
    policy: WriterPolicy,
    params: &ConnParams,
    session: &SessionArgs,
    interrupt: &Interrupt,
    worker: &Connection,
    builds: bool,
) -> Result<Writers> {
    let watch = match policy.max_writer_wait {
        Some(_) if builds => Some(
            open(params, session, interrupt)
                .await
                .context("opening the connection that watches for waiting writers")?,
        ),
        _ => None,
    };
    Ok(Writers::new(policy, worker, watch))
}
