//! Yielding to writers, measured: a steady writer (one UPDATE every 50 ms on the candidate's
//! table) while a candidate builds for about 4 s, its longest wait with the watch
//! (`--max-writer-wait 200ms`, goal: at most 300 ms) and without (`off`: the whole build); then
//! the watch's overhead on the story's compare with no writer (three candidates, three warm
//! runs), wall time with the watch against `off`, interleaved, medians (goal: under 2%).
//!
//! Run: `cargo bench --bench writers` (uses the server binaries `pgplan demo` would find, or
//! PGPLAN_PG_BIN). The binary is the optimised one cargo builds for the bench.

mod bench_db;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const STORY_SQL: &str = include_str!("../demo/story.sql");
const PGPLAN: &str = env!("CARGO_BIN_EXE_pgplan");
const CANDIDATES: [&str; 3] = [
    "CREATE INDEX ON events (status)",
    "CREATE INDEX pending_recent ON events (created_at DESC) WHERE status = 'pending'",
    "CREATE INDEX ON events (tenant_id, created_at)",
];
/// A table whose index on `slow(v)` takes about 4 s to build (2 ms a row).
const SLOW_TABLE: &str = "
CREATE TABLE slow_t (id integer PRIMARY KEY, v integer NOT NULL, w integer NOT NULL DEFAULT 0);
INSERT INTO slow_t (id, v) SELECT i, i % 100 FROM generate_series(1, 2000) AS i;
CREATE FUNCTION slow(i integer) RETURNS integer IMMUTABLE LANGUAGE plpgsql AS
  'BEGIN PERFORM pg_sleep(0.002); RETURN i; END';
-- The writer's column is indexed so its updates are never HOT: a build that meets HOT chains
-- with recently dead versions marks its index unusable in its own transaction (indcheckxmin).
CREATE INDEX slow_t_w ON slow_t (w);
VACUUM (ANALYZE) slow_t;
";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let (binaries, _cluster, conninfo) = bench_db::throwaway_bench_db(STORY_SQL).await;
    let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // One statement at a time: VACUUM cannot run in the implicit transaction of a batch.
    for statement in pgplan::sql::split_statements(SLOW_TABLE).unwrap() {
        client.batch_execute(&statement.text).await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let query = dir.path().join("slow.sql");
    std::fs::write(
        &query,
        "SELECT id FROM slow_t WHERE id < 10 AND slow(v) = 7",
    )
    .unwrap();

    println!(
        "PostgreSQL {} · a writer (UPDATE every 50 ms) beside a 4 s build",
        binaries.version
    );
    println!(
        "{:>18} {:>10} {:>16} {:>14} {:>10}",
        "--max-writer-wait", "writes", "longest wait ms", "pgplan wall ms", "exit"
    );
    for wait in ["200ms", "off"] {
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (conninfo, stop) = (conninfo.clone(), stop.clone());
            tokio::spawn(async move { steady_writer(&conninfo, stop).await })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = Instant::now();
        let out = Command::new(PGPLAN)
            .args(["compare", "-d", &conninfo])
            .arg(&query)
            .args(["--index", "CREATE INDEX ON slow_t (slow(v))", "--runs", "1"])
            .args(["--max-writer-wait", wait])
            .output()
            .unwrap();
        let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
        stop.store(true, Ordering::SeqCst);
        let (count, longest) = writer.await.unwrap();
        println!(
            "{wait:>18} {count:>10} {:>16.0} {wall_ms:>14.0} {:>10}",
            longest.as_secs_f64() * 1000.0,
            out.status.code().unwrap_or(-1)
        );
    }

    println!();
    println!("story compare, 3 candidates, 1 cold + 3 warm runs each, no writer");
    println!(
        "{:>4} {:>16} {:>12} {:>8}",
        "run", "watched ms", "off ms", "ratio"
    );
    let (mut watched, mut off) = (Vec::new(), Vec::new());
    for run in 1..=7 {
        let w = story_compare(&conninfo, "200ms");
        let o = story_compare(&conninfo, "off");
        println!("{run:>4} {w:>16.0} {o:>12.0} {:>8.3}", w / o);
        watched.push(w);
        off.push(o);
    }
    let (w, o) = (median(&mut watched), median(&mut off));
    println!(
        "median: watched {w:.0} ms, off {o:.0} ms, overhead {:+.2}% (goal < 2%)",
        (w / o - 1.0) * 100.0
    );
}

fn story_compare(conninfo: &str, wait: &str) -> f64 {
    let mut command = Command::new(PGPLAN);
    command
        .args(["compare", "-d", conninfo, "demo/query.sql", "--runs", "3"])
        .args(["--format", "json", "--max-writer-wait", wait]);
    for candidate in CANDIDATES {
        command.args(["--index", candidate]);
    }
    let started = Instant::now();
    let out = command.output().unwrap();
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wall_ms
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One UPDATE every 50 ms until `stop`: how many ran and the longest.
async fn steady_writer(conninfo: &str, stop: Arc<AtomicBool>) -> (u32, Duration) {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let (mut count, mut longest) = (0, Duration::ZERO);
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        client
            .batch_execute("UPDATE slow_t SET w = w + 1 WHERE id = 1")
            .await
            .unwrap();
        longest = longest.max(started.elapsed());
        count += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (count, longest)
}
