//! A lock wait that gives up (lock_timeout) in compare and explain -d names the table, the
//! session holding it and the flag that waits longer; PostgreSQL's own error names none of
//! them.

mod common;

use std::process::{Command, Output};

use common::{TestDb, for_each_version, pgplan_bin, stderr};

fn pgplan(db: &TestDb, dir: &std::path::Path, args: &[&str]) -> Output {
    let path = dir.join("q.sql");
    std::fs::write(&path, "SELECT id FROM t WHERE v = 3").unwrap();
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg(args[0])
        .args(["-d", &db.conninfo()])
        .arg(&path)
        .args(&args[1..])
        .args(["--lock-timeout", "200ms"])
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lock_timeout_names_the_table_the_holder_and_the_flag() {
    for_each_version("lock_timeout", |major| async move {
        let db = TestDb::create(major, "lock_timeout").await;
        db.run(
            "CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL);
             INSERT INTO t SELECT i, i % 10 FROM generate_series(1, 1000) i;
             ANALYZE t;",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        let holder = db.client().await;
        let pid: i32 = holder
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        let named = format!("public.t locked by pid {pid} (AccessExclusiveLock");

        // Every statement on t waits: the baseline of compare, and explain -d, give up.
        holder
            .batch_execute("BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();
        for args in [
            &["compare", "--index", "CREATE INDEX ON t (v)", "--runs", "1"][..],
            &["explain"][..],
        ] {
            let out = pgplan(&db, dir.path(), args);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("lock timeout"), "{args:?}: {err}");
            assert!(err.contains(&named), "{args:?}: {err}");
            assert!(err.contains("--lock-timeout"), "{args:?}: {err}");
        }
        holder.batch_execute("ROLLBACK").await.unwrap();

        // A writer's lock lets the query run but not CREATE INDEX (SHARE): the candidate fails
        // with the holder named in the report.
        holder
            .batch_execute("BEGIN; LOCK TABLE t IN ROW EXCLUSIVE MODE")
            .await
            .unwrap();
        let out = pgplan(
            &db,
            dir.path(),
            &[
                "compare",
                "--index",
                "CREATE INDEX ON t (v)",
                "--runs",
                "1",
                "--format",
                "json",
            ],
        );
        let doc: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", stderr(&out)));
        let text = doc.to_string();
        assert!(
            text.contains(&format!("public.t locked by pid {pid} (RowExclusiveLock")),
            "{doc:#}"
        );
        assert!(text.contains("--lock-timeout"), "{doc:#}");
        holder.batch_execute("ROLLBACK").await.unwrap();
        drop(holder);
        db.drop_db().await;
    })
    .await;
}
