//! `pgplan advise` never goes silent, on PostgreSQL 13–18: a role that cannot build on the
//! tables it reads, and a `--budget` that leaves room for no candidate, measure nothing, and
//! the report says so and exits 2 (never "nothing pays", never exit 0, with or without
//! `--fail-if-advice`); a query on a table locked elsewhere is named with the lock's holder.

mod common;

use std::path::Path;

use common::{TestDb, for_each_version, pgplan_command, stderr};
use serde_json::Value;

/// A read that a btree on account_id serves, on a table big enough for advise to propose it.
const SETUP: &str = "
CREATE TABLE tickets (id integer PRIMARY KEY, account_id integer NOT NULL, body text NOT NULL);
INSERT INTO tickets SELECT i, i % 2000, md5(i::text) FROM generate_series(1, 60000) AS i;
VACUUM (ANALYZE) tickets;
CREATE TABLE ledger (id integer PRIMARY KEY, amount integer NOT NULL);
INSERT INTO ledger SELECT i, i % 100 FROM generate_series(1, 1000) AS i;
VACUUM (ANALYZE) ledger;
";

fn workload(dir: &Path, with_ledger: bool) {
    std::fs::write(
        dir.join("by_account.sql"),
        "-- calls: 20000\nSELECT id, body FROM tickets WHERE account_id = 42\n",
    )
    .unwrap();
    if with_ledger {
        std::fs::write(
            dir.join("ledger.sql"),
            "-- calls: 10\nSELECT amount FROM ledger WHERE id = 7\n",
        )
        .unwrap();
    }
}

fn advise(conninfo: &str, dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "advise",
        "-d",
        conninfo,
        "--workload",
        dir.to_str().unwrap(),
        "--runs",
        "1",
    ];
    args.extend(extra);
    pgplan_command(&args).output().unwrap()
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(out)
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_measured_is_said_and_exits_2() {
    for_each_version("advise_nothing_measured", |major| async move {
        let db = TestDb::create(major, "advise_nothing_measured").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        workload(dir.path(), false);

        // The owner measures it: the baseline for what follows.
        let owner = advise(&db.conninfo(), dir.path(), &["--format", "json"]);
        assert_eq!(owner.status.code(), Some(0), "{}", stderr(&owner));
        let doc = json(&owner);
        assert!(
            doc["candidate_counts"]["measured"].as_u64().unwrap() >= 1,
            "{doc:#}"
        );

        // A role that may read the tables but not build on them (roles are the server's: only
        // this test creates it).
        db.run("CREATE ROLE advise_reader LOGIN; GRANT SELECT ON tickets, ledger TO advise_reader")
            .await;
        let reader = format!("{} user=advise_reader", db.conninfo());
        for extra in [
            &["--format", "json"][..],
            &["--format", "json", "--fail-if-advice"],
        ] {
            let out = advise(&reader, dir.path(), extra);
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
            let doc = json(&out);
            let counts = &doc["candidate_counts"];
            assert_eq!(counts["measured"], 0, "{doc:#}");
            assert!(counts["failed"].as_u64().unwrap() >= 1, "{doc:#}");
            assert!(doc["recommended"].as_array().unwrap().is_empty());
            let notes = doc["notes"].to_string();
            assert!(notes.contains("must be owner"), "{notes}");
        }
        let out = advise(&reader, dir.path(), &[]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        assert!(text.contains("Nothing was measured"), "{text}");
        assert!(!text.contains("nothing measured pays"), "{text}");
        assert!(
            stderr(&out).contains("Nothing was measured"),
            "{}",
            stderr(&out)
        );

        // A budget that leaves room for no candidate: each named "not measured (budget)".
        let out = advise(
            &db.conninfo(),
            dir.path(),
            &["--budget", "1ms", "--format", "json"],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let doc = json(&out);
        assert_eq!(doc["candidate_counts"]["measured"], 0, "{doc:#}");
        assert!(
            doc["candidate_counts"]["over_budget"].as_u64().unwrap() >= 1,
            "{doc:#}"
        );
        let out = advise(&db.conninfo(), dir.path(), &["--budget", "1ms"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        assert!(text.contains("Nothing was measured"), "{text}");
        assert!(text.contains("not measured (budget)"), "{text}");
        db.wait_until_pgplan_sessions_are_gone().await;
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_query_on_a_locked_table_is_named_with_the_holder() {
    for_each_version("advise_locked", |major| async move {
        let db = TestDb::create(major, "advise_locked").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        workload(dir.path(), true);
        let holder = db.client().await;
        holder
            .batch_execute("BEGIN; LOCK TABLE ledger IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();
        let pid: i32 = holder
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        let out = advise(
            &db.conninfo(),
            dir.path(),
            &["--lock-timeout", "100ms", "--format", "json"],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("query ledger.sql could not be measured"),
            "{}",
            stderr(&out)
        );
        let doc = json(&out);
        let unmeasured = doc["unmeasured_queries"].as_array().unwrap();
        let ledger = unmeasured
            .iter()
            .find(|u| u["query"] == "ledger.sql")
            .unwrap_or_else(|| panic!("{doc:#}"));
        let error = ledger["error"].as_str().unwrap();
        assert!(
            error.contains(&format!(
                "public.ledger is held in ACCESS EXCLUSIVE mode by pid {pid}"
            )),
            "{error}"
        );
        // The other query's index is still measured and recommended.
        assert!(
            doc["recommended"].to_string().contains("account_id"),
            "{doc:#}"
        );
        let out = advise(&db.conninfo(), dir.path(), &["--lock-timeout", "100ms"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        assert!(
            text.contains("Queries that could not be measured"),
            "{text}"
        );
        assert!(text.contains(&format!("pid {pid}")), "{text}");
        holder.batch_execute("ROLLBACK").await.unwrap();
        db.wait_until_pgplan_sessions_are_gone().await;
        db.drop_db().await;
    })
    .await;
}
