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
    let snapshot = pgplan::db::catalog::read_snapshot(&client, &facts, scope, None)
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

/// No finding of `check` about `name`, not even as another reason of a finding about it.
fn absent(report: &AuditReport, check: Check, name: &str) {
    assert!(
        !report.findings.iter().any(
            |f| named(f, name) && (f.check == check || f.also.iter().any(|r| r.check == check))
        ),
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

/// Each of `checks` is listed as skipped, with a reason starting `reason`, and found nothing:
/// a skipped check never reads as a clean one.
fn assert_skipped(report: &AuditReport, checks: &[Check], reason: &str) {
    for &check in checks {
        assert!(
            report
                .skipped
                .iter()
                .any(|k| k.check == check && k.reason.starts_with(reason)),
            "{} not skipped:\n{}",
            check.as_str(),
            dump(report)
        );
        assert!(
            !report.findings.iter().any(|f| f.check == check),
            "{}",
            dump(report)
        );
    }
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
            "SELECT idx_scan > 0 AND (SELECT n_tup_ins = 5000 FROM pg_stat_user_tables
                                      WHERE relname = 'orders')
             FROM pg_stat_user_indexes WHERE indexrelname = 'orders_created_desc'",
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
        assert_eq!(note.evidence_value("table_inserts_and_non_hot_updates_in_window"), Some(5000.0));
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

        // Duplicates: keep the older (or the unique) one, unless that one goes too: the older
        // orders_status is a prefix of orders_status_created, so the duplicate's finding names
        // what finally stays (decided once for the group, never "keep" what another drops).
        let dup = find(&report, Check::DuplicateIndex, "orders_status_again");
        assert_eq!(dup.severity, Severity::Warning);
        assert!(
            dup.message.contains(
                "orders_status is itself covered by orders_status_created (status, created)"
            ),
            "{}",
            dup.message
        );
        assert!(!dup.message.contains("keep orders_status"), "{}", dup.message);
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
        // Redundant: a leading prefix of another btree index; unique ones never. orders_status
        // is also never scanned: one finding, unused first, redundant as its other reason.
        let both = find(&report, Check::UnusedIndex, "orders_status");
        let prefix = both
            .also
            .iter()
            .find(|r| r.check == Check::RedundantIndex)
            .unwrap_or_else(|| panic!("no redundant reason:\n{}", dump(&report)));
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unused_index_of_a_partitioned_table() {
    for_each_version("audit_partitioned_unused", |major| async move {
        let db = TestDb::create(major, "audit_partitioned_unused").await;
        db.run(
            "CREATE TABLE events (id int, kind int, note text) PARTITION BY RANGE (id);
             CREATE TABLE events_1 PARTITION OF events FOR VALUES FROM (0) TO (5000);
             CREATE TABLE events_2 PARTITION OF events FOR VALUES FROM (5000) TO (10000);
             INSERT INTO events SELECT i, i % 10, 'n' FROM generate_series(0, 9999) i;
             CREATE INDEX events_kind ON events (kind);
             CREATE INDEX events_note ON events (note);
             ANALYZE;",
        )
        .await;
        db.run(
            "SET enable_seqscan = off; SET enable_bitmapscan = off;
             SELECT count(*) FROM events WHERE id >= 5000 AND kind = 3;",
        )
        .await;
        wait_until(
            &db,
            "SELECT sum(idx_scan) > 0 FROM pg_stat_user_indexes
             WHERE indexrelid IN (SELECT relid FROM pg_partition_tree('events_kind'))",
        )
        .await;
        let report = audit_db(&db, &quick()).await;
        let note = find(&report, Check::UnusedIndex, "events_note");
        assert!(
            note.message.contains("partitioned index events_note"),
            "{}",
            note.message
        );
        assert!(note.evidence_value("index_size_bytes").unwrap() > 0.0);
        assert_eq!(
            note.fix.as_deref().and_then(|f| f.lines().last()),
            Some("DROP INDEX public.events_note;")
        );
        absent(&report, Check::UnusedIndex, "events_kind");
        // A partition's index goes only with its parent index: never reported on its own.
        assert!(
            !report.findings.iter().any(|f| f.check == Check::UnusedIndex
                && f.index
                    .as_deref()
                    .is_some_and(|i| i.starts_with("events_1") || i.starts_with("events_2"))),
            "{}",
            dump(&report)
        );
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn duplicates_keep_what_constraints_and_replication_need() {
    for_each_version("audit_dup_protected", |major| async move {
        let db = TestDb::create(major, "audit_dup_protected").await;
        // r_id_unique is the older of two identical unique indexes, which alone would keep it:
        // only protection keeps the replica identity's r_ri instead.
        db.run(
            "CREATE TABLE r (id int NOT NULL, v int, d int, n int);
             INSERT INTO r SELECT i, i, i, i FROM generate_series(1, 2000) i;
             CREATE UNIQUE INDEX r_id_unique ON r (id);
             CREATE UNIQUE INDEX r_ri ON r (id);
             ALTER TABLE r REPLICA IDENTITY USING INDEX r_ri;
             ALTER TABLE r ADD CONSTRAINT r_v_key UNIQUE (v);
             ALTER TABLE r ADD CONSTRAINT r_v_key2 UNIQUE (v);
             ALTER TABLE r ADD CONSTRAINT r_d_deferrable UNIQUE (d) DEFERRABLE;
             CREATE UNIQUE INDEX r_d_unique ON r (d);
             ANALYZE r;",
        )
        .await;
        let report = audit_db(&db, &quick()).await;
        let dup = find(&report, Check::DuplicateIndex, "r_id_unique");
        assert!(
            dup.message
                .contains("keep r_ri because it backs the replica identity"),
            "{}",
            dup.message
        );
        assert_eq!(
            dup.fix.as_deref(),
            Some("DROP INDEX CONCURRENTLY public.r_id_unique;")
        );
        absent(&report, Check::DuplicateIndex, "r_ri");
        // Two unique constraints on one column: both protected, reported with no DROP.
        let both = report
            .findings
            .iter()
            .find(|f| {
                f.check == Check::DuplicateIndex
                    && matches!(f.index.as_deref(), Some("r_v_key" | "r_v_key2"))
            })
            .unwrap_or_else(|| panic!("no protected duplicate:\n{}", dump(&report)));
        assert_eq!(both.fix, None, "{}", both.message);
        assert!(
            both.message.contains("both are protected"),
            "{}",
            both.message
        );
        // A deferrable constraint's index and an immediate one are not duplicates.
        absent(&report, Check::DuplicateIndex, "r_d_unique");
        absent(&report, Check::DuplicateIndex, "r_d_deferrable");
        if major >= 15 {
            db.run(
                "CREATE TABLE nn (a int);
                 CREATE UNIQUE INDEX nn_a ON nn (a);
                 CREATE UNIQUE INDEX nn_a_nnd ON nn (a) NULLS NOT DISTINCT;",
            )
            .await;
            let report = audit_db(&db, &quick()).await;
            absent(&report, Check::DuplicateIndex, "nn_a");
            absent(&report, Check::DuplicateIndex, "nn_a_nnd");
        }
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn invalid_indexes_and_builds_in_progress() {
    for_each_version("audit_invalid", |major| async move {
        let db = TestDb::private(major, "audit_invalid").await;
        db.run(
            "CREATE TABLE users (id int, email text);
             INSERT INTO users SELECT i, 'u' || (i % 100) FROM generate_series(1, 1000) i;
             CREATE UNIQUE INDEX users_id ON users (id);",
        )
        .await;
        // A unique build on duplicate values fails and leaves an invalid index behind.
        let client = db.client().await;
        let failed = client
            .batch_execute("CREATE UNIQUE INDEX CONCURRENTLY users_email ON users (email)")
            .await;
        assert!(failed.is_err(), "the unique build must fail on duplicates");

        // A session holding a snapshot makes CREATE INDEX CONCURRENTLY wait for it.
        let holder = db.client().await;
        holder
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM users")
            .await
            .unwrap();
        let holder_pid: i32 = holder
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        let builder = db.client().await;
        let builder_pid: i32 = builder
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        let build = tokio::spawn(async move {
            let result = builder
                .batch_execute("CREATE INDEX CONCURRENTLY users_id_email ON users (id, email)")
                .await;
            drop(builder);
            result
        });
        wait_until(
            &db,
            &format!(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_progress_create_index
                                WHERE pid = {builder_pid} AND phase LIKE 'waiting for old snapshots%')"
            ),
        )
        .await;

        let report = audit_db(&db, &quick()).await;
        let building = find(&report, Check::InvalidIndex, "users_id_email");
        assert_eq!(building.severity, Severity::Info, "{}", building.message);
        assert!(building.fix.is_none());
        assert!(
            building.message.contains("is being built (CREATE INDEX CONCURRENTLY")
                && building.message.contains(&format!("pid {holder_pid}")),
            "{}",
            building.message
        );
        let failed = find(&report, Check::InvalidIndex, "users_email");
        assert_eq!(failed.severity, Severity::Warning);
        assert_eq!(
            failed.fix.as_deref(),
            Some(
                "DROP INDEX CONCURRENTLY public.users_email;\nCREATE UNIQUE INDEX CONCURRENTLY \
                 users_email ON public.users USING btree (email);"
            )
        );
        assert!(failed.message.contains("duplicate values"), "{}", failed.message);
        absent(&report, Check::InvalidIndex, "users_id");

        // Cancelled, the build leaves an invalid index: now it is a failure to fix.
        db.run(&format!("SELECT pg_cancel_backend({builder_pid})")).await;
        assert!(build.await.unwrap().is_err(), "the build was cancelled");
        holder.batch_execute("ROLLBACK").await.unwrap();
        // The error reaches the client before the backend clears its progress row.
        wait_until(
            &db,
            &format!(
                "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_progress_create_index WHERE pid = {builder_pid})"
            ),
        )
        .await;
        let report = audit_db(&db, &quick()).await;
        let cancelled = find(&report, Check::InvalidIndex, "users_id_email");
        assert_eq!(cancelled.severity, Severity::Warning);
        assert_eq!(
            cancelled.fix.as_deref(),
            Some("REINDEX INDEX CONCURRENTLY public.users_id_email;")
        );
        drop(client);
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_invalid_partitioned_index() {
    for_each_version("audit_invalid_partitioned", |major| async move {
        let db = TestDb::create(major, "audit_invalid_partitioned").await;
        db.run(
            "CREATE TABLE pt (x int) PARTITION BY RANGE (x);
             CREATE TABLE pt_1 PARTITION OF pt FOR VALUES FROM (0) TO (10);
             CREATE TABLE pt_2 PARTITION OF pt FOR VALUES FROM (10) TO (20);
             CREATE INDEX pt_x ON ONLY pt (x);
             CREATE INDEX pt_1_x ON pt_1 (x);
             ALTER INDEX pt_x ATTACH PARTITION pt_1_x;
             CREATE INDEX pt_whole ON pt (x);",
        )
        .await;
        let report = audit_db(&db, &quick()).await;
        let f = find(&report, Check::InvalidIndex, "pt_x");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("(public.pt_2)"), "{}", f.message);
        let fix = f.fix.clone().unwrap();
        assert!(
            fix.ends_with("ALTER INDEX public.pt_x ATTACH PARTITION public.pt_2_pt_x;"),
            "{fix}"
        );
        absent(&report, Check::InvalidIndex, "pt_whole");
        // The fix, run as given, makes the index valid.
        for statement in fix.lines().filter(|l| !l.starts_with("--")) {
            db.run(statement).await;
        }
        assert_eq!(
            db.value("SELECT indisvalid FROM pg_index WHERE indexrelid = 'pt_x'::regclass")
                .await
                .as_deref(),
            Some("t")
        );
        let report = audit_db(&db, &quick()).await;
        absent(&report, Check::InvalidIndex, "pt_x");
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dead_tuples_and_the_session_holding_the_horizon() {
    for_each_version("audit_dead", |major| async move {
        let db = TestDb::private(major, "audit_dead").await;
        db.run(
            "CREATE TABLE churn (id int PRIMARY KEY, v int) WITH (autovacuum_enabled = false);
             CREATE TABLE calm (id int PRIMARY KEY, v int) WITH (autovacuum_enabled = false);
             INSERT INTO churn SELECT i, 0 FROM generate_series(1, 10000) i;
             INSERT INTO calm SELECT i, 0 FROM generate_series(1, 10000) i;
             VACUUM ANALYZE churn; VACUUM ANALYZE calm;",
        )
        .await;
        // Holds a transaction id: no row that dies after it can be removed.
        let holder = db.client().await;
        holder
            .batch_execute("BEGIN; SELECT txid_current();")
            .await
            .unwrap();
        let holder_pid: i32 = holder
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        db.run(
            "UPDATE churn SET v = v + 1; UPDATE churn SET v = v + 1;
             UPDATE calm SET v = 1 WHERE id <= 10;",
        )
        .await;
        wait_until(
            &db,
            "SELECT n_dead_tup >= 5000 FROM pg_stat_user_tables WHERE relname = 'churn'",
        )
        .await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // A transaction younger than the minimum age is not (yet) a finding.
        let young = db.client().await;
        young
            .batch_execute("BEGIN; SELECT txid_current();")
            .await
            .unwrap();
        let young_pid: i32 = young
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);

        let report = audit_db(&db, &quick()).await;
        let dead = find(&report, Check::DeadTuples, "churn");
        assert_eq!(dead.severity, Severity::Warning, "{}", dead.message);
        assert!(dead.evidence_value("dead_tuples").unwrap() >= 5000.0);
        assert_eq!(
            dead.evidence_value("autovacuum_trigger_tuples"),
            Some(2050.0)
        );
        assert!(
            dead.message.contains("autovacuum_enabled = false"),
            "{}",
            dead.message
        );
        assert!(
            dead.message.contains(&format!("session pid {holder_pid}")),
            "{}",
            dead.message
        );
        assert_eq!(
            dead.fix.as_deref(),
            Some(
                "VACUUM (VERBOSE, ANALYZE) public.churn;\nALTER TABLE public.churn RESET \
                 (autovacuum_enabled);"
            )
        );
        absent(&report, Check::DeadTuples, "calm");

        let horizon: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.check == Check::XminHorizon)
            .collect();
        let held = horizon
            .iter()
            .find(|f| {
                f.fix.as_deref() == Some(&format!("SELECT pg_terminate_backend({holder_pid});"))
            })
            .unwrap_or_else(|| panic!("no horizon finding for {holder_pid}:\n{}", dump(&report)));
        assert_eq!(held.severity, Severity::Warning);
        assert!(
            held.message.contains("idle in transaction"),
            "{}",
            held.message
        );
        assert!(held.evidence_value("transaction_age_seconds").unwrap() >= 1.0);
        assert_eq!(held.node.as_deref(), Some("primary"));
        assert!(
            !horizon
                .iter()
                .any(|f| f.message.contains(&format!("pid {young_pid} "))),
            "a transaction younger than the minimum age was reported:\n{}",
            dump(&report)
        );

        // A vacuum now cannot remove the rows; with the default thresholds the holder is too
        // young to be a finding of its own, yet the dead rows still name it.
        db.run("VACUUM churn").await;
        wait_until(
            &db,
            "SELECT vacuum_count >= 2 FROM pg_stat_user_tables WHERE relname = 'churn'",
        )
        .await;
        let report = audit_db(&db, &AuditOptions::default()).await;
        assert!(
            !report
                .findings
                .iter()
                .any(|f| f.check == Check::XminHorizon),
            "{}",
            dump(&report)
        );
        let dead = find(&report, Check::DeadTuples, "churn");
        assert!(
            dead.message.contains(&format!(
                "the oldest xmin is held by session pid {holder_pid} "
            )) && dead.message.contains("since before the last vacuum"),
            "{}",
            dead.message
        );
        assert!(dead.evidence_value("oldest_xmin_age_xids").unwrap() >= 1.0);

        holder.batch_execute("ROLLBACK").await.unwrap();
        let report = audit_db(&db, &quick()).await;
        assert!(
            !report.findings.iter().any(|f| f.check == Check::XminHorizon
                && f.message.contains(&format!("pid {holder_pid} "))),
            "{}",
            dump(&report)
        );
        drop(young);
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_running_vacuum_does_not_hold_the_horizon() {
    for_each_version("audit_vacuum_running", |major| async move {
        let db = TestDb::private(major, "audit_vacuum_running").await;
        db.run(
            "CREATE TABLE slow (id int PRIMARY KEY, v int) WITH (autovacuum_enabled = false);
             INSERT INTO slow SELECT i, 0 FROM generate_series(1, 20000) i;
             UPDATE slow SET v = 1;",
        )
        .await;
        // A lazy VACUUM slowed to a crawl: it has an xmin in pg_stat_activity, yet runs with
        // PROC_IN_VACUUM, which the horizon computation skips.
        let vacuum = db.client().await;
        let vacuum_pid: i32 = vacuum
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        vacuum
            .batch_execute("SET vacuum_cost_delay = 100; SET vacuum_cost_limit = 1;")
            .await
            .unwrap();
        let running = tokio::spawn(async move {
            let _ = vacuum.batch_execute("VACUUM slow").await;
            vacuum
        });
        wait_until(
            &db,
            &format!(
                "SELECT EXISTS (SELECT FROM pg_stat_progress_vacuum WHERE pid = {vacuum_pid})"
            ),
        )
        .await;
        wait_until(
            &db,
            &format!(
                "SELECT backend_xmin IS NOT NULL FROM pg_stat_activity WHERE pid = {vacuum_pid}"
            ),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let report = audit_db(&db, &quick()).await;
        let named = format!("pid {vacuum_pid} ");
        assert!(
            !report.findings.iter().any(|f| f.message.contains(&named)
                || f.fix
                    .as_deref()
                    .is_some_and(|x| x.contains(&vacuum_pid.to_string()))),
            "a running VACUUM was named as holding the horizon:\n{}",
            dump(&report)
        );
        db.run(&format!("SELECT pg_cancel_backend({vacuum_pid})"))
            .await;
        drop(running.await.unwrap());
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tables_pg_class_has_not_measured_toast_tables_and_counters_off() {
    for_each_version("audit_unmeasured", |major| async move {
        let db = TestDb::create(major, "audit_unmeasured").await;
        db.run(
            "CREATE TABLE bulk (id int, v text) WITH (autovacuum_enabled = false);
             INSERT INTO bulk SELECT i, 'x' FROM generate_series(1, 50000) i;
             DELETE FROM bulk WHERE id > 10000;
             CREATE TABLE docs (id int, body text)
               WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
             ALTER TABLE docs ALTER body SET STORAGE EXTERNAL;
             INSERT INTO docs SELECT i, repeat('b', 3000) FROM generate_series(1, 3000) i;
             UPDATE docs SET body = repeat('c', 3000);
             UPDATE docs SET body = repeat('d', 3000);",
        )
        .await;
        wait_until(
            &db,
            "SELECT n_dead_tup >= 40000 FROM pg_stat_user_tables WHERE relname = 'bulk'",
        )
        .await;
        wait_until(
            &db,
            "SELECT n_dead_tup >= 6000 FROM pg_stat_all_tables
             WHERE relid = (SELECT reltoastrelid FROM pg_class WHERE relname = 'docs')",
        )
        .await;
        let toast_name = db
            .value(
                "SELECT t.relname FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid
                 WHERE c.relname = 'docs'",
            )
            .await
            .unwrap();
        assert_eq!(
            db.value("SELECT relpages FROM pg_class WHERE relname = 'bulk'")
                .await
                .as_deref(),
            Some("0")
        );

        // Never vacuumed or analyzed: pg_class says 0 pages, yet --min-size must not hide it.
        let options = AuditOptions {
            min_size_bytes: 1 << 20,
            ..quick()
        };
        let report = audit_db(&db, &options).await;
        let bulk = find(&report, Check::DeadTuples, "bulk");
        assert_eq!(bulk.evidence_value("dead_tuples"), Some(40000.0));
        assert!(
            bulk.message.contains("autovacuum is disabled on the table"),
            "{}",
            bulk.message
        );
        assert!(bulk.evidence_value("inserts_since_vacuum").unwrap() >= 50000.0);

        // The TOAST table's dead rows, on the TOAST table, naming its owner.
        let toast = find(&report, Check::DeadTuples, &toast_name);
        assert_eq!(toast.schema.as_deref(), Some("pg_toast"));
        assert!(
            toast
                .message
                .contains(&format!("TOAST table pg_toast.{toast_name} of public.docs")),
            "{}",
            toast.message
        );
        assert!(
            toast
                .fix
                .as_deref()
                .unwrap()
                .ends_with("ALTER TABLE public.docs RESET (toast.autovacuum_enabled);"),
            "{:?}",
            toast.fix
        );

        // track_counts off: the counter checks say so instead of reporting nothing.
        db.run(&format!(
            "ALTER DATABASE {} SET track_counts = off",
            db.name
        ))
        .await;
        let report = audit_db(&db, &quick()).await;
        assert_skipped(
            &report,
            &[
                Check::UnusedIndex,
                Check::DeadTuples,
                Check::StaleStatistics,
                Check::VisibilityMap,
            ],
            "track_counts is off",
        );
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prepared_transactions_hold_the_horizon_until_finished() {
    for_each_version("audit_prepared", |major| async move {
        let db = TestDb::private(major, "audit_prepared").await;
        let gid = format!("pgplan_{}", db.name);
        db.run("CREATE TABLE p (id int)").await;
        db.run(&format!(
            "BEGIN; INSERT INTO p VALUES (1); PREPARE TRANSACTION '{gid}';"
        ))
        .await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let report = audit_db(&db, &quick()).await;
        let fix = format!("-- in database {}\nROLLBACK PREPARED '{gid}';", db.name);
        let held = report
            .findings
            .iter()
            .find(|f| f.check == Check::XminHorizon && f.fix.as_deref() == Some(fix.as_str()))
            .unwrap_or_else(|| panic!("no prepared transaction finding:\n{}", dump(&report)));
        assert_eq!(held.severity, Severity::Warning);
        assert!(
            held.message.contains("prepared transaction"),
            "{}",
            held.message
        );
        assert!(held.evidence_value("prepared_age_seconds").unwrap() >= 1.0);

        db.run(&format!("ROLLBACK PREPARED '{gid}'")).await;
        let report = audit_db(&db, &quick()).await;
        assert!(
            !report
                .findings
                .iter()
                .any(|f| f.check == Check::XminHorizon),
            "{}",
            dump(&report)
        );
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stale_statistics_after_a_bulk_load() {
    for_each_version("audit_stale", |major| async move {
        let db = TestDb::create(major, "audit_stale").await;
        db.run(
            "CREATE TABLE loaded (id int, v text) WITH (autovacuum_enabled = false);
             CREATE TABLE settled (id int, v text) WITH (autovacuum_enabled = false);
             CREATE TABLE never (id int, v text) WITH (autovacuum_enabled = false);
             INSERT INTO loaded SELECT i, 'x' FROM generate_series(1, 1000) i;
             INSERT INTO settled SELECT i, 'x' FROM generate_series(1, 101000) i;
             INSERT INTO never SELECT i, 'x' FROM generate_series(1, 5000) i;",
        )
        .await;
        // The inserting session's counters must arrive before ANALYZE resets them.
        wait_until(
            &db,
            "SELECT bool_and(n_mod_since_analyze > 0) FROM pg_stat_user_tables
             WHERE relname IN ('loaded', 'settled', 'never')",
        )
        .await;
        db.run("ANALYZE loaded; ANALYZE settled;").await;
        wait_until(
            &db,
            "SELECT bool_and(n_mod_since_analyze = 0 AND last_analyze IS NOT NULL)
             FROM pg_stat_user_tables WHERE relname IN ('loaded', 'settled')",
        )
        .await;
        db.run("INSERT INTO loaded SELECT i, 'x' FROM generate_series(1, 100000) i")
            .await;
        wait_until(
            &db,
            "SELECT n_mod_since_analyze >= 100000 FROM pg_stat_user_tables WHERE relname = 'loaded'",
        )
        .await;

        let report = audit_db(&db, &quick()).await;
        let stale = find(&report, Check::StaleStatistics, "loaded");
        assert_eq!(stale.severity, Severity::Warning, "{}", stale.message);
        assert_eq!(stale.evidence_value("rows_modified_since_analyze"), Some(100000.0));
        assert_eq!(stale.evidence_value("autoanalyze_trigger_rows"), Some(150.0));
        assert_eq!(stale.evidence_value("reltuples"), Some(1000.0));
        assert!(stale.message.contains("far from the live rows"), "{}", stale.message);
        assert_eq!(
            stale.fix.as_deref(),
            Some("ANALYZE public.loaded;\nALTER TABLE public.loaded RESET (autovacuum_enabled);")
        );
        let never = find(&report, Check::StaleStatistics, "never");
        assert_eq!(never.severity, Severity::Warning, "{}", never.message);
        assert!(never.message.contains("no ANALYZE recorded"), "{}", never.message);
        absent(&report, Check::StaleStatistics, "settled");

        // What pg_restore leaves: CREATE INDEX set reltuples, nothing was analyzed, and no
        // statistics reset explains it.
        db.run(
            "CREATE TABLE restored (id int) WITH (autovacuum_enabled = false);
             INSERT INTO restored SELECT i FROM generate_series(1, 5000) i;
             CREATE INDEX restored_id ON restored (id);
             CREATE TABLE pt (id int, v int) PARTITION BY RANGE (id);
             CREATE TABLE pt_1 PARTITION OF pt FOR VALUES FROM (0) TO (100000);
             CREATE TABLE pt_analyzed (id int, v int) PARTITION BY RANGE (id);
             CREATE TABLE pt_analyzed_1 PARTITION OF pt_analyzed FOR VALUES FROM (0) TO (100000);
             INSERT INTO pt SELECT i, i FROM generate_series(1, 5000) i;
             INSERT INTO pt_analyzed SELECT i, i FROM generate_series(1, 5000) i;",
        )
        .await;
        wait_until(
            &db,
            "SELECT n_tup_ins = 5000 FROM pg_stat_user_tables WHERE relname = 'pt_1'",
        )
        .await;
        db.run("ANALYZE pt_1; ANALYZE pt_analyzed;").await;
        wait_until(
            &db,
            "SELECT n_mod_since_analyze >= 5000 FROM pg_stat_user_tables WHERE relname = 'restored'",
        )
        .await;
        wait_until(
            &db,
            "SELECT n_live_tup > 0 AND last_analyze IS NOT NULL FROM pg_stat_user_tables
             WHERE relname = 'pt_1'",
        )
        .await;
        let report = audit_db(&db, &quick()).await;
        let restored = find(&report, Check::StaleStatistics, "restored");
        assert_eq!(restored.severity, Severity::Warning, "{}", restored.message);
        assert!(restored.message.contains("it was never analyzed"), "{}", restored.message);
        // Autovacuum never analyzes a partitioned table itself.
        let pt = find(&report, Check::StaleStatistics, "pt");
        assert_eq!(pt.severity, Severity::Info, "{}", pt.message);
        assert!(pt.fix.as_deref().unwrap().contains("ANALYZE "), "{:?}", pt.fix);
        absent(&report, Check::StaleStatistics, "pt_analyzed");
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn index_only_scans_on_a_table_the_visibility_map_does_not_cover() {
    for_each_version("audit_vm", |major| async move {
        let db = TestDb::create(major, "audit_vm").await;
        db.run(
            "CREATE TABLE vm_cold (id int, v int) WITH (autovacuum_enabled = false);
             CREATE TABLE vm_warm (id int, v int) WITH (autovacuum_enabled = false);
             INSERT INTO vm_cold SELECT i, i FROM generate_series(1, 250000) i;
             INSERT INTO vm_warm SELECT i, i FROM generate_series(1, 250000) i;
             CREATE INDEX vm_cold_id ON vm_cold (id) INCLUDE (v);
             CREATE INDEX vm_warm_id ON vm_warm (id) INCLUDE (v);
             ANALYZE vm_cold;
             VACUUM ANALYZE vm_warm;",
        )
        .await;
        db.run(
            "SET enable_seqscan = off; SET enable_bitmapscan = off;
             SELECT sum(v) FROM vm_cold WHERE id < 1000;
             SELECT sum(v) FROM vm_warm WHERE id < 1000;",
        )
        .await;
        wait_until(
            &db,
            "SELECT bool_and(idx_scan > 0) FROM pg_stat_user_indexes
             WHERE indexrelname IN ('vm_cold_id', 'vm_warm_id')",
        )
        .await;
        let report = audit_db(&db, &quick()).await;
        let cold = find(&report, Check::VisibilityMap, "vm_cold");
        assert_eq!(cold.severity, Severity::Warning);
        assert!(cold.evidence_value("table_pages").unwrap() >= 1000.0);
        assert_eq!(cold.evidence_value("all_visible_pages"), Some(0.0));
        assert!(
            cold.message.contains("covering index(es) vm_cold_id"),
            "{}",
            cold.message
        );
        assert!(
            cold.fix
                .as_deref()
                .unwrap()
                .starts_with("VACUUM (VERBOSE) public.vm_cold;")
        );
        absent(&report, Check::VisibilityMap, "vm_warm");
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bloated_tables_and_indexes_are_estimated() {
    for_each_version("audit_bloat", |major| async move {
        let db = TestDb::create(major, "audit_bloat").await;
        db.run(
            "CREATE TABLE bloated (id int, code text, pad text) WITH (autovacuum_enabled = false);
             INSERT INTO bloated SELECT i, md5(i::text), repeat('x', 100)
               FROM generate_series(1, 300000) i;
             CREATE INDEX bloated_code ON bloated (code);
             DELETE FROM bloated WHERE id % 10 <> 0;",
        )
        .await;
        // The deleting session's counters must arrive before ANALYZE resets them, or they
        // count as modifications since the analyze (and lower the estimate's confidence).
        wait_until(
            &db,
            "SELECT n_mod_since_analyze >= 570000 FROM pg_stat_user_tables WHERE relname = 'bloated'",
        )
        .await;
        db.run(
            "VACUUM ANALYZE bloated;
             CREATE TABLE lean (id int, code text, pad text) WITH (autovacuum_enabled = false);
             INSERT INTO lean SELECT i, md5(i::text), repeat('x', 100)
               FROM generate_series(1, 100000) i;
             CREATE INDEX lean_code ON lean (code);
             VACUUM ANALYZE lean;
             SET enable_seqscan = off; SET enable_bitmapscan = off;
             SELECT count(*) FROM bloated WHERE code = 'x';
             SELECT count(*) FROM lean WHERE code = 'x';",
        )
        .await;
        // Both indexes are in use: bloat is their one finding (an unused one would be that,
        // with its bloat as another reason).
        wait_until(
            &db,
            "SELECT bool_and(idx_scan > 0) FROM pg_stat_user_indexes \
             WHERE indexrelname IN ('bloated_code', 'lean_code')",
        )
        .await;
        let report = audit_db(&db, &quick()).await;
        let index = find(&report, Check::IndexBloat, "bloated_code");
        assert_eq!(index.severity, Severity::Warning, "{}", index.message);
        assert!(index.evidence_value("estimated_bloat_percent").unwrap() > 70.0);
        assert!(index.evidence_value("estimated_bloat_bytes").unwrap() > 10.0 * 1048576.0);
        assert_eq!(index.confidence.as_ref().unwrap().level, "high");
        assert_eq!(
            index.fix.as_deref(),
            Some("REINDEX INDEX CONCURRENTLY public.bloated_code;")
        );
        let table = find(&report, Check::TableBloat, "bloated");
        assert_eq!(table.severity, Severity::Warning, "{}", table.message);
        assert!(table.evidence_value("estimated_bloat_percent").unwrap() > 70.0);
        assert!(
            table
                .fix
                .as_deref()
                .unwrap()
                .ends_with("VACUUM (FULL, ANALYZE, VERBOSE) public.bloated;")
        );
        absent(&report, Check::IndexBloat, "lean_code");
        absent(&report, Check::TableBloat, "lean");
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_table_past_its_freeze_limit() {
    for_each_version("audit_wraparound", |major| async move {
        let db = TestDb::create(major, "audit_wraparound").await;
        db.run(
            "CREATE TABLE freeze_soon (id int)
               WITH (autovacuum_freeze_max_age = 100000, autovacuum_enabled = false);
             CREATE TABLE freeze_later (id int) WITH (autovacuum_enabled = false);
             INSERT INTO freeze_soon VALUES (1); INSERT INTO freeze_later VALUES (1);
             SET synchronous_commit = off;
             DO $$ BEGIN FOR i IN 1..130000 LOOP PERFORM txid_current(); COMMIT; END LOOP; END $$;",
        )
        .await;
        let report = audit_db(&db, &quick()).await;
        let old = find(&report, Check::XidWraparound, "freeze_soon");
        assert_eq!(old.severity, Severity::Warning, "{}", old.message);
        assert!(old.evidence_value("xid_age").unwrap() >= 130000.0);
        assert_eq!(old.evidence_value("freeze_max_age"), Some(100000.0));
        assert_eq!(
            old.fix.as_deref(),
            Some("VACUUM (FREEZE, VERBOSE) public.freeze_soon;")
        );
        absent(&report, Check::XidWraparound, "freeze_later");
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_inactive_replication_slot() {
    for_each_version("audit_slot", |major| async move {
        let cluster = Cluster::start(common::default_options(common::binaries(major)))
            .expect("server starts");
        cluster
            .execute(
                "postgres",
                "SELECT pg_create_physical_replication_slot('pgplan_gone', true);
                 CREATE TABLE wal_maker AS SELECT i FROM generate_series(1, 10000) i;",
            )
            .await
            .unwrap();
        let session = cluster.connect("postgres").await.unwrap();
        session
            .batch_execute(
                "SELECT pg_create_physical_replication_slot('pgplan_temporary', true, true)",
            )
            .await
            .unwrap();
        let report = audit(
            &[node("primary", &cluster.config("postgres")).await],
            &quick(),
        );
        let slots: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.check == Check::ReplicationSlot)
            .collect();
        assert_eq!(slots.len(), 1, "{}", dump(&report));
        assert_eq!(slots[0].severity, Severity::Warning);
        assert_eq!(
            slots[0].fix.as_deref(),
            Some("SELECT pg_drop_replication_slot('pgplan_gone');")
        );
        assert!(slots[0].evidence_value("retained_wal_bytes").unwrap() > 0.0);
        assert_eq!(slots[0].node.as_deref(), Some("primary"));
        drop(session);
    })
    .await;
}

/// Waits until `sql` returns true on `cluster` (a standby replays and counts asynchronously).
async fn wait_on(cluster: &Cluster, sql: &str) {
    for _ in 0..400 {
        if let Ok(client) = cluster.connect("postgres").await
            && let Ok(row) = client.query_one(sql, &[]).await
            && row.get::<_, Option<bool>>(0) == Some(true)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for: {sql}\n{}", cluster.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_primary_and_its_standby() {
    for_each_version("audit_standby", |major| async move {
        // The standby copies the primary's configuration, so it sends hot_standby_feedback.
        let primary = Cluster::start(
            common::default_options(common::binaries(major)).setting("hot_standby_feedback", "on"),
        )
        .expect("primary starts");
        primary
            .execute(
                "postgres",
                "CREATE TABLE t (id int PRIMARY KEY, v int, w int);
                 INSERT INTO t SELECT i, i % 1000, i FROM generate_series(1, 20000) i;
                 CREATE INDEX t_v ON t (v);
                 CREATE INDEX t_w ON t (w);
                 CREATE INDEX t_w_again ON t (w);
                 ANALYZE t;",
            )
            .await
            .unwrap();
        let standby = primary
            .start_standby()
            .await
            .unwrap_or_else(|e| panic!("standby: {e}\n{}", primary.log()));
        wait_on(
            &primary,
            "SELECT count(*) = 1 FROM pg_stat_replication WHERE state = 'streaming'",
        )
        .await;
        // Read traffic on the standby uses t_v; the primary never does.
        let reader = standby.connect("postgres").await.unwrap();
        reader
            .batch_execute(
                "SET enable_seqscan = off; SET enable_bitmapscan = off;
                 SELECT count(*) FROM t WHERE v = 5;",
            )
            .await
            .unwrap();
        drop(reader);
        wait_on(
            &standby,
            "SELECT idx_scan > 0 FROM pg_stat_user_indexes WHERE indexrelname = 't_v'",
        )
        .await;
        let p = node("host=primary", &primary.config("postgres")).await;
        let s = node("host=standby", &standby.config("postgres")).await;
        assert!(p.outcome.is_ok() && s.outcome.is_ok());

        // Both nodes: the standby's scans count, t_w is unused on both.
        let both = audit(&[p.clone(), s.clone()], &quick());
        assert_eq!(both.nodes[0].role, Some(Role::Primary));
        assert_eq!(both.nodes[1].role, Some(Role::Standby));
        assert!(both.notes.is_empty(), "{:?}", both.notes);
        absent(&both, Check::UnusedIndex, "t_v");
        let unused = find(&both, Check::UnusedIndex, "t_w");
        assert_eq!(unused.evidence_value("standbys_not_audited"), Some(0.0));
        assert_eq!(unused.usage.len(), 2);
        assert_eq!(&*unused.usage[1].node, "host=standby");
        assert_eq!(unused.usage[1].index_scans, Some(0));
        let v_usage = both
            .objects
            .indexes
            .iter()
            .find(|i| i.index == "t_v")
            .unwrap();
        assert!(v_usage.scans[1].1.unwrap() > 0, "{v_usage:?}");

        // The primary alone: t_v looks unused, and the report says the standby was not seen.
        let alone = audit(std::slice::from_ref(&p), &quick());
        let v = find(&alone, Check::UnusedIndex, "t_v");
        assert_eq!(v.severity, Severity::Warning);
        assert!(v.message.contains("were not audited"), "{}", v.message);
        assert_eq!(v.evidence_value("standbys_not_audited"), Some(1.0));
        assert!(
            alone.notes.iter().any(|n| n.contains("not audited")),
            "{:?}",
            alone.notes
        );

        // The standby alone: catalog checks run, table-statistics checks say why they did not.
        let standby_only = audit(std::slice::from_ref(&s), &quick());
        assert_eq!(standby_only.nodes[0].role, Some(Role::Standby));
        let dup = find(&standby_only, Check::DuplicateIndex, "t_w_again");
        assert_eq!(dup.severity, Severity::Warning);
        assert_skipped(
            &standby_only,
            &[
                Check::DeadTuples,
                Check::StaleStatistics,
                Check::UnusedIndex,
                Check::XminHorizon,
                Check::ReplicationSlot,
            ],
            "standby:",
        );
        let mut text = Vec::new();
        pgplan::report::audit::write_audit_text(
            &mut text,
            &standby_only,
            &pgplan::report::TextOptions::default(),
        )
        .unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains(&format!("host=standby · standby · PostgreSQL {major}.")),
            "{text}"
        );
        assert!(text.contains("dead_tuples: standby:"), "{text}");

        // A long snapshot on the standby holds the primary's horizon through its feedback.
        let holder = standby.connect("postgres").await.unwrap();
        holder
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM t;")
            .await
            .unwrap();
        let holder_pid: i32 = holder
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        wait_on(
            &primary,
            "SELECT bool_and(backend_xmin IS NOT NULL) FROM pg_stat_replication",
        )
        .await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let nodes = [
            node("host=primary", &primary.config("postgres")).await,
            node("host=standby", &standby.config("postgres")).await,
        ];
        let held = audit(&nodes, &quick());
        let feedback = held
            .findings
            .iter()
            .find(|f| f.check == Check::XminHorizon && f.node.as_deref() == Some("host=standby"))
            .unwrap_or_else(|| panic!("no feedback finding:\n{}", dump(&held)));
        assert_eq!(feedback.severity, Severity::Warning);
        assert!(
            feedback
                .message
                .contains(&format!("session pid {holder_pid} "))
                && feedback.message.contains("through hot_standby_feedback"),
            "{}",
            feedback.message
        );
        assert_eq!(
            feedback.fix.as_deref(),
            Some(
                format!("-- on standby host=standby\nSELECT pg_terminate_backend({holder_pid});")
                    .as_str()
            )
        );
        drop(holder);
        drop(standby);
        drop(primary);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_role_with_only_pg_monitor() {
    for_each_version("audit_monitor", |major| async move {
        let db = TestDb::create(major, "audit_monitor").await;
        let role = format!("mon_{}", db.name);
        db.run(&format!(
            "CREATE ROLE {role} LOGIN; GRANT pg_monitor TO {role};
             CREATE TABLE t (id int PRIMARY KEY, v text);
             INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 5000) i;
             CREATE INDEX t_v ON t (v);
             ANALYZE t;"
        ))
        .await;
        let client = db.client().await;
        assert!(
            client
                .batch_execute("CREATE UNIQUE INDEX CONCURRENTLY t_v_unique ON t ((1))")
                .await
                .is_err()
        );
        // Another role's session holding the horizon must still be visible.
        let holder = db.client().await;
        holder
            .batch_execute("BEGIN; SELECT txid_current();")
            .await
            .unwrap();
        let holder_pid: i32 = holder
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        tokio::time::sleep(Duration::from_millis(1500)).await;

        let mut config = db.cluster.config(&db.name);
        config.user(&role);
        let snapshot = read_node(&config, &Scope::default())
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL {major} as {role}: {e}"));
        assert!(!snapshot.server.superuser);
        assert!(snapshot.server.pg_monitor);
        assert!(snapshot.server.system_identifier.is_some());
        assert!(
            snapshot
                .privileges_missing
                .iter()
                .any(|g| g.check == "table_bloat, index_bloat" && g.lost.contains("pg_stats")),
            "{:?}",
            snapshot.privileges_missing
        );
        let report = audit(
            &[NodeResult {
                name: format!("user={role}"),
                outcome: Ok(snapshot),
            }],
            &quick(),
        );
        let unused = find(&report, Check::UnusedIndex, "t_v");
        assert_eq!(
            unused.fix.as_deref(),
            Some("DROP INDEX CONCURRENTLY public.t_v;")
        );
        let invalid = find(&report, Check::InvalidIndex, "t_v_unique");
        assert_eq!(invalid.severity, Severity::Warning);
        assert!(
            report.findings.iter().any(|f| f.check == Check::XminHorizon
                && f.fix.as_deref()
                    == Some(&format!("SELECT pg_terminate_backend({holder_pid});"))),
            "{}",
            dump(&report)
        );
        assert!(!report.nodes[0].privileges_missing.is_empty());
        holder.batch_execute("ROLLBACK").await.unwrap();
        drop(holder);
        drop(client);
        db.drop_db().await;
        db_cluster_drop_role(major, &role).await;
    })
    .await;
}

/// The statistics a role that cannot read pg_statistic gets are what pg_stats shows it: for the
/// tables it may read (a PUBLIC grant, its own, a column grant, a table its group owns;
/// everything through pg_read_all_data on 14+), none for the rest; both when few tables are
/// readable (each looked up on its own) and when more than 1,000 are (pg_stats joined whole).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_role_reads_the_statistics_pg_stats_shows_it() {
    for_each_version("audit_stats_roles", |major| async move {
        let db = TestDb::create(major, "audit_stats_roles").await;
        let n = &db.name;
        let (reader, group, everything) =
            (format!("rd_{n}"), format!("grp_{n}"), format!("all_{n}"));
        let mut setup = format!(
            "CREATE ROLE {reader} LOGIN; CREATE ROLE {group}; GRANT {group} TO {reader};
             CREATE TABLE t_public (id int, v text); GRANT SELECT ON t_public TO PUBLIC;
             CREATE TABLE t_granted (id int, v text); GRANT SELECT ON t_granted TO {reader};
             CREATE TABLE t_column (id int, v text, w text);
             GRANT SELECT (v) ON t_column TO {reader};
             CREATE TABLE t_owned (id int, v text); ALTER TABLE t_owned OWNER TO {group};
             CREATE TABLE t_hidden (id int, v text);"
        );
        for table in ["t_public", "t_granted", "t_owned", "t_hidden"] {
            setup.push_str(&format!(
                "INSERT INTO {table} SELECT i, 'v' || (i % 7) FROM generate_series(1, 500) i;"
            ));
        }
        setup.push_str(
            "INSERT INTO t_column SELECT i, 'v' || (i % 7), NULL FROM generate_series(1, 500) i;
             ANALYZE;",
        );
        if major >= 14 {
            setup.push_str(&format!(
                "CREATE ROLE {everything} LOGIN IN ROLE pg_read_all_data;"
            ));
        }
        db.run(&setup).await;
        let roles: Vec<&str> = if major >= 14 {
            vec![reader.as_str(), everything.as_str()]
        } else {
            vec![reader.as_str()]
        };

        // (table, column) → null_frac, avg_width, n_distinct, as the snapshot has them and as
        // pg_stats shows the same role.
        type Stats = std::collections::BTreeMap<(String, String), (f64, f64, f64)>;
        let compare = async |role: &str| -> Stats {
            let mut config = db.cluster.config(&db.name);
            config.user(role);
            let snapshot = read_node(&config, &Scope::default())
                .await
                .unwrap_or_else(|e| panic!("PostgreSQL {major} as {role}: {e}"));
            assert!(!snapshot.server.superuser);
            let table_names: std::collections::HashMap<u32, &str> = snapshot
                .tables
                .iter()
                .map(|t| (t.oid, t.name.as_str()))
                .collect();
            let read: Stats = snapshot
                .columns
                .iter()
                .filter_map(|c| {
                    Some((
                        (table_names[&c.table_oid].to_string(), c.name.clone()),
                        (c.null_frac?, c.avg_width?, c.n_distinct?),
                    ))
                })
                .collect();
            let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            let shown: Stats = client
                .query(
                    "SELECT tablename::text, attname::text, null_frac::float8, \
                     avg_width::float8, n_distinct::float8 \
                     FROM pg_stats WHERE schemaname = 'public' AND NOT inherited",
                    &[],
                )
                .await
                .unwrap()
                .iter()
                .map(|r| ((r.get(0), r.get(1)), (r.get(2), r.get(3), r.get(4))))
                .collect();
            assert_eq!(read, shown, "PostgreSQL {major} as {role}");
            read
        };
        let few = compare(&reader).await;
        let tables: std::collections::BTreeSet<(&str, &str)> =
            few.keys().map(|(t, c)| (t.as_str(), c.as_str())).collect();
        let expected: std::collections::BTreeSet<(&str, &str)> = [
            ("t_column", "v"),
            ("t_granted", "id"),
            ("t_granted", "v"),
            ("t_owned", "id"),
            ("t_owned", "v"),
            ("t_public", "id"),
            ("t_public", "v"),
        ]
        .into();
        assert_eq!(tables, expected, "PostgreSQL {major}");
        if major >= 14 {
            assert_eq!(compare(&everything).await.len(), 11, "PostgreSQL {major}");
        }

        // More than 1,000 readable tables: pg_stats is joined whole, and agrees just the same.
        db.run(
            "DO $$
             BEGIN
               FOR i IN 1..1001 LOOP
                 EXECUTE format('CREATE TABLE m%s (id int)', i);
                 EXECUTE format('INSERT INTO m%s VALUES (1), (2)', i);
                 EXECUTE format('GRANT SELECT ON m%s TO PUBLIC', i);
               END LOOP;
             END $$;
             ANALYZE;",
        )
        .await;
        for role in &roles {
            let many = compare(role).await;
            assert!(many.len() > 1001, "PostgreSQL {major} as {role}");
        }
        assert!(
            compare(&reader).await.keys().all(|(t, _)| t != "t_hidden"),
            "PostgreSQL {major}"
        );
        db.drop_db().await;
        for role in [&reader, &group, &everything] {
            db_cluster_drop_role(major, role).await;
        }
    })
    .await;
}

async fn db_cluster_drop_role(major: u32, role: &str) {
    common::server(major)
        .execute("postgres", &format!("DROP ROLE IF EXISTS {role}"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_that_is_down_makes_the_audit_partial() {
    for_each_version("audit_down", |major| async move {
        let db = TestDb::create(major, "audit_down").await;
        db.run(
            "CREATE TABLE t (id int, v int);
             INSERT INTO t SELECT i, i FROM generate_series(1, 1000) i;
             CREATE INDEX t_v ON t (v);",
        )
        .await;
        let mut down = Cluster::start(common::default_options(common::binaries(major)))
            .expect("server starts");
        let down_config = down.config("postgres");
        down.stop();
        let nodes = vec![
            node("host=up", &db.cluster.config(&db.name)).await,
            node("host=down", &down_config).await,
        ];
        assert!(nodes[1].outcome.is_err());
        let report = audit(&nodes, &quick());
        assert_eq!(report.exit_code(Severity::Warning), pgplan::exit::PARTIAL);
        assert_eq!(report.exit_code(Severity::Critical), pgplan::exit::PARTIAL);
        assert_eq!(report.nodes[0].role, Some(Role::Primary));
        assert!(report.nodes[0].error.is_none());
        let error = report.nodes[1].error.as_deref().unwrap();
        assert!(!error.is_empty());
        assert_eq!(report.nodes[1].role, None);
        // The reachable node's results still come out; an index unused on it may be used on
        // the node that is down, so it is only info, naming that node, with no DROP to run.
        let unused = find(&report, Check::UnusedIndex, "t_v");
        assert_eq!(unused.severity, Severity::Info, "{}", unused.message);
        assert!(
            unused.message.contains("host=down could not be read"),
            "{}",
            unused.message
        );
        let fix = unused.fix.as_deref().unwrap();
        assert!(
            fix.lines()
                .all(|l| l.starts_with("--") || !l.contains("DROP")),
            "{fix}"
        );
        let doc = serde_json::to_value(pgplan::report::wire_audit::audit_doc(&report)).unwrap();
        assert_eq!(doc["nodes"][1]["name"], "host=down");
        assert!(doc["nodes"][1]["error"].is_string());
        assert_eq!(doc["summary"]["nodes_failed"], 1);
        db.drop_db().await;
    })
    .await;
}
