//! Scale benchmark for `pgplan audit`: a throwaway PostgreSQL 15 server with 10,000 tables and
//! 50,000 indexes, then the catalog read (`db::catalog::read_snapshot`) and the pure audit
//! (`audit::audit`) timed separately, with the heap they allocate, at 10%, 50% and 100% of the
//! catalog to show that time and memory grow linearly.
//!
//! Run: `cargo bench --bench audit_scale` (PostgreSQL 15 binaries from the fetch cache, or
//! `PGPLAN_PG_BIN`). Building the catalog takes a few minutes.

use std::alloc::{GlobalAlloc, Layout, System};
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
                 COMMIT;
               END LOOP;
             END $$"
        );
        client.batch_execute(&sql).await.unwrap();
        eprintln!("  schema s{s}: {TABLES_PER_SCHEMA} tables");
    }
    client.batch_execute("ANALYZE").await.unwrap();
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
