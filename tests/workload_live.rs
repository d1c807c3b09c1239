//! `pgplan compare --workload` on real servers 13–18: an index that pays for a hot read pays
//! even though it makes a third query worse (named as a regression); an index that speeds up a
//! rare read on a write-hot table does not pay once its lost HOT updates are counted;
//! parameters are sampled from the statistics; pg_stat_statements is read, never reset, and its
//! entries are not disturbed; and nothing is left behind when a candidate or a query fails or
//! the run is interrupted.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{TestDb, for_each_version, json_report as json, pgplan_command, stderr};
use serde_json::Value;

/// `events`: created_at is a permutation of the row order (so an index scan in created_at order
/// jumps between heap pages), and the cancelled rows are exactly the 3,000 oldest. `accounts`:
/// a write-hot table whose balance updates are HOT (fillfactor leaves room on each page).
const SETUP: &str = "
CREATE TABLE events (
    id bigint PRIMARY KEY,
    status text NOT NULL,
    created_at timestamptz NOT NULL,
    payload text NOT NULL
);
INSERT INTO events
SELECT i,
       CASE WHEN (i::bigint * 7919) % 60000 < 3000 THEN 'cancelled'
            WHEN (i::bigint * 37) % 100 < 75 THEN 'pending'
            ELSE 'done' END,
       timestamptz '2026-01-01 00:00:00+00' + ((i::bigint * 7919) % 60000) * interval '1 minute',
       md5(i::text) || md5((i + 1)::text)
FROM generate_series(1, 60000) AS i;
VACUUM (ANALYZE) events;
CREATE TABLE accounts (
    id integer PRIMARY KEY,
    balance integer NOT NULL,
    note text NOT NULL
) WITH (fillfactor = 50, autovacuum_enabled = off);
INSERT INTO accounts SELECT i, i % 5000, md5(i::text) FROM generate_series(1, 20000) AS i;
VACUUM (ANALYZE) accounts;
UPDATE accounts SET balance = balance + 1 WHERE id <= 4000;
UPDATE accounts SET balance = balance + 1 WHERE id > 16000;
VACUUM accounts;
";

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// The workload directory: a hot dashboard read, a rare query the created_at index makes much
/// worse, a lookup by id and a rare balance lookup (both with parameters to sample), and the
/// frequent balance UPDATE (a write: read for its SET list, never run without --allow-writes).
fn workload_dir(dir: &Path) {
    write(
        dir,
        "dashboard.sql",
        "-- calls: 50000\nSELECT id, created_at FROM events WHERE status = 'pending' ORDER BY created_at DESC LIMIT 50\n",
    );
    write(
        dir,
        "oldest_cancelled.sql",
        "-- calls: 100\nSELECT id FROM events WHERE status = 'cancelled' ORDER BY created_at DESC LIMIT 10\n",
    );
    write(
        dir,
        "account.sql",
        "-- calls: 20000\nSELECT note FROM accounts WHERE id = $1\n",
    );
    write(
        dir,
        "balance_lookup.sql",
        "-- calls: 2\nSELECT id FROM accounts WHERE balance = $1\n",
    );
    write(
        dir,
        "pay.sql",
        "-- calls: 100000\n-- params: [1, 7]\nUPDATE accounts SET balance = balance + $1 WHERE id = $2\n",
    );
}

async fn workload_db(major: u32, test: &str) -> TestDb {
    let db = TestDb::create(major, test).await;
    db.run(SETUP).await;
    // The counters reach pg_stat_user_tables a moment after the sessions end.
    if let Err(v) = db
        .wait_for(
            "SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'accounts'",
            |v| v.parse::<f64>().is_ok_and(|n| n >= 4000.0),
            Duration::from_secs(30),
        )
        .await
    {
        panic!("PostgreSQL {major}: HOT updates never counted ({v})");
    }
    db
}

fn command(db: &TestDb, args: &[&str]) -> Command {
    let mut cmd = pgplan_command(&["compare", "-d", &db.conninfo()]);
    cmd.args(args);
    cmd
}

fn pgplan(db: &TestDb, args: &[&str]) -> Output {
    command(db, args).output().expect("running pgplan")
}

fn candidate<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["index_name"] == name)
        .unwrap_or_else(|| panic!("no candidate {name}: {doc:#}"))
}

fn query<'a>(c: &'a Value, id_end: &str) -> &'a Value {
    c["workload"]["queries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["id"].as_str().unwrap().ends_with(id_end))
        .unwrap_or_else(|| panic!("no query {id_end}: {c:#}"))
}

/// What must be the same before and after: relations, rows, no prepared transaction.
async fn state(db: &TestDb) -> (String, String, String) {
    (
        db.value("SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = 'public'::regnamespace")
            .await
            .unwrap(),
        db.value("SELECT md5(string_agg(a::text, ',' ORDER BY id)) FROM accounts a")
            .await
            .unwrap(),
        db.value("SELECT count(*) FROM pg_prepared_xacts").await.unwrap(),
    )
}

/// After pgplan exited: its sessions gone, holding nothing, the server as before.
async fn assert_nothing_left(db: &TestDb, before: &(String, String, String)) {
    db.wait_until_pgplan_sessions_are_gone().await;
    assert_eq!(&state(db).await, before, "the server changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_workload_decides_with_the_write_side_and_names_regressions() {
    for_each_version("workload_verdicts", |major| async move {
        let db = workload_db(major, "workload_verdicts").await;
        let dir = tempfile::tempdir().unwrap();
        workload_dir(dir.path());
        let before = state(&db).await;
        let doc = json(&pgplan(
            &db,
            &[
                "--workload",
                dir.path().to_str().unwrap(),
                "--index",
                "CREATE INDEX events_created_at_idx ON events (created_at)",
                "--index",
                "CREATE INDEX accounts_balance_idx ON accounts (balance)",
                "--runs",
                "2",
                "--format",
                "json",
            ],
        ));
        assert_eq!(doc["schema_version"], 3);
        assert_eq!(doc["mode"], "workload");
        let queries = doc["workload"]["queries"].as_array().unwrap();
        assert_eq!(queries.len(), 5, "{doc:#}");
        let by_id = |end: &str| {
            queries
                .iter()
                .find(|q| q["id"].as_str().unwrap().ends_with(end))
                .unwrap()
        };
        assert_eq!(by_id("dashboard.sql")["calls_per_day"], 50000.0);
        assert_eq!(by_id("pay.sql")["runnable"], false);
        // Parameters sampled from pg_stats: several labelled samples with values, never generic.
        for id in ["account.sql", "balance_lookup.sql"] {
            let samples = by_id(id)["samples"].as_array().unwrap();
            assert!(!samples.is_empty(), "{id}: {doc:#}");
            for s in samples {
                assert_eq!(s["generic"], false, "{id}: {s}");
                assert_eq!(s["params"].as_array().unwrap().len(), 1, "{id}: {s}");
                assert!(
                    ["common", "typical", "rare"].contains(&s["label"].as_str().unwrap()),
                    "{id}: {s}"
                );
            }
        }
        assert!(
            by_id("balance_lookup.sql")["samples"]
                .as_array()
                .unwrap()
                .len()
                >= 2
        );

        // The created_at index pays for the hot dashboard, and the rare query it makes much
        // worse is named a regression all the same.
        let created = candidate(&doc, "events_created_at_idx");
        let w = &created["workload"];
        assert_eq!(w["verdict"], "pays", "{created:#}");
        assert_eq!(created["rank"], 1);
        assert_eq!(doc["best"], "events_created_at_idx");
        let dashboard = query(created, "dashboard.sql");
        assert_eq!(dashboard["verdict"], "pays", "{dashboard}");
        assert_eq!(dashboard["regression"], false);
        let worse = query(created, "oldest_cancelled.sql");
        assert_eq!(worse["regression"], true, "{worse}");
        assert!(
            worse["pages_after"].as_f64().unwrap() > worse["pages_before"].as_f64().unwrap(),
            "{worse}"
        );
        assert!(w["net_pages_saved_per_day"].as_f64().unwrap() > 0.0);
        assert_eq!(
            w["estimated"], true,
            "the write cost is estimated without --allow-writes"
        );

        // The balance index speeds up the rare lookup, but the frequent UPDATE sets balance:
        // its HOT updates would stop being HOT, which costs more than the reads save.
        let balance = candidate(&doc, "accounts_balance_idx");
        let w = &balance["workload"];
        assert_eq!(w["verdict"], "does_not_pay", "{balance:#}");
        let lookup = query(balance, "balance_lookup.sql");
        assert_eq!(lookup["used"], true, "{lookup}");
        assert!(lookup["pages_after"].as_f64().unwrap() < lookup["pages_before"].as_f64().unwrap());
        assert!(
            w["hot_updates_lost_per_day"].as_f64().unwrap() >= 4000.0,
            "{w:#}"
        );
        assert!(
            w["write_pages_added_per_day"].as_f64().unwrap()
                > w["read_pages_saved_per_day"].as_f64().unwrap(),
            "{w:#}"
        );
        assert!(w["net_pages_saved_per_day"].as_f64().unwrap() < 0.0);
        assert_eq!(doc["ranking"][1], "accounts_balance_idx");
        assert_nothing_left(&db, &before).await;

        // With --allow-writes the UPDATE runs (rolled back) and one entry's cost is measured:
        // a representative write with and without the index, rolled back too.
        let doc = json(&pgplan(
            &db,
            &[
                "--workload",
                dir.path().to_str().unwrap(),
                "--index",
                "CREATE INDEX accounts_balance_idx ON accounts (balance)",
                "--allow-writes",
                "--runs",
                "1",
                "--format",
                "json",
            ],
        ));
        let pay = doc["workload"]["queries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["id"] == "pay.sql")
            .unwrap();
        assert_eq!(pay["runnable"], true);
        assert_eq!(pay["samples"][0]["generic"], false, "{pay}");
        let balance = candidate(&doc, "accounts_balance_idx");
        let cost = &balance["workload"]["writes"][0]["entry_cost"];
        assert_eq!(cost["estimated"], false, "{balance:#}");
        assert!(cost["wal_bytes"].as_f64().unwrap() > 0.0, "{cost}");
        assert_eq!(query(balance, "pay.sql")["measured"], true);
        assert_nothing_left(&db, &before).await;

        // The text report says the same in words.
        let out = pgplan(
            &db,
            &[
                "--workload",
                dir.path().to_str().unwrap(),
                "--index",
                "CREATE INDEX events_created_at_idx ON events (created_at)",
                "--runs",
                "1",
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Best: events_created_at_idx"), "{text}");
        assert!(text.contains("Regression:"), "{text}");
        assert!(text.contains("oldest_cancelled.sql"), "{text}");
        assert!(text.contains("ESTIMATED"), "{text}");
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pg_stat_statements_is_read_sampled_and_left_untouched() {
    for_each_version("workload_pgss", |major| async move {
        let db = workload_db(major, "workload_pgss").await;
        // Not created yet: a clear error saying which half is missing.
        let out = pgplan(
            &db,
            &[
                "--workload",
                "pg_stat_statements",
                "--index",
                "CREATE INDEX ON accounts (balance)",
            ],
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(
            stderr(&out).contains("CREATE EXTENSION pg_stat_statements"),
            "{}",
            stderr(&out)
        );

        db.run("CREATE EXTENSION pg_stat_statements").await;
        let client = db.client().await;
        for i in 0..30 {
            client
                .simple_query(&format!(
                    "SELECT note FROM accounts WHERE id = {}",
                    i * 100 + 1
                ))
                .await
                .unwrap();
            client
                .simple_query(&format!(
                    "SELECT id FROM accounts WHERE balance = {}",
                    i * 7
                ))
                .await
                .unwrap();
        }
        drop(client);
        let entries = "SELECT string_agg(queryid::text || ':' || calls, ',' ORDER BY queryid) \
                       FROM pg_stat_statements WHERE query LIKE 'SELECT % FROM accounts WHERE %'";
        let before = db.value(entries).await.unwrap();
        let resets = if major >= 14 {
            db.value("SELECT stats_reset::text FROM pg_stat_statements_info")
                .await
        } else {
            None
        };
        let doc = json(&pgplan(
            &db,
            &[
                "--workload",
                "pg_stat_statements",
                "--top",
                "50",
                "--min-calls",
                "20",
                "--index",
                "CREATE INDEX ON accounts (balance)",
                "--runs",
                "1",
                "--format",
                "json",
            ],
        ));
        let queries = doc["workload"]["queries"].as_array().unwrap();
        let lookup = queries
            .iter()
            .find(|q| q["text"].as_str().unwrap().contains("balance = $1"))
            .unwrap_or_else(|| panic!("{doc:#}"));
        assert!(lookup["queryid"].is_string());
        assert_eq!(lookup["id"], lookup["queryid"]);
        assert!(lookup["calls"].as_f64().unwrap() >= 30.0);
        let samples = lookup["samples"].as_array().unwrap();
        assert!(
            samples
                .iter()
                .all(|s| s["generic"] == false && s["params"][0].is_string()),
            "{samples:?}"
        );
        let c = &doc["candidates"][0];
        assert_eq!(c["index_name"], "accounts_balance_idx");
        assert_eq!(query(c, lookup["id"].as_str().unwrap())["used"], true);
        // Never reset, and pgplan's own runs are not counted in the entries it read.
        assert_eq!(db.value(entries).await.unwrap(), before);
        if major >= 14 {
            assert_eq!(
                db.value("SELECT stats_reset::text FROM pg_stat_statements_info")
                    .await,
                resets
            );
        }
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failures_and_interrupts_leave_nothing_behind() {
    for_each_version("workload_faults", |major| async move {
        let db = workload_db(major, "workload_faults").await;
        db.run(
            "CREATE FUNCTION slow_identity(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE \
             AS $$ BEGIN PERFORM pg_sleep(0.02); RETURN $1; END $$; \
             CREATE TABLE slow (id integer PRIMARY KEY, v integer NOT NULL); \
             INSERT INTO slow SELECT i, i % 10 FROM generate_series(1, 300) AS i; \
             VACUUM (ANALYZE) slow;",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "a.sql",
            "-- calls: 10\nSELECT note FROM accounts WHERE id = 7\n",
        );
        write(
            dir.path(),
            "boom.sql",
            "SELECT 1 / (id - id) FROM accounts WHERE id = 3\n",
        );
        let before = state(&db).await;

        // A candidate that cannot be built fails alone (exit 2); a query that fails is that
        // query's error; the other candidate is still measured.
        let out = pgplan(
            &db,
            &[
                "--workload",
                dir.path().to_str().unwrap(),
                "--index",
                "CREATE INDEX ON accounts (no_such_column)",
                "--index",
                "CREATE INDEX ON accounts (balance)",
                "--runs",
                "1",
                "--format",
                "json",
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            doc["candidates"][0]["error"]
                .as_str()
                .unwrap()
                .contains("no_such_column"),
            "{doc:#}"
        );
        assert_eq!(
            doc["candidates"][1]["workload"]["verdict"], "unused",
            "{doc:#}"
        );
        let boom = &doc["baselines"][0]["queries"][1]["samples"][0];
        assert!(
            boom["error"].as_str().unwrap().contains("division by zero"),
            "{boom}"
        );
        assert_nothing_left(&db, &before).await;

        // Ctrl-C while a slow candidate builds: cancelled, rolled back, exit 130.
        let mut child = command(
            &db,
            &[
                "--workload",
                dir.path().to_str().unwrap(),
                "--index",
                "CREATE INDEX ON slow (slow_identity(v))",
                "--runs",
                "1",
            ],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        db.wait_for_pgplan_statement("CREATE INDEX", &mut child)
            .await;
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130));
        assert_nothing_left(&db, &before).await;

        // kill -9 during the build: the server rolls back on its own.
        let mut child = command(
            &db,
            &[
                "--workload",
                dir.path().to_str().unwrap(),
                "--index",
                "CREATE INDEX ON slow (slow_identity(v))",
                "--runs",
                "1",
            ],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        db.wait_for_pgplan_statement("CREATE INDEX", &mut child)
            .await;
        child.kill().unwrap();
        child.wait().unwrap();
        assert_nothing_left(&db, &before).await;

        // --budget: candidates after the budget ran out are named, not measured; a run that
        // measured none exits 2.
        let out = pgplan(
            &db,
            &[
                "--workload",
                &dir.path().join("a.sql").display().to_string(),
                "--index",
                "CREATE INDEX ON accounts (balance)",
                "--index",
                "CREATE INDEX ON accounts (note)",
                "--budget",
                "1ms",
                "--runs",
                "1",
                "--format",
                "json",
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            doc["skipped_for_budget"].as_array().unwrap().len(),
            2,
            "{doc:#}"
        );
        assert_nothing_left(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}
