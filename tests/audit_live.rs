//! `pgplan audit` on real servers, 13 to 18: for every check, a case that must be found and a
//! healthy neighbour that must not be; a primary with a streaming standby; a role with only
//! pg_monitor; a node that is down.

mod common;

use std::time::Duration;

use common::{TestDb, for_each_version};
use pgplan::audit::snapshot::NodeSnapshot;
use pgplan::audit::{
    AuditOptions, AuditReport, Check, Finding, NodeResult, Role, Scope, Severity, audit,
};
use pgplan::db::cluster::Cluster;

/// Reads one node the way `pgplan audit` does: one read-only transaction with local timeouts.
async fn read_node(config: &tokio_postgres::Config, scope: &Scope) -> Result<NodeSnapshot, String> {
    let (client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| pgplan::db::error::describe(&e))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
        .batch_execute(
            "BEGIN READ ONLY; SET LOCAL statement_timeout = '60s'; SET LOCAL lock_timeout = '5s'",
        )
        .await
        .map_err(|e| pgplan::db::error::describe(&e))?;
    let facts = pgplan::db::facts::read_facts(&client).await?;
    let snapshot = pgplan::db::catalog::read_snapshot(&client, &facts, scope)
        .await
        .map_err(|e| e.to_string())?;
    client
        .batch_execute("COMMIT")
        .await
        .map_err(|e| pgplan::db::error::describe(&e))?;
    Ok(snapshot)
}

async fn node(name: &str, config: &tokio_postgres::Config) -> NodeResult {
    NodeResult {
        name: name.to_owned(),
        outcome: read_node(config, &Scope::default()).await,
    }
}

/// Audits the test database alone, with every node readable.
async fn audit_db(db: &TestDb, options: &AuditOptions) -> AuditReport {
    let nodes = vec![node("primary", &db.cluster.config(&db.name)).await];
    if let Err(e) = &nodes[0].outcome {
        panic!("PostgreSQL {}: reading the snapshot: {e}", db.major());
    }
    audit(&nodes, options)
}

/// Options that do not wait a week for counters or five minutes for old transactions.
fn quick() -> AuditOptions {
    AuditOptions {
        min_stats_age: Duration::ZERO,
        horizon_min_age: Duration::from_secs(1),
        ..Default::default()
    }
}

fn dump(report: &AuditReport) -> String {
    let mut text = String::new();
    for f in &report.findings {
        text.push_str(&format!(
            "  {} {} {} — {}\n",
            f.severity.as_str(),
            f.check.as_str(),
            f.object(),
            f.message
        ));
    }
    for s in &report.skipped {
        text.push_str(&format!("  skipped {}: {}\n", s.check.as_str(), s.reason));
    }
    text
}

/// The finding of `check` about the object named `name` (an index, or a table when the
/// finding has no index).
fn find<'a>(report: &'a AuditReport, check: Check, name: &str) -> &'a Finding {
    report
        .findings
        .iter()
        .find(|f| f.check == check && named(f, name))
        .unwrap_or_else(|| {
            panic!(
                "no {} finding for {name}; findings:\n{}",
                check.as_str(),
                dump(report)
            )
        })
}

fn named(f: &Finding, name: &str) -> bool {
    f.index.as_deref() == Some(name) || (f.index.is_none() && f.table.as_deref() == Some(name))
}

fn absent(report: &AuditReport, check: Check, name: &str) {
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.check == check && named(f, name)),
        "unexpected {} finding for {name}:\n{}",
        check.as_str(),
        dump(report)
    );
}

/// Polls until `sql` returns true (statistics reach the views asynchronously).
async fn wait_until(db: &TestDb, sql: &str) {
    for _ in 0..400 {
        if db.value(sql).await.as_deref() == Some("t") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("PostgreSQL {}: timed out waiting for: {sql}", db.major());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn indexes_unused_duplicate_redundant_and_foreign_keys() {
    for_each_version("audit_indexes", |major| async move {
        let db = TestDb::create(major, "audit_indexes").await;
        db.run(
            "CREATE TABLE customers (id int PRIMARY KEY, email text NOT NULL, region int);
             CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers,
                                  status text, note text, created date);
             CREATE TABLE items (id int PRIMARY KEY, order_id int REFERENCES orders);
             INSERT INTO customers SELECT i, 'c' || i || '@x', i % 10 FROM generate_series(1, 2000) i;
             INSERT INTO orders SELECT i, 1 + i % 2000, 'new', 'n', DATE '2024-01-01' + i % 300
               FROM generate_series(1, 5000) i;
             INSERT INTO items SELECT i, 1 + i % 5000 FROM generate_series(1, 5000) i;
             CREATE INDEX orders_customer ON orders (customer_id);
             CREATE INDEX orders_status ON orders (status);
             CREATE INDEX orders_status_again ON orders (status);
             CREATE INDEX orders_status_created ON orders (status, created);
             CREATE INDEX orders_note ON orders (note);
             CREATE INDEX orders_created_desc ON orders (created DESC);
             CREATE UNIQUE INDEX customers_email ON customers (email);
             CREATE INDEX customers_email_plain ON customers (email);
             CREATE INDEX customers_region_email ON customers (region, email);
             CREATE UNIQUE INDEX customers_region ON customers (region, id);
             ANALYZE;",
        )
        .await;
        // Use some of them.
        db.run(
            "SET enable_seqscan = off; SET enable_bitmapscan = off;
             SELECT count(*) FROM orders WHERE customer_id = 7;
             SELECT id FROM orders ORDER BY created DESC LIMIT 5;",
        )
        .await;
        wait_until(
            &db,
            "SELECT idx_scan > 0 FROM pg_stat_user_indexes WHERE indexrelname = 'orders_created_desc'",
        )
        .await;

        // A fresh server has counted for less than the default week: unused is only info.
        let report = audit_db(&db, &AuditOptions::default()).await;
        let note = find(&report, Check::UnusedIndex, "orders_note");
        assert_eq!(note.severity, Severity::Info, "{}", note.message);
        assert!(note.message.contains("minimum statistics age"), "{}", note.message);

        let report = audit_db(&db, &quick()).await;
        let note = find(&report, Check::UnusedIndex, "orders_note");
        assert_eq!(note.severity, Severity::Warning, "{}", note.message);
        assert_eq!(
            note.fix.as_deref(),
            Some("DROP INDEX CONCURRENTLY public.orders_note;")
        );
        assert_eq!(note.evidence_value("index_scans"), Some(0.0));
        assert!(note.evidence_value("index_size_bytes").unwrap() >= 8192.0);
        assert_eq!(note.evidence_value("table_index_writes"), Some(5000.0));
        // Used, or enforcing a constraint: never unused.
        for used in ["orders_customer", "orders_created_desc", "orders_pkey", "customers_email"] {
            absent(&report, Check::UnusedIndex, used);
        }
        // items.order_id has no index: the foreign key's lookups scan items.
        let fk = find(&report, Check::MissingFkIndex, "items");
        assert_eq!(
            fk.fix.as_deref(),
            Some("CREATE INDEX CONCURRENTLY ON public.items (order_id);")
        );
        absent(&report, Check::MissingFkIndex, "orders");

        // Duplicates: keep the older (or the unique) one.
        let dup = find(&report, Check::DuplicateIndex, "orders_status_again");
        assert_eq!(dup.severity, Severity::Warning);
        assert!(dup.message.contains("keep orders_status"), "{}", dup.message);
        assert_eq!(
            dup.fix.as_deref(),
            Some("DROP INDEX CONCURRENTLY public.orders_status_again;")
        );
        absent(&report, Check::DuplicateIndex, "orders_status");
        let plain = find(&report, Check::DuplicateIndex, "customers_email_plain");
        assert!(
            plain.message.contains("keep customers_email because it backs the unique index"),
            "{}",
            plain.message
        );
        absent(&report, Check::DuplicateIndex, "customers_email");
        // Redundant: a leading prefix of another btree index; unique ones never.
        let prefix = find(&report, Check::RedundantIndex, "orders_status");
        assert!(
            prefix.message.contains("leading prefix of orders_status_created"),
            "{}",
            prefix.message
        );
        absent(&report, Check::RedundantIndex, "orders_created_desc");
        absent(&report, Check::RedundantIndex, "customers_region");
        absent(&report, Check::RedundantIndex, "orders_pkey");
        db.drop_db().await;
    })
    .await;
}
