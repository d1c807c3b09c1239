//! `-o` on real servers 13–18, through the binary as a user runs it: a run killed with SIGKILL
//! while it measures leaves nothing beside its `-o` target (the temporary the report is
//! written to appears only with the report).

mod common;

use std::process::{Command, Stdio};

use common::{TestDb, for_each_version, pgplan_bin};

const SETUP: &str = "
CREATE TABLE locked_t (id integer PRIMARY KEY, v integer NOT NULL);
INSERT INTO locked_t SELECT i, i % 100 FROM generate_series(1, 5000) AS i;
CREATE INDEX locked_t_v ON locked_t (v);
VACUUM (ANALYZE) locked_t;
";

fn pgplan(db: &TestDb, command: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(pgplan_bin());
    cmd.env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg(command)
        .arg("-d")
        .arg(db.conninfo())
        .args(args);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_while_measuring_leaves_nothing_beside_the_output_file() {
    for_each_version("edges_sigkill_output", |major| async move {
        let db = TestDb::create(major, "edges_sigkill_output").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        let query = dir.path().join("q.sql");
        std::fs::write(&query, "SELECT pg_sleep(60), id FROM locked_t WHERE id = 1").unwrap();
        let query = query.display().to_string();
        let report = dir.path().join("report.txt");
        let report = report.display().to_string();
        for (command, args) in [
            ("explain", vec![query.as_str(), "-o", report.as_str()]),
            (
                "compare",
                vec![
                    query.as_str(),
                    "--drop-index",
                    "locked_t_v",
                    "-o",
                    report.as_str(),
                ],
            ),
        ] {
            let mut child = pgplan(&db, command, &args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            db.wait_for_pgplan_statement("EXPLAIN", &mut child).await;
            child.kill().unwrap();
            child.wait().unwrap();
            let mut left: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            left.sort();
            assert_eq!(
                left,
                ["q.sql"],
                "{command} -o left files behind after SIGKILL"
            );
            // The backend sleeps on until it notices its client is gone; end it.
            db.run(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = 'pgplan' AND datname = current_database()",
            )
            .await;
            db.wait_until_pgplan_sessions_are_gone().await;
        }
        db.drop_db().await;
    })
    .await;
}
