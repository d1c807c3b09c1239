//! What `pgplan check` costs on a 50-query workload against measuring it once: the real binary
//! from spawn to exit (`check`, and `check --update`, which measures and writes the baseline),
//! against the floor, the same EXPLAIN (ANALYZE, BUFFERS) runs (1 + 3 per query, pgplan's
//! default) issued in process on one connection in one read-only transaction. The goal is a
//! check of at most 1.2× measuring the workload once (`check --update`): comparing with the
//! baseline may add little to the measurement itself. The floor shows what the measurement
//! engine's own steps cost beside the server's work. Rounds are interleaved so machine load
//! falls on every row.
//!
//! The schema is `fixtures/advise/setup.sql` on a throwaway server, with the indexes the queries
//! use built first.
//!
//! Run: `cargo bench --bench check` (PGPLAN_BENCH_ROUNDS=5 for more rounds; the server
//! binaries as `pgplan demo` finds them, or PGPLAN_PG_BIN).

mod bench_db;

use std::process::Command;
use std::time::{Duration, Instant};

const SETUP_SQL: &str = include_str!("../fixtures/advise/setup.sql");
const PGPLAN: &str = env!("CARGO_BIN_EXE_pgplan");
const QUERIES: usize = 50;
const RUNS: usize = 4;

/// Indexes the shapes read, so the plans are the index scans a team would gate on.
const INDEXES: &str = "
CREATE INDEX bench_tickets_account ON tickets (account_id, created_at);
CREATE INDEX bench_users_email ON users (lower(email));
CREATE INDEX bench_logs_ts ON logs (ts);
ANALYZE;
";

const SHAPES: [&str; 5] = [
    "SELECT id, created_at FROM tickets WHERE account_id = {c} ORDER BY created_at DESC LIMIT 20",
    "SELECT id, name FROM users WHERE lower(email) = 'user{c}@example.com'",
    "SELECT created_at, amount FROM tickets WHERE account_id = {c} AND created_at >= '2026-02-01 00:00:00+00' AND created_at < '2026-03-01 00:00:00+00'",
    "SELECT count(*) FROM logs WHERE ts >= timestamptz '2026-01-02 00:00:00+00' + {c} * interval '1 minute' AND ts < timestamptz '2026-01-02 01:00:00+00' + {c} * interval '1 minute'",
    "SELECT t.id, t.amount FROM accounts a JOIN tickets t ON t.account_id = a.id WHERE a.id = {c} % 50 + 1",
];

fn query(q: usize) -> String {
    SHAPES[q % SHAPES.len()].replace("{c}", &(17 + 31 * (q / SHAPES.len())).to_string())
}

fn workload(dir: &std::path::Path) {
    for q in 0..QUERIES {
        std::fs::write(
            dir.join(format!("q{q:02}.sql")),
            format!("-- calls: 1000\n{}\n", query(q)),
        )
        .unwrap();
    }
}

/// `pgplan check` (with `extra`), spawn to exit; panics unless it exits 0.
fn pgplan_check(conninfo: &str, dir: &std::path::Path, extra: &[&str]) -> Duration {
    let started = Instant::now();
    let out = Command::new(PGPLAN)
        .args(["check", "-d", conninfo, "--format", "json"])
        .arg("--workload")
        .arg(dir)
        .arg("--baseline")
        .arg(dir.join("baseline.json"))
        .args(extra)
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// The floor: the same runs in process, one connection, one read-only transaction.
async fn floor(conninfo: &str) -> Duration {
    let started = Instant::now();
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    let task = tokio::spawn(connection);
    client.batch_execute("BEGIN READ ONLY").await.unwrap();
    for q in 0..QUERIES {
        let sql = format!(
            "EXPLAIN (ANALYZE, BUFFERS, VERBOSE, SETTINGS, FORMAT JSON) {}",
            query(q)
        );
        for _ in 0..RUNS {
            client.query_one(&sql, &[]).await.unwrap();
        }
    }
    client.batch_execute("ROLLBACK").await.unwrap();
    drop(client);
    let _ = task.await;
    started.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `cargo test --benches` lists benchmarks; there is nothing to list here.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rounds: usize = std::env::var("PGPLAN_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let (binaries, cluster, conninfo) = bench_db::throwaway_bench_db(SETUP_SQL).await;
    for statement in pgplan::sql::split_statements(INDEXES).unwrap() {
        cluster.execute("bench", &statement.text).await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    workload(dir.path());
    // Warm the cache and record the baseline once.
    pgplan_check(&conninfo, dir.path(), &["--update"]);
    let (mut floors, mut updates, mut checks) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        floors.push(floor(&conninfo).await);
        updates.push(pgplan_check(&conninfo, dir.path(), &["--update"]));
        checks.push(pgplan_check(&conninfo, dir.path(), &[]));
    }
    let (f, u, c) = (median(floors), median(updates), median(checks));
    println!(
        "PostgreSQL {} · {QUERIES} queries, {RUNS} runs each (1 + 3 warm), median of {rounds} interleaved rounds",
        binaries.version
    );
    println!("{:<44} {:>9}  {:>8}", "", "ms", "× floor");
    println!(
        "{:<44} {:>9.0}  {:>8.2}",
        "floor: the runs in process, one transaction",
        ms(f),
        1.0
    );
    println!(
        "{:<44} {:>9.0}  {:>8.2}",
        "pgplan check --update (measure, write)",
        ms(u),
        ms(u) / ms(f)
    );
    println!(
        "{:<44} {:>9.0}  {:>8.2}",
        "pgplan check (measure, compare)",
        ms(c),
        ms(c) / ms(f)
    );
    println!(
        "check against measuring once (--update): {:.2}×; goal: at most 1.2×: {}",
        ms(c) / ms(u),
        if ms(c) <= 1.2 * ms(u) {
            "met"
        } else {
            "NOT met"
        }
    );
}
