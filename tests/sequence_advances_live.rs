//! Sequence advances under --allow-writes on real servers 13–18: in a read-write transaction
//! `nextval` runs and the rollback does not undo it, so every readable sequence is read before
//! and after the runs of `explain -d` and `compare`, and each one that moved is reported with
//! its count.

mod common;

use std::process::{Command, Output};

use common::{TestDb, for_each_version, pgplan_bin, stderr};

const SETUP: &str = "
CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL);
INSERT INTO t SELECT i, i % 100 FROM generate_series(1, 5000) AS i;
CREATE SEQUENCE s;
SELECT setval('s', 500000);
CREATE FUNCTION bump() RETURNS bigint LANGUAGE plpgsql VOLATILE AS 'BEGIN RETURN 1; END';
VACUUM (ANALYZE) t;
";

fn pgplan(db: &TestDb, dir: &std::path::Path, command: &str, query: &str, args: &[&str]) -> Output {
    let path = dir.join(format!("q{}.sql", query.len()));
    std::fs::write(&path, query).unwrap();
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg(command)
        .arg("-d")
        .arg(db.conninfo())
        .arg(&path)
        .args(args)
        .output()
        .unwrap()
}

async fn sequence(db: &TestDb) -> String {
    db.value("SELECT last_value || '/' || is_called FROM s")
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sequence_advances_under_allow_writes_are_counted() {
    for_each_version("sequence_advances", |major| async move {
        let db = TestDb::create(major, "sequence_advances").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        let compare_args = [
            "--index",
            "CREATE INDEX ON t (v)",
            "--runs",
            "1",
            "--allow-writes",
        ];

        // nextval: runs (a first run and one measured run per plan), and what it advanced is
        // said with the count.
        let next = "SELECT nextval('s'), bump()";
        let out = pgplan(&db, dir.path(), "explain", next, &["--allow-writes"]);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "explain: {text}");
        assert!(
            text.contains("sequence public.s advanced by 1 (500000 → 500001) while pgplan ran"),
            "explain: {text}"
        );
        // The notes describe the transaction that ran: read-write.
        assert!(!text.contains("read-only transaction"), "explain: {text}");

        let out = pgplan(&db, dir.path(), "compare", next, &compare_args);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(
            matches!(out.status.code(), Some(0) | Some(1)),
            "compare: {text}"
        );
        let after: i64 = sequence(&db)
            .await
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(after > 500001, "compare ran nextval {after}: {text}");
        assert!(
            text.contains(&format!(
                "sequence public.s advanced by {} (500001 → {after}) while pgplan ran",
                after - 500001
            )),
            "compare: {text}"
        );
        db.wait_until_pgplan_sessions_are_gone().await;
        db.drop_db().await;
    })
    .await;
}
