//! What the representative write of `--allow-writes` leaves, on real servers 13–18. The write is
//! rolled back, but PostgreSQL counts it in the table's cumulative statistics (`n_tup_ins`,
//! `n_tup_del`), whose write rates the next run's advice reads. As a superuser pgplan keeps it
//! out (`track_counts` off for the write alone); as any other role it names the rows it counted,
//! and the counters show exactly that many.

mod common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{TestDb, for_each_version, pgplan_bin, stderr};

const SETUP: &str = "
CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL, pad text NOT NULL)
    WITH (autovacuum_enabled = off);
INSERT INTO t SELECT i, i % 100, repeat('x', 40) FROM generate_series(1, 20000) AS i;
VACUUM (ANALYZE) t;
";

/// seq_scan, n_tup_ins and n_tup_del of t.
async fn counters(db: &TestDb) -> (i64, i64, i64) {
    let client = db.client().await;
    let row = client
        .query_one(
            "SELECT seq_scan, n_tup_ins, n_tup_del FROM pg_stat_user_tables WHERE relid = 't'::regclass",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

/// The counters once pgplan's session has reported its scans: its measured runs scan t, so a
/// grown seq_scan says the session's counts arrived (on 13 and 14 through the collector).
async fn counters_after(db: &TestDb, before: (i64, i64, i64)) -> (i64, i64, i64) {
    let started = Instant::now();
    loop {
        let now = counters(db).await;
        if now.0 > before.0 || started.elapsed() > Duration::from_secs(10) {
            // One more moment for the rest of the same report.
            tokio::time::sleep(Duration::from_millis(300)).await;
            return counters(db).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn compare(conninfo: &str, dir: &std::path::Path) -> Output {
    let path = dir.join("q.sql");
    std::fs::write(&path, "-- calls: 1000\nSELECT id FROM t WHERE v = 3").unwrap();
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .args(["compare", "-d", conninfo, "--allow-writes"])
        .args([
            "--index",
            "CREATE INDEX ON t (v)",
            "--runs",
            "1",
            "--workload",
        ])
        .arg(&path)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_representative_writes_stay_out_of_the_counters_or_are_named() {
    for_each_version("probe_residue", |major| async move {
        let db = TestDb::create(major, "probe_residue").await;
        db.run(SETUP).await;
        // Before 15 the setup's own 20,000 inserts reach the view through the collector, a
        // moment later: wait for them, or they would look like pgplan's.
        let started = Instant::now();
        while counters(&db).await.1 < 20_000 && started.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let dir = tempfile::tempdir().unwrap();

        // A superuser: nothing counted, nothing said about counters.
        let before = counters(&db).await;
        let out = compare(&db.conninfo(), dir.path());
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(
            matches!(out.status.code(), Some(0) | Some(1)),
            "{major}: {text}"
        );
        let after = counters_after(&db, before).await;
        assert!(
            after.0 > before.0,
            "{major}: pgplan's scans never arrived: {after:?}"
        );
        assert_eq!((after.1, after.2), (before.1, before.2), "{major}: {text}");
        assert!(!text.contains("inserted and"), "{major}: {text}");

        // The owner, no superuser: the rows its writes counted are named, and are what the
        // counters show.
        let role = format!("{}_owner", db.name);
        db.run(&format!(
            "CREATE ROLE {role} LOGIN; ALTER TABLE t OWNER TO {role}; \
             GRANT USAGE, CREATE ON SCHEMA public TO {role}"
        ))
        .await;
        let before = counters(&db).await;
        let out = compare(&format!("{} user={role}", db.conninfo()), dir.path());
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(
            matches!(out.status.code(), Some(0) | Some(1)),
            "{major}: {text}"
        );
        let after = counters_after(&db, before).await;
        let inserted = after.1 - before.1;
        assert!(inserted > 0, "{major}: {text}");
        assert_eq!(after.2 - before.2, inserted, "{major}: {text}");
        assert!(
            text.contains(&format!(
                "the representative writes on public.t count {inserted} inserted and {inserted} \
                 deleted rows"
            )),
            "{major}: {inserted} counted: {text}"
        );
        db.run(&format!(
            "ALTER TABLE t OWNER TO postgres; DROP OWNED BY {role}; DROP ROLE {role}"
        ))
        .await;
    })
    .await;
}
