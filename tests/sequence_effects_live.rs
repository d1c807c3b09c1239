//! Sequence functions under `--allow-writes`: the read-only transaction that stops `setval` and
//! `nextval` is not there, and PostgreSQL never rolls a sequence back. `setval` is refused
//! unless `--allow-lasting-effects`; `nextval` runs and is said.

mod common;

use std::process::{Command, Output};

use common::{TestDb, for_each_version, pgplan_bin, stderr};

fn pgplan(db: &TestDb, dir: &std::path::Path, query: &str, args: &[&str]) -> Output {
    let path = dir.join(format!("q{}.sql", query.len()));
    std::fs::write(&path, query).unwrap();
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg(args[0])
        .args(["-d", &db.conninfo()])
        .arg(&path)
        .args(&args[1..])
        .output()
        .unwrap()
}

async fn last_value(db: &TestDb) -> i64 {
    db.client()
        .await
        .query_one("SELECT last_value FROM t_id_seq", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn setval_is_refused_and_nextval_said_under_allow_writes() {
    for_each_version("sequence_effects", |major| async move {
        let db = TestDb::create(major, "sequence_effects").await;
        db.run(
            "CREATE TABLE t (id serial PRIMARY KEY, v integer NOT NULL);
             INSERT INTO t (v) SELECT i % 10 FROM generate_series(1, 500) i;
             ANALYZE t;",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        let before = last_value(&db).await;
        assert_eq!(before, 500);
        let reset = "SELECT setval('t_id_seq', 1)";
        for args in [
            &[
                "compare",
                "--allow-writes",
                "--index",
                "CREATE INDEX ON t (v)",
                "--runs",
                "1",
            ][..],
            &["explain", "--allow-writes"][..],
        ] {
            let out = pgplan(&db, dir.path(), reset, args);
            let err = stderr(&out);
            // compare refuses it; explain runs a SELECT read-only, where setval fails.
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains("pg_catalog.setval()") || err.contains("read-only transaction"),
                "{args:?}: {err}"
            );
            assert_eq!(
                last_value(&db).await,
                500,
                "{args:?}: the sequence was reset"
            );
        }
        let out = pgplan(
            &db,
            dir.path(),
            reset,
            &[
                "compare",
                "--allow-writes",
                "--index",
                "CREATE INDEX ON t (v)",
                "--runs",
                "1",
            ],
        );
        let err = stderr(&out);
        assert!(err.contains("--allow-lasting-effects"), "{err}");
        assert!(err.contains("sets a sequence's value"), "{err}");

        // An INSERT takes ids from the sequence: it runs, and the note says they are gone.
        let insert = "INSERT INTO t (v) VALUES (3)";
        for args in [
            &[
                "compare",
                "--allow-writes",
                "--index",
                "CREATE INDEX ON t (v)",
                "--runs",
                "1",
            ][..],
            &["explain", "--allow-writes"][..],
        ] {
            let out = pgplan(&db, dir.path(), insert, args);
            assert!(
                matches!(out.status.code(), Some(0) | Some(1)),
                "{args:?}: {}",
                stderr(&out)
            );
            let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
            assert!(
                all.contains("pg_catalog.nextval(), which advances its sequence"),
                "{args:?}: {all}"
            );
            assert!(!all.contains("read-only transaction"), "{args:?}: {all}");
        }
        assert!(last_value(&db).await > 500);
        db.drop_db().await;
    })
    .await;
}
