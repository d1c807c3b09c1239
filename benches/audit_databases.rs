//! Several databases in one `pgplan audit` run against the slowest of them audited alone: a
//! throwaway PostgreSQL 15 server with 20 databases of 200 tables and 800 indexes each (some
//! duplicates and redundant prefixes, every index in use but the duplicates, dead rows), then
//!
//! - (a) `pgplan audit -d <db>` for each database alone,
//! - (b) one `pgplan audit -d <db1> ... -d <db20>`, and
//! - (c) the floor query (every index's row of `pg_stat_user_indexes ⋈ pg_index ⋈ pg_class`)
//!   in all 20 databases at once,
//!
//! each run of the real binary timed from spawn to exit (process start, connections, catalog
//! reads, the pure audit and the Prometheus output included), interleaved so drift hits all
//! alike. Goals (two cores cannot run 20 databases' reads in the time of one): at most 40 ms of
//! server CPU per database, and (b) within 1.2 × its CPU floor; (b) ÷ (c) is printed too.
//!
//! Where the time goes, to tell pgplan's cost from the machine's: the CPU the pgplan process
//! used and its peak memory (`wait4` of the child), the CPU the server's backends used (the
//! postmaster's reaped children), their sum over the cores as the floor no scheduling can beat,
//! how busy the whole machine was (`/proc/stat`, to see anything else running), the same run
//! over 1, 2, 5 and 10 databases, and, in process, the catalog reads alone (one after another,
//! then all concurrently), the pure audit and the Prometheus exposition of all 20 databases.
//!
//! Run: `cargo bench --bench audit_databases` (PostgreSQL 15 binaries from the fetch cache, or
//! `PGPLAN_PG_BIN`). The binary is the one cargo builds for the bench (`CARGO_BIN_EXE_pgplan`:
//! cargo sets it for benchmarks as for integration tests, with the bench profile, so it is an
//! optimised build).

mod audit_server;

use std::time::Instant;

use audit_server::{
    BenchServer, Run, TABLE_HEADER, cores, load_average, median, median_cpu_floor, medians, ms, row,
};
use pgplan::audit::{AuditOptions, DatabaseNodes, NodeResult, Scope, audit_databases};
use pgplan::db::cluster::Cluster;

const DATABASES: usize = 20;
const TABLES: usize = 200;
/// A primary key and three more: (a), (a, b) (which makes (a) a redundant prefix) and (c), or
/// on every tenth table a second (a), a duplicate.
const INDEXES_PER_TABLE: usize = 4;
/// Tables with enough dead rows, autovacuum off, to be findings.
const DEAD_TABLES: usize = 5;
/// Timed rounds; each round runs every database alone and then all of them at once.
const ROUNDS: usize = 7;

/// The schema every database gets, built once in a template and copied by CREATE DATABASE.
fn template_sql() -> String {
    format!("CREATE SCHEMA app; {} ANALYZE;", tables_sql(1, TABLES))
}

/// Tables `from..=to` of the schema: a primary key and three more indexes each.
fn tables_sql(from: usize, to: usize) -> String {
    format!(
        "DO $$
         BEGIN
           FOR i IN {from}..{to} LOOP
             EXECUTE format('CREATE TABLE app.t%s (id int PRIMARY KEY, a int, b text, c timestamptz, d int)', i);
             EXECUTE format('INSERT INTO app.t%s SELECT g, g %% 7, md5(g::text), now(), g FROM generate_series(1, CASE WHEN %s <= {DEAD_TABLES} THEN 2000 ELSE 20 END) g', i, i);
             EXECUTE format('CREATE INDEX t%s_a ON app.t%s (a)', i, i);
             IF i % 10 = 0 THEN
               EXECUTE format('CREATE INDEX t%s_a_again ON app.t%s (a)', i, i);
             ELSE
               EXECUTE format('CREATE INDEX t%s_a_b ON app.t%s (a, b)', i, i);
             END IF;
             EXECUTE format('CREATE INDEX t%s_c ON app.t%s (c)', i, i);
           END LOOP;
         END $$;"
    )
}

/// This database's own activity (statistics are per database and not copied from the
/// template): every row of the first tables updated twice, with autovacuum off, so they have
/// dead rows; and a scan through each index a query can use, so that, as in a database in use,
/// the unused indexes are the few nobody needs (the duplicates), not all of them.
fn activity_sql(tables: usize) -> String {
    let mut sql: String = (1..=DEAD_TABLES)
        .map(|i| format!("UPDATE app.t{i} SET d = d + 1; UPDATE app.t{i} SET d = d + 1;"))
        .collect();
    sql.push_str(&format!(
        "SET enable_seqscan = off; SET enable_bitmapscan = off;
         DO $$
         DECLARE n bigint;
         BEGIN
           FOR i IN 1..{tables} LOOP
             EXECUTE format('SELECT count(*) FROM app.t%s WHERE id = 1', i) INTO n;
             EXECUTE format('SELECT count(*) FROM app.t%s WHERE a = 1', i) INTO n;
             EXECUTE format('SELECT count(*) FROM app.t%s WHERE a = 1 AND b = ''x''', i) INTO n;
             EXECUTE format('SELECT count(*) FROM app.t%s WHERE c < now()', i) INTO n;
           END LOOP;
         END $$;"
    ));
    sql
}

async fn build(cluster: &Cluster) -> Vec<String> {
    cluster
        .execute("postgres", "CREATE DATABASE bench_template")
        .await
        .unwrap();
    cluster
        .execute("bench_template", &template_sql())
        .await
        .unwrap();
    let mut names = Vec::new();
    for n in 0..DATABASES {
        let name = format!("db{n:02}");
        cluster
            .execute(
                "postgres",
                &format!("CREATE DATABASE {name} TEMPLATE bench_template"),
            )
            .await
            .unwrap();
        cluster.execute(&name, &activity_sql(TABLES)).await.unwrap();
        names.push(name);
    }
    names
}

/// One `pgplan audit` over `conninfos`, timed from spawn to exit; its output is discarded.
fn pgplan_audit(server: &BenchServer, conninfos: &[&str]) -> Run {
    let mut args = vec!["--format", "prometheus"];
    for c in conninfos {
        args.extend(["-d", c]);
    }
    let run = server.pgplan_audit(&args);
    // 1: findings (expected: every database has some).
    assert_eq!(run.exit_code, 1, "pgplan audit found nothing");
    run
}

/// Reads a node the way `pgplan audit` does, for the in-process breakdown.
async fn read(cluster: &Cluster, database: &str) -> NodeResult {
    let (client, connection) = cluster
        .config(database)
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connects");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client.batch_execute("BEGIN READ ONLY").await.unwrap();
    let facts = pgplan::db::facts::read_facts(&client).await.unwrap();
    let snapshot = pgplan::db::catalog::read_snapshot(&client, &facts, &Scope::default(), None)
        .await
        .expect("snapshot");
    client.batch_execute("COMMIT").await.unwrap();
    NodeResult {
        name: database.to_owned(),
        outcome: Ok(snapshot),
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = BenchServer::start(&[
        ("max_connections", "100"),
        // The mixed run's activity reads every table of a 10,000-table database in one
        // transaction: 50,000 relation locks.
        ("max_locks_per_transaction", "1024"),
    ]);
    let cluster = &server.cluster;
    eprintln!(
        "building {DATABASES} databases of {TABLES} tables and {} indexes on PostgreSQL {} ...",
        TABLES * INDEXES_PER_TABLE,
        cluster.binaries().version
    );
    let started = Instant::now();
    let names = runtime.block_on(build(cluster));
    eprintln!("built in {:.0} s", started.elapsed().as_secs_f64());
    let conninfos: Vec<String> = names.iter().map(|n| cluster.conninfo(n)).collect();
    let all: Vec<&str> = conninfos.iter().map(String::as_str).collect();

    // Warm-up: shared buffers and the page cache hold every catalog page before timing.
    pgplan_audit(&server, &all);
    for c in &all {
        pgplan_audit(&server, &[c]);
    }

    let mut alone: Vec<Vec<Run>> = vec![Vec::new(); DATABASES];
    let mut together: Vec<Run> = Vec::new();
    // The floor a person compares with: the one query fetching every index's row, in every
    // database at once.
    let databases: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut floors: Vec<Run> = Vec::new();
    let before = audit_server::before_binary();
    let mut befores: Vec<Run> = Vec::new();
    let mut all_args = vec!["--format", "prometheus"];
    for c in &all {
        all_args.extend(["-d", c]);
    }
    for _ in 0..ROUNDS {
        if let Some(binary) = &before {
            befores.push(server.audit_with(binary, &all_args));
        }
        floors.push(
            runtime
                .block_on(audit_server::floor_query(&server, &databases))
                .0,
        );
        for (i, c) in all.iter().enumerate() {
            alone[i].push(pgplan_audit(&server, &[c]));
        }
        together.push(pgplan_audit(&server, &all));
    }

    // The same run over the first 1, 2, 5, 10 databases: where a run stops being latency-bound
    // (one backend working through its statements) and becomes CPU-bound (every core busy).
    let sweep: Vec<(usize, Vec<Run>)> = [1, 2, 5, 10]
        .into_iter()
        .map(|n| {
            (
                n,
                (0..ROUNDS)
                    .map(|_| pgplan_audit(&server, &all[..n]))
                    .collect(),
            )
        })
        .collect();

    let cores = cores();
    // Anything else running on the machine shows in the busy figures: say how loaded it was.
    println!(
        "load average (1, 5, 15 min) after the timed runs: {}",
        load_average()
    );
    println!(
        "PostgreSQL {}, {DATABASES} databases of {TABLES} tables and {} indexes; {cores} cores; \
         median of {ROUNDS} runs",
        cluster.binaries().version,
        TABLES * INDEXES_PER_TABLE,
    );
    println!();
    println!("{TABLE_HEADER}");
    let row = |label: &str, runs: &[Run]| row(label, runs).wall;
    let median_wall = |runs: &Vec<Run>| median(runs.iter().map(|r| r.wall).collect());
    let fastest = (0..DATABASES)
        .min_by_key(|&i| median_wall(&alone[i]))
        .unwrap();
    let slowest = (0..DATABASES)
        .max_by_key(|&i| median_wall(&alone[i]))
        .unwrap();
    row(
        &format!("fastest alone ({})", names[fastest]),
        &alone[fastest],
    );
    // The databases are identical, so which one is slowest is noise: the typical one too.
    let every_alone: Vec<Run> = alone.iter().flatten().copied().collect();
    let typical_wall = row(
        &format!("any alone ({DATABASES} × {ROUNDS} runs)"),
        &every_alone,
    );
    let slowest_wall = row(
        &format!("slowest alone ({})", names[slowest]),
        &alone[slowest],
    );
    let all_wall = row(&format!("all {DATABASES} at once"), &together);
    let floor_wall = row(&format!("floor query, all {DATABASES} at once"), &floors);
    let before_wall =
        (!befores.is_empty()).then(|| row(&format!("all {DATABASES} at once, before"), &befores));
    println!();
    println!(
        "all at once / slowest alone: {:.2}; all at once / any alone: {:.2}",
        all_wall.as_secs_f64() / slowest_wall.as_secs_f64(),
        all_wall.as_secs_f64() / typical_wall.as_secs_f64()
    );
    // What the server spends on one database's audit, and how close the run of all of them
    // comes to the least time that work can take on these cores.
    println!(
        "server CPU per database: **{:.0} ms** (goal ≤ 40; median of every database alone); \
         all {DATABASES} at once: wall ÷ CPU floor **{:.2}** (goal ≤ 1.2), wall ÷ floor query \
         **{:.2}**",
        ms(median(every_alone.iter().map(|r| r.server_cpu).collect())),
        all_wall.as_secs_f64() / median_cpu_floor(&together).as_secs_f64(),
        all_wall.as_secs_f64() / floor_wall.as_secs_f64()
    );
    if let Some(before_wall) = before_wall {
        println!(
            "before: server CPU per database (all at once ÷ {DATABASES}) {:.0} ms, now {:.0} ms; \
             all at once: wall ÷ CPU floor {:.2}, wall ÷ floor query {:.2}",
            ms(medians(&befores).server_cpu) / DATABASES as f64,
            ms(medians(&together).server_cpu) / DATABASES as f64,
            before_wall.as_secs_f64() / median_cpu_floor(&befores).as_secs_f64(),
            before_wall.as_secs_f64() / floor_wall.as_secs_f64()
        );
    }
    println!();
    println!("| databases at once | wall ms | / slowest alone | CPU floor ms | wall / floor |");
    println!("|---:|---:|---:|---:|---:|");
    for (n, runs) in sweep.iter().chain([(DATABASES, together.clone())].iter()) {
        let wall = median_wall(runs);
        println!(
            "| {n} | {:.1} | {:.2} | {:.0} | {:.2} |",
            ms(wall),
            wall.as_secs_f64() / slowest_wall.as_secs_f64(),
            ms(median_cpu_floor(runs)),
            wall.as_secs_f64() / median_cpu_floor(runs).as_secs_f64()
        );
    }
    println!();
    println!(
        "CPU floor: (pgplan CPU + server CPU) / {cores} cores, the least wall time that work can \
         take here. Machine busy: the whole machine's busy time over wall × cores (other \
         processes included)."
    );

    // In process: the catalog reads without process start, and the pure audit on its own.
    runtime.block_on(async {
        let mut sequential = Vec::new();
        let mut concurrent = Vec::new();
        let mut pure = Vec::new();
        let mut pure_one = Vec::new();
        let mut render = Vec::new();
        for _ in 0..ROUNDS {
            let started = Instant::now();
            for n in &names {
                read(cluster, n).await;
            }
            sequential.push(started.elapsed());
            let started = Instant::now();
            let nodes =
                futures_util::future::join_all(names.iter().map(|n| read(cluster, n))).await;
            concurrent.push(started.elapsed());
            let groups: Vec<DatabaseNodes> = names
                .iter()
                .zip(nodes)
                .map(|(n, node)| DatabaseNodes {
                    database: n.clone(),
                    nodes: vec![node],
                })
                .collect();
            let started = Instant::now();
            let report = audit_databases(&groups, &AuditOptions::default());
            pure.push(started.elapsed());
            assert!(report.findings.len() >= DATABASES);
            let mut exposition = Vec::new();
            let started = Instant::now();
            pgplan::report::audit::write_audit_prometheus(&mut exposition, &report).unwrap();
            render.push(started.elapsed());
            let started = Instant::now();
            audit_databases(&groups[..1], &AuditOptions::default());
            pure_one.push(started.elapsed());
        }
        println!();
        println!("In process (library, no process start), median of {ROUNDS}:");
        println!();
        println!("| step | ms |");
        println!("|---|---:|");
        println!(
            "| {DATABASES} catalog reads one after another | {:.1} |",
            ms(median(sequential))
        );
        println!(
            "| {DATABASES} catalog reads concurrently | {:.1} |",
            ms(median(concurrent))
        );
        println!("| pure audit of 1 database | {:.1} |", ms(median(pure_one)));
        println!(
            "| pure audit of {DATABASES} databases | {:.1} |",
            ms(median(pure))
        );
        println!(
            "| Prometheus exposition of {DATABASES} databases | {:.1} |",
            ms(median(render))
        );
    });

    mixed(&runtime, &server, &all);
}

/// Tables in the one large database of the mixed run (four indexes each, as the small ones).
const LARGE_TABLES: usize = 10_000;

/// The cluster a cron job usually meets: one large application database beside many small
/// ones. One database of LARGE_TABLES tables and the first 19 small ones, audited at once,
/// against the large one alone. Printed beside, never instead of, the equal-sized run above.
fn mixed(runtime: &tokio::runtime::Runtime, server: &BenchServer, small: &[&str]) {
    let cluster = &server.cluster;
    eprintln!("building one database of {LARGE_TABLES} tables for the mixed run ...");
    let started = Instant::now();
    runtime.block_on(async {
        cluster
            .execute("postgres", "CREATE DATABASE large")
            .await
            .unwrap();
        cluster.execute("large", "CREATE SCHEMA app").await.unwrap();
        // In transactions of 500 tables: one transaction creating 50,000 relations would need
        // that many locks at once.
        for from in (1..=LARGE_TABLES).step_by(500) {
            let to = (from + 499).min(LARGE_TABLES);
            cluster
                .execute("large", &tables_sql(from, to))
                .await
                .unwrap();
        }
        cluster.execute("large", "ANALYZE").await.unwrap();
        cluster
            .execute("large", &activity_sql(LARGE_TABLES))
            .await
            .unwrap();
    });
    eprintln!("built in {:.0} s", started.elapsed().as_secs_f64());
    let large = cluster.conninfo("large");
    let mut together_set: Vec<&str> = vec![large.as_str()];
    together_set.extend(small.iter().take(DATABASES - 1));
    pgplan_audit(server, &together_set);
    let mut alone = Vec::new();
    let mut together = Vec::new();
    for _ in 0..ROUNDS {
        alone.push(pgplan_audit(server, &[large.as_str()]));
        together.push(pgplan_audit(server, &together_set));
    }
    let wall = |runs: &[Run]| median(runs.iter().map(|r| r.wall).collect());
    println!();
    println!(
        "Mixed: one database of {LARGE_TABLES} tables and {} indexes with {} of {TABLES} tables, \
         median of {ROUNDS} runs",
        LARGE_TABLES * INDEXES_PER_TABLE,
        DATABASES - 1
    );
    println!();
    println!("| run | wall ms | pgplan CPU ms | server CPU ms | CPU floor ms |");
    println!("|---|---:|---:|---:|---:|");
    for (label, runs) in [
        ("the large database alone".to_owned(), &alone),
        (format!("all {DATABASES} at once"), &together),
    ] {
        println!(
            "| {label} | {:.1} | {:.0} | {:.0} | {:.0} |",
            ms(wall(runs)),
            ms(medians(runs).client_cpu),
            ms(medians(runs).server_cpu),
            ms(median_cpu_floor(runs)),
        );
    }
    println!();
    println!(
        "mixed: all at once / the large one alone: **{:.2}** (goal ≤ 1.5)",
        wall(&together).as_secs_f64() / wall(&alone).as_secs_f64()
    );
}
