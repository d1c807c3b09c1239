//! How much of `pgplan compare`'s wall time is pgplan's own: the story's compare (three candidates,
//! a cold run and three warm runs each) against a throwaway server, timed end to end, against what
//! the server reported doing (index builds, planning and execution of every run) plus connection
//! set-up. Goal: wall time ≤ 1.10 × that.
//!
//! Run: `cargo bench --bench compare_overhead` (uses the server binaries `pgplan demo` would find,
//! or PGPLAN_PG_BIN).

use std::time::Instant;

use pgplan::app::compare::{Progress, run_compare};
use pgplan::compare::{CompareReport, CompareRequest, Measurement, RequestInput};
use pgplan::db::cluster::{Cluster, ClusterOptions, ServerBinaries};
use pgplan::db::connect::{ConnectOptions, connect};
use pgplan::db::conninfo::{ConnRequest, Environment, resolve};
use pgplan::db::session::Limits;

const STORY_SQL: &str = include_str!("../demo/story.sql");
const QUERY_SQL: &str = include_str!("../demo/query.sql");

/// Planning plus execution time the server reported for every run of a measurement.
fn server_ms(m: &Measurement) -> f64 {
    std::iter::once(&m.cold)
        .chain(m.warm.iter())
        .map(|a| a.plan.planning_ms.unwrap_or(0.0) + a.plan.execution_ms.unwrap_or(0.0))
        .sum()
}

fn server_work_ms(report: &CompareReport) -> f64 {
    let mut total = server_ms(&report.baseline);
    if let Some(rerun) = &report.baseline_rerun {
        total += server_ms(rerun);
    }
    for outcome in &report.outcomes {
        if let Ok(run) = &outcome.result {
            total += server_ms(&run.measurement) + run.build_ms.unwrap_or(0.0);
        }
    }
    total
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `cargo test --benches` lists benchmarks; there is nothing to list here.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let binaries = ServerBinaries::discover(None).expect("server binaries");
    let cluster =
        Cluster::start(ClusterOptions::new(binaries.clone()).setting("jit", "off")).unwrap();
    cluster
        .execute("postgres", "CREATE DATABASE bench")
        .await
        .unwrap();
    for statement in pgplan::sql::split_statements(STORY_SQL).unwrap() {
        cluster.execute("bench", &statement.text).await.unwrap();
    }
    let request = CompareRequest::validate(RequestInput {
        query_text: QUERY_SQL.into(),
        query_source: "demo/query.sql".into(),
        index_sqls: vec![
            "CREATE INDEX ON events (status)".into(),
            "CREATE INDEX pending_recent ON events (created_at DESC) WHERE status = 'pending'"
                .into(),
            "CREATE INDEX ON events (tenant_id, created_at)".into(),
        ],
        runs: 3,
        min_gain_percent: 10.0,
        ..RequestInput::default()
    })
    .unwrap();
    let params = resolve(
        &ConnRequest {
            dbname: Some(cluster.conninfo("bench")),
            ..ConnRequest::default()
        },
        &Environment::from_process(),
    )
    .unwrap();

    println!(
        "PostgreSQL {} · story compare, 3 candidates, 1 cold + 3 warm runs each",
        binaries.version
    );
    println!(
        "{:>4} {:>12} {:>14} {:>12} {:>8}",
        "run", "wall ms", "server ms", "connect ms", "ratio"
    );
    let mut ratios = Vec::new();
    for iteration in 1..=5 {
        let wall = Instant::now();
        let mut conn = connect(&params, &ConnectOptions::default(), |_, _, _| {})
            .await
            .unwrap();
        let connect_ms = wall.elapsed().as_secs_f64() * 1000.0;
        let report = run_compare(
            &mut conn,
            &request,
            &Limits::compare_defaults(),
            &Progress::silent(),
        )
        .await
        .unwrap();
        let wall_ms = wall.elapsed().as_secs_f64() * 1000.0;
        let server = server_work_ms(&report);
        let ratio = wall_ms / (server + connect_ms);
        ratios.push(ratio);
        println!("{iteration:>4} {wall_ms:>12.1} {server:>14.1} {connect_ms:>12.1} {ratio:>8.3}");
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median ratio: {:.3} (goal ≤ 1.10)",
        ratios[ratios.len() / 2]
    );
}
