//! How long `pgplan advise` takes, as users run it (the real binary from spawn to exit, default
//! settings: 1 cold + 3 warm runs per sample, the 5-minute budget): on a 20-query workload, and
//! how that grows with the number of queries (the same query shapes with other constants, so
//! the same candidates) and with the number of candidates (more shapes, each proposing its
//! own). Every run must end within its `--budget`; a last run gives the 20-query workload with
//! the most candidates a budget too small for all of them, to show the budget holds.
//!
//! The schema is `fixtures/advise/setup.sql` (200,000 tickets, 100,000 users and docs, 300,000
//! log lines) on a throwaway server.
//!
//! Beside its floor: one more run of the 20-query workload as a role that owns the tables but is
//! no superuser, so `pg_stat_statements` (loaded on the bench server) counts every statement
//! pgplan sends; the floor is the server time of its index builds and measured runs (the
//! `CREATE INDEX` and `EXPLAIN` statements' total_exec_time), and the goal is a wall time within
//! 1.2× of it.
//!
//! Run: `cargo bench --bench advise` (uses the server binaries `pgplan demo` would find, or
//! PGPLAN_PG_BIN; `PGPLAN_BENCH_FLOOR_ONLY=1` runs only the floor comparison). The binary is
//! the optimised one cargo builds for the bench.

mod bench_db;

use std::process::Command;
use std::time::Instant;

const SETUP_SQL: &str = include_str!("../fixtures/advise/setup.sql");
const PGPLAN: &str = env!("CARGO_BIN_EXE_pgplan");

/// Query shapes over the schema, each proposing candidates of its own; `{c}` takes a constant
/// that differs from query to query.
const SHAPES: [&str; 10] = [
    "SELECT id, created_at FROM tickets WHERE account_id = {c} ORDER BY created_at DESC LIMIT 20",
    "SELECT id, name FROM users WHERE lower(email) = 'user{c}@example.com'",
    "SELECT id FROM docs WHERE attrs @> '{\"n\": {c}}'",
    "SELECT id, priority FROM tickets WHERE state = 'open' ORDER BY created_at LIMIT {c}",
    "SELECT created_at, amount FROM tickets WHERE account_id = {c} AND created_at >= '2026-02-01 00:00:00+00' AND created_at < '2026-03-01 00:00:00+00'",
    "SELECT id FROM docs WHERE tags && ARRAY['t{c}']",
    "SELECT id FROM docs WHERE title LIKE '%abc{c}%'",
    "SELECT count(*) FROM logs WHERE ts >= timestamptz '2026-01-02 00:00:00+00' + {c} * interval '1 minute' AND ts < timestamptz '2026-01-02 06:00:00+00' + {c} * interval '1 minute'",
    "SELECT id FROM users WHERE name LIKE 'user {c}%'",
    "SELECT t.id, t.amount FROM accounts a JOIN tickets t ON t.account_id = a.id WHERE a.id < {c} % 5 + 2",
];

/// What one advise run measured and took.
struct Point {
    queries: usize,
    shapes: usize,
    measured: usize,
    not_measured: usize,
    recommended: usize,
    wall_s: f64,
    elapsed_s: f64,
    budget_s: f64,
}

fn workload(dir: &std::path::Path, queries: usize, shapes: usize) {
    for q in 0..queries {
        let shape = SHAPES[q % shapes];
        let c = 17 + 31 * (q / shapes);
        std::fs::write(
            dir.join(format!("q{q:02}.sql")),
            format!("-- calls: 1000\n{}\n", shape.replace("{c}", &c.to_string())),
        )
        .unwrap();
    }
}

/// The server time of what one advise run sent, from `pg_stat_statements` (ms): its index
/// builds and measured runs, and every statement.
struct ServerTime {
    builds_and_runs_ms: f64,
    all_ms: f64,
    statements: i64,
}

async fn server_time(client: &tokio_postgres::Client, role: &str) -> ServerTime {
    let row = client
        .query_one(
            "SELECT coalesce(sum(total_exec_time) FILTER (WHERE query ~* '^\\s*(CREATE\\s+INDEX|EXPLAIN)'), 0)::float8, \
                    coalesce(sum(total_exec_time), 0)::float8, \
                    coalesce(sum(calls), 0)::int8 \
             FROM pg_stat_statements WHERE userid = to_regrole($1)",
            &[&role],
        )
        .await
        .unwrap();
    ServerTime {
        builds_and_runs_ms: row.get(0),
        all_ms: row.get(1),
        statements: row.get(2),
    }
}

/// The 20-query, 5-shape workload as `role`, beside the server time of its builds and runs.
async fn beside_its_floor(client: &tokio_postgres::Client, conninfo: &str, role: &str) {
    client
        .batch_execute("SELECT pg_stat_statements_reset()")
        .await
        .unwrap();
    let p = advise(&format!("{conninfo} user={role}"), 20, 5, "5min");
    let t = server_time(client, role).await;
    let floor_s = t.builds_and_runs_ms / 1000.0;
    println!(
        "\nbeside its floor, as {role} (owner, no superuser), 20 queries over 5 shapes:\n\
         {:>44} {:>8.1} s\n\
         {:>44} {:>8.1} s  ({} statements)\n\
         {:>44} {:>8.1} s  ({:.2}× the floor; goal 1.2×)",
        "server time of its builds and measured runs",
        floor_s,
        "server time of every statement it sent",
        t.all_ms / 1000.0,
        t.statements,
        "pgplan advise, spawn to exit",
        p.wall_s,
        p.wall_s / floor_s
    );
}

fn advise(conninfo: &str, queries: usize, shapes: usize, budget: &str) -> Point {
    let dir = tempfile::tempdir().unwrap();
    workload(dir.path(), queries, shapes);
    let started = Instant::now();
    let out = Command::new(PGPLAN)
        .args([
            "advise", "-d", conninfo, "--format", "json", "--budget", budget,
        ])
        .arg("--workload")
        .arg(dir.path())
        .output()
        .unwrap();
    let wall_s = started.elapsed().as_secs_f64();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    // A budget too small for any candidate measures none, and exits 2 saying so.
    let measured_none = doc["candidate_counts"]["measured"] == 0;
    assert!(
        out.status.success() || (out.status.code() == Some(2) && measured_none),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let len = |k: &str| doc[k].as_array().map_or(0, Vec::len);
    let not_measured = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| {
            let m = n["message"].as_str().unwrap_or("");
            m.contains("not measured") || m.contains("could not be measured")
        })
        .count();
    Point {
        queries,
        shapes,
        measured: len("recommended") + len("rejected"),
        not_measured,
        recommended: len("recommended"),
        wall_s,
        elapsed_s: doc["elapsed_ms"].as_f64().unwrap() / 1000.0,
        budget_s: doc["budget_ms"].as_f64().unwrap() / 1000.0,
    }
}

fn print(p: &Point) {
    println!(
        "{:>7} {:>6} {:>9} {:>13} {:>11} {:>8.1} {:>10.1} {:>8.0}  {}",
        p.queries,
        p.shapes,
        p.measured,
        p.not_measured,
        p.recommended,
        p.wall_s,
        p.elapsed_s,
        p.budget_s,
        if p.wall_s <= p.budget_s {
            "within"
        } else {
            "OVER"
        }
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `cargo test --benches` lists benchmarks; there is nothing to list here.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let (binaries, _cluster, conninfo) = bench_db::throwaway_bench_db_with(
        SETUP_SQL,
        &[
            ("shared_preload_libraries", "pg_stat_statements"),
            ("pg_stat_statements.track", "top"),
            ("pg_stat_statements.track_utility", "on"),
        ],
    )
    .await;
    // The floor's role: it owns the tables (advise builds on them) and is no superuser, so
    // pgplan cannot keep its own statements out of pg_stat_statements.
    let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(
            "CREATE EXTENSION pg_stat_statements; \
             CREATE ROLE bench_owner LOGIN; \
             GRANT ALL ON SCHEMA public TO bench_owner; \
             DO $$ DECLARE t regclass; BEGIN \
               FOR t IN SELECT c.oid FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') LOOP \
                 EXECUTE format('ALTER TABLE %s OWNER TO bench_owner', t); \
               END LOOP; END $$",
        )
        .await
        .unwrap();
    if std::env::var_os("PGPLAN_BENCH_FLOOR_ONLY").is_some() {
        beside_its_floor(&client, &conninfo, "bench_owner").await;
        return;
    }
    println!(
        "PostgreSQL {} · pgplan advise, defaults (1 cold + 3 warm runs per sample), wall time from spawn to exit",
        binaries.version
    );
    println!(
        "{:>7} {:>6} {:>9} {:>13} {:>11} {:>8} {:>10} {:>8}  budget",
        "queries",
        "shapes",
        "measured",
        "not measured",
        "recommended",
        "wall s",
        "reported s",
        "budget s"
    );
    let mut over = 0;
    // Queries grow, candidates stay: five shapes, more constants.
    // Candidates grow, queries stay: 20 queries over 2, 5 and 10 shapes.
    for (queries, shapes, budget) in [
        (5, 5, "5min"),
        (10, 5, "5min"),
        (20, 5, "5min"),
        (20, 2, "5min"),
        (20, 10, "5min"),
        (20, 10, "60s"),
    ] {
        let p = advise(&conninfo, queries, shapes, budget);
        print(&p);
        if p.wall_s > p.budget_s {
            over += 1;
        }
    }
    assert_eq!(over, 0, "advise ran past its --budget");
    beside_its_floor(&client, &conninfo, "bench_owner").await;
}
