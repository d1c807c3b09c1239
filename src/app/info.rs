//! `pgplan info`: connect like psql, read the server's facts, say what pgplan can do there.

use std::io::{self, Write};

use anyhow::Result;

use crate::cli::{InfoArgs, InfoFormat};
use crate::db::facts::read_table_ownership;
use crate::exit;
use crate::report::info::{InfoDoc, InfoReport, write_text};
use crate::report::{TextOptions, write_json};

use super::live::{Interrupt, open, resolve, runtime};

pub fn info(args: InfoArgs, verbose: u8, options: &TextOptions) -> Result<u8> {
    let params = resolve(&args.conn)?;
    let sources = if verbose > 0 {
        params.explain_sources()
    } else {
        Vec::new()
    };
    let interrupt = Interrupt::new();
    let report = runtime()?.block_on(interrupt.run(async {
        let connection = open(&params, &args.session, &interrupt).await?;
        let ownership = read_table_ownership(&connection.client)
            .await
            .map_err(anyhow::Error::msg)?;
        Ok(InfoReport {
            target: connection.target.clone(),
            encrypted: connection.encrypted,
            facts: connection.facts.clone(),
            ownership: Some(ownership),
            sources,
        })
    }))?;
    let mut out = io::stdout().lock();
    match args.format {
        InfoFormat::Json => write_json(&mut out, &InfoDoc::new(&report))?,
        InfoFormat::Text => write_text(&mut out, &report, options)?,
    }
    out.flush()?;
    Ok(exit::SUCCESS)
}
