//! `pgplan audit`: every node read concurrently, each in one `BEGIN READ ONLY` transaction with
//! transaction-local limits; the snapshots combined by the pure audit; a node that cannot be
//! reached reported with its error while the others' results still come out.
//!
//! The `-d` nodes are grouped by the database each one asks for (its resolved `dbname`, known
//! before connecting, so a node that cannot be reached still lands in its group): each group is
//! one database of a cluster, audited on its own, and the reports are merged.

use std::io::Write;

use anyhow::{Context, Result};

use crate::audit::{
    AuditOptions, AuditReport, DatabaseNodes, NodeResult, Scope, Severity, audit_databases,
};
use crate::cli::{AuditArgs, AuditFormat, ConnArgs, ConnectionsArg, SessionArgs};
use crate::db::catalog::Helper;
use crate::db::conninfo::{ConnParams, redact};
use crate::db::session::Limits;
use crate::report::TextOptions;
use crate::report::audit::{
    write_audit_markdown_from, write_audit_prometheus, write_audit_run_prometheus,
    write_audit_text_from,
};
use crate::report::wire_audit::write_audit_json;
use crate::server::ServerFacts;

use super::live::{Interrupt, open, read_audit_snapshot, report_destination, resolve, runtime};

/// One node to audit: what the user called it (redacted) and how to reach it.
struct Target {
    name: String,
    params: ConnParams,
}

/// Resolves every `-d` (or the environment's one node when none is given) before connecting;
/// a node whose parameters are wrong is a usage error, not a partial result.
fn targets(args: &AuditArgs) -> Result<Vec<Target>> {
    let dbnames: Vec<Option<String>> = if args.nodes.is_empty() {
        vec![None]
    } else {
        args.nodes.iter().cloned().map(Some).collect()
    };
    dbnames
        .into_iter()
        .map(|dbname| {
            let conn = ConnArgs {
                dbname: dbname.clone(),
                host: args.host.clone(),
                port: args.port.clone(),
                username: args.username.clone(),
            };
            let params = resolve(&conn).with_context(|| {
                format!(
                    "node {}",
                    dbname
                        .as_deref()
                        .map(redact)
                        .unwrap_or_else(|| "(from the environment)".into())
                )
            })?;
            let name = match &dbname {
                Some(d) if d.contains('=') || d.contains("://") => redact(d),
                _ => short_name(&params),
            };
            Ok(Target { name, params })
        })
        .collect()
}

/// "host=db1 port=5432 dbname=app": the parameters that tell nodes apart, never a password.
fn short_name(params: &ConnParams) -> String {
    let hosts: Vec<String> = params
        .hosts
        .iter()
        .map(|h| {
            h.host
                .clone()
                .or_else(|| h.hostaddr.map(|a| a.to_string()))
                .unwrap_or_default()
        })
        .collect();
    let ports: Vec<String> = params.hosts.iter().map(|h| h.port.to_string()).collect();
    format!(
        "host={} port={} dbname={}",
        hosts.join(","),
        ports.join(","),
        params.dbname.value
    )
}

/// `pgplan audit`: every node read, the audit run over what was read, the report written.
pub fn audit_command(args: AuditArgs, options: &TextOptions) -> Result<u8> {
    let started = std::time::Instant::now();
    let targets = targets(&args)?;
    let scope = Scope {
        schemas: args.schemas.clone(),
        exclude_schemas: args.exclude_schemas.clone(),
        tables: args.tables.clone(),
    };
    let limits = Limits::read_only_defaults()
        .with(args.session.statement_timeout, args.session.lock_timeout);
    // Checked (and for a file, its temporary created) before any node is read.
    let (mut out, text_options) = report_destination(args.output.as_deref(), options)?;
    let interrupt = Interrupt::new();
    let reader = NodeReader {
        scope: &scope,
        session: &args.session,
        connections: args.connections,
        limits,
        interrupt: &interrupt,
    };
    let results = runtime()?.block_on(interrupt.run(async {
        // Nodes are read concurrently: the slowest node, not their sum, sets the time.
        let reads = targets.iter().map(|target| reader.read(target));
        Ok(futures_util::future::join_all(reads).await)
    }))?;
    for result in &results {
        if let Err(error) = &result.outcome {
            eprintln!("pgplan: node {} failed: {}", result.name, first_line(error));
        }
    }
    let unmatched = unmatched_scope(&scope, &results);
    // The pure audit runs once every read is done, so its CPU time never delays a read.
    let groups = by_database(&targets, results);
    let report = audit_databases(&groups, &audit_options(&args));
    // The snapshots are done with: their memory serves the output instead of adding to it.
    drop(groups);
    write_report(&mut out, &args, &report, &text_options, started)?;
    out.flush()?;
    let fail_on: Severity = args.fail_on.into();
    let mut code = report.exit_code(fail_on);
    if !unmatched.is_empty() {
        eprintln!(
            "pgplan: {} matched no table: nothing was audited for {}",
            unmatched.join(", "),
            if unmatched.len() == 1 { "it" } else { "them" }
        );
        code = code.max(crate::exit::ERROR);
    }
    // The process exits next: freeing the report one allocation at a time (hundreds of
    // thousands at 50,000 findings) would only delay the exit.
    std::mem::forget(report);
    Ok(code)
}

/// The audit's thresholds from the arguments.
fn audit_options(args: &AuditArgs) -> AuditOptions {
    AuditOptions {
        min_size_bytes: args.min_size,
        min_stats_age: args.min_stats_age,
        horizon_min_age: args.horizon_min_age,
        idle_in_transaction_min_age: args.idle_in_transaction_min_age,
        lock_wait_min_age: args.lock_wait_min_age,
        object_figures: matches!(args.format, AuditFormat::Prometheus),
    }
}

/// What reading one node takes besides the node: the same for every node.
struct NodeReader<'a> {
    scope: &'a Scope,
    session: &'a SessionArgs,
    connections: ConnectionsArg,
    limits: Limits,
    interrupt: &'a Interrupt,
}

impl NodeReader<'_> {
    /// Reads `target`'s snapshot in one read-only transaction, or why it could not be read.
    async fn read(&self, target: &Target) -> NodeResult {
        let (session, interrupt) = (self.session, self.interrupt);
        let outcome = async {
            let mut conn = open(&target.params, session, interrupt)
                .await
                .map_err(|e| super::render_error(&e))?;
            let first = conn.facts.clone();
            let helper = wants_helper(self.connections, &first).then(|| Helper {
                // A helper that cannot connect is done without: one connection reads
                // everything, as it would with `--connections 1`. So is one that reached
                // another server (a host list, a load balancer): it could not import
                // the snapshot there anyway.
                connection: Box::pin(async move {
                    let helper = open(&target.params, session, interrupt).await.ok()?;
                    same_node(&first, &helper.facts).then_some(helper)
                }),
                limits: self.limits,
            });
            read_audit_snapshot(&mut conn, &self.limits, self.scope, helper).await
        }
        .await;
        NodeResult {
            name: target.name.clone(),
            outcome,
        }
    }
}

/// A --schema or --table that matched no table on any node it was read from.
fn unmatched_scope(scope: &Scope, results: &[NodeResult]) -> Vec<String> {
    let read: Vec<&crate::audit::snapshot::NodeSnapshot> = results
        .iter()
        .filter_map(|r| r.outcome.as_ref().ok())
        .collect();
    if read.is_empty() {
        return Vec::new();
    }
    let all: Vec<crate::audit::snapshot::Table> =
        read.iter().flat_map(|s| s.tables.iter().cloned()).collect();
    crate::audit::scope_match::unmatched(scope, &all)
}

/// Writes the report in the format asked for; Prometheus's adds the run's own figures, the
/// run having begun at `started`.
fn write_report(
    out: &mut dyn Write,
    args: &AuditArgs,
    report: &AuditReport,
    text_options: &TextOptions,
    started: std::time::Instant,
) -> Result<()> {
    let min_severity: Severity = args.min_severity.into();
    match args.format {
        AuditFormat::Text => write_audit_text_from(out, report, text_options, min_severity)?,
        AuditFormat::Json => write_audit_json(out, report)?,
        AuditFormat::Markdown => write_audit_markdown_from(out, report, min_severity)?,
        AuditFormat::Html => crate::report::html::write_audit(out, report)?,
        AuditFormat::Prometheus => {
            write_audit_prometheus(out, report)?;
            let finished = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            write_audit_run_prometheus(out, finished, started.elapsed().as_secs_f64())?;
        }
    }
    Ok(())
}

/// pg_index's size from which `--connections auto` reads the indexes on a second connection:
/// about 10,000 indexes (some 200 bytes each), where the index statement takes some 50 ms and a
/// local connection a few.
const HELPER_FROM_INDEX_CATALOG_BYTES: i64 = 2 << 20;

/// Whether to open a second connection to read the indexes beside everything else.
fn wants_helper(connections: ConnectionsArg, facts: &ServerFacts) -> bool {
    match connections {
        ConnectionsArg::One => false,
        ConnectionsArg::Two => true,
        ConnectionsArg::Auto => {
            facts.index_catalog_bytes.unwrap_or(0) >= HELPER_FROM_INDEX_CATALOG_BYTES
        }
    }
}

/// Whether two connections' facts are of one node and database, as far as the role can tell.
fn same_node(a: &ServerFacts, b: &ServerFacts) -> bool {
    a.database == b.database
        && a.in_recovery == b.in_recovery
        && a.version_num == b.version_num
        && a.system_identifier == b.system_identifier
        && a.started_at == b.started_at
}

/// The nodes grouped by the database they asked for, groups in the order their first node was
/// given and nodes in `-d` order within a group. `results` are in `targets` order.
fn by_database(targets: &[Target], results: Vec<NodeResult>) -> Vec<DatabaseNodes> {
    let mut groups: Vec<DatabaseNodes> = Vec::new();
    for (target, result) in targets.iter().zip(results) {
        let database = &target.params.dbname.value;
        match groups.iter_mut().find(|g| &g.database == database) {
            Some(group) => group.nodes.push(result),
            None => groups.push(DatabaseNodes {
                database: database.clone(),
                nodes: vec![result],
            }),
        }
    }
    groups
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}
