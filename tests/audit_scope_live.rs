//! `pgplan audit --table`/`--schema` that match no table, on PostgreSQL 13–18: named on
//! standard error and exit 2, never a clean report and exit 0; filters that match still audit
//! as before.

mod common;

use common::{TestDb, for_each_version, pgplan_command, stderr};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_filter_that_matches_nothing_is_named_and_exits_2() {
    for_each_version("audit_scope", |major| async move {
        let db = TestDb::create(major, "audit_scope").await;
        db.run(
            "CREATE SCHEMA billing; \
             CREATE TABLE billing.invoices (id integer PRIMARY KEY); \
             CREATE TABLE orders (id integer PRIMARY KEY);",
        )
        .await;
        let audit = |filters: &[&str]| {
            let mut args = vec!["audit", "-d"];
            let conninfo = db.conninfo();
            args.push(&conninfo);
            args.extend(filters);
            pgplan_command(&args).output().unwrap()
        };
        // Matching filters: the audit runs as always (no finding here crosses the default
        // --fail-on).
        for filters in [&["--table", "orders"][..], &["--schema", "billing"]] {
            let out = audit(filters);
            assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
            assert!(
                !stderr(&out).contains("matched no table"),
                "{}",
                stderr(&out)
            );
        }
        let out = audit(&["--table", "ORDERS"]);
        assert!(
            !stderr(&out).contains("matched no table"),
            "{}",
            stderr(&out)
        );

        // A typo: named, exit 2.
        let out = audit(&["--table", "orderz"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("--table orderz matched no table"),
            "{}",
            stderr(&out)
        );
        let out = audit(&["--schema", "biling", "--format", "json"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("--schema biling matched no table"),
            "{}",
            stderr(&out)
        );
        // One of two tables misspelt is still a failure.
        let out = audit(&["--table", "orders", "--table", "billing.invoice"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("--table billing.invoice matched no table"),
            "{}",
            stderr(&out)
        );
        db.drop_db().await;
    })
    .await;
}
