//! `pgplan audit` at fleet scale, on real servers 13 to 18: a table locked in ACCESS EXCLUSIVE
//! mode by a prepared transaction is skipped with its holder while everything else is audited;
//! one finding per index; `--min-severity`; the counting window of a database younger than the
//! server; and the figures and advice a careful DBA checks (foreign-key caveat, decisions taken
//! once per group of duplicates, the write evidence, table sizes pg_class is behind on, the
//! redundant index's figures).

mod common;

use std::process::Output;
use std::time::Duration;

use common::{TestDb, for_each_version, json_stdout as json, pgplan_command};
use serde_json::Value;

fn audit(args: &[&str]) -> Output {
    pgplan_command(&["audit"]).args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The one finding about `index`, whatever its kind.
fn about<'a>(doc: &'a Value, index: &str) -> Vec<&'a Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["index"] == index)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_table_locked_by_a_prepared_transaction_is_skipped_and_the_rest_audited() {
    for_each_version("audit_locked", |major| async move {
        // A prepared transaction holds the xmin horizon: a server of its own.
        let db = TestDb::private(major, "audit_locked").await;
        db.run(
            "CREATE TABLE locked (id int PRIMARY KEY, b text, d int);
             CREATE INDEX locked_lower_b ON locked (lower(b));
             CREATE INDEX locked_lower_b_again ON locked (lower(b));
             CREATE INDEX locked_d_pos ON locked (d) WHERE d > 0;
             CREATE TABLE free (id int PRIMARY KEY, b text, d int);
             CREATE INDEX free_lower_b ON free (lower(b));
             CREATE INDEX free_lower_b_again ON public.free   (lower( b ));
             CREATE INDEX free_d_pos ON free (d) WHERE d > 0;
             CREATE INDEX free_d_pos_again ON public.free (d) WHERE ((d > 0));
             INSERT INTO locked SELECT i, 'b' || i, i FROM generate_series(1, 2000) i;
             INSERT INTO free SELECT i, 'b' || i, i FROM generate_series(1, 2000) i;
             ANALYZE;
             BEGIN;
             LOCK TABLE locked IN ACCESS EXCLUSIVE MODE;
             PREPARE TRANSACTION 'pgplan_test_lock';",
        )
        .await;
        let since = db
            .value(
                "SELECT to_char(prepared AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') \
                 FROM pg_prepared_xacts WHERE gid = 'pgplan_test_lock'",
            )
            .await
            .expect("the prepared transaction exists");

        // The audit's own lock_timeout would otherwise be the wait: it never waits at all.
        let started = std::time::Instant::now();
        let out = audit(&[
            "-d",
            &db.conninfo(),
            "--format",
            "json",
            "--lock-timeout",
            "30s",
        ]);
        let waited = started.elapsed();
        let doc = json(&out);
        assert_eq!(out.status.code(), Some(1), "{doc:#}");
        assert!(waited < Duration::from_secs(20), "waited {waited:?}");
        let skipped: Vec<&Value> = doc["skipped"].as_array().unwrap().iter().collect();
        let expected = format!(
            "public.locked: the text of 2 indexes (locked_lower_b, locked_lower_b_again) could \
             not be read without waiting: the table is locked in ACCESS EXCLUSIVE mode by \
             prepared transaction 'pgplan_test_lock' since {since}; they were compared by their \
             stored definitions and every other check read them, but findings show their \
             expressions as <not read>"
        );
        assert!(
            skipped
                .iter()
                .any(|s| s["check"] == "duplicate_index" && s["reason"] == expected.as_str()),
            "expected skipped reason:\n{expected}\nin {doc:#}"
        );
        // The locked table's duplicate is still found, by its stored definition.
        let locked = about(&doc, "locked_lower_b_again");
        assert_eq!(locked.len(), 1, "{doc:#}");
        assert_eq!(locked[0]["check"], "duplicate_index");
        let message = locked[0]["message"].as_str().unwrap();
        assert!(message.contains("(<not read>)"), "{message}");
        // Everything else is audited and quoted.
        let free = about(&doc, "free_lower_b_again");
        assert_eq!(free.len(), 1, "{doc:#}");
        assert!(
            free[0]["message"].as_str().unwrap().contains("(lower(b))"),
            "{doc:#}"
        );
        let partial = about(&doc, "free_d_pos_again");
        assert_eq!(partial.len(), 1, "{doc:#}");
        assert_eq!(partial[0]["check"], "duplicate_index");
        // A partial index alone on its predicate is not a duplicate of anything.
        assert!(
            about(&doc, "locked_d_pos")
                .iter()
                .all(|f| f["check"] != "duplicate_index"),
            "{doc:#}"
        );
        assert_eq!(doc["summary"]["nodes_failed"], 0);

        // pgplan left no lock and no session behind; the prepared transaction still holds its.
        let leftover = db
            .value(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                 WHERE a.application_name = 'pgplan' AND a.datname = current_database()",
            )
            .await;
        assert_eq!(leftover.as_deref(), Some("0"));
        db.run("ROLLBACK PREPARED 'pgplan_test_lock'").await;

        // With the lock gone, the same indexes are quoted and nothing is skipped for them.
        let doc = json(&audit(&["-d", &db.conninfo(), "--format", "json"]));
        assert!(
            doc["skipped"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| !s["reason"].as_str().unwrap().contains("without waiting")),
            "{doc:#}"
        );
        let locked = about(&doc, "locked_lower_b_again");
        assert!(
            locked[0]["message"]
                .as_str()
                .unwrap()
                .contains("(lower(b))"),
            "{doc:#}"
        );
    })
    .await;
}

const SETUP: &str = "
CREATE TABLE parents (id int PRIMARY KEY);
CREATE TABLE orders (id int PRIMARY KEY, parent_id int REFERENCES parents, a int, b int,
                     status text, note text);
INSERT INTO parents SELECT generate_series(1, 100);
INSERT INTO orders SELECT i, 1 + i % 100, i % 10, i % 7, 's' || i % 2500, 'n'
FROM generate_series(1, 5000) i;
CREATE INDEX orders_note ON orders (note);
CREATE INDEX orders_note_again ON orders (note);
CREATE INDEX orders_parent ON orders (parent_id);
CREATE INDEX orders_parent_a ON orders (parent_id, a);
CREATE INDEX orders_a ON orders (a);
CREATE INDEX orders_a_again ON orders (a);
CREATE INDEX orders_a_b ON orders (a, b);
CREATE INDEX orders_status ON orders (status);
CREATE INDEX orders_status_b ON orders (status, b, note);
ANALYZE;
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_finding_per_index_and_the_severity_filter() {
    for_each_version("audit_one_per_index", |major| async move {
        let db = TestDb::create(major, "audit_one_per_index").await;
        db.run(SETUP).await;
        // orders_parent_a serves the foreign key's lookups; orders_status and orders_a_b are
        // scanned.
        db.run(
            "SET enable_seqscan = off; SET enable_bitmapscan = off;
             SELECT parent_id, a FROM orders WHERE parent_id = 3 AND a = 1;
             SELECT count(*) FROM orders WHERE status = 'x';
             SELECT a, b FROM orders WHERE a = 1 AND b = 2;",
        )
        .await;
        db.wait_for(
            "SELECT string_agg(indexrelname || '=' || idx_scan, ' ' ORDER BY indexrelname) \
             FILTER (WHERE idx_scan > 0) || ' ' || (SELECT n_tup_ins FROM pg_stat_user_tables \
             WHERE relname = 'orders') FROM pg_stat_user_indexes WHERE relname = 'orders'",
            |v| v == "orders_a_b=1 orders_parent_a=1 orders_status=1 5000",
            Duration::from_secs(20),
        )
        .await
        .unwrap_or_else(|v| panic!("PostgreSQL {major}: scans not counted: {v}"));
        let d = db.conninfo();
        let out = audit(&["-d", &d, "--format", "json", "--min-stats-age", "0"]);
        let doc = json(&out);

        // (Written differently, stored the same: compared by their trees, not their text.)
        // An exact duplicate nobody scans is one finding: the duplicate, with unused as its
        // evidence, never a second finding with the same DROP.
        let dup = about(&doc, "orders_note_again");
        assert_eq!(dup.len(), 1, "{doc:#}");
        assert_eq!(dup[0]["check"], "duplicate_index");
        let also: Vec<&str> = dup[0]["also"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["check"].as_str().unwrap())
            .collect();
        assert_eq!(also, ["unused_index"], "{doc:#}");
        assert_eq!(dup[0]["evidence"]["index_scans"].as_f64(), Some(0.0));
        // Every index appears in one finding at most; the summary counts those.
        let mut indexes: Vec<&str> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["index"].as_str())
            .collect();
        let all = indexes.len();
        indexes.sort_unstable();
        indexes.dedup();
        assert_eq!(indexes.len(), all, "{doc:#}");
        let total = doc["summary"]["critical"].as_u64().unwrap()
            + doc["summary"]["warning"].as_u64().unwrap()
            + doc["summary"]["info"].as_u64().unwrap();
        assert_eq!(total as usize, doc["findings"].as_array().unwrap().len());

        // Decided once per group: orders_a_again duplicates orders_a, which is itself a prefix
        // of orders_a_b: both go, both name orders_a_b as what stays, and nothing says to keep
        // an index another finding drops.
        let a_again = about(&doc, "orders_a_again");
        let a = about(&doc, "orders_a");
        assert!(
            a_again[0]["message"]
                .as_str()
                .unwrap()
                .contains("orders_a is itself covered by orders_a_b (a, b), which stays"),
            "{doc:#}"
        );
        // orders_a is unused and redundant: one finding, the stronger reason first.
        assert_eq!(a.len(), 1, "{doc:#}");
        let mut reasons: Vec<&str> = vec![a[0]["check"].as_str().unwrap()];
        reasons.extend(
            a[0]["also"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["check"].as_str().unwrap()),
        );
        reasons.sort_unstable();
        assert_eq!(reasons, ["redundant_index", "unused_index"], "{doc:#}");
        let dropped: Vec<String> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| {
                f["fix"]
                    .as_str()
                    .is_some_and(|x| x.starts_with("DROP INDEX"))
            })
            .map(|f| f["index"].as_str().unwrap().to_owned())
            .collect();
        for f in doc["findings"].as_array().unwrap() {
            let message = f["message"].as_str().unwrap();
            for gone in &dropped {
                assert!(
                    !message.contains(&format!("keep {gone} ")),
                    "{message} keeps {gone}, which another fix drops"
                );
            }
        }

        // The foreign-key caveat only where no other index that stays serves the key.
        let parent = about(&doc, "orders_parent");
        let parent_text = serde_json::to_string(parent[0]).unwrap();
        assert!(
            !parent_text.contains("may support foreign key"),
            "orders_parent_a serves the key too: {parent_text}"
        );
        // The write evidence says what it counts.
        let note = dup[0]["evidence"]["table_inserts_and_non_hot_updates_in_window"].as_f64();
        assert_eq!(note, Some(5000.0), "{doc:#}");
        // A redundant index that is scanned gives the figures of the one its scans move to.
        let status = about(&doc, "orders_status");
        let message = status[0]["message"].as_str().unwrap();
        assert!(
            message.contains("would move to orders_status_b, a wider index (")
                && message.contains(" against this one's "),
            "{message}"
        );

        // --min-severity: text lists only what is at least that severe; the summary by kind and
        // the counts cover everything, and the exit code is the same.
        let all_text = audit(&["-d", &d, "--min-stats-age", "0"]);
        let warn_text = audit(&[
            "-d",
            &d,
            "--min-stats-age",
            "0",
            "--min-severity",
            "warning",
        ]);
        assert_eq!(all_text.status.code(), warn_text.status.code());
        let (all_text, warn_text) = (text(&all_text), text(&warn_text));
        assert!(all_text.contains("\nInfo ("), "{all_text}");
        assert!(!warn_text.contains("\nInfo ("), "{warn_text}");
        let info = doc["summary"]["info"].as_u64().unwrap();
        assert!(info > 0, "{doc:#}");
        assert!(
            warn_text.contains(&format!(
                "{info} info finding(s) not listed (--min-severity warning)"
            )),
            "{warn_text}"
        );
        for t in [&all_text, &warn_text] {
            assert!(t.contains("By kind (objects, largest first)"), "{t}");
            assert!(t.contains("also: [unused_index, "), "{t}");
        }
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_counting_window_of_a_database_younger_than_the_server() {
    for_each_version("audit_window", |major| async move {
        // The server's statistics have counted for a while (on a server the test binary just
        // started, wait until they have); this database is new.
        let first = TestDb::create(major, "audit_window_first").await;
        first
            .wait_for(
                "SELECT now() - stats_reset > interval '2 seconds' FROM pg_stat_bgwriter",
                |v| v == "t",
                Duration::from_secs(10),
            )
            .await
            .unwrap_or_else(|v| panic!("PostgreSQL {major}: server statistics too young: {v}"));
        first.drop_db().await;
        let db = TestDb::create(major, "audit_window").await;
        let role = format!("mon_{}", db.name);
        db.run(&format!(
            "CREATE ROLE {role} LOGIN; GRANT pg_monitor TO {role};
             CREATE TABLE t (id int PRIMARY KEY, v text);
             INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 2000) i;
             CREATE INDEX t_v ON t (v);
             ANALYZE t;"
        ))
        .await;
        let d = db.conninfo();
        let superuser = json(&audit(&[
            "-d",
            &d,
            "--format",
            "json",
            "--min-stats-age",
            "0",
        ]));
        let node = &superuser["nodes"][0];
        let unused = &about(&superuser, "t_v")[0];
        if major >= 15 {
            // A superuser reads when the database was created: that starts its window.
            assert_eq!(node["stats_since_source"], "database_created", "{node:#}");
            assert_eq!(node["counting_window_upper_bound"], false);
        } else {
            // Before 15 the database's stats_reset is set when its counters start (once the
            // statistics collector has heard of the database; until then the creation time is
            // the latest): on a database nobody reset, neither is called a reset.
            assert!(
                node["stats_since_source"] == "database_counters_started"
                    || node["stats_since_source"] == "database_created",
                "{node:#}"
            );
            assert_eq!(node["counting_window_upper_bound"], false);
        }
        assert_eq!(unused["severity"], "warning", "{unused:#}");
        let text_out = text(&audit(&["-d", &d, "--min-stats-age", "0"]));
        assert!(!text_out.contains("statistics reset"), "{text_out}");

        // As pg_monitor, nothing dates the database on 15+: the window is the server's, an
        // upper bound, and unused indexes stay informational.
        let monitor = format!("{d} user={role}");
        let doc = json(&audit(&[
            "-d",
            &monitor,
            "--format",
            "json",
            "--min-stats-age",
            "0",
        ]));
        let node = &doc["nodes"][0];
        let unused = &about(&doc, "t_v")[0];
        if major >= 15 {
            assert_eq!(node["counting_window_upper_bound"], true, "{node:#}");
            assert_eq!(unused["severity"], "info", "{unused:#}");
            let message = unused["message"].as_str().unwrap();
            assert!(
                message.contains("; the window of ")
                    && message.contains(" is an upper bound: no statistics reset is recorded"),
                "{unused:#}"
            );
            let text_out = text(&audit(&["-d", &monitor, "--min-stats-age", "0"]));
            assert!(
                text_out.contains("; an upper bound: the database may be younger)"),
                "{text_out}"
            );
        } else {
            assert_eq!(node["counting_window_upper_bound"], false, "{node:#}");
            assert_eq!(unused["severity"], "warning", "{unused:#}");
        }
        db.drop_db().await;
        common::server(major)
            .execute("postgres", &format!("DROP ROLE IF EXISTS {role}"))
            .await
            .unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prometheus_sizes_pg_class_is_behind_on_are_not_exported_as_sizes() {
    for_each_version("audit_stale_size", |major| async move {
        let db = TestDb::create(major, "audit_stale_size").await;
        db.run(
            "CREATE TABLE loaded (id int, v text) WITH (autovacuum_enabled = false);
             CREATE TABLE measured (id int, v text);
             INSERT INTO measured SELECT i, 'v' || i FROM generate_series(1, 3000) i;
             VACUUM ANALYZE measured;
             INSERT INTO loaded SELECT i, 'v' || i FROM generate_series(1, 30000) i;",
        )
        .await;
        db.wait_for(
            "SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 'loaded'",
            |v| v == "30000",
            Duration::from_secs(20),
        )
        .await
        .unwrap_or_else(|v| panic!("PostgreSQL {major}: not counted: {v}"));
        let out = audit(&["-d", &db.conninfo(), "--format", "prometheus"]);
        let prom = text(&out);
        let series = |name: &str, table: &str| {
            prom.lines()
                .find(|l| l.starts_with(name) && l.contains(&format!("table=\"{table}\"")))
                .map(str::to_owned)
        };
        assert_eq!(
            series("pgplan_audit_table_size_bytes{", "loaded"),
            None,
            "{prom}"
        );
        assert!(
            series("pgplan_audit_table_size_stale{", "loaded").is_some_and(|l| l.ends_with(" 1")),
            "{prom}"
        );
        assert!(
            series("pgplan_audit_table_size_bytes{", "measured").is_some(),
            "{prom}"
        );
        assert!(
            series("pgplan_audit_table_size_stale{", "measured").is_some_and(|l| l.ends_with(" 0")),
            "{prom}"
        );
        db.drop_db().await;
    })
    .await;
}
