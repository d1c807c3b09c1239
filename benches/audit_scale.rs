//! Scale benchmark for `pgplan audit`: a throwaway PostgreSQL 15 server with 10,000 tables and
//! 50,400 indexes (400 of them on expressions or partial), then
//!
//! - the whole `pgplan audit` (the real binary, spawn to exit, JSON to /dev/null) against the
//!   floor a person would compare it with: one query fetching `pg_stat_user_indexes ⋈ pg_index ⋈
//!   pg_class` on a fresh connection; and against the CPU floor, (pgplan CPU + server CPU) /
//!   cores. Server CPU is what the server's processes that exited used (the backend and any
//!   parallel workers, reaped by the postmaster: its cutime and cstime), so nothing else running
//!   on the machine counts;
//! - in process, the catalog read (`db::catalog::read_snapshot`) and the pure audit
//!   (`audit::audit`) timed separately, with the heap they allocate, at 10%, 50% and 100% of the
//!   catalog to show that time and memory grow linearly.
//!
//! Run: `cargo bench --bench audit_scale` (PostgreSQL 15 binaries from the fetch cache, or
//! `PGPLAN_PG_BIN`). Building the catalog takes a few minutes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pgplan::audit::{AuditOptions, NodeResult, Scope, audit};
use pgplan::db::cluster::{
    Cluster, ClusterOptions, PG_BIN_ENV, ServerBinaries, binaries_cache_dir,
};

/// Counts live heap bytes and their peak, so memory growth is measured exactly.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const PGPLAN: &str = env!("CARGO_BIN_EXE_pgplan");

const SCHEMAS: usize = 10;
const TABLES_PER_SCHEMA: usize = 1000;
/// Each table: a primary key and four more indexes, one of them a duplicate.
const INDEXES_PER_TABLE: usize = 5;

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn binaries() -> ServerBinaries {
    if let Some(dir) = std::env::var_os(PG_BIN_ENV).filter(|v| !v.is_empty()) {
        return ServerBinaries::at(dir).expect("PGPLAN_PG_BIN holds initdb and postgres");
    }
    ServerBinaries::at(binaries_cache_dir().join("15").join("bin")).unwrap_or_else(|e| {
        panic!("PostgreSQL 15 binaries missing ({e}); run scripts/fetch-postgres.sh 15")
    })
}

async fn build_catalog(cluster: &Cluster) {
    let client = cluster.connect("postgres").await.expect("connects");
    for s in 0..SCHEMAS {
        client
            .batch_execute(&format!("CREATE SCHEMA s{s}"))
            .await
            .unwrap();
        // One DO block per schema, committing after every table so locks stay few.
        let sql = format!(
            "DO $$
             BEGIN
               FOR i IN 1..{TABLES_PER_SCHEMA} LOOP
                 EXECUTE format('CREATE TABLE s{s}.t%s (id int PRIMARY KEY, a int, b text, c timestamptz, d int)', i);
                 EXECUTE format('INSERT INTO s{s}.t%s SELECT g, g %% 7, md5(g::text), now(), g FROM generate_series(1, 20) g', i);
                 EXECUTE format('CREATE INDEX t%s_a ON s{s}.t%s (a)', i, i);
                 EXECUTE format('CREATE INDEX t%s_a_b ON s{s}.t%s (a, b)', i, i);
                 EXECUTE format('CREATE INDEX t%s_c ON s{s}.t%s (c)', i, i);
                 EXECUTE format('CREATE INDEX t%s_c_again ON s{s}.t%s (c)', i, i);
                 -- Every 100th table also has an expression index and its duplicate, and a
                 -- partial one and its duplicate: 400 indexes whose definitions need deparsing.
                 IF i % 100 = 1 THEN
                   EXECUTE format('CREATE INDEX t%s_lower_b ON s{s}.t%s (lower(b))', i, i);
                   EXECUTE format('CREATE INDEX t%s_lower_b_again ON s{s}.t%s (lower(b))', i, i);
                   EXECUTE format('CREATE INDEX t%s_d_pos ON s{s}.t%s (d) WHERE d > 0', i, i);
                   EXECUTE format('CREATE INDEX t%s_d_pos_again ON s{s}.t%s (d) WHERE d > 0', i, i);
                 END IF;
                 COMMIT;
               END LOOP;
             END $$"
        );
        client.batch_execute(&sql).await.unwrap();
        eprintln!("  schema s{s}: {TABLES_PER_SCHEMA} tables");
    }
    client.batch_execute("ANALYZE").await.unwrap();
}

/// CPU time of the server's processes that have exited (backends and parallel workers), as
/// the postmaster has reaped them: `/proc/<postmaster>/stat`'s cutime and cstime, in ticks of
/// 10 ms.
fn server_cpu(postmaster: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{postmaster}/stat")).unwrap_or_default();
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default()
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let ticks = fields.get(13).copied().unwrap_or(0) + fields.get(14).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// The figure once the last run's backends have exited and been reaped: it stops changing.
fn settled_server_cpu(postmaster: u32) -> Duration {
    let mut last = server_cpu(postmaster);
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(20));
        let now = server_cpu(postmaster);
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

/// CPU time of waited-for children (user + system): a pgplan run's own CPU is a difference.
fn children_cpu() -> Duration {
    // SAFETY: getrusage writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

#[derive(Clone, Copy)]
struct Whole {
    wall: Duration,
    client_cpu: Duration,
    server_cpu: Duration,
}

/// One whole `pgplan audit` of the database, spawn to exit, JSON discarded.
fn whole_audit(postmaster: u32, conninfo: &str) -> Whole {
    let server = settled_server_cpu(postmaster);
    let cpu = children_cpu();
    let started = Instant::now();
    let out = Command::new(PGPLAN)
        .args(["audit", "--format", "json", "-d", conninfo])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("pgplan runs");
    let wall = started.elapsed();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "pgplan audit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Whole {
        wall,
        client_cpu: children_cpu().saturating_sub(cpu),
        server_cpu: settled_server_cpu(postmaster).saturating_sub(server),
    }
}

/// The floor: what fetching every index's row of `pg_stat_user_indexes ⋈ pg_index ⋈ pg_class`
/// costs on a fresh connection (connect, query, every row in text as psql gets it).
async fn floor_query(cluster: &Cluster, postmaster: u32) -> Whole {
    let server = settled_server_cpu(postmaster);
    let started = Instant::now();
    let (client, connection) = cluster
        .config("postgres")
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connects");
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    let rows = client
        .simple_query(
            "SELECT * FROM pg_stat_user_indexes s JOIN pg_index i ON i.indexrelid = s.indexrelid \
             JOIN pg_class c ON c.oid = s.indexrelid",
        )
        .await
        .expect("floor query");
    assert!(rows.len() > 50_000);
    drop(client);
    let _ = task.await;
    let wall = started.elapsed();
    Whole {
        wall,
        client_cpu: Duration::ZERO,
        server_cpu: settled_server_cpu(postmaster).saturating_sub(server),
    }
}

fn median<T: Copy>(mut values: Vec<T>, key: impl Fn(&T) -> Duration) -> T {
    values.sort_by_key(|v| key(v));
    values[values.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Interleaved runs of the floor query and the whole audit, so drift hits both alike.
async fn whole(cluster: &Cluster) {
    const ROUNDS: usize = 5;
    let postmaster: u32 = std::fs::read_to_string(cluster.data_dir().join("postmaster.pid"))
        .ok()
        .and_then(|pid| pid.lines().next().and_then(|l| l.trim().parse().ok()))
        .expect("postmaster.pid names the postmaster");
    let conninfo = cluster.conninfo("postgres");
    // Warm-up: shared buffers and the page cache hold every catalog page.
    floor_query(cluster, postmaster).await;
    whole_audit(postmaster, &conninfo);
    let (mut floors, mut audits) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        floors.push(floor_query(cluster, postmaster).await);
        audits.push(whole_audit(postmaster, &conninfo));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "whole audit, median of {ROUNDS} interleaved runs (load average after: {})",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!();
    println!("| run | wall ms | pgplan CPU ms | server CPU ms | CPU floor ms |");
    println!("|---|---:|---:|---:|---:|");
    let floor = median(floors, |r| r.wall);
    let audit = median(audits.clone(), |r| r.wall);
    let cpu_floor = |r: &Whole| (r.client_cpu + r.server_cpu) / cores;
    for (label, r) in [("floor query", floor), ("pgplan audit", audit)] {
        println!(
            "| {label} | {:.0} | {:.0} | {:.0} | {:.0} |",
            ms(r.wall),
            ms(r.client_cpu),
            ms(r.server_cpu),
            ms(cpu_floor(&r))
        );
    }
    let server = median(audits.clone(), |r| r.server_cpu).server_cpu;
    let audit_cpu_floor = median(audits.iter().map(cpu_floor).collect(), |d| *d);
    println!();
    println!(
        "wall ÷ floor query: **{:.2}** (goal ≤ 1.3); wall ÷ CPU floor: {:.2}; server CPU per \
         audit: {:.0} ms",
        audit.wall.as_secs_f64() / floor.wall.as_secs_f64(),
        audit.wall.as_secs_f64() / audit_cpu_floor.as_secs_f64(),
        ms(server)
    );
    println!();
}

/// The audit's three largest catalog statements, run with the server's default parallel
/// workers and with none (`max_parallel_workers_per_gather = 0`, what the audit sets for its
/// transaction), each on a fresh connection: whether the workers buy wall time or only cost the
/// server CPU.
async fn parallel_workers(cluster: &Cluster) {
    const ROUNDS: usize = 5;
    let postmaster: u32 = std::fs::read_to_string(cluster.data_dir().join("postmaster.pid"))
        .ok()
        .and_then(|pid| pid.lines().next().and_then(|l| l.trim().parse().ok()))
        .expect("postmaster.pid names the postmaster");
    let version = 150_000;
    let statements = [
        ("tables", include_str!("../queries/audit_tables.sql")),
        (
            "columns (pg_stats)",
            include_str!("../queries/audit_columns.sql"),
        ),
        ("indexes", include_str!("../queries/audit_indexes.sql")),
    ];
    println!("catalog statements with and without parallel workers, median of {ROUNDS}:");
    println!();
    println!("| statement | workers | wall ms | server CPU ms |");
    println!("|---|---|---:|---:|");
    for (label, sql) in statements {
        let sql = pgplan::db::catalog::statement_for(sql, version);
        for setting in ["default", "0"] {
            let mut runs = Vec::new();
            for _ in 0..ROUNDS {
                let server = settled_server_cpu(postmaster);
                let (client, connection) = cluster
                    .config("postgres")
                    .connect(tokio_postgres::NoTls)
                    .await
                    .expect("connects");
                let task = tokio::spawn(async move {
                    let _ = connection.await;
                });
                let set = if setting == "0" {
                    "SET LOCAL max_parallel_workers_per_gather = 0"
                } else {
                    "SELECT 1"
                };
                client
                    .batch_execute(&format!("BEGIN READ ONLY; {set}"))
                    .await
                    .unwrap();
                let empty: Vec<String> = Vec::new();
                let started = Instant::now();
                let rows = client
                    .query(sql.as_str(), &[&empty, &empty, &empty, &empty])
                    .await
                    .expect("statement runs");
                let wall = started.elapsed();
                assert!(!rows.is_empty());
                client.batch_execute("COMMIT").await.unwrap();
                drop(client);
                let _ = task.await;
                runs.push(Whole {
                    wall,
                    client_cpu: Duration::ZERO,
                    server_cpu: settled_server_cpu(postmaster).saturating_sub(server),
                });
            }
            let wall = median(runs.clone(), |r| r.wall).wall;
            let cpu = median(runs, |r| r.server_cpu).server_cpu;
            println!("| {label} | {setting} | {:.0} | {:.0} |", ms(wall), ms(cpu));
        }
    }
    println!();
}

struct Run {
    label: String,
    tables: usize,
    indexes: usize,
    read: Duration,
    audit: Duration,
    read_peak_bytes: usize,
    audit_peak_bytes: usize,
    snapshot_bytes: usize,
    findings: usize,
}

/// The best of three runs, each on a fresh connection: a new backend starts with cold catalog
/// caches, as a cron job's does.
async fn measure(cluster: &Cluster, label: &str, scope: &Scope) -> Run {
    let mut best: Option<Run> = None;
    for _ in 0..3 {
        let (client, connection) = cluster
            .config("postgres")
            .connect(tokio_postgres::NoTls)
            .await
            .expect("connects");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
            .batch_execute("BEGIN READ ONLY; SET LOCAL statement_timeout = '120s'")
            .await
            .unwrap();
        let facts = pgplan::db::facts::read_facts(&client).await.unwrap();
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let started = Instant::now();
        let snapshot = pgplan::db::catalog::read_snapshot(&client, &facts, scope)
            .await
            .expect("snapshot");
        let read = started.elapsed();
        let read_peak = PEAK.load(Ordering::Relaxed) - before;
        let snapshot_bytes = LIVE.load(Ordering::Relaxed) - before;
        client.batch_execute("COMMIT").await.unwrap();
        let (tables, indexes) = (snapshot.tables.len(), snapshot.indexes.len());
        let nodes = vec![NodeResult {
            name: "bench".into(),
            outcome: Ok(snapshot),
        }];
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let started = Instant::now();
        let report = audit(&nodes, &AuditOptions::default());
        let audit_time = started.elapsed();
        let audit_peak = PEAK.load(Ordering::Relaxed) - base;
        let run = Run {
            label: label.to_owned(),
            tables,
            indexes,
            read,
            audit: audit_time,
            read_peak_bytes: read_peak,
            audit_peak_bytes: audit_peak,
            snapshot_bytes,
            findings: report.findings.len(),
        };
        drop(report);
        drop(nodes);
        if best
            .as_ref()
            .is_none_or(|b| run.read + run.audit < b.read + b.audit)
        {
            best = Some(run);
        }
    }
    best.expect("three runs")
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing useful either way.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let options = ClusterOptions::new(binaries())
            .setting("fsync", "off")
            .setting("synchronous_commit", "off")
            .setting("full_page_writes", "off")
            .setting("autovacuum", "off")
            .setting("shared_buffers", "256MB")
            .setting("max_wal_size", "4GB")
            .setting("jit", "off");
        let cluster = Cluster::start(options).expect("server starts");
        eprintln!(
            "building {} tables and {} indexes on PostgreSQL {} ...",
            SCHEMAS * TABLES_PER_SCHEMA,
            SCHEMAS * TABLES_PER_SCHEMA * INDEXES_PER_TABLE,
            cluster.binaries().version
        );
        let started = Instant::now();
        build_catalog(&cluster).await;
        eprintln!("built in {:.0} s", started.elapsed().as_secs_f64());
        whole(&cluster).await;
        parallel_workers(&cluster).await;

        let scopes = [
            ("10%", Scope {
                schemas: vec!["s0".into()],
                ..Default::default()
            }),
            ("50%", Scope {
                schemas: (0..SCHEMAS / 2).map(|s| format!("s{s}")).collect(),
                ..Default::default()
            }),
            ("100%", Scope::default()),
        ];
        println!(
            "{:>5} {:>7} {:>8} {:>10} {:>10} {:>10} {:>12} {:>12} {:>12} {:>9}",
            "scope", "tables", "indexes", "read s", "audit s", "total s", "read peak", "snapshot",
            "audit peak", "findings"
        );
        for (label, scope) in &scopes {
            let r = measure(&cluster, label, scope).await;
            println!(
                "{:>5} {:>7} {:>8} {:>10.3} {:>10.3} {:>10.3} {:>9.1} MiB {:>8.1} MiB {:>8.1} MiB {:>9}",
                r.label,
                r.tables,
                r.indexes,
                r.read.as_secs_f64(),
                r.audit.as_secs_f64(),
                (r.read + r.audit).as_secs_f64(),
                mib(r.read_peak_bytes),
                mib(r.snapshot_bytes),
                mib(r.audit_peak_bytes),
                r.findings
            );
        }
    });
}
