//! `pgplan demo`: a throwaway server, the events story loaded into it, `compare` with three
//! candidate indexes, explained; then the server and its files are removed.

use std::io::{self, Write};
use std::time::Instant;

use anyhow::{Context, Result, anyhow};

use crate::cli::DemoArgs;
use crate::compare::{CompareRequest, RequestInput, Verdict};
use crate::db::cluster::{Cluster, ClusterOptions, ServerBinaries};
use crate::db::connect::{ConnectOptions, connect};
use crate::db::conninfo::{ConnRequest, Environment, resolve};
use crate::db::retry::RetryPolicy;
use crate::db::session::Limits;
use crate::exit;
use crate::report::{Format, Paint, TextOptions, compare as render, write_json};

use super::compare::{Progress, run_compare};
use super::live::{Interrupt, runtime};

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

pub fn demo(args: DemoArgs, options: &TextOptions) -> Result<u8> {
    let started = Instant::now();
    let binaries = ServerBinaries::discover(args.pg_bin.as_deref()).map_err(|e| anyhow!("{e}"))?;
    step(&format!(
        "starting a throwaway PostgreSQL {} server ({})",
        binaries.version,
        binaries.bin_dir.display()
    ));
    let cluster = Cluster::start(ClusterOptions::new(binaries.clone()).setting("jit", "off"))
        .map_err(|e| anyhow!("{e}"))?;
    let interrupt = Interrupt::new();
    let report = runtime()?.block_on(interrupt.run(async {
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
        let request = CompareRequest::validate(RequestInput {
            query_text: QUERY_SQL.into(),
            query_source: "demo/query.sql".into(),
            index_sqls: CANDIDATES.iter().map(|s| (*s).to_owned()).collect(),
            runs: 3,
            min_gain_percent: 10.0,
            ..RequestInput::default()
        })
        .map_err(|e| anyhow!("{e}"))?;
        let params = resolve(
            &ConnRequest {
                dbname: Some(cluster.conninfo("pgplan_demo")),
                ..ConnRequest::default()
            },
            &Environment::from_process(),
        )
        .map_err(|e| anyhow!("{e}"))?;
        let mut conn = connect(
            &params,
            &ConnectOptions {
                retry: RetryPolicy::new(0),
            },
            |_, _, _| {},
        )
        .await?;
        interrupt.watch(&conn);
        step("measuring the query, then each candidate in its own rolled-back transaction");
        run_compare(
            &mut conn,
            &request,
            &Limits::compare_defaults(),
            &Progress::new(),
        )
        .await
    }))?;

    let mut out = io::stdout().lock();
    match args.format {
        Format::Json => write_json(&mut out, &render::CompareDoc::new(&report))?,
        Format::Markdown => render::write_markdown(&mut out, &report)?,
        Format::Text => {
            let paint = Paint::new(options.color);
            writeln!(out, "{}", paint.bold("What you are looking at"))?;
            writeln!(
                out,
                "A throwaway PostgreSQL {} server holds the events table: 500,000 rows, where status has \
                 four values and 'pending' is 70% of them. The dashboard asks for the 50 newest pending \
                 events. pgplan ran that query as the database is now (the baseline), then once with \
                 each candidate index, each built inside a transaction that was rolled back. The \
                 verdict is decided on the pages the query touches (shared buffers hit + read), not on \
                 the planner's estimated cost.",
                binaries.version
            )?;
            writeln!(out)?;
            render::write_text(&mut out, &report, options)?;
            writeln!(out)?;
            writeln!(out, "{}", paint.bold("Why"))?;
            for judged in &report.ranking {
                let name = report.name(judged.index);
                let why = explanation(name, judged.verdict)
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("verdict: {}", judged.verdict.as_str()));
                writeln!(out, "  {}: {why}.", paint.bold(name))?;
            }
            writeln!(out)?;
            writeln!(
                out,
                "On your own database: pgplan compare -d \"host=... dbname=...\" query.sql --index \"CREATE INDEX ...\""
            )?;
        }
    }
    out.flush()?;
    drop(cluster);
    step(&format!(
        "removed the throwaway server; done in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    Ok(exit::SUCCESS)
}
