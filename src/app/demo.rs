//! `pgplan demo`: a throwaway server, the events story loaded into it, `compare` with three
//! candidate indexes, explained, the same candidates over a three-query workload with its
//! writes, `advise` proposing and measuring its own over that workload, an audit of the
//! server; then the server and its files are removed.

use std::io::{self, Write};
use std::time::Instant;

use anyhow::{Context, Result, anyhow};

use crate::advise::report::AdviseReport;
use crate::audit::{AuditOptions, AuditReport, NodeResult, Scope, audit};
use crate::cli::DemoArgs;
use crate::compare::workload::{SourceQuery, WorkloadReport};
use crate::compare::{CompareReport, CompareRequest, RequestInput, Verdict};
use crate::db::cluster::{
    Cluster, ClusterError, ClusterOptions, ServerBinaries, binaries_cache_dir,
};
use crate::db::connect::{ConnectOptions, Connection, connect};
use crate::db::conninfo::{ConnRequest, Environment, resolve};
use crate::db::fetch::{self, FetchOptions};
use crate::db::retry::RetryPolicy;
use crate::db::session::Limits;
use crate::exit;
use crate::pgdist::Release;
use crate::report::audit::{write_audit_markdown, write_audit_text};
use crate::report::wire_audit::{AuditDoc, audit_doc};
use crate::report::{Format, Paint, TextOptions, compare as render, write_json};

use super::advise::{AdviseSettings, run_advise};
use super::live::{Interrupt, read_audit_snapshot, runtime};
use super::progress::Progress;
use super::workload::{WorkloadSettings, run_workload};
use crate::measure::one_query::run_compare;

/// The story's table and rows (500,000 events).
const STORY_SQL: &str = include_str!("../../demo/story.sql");
/// The dashboard query.
const QUERY_SQL: &str = include_str!("../../demo/query.sql");
/// The candidates, in the order the story tells them.
const CANDIDATES: [&str; 3] = [
    "CREATE INDEX ON events (status)",
    "CREATE INDEX CONCURRENTLY events_pending_created_at_idx ON events (created_at DESC) WHERE status = 'pending'",
    "CREATE INDEX ON events (tenant_id, created_at)",
];

/// The workload story's queries (file name, text), with their `-- calls:` per day.
const WORKLOAD: [(&str, &str); 3] = [
    (
        "dashboard.sql",
        include_str!("../../demo/workload/dashboard.sql"),
    ),
    (
        "tenant_feed.sql",
        include_str!("../../demo/workload/tenant_feed.sql"),
    ),
    (
        "finish_event.sql",
        include_str!("../../demo/workload/finish_event.sql"),
    ),
];

/// `pgplan demo --format json`: the compare report, the workload report and the audit that
/// follows them.
#[derive(Debug, serde::Serialize)]
pub struct DemoDoc<'a> {
    pub schema_version: u32,
    pub compare: render::CompareDoc<'a>,
    pub workload: crate::report::workload::WorkloadDoc,
    /// `pgplan advise` over the same workload: the indexes it proposes and measures itself.
    pub advise: crate::report::advise::AdviseDoc,
    pub audit: AuditDoc<'a>,
}

fn step(message: &str) {
    eprintln!("pgplan demo: {message}");
}

/// Why each candidate of the story gets the verdict it usually gets, said only when it did.
fn explanation(name: &str, verdict: Verdict) -> Option<&'static str> {
    match (name, verdict) {
        ("events_status_idx", Verdict::Unused) => Some(
            "'pending' is 70% of the rows: reading them through an index on status would touch \
             more pages than scanning the table, so the planner keeps its plan",
        ),
        ("events_pending_created_at_idx", Verdict::Pays) => Some(
            "it holds only the pending rows, already in created_at DESC order: the query reads the \
             first 50 entries and stops, a handful of pages instead of the whole table",
        ),
        ("events_tenant_id_created_at_idx", Verdict::Unused) => Some(
            "the query does not filter on tenant_id, the index's leading column, so the index \
             cannot find the rows it wants",
        ),
        _ => None,
    }
}

/// The server binaries the machine has; on a machine with none, the pinned build fetched once
/// into the cache (and reused from there).
fn find_or_fetch_binaries(explicit: Option<&std::path::Path>) -> Result<ServerBinaries> {
    match ServerBinaries::discover(explicit) {
        Ok(found) => Ok(found),
        Err(ClusterError::BinariesNotFound { searched }) => {
            let release = Release::newest();
            step(&format!(
                "no PostgreSQL server binaries found (looked in: {searched}); fetching PostgreSQL {} once",
                release.server_version()
            ));
            let dir = fetch::ensure(
                &binaries_cache_dir(),
                release,
                &FetchOptions::from_environment("pgplan demo"),
            )?;
            ServerBinaries::at(dir.join("bin")).map_err(|e| anyhow!("{e}"))
        }
        Err(e) => Err(anyhow!("{e}")),
    }
}

/// What the story produced, and the server it ran on (removed when dropped).
struct Story {
    report: CompareReport,
    workload: WorkloadReport,
    advice: AdviseReport,
    audit: AuditReport,
    cluster: Cluster,
}

/// `pgplan demo`: the story told on a throwaway server, in the format asked for.
pub fn demo(args: DemoArgs, options: &TextOptions) -> Result<u8> {
    let started = Instant::now();
    let binaries = find_or_fetch_binaries(args.pg_bin.as_deref())?;
    step(&format!(
        "starting a throwaway PostgreSQL {} server ({})",
        binaries.version,
        binaries.bin_dir.display()
    ));
    let interrupt = Interrupt::new();
    let story = runtime()?.block_on(interrupt.run(run_story(&binaries, &interrupt)))?;
    let mut out = io::stdout().lock();
    match args.format {
        Format::Json => write_json(
            &mut out,
            &DemoDoc {
                // The demo document holds a compare document, and changes with it.
                schema_version: crate::report::compare::COMPARE_SCHEMA_VERSION,
                compare: render::CompareDoc::new(&story.report),
                workload: crate::report::workload::WorkloadDoc::new(&story.workload),
                advise: crate::report::advise::AdviseDoc::of(&story.advice),
                audit: audit_doc(&story.audit),
            },
        )?,
        Format::Html => crate::report::html::write_sections(
            &mut out,
            "pgplan demo",
            &[
                crate::report::html::compare_body(&story.report),
                crate::report::html::audit_body(&story.audit),
            ],
        )?,
        Format::Markdown => {
            render::write_markdown(&mut out, &story.report)?;
            writeln!(out)?;
            crate::report::workload::write_markdown(&mut out, &story.workload)?;
            writeln!(out)?;
            crate::report::advise::write_markdown(&mut out, &story.advice)?;
            writeln!(out)?;
            write_audit_markdown(&mut out, &story.audit)?;
        }
        Format::Text => write_story_text(&mut out, &story, &binaries.version, options)?,
    }
    out.flush()?;
    drop(story.cluster);
    step(&format!(
        "removed the throwaway server; done in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    Ok(exit::SUCCESS)
}

/// The story on a throwaway server: compare, the workload, advise, then the audit.
async fn run_story(binaries: &ServerBinaries, interrupt: &Interrupt) -> Result<Story> {
    let cluster = start_server(binaries).await?;
    let request = CompareRequest::validate(RequestInput {
        query_text: QUERY_SQL.into(),
        query_source: "demo/query.sql".into(),
        index_sqls: CANDIDATES.iter().map(|s| (*s).to_owned()).collect(),
        runs: 3,
        min_gain_percent: 10.0,
        ..RequestInput::default()
    })
    .map_err(|e| anyhow!("{e}"))?;
    let mut conn = connect_to(&cluster, interrupt).await?;
    step("measuring the query, then each candidate in its own rolled-back transaction");
    let report = run_compare(
        &mut conn,
        &request,
        &Limits::compare_defaults(),
        &Progress::new(),
    )
    .await?;
    // The workload: the dashboard is one query of three, and one of them writes.
    step("measuring the workload: three queries with each candidate, writes counted");
    let sources = workload_sources()?;
    let workload = workload_story(&mut conn, &request, sources.clone()).await?;
    // Then advise over the same workload: nobody names a candidate; pgplan proposes them
    // from the plans and the catalog and measures each one.
    step("advising on the workload: candidates proposed from the plans, each one measured");
    let advice = advise_story(&mut conn, sources).await?;
    let audit = friday_audit(&cluster, &mut conn).await?;
    Ok(Story {
        report,
        workload,
        advice,
        audit,
        cluster,
    })
}

/// The throwaway server, with the story's database loaded.
async fn start_server(binaries: &ServerBinaries) -> Result<Cluster> {
    // Started under the interrupt handler: Ctrl-C while initdb runs must not kill pgplan
    // before it can remove the half-made server. On an interrupt the blocking start runs
    // to its end while the runtime shuts down, and the Cluster it returns is dropped, which
    // stops the server and removes its files.
    let options = ClusterOptions::new(binaries.clone()).setting("jit", "off");
    let cluster = tokio::task::spawn_blocking(move || Cluster::start(options))
        .await
        .context("starting the throwaway server")?
        .map_err(|e| anyhow!("{e}"))?;
    cluster
        .execute("postgres", "CREATE DATABASE pgplan_demo")
        .await
        .map_err(|e| anyhow!("{e}"))?;
    step("loading the events table: 500,000 rows");
    for statement in crate::sql::split_statements(STORY_SQL).context("reading the story")? {
        cluster
            .execute("pgplan_demo", &statement.text)
            .await
            .map_err(|e| anyhow!("{e}"))?;
    }
    Ok(cluster)
}

/// A connection to the story's database, cancelled by Ctrl-C, with no retries.
async fn connect_to(cluster: &Cluster, interrupt: &Interrupt) -> Result<Connection> {
    let params = resolve(
        &ConnRequest {
            dbname: Some(cluster.conninfo("pgplan_demo")),
            ..ConnRequest::default()
        },
        &Environment::from_process(),
    )
    .map_err(|e| anyhow!("{e}"))?;
    let options = ConnectOptions {
        retry: RetryPolicy::new(0),
        cancel: Some(interrupt.registry()),
        ..ConnectOptions::default()
    };
    Ok(connect(&params, &options, |_, _, _| {}).await?)
}

/// The workload story's queries, as the files they are read from.
fn workload_sources() -> Result<Vec<SourceQuery>> {
    let mut sources: Vec<SourceQuery> = Vec::new();
    for (name, text) in WORKLOAD {
        sources.extend(
            crate::compare::workload::source::parse_file(&format!("demo/workload/{name}"), text)
                .map_err(|e| anyhow!("{e}"))?,
        );
    }
    Ok(sources)
}

/// The compare story's candidates over the three-query workload.
async fn workload_story(
    conn: &mut Connection,
    request: &CompareRequest,
    sources: Vec<SourceQuery>,
) -> Result<WorkloadReport> {
    let candidates: Vec<crate::sql::IndexCandidate> = request
        .candidates
        .iter()
        .filter_map(|c| match c {
            crate::compare::CandidateSpec::Create(c) => Some(c.clone()),
            crate::compare::CandidateSpec::Drop { .. } => None,
        })
        .collect();
    run_workload(
        conn,
        &Limits::compare_defaults(),
        sources,
        &candidates,
        &WorkloadSettings {
            source_name: "demo/workload".into(),
            statements: None,
            runs: 3,
            min_gain: 10.0,
            allow_writes: false,
            analyze: false,
            allow_lasting_effects: false,
            probe_triggers: Vec::new(),
            deadline: None,
        },
        None,
        &Progress::new(),
    )
    .await
}

/// `pgplan advise` over the same workload, with its defaults.
async fn advise_story(conn: &mut Connection, sources: Vec<SourceQuery>) -> Result<AdviseReport> {
    run_advise(
        conn,
        &Limits::compare_defaults(),
        &AdviseSettings {
            source_name: "demo/workload".into(),
            statements: None,
            hypothetical: false,
            budget: std::time::Duration::from_secs(300),
            runs: 3,
            min_gain: 10.0,
            allow_writes: false,
            allow_lasting_effects: false,
            probe_triggers: Vec::new(),
            max_indexes: None,
            max_size: None,
        },
        sources,
        Instant::now(),
        None,
        &Progress::new(),
    )
    .await
}

/// The story's Friday: the index on status is created for real on this throwaway server, the
/// dashboard runs, and the audit looks at what is there.
async fn friday_audit(cluster: &Cluster, conn: &mut Connection) -> Result<AuditReport> {
    step("creating events_status_idx for real, running the dashboard, auditing the server");
    cluster
        .execute(
            "pgplan_demo",
            "CREATE INDEX events_status_idx ON events (status)",
        )
        .await
        .map_err(|e| anyhow!("{e}"))?;
    // Like everything pgplan runs: in a read-only transaction, within the limits.
    conn.read_only(&Limits::read_only_defaults(), async |client| {
        for _ in 0..3 {
            client.simple_query(QUERY_SQL).await.map_err(|e| {
                crate::db::session::SessionError::from_pg("running the dashboard", &e)
            })?;
        }
        Ok(())
    })
    .await?;
    let snapshot =
        read_audit_snapshot(conn, &Limits::read_only_defaults(), &Scope::default(), None).await;
    let nodes = [NodeResult {
        name: format!(
            "the throwaway server (database pgplan_demo, port {})",
            cluster.port()
        ),
        outcome: snapshot,
    }];
    Ok(audit(&nodes, &AuditOptions::default()))
}

/// `pgplan demo`'s text: each report of the story after what it shows, on a server of
/// `version`.
fn write_story_text(
    out: &mut dyn Write,
    story: &Story,
    version: &str,
    options: &TextOptions,
) -> Result<()> {
    let paint = Paint::new(options.color);
    write_compare_text(out, &story.report, version, paint, options)?;
    writeln!(out)?;
    writeln!(out, "{}", paint.bold("Then the workload"))?;
    writeln!(
        out,
        "The dashboard is not the only query on events. A tenant's feed asks for its 20 newest \
         events 20,000 times a day, and workers mark 200,000 events done a day (an UPDATE of \
         status; pgplan reads it but does not run it without --allow-writes). pgplan built each \
         candidate once, measured every query with it (the feed with a common, a typical and a \
         rare tenant from the column's statistics), and counted what the index costs the \
         table's writes per day: the entries it adds, and the updates that stop being HOT \
         because they set a column it reads. The ranking is by pages saved per day, net of \
         the pages written."
    )?;
    writeln!(out)?;
    crate::report::workload::write_text(out, &story.workload, options)?;
    writeln!(out)?;
    writeln!(out, "{}", paint.bold("Then advise"))?;
    writeln!(
        out,
        "The candidates above were named by hand. pgplan advise names them itself: it read \
         the plans of the same three queries (what each scan filters, sorts and keeps) and \
         the catalog (statistics, existing indexes), proposed the indexes an expert would \
         try, built each one in a rolled-back transaction and measured every query with \
         it, then chose the set greedily by pages saved per day per byte, measuring again \
         with the chosen ones in place. Nothing below is the planner's estimate."
    )?;
    writeln!(out)?;
    crate::report::advise::write_text(out, &story.advice, options)?;
    writeln!(out)?;
    writeln!(out, "{}", paint.bold("Then the audit"))?;
    writeln!(
        out,
        "On the story's Friday the index on status was created for real. pgplan created it on \
         the throwaway server, ran the dashboard query, and audited the server read-only: the \
         planner never reads the index, so the audit reports it unused, with the SQL that drops \
         it. (Informational here: the server has been counting index scans for seconds, not the \
         days that make an unused index a warning.)"
    )?;
    writeln!(out)?;
    write_audit_text(out, &story.audit, options)?;
    writeln!(out)?;
    writeln!(
        out,
        "On your own database: pgplan compare -d \"host=... dbname=...\" query.sql --index \"CREATE INDEX ...\"\n\
         and: pgplan audit -d \"host=primary ...\" -d \"host=standby ...\""
    )?;
    Ok(())
}

/// The compare part of the text: what is measured, the report, and why each candidate got its
/// verdict.
fn write_compare_text(
    out: &mut dyn Write,
    report: &CompareReport,
    version: &str,
    paint: Paint,
    options: &TextOptions,
) -> Result<()> {
    writeln!(out, "{}", paint.bold("What you are looking at"))?;
    writeln!(
        out,
        "A throwaway PostgreSQL {} server holds the events table: 500,000 rows, where status has \
         four values and 'pending' is 70% of them. The dashboard asks for the 50 newest pending \
         events. pgplan ran that query as the database is now (the baseline), then once with \
         each candidate index, each built inside a transaction that was rolled back. The \
         verdict is decided on the pages the query touches (shared buffers hit + read), not on \
         the planner's estimated cost.",
        version
    )?;
    writeln!(out)?;
    render::write_text(out, report, options)?;
    writeln!(out)?;
    writeln!(out, "{}", paint.bold("Why"))?;
    for judged in &report.ranking {
        let name = report.name(judged.index);
        let why = explanation(name, judged.verdict)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("verdict: {}", judged.verdict.as_str()));
        writeln!(out, "  {}: {why}.", paint.bold(name))?;
    }
    Ok(())
}
