//! What every command that talks to a server shares: turning connection arguments into libpq
//! parameters, connecting with retries, and Ctrl-C (or SIGTERM) cancelling server work before
//! exiting.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::cli::{ConnArgs, SessionArgs};
use crate::db::connect::{CancelRegistry, ConnectOptions, Connection, connect};
use crate::db::conninfo::{self, ConnParams, ConnRequest, Environment};
use crate::db::retry::RetryPolicy;
use crate::db::session::Limits;
use crate::exit::{Exit, Interrupted};
use crate::report::TextOptions;

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

/// Where a report goes: `--output FILE`, or standard output, buffered either way (stdout flushes
/// at every newline otherwise, a system call per line of a long report). Text for a file is
/// never coloured or wrapped. A file is written beside its destination under a temporary name
/// and renamed into place by `flush`, so a reader (node_exporter's textfile collector scrapes
/// `*.prom` at any moment) sees the previous report or the new one, never half of one; a run
/// that fails before the flush leaves the previous report where it was.
pub fn report_destination(
    output: Option<&std::path::Path>,
    options: &TextOptions,
) -> Result<(Box<dyn std::io::Write>, TextOptions)> {
    match output {
        Some(path) => Ok((Box::new(ReportFile::create(path)?), TextOptions::default())),
        None => Ok((
            Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            *options,
        )),
    }
}

/// A report file written under a temporary name in the destination's directory (rename is
/// atomic only within one file system) and renamed over the destination on `flush`.
struct ReportFile {
    file: std::io::BufWriter<std::fs::File>,
    temporary: std::path::PathBuf,
    destination: std::path::PathBuf,
    renamed: bool,
}

impl ReportFile {
    fn create(destination: &std::path::Path) -> Result<Self> {
        let name = destination
            .file_name()
            .with_context(|| format!("{} names no file", destination.display()))?;
        // A leading dot and a suffix of its own: no "*.prom" pattern matches the temporary file.
        let temporary = destination.with_file_name(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = std::fs::File::create(&temporary)
            .with_context(|| format!("creating {}", temporary.display()))?;
        Ok(Self {
            file: std::io::BufWriter::new(file),
            temporary,
            destination: destination.to_owned(),
            renamed: false,
        })
    }
}

impl std::io::Write for ReportFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        if !self.renamed {
            std::fs::rename(&self.temporary, &self.destination).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "renaming {} to {}: {e}",
                        self.temporary.display(),
                        self.destination.display()
                    ),
                )
            })?;
            self.renamed = true;
        }
        Ok(())
    }
}

impl Drop for ReportFile {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// Reads one node's audit snapshot in a read-only transaction with `limits`.
pub async fn read_audit_snapshot(
    conn: &mut Connection,
    limits: &Limits,
    scope: &crate::audit::Scope,
) -> Result<crate::audit::NodeSnapshot, String> {
    let facts = conn.facts.clone();
    conn.read_only(limits, async |client| {
        crate::db::catalog::read_snapshot(client, &facts, scope)
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
        tokio::select! {
            result = &mut work => return result,
            _ = sigint.recv() => {}
            _ = sigterm.recv() => {}
        }
        // Set before cancelling, so the work sees it when the cancelled statement returns and
        // starts nothing more (compare would otherwise go on to the next candidate).
        STOP_REQUESTED.store(true, Ordering::SeqCst);
        if self.registry.is_empty() {
            return Err(Exit::Interrupted(Interrupted::BeforeConnecting).into());
        }
        eprintln!("pgplan: interrupted: cancelling the running statement and rolling back");
        self.registry.cancel_all().await;
        let outcome = tokio::select! {
            _ = &mut work => Interrupted::RolledBack,
            _ = sigint.recv() => Interrupted::Abandoned,
            _ = sigterm.recv() => Interrupted::Abandoned,
            _ = tokio::time::sleep(Duration::from_secs(10)) => Interrupted::Abandoned,
        };
        Err(Exit::Interrupted(outcome).into())
    }
}

/// Set once the user interrupts. Signals are process-wide, so this is too: work that runs
/// several transactions checks it between statements ([`stop_requested`]) and starts no new
/// one after a cancel.
static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

/// Whether the user has interrupted pgplan: start no new server work.
pub fn stop_requested() -> bool {
    STOP_REQUESTED.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::report_destination;
    use crate::report::TextOptions;

    #[test]
    fn an_output_file_appears_whole_on_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgplan.prom");
        std::fs::write(&path, "previous\n").unwrap();
        let (mut out, _) = report_destination(Some(&path), &TextOptions::default()).unwrap();
        writeln!(out, "new report").unwrap();
        // Half written: the reader still sees the previous report, and no other *.prom.
        let names = || -> Vec<String> {
            std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "previous\n");
        assert_eq!(
            names().iter().filter(|n| n.ends_with(".prom")).count(),
            1,
            "{:?}",
            names()
        );
        out.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new report\n");
        drop(out);
        assert_eq!(names(), vec!["pgplan.prom".to_owned()]);
    }

    #[test]
    fn a_report_never_flushed_leaves_the_previous_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.txt");
        std::fs::write(&path, "previous\n").unwrap();
        let (mut out, _) = report_destination(Some(&path), &TextOptions::default()).unwrap();
        write!(out, "half of a repo").unwrap();
        drop(out);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "previous\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
