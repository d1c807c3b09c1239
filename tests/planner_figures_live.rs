//! The planner figures a rolled-back run changes in place, on real servers 13–18. A build (and
//! `--analyze`'s ANALYZE) rewrites the table's `relpages`, `reltuples` and `relallvisible` in
//! `pg_class`, which the rollback does not undo; after updates the all-visible count falls to
//! what the visibility map holds, and other clients' index-only scans look dearer. On 18 pgplan
//! puts the figures back exactly (`pg_restore_relation_stats`); before 18 it names the change
//! and the command that recounts them.

mod common;

use std::process::{Command, Output};

use common::{TestDb, for_each_version, pgplan_bin, stderr};

// VACUUM sets relallvisible to every page; the UPDATE then clears the visibility map on every
// page (one row in fifty, spread over all of them) while pg_class keeps the old count.
const SETUP: &str = "
CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL, pad text NOT NULL)
    WITH (autovacuum_enabled = off);
INSERT INTO t SELECT i, i % 100, repeat('x', 40) FROM generate_series(1, 20000) AS i;
VACUUM (ANALYZE) t;
UPDATE t SET v = v + 1 WHERE id % 50 = 0;
";

async fn figures(db: &TestDb) -> (i32, f32, i32) {
    let client = db.client().await;
    let row = client
        .query_one(
            "SELECT relpages, reltuples, relallvisible FROM pg_class WHERE oid = 't'::regclass",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

fn pgplan(db: &TestDb, dir: &std::path::Path, args: &[&str]) -> Output {
    let path = dir.join("q.sql");
    std::fs::write(&path, "SELECT id FROM t WHERE v = 3").unwrap();
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg("compare")
        .arg("-d")
        .arg(db.conninfo())
        .args(args)
        .arg(&path)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn figures_a_run_changed_are_put_back_or_named_with_the_way_back() {
    for_each_version("planner_figures", |major| async move {
        let db = TestDb::create(major, "planner_figures").await;
        let dir = tempfile::tempdir().unwrap();
        for workload in [false, true] {
            db.run("DROP TABLE IF EXISTS t").await;
            db.run(SETUP).await;
            let before = figures(&db).await;
            assert!(
                before.2 > 0,
                "{major}: VACUUM left no all-visible page: {before:?}"
            );
            let mut args = vec![
                "--index",
                "CREATE INDEX ON t (v)",
                "--runs",
                "1",
                "--analyze",
            ];
            if workload {
                args.push("--workload");
            }
            let out = pgplan(&db, dir.path(), &args);
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
            assert!(
                matches!(out.status.code(), Some(0) | Some(1)),
                "{major} workload={workload}: {text}"
            );
            let after = figures(&db).await;
            // ANALYZE recounts the visibility map, which the UPDATE emptied.
            assert!(
                text.contains(&format!("relallvisible {} → 0", before.2)),
                "{major} workload={workload}: {text}"
            );
            assert!(text.contains("index-only scans"), "{major}: {text}");
            if major >= 18 {
                assert!(
                    text.contains("put back with pg_restore_relation_stats"),
                    "{major} workload={workload}: {text}"
                );
                assert_eq!(after, before, "{major} workload={workload}: {text}");
            } else {
                assert!(
                    text.contains("PostgreSQL before 18 has no way to set them back")
                        && text.contains("VACUUM public.t recounts them"),
                    "{major} workload={workload}: {text}"
                );
                // What the report says the run left is what pg_class holds.
                assert_eq!(after.2, 0, "{major} workload={workload}: {text}");
            }
        }
    })
    .await;
}
