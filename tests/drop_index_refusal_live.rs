//! `--drop-index` of a name that is no index, or of a constraint's index, refused from the
//! catalog before the baseline runs (it used to fail only inside the candidate's transaction,
//! after the baseline had been measured).

mod common;

use std::process::{Command, Output};

use common::{TestDb, for_each_version, pgplan_bin, stderr};

fn compare(db: &TestDb, dir: &std::path::Path, args: &[&str]) -> Output {
    let path = dir.join("q.sql");
    // pg_sleep marks the baseline: a refusal before any work leaves no call of it behind.
    std::fs::write(
        &path,
        "SELECT id FROM t WHERE v = 1 AND pg_sleep(0) IS NOT NULL",
    )
    .unwrap();
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .args(["compare", "-d", &db.conninfo()])
        .arg(&path)
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_missing_or_constraint_index_is_refused_before_the_baseline() {
    for_each_version("drop_refusal", |major| async move {
        let db = TestDb::create(major, "drop_refusal").await;
        db.run(
            "CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL, u integer UNIQUE);
             INSERT INTO t SELECT i, i % 10, i FROM generate_series(1, 1000) i;
             CREATE INDEX t_v_idx ON t (v);
             ANALYZE t;",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("no_such_idx", "--drop-index no_such_idx: no such index on the search path."),
            ("t", "--drop-index t: public.t is not an index."),
            (
                "t_pkey",
                "--drop-index t_pkey: public.t_pkey is the index of the primary key t_pkey",
            ),
            (
                "t_u_key",
                "--drop-index t_u_key: public.t_u_key is the index of the unique constraint t_u_key",
            ),
        ];
        for (name, expected) in cases {
            let out = compare(&db, dir.path(), &["--drop-index", name, "--runs", "1"]);
            assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
            let err = stderr(&out);
            // After the note every --drop-index prints about the lock it takes.
            assert!(
                err.lines().any(|l| l.starts_with(&format!("pgplan: {expected}"))),
                "{name}: {err}"
            );
            assert!(!err.contains("baseline"), "{name}: {err}");
        }
        // A plain index is measured as before.
        let out = compare(&db, dir.path(), &["--drop-index", "t_v_idx", "--runs", "1"]);
        assert!(
            matches!(out.status.code(), Some(0) | Some(1)),
            "{}",
            stderr(&out)
        );
        db.drop_db().await;
    })
    .await;
}
