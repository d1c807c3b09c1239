//! `pgplan audit`'s session and lock checks on real servers, 13 to 18: each situation staged
//! with real sessions (an idle session keeping an advisory lock, a transaction left idle holding
//! locks, an ALTER TABLE queued behind a reader with readers queued behind it, a prepared
//! transaction left unfinished, connections near the limit), and the finding checked for the
//! right pids and counts. The audit itself never waits on these locks and never ends a session:
//! every staged session is still there, in the same state, after it.

mod common;

use std::time::Duration;

use common::{TestDb, binaries, default_options, for_each_version};
use pgplan::audit::snapshot::NodeSnapshot;
use pgplan::audit::{
    AuditOptions, AuditReport, Check, Finding, NodeResult, Scope, Severity, audit,
};
use pgplan::db::cluster::Cluster;

/// Reads one node the way `pgplan audit` does: one read-only transaction with local timeouts.
async fn read_node(config: &tokio_postgres::Config) -> Result<NodeSnapshot, String> {
    let (client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| pgplan::db::error::describe(&e))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
        .batch_execute(
            "BEGIN READ ONLY; SET LOCAL statement_timeout = '60s'; SET LOCAL lock_timeout = '2s'",
        )
        .await
        .map_err(|e| pgplan::db::error::describe(&e))?;
    let facts = pgplan::db::facts::read_facts(&client).await?;
    let snapshot = pgplan::db::catalog::read_snapshot(&client, &facts, &Scope::default(), None)
        .await
        .map_err(|e| e.to_string())?;
    client
        .batch_execute("COMMIT")
        .await
        .map_err(|e| pgplan::db::error::describe(&e))?;
    Ok(snapshot)
}

/// Thresholds low enough for sessions staged a second ago.
fn quick() -> AuditOptions {
    AuditOptions {
        horizon_min_age: Duration::from_secs(1),
        idle_in_transaction_min_age: Duration::from_secs(1),
        lock_wait_min_age: Duration::ZERO,
        ..Default::default()
    }
}

async fn audit_db(db: &TestDb) -> AuditReport {
    let outcome = read_node(&db.cluster.config(&db.name)).await;
    if let Err(e) = &outcome {
        panic!("PostgreSQL {}: reading the snapshot: {e}", db.major());
    }
    audit(
        &[NodeResult {
            name: "primary".into(),
            outcome,
        }],
        &quick(),
    )
}

fn dump(report: &AuditReport) -> String {
    report
        .findings
        .iter()
        .map(|f| {
            format!(
                "  {} {} {} — {}\n",
                f.severity.as_str(),
                f.check.as_str(),
                f.object(),
                f.message
            )
        })
        .collect()
}

fn only(report: &AuditReport, check: Check) -> &Finding {
    let found: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.check == check)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {} finding expected:\n{}",
        check.as_str(),
        dump(report)
    );
    found[0]
}

fn evidence(f: &Finding, name: &str) -> f64 {
    f.evidence_value(name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", f.evidence))
}

async fn pid_of(client: &tokio_postgres::Client) -> i32 {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0)
}

/// Waits until `pid` waits for a heavyweight lock.
async fn until_waiting(db: &TestDb, pid: i32) {
    db.wait_for(
        &format!("SELECT wait_event_type FROM pg_stat_activity WHERE pid = {pid}"),
        |w| w == "Lock",
        Duration::from_secs(60),
    )
    .await
    .unwrap_or_else(|last| panic!("pid {pid} never waited for a lock (last: {last:?})"));
}

/// Waits until `pid` has been in `state` for over a second.
async fn until_state(db: &TestDb, pid: i32, state: &str) {
    db.wait_for(
        &format!(
            "SELECT state FROM pg_stat_activity WHERE pid = {pid} \
             AND now() - state_change > interval '1100 ms'"
        ),
        |s| s == state,
        Duration::from_secs(60),
    )
    .await
    .unwrap_or_else(|last| panic!("pid {pid} never was {state} (last: {last:?})"));
}

async fn state_of(db: &TestDb, pid: i32) -> Option<String> {
    db.value(&format!(
        "SELECT CASE WHEN wait_event_type = 'Lock' THEN 'Lock' ELSE state END FROM pg_stat_activity WHERE pid = {pid}"
    ))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idle_session_keeps_an_advisory_lock() {
    for_each_version("sessions_advisory", |major| async move {
        let db = TestDb::create(major, "sessions_advisory").await;
        let holder = db.client().await;
        let pid = pid_of(&holder).await;
        holder
            .batch_execute("SELECT pg_advisory_lock(42); SELECT pg_advisory_lock(1, 2)")
            .await
            .unwrap();
        until_state(&db, pid, "idle").await;
        let report = audit_db(&db).await;
        let f = only(&report, Check::AdvisoryLock);
        assert_eq!(evidence(f, "pid"), pid as f64);
        assert_eq!(evidence(f, "advisory_locks"), 2.0);
        assert_eq!(evidence(f, "pooler"), 0.0);
        assert!(evidence(f, "idle_seconds") >= 1.0);
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.contains("42") && f.message.contains("1, 2"),
            "{}",
            f.message
        );
        assert!(
            f.fix
                .as_deref()
                .unwrap()
                .contains(&format!("pg_terminate_backend({pid})"))
        );
        // Inside a transaction the lock is no leak of this kind.
        let in_transaction = db.client().await;
        in_transaction
            .batch_execute("BEGIN; SELECT pg_advisory_xact_lock(43)")
            .await
            .unwrap();
        let report = audit_db(&db).await;
        assert_eq!(
            only(&report, Check::AdvisoryLock).evidence_value("pid"),
            Some(pid as f64)
        );
        assert_eq!(state_of(&db, pid).await.as_deref(), Some("idle"));
        in_transaction.batch_execute("ROLLBACK").await.unwrap();
        holder
            .batch_execute("SELECT pg_advisory_unlock_all()")
            .await
            .unwrap();
        drop((holder, in_transaction));
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_transaction_left_idle_holding_locks() {
    for_each_version("sessions_idle_tx", |major| async move {
        let db = TestDb::create(major, "sessions_idle_tx").await;
        db.run("CREATE TABLE accounts (id int PRIMARY KEY, balance int); INSERT INTO accounts VALUES (1, 0)")
            .await;
        let idle = db.client().await;
        let pid = pid_of(&idle).await;
        idle.batch_execute("BEGIN; UPDATE accounts SET balance = 1 WHERE id = 1")
            .await
            .unwrap();
        until_state(&db, pid, "idle in transaction").await;
        // Another session waits for the row's lock (a transaction-id lock, behind pid).
        let waiter = db.client().await;
        let waiter_pid = pid_of(&waiter).await;
        let waiting = tokio::spawn(async move {
            waiter
                .batch_execute("UPDATE accounts SET balance = 2 WHERE id = 1")
                .await
                .map(|_| waiter)
        });
        until_waiting(&db, waiter_pid).await;

        let report = audit_db(&db).await;
        let f = only(&report, Check::IdleInTransaction);
        assert_eq!(evidence(f, "pid"), pid as f64);
        assert!(evidence(f, "idle_seconds") >= 1.0);
        assert_eq!(evidence(f, "blocked_sessions"), 1.0);
        assert_eq!(evidence(f, "holds_xmin_horizon"), 1.0);
        assert_eq!(f.severity, Severity::Critical);
        assert!(
            f.message.contains("RowExclusiveLock on public.accounts"),
            "{}",
            f.message
        );
        assert!(f.message.contains("see xmin_horizon"), "{}", f.message);
        assert!(
            f.message.contains("idle_in_transaction_session_timeout is off"),
            "{}",
            f.message
        );
        // The xmin check names the same session.
        assert!(
            report.findings.iter().any(|h| h.check == Check::XminHorizon
                && h.subject.as_deref() == Some(&format!("session pid {pid}"))),
            "{}",
            dump(&report)
        );
        let queue = only(&report, Check::LockQueue);
        assert_eq!(evidence(queue, "holder_pid"), pid as f64);
        assert_eq!(evidence(queue, "first_waiter_pid"), waiter_pid as f64);
        assert_eq!(evidence(queue, "waiting_sessions"), 1.0);
        assert!(
            queue.message.contains("a row the holder changed"),
            "{}",
            queue.message
        );

        // Nothing was ended or released by the audit.
        assert_eq!(state_of(&db, pid).await.as_deref(), Some("idle in transaction"));
        assert_eq!(state_of(&db, waiter_pid).await.as_deref(), Some("Lock"));
        idle.batch_execute("ROLLBACK").await.unwrap();
        let waiter = waiting.await.unwrap().unwrap();
        drop((idle, waiter));
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_alter_table_queued_behind_a_reader_with_readers_behind_it() {
    for_each_version("sessions_queue", |major| async move {
        let db = TestDb::create(major, "sessions_queue").await;
        db.run("CREATE TABLE orders (id int PRIMARY KEY); INSERT INTO orders SELECT generate_series(1, 10)")
            .await;
        let reader = db.client().await;
        let reader_pid = pid_of(&reader).await;
        reader
            .batch_execute("BEGIN; SELECT count(*) FROM orders")
            .await
            .unwrap();
        let spawn = |sql: &'static str| {
            let db_client = db.client();
            async move {
                let client = db_client.await;
                let pid = pid_of(&client).await;
                let task = tokio::spawn(async move { client.batch_execute(sql).await.map(|_| client) });
                (pid, task)
            }
        };
        let (alter_pid, alter) = spawn("ALTER TABLE orders ADD COLUMN note text").await;
        until_waiting(&db, alter_pid).await;
        let (first_pid, first) = spawn("SELECT count(*) FROM orders").await;
        let (second_pid, second) = spawn("SELECT * FROM orders WHERE id = 1").await;
        until_waiting(&db, first_pid).await;
        until_waiting(&db, second_pid).await;

        let report = audit_db(&db).await;
        let f = only(&report, Check::LockQueue);
        assert_eq!(evidence(f, "holder_pid"), reader_pid as f64);
        assert_eq!(evidence(f, "ddl_pid"), alter_pid as f64);
        assert_eq!(evidence(f, "first_waiter_pid"), alter_pid as f64);
        assert_eq!(evidence(f, "waiting_sessions"), 3.0);
        assert!(evidence(f, "longest_wait_seconds") > 0.0);
        assert_eq!(f.severity, Severity::Critical);
        assert!(
            f.message.contains("AccessExclusiveLock on public.orders"),
            "{}",
            f.message
        );
        assert!(f.message.contains("ALTER TABLE orders"), "{}", f.message);
        assert!(
            f.message.contains("2 sessions queued behind the DDL"),
            "{}",
            f.message
        );
        let fix = f.fix.as_deref().unwrap();
        assert!(fix.contains("SET lock_timeout"), "{fix}");
        assert!(fix.contains(&format!("pg_terminate_backend({reader_pid})")), "{fix}");
        // The metrics' view: three waiters.
        assert_eq!(report.sessions[0].lock_waiters, 3);

        // The audit waited for none of it and ended nothing.
        for pid in [alter_pid, first_pid, second_pid] {
            assert_eq!(state_of(&db, pid).await.as_deref(), Some("Lock"));
        }
        reader.batch_execute("ROLLBACK").await.unwrap();
        let clients = (
            alter.await.unwrap().unwrap(),
            first.await.unwrap().unwrap(),
            second.await.unwrap().unwrap(),
        );
        drop((reader, clients));
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_prepared_transaction_left_unfinished() {
    for_each_version("sessions_prepared", |major| async move {
        let db = TestDb::create(major, "sessions_prepared").await;
        let gid = format!("pgplan_{}", db.name);
        db.run("CREATE TABLE ledger (id int)").await;
        db.run(&format!(
            "BEGIN; INSERT INTO ledger VALUES (1); PREPARE TRANSACTION '{gid}';"
        ))
        .await;
        // DDL on the table waits for the prepared transaction's lock.
        let alter = db.client().await;
        let alter_pid = pid_of(&alter).await;
        let altering = tokio::spawn(async move {
            alter
                .batch_execute("ALTER TABLE ledger ADD COLUMN note text")
                .await
                .map(|_| alter)
        });
        until_waiting(&db, alter_pid).await;
        db.wait_for(
            &format!(
                "SELECT now() - prepared > interval '1100 ms' FROM pg_prepared_xacts \
                 WHERE gid = '{gid}'"
            ),
            |t| t == "t",
            Duration::from_secs(30),
        )
        .await
        .unwrap();

        let report = audit_db(&db).await;
        let f = only(&report, Check::PreparedTransaction);
        assert_eq!(
            f.fix.as_deref(),
            Some(format!("-- in database {}\nROLLBACK PREPARED '{gid}';", db.name).as_str())
        );
        assert_eq!(evidence(f, "relation_locks"), 1.0);
        assert_eq!(evidence(f, "blocked_sessions"), 1.0);
        assert_eq!(f.severity, Severity::Critical);
        assert!(
            f.message.contains("RowExclusiveLock on public.ledger"),
            "{}",
            f.message
        );
        let queue = only(&report, Check::LockQueue);
        assert_eq!(evidence(queue, "holder_pid"), 0.0);
        assert_eq!(evidence(queue, "ddl_pid"), alter_pid as f64);
        assert!(
            queue.message.starts_with("a prepared transaction"),
            "{}",
            queue.message
        );

        assert_eq!(
            db.value(&format!(
                "SELECT count(*) FROM pg_prepared_xacts WHERE gid = '{gid}'"
            ))
            .await
            .as_deref(),
            Some("1")
        );
        db.run(&format!("ROLLBACK PREPARED '{gid}'")).await;
        let alter = altering.await.unwrap().unwrap();
        drop(alter);
        let report = audit_db(&db).await;
        assert!(
            !report
                .findings
                .iter()
                .any(|f| f.check == Check::PreparedTransaction || f.check == Check::LockQueue),
            "{}",
            dump(&report)
        );
        db.drop_db().await;
    })
    .await;
}

/// A server of its own with 20 connection slots (17 for ordinary roles), so that a test's
/// sessions are all there is.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn connections_near_the_limit_and_an_idle_crowd() {
    for_each_version("sessions_pressure", |major| async move {
        let cluster =
            Cluster::start(default_options(binaries(major)).setting("max_connections", 20))
                .unwrap_or_else(|e| panic!("starting PostgreSQL {major}: {e}"));
        let cluster: &'static Cluster = Box::leak(Box::new(cluster));
        cluster
            .execute("postgres", "CREATE DATABASE crowd")
            .await
            .unwrap();
        let db = TestDb {
            cluster,
            name: "crowd".into(),
        };
        let mut crowd = Vec::new();
        for _ in 0..13 {
            let mut config = cluster.config("crowd");
            config.application_name("crowd");
            let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            client.batch_execute("SELECT 1").await.unwrap();
            crowd.push(client);
        }
        db.wait_for(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'crowd' \
             AND state = 'idle'",
            |n| n == "13",
            Duration::from_secs(30),
        )
        .await
        .unwrap();

        let report = audit_db(&db).await;
        let found: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.check == Check::ConnectionPressure)
            .collect();
        let slots = found
            .iter()
            .find(|f| f.subject.as_deref() == Some("slots"))
            .unwrap_or_else(|| panic!("no slots finding:\n{}", dump(&report)));
        assert_eq!(evidence(slots, "connection_slots"), 17.0);
        // The crowd and the audit's own session (and the test's polling sessions, which may
        // still be leaving: a backend exits after its client has moved on).
        assert!(
            evidence(slots, "client_sessions") >= 14.0,
            "{}",
            slots.message
        );
        assert!(slots.severity >= Severity::Warning);
        assert!(slots.message.contains("crowd 13"), "{}", slots.message);
        let idle = found
            .iter()
            .find(|f| f.severity == Severity::Info)
            .unwrap_or_else(|| panic!("no idle crowd finding:\n{}", dump(&report)));
        assert_eq!(evidence(idle, "idle_sessions"), 13.0);
        assert!(
            idle.message.contains("application crowd"),
            "{}",
            idle.message
        );
        assert_eq!(
            report.sessions[0].client_sessions as f64,
            evidence(slots, "client_sessions")
        );
        drop(crowd);
    })
    .await;
}

async fn wait_on(cluster: &Cluster, sql: &str) {
    for _ in 0..1200 {
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

/// A standby cancels a query whose snapshot still sees rows VACUUM removed on the primary
/// (hot_standby_feedback off, and a short max_standby_streaming_delay, which the standby copies
/// from the primary's configuration): the standby's audit reports the cancellation.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_standby_cancels_queries_for_recovery_conflicts() {
    for_each_version("sessions_conflicts", |major| async move {
        let primary = Cluster::start(
            default_options(binaries(major)).setting("max_standby_streaming_delay", "10ms"),
        )
        .expect("primary starts");
        primary
            .execute(
                "postgres",
                "CREATE TABLE t (id int PRIMARY KEY); \
                 INSERT INTO t SELECT generate_series(1, 1000)",
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
        wait_on(&standby, "SELECT count(*) = 1000 FROM t").await;
        let reader = standby.connect("postgres").await.unwrap();
        reader
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM t")
            .await
            .unwrap();
        primary.execute("postgres", "DELETE FROM t").await.unwrap();
        primary.execute("postgres", "VACUUM t").await.unwrap();
        wait_on(
            &standby,
            "SELECT confl_snapshot > 0 FROM pg_stat_database_conflicts \
             WHERE datname = current_database()",
        )
        .await;
        drop(reader);

        let nodes = vec![
            NodeResult {
                name: "host=primary".into(),
                outcome: read_node(&primary.config("postgres")).await,
            },
            NodeResult {
                name: "host=standby".into(),
                outcome: read_node(&standby.config("postgres")).await,
            },
        ];
        let report = audit(&nodes, &quick());
        let f = only(&report, Check::RecoveryConflict);
        assert_eq!(f.node.as_deref(), Some("host=standby"));
        assert!(evidence(f, "snapshot_conflicts") >= 1.0, "{:?}", f.evidence);
        assert!(evidence(f, "cancelled_queries") >= evidence(f, "snapshot_conflicts"));
        assert!(
            f.message.contains("hot_standby_feedback is off"),
            "{}",
            f.message
        );
        assert!(
            f.fix
                .as_deref()
                .unwrap()
                .contains("hot_standby_feedback = on"),
            "{:?}",
            f.fix
        );
    })
    .await;
}
