//! `pgplan audit` as a cron job runs it, on real servers 13–18: every output format and exit
//! code, scope options, a primary with its standby and a node that is down (partial, exit 3),
//! several databases in one run, and Ctrl-C or kill -9 mid-audit leaving nothing behind.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{TestDb, for_each_version, json_stdout as json, pgplan_bin, pgplan_command};
use pgplan::db::cluster::Cluster;
use serde_json::Value;

const SETUP: &str = "
CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL, status text NOT NULL);
INSERT INTO orders SELECT i, i % 100, CASE WHEN i % 3 = 0 THEN 'open' ELSE 'done' END
FROM generate_series(1, 20000) i;
CREATE INDEX orders_customer_idx ON orders (customer_id);
CREATE INDEX orders_customer_dup_idx ON orders (customer_id);
CREATE INDEX orders_status_idx ON orders (status);
CREATE SCHEMA other;
CREATE TABLE other.things (id integer PRIMARY KEY, v integer);
CREATE INDEX things_v_idx ON other.things (v);
CREATE INDEX things_v_again_idx ON other.things (v);
VACUUM (ANALYZE) orders, other.things;
";

fn audit(args: &[&str]) -> Output {
    pgplan_command(&["audit"]).args(args).output().unwrap()
}

fn findings<'a>(doc: &'a Value, check: &str) -> Vec<&'a Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == check)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_format_scope_option_and_exit_code() {
    for_each_version("audit_cli", |major| async move {
        let db = TestDb::create(major, "audit_cli").await;
        db.run(SETUP).await;
        let d = db.conninfo();

        let out = audit(&["-d", &d, "--format", "json"]);
        let doc = json(&out);
        assert_eq!(doc["schema_version"], 2);
        assert_eq!(doc["nodes"][0]["role"], "primary");
        let dups = findings(&doc, "duplicate_index");
        assert!(
            dups.iter().any(|f| f["table"] == "orders"
                && f["fix"]
                    .as_str()
                    .unwrap_or("")
                    .contains("DROP INDEX CONCURRENTLY")),
            "{doc:#}"
        );
        // Findings at warning or above: exit 1 by default, 0 when only critical counts.
        let worst_warning = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["severity"] == "warning");
        assert_eq!(out.status.code(), Some(if worst_warning { 1 } else { 0 }));
        let critical = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["severity"] == "critical");
        let out = audit(&["-d", &d, "--fail-on", "critical"]);
        assert_eq!(out.status.code(), Some(if critical { 1 } else { 0 }));

        // Scope: one schema, one table, a size floor.
        let doc = json(&audit(&["-d", &d, "--format", "json", "--schema", "other"]));
        assert!(
            doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["schema"] == "other"),
            "{doc:#}"
        );
        assert!(!findings(&doc, "duplicate_index").is_empty());
        let doc = json(&audit(&[
            "-d",
            &d,
            "--format",
            "json",
            "--exclude-schema",
            "other",
        ]));
        assert!(
            doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["schema"] != "other")
        );
        let doc = json(&audit(&[
            "-d",
            &d,
            "--format",
            "json",
            "--table",
            "other.things",
        ]));
        assert!(
            doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["table"] == "things")
        );
        // The stand-alone horizon threshold is an option; a bad duration is a usage error.
        let out = audit(&["-d", &d, "--format", "json", "--horizon-min-age", "30s"]);
        assert_ne!(
            out.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = audit(&["-d", &d, "--horizon-min-age", "soon"]);
        assert_eq!(out.status.code(), Some(2));
        let doc = json(&audit(&["-d", &d, "--format", "json", "--min-size", "1GB"]));
        assert!(
            findings(&doc, "duplicate_index").is_empty(),
            "nothing is 1 GB here: {doc:#}"
        );

        // Text, Markdown and Prometheus carry the same findings.
        let text = String::from_utf8(audit(&["-d", &d]).stdout).unwrap();
        assert!(text.contains("orders_customer"), "{text}");
        assert!(text.contains("DROP INDEX CONCURRENTLY"), "{text}");
        let md = String::from_utf8(audit(&["-d", &d, "--format", "markdown"]).stdout).unwrap();
        assert!(md.contains('|') && md.contains("orders_customer"), "{md}");
        let prom = String::from_utf8(audit(&["-d", &d, "--format", "prometheus"]).stdout).unwrap();
        assert!(prom.contains("# TYPE pgplan_audit_node_up gauge"), "{prom}");
        // Every series of a database names it, so two databases' series never collide.
        assert!(
            prom.contains(&format!(
                "pgplan_audit_findings{{database=\"{}\",check=\"duplicate_index\"",
                db.name
            )),
            "{prom}"
        );
        for line in prom
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let value = line.rsplit(' ').next().unwrap();
            assert!(value.parse::<f64>().is_ok(), "not a sample: {line}");
        }
        // --output writes the report to a file.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("audit.prom");
        let out = audit(&[
            "-d",
            &d,
            "--format",
            "prometheus",
            "--output",
            file.to_str().unwrap(),
        ]);
        assert!(out.stdout.is_empty());
        assert!(
            std::fs::read_to_string(&file)
                .unwrap()
                .contains("pgplan_audit_node_up")
        );
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_primary_its_standby_and_a_node_that_is_down() {
    for_each_version("audit_nodes", |major| async move {
        let primary = Cluster::start(common::default_options(common::binaries(major))).unwrap();
        primary
            .execute(
                "postgres",
                "CREATE TABLE t (id integer PRIMARY KEY, v integer); INSERT INTO t SELECT i, i FROM generate_series(1, 1000) i",
            )
            .await
            .unwrap();
        let standby = primary.start_standby().await.unwrap();
        let down = Cluster::start(common::default_options(common::binaries(major))).unwrap();
        let down_conninfo = down.conninfo("postgres");
        drop(down);
        // Another cluster's server: readable, but not a standby of this primary.
        let other = Cluster::start(common::default_options(common::binaries(major))).unwrap();

        let out = audit(&[
            "-d", &primary.conninfo("postgres"),
            "-d", &standby.conninfo("postgres"),
            "-d", &format!("{down_conninfo} password=topsecret"),
            "--format", "json",
        ]);
        assert_eq!(out.status.code(), Some(3), "partial: {}", String::from_utf8_lossy(&out.stderr));
        let doc = json(&out);
        let roles: Vec<&str> = doc["nodes"].as_array().unwrap().iter().map(|n| n["role"].as_str().unwrap_or("down")).collect();
        assert_eq!(roles, ["primary", "standby", "down"]);
        let failed = &doc["nodes"][2];
        assert!(failed["error"].as_str().unwrap().contains("could not connect"), "{failed:#}");
        assert!(!failed["name"].as_str().unwrap().contains("topsecret"), "the password is redacted");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("topsecret"));
        let prom = String::from_utf8(
            audit(&["-d", &primary.conninfo("postgres"), "-d", &down_conninfo, "--format", "prometheus"]).stdout,
        )
        .unwrap();
        assert!(prom.lines().any(|l| l.starts_with("pgplan_audit_node_up") && l.ends_with(" 0")), "{prom}");
        assert!(prom.lines().any(|l| l.starts_with("pgplan_audit_node_up") && l.ends_with(" 1")), "{prom}");

        // No node readable at all: a connection error, as psql's.
        let out = audit(&["-d", &down_conninfo, "--format", "json"]);
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        // A node of another cluster is left out, with the reason, and the audit is partial.
        let out = audit(&[
            "-d", &primary.conninfo("postgres"),
            "-d", &other.conninfo("postgres"),
            "--format", "json", "--fail-on", "critical",
        ]);
        assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
        let doc = json(&out);
        assert!(doc["nodes"][1]["excluded"].as_str().unwrap().contains("system identifier"), "{doc:#}");
        assert_eq!(doc["summary"]["nodes_excluded"], 1);
        drop(other);

        // A standby alone: table statistics are skipped, never reported clean.
        let doc = json(&audit(&["-d", &standby.conninfo("postgres"), "--format", "json"]));
        let skipped: Vec<&str> = doc["skipped"].as_array().unwrap().iter().map(|s| s["check"].as_str().unwrap()).collect();
        for check in ["dead_tuples", "stale_statistics"] {
            assert!(skipped.contains(&check), "{check} not skipped: {doc:#}");
        }
    })
    .await;
}

/// The second database of the multi-database test: an `orders` table like SETUP's but with a
/// single index on customer_id, and a duplicate of its own on another table.
const SETUP_B: &str = "
CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL);
INSERT INTO orders SELECT i, i % 100 FROM generate_series(1, 5000) i;
CREATE INDEX orders_customer_idx ON orders (customer_id);
CREATE TABLE invoices (id integer PRIMARY KEY, order_id integer NOT NULL);
INSERT INTO invoices SELECT i, i FROM generate_series(1, 5000) i;
CREATE INDEX invoices_order_idx ON invoices (order_id);
CREATE INDEX invoices_order_again_idx ON invoices (order_id);
VACUUM (ANALYZE) orders, invoices;
";

/// The tables of `database`'s duplicate_index findings, sorted.
fn duplicates_in<'a>(doc: &'a Value, database: &str) -> Vec<&'a str> {
    let mut tables: Vec<&str> = findings(doc, "duplicate_index")
        .into_iter()
        .filter(|f| f["database"] == database)
        .map(|f| f["table"].as_str().unwrap())
        .collect();
    tables.sort_unstable();
    tables
}

/// The samples of a Prometheus exposition that share a name and labels with an earlier one.
fn repeated_series(prom: &str) -> Vec<&str> {
    let mut seen = std::collections::HashSet::new();
    prom.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.rsplit_once(' ').map_or(l, |(series, _)| series))
        .filter(|series| !seen.insert(*series))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn several_databases_in_one_run() {
    for_each_version("audit_databases", |major| async move {
        let a = TestDb::create(major, "audit_db_a").await;
        let b = TestDb::create(major, "audit_db_b").await;
        a.run(SETUP).await;
        b.run(SETUP_B).await;
        let (da, db) = (a.conninfo(), b.conninfo());

        let out = audit(&["-d", &da, "-d", &db, "--format", "json"]);
        let doc = json(&out);
        assert_eq!(doc["schema_version"], 2);
        // Duplicates are warnings: exit 1, as for one database.
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let nodes: Vec<(&str, &str)> = doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| (n["database"].as_str().unwrap(), n["role"].as_str().unwrap()))
            .collect();
        assert_eq!(
            nodes,
            [(a.name.as_str(), "primary"), (b.name.as_str(), "primary")]
        );
        assert!(
            doc["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .all(|n| n["excluded"].is_null()),
            "a second database is audited, not left out: {doc:#}"
        );
        // A's duplicates on orders and other.things; B's on invoices only: A's orders
        // duplicate is not B's, though B has an orders table with an index of the same name.
        assert_eq!(
            duplicates_in(&doc, &a.name),
            ["orders", "things"],
            "{doc:#}"
        );
        assert_eq!(duplicates_in(&doc, &b.name), ["invoices"], "{doc:#}");
        assert!(
            doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["database"] == a.name.as_str() || f["database"] == b.name.as_str()),
            "{doc:#}"
        );
        assert!(
            doc["skipped"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["database"].is_string())
        );

        // Text names each finding's database; Prometheus keeps the two databases' same-named
        // series apart.
        let text = String::from_utf8(audit(&["-d", &da, "-d", &db]).stdout).unwrap();
        assert!(
            text.contains(&format!(
                "[duplicate_index] {}: public.invoices index",
                b.name
            )),
            "{text}"
        );
        assert!(text.contains("in 2 databases"), "{text}");
        let prom =
            String::from_utf8(audit(&["-d", &da, "-d", &db, "--format", "prometheus"]).stdout)
                .unwrap();
        assert_eq!(repeated_series(&prom), Vec::<&str>::new(), "{prom}");
        for database in [&a.name, &b.name] {
            let labels = format!("database=\"{database}\",schema=\"public\",table=\"orders\"");
            assert!(
                prom.contains(&format!("pgplan_audit_table_size_bytes{{{labels}}}")),
                "{prom}"
            );
        }

        // A database that does not exist: its node fails, the others' results still come out,
        // and the run is partial.
        let missing = format!("{}_missing", b.name);
        let dm = da.replace(&format!("dbname={}", a.name), &format!("dbname={missing}"));
        let out = audit(&["-d", &da, "-d", &dm, "-d", &db, "--format", "json"]);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc = json(&out);
        let failed = &doc["nodes"][1];
        assert_eq!(failed["database"], missing.as_str(), "{doc:#}");
        assert!(
            failed["error"].as_str().unwrap().contains("does not exist"),
            "{failed:#}"
        );
        assert_eq!(
            duplicates_in(&doc, &a.name),
            ["orders", "things"],
            "{doc:#}"
        );
        assert_eq!(duplicates_in(&doc, &b.name), ["invoices"], "{doc:#}");
        assert!(
            doc["skipped"].as_array().unwrap().iter().any(
                |s| s["database"] == missing.as_str() && s["reason"] == "no node could be read"
            ),
            "{doc:#}"
        );
        a.drop_db().await;
        b.drop_db().await;
    })
    .await;
}

/// Holds pg_statistic locked in another session so the audit waits inside its read-only
/// transaction (planning its catalog queries needs the statistics).
// The child is handed to the caller, which waits for it; clippy cannot see through the return.
#[allow(clippy::zombie_processes)]
async fn blocked_audit(db: &TestDb) -> (tokio_postgres::Client, std::process::Child) {
    let holder = db.client().await;
    holder
        .batch_execute("BEGIN; LOCK TABLE pg_catalog.pg_statistic IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let child = Command::new(pgplan_bin())
        .args([
            "audit",
            "-d",
            &db.conninfo(),
            "--lock-timeout",
            "60s",
            "--statement-timeout",
            "120s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let waiting = "SELECT count(*) FROM pg_stat_activity \
                   WHERE application_name = 'pgplan' AND wait_event_type = 'Lock'";
    db.wait_for(waiting, |n| n != "0", Duration::from_secs(30))
        .await
        .expect("the audit never reached the lock");
    (holder, child)
}

async fn assert_no_pgplan_session(db: &TestDb) {
    let sessions = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgplan'";
    if let Err(left) = db
        .wait_for(sessions, |n| n == "0", Duration::from_secs(30))
        .await
    {
        panic!("{left} pgplan sessions left");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interrupted_or_killed_audits_leave_nothing() {
    for_each_version("audit_interrupt", |major| async move {
        let db = TestDb::create(major, "audit_interrupt").await;
        db.run(SETUP).await;

        // Ctrl-C: the cancel request ends the wait at once; exit 130.
        let (holder, child) = blocked_audit(&db).await;
        let started = Instant::now();
        // SAFETY: signalling the child we started.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(130),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_no_pgplan_session(&db).await;
        holder.batch_execute("ROLLBACK").await.unwrap();

        // kill -9: the server ends the session when it finds the client gone.
        let (holder, mut child) = blocked_audit(&db).await;
        child.kill().unwrap();
        child.wait().unwrap();
        holder.batch_execute("ROLLBACK").await.unwrap();
        assert_no_pgplan_session(&db).await;
        db.drop_db().await;
    })
    .await;
}

/// Indexes of every shape the audit names or compares (expression, partial, INCLUDE, unique,
/// a foreign key's), beside SETUP's duplicates.
const SHAPES: &str = "
CREATE TABLE customers (id integer PRIMARY KEY, email text NOT NULL, \"Region\" text);
INSERT INTO customers SELECT i, 'c' || i || '@example.com', 'r' || i % 5 FROM generate_series(1, 2000) i;
CREATE UNIQUE INDEX customers_email_lower_idx ON customers (lower(email));
CREATE INDEX customers_email_lower_again_idx ON customers (lower(email));
CREATE INDEX customers_region_idx ON customers (\"Region\") INCLUDE (email);
CREATE INDEX customers_region_partial_idx ON customers (\"Region\") WHERE id > 100;
CREATE INDEX customers_region_partial_again_idx ON customers (\"Region\") WHERE id > 100;
ALTER TABLE orders ADD CONSTRAINT orders_customer_fk FOREIGN KEY (customer_id) REFERENCES customers (id) NOT VALID;
VACUUM (ANALYZE) customers;
";

/// An audit document without what moves with the clock (ages, windows, durations in words), so
/// two runs a moment apart compare equal.
fn without_clock(doc: &Value) -> String {
    let seconds = regex::Regex::new(r#""([a-z_]*_seconds)":-?[0-9.eE+-]+"#).unwrap();
    let words = regex::Regex::new(r"\b[0-9]+(\.[0-9]+)? (ms|s|min|h|d|days?)\b").unwrap();
    let text = seconds
        .replace_all(&doc.to_string(), r#""$1":0"#)
        .into_owned();
    words.replace_all(&text, "N $2").into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_second_connection_reads_the_indexes_on_the_same_snapshot() {
    for_each_version("audit_helper", |major| async move {
        let db = TestDb::create(major, "audit_helper").await;
        db.run(SETUP).await;
        db.run(SHAPES).await;
        db.run("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .await;
        if major < 15 {
            // The statistics collector creates the database's counters, and stamps their
            // start, once the first of its backends' messages arrives: until then the window
            // has another source, and two runs would differ by when they ran.
            let started = "SELECT stats_reset IS NOT NULL FROM pg_stat_database \
                           WHERE datname = current_database()";
            db.wait_for(started, |v| v == "t", Duration::from_secs(30))
                .await
                .expect("the database's counters start");
        }
        // The setup's rows reach the counters the findings quote (inserts in the window) when
        // its sessions flush them, and on 13-14 later still: all three runs must see them.
        let written = "SELECT sum(n_tup_ins + n_tup_upd + n_tup_del) FROM pg_stat_user_tables";
        db.settled_statistics(written, |n| n == "22000", Duration::from_secs(60))
            .await
            .expect("the setup's writes are counted");
        // As a plain role: a superuser's pgplan keeps its statements out of
        // pg_stat_statements, and the view is what shows the snapshot was shared below.
        db.run("CREATE ROLE audit_helper_reader LOGIN").await;
        let d = format!("{} user=audit_helper_reader", db.conninfo());
        // Long enough a window that no finding's wording changes between the two runs.
        let base = [
            "-d",
            d.as_str(),
            "--format",
            "json",
            "--min-stats-age",
            "1ms",
        ];
        let one = audit(&[&base[..], &["--connections", "1"]].concat());
        let two = audit(&[&base[..], &["--connections", "2"]].concat());
        let auto = audit(&[&base[..], &["--connections", "auto"]].concat());
        assert_eq!(
            one.status.code(),
            two.status.code(),
            "{}",
            String::from_utf8_lossy(&two.stderr)
        );
        let (one, two, auto) = (json(&one), json(&two), json(&auto));
        assert!(!findings(&one, "duplicate_index").is_empty(), "{one:#}");
        let quoted = one.to_string();
        // Expressions deparsed, plain columns named (and quoted) from the columns read beside
        // the indexes; the partial duplicates were compared by predicate.
        for name in [
            "lower(email)",
            "\\\"Region\\\"",
            "customers_region_partial_again_idx",
        ] {
            assert!(quoted.contains(name), "{name} is quoted: {one:#}");
        }
        assert_eq!(
            without_clock(&one),
            without_clock(&two),
            "one connection or two, one report"
        );
        assert_eq!(without_clock(&one), without_clock(&auto));
        // Only the `--connections 2` run shared its snapshot: a catalog this small is read on
        // one connection by `auto`.
        let counted = |pattern: &str| {
            format!(
                "SELECT coalesce(sum(s.calls), 0) FROM pg_stat_statements s \
                 JOIN pg_database d ON d.oid = s.dbid \
                 WHERE d.datname = current_database() AND s.query ILIKE '{pattern}'"
            )
        };
        assert_eq!(
            db.value(&counted("%pg_export_snapshot()%"))
                .await
                .as_deref(),
            Some("1")
        );
        assert_eq!(
            db.value(&counted("SET TRANSACTION SNAPSHOT%"))
                .await
                .as_deref(),
            Some("1")
        );
        assert_no_pgplan_session(&db).await;
    })
    .await;
}
