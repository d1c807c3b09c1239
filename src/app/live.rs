//! What every command that talks to a server shares: turning connection arguments into libpq
//! parameters, connecting with retries, and Ctrl-C (or SIGTERM) cancelling server work before
//! exiting.

use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::cli::{ConnArgs, SessionArgs};
use crate::db::connect::{CancelRegistry, ConnectOptions, Connection, connect};
use crate::db::conninfo::{self, ConnParams, ConnRequest, Environment};
use crate::db::retry::RetryPolicy;
use crate::db::session::Limits;
use crate::exit::{Exit, Interrupted, Signal};

/// A single-threaded runtime: pgplan's work is waiting on servers, and one thread keeps the order
/// of progress messages and cancellation simple.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// `-v`, for every command that connects.
static VERBOSITY: AtomicU8 = AtomicU8::new(0);

/// Sets the `-v` level for the run (once, before any command connects).
pub fn set_verbosity(level: u8) {
    VERBOSITY.store(level, Ordering::Relaxed);
}

/// Resolves connection parameters as psql would from these arguments and the environment, and
/// prints the resolver's warnings (an ignored password file, ...) on stderr. With `-v` it also
/// prints where each parameter came from, before anything connects, so a connection that fails
/// can be debugged from what was tried.
pub fn resolve(conn: &ConnArgs) -> Result<ConnParams> {
    let request = ConnRequest {
        dbname: conn.dbname.clone(),
        host: conn.host.clone(),
        port: conn.port.clone(),
        user: conn.username.clone(),
    };
    let params = conninfo::resolve(&request, &Environment::from_process())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for warning in &params.warnings {
        eprintln!("pgplan: warning: {warning}");
    }
    if VERBOSITY.load(Ordering::Relaxed) > 0 {
        eprint!("{}", sources_text(&params));
    }
    Ok(params)
}

/// Each connection parameter, its value (passwords as `********`) and its source, a line each.
fn sources_text(params: &ConnParams) -> String {
    let rows = params.explain_sources();
    let width = rows
        .iter()
        .map(|(name, _, _)| name.len())
        .max()
        .unwrap_or(0);
    let mut text = format!("pgplan: connecting to {}\n", params.redacted());
    for (name, value, source) in rows {
        text.push_str(&format!("pgplan:   {name:<width$} = {value}  ({source})\n"));
    }
    text
}

/// Connects with the retry policy from `--retries`, telling stderr about each retry; the
/// connection's server work is cancelled on Ctrl-C from the moment the server accepts it.
pub async fn open(
    params: &ConnParams,
    session: &SessionArgs,
    interrupt: &Interrupt,
) -> Result<Connection> {
    let options = ConnectOptions {
        retry: RetryPolicy::new(session.retries),
        cancel: Some(interrupt.registry.clone()),
        limits: Limits::read_only_defaults().with(session.statement_timeout, session.lock_timeout),
    };
    let connection = connect(params, &options, |error, attempt, delay| {
        eprintln!(
            "pgplan: {}; retry {attempt} of {} in {:.1} s",
            first_line(&error.to_string()),
            session.retries,
            delay.as_secs_f64()
        );
    })
    .await?;
    Ok(connection)
}

pub use super::output::report_destination;

/// Reads one node's audit snapshot in a read-only transaction with `limits`, on its snapshot
/// with a `helper` connection reading the indexes.
pub async fn read_audit_snapshot(
    conn: &mut Connection,
    limits: &Limits,
    scope: &crate::audit::Scope,
    helper: Option<crate::db::catalog::Helper<'_>>,
) -> Result<crate::audit::NodeSnapshot, String> {
    let facts = conn.facts.clone();
    conn.read_only_repeatable(limits, async |client| {
        crate::db::catalog::read_snapshot(client, &facts, scope, helper)
            .await
            .map_err(|e| crate::db::session::SessionError {
                context: "reading the catalog".into(),
                message: e.to_string(),
                sqlstate: None,
            })
    })
    .await
    .map_err(|e| e.to_string())
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

/// Connections whose running statements must be cancelled when the user interrupts.
#[derive(Clone, Default)]
pub struct Interrupt {
    registry: CancelRegistry,
}

impl Interrupt {
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel this connection's work on Ctrl-C (connections made with [`open`] already are).
    pub fn watch(&self, connection: &Connection) {
        self.registry.register(connection.cancel_handle());
    }

    /// The registry to pass in [`ConnectOptions`] for connections made elsewhere.
    pub fn registry(&self) -> CancelRegistry {
        self.registry.clone()
    }

    /// Runs `work`; on SIGINT or SIGTERM, sends a cancel request on every watched connection,
    /// lets `work` finish its rollback (bounded), and fails with [`Exit::Interrupted`]. A second
    /// signal stops waiting: the server rolls back on disconnect anyway.
    pub async fn run<T>(&self, work: impl Future<Output = Result<T>>) -> Result<T> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut sigint =
            signal(SignalKind::interrupt()).context("installing the Ctrl-C handler")?;
        let mut sigterm =
            signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        tokio::pin!(work);
        let signal = tokio::select! {
            result = &mut work => return result,
            _ = sigint.recv() => Signal::Interrupt,
            _ = sigterm.recv() => Signal::Terminate,
        };
        // Set before cancelling, so the work sees it when the cancelled statement returns and
        // starts nothing more (compare would otherwise go on to the next candidate).
        crate::db::cancel::request_stop();
        if self.registry.is_empty() {
            return Err(Exit::Interrupted {
                signal,
                outcome: Interrupted::BeforeConnecting,
            }
            .into());
        }
        let word = match signal {
            Signal::Interrupt => "interrupted",
            Signal::Terminate => "terminated (SIGTERM)",
        };
        eprintln!("pgplan: {word}: cancelling the running statement and rolling back");
        self.registry.cancel_all().await;
        let outcome = tokio::select! {
            _ = &mut work => Interrupted::RolledBack,
            _ = sigint.recv() => Interrupted::Abandoned,
            _ = sigterm.recv() => Interrupted::Abandoned,
            _ = tokio::time::sleep(Duration::from_secs(10)) => Interrupted::Abandoned,
        };
        Err(Exit::Interrupted { signal, outcome }.into())
    }
}

pub use crate::db::cancel::stop_requested;
