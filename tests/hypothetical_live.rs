//! `pgplan compare --hypothetical` on PostgreSQL 15 with Debian's HypoPG package: estimates only,
//! labelled as such, working on a standby, and leaving no hypothetical index, hidden index or
//! prepared statement in the backend (which a pooler would hand to the next client).

mod common;

use std::process::Command;

use common::pgplan_bin;
use pgplan::app::progress::Progress;
use pgplan::compare::{CompareRequest, Mode, RequestInput, Verdict};
use pgplan::db::cluster::{Cluster, ClusterOptions};
use pgplan::db::connect::{ConnectOptions, connect};
use pgplan::db::conninfo::{ConnRequest, Environment, resolve};
use pgplan::db::session::Limits;
use pgplan::measure::one_query::run_compare;
use serde_json::Value;

const SETUP: &str = "
CREATE TABLE events (id bigint PRIMARY KEY, tenant_id integer NOT NULL, status text NOT NULL,
                     created_at timestamptz NOT NULL);
INSERT INTO events
SELECT i, (i::bigint * 7919) % 1000,
       CASE WHEN (i::bigint * 37) % 100 < 70 THEN 'pending' ELSE 'done' END,
       timestamptz '2026-01-01 00:00:00+00' + i * interval '1 minute'
FROM generate_series(1, 50000) AS i;
CREATE INDEX events_tenant_id_idx ON events (tenant_id);
VACUUM (ANALYZE) events;
";

const QUERY: &str =
    "SELECT id FROM events WHERE status = 'pending' ORDER BY created_at DESC LIMIT 50";
const PARTIAL: &str =
    "CREATE INDEX pending_recent ON events (created_at DESC) WHERE status = 'pending'";

async fn debian_15() -> Cluster {
    let binaries = common::debian_15_with_hypopg().expect(
        "Debian's PostgreSQL 15 with HypoPG is needed (apt-get install postgresql-15 postgresql-15-hypopg; \
         scripts/test.sh installs it)",
    );
    let cluster = Cluster::start(ClusterOptions::new(binaries).setting("jit", "off")).unwrap();
    assert!(
        cluster
            .create_extension("postgres", "hypopg")
            .await
            .unwrap(),
        "the hypopg package is installed, so the extension must be created"
    );
    for statement in pgplan::sql::split_statements(SETUP).unwrap() {
        cluster.execute("postgres", &statement.text).await.unwrap();
    }
    cluster
}

fn compare(conninfo: &str, args: &[&str], query_file: &str) -> std::process::Output {
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .args(["compare", "-d", conninfo, query_file])
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hypothetical_indexes_are_estimates_and_work_on_a_standby() {
    let primary = debian_15().await;
    let standby = primary.start_standby().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let query = dir.path().join("q.sql");
    std::fs::write(&query, QUERY).unwrap();
    let query = query.to_str().unwrap();

    for (node, cluster) in [("primary", &primary), ("standby", &standby)] {
        let out = compare(
            &cluster.conninfo("postgres"),
            &[
                "--hypothetical",
                "--index",
                PARTIAL,
                "--index",
                "CREATE INDEX ON events (status)",
                "--format",
                "json",
            ],
            query,
        );
        assert!(
            out.status.success(),
            "{node}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["mode"], "hypothetical", "{node}");
        assert_eq!(doc["estimated"], true);
        assert_eq!(
            doc["baseline"]["plan"]["analyzed"], false,
            "estimates only, never mixed with measurements"
        );
        assert!(doc["baseline"]["warm"]["execution_ms"].is_null());
        let partial = doc["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["index_name"] == "pending_recent")
            .unwrap();
        assert_eq!(partial["used"], true, "{node}: {partial:#}");
        assert_eq!(partial["verdict"], "pays", "{node}");
        assert!(partial["build_ms"].is_null(), "nothing was built");
        assert!(
            partial["index_size_bytes"].as_f64().unwrap() > 0.0,
            "HypoPG's size estimate"
        );
        // HypoPG names hypothetical indexes itself: "<oid>btree_events_created_at".
        assert!(
            partial["plan_index_name"]
                .as_str()
                .unwrap()
                .contains("btree"),
            "{partial:#}"
        );
        assert_eq!(doc["best"], "pending_recent");
        // The unnamed candidate goes by its definition, not by HypoPG's oid-prefixed name.
        assert_eq!(
            doc["candidates"][1]["index_name"], "unnamed index ON events (status)",
            "{node}"
        );
        // Hiding an existing index needs HypoPG 1.4 (hypopg_hide_index); Debian 12 ships 1.3.1,
        // and pgplan says so before doing anything.
        let out = compare(
            &cluster.conninfo("postgres"),
            &["--hypothetical", "--drop-index", "events_tenant_id_idx"],
            query,
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("HypoPG 1.4"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The text says the figures are estimates.
        let out = compare(
            &cluster.conninfo("postgres"),
            &["--hypothetical", "--index", PARTIAL],
            query,
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("ESTIMATED"), "{text}");
        // Planning evaluates an IMMUTABLE function on constants, so the header claims no more
        // than that the query was not executed.
        assert!(
            text.contains("nothing was built; the query was planned, not executed"),
            "{text}"
        );
        assert!(!text.contains("nothing was built or run"), "{text}");
    }

    // Measured compare on the standby is refused, pointing at --hypothetical.
    let out = compare(&standby.conninfo("postgres"), &["--index", PARTIAL], query);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("standby") && err.contains("--hypothetical"),
        "{err}"
    );
    // --generic-plan measures nothing, and the refusal says what it does need.
    let out = compare(
        &standby.conninfo("postgres"),
        &["--generic-plan", "--index", PARTIAL],
        query,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is a standby (in recovery): --generic-plan measures nothing, but it builds (or drops) each candidate inside a rolled-back transaction to plan the query with it, which a standby cannot"),
        "{err}"
    );
    // info says what a standby cannot do for --drop-index.
    let out = Command::new(pgplan_bin())
        .args(["info", "-d", &standby.conninfo("postgres")])
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&out.stdout);
    assert!(
        info.contains("a standby cannot drop an index, even in a rolled-back transaction"),
        "{info}"
    );

    // A database without the extension: the package is on the server, so the fix is CREATE
    // EXTENSION — on the primary, when pgplan was pointed at a standby.
    primary
        .execute("postgres", "CREATE DATABASE nohypo")
        .await
        .unwrap();
    let hypothetical = ["--hypothetical", "--index", PARTIAL];
    let out = compare(&primary.conninfo("nohypo"), &hypothetical, query);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HypoPG is not created in database nohypo")
            && err.contains("hint: CREATE EXTENSION hypopg in database nohypo (its package is installed on the server)"),
        "{err}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let err = loop {
        let out = compare(&standby.conninfo("nohypo"), &hypothetical, query);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        // The new database reaches the standby with the next replayed WAL.
        if !err.contains("does not exist") || std::time::Instant::now() > deadline {
            break err;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert!(
        err.contains("HypoPG is installed on this standby but not created in database nohypo, and a standby cannot create an extension")
            && err.contains("hint: CREATE EXTENSION hypopg in database nohypo on the primary"),
        "{err}"
    );

    // Nothing is left in the backend: the same connection is clean afterwards.
    let env = Environment::new(Default::default(), None, "postgres");
    let params = resolve(
        &ConnRequest {
            dbname: Some(primary.conninfo("postgres")),
            ..ConnRequest::default()
        },
        &env,
    )
    .unwrap();
    let mut conn = connect(&params, &ConnectOptions::default(), |_, _, _| {})
        .await
        .unwrap();
    let request = CompareRequest::validate(RequestInput {
        query_text: "SELECT id FROM events WHERE tenant_id = $1 AND status = 'pending'".into(),
        query_source: "test".into(),
        index_sqls: vec![
            PARTIAL.into(),
            "CREATE INDEX ON events (tenant_id, status)".into(),
        ],
        params: vec!["42".into()],
        runs: 1,
        min_gain_percent: 10.0,
        hypothetical: true,
        ..RequestInput::default()
    })
    .unwrap();
    assert_eq!(request.mode, Mode::Hypothetical);
    let report = run_compare(
        &mut conn,
        &request,
        &Limits::read_only_defaults(),
        &Progress::silent(),
    )
    .await
    .unwrap();
    assert_eq!(report.failed().count(), 0);
    let composite = report
        .ranking
        .iter()
        .find(|j| report.name(j.index) == "unnamed index ON events (tenant_id, status)")
        .unwrap();
    assert_ne!(composite.verdict, Verdict::Unused);
    let count = |sql: &'static str| {
        let client = &conn.client;
        async move { client.query_one(sql, &[]).await.unwrap().get::<_, i64>(0) }
    };
    assert_eq!(count("SELECT count(*) FROM hypopg_list_indexes").await, 0);
    assert_eq!(
        count("SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'pgplan%'").await,
        0
    );
}
