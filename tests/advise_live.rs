//! advise's catalog reads and proposals on real servers, 13 to 18: the facts read back from
//! the fixtures' schema (statistics, visibility map, every shape of existing index), proposals
//! from live plans and live facts, and every proposed statement built on the server, after
//! which the same proposal finds the built index and drops itself as covered.

mod common;

use std::time::Duration;

use common::{TestDb, for_each_version};
use pgplan::advise::{Facts, Proposals, access, propose};
use pgplan::db::advise::{TableName, read_facts};
use pgplan::plan::{Plan, parse_plan};

const SETUP: &str = include_str!("../fixtures/advise/setup.sql");

/// A fixture case's query and its `-- set:` lines.
fn case(name: &str) -> (String, Vec<String>) {
    let path = format!("{}/fixtures/advise/{name}.sql", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let settings = text
        .lines()
        .filter_map(|l| l.strip_prefix("-- set: "))
        .map(str::to_owned)
        .collect();
    let query: Vec<&str> = text.lines().filter(|l| !l.starts_with("--")).collect();
    (
        query.join("\n").trim().trim_end_matches(';').to_owned(),
        settings,
    )
}

async fn explain(client: &tokio_postgres::Client, query: &str, settings: &[String]) -> Plan {
    client.batch_execute("BEGIN").await.unwrap();
    for s in settings {
        client
            .batch_execute(&format!("SET LOCAL {s}"))
            .await
            .unwrap();
    }
    let sql = format!("EXPLAIN (ANALYZE, BUFFERS, VERBOSE, FORMAT JSON) {query}");
    let rows = client.simple_query(&sql).await.unwrap();
    client.batch_execute("ROLLBACK").await.unwrap();
    let text: String = rows
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
            _ => None,
        })
        .collect();
    parse_plan(&text).unwrap()
}

async fn facts_for(client: &tokio_postgres::Client, plan: &Plan) -> Facts {
    let server = pgplan::db::facts::read_facts(client).await.unwrap();
    let tables: Vec<TableName> = access::accesses(plan)
        .into_iter()
        .map(|a| TableName {
            schema: a.schema,
            name: a.table,
        })
        .collect();
    read_facts(client, &server, &tables).await.unwrap()
}

fn definitions(p: &Proposals) -> Vec<String> {
    p.candidates.iter().map(|c| c.definition()).collect()
}

async fn prepared(major: u32, test: &str) -> TestDb {
    let db = TestDb::create(major, test).await;
    db.run(SETUP).await;
    // The insert counters reach pg_stat_user_tables asynchronously.
    db.wait_for(
        "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'logs'",
        |v| v == "300000",
        Duration::from_secs(30),
    )
    .await
    .unwrap_or_else(|v| panic!("PostgreSQL {major}: logs inserts counted {v}"));
    db
}

/// Each case, the definition it must propose, and one it must not.
const CASES: &[(&str, &str)] = &[
    (
        "composite_eq_sort",
        "ON public.tickets (account_id, created_at DESC)",
    ),
    (
        "composite_eq_sort",
        "ON public.tickets (account_id, created_at DESC) INCLUDE (id)",
    ),
    (
        "composite_eq_range",
        "ON public.tickets (account_id, created_at)",
    ),
    (
        "partial_hot_constant",
        "ON public.tickets (created_at) WHERE state = 'open'::text",
    ),
    ("expression_lower", "ON public.users ((lower(email)))"),
    (
        "gin_jsonb_contains",
        "ON public.docs USING gin (attrs jsonb_path_ops)",
    ),
    ("gin_array_overlap", "ON public.docs USING gin (tags)"),
    (
        "trigram_substring",
        "ON public.docs USING gin (title gin_trgm_ops)",
    ),
    ("brin_time_range", "ON public.logs USING brin (ts)"),
    ("join_key", "ON public.tickets (account_id)"),
    ("prefix_like", "ON public.users (name)"),
];

#[tokio::test(flavor = "multi_thread")]
async fn proposals_from_live_plans_and_facts_build_and_then_are_covered() {
    for_each_version("advise_proposals", |major| async move {
        let db = prepared(major, "advise_proposals").await;
        let client = db.client().await;
        for (name, expected) in CASES {
            let (query, settings) = case(name);
            let plan = explain(&client, &query, &settings).await;
            let facts = facts_for(&client, &plan).await;
            let p = propose(&[&plan], &facts);
            assert!(
                definitions(&p).contains(&expected.to_string()),
                "PostgreSQL {major}, {name}: expected {expected}, proposed {:?}",
                definitions(&p)
            );
            // Every proposal is a statement the server accepts; once built, the catalog's own
            // spelling of it (pg_get_indexdef, pg_get_expr) is recognised as the same index.
            for c in &p.candidates {
                let create = format!("CREATE INDEX {} {}", c.name, c.definition());
                client.batch_execute("BEGIN").await.unwrap();
                client.batch_execute(&create).await.unwrap_or_else(|e| {
                    panic!(
                        "PostgreSQL {major}, {name}: {create}: {}",
                        pgplan::db::error::describe(&e)
                    )
                });
                let again = propose(&[&plan], &facts_for(&client, &plan).await);
                client.batch_execute("ROLLBACK").await.unwrap();
                assert!(
                    again
                        .covered
                        .iter()
                        .any(|k| k.candidate.definition() == c.definition() && k.by_index == c.name),
                    "PostgreSQL {major}, {name}: after {create}, still proposed: {:?}",
                    definitions(&again)
                );
            }
        }
        // A query that reads every row: nothing proposed, and a note says so.
        let (query, settings) = case("no_index_helps");
        let plan = explain(&client, &query, &settings).await;
        let p = propose(&[&plan], &facts_for(&client, &plan).await);
        assert!(p.candidates.is_empty(), "PostgreSQL {major}: {:?}", definitions(&p));
        assert_eq!(p.notes.len(), 1, "PostgreSQL {major}: {:?}", p.notes);
        drop(client);
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn facts_read_back_statistics_and_every_shape_of_index() {
    for_each_version("advise_facts", |major| async move {
        let db = prepared(major, "advise_facts").await;
        db.run(
            "CREATE INDEX users_lower_email ON users (lower(email));
             CREATE INDEX tickets_open_created ON tickets (created_at DESC NULLS LAST) WHERE state = 'open';
             CREATE INDEX tickets_account_inc ON tickets (account_id) INCLUDE (amount, priority);
             CREATE INDEX docs_attrs_path ON docs USING gin (attrs jsonb_path_ops);
             CREATE INDEX users_name_posix ON users (name COLLATE \"POSIX\");",
        )
        .await;
        let client = db.client().await;
        let server = pgplan::db::facts::read_facts(&client).await.unwrap();
        let names = ["tickets", "users", "docs", "logs", "no_such_table"];
        let tables: Vec<TableName> = names
            .iter()
            .map(|n| TableName {
                schema: None,
                name: (*n).into(),
            })
            .collect();
        let facts = read_facts(&client, &server, &tables).await.unwrap();
        assert_eq!(facts.tables.len(), 4, "PostgreSQL {major}");
        assert!(facts.has_extension("pg_trgm"));

        let tickets = facts.table(Some("public"), "tickets").unwrap();
        assert_eq!(tickets.rows, Some(200_000.0), "PostgreSQL {major}");
        assert!(tickets.pages > 1000.0);
        // Read back exactly what pg_class holds. VACUUM may leave a page or two unmarked: it
        // skips setting the visibility map bit on a page whose cleanup lock it could not get at
        // once, as when the checkpointer has it pinned to write it out.
        let catalog = db
            .value("SELECT relpages || ' ' || relallvisible FROM pg_class WHERE oid = 'tickets'::regclass")
            .await
            .unwrap();
        assert_eq!(
            format!("{} {}", tickets.pages, tickets.all_visible_pages),
            catalog,
            "PostgreSQL {major}"
        );
        assert!(
            tickets.all_visible_pages >= tickets.pages - 8.0,
            "PostgreSQL {major}: VACUUM marked {} of {} pages all-visible",
            tickets.all_visible_pages,
            tickets.pages
        );
        assert_eq!(tickets.inserts, Some(200_000.0));
        assert_eq!((tickets.updates, tickets.deletes), (Some(0.0), Some(0.0)));
        let state = tickets.column("state").unwrap();
        assert_eq!(state.type_name, "text");
        assert_eq!(state.collation.as_deref(), Some("default"));
        assert!(state.byte_order_collation(), "the harness's servers use the C locale");
        let stats = state.stats.as_ref().unwrap();
        assert_eq!(stats.n_distinct, 2.0);
        let open = stats.frequency("open", tickets.rows).unwrap();
        assert!((0.015..0.025).contains(&open), "PostgreSQL {major}: open is {open}");
        assert_eq!(
            tickets.column("created_at").unwrap().type_name,
            "timestamp with time zone"
        );
        assert!(tickets.column("id").unwrap().collation.is_none());

        let logs = facts.table(None, "logs").unwrap();
        let corr = logs.column("ts").unwrap().stats.as_ref().unwrap().correlation.unwrap();
        assert!(corr > 0.99, "PostgreSQL {major}: ts correlation {corr}");
        assert_eq!(logs.append_only(), Some(true));

        let docs = facts.table(None, "docs").unwrap();
        assert_eq!(docs.column("tags").unwrap().type_name, "text[]");
        assert!(docs.column("tags").unwrap().is_array());
        assert_eq!(docs.column("attrs").unwrap().type_name, "jsonb");
        let gin = docs.indexes.iter().find(|i| i.name == "docs_attrs_path").unwrap();
        assert_eq!(gin.method, "gin");
        assert_eq!(gin.keys[0].opclass, "jsonb_path_ops");
        assert!(!gin.keys[0].default_opclass);

        let users = facts.table(None, "users").unwrap();
        let expr = users.indexes.iter().find(|i| i.name == "users_lower_email").unwrap();
        assert_eq!(expr.keys[0].expr, "lower(email)");
        assert!(expr.keys[0].default_opclass && expr.keys[0].collation.is_none());
        let posix = users.indexes.iter().find(|i| i.name == "users_name_posix").unwrap();
        assert_eq!(posix.keys[0].expr, "name");
        assert_eq!(posix.keys[0].collation.as_deref(), Some("POSIX"));
        let pkey = users.indexes.iter().find(|i| i.name == "users_pkey").unwrap();
        assert!(pkey.unique && pkey.valid);
        // What keeps an index from being dropped as replaced, read back from the catalog.
        assert!(pkey.primary && pkey.backs_constraint && !pkey.exclusion && !pkey.replica_identity);
        assert!(pkey.size_bytes.is_some_and(|b| b >= 8192.0), "PostgreSQL {major}");
        assert!(pkey.scans.is_some());
        let plain = users.indexes.iter().find(|i| i.name == "users_lower_email").unwrap();
        assert!(!plain.primary && !plain.backs_constraint && !plain.unique);

        let partial = tickets.indexes.iter().find(|i| i.name == "tickets_open_created").unwrap();
        assert_eq!(partial.predicate.as_deref(), Some("state = 'open'::text"));
        assert!(partial.keys[0].descending && !partial.keys[0].nulls_first);
        let inc = tickets.indexes.iter().find(|i| i.name == "tickets_account_inc").unwrap();
        assert_eq!(inc.keys.len(), 1);
        assert_eq!(inc.include, ["amount", "priority"]);
        drop(client);
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unused_existing_indexes_come_from_audits_check() {
    use pgplan::advise::{TableRef, drops};
    use pgplan::audit::{AuditOptions, NodeResult, Scope, Severity, audit};

    for_each_version("advise_drops", |major| async move {
        let db = TestDb::create(major, "advise_drops").await;
        db.run(
            "CREATE TABLE t (id integer PRIMARY KEY, a integer, b integer);
             INSERT INTO t SELECT i, i, i FROM generate_series(1, 20000) AS i;
             CREATE INDEX t_a_idx ON t (a);
             CREATE TABLE elsewhere (id integer, c integer);
             CREATE INDEX elsewhere_c_idx ON elsewhere (c);
             VACUUM ANALYZE t, elsewhere;",
        )
        .await;
        let client = db.client().await;
        client.batch_execute("BEGIN READ ONLY").await.unwrap();
        let server = pgplan::db::facts::read_facts(&client).await.unwrap();
        let scope = Scope {
            tables: vec!["public.t".into(), "public.elsewhere".into()],
            ..Scope::default()
        };
        let snapshot = pgplan::db::catalog::read_snapshot(&client, &server, &scope, None)
            .await
            .unwrap();
        client.batch_execute("COMMIT").await.unwrap();
        let node = NodeResult {
            name: "primary".into(),
            outcome: Ok(snapshot),
        };
        let workload_tables = [TableRef {
            schema: "public".into(),
            name: "t".into(),
        }];
        let trusted = AuditOptions {
            min_stats_age: Duration::ZERO,
            ..AuditOptions::default()
        };
        let found = drops::drops(
            &audit(std::slice::from_ref(&node), &trusted),
            &workload_tables,
        );
        // The primary key enforces a constraint: never offered. elsewhere is not the workload's.
        assert_eq!(found.len(), 1, "PostgreSQL {major}: {found:?}");
        assert_eq!(found[0].index, "t_a_idx");
        assert_eq!(
            found[0].statement,
            "DROP INDEX CONCURRENTLY public.t_a_idx;"
        );
        assert_eq!(found[0].severity, Severity::Warning);
        // Counters younger than the default minimum statistics age: said, and only info.
        let found = drops::drops(&audit(&[node], &AuditOptions::default()), &workload_tables);
        assert_eq!(
            found[0].severity,
            Severity::Info,
            "PostgreSQL {major}: {found:?}"
        );
        assert!(
            found[0].message.contains("counting"),
            "{}",
            found[0].message
        );
        drop(client);
        db.drop_db().await;
    })
    .await;
}

/// (index dropped, check, index kept) of each drop a finding (advise's `drops[]`, or audit's
/// findings with their `also` reasons, the first drop reason of each) proposes.
fn drop_decisions(items: &[serde_json::Value]) -> Vec<(String, String, Option<String>)> {
    let drop_checks = ["unused_index", "duplicate_index", "redundant_index"];
    let mut out: Vec<(String, String, Option<String>)> = items
        .iter()
        .filter_map(|f| {
            let reasons = std::iter::once(f).chain(f["also"].as_array().into_iter().flatten());
            let r = reasons
                .filter(|r| drop_checks.contains(&r["check"].as_str().unwrap_or_default()))
                .find(|r| r["fix"].is_string() || r["statement"].is_string())?;
            Some((
                f["index"].as_str()?.to_owned(),
                r["check"].as_str()?.to_owned(),
                r["kept_index"].as_str().map(str::to_owned),
            ))
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn advise_drops_what_audit_drops_and_keeps_what_it_keeps() {
    for_each_version("advise_audit_agree", |major| async move {
        let db = TestDb::create(major, "advise_audit_agree").await;
        db.run(
            "CREATE TABLE t (id integer PRIMARY KEY, a integer NOT NULL, b integer, c integer,
                             d integer);
             INSERT INTO t SELECT i, i, i % 100, i % 1000, i % 5000
             FROM generate_series(1, 20000) AS i;
             -- Neither scanned: audit keeps the older and offers both as unused.
             CREATE INDEX t_b_idx ON t (b);
             CREATE INDEX t_b_again ON t (b);
             -- The same keys with fewer INCLUDE columns: covered by the wider one.
             CREATE INDEX t_c_idx ON t (c);
             CREATE INDEX t_c_a_idx ON t (c) INCLUDE (a);
             -- A plain duplicate of a unique index, which stays whichever one the workload
             -- scans.
             CREATE UNIQUE INDEX t_a_key ON t (a);
             CREATE INDEX t_a_idx ON t (a);
             -- A plain pair the workload scans: the planner takes one, whose scans (advise's
             -- own) make it the one audit keeps. Advise must see them too.
             CREATE INDEX t_d_idx ON t (d);
             CREATE INDEX t_d_again ON t (d);
             VACUUM ANALYZE t;",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("by_a.sql"),
            "-- calls: 1000\nSELECT id FROM t WHERE a = 4242\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("by_d.sql"),
            "-- calls: 1000\nSELECT id FROM t WHERE d = 77\n",
        )
        .unwrap();
        let out = advise_cmd(
            &db,
            &[
                "--workload",
                dir.path().to_str().unwrap(),
                "--runs",
                "1",
                "--format",
                "json",
            ],
        );
        let doc = advise_json(&out);
        let advised = drop_decisions(doc["drops"].as_array().unwrap());
        eprintln!("PostgreSQL {major}: {advised:?}");
        for (index, check, kept) in [
            ("t_b_again", "duplicate_index", Some("t_b_idx")),
            ("t_c_idx", "redundant_index", Some("t_c_a_idx")),
            ("t_a_idx", "duplicate_index", Some("t_a_key")),
        ] {
            assert!(
                advised.contains(&(index.into(), check.into(), kept.map(str::to_owned))),
                "PostgreSQL {major}: {index} is not a {check} keeping {kept:?}: {advised:?}"
            );
        }
        assert!(
            !advised.iter().any(|(i, _, _)| i == "t_a_key"),
            "PostgreSQL {major}: the unique index is kept: {advised:?}"
        );
        let scanned_pair: Vec<_> = advised
            .iter()
            .filter(|(i, _, _)| i.starts_with("t_d_"))
            .collect();
        assert_eq!(scanned_pair.len(), 1, "PostgreSQL {major}: {advised:?}");
        assert_eq!(scanned_pair[0].1, "duplicate_index", "PostgreSQL {major}");
        let statements: Vec<&str> = doc["drops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["statement"].as_str().unwrap())
            .collect();
        assert!(
            statements.contains(&"DROP INDEX CONCURRENTLY public.t_b_again;"),
            "PostgreSQL {major}: {statements:?}"
        );

        // The same counters read by audit: the same index to drop, the same one kept.
        let out = std::process::Command::new(common::pgplan_bin())
            .env("NO_COLOR", "1")
            .env_remove("PGSERVICE")
            .args([
                "audit",
                "-d",
                &db.conninfo(),
                "--table",
                "t",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        let audited: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("audit JSON ({e}): {}", String::from_utf8_lossy(&out.stderr))
        });
        let findings: Vec<serde_json::Value> = audited["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["table"] == "t")
            .cloned()
            .collect();
        assert_eq!(
            drop_decisions(&findings),
            advised,
            "PostgreSQL {major}: audit and advise disagree"
        );
        // Of the pair the workload scanned, the one its plans used (advise's own runs counted
        // the scans) is the one kept: advise read those scans before deciding.
        let scanned = db
            .value(
                "SELECT string_agg(indexrelname, ',') FROM pg_stat_user_indexes \
                 WHERE relname = 't' AND indexrelname IN ('t_d_idx', 't_d_again') AND idx_scan > 0",
            )
            .await
            .unwrap_or_default();
        assert!(
            ["t_d_idx", "t_d_again"].contains(&scanned.as_str()),
            "PostgreSQL {major}: one of the pair is scanned: {scanned}"
        );
        assert_eq!(
            scanned_pair[0].2.as_deref(),
            Some(scanned.as_str()),
            "PostgreSQL {major}: {advised:?}"
        );
        db.drop_db().await;
    })
    .await;
}

// ---- `pgplan advise` end to end: the binary over a workload, every verdict measured ----

fn advise_workload(dir: &std::path::Path) {
    let files = [
        (
            "newest_tickets.sql",
            "-- calls: 20000\nSELECT id, created_at FROM tickets WHERE account_id = 17 ORDER BY created_at DESC LIMIT 20\n",
        ),
        (
            "open_tickets.sql",
            "-- calls: 5000\nSELECT id, priority FROM tickets WHERE state = 'open' ORDER BY created_at LIMIT 50\n",
        ),
        (
            "email_lookup.sql",
            "-- calls: 10000\nSELECT id, name FROM users WHERE lower(email) = 'user4242@example.com'\n",
        ),
        (
            "docs_by_attr.sql",
            "-- calls: 1000\nSELECT id FROM docs WHERE attrs @> '{\"n\": 7}'\n",
        ),
        (
            "tickets_by_state.sql",
            "-- calls: 100\nSELECT state, count(*) FROM tickets GROUP BY state\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// A write-hot table: its balance updates are HOT (fillfactor leaves room on every page), and
/// a rare read by balance is what an index on balance would speed up.
const WALLETS: &str = "
CREATE TABLE wallets (id integer PRIMARY KEY, balance integer NOT NULL, note text NOT NULL)
    WITH (fillfactor = 50, autovacuum_enabled = off);
INSERT INTO wallets SELECT i, i % 5000, md5(i::text) FROM generate_series(1, 20000) AS i;
VACUUM (ANALYZE) wallets;
UPDATE wallets SET balance = balance + 1 WHERE id <= 4000;
UPDATE wallets SET balance = balance + 1 WHERE id > 16000;
VACUUM wallets;
";

fn write_hot_workload(dir: &std::path::Path) {
    std::fs::write(
        dir.join("rare_balance.sql"),
        "-- calls: 2\nSELECT id FROM wallets WHERE balance = 4242\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pay.sql"),
        "-- calls: 100000\n-- params: [1, 7]\nUPDATE wallets SET balance = balance + $1 WHERE id = $2\n",
    )
    .unwrap();
}

fn advise_cmd(db: &TestDb, args: &[&str]) -> std::process::Output {
    std::process::Command::new(common::pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg("advise")
        .arg("-d")
        .arg(db.conninfo())
        .args(args)
        .output()
        .expect("running pgplan")
}

fn advise_json(o: &std::process::Output) -> serde_json::Value {
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(1),
        "pgplan failed ({}):\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// What must be the same before and after a run: relations, rows, prepared transactions,
/// locks held by other sessions.
async fn server_state(db: &TestDb) -> Vec<String> {
    let mut out = Vec::new();
    for sql in [
        "SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = 'public'::regnamespace",
        "SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM tickets t",
        "SELECT md5(string_agg(u::text, ',' ORDER BY id)) FROM users u",
        "SELECT coalesce(md5(string_agg(w::text, ',' ORDER BY id)), '') FROM wallets w",
        "SELECT count(*) FROM pg_prepared_xacts",
    ] {
        out.push(db.value(sql).await.unwrap_or_default());
    }
    out
}

async fn assert_left_nothing(db: &TestDb, before: &[String]) {
    let sql = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgplan' AND datname = current_database()";
    if let Err(n) = db
        .wait_for(sql, |n| n == "0", Duration::from_secs(60))
        .await
    {
        panic!("{n} pgplan sessions are still there a minute later");
    }
    let locks = db
        // This database's pgplan sessions only: the other tests of this binary run pgplan
        // against their own databases on the same server at the same time.
        .value("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'pgplan' AND a.datname = current_database()")
        .await
        .unwrap();
    assert_eq!(locks, "0", "locks held");
    assert_eq!(server_state(db).await, before, "the server changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn advise_recommends_only_what_it_measured_paying() {
    for_each_version("advise_run", |major| async move {
        let db = prepared(major, "advise_run").await;
        db.run(WALLETS).await;
        db.wait_for(
            "SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'wallets'",
            |v| v.parse::<f64>().is_ok_and(|n| n >= 4000.0),
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|v| panic!("PostgreSQL {major}: HOT updates never counted ({v})"));
        let dir = tempfile::tempdir().unwrap();
        advise_workload(dir.path());
        write_hot_workload(dir.path());
        let before = server_state(&db).await;
        let out = advise_cmd(
            &db,
            &[
                "--workload",
                dir.path().to_str().unwrap(),
                "--runs",
                "1",
                "--format",
                "json",
                "--fail-if-advice",
            ],
        );
        let doc = advise_json(&out);
        eprintln!("PostgreSQL {major}: {doc:#}");
        assert_eq!(doc["schema_version"], 2);
        assert_eq!(out.status.code(), Some(1), "--fail-if-advice with advice");
        let rec = &doc["recommended"];
        // Per query, the definitions an expert would accept; the measured one must serve it.
        // Each with the rule that proposed it.
        let must: [(&str, &[&str], &[&str]); 4] = [
            (
                "newest_tickets.sql",
                &["ON public.tickets (account_id, created_at DESC)"],
                &["btree", "include"],
            ),
            (
                "open_tickets.sql",
                &[
                    "ON public.tickets (created_at) WHERE state = 'open'::text",
                    "ON public.tickets (state, created_at)",
                ],
                &["partial", "btree", "include"],
            ),
            (
                "email_lookup.sql",
                &["ON public.users ((lower(email)))"],
                &["expression"],
            ),
            (
                "docs_by_attr.sql",
                &["ON public.docs USING gin (attrs jsonb_path_ops)"],
                &["gin"],
            ),
        ];
        for (query, accepted, kinds) in must {
            let r = rec
                .as_array()
                .unwrap()
                .iter()
                .find(|r| {
                    r["queries"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|s| s["id"] == query)
                })
                .unwrap_or_else(|| {
                    panic!("PostgreSQL {major}: nothing recommended for {query}: {doc:#}")
                });
            let def = r["definition"].as_str().unwrap();
            assert!(
                accepted.iter().any(|a| def.starts_with(a)),
                "PostgreSQL {major}: {query} got {def}"
            );
            assert!(
                r["kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| kinds.iter().any(|w| k == w)),
                "PostgreSQL {major}: {def} is not {kinds:?}: {r:#}"
            );
            let q = r["queries"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["id"] == query)
                .unwrap();
            assert!(
                q["pages_after"].as_f64().unwrap() < q["pages_before"].as_f64().unwrap(),
                "PostgreSQL {major}: {def} measured no saving: {q:#}"
            );
            assert!(r["read_pages_saved_per_day"].as_f64().unwrap() > 0.0);
            assert!(r["net_pages_saved_per_day"].as_f64().unwrap() > 0.0);
            assert!(
                r["statement"]
                    .as_str()
                    .unwrap()
                    .starts_with("CREATE INDEX CONCURRENTLY ")
            );
        }
        // The partial index, a fiftieth of (state, created_at)'s size, is chosen first by pages
        // per byte; it is recommended, or measured paying and then superseded by a covering
        // index chosen after it that the planner prefers (which is then reported against the
        // baseline, 3,563 pages before, not against the partial one).
        let partial_def = "ON public.tickets (created_at) WHERE state = 'open'::text";
        let partial_recommended = rec
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["definition"] == partial_def);
        if !partial_recommended {
            let p = doc["rejected"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["definition"] == partial_def)
                .unwrap_or_else(|| {
                    panic!("PostgreSQL {major}: the partial index not measured: {doc:#}")
                });
            assert_eq!(p["reason"], "superseded", "PostgreSQL {major}: {p:#}");
            assert!(
                p["kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k == "partial")
            );
            assert!(
                p["read_pages_saved_per_day"].as_f64().unwrap() > 0.0,
                "{p:#}"
            );
            let open = rec
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|r| r["queries"].as_array().unwrap())
                .find(|q| q["id"] == "open_tickets.sql")
                .unwrap();
            assert!(
                open["pages_before"].as_f64().unwrap() > 1000.0,
                "PostgreSQL {major}: measured against the partial index: {open:#}"
            );
        }
        // Never two where one does the other's work: the plain key is superseded by its
        // INCLUDE form when both were chosen.
        let defs: Vec<&str> = rec
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["definition"].as_str().unwrap())
            .collect();
        for a in &defs {
            for b in &defs {
                assert!(
                    a == b || !b.starts_with(a),
                    "PostgreSQL {major}: both {a} and {b}"
                );
            }
        }
        // The write-hot table: the balance index speeds up the rare read and is rejected for
        // the HOT updates it ends.
        let rejected = doc["rejected"].as_array().unwrap();
        let balance = rejected
            .iter()
            .find(|r| r["definition"] == "ON public.wallets (balance)")
            .unwrap_or_else(|| {
                panic!("PostgreSQL {major}: the balance index not rejected: {doc:#}")
            });
        assert_eq!(
            balance["reason"], "writes_exceed_savings",
            "PostgreSQL {major}: {balance:#}"
        );
        assert!(
            balance["read_pages_saved_per_day"].as_f64().unwrap() > 0.0,
            "{balance:#}"
        );
        assert!(
            balance["write_pages_added_per_day"].as_f64().unwrap()
                > balance["read_pages_saved_per_day"].as_f64().unwrap()
        );
        // The decisive cost, named: the HOT updates it ends.
        assert!(
            balance["hot_updates_lost_per_day"].as_f64().unwrap() > 0.0,
            "{balance:#}"
        );
        assert!(defs.iter().all(|d| !d.contains("wallets")));
        // The text report, with --max-indexes: the limit is named for what it left out.
        let text = advise_cmd(
            &db,
            &[
                "--workload",
                dir.path().to_str().unwrap(),
                "--runs",
                "1",
                "--max-indexes",
                "2",
            ],
        );
        assert_eq!(
            text.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&text.stderr)
        );
        let text = String::from_utf8(text.stdout).unwrap();
        eprintln!("PostgreSQL {major}:\n{text}");
        assert!(
            text.matches("CREATE INDEX CONCURRENTLY").count() >= 2,
            "{text}"
        );
        assert!(text.contains("--max-indexes"), "{text}");

        // The query no index helps: nothing recommended serves it.
        for r in rec.as_array().unwrap() {
            assert!(
                r["queries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|s| s["id"] != "tickets_by_state.sql"),
                "PostgreSQL {major}: {r:#}"
            );
        }
        assert_left_nothing(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_candidate_that_fails_to_build_is_named_and_leaves_nothing_behind() {
    for_each_version("advise_fail", |major| async move {
        let db = prepared(major, "advise_fail").await;
        db.run("CREATE TABLE wallets (id integer PRIMARY KEY)")
            .await;
        let dir = tempfile::tempdir().unwrap();
        advise_workload(dir.path());
        let before = server_state(&db).await;
        // Another session holds docs against the SHARE lock a build needs: the GIN candidate
        // cannot be built within --lock-timeout, the others are measured as usual.
        let holder = db.client().await;
        holder
            .batch_execute("BEGIN; LOCK TABLE docs IN ROW EXCLUSIVE MODE")
            .await
            .unwrap();
        let out = advise_cmd(
            &db,
            &[
                "--workload",
                dir.path().to_str().unwrap(),
                "--runs",
                "1",
                "--lock-timeout",
                "300ms",
                "--format",
                "json",
            ],
        );
        holder.batch_execute("ROLLBACK").await.unwrap();
        let doc = advise_json(&out);
        assert_eq!(out.status.code(), Some(0), "no --fail-if-advice");
        let notes = doc["notes"].as_array().unwrap();
        assert!(
            notes.iter().any(|n| {
                let m = n["message"].as_str().unwrap();
                m.starts_with("docs_attrs_idx could not be measured") && m.contains("lock")
            }),
            "PostgreSQL {major}: {notes:#?}"
        );
        let rec = doc["recommended"].as_array().unwrap();
        assert!(
            rec.iter().all(|r| r["table"] != "docs"),
            "PostgreSQL {major}"
        );
        assert!(
            rec.iter().any(|r| r["table"] == "users"),
            "PostgreSQL {major}: {doc:#}"
        );
        drop(holder);
        assert_left_nothing(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}

/// The indexes of schema public, by name.
async fn index_names(db: &TestDb) -> Vec<String> {
    let names = db
        .value(
            "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_class c \
             WHERE c.relkind = 'i' AND c.relnamespace = 'public'::regnamespace",
        )
        .await
        .unwrap_or_default();
    names.split(',').map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_proposed_name_is_the_one_postgres_gives_the_statement_run_unnamed() {
    for_each_version("advise_names", |major| async move {
        let db = prepared(major, "advise_names").await;
        // Relations that are not indexes take names too: CREATE INDEX steps over any relation
        // of the schema. users_lower_idx is the name an index on lower(email) would get.
        db.run(
            "CREATE SEQUENCE users_lower_idx;
             CREATE VIEW tickets_account_id_created_at_idx AS SELECT 1 AS one;
             CREATE TABLE wallets (id integer PRIMARY KEY);",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        advise_workload(dir.path());
        let out = advise_cmd(
            &db,
            &[
                "--workload",
                dir.path().to_str().unwrap(),
                "--runs",
                "1",
                "--format",
                "json",
            ],
        );
        let doc = advise_json(&out);
        let listed: Vec<&serde_json::Value> = doc["recommended"]
            .as_array()
            .unwrap()
            .iter()
            .chain(doc["rejected"].as_array().unwrap())
            .collect();
        let names: Vec<&str> = listed.iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert!(
            names.contains(&"users_lower_idx1"),
            "PostgreSQL {major}: the expression index is named after lower(), past the \
             sequence: {names:?}"
        );
        assert!(
            !names.contains(&"users_expr_idx") && !names.contains(&"users_lower_idx"),
            "PostgreSQL {major}: {names:?}"
        );
        eprintln!("PostgreSQL {major}: {names:?}");
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "PostgreSQL {major}: {names:?}");
        // Run as printed, from the top, without the names: PostgreSQL picks the same ones.
        for c in &listed {
            let definition = c["definition"].as_str().unwrap();
            let name = c["name"].as_str().unwrap();
            assert_eq!(
                c["statement"],
                format!("CREATE INDEX CONCURRENTLY {name} {definition}"),
                "PostgreSQL {major}"
            );
            let before = index_names(&db).await;
            db.run(&format!("CREATE INDEX CONCURRENTLY {definition}"))
                .await;
            let after = index_names(&db).await;
            let new: Vec<&String> = after.iter().filter(|n| !before.contains(n)).collect();
            assert_eq!(
                new,
                [name],
                "PostgreSQL {major}: {definition} was named otherwise"
            );
        }
        assert!(listed.len() >= 4, "PostgreSQL {major}: {doc:#}");
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_recommendation_names_the_existing_index_it_replaces() {
    for_each_version("advise_replaces", |major| async move {
        let db = prepared(major, "advise_replaces").await;
        db.run(
            "CREATE INDEX tickets_account_idx ON tickets (account_id);
             CREATE TABLE wallets (id integer PRIMARY KEY);
             ANALYZE tickets;",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("newest_tickets.sql"),
            "-- calls: 20000\nSELECT id, created_at FROM tickets WHERE account_id = 17 ORDER BY created_at DESC LIMIT 20\n",
        )
        .unwrap();
        let before = server_state(&db).await;
        let out = advise_cmd(
            &db,
            &["--workload", dir.path().to_str().unwrap(), "--runs", "1", "--format", "json"],
        );
        let doc = advise_json(&out);
        let rec = doc["recommended"].as_array().unwrap();
        let r = rec
            .iter()
            .find(|r| {
                r["definition"]
                    .as_str()
                    .unwrap()
                    .starts_with("ON public.tickets (account_id, created_at DESC)")
            })
            .unwrap_or_else(|| panic!("PostgreSQL {major}: {doc:#}"));
        let q = &r["queries"][0];
        assert!(
            q["pages_after"].as_f64().unwrap() < q["pages_before"].as_f64().unwrap(),
            "PostgreSQL {major}: {q:#}"
        );
        let replaces = r["replaces"].as_array().unwrap();
        assert_eq!(replaces.len(), 1, "PostgreSQL {major}: {r:#}");
        let x = &replaces[0];
        assert_eq!(x["index"], "tickets_account_idx");
        assert_eq!(
            x["statement"],
            "DROP INDEX CONCURRENTLY public.tickets_account_idx;"
        );
        assert!(x["evidence"].as_str().unwrap().contains("lead"), "{x:#}");
        assert!(x["size_bytes"].as_f64().unwrap() > 0.0);
        // The baseline's plan scanned it; with the recommendation built, none did.
        assert_eq!(x["used_before"], serde_json::json!(["newest_tickets.sql"]), "{x:#}");
        assert_eq!(x["used_after"], serde_json::json!([]), "{x:#}");
        // The primary key leads nothing here and is never offered.
        assert!(rec.iter().all(|r| r["replaces"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["index"] != "tickets_pkey")));
        let text = advise_cmd(&db, &["--workload", dir.path().to_str().unwrap(), "--runs", "1"]);
        let text = String::from_utf8(text.stdout).unwrap();
        assert!(
            text.contains("replaces public.tickets_account_idx")
                && text.contains("then: DROP INDEX CONCURRENTLY public.tickets_account_idx;"),
            "PostgreSQL {major}:\n{text}"
        );
        assert_left_nothing(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hypothetical_without_hypopg_says_what_is_missing_and_how_to_install_it() {
    for_each_version("advise_no_hypopg", |major| async move {
        let db = TestDb::create(major, "advise_no_hypopg").await;
        db.run("CREATE TABLE t (id integer PRIMARY KEY, v integer); INSERT INTO t SELECT i, i % 100 FROM generate_series(1, 1000) i; ANALYZE t;")
            .await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("q.sql"), "SELECT id FROM t WHERE v = 7\n").unwrap();
        let out = advise_cmd(
            &db,
            &["--workload", dir.path().to_str().unwrap(), "--hypothetical"],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "PostgreSQL {major}: {err}");
        assert!(out.stdout.is_empty());
        assert!(
            err.contains("--hypothetical shortlists the candidates with HypoPG's estimates: HypoPG is not available on this server")
                && err.contains(&format!("postgresql-{major}-hypopg"))
                && err.contains(&format!("CREATE EXTENSION hypopg in database {}", db.name))
                && err.contains("or drop --hypothetical"),
            "PostgreSQL {major}: {err}"
        );
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn include_for_an_index_only_scan_and_nothing_for_a_query_no_index_helps() {
    for_each_version("advise_include", |major| async move {
        let db = prepared(major, "advise_include").await;
        db.run("CREATE TABLE wallets (id integer PRIMARY KEY)").await;
        let dir = tempfile::tempdir().unwrap();
        // 41 accounts' rows, scattered over the table: a plain index would visit most heap
        // pages; with amount in the index an index-only scan reads a few index pages.
        std::fs::write(
            dir.path().join("amounts.sql"),
            "-- calls: 5000\nSELECT account_id, amount FROM tickets WHERE account_id BETWEEN 100 AND 140\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("tickets_by_state.sql"),
            "-- calls: 100\nSELECT state, count(*) FROM tickets GROUP BY state\n",
        )
        .unwrap();
        let before = server_state(&db).await;
        let doc = advise_json(&advise_cmd(
            &db,
            &["--workload", dir.path().to_str().unwrap(), "--runs", "1", "--format", "json"],
        ));
        let rec = doc["recommended"].as_array().unwrap();
        assert_eq!(rec.len(), 1, "PostgreSQL {major}: {doc:#}");
        let r = &rec[0];
        assert_eq!(
            r["definition"], "ON public.tickets (account_id) INCLUDE (amount)",
            "PostgreSQL {major}: {doc:#}"
        );
        assert!(r["kinds"].as_array().unwrap().iter().any(|k| k == "include"), "{r:#}");
        let q = &r["queries"][0];
        assert_eq!(q["id"], "amounts.sql");
        assert!(
            q["pages_after"].as_f64().unwrap() * 10.0 < q["pages_before"].as_f64().unwrap(),
            "PostgreSQL {major}: {q:#}"
        );
        // The plain key, measured, lost to it (or was never needed once it was chosen).
        let plain = doc["rejected"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["definition"] == "ON public.tickets (account_id)");
        if let Some(plain) = plain {
            assert_ne!(plain["reason"], "over_max_indexes", "{plain:#}");
        }
        // The query that reads every row: no candidate, and a note on that query says so.
        let notes = doc["notes"].as_array().unwrap();
        assert!(
            notes.iter().any(|n| n["query_id"] == "tickets_by_state.sql"
                && n["message"].as_str().unwrap().starts_with("no index proposed")),
            "PostgreSQL {major}: {notes:#?}"
        );
        for r in rec.iter().chain(doc["rejected"].as_array().unwrap()) {
            assert!(
                r["proposed_for"].as_array().unwrap().iter().all(|q| q != "tickets_by_state.sql"),
                "PostgreSQL {major}: {r:#}"
            );
        }
        assert_left_nothing(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}

/// compare's fault cases, for advise: Ctrl-C and kill -9 while a candidate builds, and the
/// server ending pgplan's session; each leaves no index, lock, session or changed row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interrupts_and_a_lost_connection_leave_nothing_behind() {
    use std::process::Stdio;
    for_each_version("advise_faults", |major| async move {
        let db = TestDb::create(major, "advise_faults").await;
        db.run(
            "CREATE FUNCTION slow_identity(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE \
             AS $$ BEGIN PERFORM pg_sleep(0.01); RETURN $1; END $$;
             CREATE TABLE tickets (id integer PRIMARY KEY);
             CREATE TABLE users (id integer PRIMARY KEY);
             CREATE TABLE wallets (id integer PRIMARY KEY);
             CREATE TABLE slow (id integer PRIMARY KEY, v integer NOT NULL);
             INSERT INTO slow SELECT i, i % 10 FROM generate_series(1, 200) AS i;
             VACUUM (ANALYZE) slow;",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("slow.sql"),
            "-- calls: 1000\nSELECT id FROM slow WHERE slow_identity(v) = 3\n",
        )
        .unwrap();
        let before = server_state(&db).await;
        let spawn = || {
            std::process::Command::new(common::pgplan_bin())
                .env("NO_COLOR", "1")
                .args(["advise", "-d", &db.conninfo(), "--runs", "1", "--workload"])
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };

        // Ctrl-C while the expression index builds: cancelled, rolled back, exit 130.
        let mut child = spawn();
        db.wait_for_pgplan_statement("CREATE INDEX", &mut child)
            .await;
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(130),
            "PostgreSQL {major}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_left_nothing(&db, &before).await;

        // kill -9 during the build: the server rolls back on its own.
        let mut child = spawn();
        db.wait_for_pgplan_statement("CREATE INDEX", &mut child)
            .await;
        child.kill().unwrap();
        child.wait().unwrap();
        assert_left_nothing(&db, &before).await;

        // The server ends pgplan's session mid-build: an error that says so, exit 2.
        let mut child = spawn();
        db.wait_for_pgplan_statement("CREATE INDEX", &mut child)
            .await;
        db.run(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = 'pgplan' AND datname = current_database()",
        )
        .await;
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "PostgreSQL {major}: {err}");
        assert!(
            err.contains("terminat") || err.contains("closed") || err.contains("connection"),
            "PostgreSQL {major}: {err}"
        );
        assert_left_nothing(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}
