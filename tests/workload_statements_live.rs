//! pg_stat_statements as a real server's history holds it, read as a workload on PostgreSQL
//! 13–18: typed literals stored as `interval $1` and `date $1` (rewritten to typed parameters),
//! an untyped `SELECT $1`, `IN` lists (squashed to `IN ($1 /*, ... */)` on 18), `LIMIT`/`OFFSET`,
//! `= ANY($1)`, an untyped `$1 IS NULL`, utility and DDL statements, a temporary table whose session is gone and another
//! role's table: every one either measured or set aside with its text and reason, the run never
//! stopped, and pgplan's own statements never part of the next run's workload (and, run by a
//! superuser, never in the view).

mod common;

use common::{TestDb, for_each_version, json_report as json, pgplan_command, stderr};
use serde_json::Value;

const SETUP: &str = "
CREATE TABLE orders (
    id integer PRIMARY KEY,
    status text NOT NULL,
    placed_on date NOT NULL,
    created_at timestamptz NOT NULL
);
INSERT INTO orders
SELECT i,
       CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'done' END,
       date '2026-01-01' + (i % 300),
       timestamptz '2026-01-01 00:00:00+00' + i * interval '1 minute'
FROM generate_series(1, 20000) AS i;
VACUUM (ANALYZE) orders;
CREATE EXTENSION pg_stat_statements;
CREATE ROLE workload_other_role LOGIN;
";

/// The statements an application ran, each as its own simple query (so the view normalises
/// its constants), twice so every one has calls.
const APPLICATION: &[&str] = &[
    "SELECT count(*) FROM orders WHERE created_at > now() - interval '2 days'",
    "SELECT id FROM orders WHERE placed_on = date '2026-03-01'",
    "SELECT 'pgplan'",
    "SELECT 'pgplan' IS NULL",
    "SELECT status FROM orders WHERE id IN (1, 2, 3, 4)",
    "SELECT id FROM orders ORDER BY id LIMIT 20 OFFSET 40",
    "SELECT status FROM orders WHERE id = ANY('{5,6}')",
    "VACUUM orders",
    "CREATE TABLE IF NOT EXISTS orders_archive (LIKE orders)",
];

fn queries(doc: &Value) -> &Vec<Value> {
    doc["workload"]["queries"].as_array().unwrap()
}

fn query_with<'a>(doc: &'a Value, text: &str) -> &'a Value {
    queries(doc)
        .iter()
        .find(|q| q["text"].as_str().unwrap().contains(text))
        .unwrap_or_else(|| panic!("no query with {text}: {doc:#}"))
}

fn skipped_with<'a>(doc: &'a Value, text: &str) -> &'a Value {
    doc["skipped_statements"]["statements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["text"].as_str().unwrap().contains(text))
        .unwrap_or_else(|| panic!("no skipped statement with {text}: {doc:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_shape_of_the_view_is_measured_or_set_aside_with_its_reason() {
    for_each_version("workload_shapes", |major| async move {
        let db = TestDb::create(major, "workload_shapes").await;
        db.run(SETUP).await;
        db.run(&format!(
            "CREATE SCHEMA AUTHORIZATION workload_other_role; \
             GRANT CREATE ON DATABASE \"{}\" TO workload_other_role",
            db.name
        ))
        .await;
        let client = db.client().await;
        for _ in 0..2 {
            for statement in APPLICATION {
                client.simple_query(statement).await.unwrap();
            }
        }
        // A temporary table, queried in a session that has ended since.
        client
            .batch_execute("CREATE TEMP TABLE basket (item integer)")
            .await
            .unwrap();
        client
            .simple_query("SELECT item FROM basket WHERE item = 7")
            .await
            .unwrap();
        drop(client);
        // Another role's table, in a schema only its search_path ("$user") finds.
        let (other, connection) = tokio_postgres::connect(
            &format!("{} user=workload_other_role", db.conninfo()),
            tokio_postgres::NoTls,
        )
        .await
        .unwrap();
        tokio::spawn(connection);
        other
            .batch_execute("CREATE TABLE private_notes (id integer, body text)")
            .await
            .unwrap();
        other
            .simple_query("SELECT body FROM private_notes WHERE id = 3")
            .await
            .unwrap();
        drop(other);

        let args = [
            "compare",
            "-d",
            &db.conninfo(),
            "--workload",
            "pg_stat_statements",
            "--top",
            "100",
            "--min-calls",
            "1",
            "--index",
            "CREATE INDEX ON orders (placed_on)",
            "--runs",
            "1",
        ];
        let mut json_args = args.to_vec();
        json_args.extend(["--format", "json"]);
        let doc = json(&pgplan_command(&json_args).output().unwrap());

        // Rewritten to typed parameters, and measured with values or planned generically.
        let interval = query_with(&doc, "now() - $1::interval");
        assert!(!interval["samples"].as_array().unwrap().is_empty());
        let date = query_with(&doc, "placed_on = $1::date");
        assert!(
            date["samples"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["generic"] == false),
            "{date:#}"
        );
        // An untyped literal: PREPARE resolves it as text in a select list, and where the
        // server cannot determine its type it is cast as PostgreSQL reads such a literal.
        assert!(
            queries(&doc).iter().any(|q| q["text"] == "SELECT $1"),
            "{doc:#}"
        );
        query_with(&doc, "SELECT $1::text IS NULL");
        // The IN list: squashed on 18, one parameter per value before.
        let list = query_with(&doc, "WHERE id IN (");
        if major >= 18 {
            assert!(
                list["text"].as_str().unwrap().contains("/*, ... */"),
                "{list:#}"
            );
        }
        query_with(&doc, "LIMIT $1 OFFSET $2");
        // = ANY($1): measured with a value of its column, as a one-element array.
        let any = query_with(&doc, "= ANY($1)");
        let samples = any["samples"].as_array().unwrap();
        assert!(
            samples
                .iter()
                .all(|s| s["generic"] == false
                    && s["params"][0].as_str().unwrap().starts_with("{\"")),
            "{any:#}"
        );

        // Set aside, each with its reason; the run went on.
        let vacuum = skipped_with(&doc, "VACUUM orders");
        assert!(
            vacuum["reason"].as_str().unwrap().contains("utility"),
            "{vacuum:#}"
        );
        skipped_with(&doc, "CREATE TABLE IF NOT EXISTS orders_archive");
        let temp = skipped_with(&doc, "FROM basket");
        assert!(
            temp["reason"].as_str().unwrap().contains("does not exist"),
            "{temp:#}"
        );
        let private = skipped_with(&doc, "FROM private_notes");
        assert!(
            private["reason"]
                .as_str()
                .unwrap()
                .contains("does not exist"),
            "{private:#}"
        );
        let share = doc["skipped_statements"]["exec_time_share"]
            .as_f64()
            .unwrap();
        assert!(share > 0.0 && share <= 1.0, "{share}");
        let c = &doc["candidates"][0];
        assert!(c["error"].is_null(), "{c:#}");

        // pgplan's own statements in the view: an audit by a role that may not keep them out
        // (only a superuser may turn pg_stat_statements.track off).
        let audit = pgplan_command(&[
            "audit",
            "-d",
            &format!("{} user=workload_other_role", db.conninfo()),
        ])
        .output()
        .unwrap();
        assert!(
            matches!(audit.status.code(), Some(0 | 1)),
            "{}",
            stderr(&audit)
        );
        // The text report names every statement set aside, with its reason and its share.
        let out = pgplan_command(&args).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("of pg_stat_statements not run ("), "{text}");
        assert!(text.contains("VACUUM orders"), "{text}");
        assert!(text.contains("does not exist"), "{text}");
        let doc = json(&pgplan_command(&json_args).output().unwrap());
        assert!(
            doc["skipped_statements"]["own_statements_left_out"]
                .as_u64()
                .unwrap()
                > 0,
            "{doc:#}"
        );
        for q in queries(&doc) {
            let text = q["text"].as_str().unwrap();
            assert!(
                !text.contains("pg_catalog")
                    && !text.contains("pg_class")
                    && !text.contains("pg_stat"),
                "pgplan's own statement in the workload: {text}"
            );
        }
        for s in doc["skipped_statements"]["statements"].as_array().unwrap() {
            let text = s["text"].as_str().unwrap();
            assert!(
                !text.contains("pgplan_") && !text.contains("FORMAT JSON"),
                "pgplan's own statement set aside as the user's: {text}"
            );
        }
        // As a superuser, pgplan's reads are kept out of the view altogether (its relation
        // lookup runs in every compare).
        assert_eq!(
            db.value(
                "SELECT count(*) FROM pg_stat_statements \
                 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                   AND query LIKE '%to_regclass%'"
            )
            .await
            .as_deref(),
            Some("0")
        );
        db.drop_db().await;
    })
    .await;
}
