//! A workload run never drops a query without a word, on PostgreSQL 13–18: a query whose table
//! another session holds locked is named in every format, with the lock's holder (its pid) and
//! the reason, and the run exits 2 while the other queries are still measured; candidates
//! `--budget` left out are listed as "not measured (budget)", and a run that measured none
//! exits 2; a query that reads none of a candidate's tables is "not affected" by it.

mod common;

use std::path::Path;

use common::{TestDb, for_each_version, pgplan_command, stderr};
use serde_json::Value;

const SETUP: &str = "
CREATE TABLE orders (id integer PRIMARY KEY, status text NOT NULL);
INSERT INTO orders SELECT i, CASE WHEN i % 50 = 0 THEN 'pending' ELSE 'done' END
FROM generate_series(1, 20000) AS i;
VACUUM (ANALYZE) orders;
CREATE TABLE ledger (id integer PRIMARY KEY, amount integer NOT NULL);
INSERT INTO ledger SELECT i, i % 100 FROM generate_series(1, 1000) AS i;
VACUUM (ANALYZE) ledger;
";

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_query_on_a_locked_table_is_named_with_the_holder_and_fails_the_run() {
    for_each_version("workload_locked", |major| async move {
        let db = TestDb::create(major, "workload_locked").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "pending.sql",
            "-- calls: 5000\nSELECT id FROM orders WHERE status = 'pending'\n",
        );
        write(
            dir.path(),
            "ledger.sql",
            "-- calls: 100\nSELECT amount FROM ledger WHERE id = 7\n",
        );
        write(
            dir.path(),
            "namespaces.sql",
            "-- calls: 1000\nSELECT count(*) FROM pg_namespace\n",
        );
        // Another session holds ledger in ACCESS EXCLUSIVE mode, as a long migration would.
        let holder = db.client().await;
        holder
            .batch_execute("BEGIN; LOCK TABLE ledger IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();
        let pid = db_pid(&holder).await;

        let run = |format: &str| {
            pgplan_command(&[
                "compare",
                "-d",
                &db.conninfo(),
                "--workload",
                dir.path().to_str().unwrap(),
                "--index",
                "CREATE INDEX ON orders (status)",
                "--runs",
                "1",
                "--lock-timeout",
                "100ms",
                "--format",
                format,
            ])
            .output()
            .unwrap()
        };
        let out = run("json");
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("query ledger.sql could not be measured"),
            "{err}"
        );
        assert!(err.contains(&format!("pid {pid}")), "{err}");
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let unmeasured = doc["unmeasured_queries"].as_array().unwrap();
        assert_eq!(unmeasured.len(), 1, "{doc:#}");
        assert_eq!(unmeasured[0]["query"], "ledger.sql");
        assert_eq!(unmeasured[0]["during"], "baseline");
        let error = unmeasured[0]["error"].as_str().unwrap();
        assert!(error.contains("lock timeout"), "{error}");
        assert!(
            error.contains(&format!(
                "public.ledger is held in ACCESS EXCLUSIVE mode by pid {pid}"
            )),
            "{error}"
        );
        // The other query was measured, with the candidate.
        let c = &doc["candidates"][0]["workload"];
        let pending = c["queries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["id"] == "pending.sql")
            .unwrap();
        assert!(pending["error"].is_null(), "{c:#}");
        assert!(pending["pages_before"].as_f64().unwrap() > 0.0, "{c:#}");
        // --runs 1: one warm run a side, no spread, so no time verdict and no time regression.
        assert_eq!(pending["execution_one_run"], true, "{pending:#}");
        assert_eq!(pending["execution_within_noise"], true, "{pending:#}");
        let ledger = c["queries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["id"] == "ledger.sql")
            .unwrap();
        assert!(ledger["error"].as_str().unwrap().contains("lock timeout"));
        // A query that reads none of the candidate's tables: not affected, whatever its pages
        // did between the two runs.
        let namespaces = c["queries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["id"] == "namespaces.sql")
            .unwrap();
        assert_eq!(namespaces["affected"], false, "{namespaces:#}");
        assert!(
            namespaces["pages_saved_per_day"].is_null(),
            "{namespaces:#}"
        );
        assert_eq!(namespaces["regression"], false, "{namespaces:#}");

        // Text and Markdown name it where the query is listed, and who holds the lock.
        for format in ["text", "markdown"] {
            let out = run(format);
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
            let report = String::from_utf8(out.stdout).unwrap();
            assert!(
                report.contains("NOT MEASURED") || report.contains("**not measured**"),
                "{report}"
            );
            assert!(report.contains("lock timeout"), "{report}");
            assert!(report.contains(&format!("pid {pid}")), "{report}");
            assert!(report.contains("not affected"), "{report}");
            if format == "text" {
                assert!(
                    report.contains("one run: no spread to judge by"),
                    "{report}"
                );
                assert!(
                    !report.contains("faster") && !report.contains("slower"),
                    "{report}"
                );
            }
        }
        holder.batch_execute("ROLLBACK").await.unwrap();
        db.wait_until_pgplan_sessions_are_gone().await;
        db.drop_db().await;
    })
    .await;
}

async fn db_pid(client: &tokio_postgres::Client) -> i32 {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn candidates_the_budget_left_out_are_listed_and_nothing_measured_exits_2() {
    for_each_version("workload_budget", |major| async move {
        let db = TestDb::create(major, "workload_budget").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "pending.sql",
            "-- calls: 5000\nSELECT id FROM orders WHERE status = 'pending'\n",
        );
        let run = |format: &str| {
            pgplan_command(&[
                "compare",
                "-d",
                &db.conninfo(),
                "--workload",
                dir.path().to_str().unwrap(),
                "--index",
                "CREATE INDEX by_status ON orders (status)",
                "--index",
                // A name with a pipe: a Markdown table cell must escape it.
                "CREATE INDEX \"by|status_id\" ON orders (status, id)",
                "--runs",
                "1",
                "--budget",
                "1ms",
                "--format",
                format,
            ])
            .output()
            .unwrap()
        };
        let out = run("json");
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("nothing was measured"),
            "{}",
            stderr(&out)
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            doc["skipped_for_budget"],
            serde_json::json!(["by_status", "by|status_id"]),
            "{doc:#}"
        );
        assert!(doc["ranking"].as_array().unwrap().is_empty());
        let out = run("text");
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.matches("not measured (budget)").count(), 2, "{text}");
        assert!(text.contains("nothing was measured"), "{text}");
        let out = run("markdown");
        let markdown = String::from_utf8(out.stdout).unwrap();
        assert!(
            markdown.contains("| — | `by\\|status_id` | not measured (budget) |"),
            "{markdown}"
        );
        db.wait_until_pgplan_sessions_are_gone().await;
        db.drop_db().await;
    })
    .await;
}
