//! `pgplan explain -d` on real servers 13–18: the query runs under compare's safety (rolled
//! back, read-only unless it writes, timeouts, nothing left behind), and the findings carry
//! what only the server knows, in exact words.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{TestDb, for_each_version, json_report as json, pgplan_bin, stderr};
use serde_json::Value;

fn explain(db: &TestDb, args: &[&str]) -> Output {
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg("explain")
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

/// The first finding of `kind` in a JSON document.
fn finding<'a>(doc: &'a Value, kind: &str) -> &'a Value {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} finding in {:#}", doc["findings"]))
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// No pgplan session is left, none holds a lock or a transaction, and the rows are as before.
async fn assert_nothing_left(db: &TestDb, table: &str, rows_before: &str) {
    db.wait_until_pgplan_sessions_are_gone().await;
    assert_eq!(rows(db, table).await, rows_before, "{table}'s rows changed");
    assert_eq!(
        db.value(
            "SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class \
             WHERE relnamespace = 'public'::regnamespace AND relname LIKE 'pgplan%'"
        )
        .await,
        None,
        "pgplan left a relation behind"
    );
}

async fn rows(db: &TestDb, table: &str) -> String {
    db.value(&format!(
        "SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM {table} t"
    ))
    .await
    .unwrap()
}

/// A table analyzed at 1,000 rows, then loaded with 50,000 rows of a tenant the statistics have
/// never seen: the planner estimates about 50 rows for it, the scan returns 50,000. Each step
/// waits until the statistics system has counted the one before (13 and 14 count through the
/// collector; 15+ flush a backend's counts up to a second late), so ANALYZE resets the count
/// of modifications after the first rows are in it, not before.
async fn stale_events(db: &TestDb) {
    let counted = async |sql: &str, expected: &str| {
        db.wait_for(sql, |n| n == expected, Duration::from_secs(30))
            .await
            .unwrap_or_else(|n| panic!("{sql}: {n}, expected {expected}"));
    };
    let modified = "SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = 'events'";
    db.run(
        "CREATE TABLE events (id bigint PRIMARY KEY, tenant_id integer NOT NULL, status text NOT NULL)
             WITH (autovacuum_enabled = off);
         INSERT INTO events SELECT i, i, 'done' FROM generate_series(1, 1000) AS i;",
    )
    .await;
    counted(modified, "1000").await;
    db.run("ANALYZE events").await;
    counted(modified, "0").await;
    db.run("INSERT INTO events SELECT i, 3, 'pending' FROM generate_series(1001, 51000) AS i")
        .await;
    counted(modified, "50000").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_misestimate_says_whether_the_statistics_are_stale_and_which_extended_ones_exist() {
    for_each_version("explain_stale", |major| async move {
        let db = TestDb::create(major, "explain_stale").await;
        stale_events(&db).await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(
            dir.path(),
            "q.sql",
            "SELECT count(*) FROM events WHERE tenant_id = 3 AND status = 'pending'",
        );
        let doc = json(&explain(&db, &[&query, "--format", "json"]));
        let f = finding(&doc, "misestimate");
        let message = text(&f["message"]);
        assert!(
            message.contains(
                "; the statistics of public.events are stale: 50,000 rows modified since its last \
                 analyze "
            ) && message.contains(
                " (manual), past its autoanalyze threshold of 150; public.events has no \
                 extended statistics"
            ),
            "PostgreSQL {major}: {message}"
        );
        assert!(
            text(&f["hint"]).starts_with("Run ANALYZE public.events first: its statistics are stale. "),
            "{}",
            f["hint"]
        );
        assert_eq!(f["evidence"]["n_mod_since_analyze"], 50000.0);
        assert_eq!(f["evidence"]["autoanalyze_threshold_rows"], 150.0);
        assert_eq!(f["evidence"]["extended_statistics"], 0.0);
        assert_eq!(doc["server_version"].as_str().unwrap().split('.').next(), Some(major.to_string().as_str()));

        // Extended statistics are named with their kinds and columns.
        db.run("CREATE STATISTICS events_stx (ndistinct, dependencies) ON tenant_id, status FROM events")
            .await;
        let doc = json(&explain(&db, &[&query, "--format", "json"]));
        let message = text(&finding(&doc, "misestimate")["message"]).to_owned();
        assert!(
            message.ends_with(
                "; extended statistics on public.events: public.events_stx (ndistinct, \
                 dependencies) on (tenant_id, status)"
            ),
            "PostgreSQL {major}: {message}"
        );
        db.drop_db().await;
    })
    .await;
}

/// A table vacuumed (every page all-visible), then half its rows updated: an Index Only Scan
/// over them goes to the heap for each.
const HEAP_FETCHES: &str = "
CREATE TABLE hf (id integer PRIMARY KEY, v integer NOT NULL) WITH (autovacuum_enabled = off);
INSERT INTO hf SELECT i, i FROM generate_series(1, 20000) AS i;
VACUUM (ANALYZE) hf;
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn heap_fetches_say_what_pg_class_counts_all_visible_and_when_it_was_vacuumed() {
    for_each_version("explain_heap_fetches", |major| async move {
        let db = TestDb::create(major, "explain_heap_fetches").await;
        db.run(HEAP_FETCHES).await;
        // VACUUM leaves a page's visibility map bit unset when it cannot get the page's cleanup
        // lock at once (the checkpointer may hold a pin to write it); vacuum again until pg_class
        // counts every page, the state this test is about.
        for _ in 0..20 {
            let all = "SELECT relallvisible = relpages FROM pg_class WHERE relname = 'hf'";
            if db.value(all).await.as_deref() == Some("t") {
                break;
            }
            db.run("VACUUM hf").await;
        }
        db.run("UPDATE hf SET v = v + 1 WHERE id <= 10000").await;
        db.run(&format!(
            "ALTER DATABASE \"{}\" SET enable_seqscan = off; \
             ALTER DATABASE \"{}\" SET enable_bitmapscan = off",
            db.name, db.name
        ))
        .await;
        // 13 and 14 report the VACUUM through the statistics collector, a moment later.
        db.wait_for(
            "SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'hf'",
            |v| v == "t",
            Duration::from_secs(30),
        )
        .await
        .expect("the VACUUM is on record");
        let pages = db
            .value("SELECT relpages FROM pg_class WHERE relname = 'hf'")
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(dir.path(), "q.sql", "SELECT id FROM hf WHERE id <= $1");
        let doc = json(&explain(
            &db,
            &[&query, "--param", "10000", "--format", "json"],
        ));
        let f = finding(&doc, "heap_fetches");
        let message = text(&f["message"]);
        assert!(
            message.contains(&format!(
                "; pg_class counts 100% of the {pages} pages of public.hf all-visible (as of its last \
                 VACUUM or ANALYZE), last vacuumed "
            )) && message.ends_with(" ago (manual)"),
            "PostgreSQL {major}: {message}"
        );
        assert_eq!(f["evidence"]["all_visible_share"], 1.0);
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn spills_name_the_session_s_memory_and_the_version_s_hash_mem_multiplier() {
    for_each_version("explain_spill", |major| async move {
        let db = TestDb::create(major, "explain_spill").await;
        db.run(
            "CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL);
             INSERT INTO customers SELECT i, md5(i::text) FROM generate_series(1, 20000) AS i;
             CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL);
             INSERT INTO orders SELECT i, 1 + i % 20000 FROM generate_series(1, 40000) AS i;
             VACUUM (ANALYZE) customers, orders;",
        )
        .await;
        db.run(&format!(
            "ALTER DATABASE \"{0}\" SET work_mem = '64kB'; \
             ALTER DATABASE \"{0}\" SET enable_mergejoin = off; \
             ALTER DATABASE \"{0}\" SET enable_nestloop = off; \
             ALTER DATABASE \"{0}\" SET max_parallel_workers_per_gather = 0",
            db.name
        ))
        .await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(
            dir.path(),
            "q.sql",
            "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id",
        );
        let doc = json(&explain(&db, &[&query, "--format", "json"]));
        let f = finding(&doc, "hash_batches");
        let multiplier = if major >= 15 { "2" } else { "1" };
        assert!(
            text(&f["message"]).ends_with(&format!(
                "; this session runs with work_mem 64kB and hash_mem_multiplier {multiplier}"
            )),
            "PostgreSQL {major}: {}",
            f["message"]
        );
        // The advice divides by the version's default multiplier, and says so.
        let hint = text(&f["hint"]);
        assert!(
            hint.contains(&format!(
                "; with hash_mem_multiplier at PostgreSQL {major}'s default of {multiplier} (the \
                 plan's Settings do not change it), raise work_mem for this query to roughly "
            )) && hint.ends_with("(the plan's Settings have work_mem 64kB)"),
            "PostgreSQL {major}: {hint}"
        );
        let needed = f["evidence"]["work_mem_needed_kb"].as_f64().unwrap();
        let peak = f["evidence"]["peak_memory_usage_kb"].as_f64().unwrap();
        let batches = f["evidence"]["hash_batches"].as_f64().unwrap();
        let m: f64 = multiplier.parse().unwrap();
        assert_eq!(needed, (peak * batches / m).ceil(), "PostgreSQL {major}");
        assert_eq!(f["evidence"]["session_work_mem_kb"], 64.0);
        db.drop_db().await;
    })
    .await;
}

const WRITES: &str = "
CREATE TABLE events (id bigint PRIMARY KEY, tenant_id integer NOT NULL, status text NOT NULL);
INSERT INTO events SELECT i, i % 100, 'pending' FROM generate_series(1, 20000) AS i;
CREATE INDEX events_tenant_id_idx ON events (tenant_id);
VACUUM (ANALYZE) events;
CREATE TABLE audit_log (id serial PRIMARY KEY, note text);
CREATE FUNCTION write_log() RETURNS integer LANGUAGE sql
AS $$ INSERT INTO audit_log (note) VALUES ('written') RETURNING id $$;
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runs_are_rolled_back_read_only_unless_writing_and_leave_nothing_behind() {
    for_each_version("explain_safety", |major| async move {
        let db = TestDb::create(major, "explain_safety").await;
        db.run(WRITES).await;
        let before = rows(&db, "events").await;
        let dir = tempfile::tempdir().unwrap();

        // A write needs --allow-writes, refused before connecting.
        let update = write_query(
            dir.path(),
            "update.sql",
            "UPDATE events SET status = 'done' WHERE tenant_id < $1",
        );
        let out = explain(&db, &[&update, "--param", "40"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("the query is an UPDATE, which writes; pgplan runs it only with --allow-writes"),
            "{}",
            stderr(&out)
        );

        // With it: run, rolled back, and what the rollback leaves is told with its count.
        let saved = dir.path().join("update.json");
        let out = explain(
            &db,
            &[
                &update,
                "--param",
                "40",
                "--allow-writes",
                "--save-plan",
                saved.to_str().unwrap(),
            ],
        );
        let report = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            report.contains(
                "the run left about 8,000 dead row versions in public.events (the rolled-back write's) until \
                 VACUUM removes them"
            ),
            "PostgreSQL {major}:\n{report}"
        );
        assert!(
            report.contains("(PostgreSQL ") && report.contains(", run and rolled back)"),
            "{report}"
        );
        assert_nothing_left(&db, "events", &before).await;
        // The saved plan is the server's JSON, readable offline.
        let offline = Command::new(pgplan_bin())
            .args(["explain", "--format", "json", saved.to_str().unwrap()])
            .output()
            .unwrap();
        let offline = json(&offline);
        assert_eq!(offline["nodes"][0]["node_type"], "ModifyTable");

        // A read scans an index: the counters it bumped are named.
        let read = write_query(
            dir.path(),
            "read.sql",
            "SELECT count(*) FROM events WHERE tenant_id = 7",
        );
        db.run("ANALYZE events").await;
        let doc = json(&explain(&db, &[&read, "--format", "json"]));
        let scans = doc["index_scans_counted"].as_array().unwrap();
        assert_eq!(scans.len(), 1, "PostgreSQL {major}: {scans:?}");
        assert_eq!(scans[0]["index"], "events_tenant_id_idx");
        assert_eq!(scans[0]["scans"], 1.0);
        assert!(
            doc["notes"][0]
                .as_str()
                .unwrap()
                .starts_with("the run increased the usage counters (idx_scan in pg_stat_user_indexes, which a rollback does not undo) of events_tenant_id_idx (+1 scan)"),
            "{}",
            doc["notes"]
        );

        // A read runs READ ONLY: a function that writes fails instead of writing.
        let sneaky = write_query(dir.path(), "sneaky.sql", "SELECT write_log()");
        let out = explain(&db, &[&sneaky]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("cannot execute INSERT in a read-only transaction"),
            "{}",
            stderr(&out)
        );
        assert_eq!(
            db.value("SELECT count(*) FROM audit_log").await.as_deref(),
            Some("0")
        );

        // A function whose effect outlives the rollback is refused before anything runs.
        let lock = write_query(dir.path(), "lock.sql", "SELECT pg_advisory_lock(42)");
        let out = explain(&db, &[&lock]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("pg_advisory_lock") && stderr(&out).contains("--allow-lasting-effects"),
            "{}",
            stderr(&out)
        );
        // A query that does not plan reports its own error, not the check's.
        let typo = write_query(dir.path(), "typo.sql", "SELECT * FROM no_such_table");
        let out = explain(&db, &[&typo]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("relation \"no_such_table\" does not exist"),
            "{}",
            stderr(&out)
        );

        // A statement timeout ends the run; nothing stays.
        let slow = write_query(dir.path(), "slow.sql", "SELECT pg_sleep(5), count(*) FROM events");
        let out = explain(&db, &[&slow, "--statement-timeout", "200ms"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("statement timeout"), "{}", stderr(&out));

        // The generic plan: planned with no values, not run, so no counter moves.
        let doc = json(&explain(&db, &[&update, "--generic-plan", "--format", "json"]));
        assert_eq!(doc["analyzed"], false);
        assert_eq!(doc["index_scans_counted"].as_array().unwrap().len(), 0);
        assert!(
            doc["notes"][0].as_str().unwrap().starts_with("generic plan: "),
            "{}",
            doc["notes"]
        );
        assert_nothing_left(&db, "events", &before).await;
        db.drop_db().await;
    })
    .await;
}
