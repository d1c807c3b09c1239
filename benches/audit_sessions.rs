//! The server time the session and lock checks add to an audit of a busy server: a throwaway
//! PostgreSQL 15 server with 500 client sessions of the kinds the checks look for, and
//!
//! - (a) the statements the checks add (`pg_stat_activity` with `pg_blocking_pids()` for the
//!   waiting sessions, `pg_locks`, `pg_stat_database_conflicts`), timed in process over the
//!   Unix socket in a read-only transaction as the audit runs them: the median per statement
//!   and of all three (the wall time bounds the server time from above);
//! - (b) the server CPU they cost: one connection runs all three many times, another as many
//!   `SELECT 1` (the protocol's own cost), and the difference of the CPU the server's backends
//!   used (the postmaster's reaped children) is divided by the runs;
//! - (c) `pgplan audit` end to end on the database, spawn to exit, for context.
//!
//! The 500 sessions: 400 idle, 40 idle holding a session-level advisory lock, 30 idle in a
//! transaction holding a row and a table lock, and a lock queue of 30 (one reader idle in its
//! transaction, an `ALTER TABLE` waiting for it, 28 readers queued behind the `ALTER`).
//! Goal: (a) and (b) at most 10 ms.
//!
//! Run: `cargo bench --bench audit_sessions` (PostgreSQL 15 binaries from the fetch cache, or
//! `PGPLAN_PG_BIN`).

mod audit_server;

use std::time::{Duration, Instant};

use audit_server::{
    BenchServer, TABLE_HEADER, before_binary, cores, load_average, median, ms, row,
};
use pgplan::db::cluster::Cluster;

const IDLE: usize = 400;
const ADVISORY: usize = 40;
const IDLE_IN_TRANSACTION: usize = 30;
/// The queue: one reader, the ALTER, and readers behind it.
const QUEUE: usize = 30;
const ROUNDS: usize = 31;
/// Executions per connection for the CPU figure (ticks of 10 ms: 200 runs resolve 0.05 ms).
const CPU_RUNS: usize = 200;

async fn connect(cluster: &Cluster) -> tokio_postgres::Client {
    let (client, connection) = cluster
        .config("app")
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connects");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// Opens the 500 sessions; they stay open while the returned clients live.
async fn sessions(cluster: &Cluster) -> Vec<tokio_postgres::Client> {
    let mut clients = Vec::new();
    for i in 0..IDLE + ADVISORY + IDLE_IN_TRANSACTION {
        let client = connect(cluster).await;
        let sql = if i < IDLE {
            "SELECT 1".to_owned()
        } else if i < IDLE + ADVISORY {
            format!("SELECT pg_advisory_lock({i})")
        } else {
            format!("BEGIN; UPDATE accounts SET balance = balance + 1 WHERE id = {i}")
        };
        client.batch_execute(&sql).await.expect("session set up");
        clients.push(client);
    }
    let reader = connect(cluster).await;
    reader
        .batch_execute("BEGIN; SELECT count(*) FROM orders")
        .await
        .unwrap();
    clients.push(reader);
    // Watches each waiter join the queue; closed before anything is measured.
    let watcher = connect(cluster).await;
    for i in 1..QUEUE {
        let sql = if i == 1 {
            "ALTER TABLE orders ADD COLUMN note text"
        } else {
            "SELECT count(*) FROM orders"
        };
        // Waits until the end of the benchmark: the task is dropped with the runtime.
        let queued = connect(cluster).await;
        let pid: i32 = queued
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        tokio::spawn(async move {
            let _ = queued.batch_execute(sql).await;
        });
        // Each waiter in line before the next, so the ALTER is first.
        loop {
            let row = watcher
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 \
                     AND wait_event_type = 'Lock'",
                    &[&pid],
                )
                .await
                .unwrap();
            if row.get::<_, i64>(0) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    clients
}

/// One audit-like read of the three statements: wall time of each.
async fn timed(client: &tokio_postgres::Client, statements: &[(&str, String)]) -> Vec<Duration> {
    client.batch_execute("BEGIN READ ONLY").await.unwrap();
    let mut times = Vec::new();
    for (_, sql) in statements {
        let started = Instant::now();
        client.query_typed(sql, &[]).await.expect("statement runs");
        times.push(started.elapsed());
    }
    client.batch_execute("ROLLBACK").await.unwrap();
    times
}

/// The server CPU of `runs` executions of `statements` on a connection of their own.
async fn server_cpu(server: &BenchServer, statements: &[String]) -> Duration {
    let before = server.settled_cpu();
    {
        let client = connect(&server.cluster).await;
        for _ in 0..CPU_RUNS {
            for sql in statements {
                client.query_typed(sql, &[]).await.expect("statement runs");
            }
        }
    }
    // The backend exits once the connection is dropped; settled_cpu waits for it to be reaped.
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.settled_cpu().saturating_sub(before)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = BenchServer::start(&[("max_connections", "600")]);
    let cluster = &server.cluster;
    let total = IDLE + ADVISORY + IDLE_IN_TRANSACTION + QUEUE;
    eprintln!(
        "opening {total} sessions on PostgreSQL {} ...",
        cluster.binaries().version
    );
    let version_num = runtime.block_on(async {
        cluster
            .execute("postgres", "CREATE DATABASE app")
            .await
            .unwrap();
        cluster
            .execute(
                "app",
                "CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL); \
                 INSERT INTO accounts SELECT g, 0 FROM generate_series(1, 1000) g; \
                 CREATE TABLE orders (id int PRIMARY KEY); \
                 INSERT INTO orders SELECT generate_series(1, 100); ANALYZE",
            )
            .await
            .unwrap();
        let client = connect(cluster).await;
        let v: String = client
            .query_one("SHOW server_version_num", &[])
            .await
            .unwrap()
            .get(0);
        v.parse::<u32>().unwrap()
    });
    let statements = pgplan::db::catalog::session_statements(version_num);
    let _held = runtime.block_on(sessions(cluster));

    println!(
        "\n## audit_sessions: {total} sessions, PostgreSQL {}, {} cores, load {}\n",
        cluster.binaries().version,
        cores(),
        load_average()
    );
    // (a) in process.
    let per_round: Vec<Vec<Duration>> = runtime.block_on(async {
        let client = connect(cluster).await;
        // Warm the backend's caches as the audit's earlier statements would.
        timed(&client, &statements).await;
        let mut rounds = Vec::new();
        for _ in 0..ROUNDS {
            rounds.push(timed(&client, &statements).await);
        }
        rounds
    });
    println!("| statement | median ms | max ms |\n|---|---:|---:|");
    for (i, (name, _)) in statements.iter().enumerate() {
        let times: Vec<Duration> = per_round.iter().map(|r| r[i]).collect();
        println!(
            "| {name} | {:.2} | {:.2} |",
            ms(median(times.clone())),
            ms(*times.iter().max().unwrap())
        );
    }
    let sums: Vec<Duration> = per_round.iter().map(|r| r.iter().sum()).collect();
    let all = median(sums.clone());
    println!(
        "| all three | {:.2} | {:.2} |",
        ms(all),
        ms(*sums.iter().max().unwrap())
    );

    // (b) server CPU.
    let sqls: Vec<String> = statements.iter().map(|(_, s)| s.clone()).collect();
    let (checks, floor) = runtime.block_on(async {
        let checks = server_cpu(&server, &sqls).await;
        let floor = server_cpu(&server, &vec!["SELECT 1".to_owned(); 3]).await;
        (checks, floor)
    });
    let per_audit = checks.saturating_sub(floor) / CPU_RUNS as u32;
    println!(
        "\nserver CPU per audit for the three statements: {:.2} ms (less the protocol's own \
         {:.2} ms for three SELECT 1; {CPU_RUNS} runs)",
        ms(per_audit),
        ms(floor / CPU_RUNS as u32)
    );

    // (c) the binary.
    println!("\n{TABLE_HEADER}");
    let conninfo = cluster.conninfo("app");
    let args = ["-d", conninfo.as_str(), "--format", "json"];
    let before = before_binary();
    let mut runs = Vec::new();
    let mut before_runs = Vec::new();
    // Interleaved with an earlier build when one is named, so both see the same load.
    for _ in 0..7 {
        runs.push(server.pgplan_audit(&args));
        if let Some(binary) = &before {
            before_runs.push(server.audit_with(binary, &args));
        }
    }
    row("pgplan audit (500 sessions)", &runs);
    if !before_runs.is_empty() {
        row("the earlier build (PGPLAN_BENCH_BEFORE)", &before_runs);
    }

    let goal = Duration::from_millis(10);
    println!(
        "\ngoal: at most 10 ms of server time for the session checks: {} (statements {:.2} ms, \
         server CPU {:.2} ms)",
        if all <= goal && per_audit <= goal {
            "met"
        } else {
            "NOT met"
        },
        ms(all),
        ms(per_audit)
    );
}
