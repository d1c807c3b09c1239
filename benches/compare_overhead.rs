//! How much of `pgplan compare`'s wall time is pgplan's own: the story's compare (three candidates,
//! a cold run and three warm runs each) against a throwaway server, the real binary timed from
//! spawn to exit (process start, argument parsing, connecting, every transaction, parsing,
//! diffing and the JSON report included), against what the server reported doing (index builds,
//! planning and execution of every run, read from the plans `--save-plans` wrote) plus
//! connection set-up. Goal: wall time ≤ 1.10 × that.
//!
//! Then the same for `compare --workload` over the demo's three-query workload (the dashboard,
//! a tenant feed with a sampled parameter — three samples —, and an UPDATE that is read, not
//! run): one build per candidate, every query measured inside it; the parameter choice (a
//! generic plan and pg_stats reads per parameterised query) and the write counters count as
//! pgplan's own time. Goal: the same 1.10.
//!
//! Run: `cargo bench --bench compare_overhead` (uses the server binaries `pgplan demo` would find,
//! or PGPLAN_PG_BIN). The binary is the optimised one cargo builds for the bench.

mod bench_db;

use std::process::Command;
use std::time::Instant;

use pgplan::db::connect::{ConnectOptions, connect};
use pgplan::db::conninfo::{ConnRequest, Environment, resolve};

const STORY_SQL: &str = include_str!("../demo/story.sql");
const PGPLAN: &str = env!("CARGO_BIN_EXE_pgplan");
const CANDIDATES: [&str; 3] = [
    "CREATE INDEX ON events (status)",
    "CREATE INDEX pending_recent ON events (created_at DESC) WHERE status = 'pending'",
    "CREATE INDEX ON events (tenant_id, created_at)",
];

/// Planning plus execution time the server reported in every plan saved in `dir`.
fn server_ms_of_saved_plans(dir: &std::path::Path) -> f64 {
    let mut total = 0.0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let plan = &doc[0];
        total += plan["Planning Time"].as_f64().unwrap_or(0.0)
            + plan["Execution Time"].as_f64().unwrap_or(0.0);
    }
    total
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `cargo test --benches` lists benchmarks; there is nothing to list here.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let (binaries, _cluster, conninfo) = bench_db::throwaway_bench_db(STORY_SQL).await;
    let params = resolve(
        &ConnRequest {
            dbname: Some(conninfo.clone()),
            ..ConnRequest::default()
        },
        &Environment::from_process(),
    )
    .unwrap();

    println!(
        "PostgreSQL {} · story compare, 3 candidates, 1 cold + 3 warm runs each",
        binaries.version
    );
    overhead(&params, &conninfo, &["demo/query.sql"]).await;
    println!();
    println!(
        "PostgreSQL {} · workload compare (demo/workload: 3 queries, 5 samples), 3 candidates built once each, 1 cold + 3 warm runs per sample",
        binaries.version
    );
    overhead(&params, &conninfo, &["--workload", "demo/workload"]).await;
}

/// Five runs of `pgplan compare <source> --index …` (the three candidates, three warm runs),
/// each timed against what the server reported doing plus a connection set-up timed on its own
/// just before; prints every run and the median ratio.
async fn overhead(params: &pgplan::db::conninfo::ConnParams, conninfo: &str, source: &[&str]) {
    println!(
        "{:>4} {:>12} {:>14} {:>12} {:>8} {:>8}",
        "run", "wall ms", "server ms", "connect ms", "builds", "ratio"
    );
    let mut ratios = Vec::new();
    for iteration in 1..=5 {
        // Connection set-up, as pgplan makes it (including its facts query), timed on its own.
        let started = Instant::now();
        let conn = connect(params, &ConnectOptions::default(), |_, _, _| {})
            .await
            .unwrap();
        let connect_ms = started.elapsed().as_secs_f64() * 1000.0;
        drop(conn);

        let plans = tempfile::tempdir().unwrap();
        let mut command = Command::new(PGPLAN);
        command
            .args(["compare", "-d", conninfo])
            .args(source)
            .args(["--runs", "3", "--format", "json", "--save-plans"])
            .arg(plans.path());
        for candidate in CANDIDATES {
            command.args(["--index", candidate]);
        }
        let started = Instant::now();
        let out = command.output().expect("pgplan runs");
        let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
        assert!(
            out.status.success(),
            "pgplan compare {} failed: {}",
            source.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let candidates = report["candidates"].as_array().unwrap();
        let builds_ms: f64 = candidates
            .iter()
            .filter_map(|c| c["build_ms"].as_f64())
            .sum();
        let builds = candidates
            .iter()
            .filter(|c| c["build_ms"].is_number())
            .count();
        let server = server_ms_of_saved_plans(plans.path()) + builds_ms;
        let ratio = wall_ms / (server + connect_ms);
        ratios.push(ratio);
        println!(
            "{iteration:>4} {wall_ms:>12.1} {server:>14.1} {connect_ms:>12.1} {builds:>8} {ratio:>8.3}"
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median ratio: {:.3} (goal ≤ 1.10)",
        ratios[ratios.len() / 2]
    );
}
