//! `compare --workload --allow-writes` on a table with a user trigger: pgplan's representative
//! write (its own DELETE and re-INSERT of a row) would fire the trigger, whose effects can
//! outlive the rollback. The write is not run, the entry cost is estimated, and the report
//! says why.

mod common;

use std::process::Command;

use common::{TestDb, for_each_version, pgplan_bin, stderr};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_write_probe_never_fires_a_user_trigger() {
    for_each_version("probe_triggers", |major| async move {
        let db = TestDb::create(major, "probe_triggers").await;
        // The trigger takes a value from a sequence: that, no rollback undoes, so it shows
        // whether the trigger ever ran.
        db.run(
            "CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL);
             INSERT INTO t SELECT i, i % 100 FROM generate_series(1, 5000) i;
             ANALYZE t;
             CREATE SEQUENCE trigger_calls;
             CREATE FUNCTION count_call() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN PERFORM nextval('trigger_calls'); RETURN NULL; END $$;
             CREATE TRIGGER log_changes AFTER INSERT OR DELETE ON t
               FOR EACH ROW EXECUTE FUNCTION count_call();",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("lookup.sql"),
            "-- calls: 1000\nSELECT id FROM t WHERE v = 7\n",
        )
        .unwrap();
        let out = Command::new(pgplan_bin())
            .env("NO_COLOR", "1")
            .env_remove("PGSERVICE")
            .args(["compare", "-d", &db.conninfo(), "--workload"])
            .arg(dir.path())
            .args([
                "--index",
                "CREATE INDEX ON t (v)",
                "--allow-writes",
                "--runs",
                "1",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0) | Some(1)),
            "{}",
            stderr(&out)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let called: bool = db
            .client()
            .await
            .query_one("SELECT is_called FROM trigger_calls", &[])
            .await
            .unwrap()
            .get(0);
        assert!(!called, "the trigger ran: {doc:#}");
        let text = doc.to_string();
        assert!(
            text.contains("the representative write on t was not run")
                && text.contains("trigger log_changes"),
            "{doc:#}"
        );
        db.drop_db().await;
    })
    .await;
}
