//! What `pgplan compare` says about its own side effects and the server, on real servers 13–18:
//! the index usage counters and dead row versions its runs left (checked against the server's
//! own counters), the estimated cost of a re-planned generic baseline, and the HypoPG fix when
//! its package is not on the server.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{TestDb, for_each_version, pgplan_bin, stderr};
use serde_json::Value;

fn compare(db: &TestDb, args: &[&str]) -> Output {
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg("compare")
        .arg("-d")
        .arg(db.conninfo())
        .args(args)
        .output()
        .expect("running pgplan")
}

fn write_query(dir: &Path, name: &str, sql: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, sql).unwrap();
    path.display().to_string()
}

const SETUP: &str = "
CREATE TABLE events (id bigint PRIMARY KEY, tenant_id integer NOT NULL, status text NOT NULL)
    WITH (autovacuum_enabled = off);
INSERT INTO events SELECT i, i % 100, 'pending' FROM generate_series(1, 20000) AS i;
CREATE INDEX events_tenant_id_idx ON events (tenant_id);
VACUUM (ANALYZE) events;
";

/// `idx_scan` of the index, once the statistics system has counted everything up to now
/// (13 and 14 count through the collector; 15+ flush a backend's counts on exit).
async fn idx_scan(db: &TestDb, index: &str) -> u64 {
    let sql = format!("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = '{index}'");
    let mut last = String::new();
    // Stable for half a second: nothing more is on its way.
    for _ in 0..40 {
        let now = db.value(&sql).await.unwrap_or_default();
        if now == last {
            return now.parse().unwrap();
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("{index}'s idx_scan never settled: {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_notes_count_the_index_scans_and_dead_rows_the_runs_left() {
    for_each_version("compare_notes", |major| async move {
        let db = TestDb::create(major, "compare_notes").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        let update = write_query(
            dir.path(),
            "update.sql",
            "UPDATE events SET status = 'done' WHERE tenant_id = $1",
        );
        let before = idx_scan(&db, "events_tenant_id_idx").await;
        let plans = dir.path().join("plans");
        let out = compare(
            &db,
            &[
                &update,
                "--param",
                "7",
                "--allow-writes",
                "--runs",
                "1",
                "--index",
                "CREATE INDEX events_status_idx ON events (status)",
                "--format",
                "json",
                "--save-plans",
                plans.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        // Every run, one saved plan: the baseline's, the candidate's, and the baseline's again
        // when the build changed the estimates (the rolled-back updates grow the table).
        let runs = std::fs::read_dir(&plans).unwrap().count();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let warnings: Vec<&str> = doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        // Each run updates the 200 rows of tenant 7 and rolls back.
        let dead = format!(
            "compare's runs left about {} dead row versions in public.events (the rolled-back \
             write's) until VACUUM removes them (autovacuum counts them toward its next run)",
            pgplan::format::count(200.0 * runs as f64)
        );
        assert!(
            warnings.contains(&dead.as_str()),
            "PostgreSQL {major}: {runs} runs: {warnings:#?}"
        );
        // The counters the report names are the server's own: it counted as many scans.
        let after = idx_scan(&db, "events_tenant_id_idx").await;
        let counted = warnings
            .iter()
            .find(|w| w.starts_with("compare's runs increased the usage counters"))
            .unwrap_or_else(|| panic!("PostgreSQL {major}: {warnings:#?}"));
        assert_eq!(after - before, runs as u64, "one scan a run");
        assert!(
            counted.contains(&format!(
                "of events_tenant_id_idx (+{} scans)",
                after - before
            )),
            "PostgreSQL {major}: {counted} (the server counted {} scans)",
            after - before
        );
        assert!(!counted.contains("events_status_idx"), "{counted}");
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_generic_plan_s_baseline_planned_again_shows_its_estimated_cost() {
    for_each_version("compare_generic_rerun", |major| async move {
        let db = TestDb::create(major, "compare_generic_rerun").await;
        // Never vacuumed or analyzed: ANALYZE in the candidate's transaction counts the rows
        // into pg_class.
        db.run(
            "CREATE TABLE events (id integer, tenant_id integer, status text) \
                 WITH (autovacuum_enabled = off); \
             INSERT INTO events SELECT i, i % 100, 'pending' FROM generate_series(1, 20000) i;",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(
            dir.path(),
            "q.sql",
            "SELECT count(*) FROM events WHERE status = $1",
        );
        let reltuples_before = db
            .value("SELECT reltuples FROM pg_class WHERE relname = 'events'")
            .await;
        let out = compare(
            &db,
            &[
                &query,
                "--generic-plan",
                // ANALYZE updates pg_class in place on every version (from 18 on, CREATE INDEX
                // alone no longer leaves its row count behind a rollback).
                "--analyze",
                "--index",
                "CREATE INDEX ON events (status)",
                "--index",
                "CREATE INDEX ON events (status, tenant_id)",
            ],
        );
        let report = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}", stderr(&out));
        // Detected, not assumed: the candidate's ANALYZE counted the rows into reltuples; on
        // 18 pgplan puts the figure back at the end, before 18 it stays and is named.
        let reltuples_after = db
            .value("SELECT reltuples FROM pg_class WHERE relname = 'events'")
            .await;
        if major >= 18 {
            assert_eq!(reltuples_after, reltuples_before, "{report}");
            assert!(
                report.contains("put back with pg_restore_relation_stats"),
                "{report}"
            );
        } else {
            assert_ne!(reltuples_after, reltuples_before, "{report}");
        }
        assert!(
            report.contains(
                "changed the planner's estimates, so the baseline was planned again before the \
                 next candidate (estimated cost "
            ),
            "PostgreSQL {major}:\n{report}"
        );
        assert!(!report.contains("pages touched  →"), "{report}");
        assert!(!report.contains("execution  →"), "{report}");
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hypothetical_mode_without_the_hypopg_package_says_to_install_it() {
    for_each_version("compare_no_hypopg", |major| async move {
        let db = TestDb::create(major, "compare_no_hypopg").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(
            dir.path(),
            "q.sql",
            "SELECT * FROM events WHERE status = 'x'",
        );
        let out = compare(
            &db,
            &[
                &query,
                "--hypothetical",
                "--index",
                "CREATE INDEX ON events (status)",
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(
                "HypoPG is not available on this server: its package is not installed \
                 (pg_available_extensions has no hypopg)"
            ) && err.contains(&format!(
                "hint: install HypoPG for PostgreSQL {major} on the server (Debian and Ubuntu: \
                 postgresql-{major}-hypopg), then CREATE EXTENSION hypopg in database {}",
                db.name
            )),
            "PostgreSQL {major}: {err}"
        );
        db.drop_db().await;
    })
    .await;
}

/// Without --cold the first run is called the first run; with it, on 17+ with pg_buffercache,
/// the query's relations are evicted first and the run reads them from outside shared buffers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_first_run_is_cold_only_when_evicted() {
    for_each_version("compare_cold", |major| async move {
        let db = TestDb::create(major, "compare_cold").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(
            dir.path(),
            "q.sql",
            "SELECT count(*) FROM events WHERE status = 'pending'",
        );
        let candidate = "CREATE INDEX ON events (tenant_id, status)";
        let out = compare(&db, &[&query, "--index", candidate, "--runs", "1"]);
        let report = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            report.contains("· 1 first run (on the cache as it was) + 1 warm run per index")
                && report.contains("  first run: execution ")
                && report.contains(" first: execution ")
                && !report.contains("cold"),
            "PostgreSQL {major}:\n{report}"
        );
        let cold = compare(&db, &[&query, "--index", candidate, "--runs", "1", "--cold"]);
        if major < 17 {
            assert_eq!(cold.status.code(), Some(2), "{}", stderr(&cold));
            assert!(
                stderr(&cold).contains("--cold evicts with pg_buffercache_evict, which PostgreSQL 17 added"),
                "{}",
                stderr(&cold)
            );
            db.drop_db().await;
            return;
        }
        // 17+: the extension is needed, and the error says how to get it.
        assert_eq!(cold.status.code(), Some(2), "{}", stderr(&cold));
        assert!(
            stderr(&cold).contains(&format!(
                "hint: CREATE EXTENSION pg_buffercache in database {}; or drop --cold",
                db.name
            )),
            "{}",
            stderr(&cold)
        );
        db.run("CREATE EXTENSION pg_buffercache").await;
        // Warm the table up, so a first run without eviction would read nothing from outside.
        db.run("SELECT count(*) FROM events").await;
        let out = compare(
            &db,
            &[&query, "--index", candidate, "--runs", "1", "--cold", "--format", "json"],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let baseline = &doc["baseline"];
        assert_eq!(baseline["first_run"], "cold", "{baseline:#}");
        let evicted = baseline["evicted_buffers"].as_f64().unwrap();
        let pages = baseline["cold"]["pages_touched"].as_f64().unwrap();
        let read = baseline["cold"]["shared_read_blocks"].as_f64().unwrap();
        assert!(evicted >= pages, "PostgreSQL {major}: evicted {evicted} of {pages} pages");
        // Every page the first run touched came from outside shared buffers.
        assert_eq!(read, pages, "PostgreSQL {major}: {baseline:#}");
        assert_eq!(baseline["warm"]["shared_read_blocks"], 0.0, "{baseline:#}");
        let text = compare(&db, &[&query, "--index", candidate, "--runs", "1", "--cold"]);
        let report = String::from_utf8_lossy(&text.stdout).into_owned();
        assert!(
            report.contains(
                "· 1 cold run (the query's tables and indexes evicted from shared buffers first) + 1 warm run"
            ) && report.contains("  cold run (")
                && report.contains(" buffers evicted first): execution ")
                && report.contains(" cold: execution "),
            "PostgreSQL {major}:\n{report}"
        );
        db.drop_db().await;
    })
    .await;
}
