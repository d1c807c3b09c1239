//! `pgplan check` on real servers 13–18: without a baseline it says to record one (exit 2);
//! `--update` records a stable, sorted baseline with no timings or host names; unchanged runs
//! pass twenty times in a row; a dropped index fails (exit 1) naming the new sequential scan and
//! the pages; an added index passes as an improvement; the baseline is never rewritten without
//! `--update`; and nothing is left on the server.

mod common;

use std::path::Path;
use std::process::Output;

use common::{TestDb, for_each_version, json_stdout, pgplan_command, stderr};
use serde_json::Value;

/// `orders`: ten rows per customer, scattered over the table (a lookup by customer reads them
/// through the index, a few pages; without it, every page); `created_day` has no index at first.
const SETUP: &str = "
CREATE TABLE orders (
    id bigint PRIMARY KEY,
    customer_id integer NOT NULL,
    created_day integer NOT NULL,
    status text NOT NULL,
    pad text NOT NULL
);
INSERT INTO orders
SELECT i, i % 5000, (i * 7) % 365, CASE WHEN i % 3 = 0 THEN 'done' ELSE 'open' END, md5(i::text)
FROM generate_series(1, 50000) AS i;
CREATE INDEX orders_customer_idx ON orders (customer_id);
VACUUM (ANALYZE) orders;
";

fn workload_dir(dir: &Path) {
    std::fs::write(
        dir.join("lookup.sql"),
        "-- calls: 5000\n-- params: [42]\nSELECT id, status FROM orders WHERE customer_id = $1\n",
    )
    .unwrap();
    // Values for $1 chosen from the statistics at --update, then reused by every check.
    std::fs::write(
        dir.join("by_status.sql"),
        "-- calls: 100\nSELECT count(*) FROM orders WHERE status = $1\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("day_totals.sql"),
        "-- calls: 10\nSELECT status, count(*) FROM orders WHERE created_day = 17 GROUP BY status\n",
    )
    .unwrap();
}

fn check(db: &TestDb, dir: &Path, baseline: &Path, extra: &[&str]) -> Output {
    let mut cmd = pgplan_command(&["check", "-d", &db.conninfo()]);
    cmd.arg("--workload")
        .arg(dir)
        .arg("--baseline")
        .arg(baseline)
        .args(extra);
    cmd.output().expect("running pgplan")
}

fn query<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["queries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["id"] == id)
        .unwrap_or_else(|| panic!("no query {id}: {doc:#}"))
}

fn classes(q: &Value) -> Vec<String> {
    q["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["class"].as_str().unwrap().to_owned())
        .collect()
}

/// Every key of a JSON document, at any depth.
fn keys(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                keys(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

/// Holds a SARIF log to what SARIF 2.1.0 requires of it (version, runs, the tool's driver with
/// its name, each result's message, its rule among the driver's rules at `ruleIndex`, a level
/// of the four, and locations as URI references with a 1-based start line); returns the results.
fn validate_sarif(log: &Value) -> Vec<Value> {
    assert_eq!(log["version"], "2.1.0", "{log:#}");
    assert!(log["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    let runs = log["runs"].as_array().expect("runs is an array");
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert!(
        !driver["name"]
            .as_str()
            .expect("tool.driver.name")
            .is_empty()
    );
    let rules = driver["rules"].as_array().expect("driver.rules");
    let ids: Vec<&str> = rules
        .iter()
        .map(|r| r["id"].as_str().expect("rule id"))
        .collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "rule ids repeat: {ids:?}");
    for r in rules {
        assert!(r["shortDescription"]["text"].is_string(), "{r:#}");
    }
    let results = runs[0]["results"].as_array().expect("results is an array");
    for r in results {
        assert!(
            !r["message"]["text"]
                .as_str()
                .expect("message.text")
                .is_empty()
        );
        let rule = r["ruleId"].as_str().expect("ruleId");
        let index = r["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(ids[index], rule);
        assert!(["none", "note", "warning", "error"].contains(&r["level"].as_str().unwrap()));
        for l in r["locations"].as_array().expect("locations") {
            let uri = l["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .expect("uri");
            assert!(
                !uri.is_empty() && !uri.contains('\\') && !uri.contains(' '),
                "{uri}"
            );
            assert!(
                l["physicalLocation"]["region"]["startLine"]
                    .as_u64()
                    .unwrap()
                    >= 1
            );
        }
    }
    results.clone()
}

/// Parses JUnit XML back: (test case, failure type) for every failure, after checking the
/// suite's counts agree with its test cases.
fn junit_failures(xml: &str) -> Vec<(String, String)> {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("not XML ({e}):\n{xml}"));
    assert!(doc.root_element().has_tag_name("testsuites"));
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    let cases: Vec<_> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(suite.attribute("tests").unwrap(), cases.len().to_string());
    let failed = cases
        .iter()
        .filter(|c| c.children().any(|n| n.has_tag_name("failure")))
        .count();
    assert_eq!(suite.attribute("failures").unwrap(), failed.to_string());
    let mut found = Vec::new();
    for case in cases {
        for f in case.children().filter(|n| n.has_tag_name("failure")) {
            found.push((
                case.attribute("name").unwrap().to_owned(),
                f.attribute("type").unwrap().to_owned(),
            ));
        }
    }
    found
}

async fn state(db: &TestDb) -> (String, String) {
    (
        db.value("SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE schemaname = 'public'")
            .await
            .unwrap(),
        db.value("SELECT md5(string_agg(o::text, ',' ORDER BY id)) FROM orders o")
            .await
            .unwrap(),
    )
}

async fn assert_nothing_left(db: &TestDb, before: &(String, String)) {
    db.wait_until_pgplan_sessions_are_gone().await;
    assert_eq!(&state(db).await, before, "the server changed");
    let (locks, in_transaction) = db.pgplan_holdings().await;
    assert_eq!((locks.as_str(), in_transaction.as_str()), ("0", "0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dropped_index_fails_an_added_one_passes() {
    for_each_version("check_gate", |major| async move {
        let db = TestDb::create(major, "check_gate").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        workload_dir(dir.path());
        let baseline = dir.path().join("baseline.json");

        // No baseline yet: the check cannot run, and says how to start.
        let out = check(&db, dir.path(), &baseline, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("--update"), "{}", stderr(&out));
        assert!(!baseline.exists());

        let before = state(&db).await;
        let out = check(&db, dir.path(), &baseline, &["--update"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let recorded = std::fs::read_to_string(&baseline).unwrap();
        let doc: Value = serde_json::from_str(&recorded).unwrap();
        assert_eq!(doc["pgplan_baseline"], 1);
        assert_eq!(doc["mode"], "measured");
        assert_eq!(doc["server_major"], major);
        let ids: Vec<&str> = doc["queries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            vec!["by_status.sql", "day_totals.sql", "lookup.sql"],
            "sorted by id"
        );
        let by_status = doc["queries"][0]["samples"].as_array().unwrap();
        assert!(
            by_status
                .iter()
                .any(|s| s["params"] == serde_json::json!(["open"])),
            "{by_status:#?}"
        );
        let lookup = &doc["queries"][2]["samples"][0];
        assert_eq!(lookup["params"], serde_json::json!(["42"]));
        assert!(lookup["pages"]["median"].as_f64().unwrap() > 0.0, "{lookup:#}");
        assert!(
            lookup["relations"]["public.orders"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c.as_str().unwrap().contains("Index") || c == "Bitmap Heap Scan"),
            "{lookup:#}"
        );
        // No timings and nothing of the machine: only what changes with a plan.
        let mut all = Vec::new();
        keys(&doc, &mut all);
        assert!(
            !all.iter().any(|k| k.ends_with("_ms") || k.contains("time")),
            "{all:?}"
        );
        let socket = db.cluster.conninfo("x");
        let host = socket
            .split_whitespace()
            .find_map(|p| p.strip_prefix("host="))
            .unwrap()
            .trim_matches('\'');
        assert!(!recorded.contains(host), "the baseline names the host {host}");
        assert_nothing_left(&db, &before).await;

        // Unchanged: passes, twenty times in a row, and never touches the baseline.
        for run in 0..20 {
            let out = check(&db, dir.path(), &baseline, &["--format", "json"]);
            let doc = json_stdout(&out);
            assert_eq!(
                out.status.code(),
                Some(0),
                "run {run} of an unchanged workload failed: {doc:#}\n{}",
                stderr(&out)
            );
            assert_eq!(doc["schema_version"], 1);
            assert_eq!(doc["result"], "passed");
            assert_eq!(doc["summary"]["regressed"], 0);
        }
        assert_eq!(std::fs::read_to_string(&baseline).unwrap(), recorded);
        // Recorded again with no plan changed: the file stays as it was, byte for byte.
        let out = check(&db, dir.path(), &baseline, &["--update"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(std::fs::read_to_string(&baseline).unwrap(), recorded);

        // The index is dropped: the lookup reads the whole table.
        db.run("DROP INDEX orders_customer_idx").await;
        let before = state(&db).await;
        let out = check(&db, dir.path(), &baseline, &["--format", "json"]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let doc = json_stdout(&out);
        assert_eq!(doc["result"], "regressed");
        let lookup = query(&doc, "lookup.sql");
        assert_eq!(lookup["status"], "regressed", "{lookup:#}");
        let found = classes(lookup);
        assert!(found.contains(&"pages_regression".to_owned()), "{found:?}");
        assert!(found.contains(&"new_seq_scan".to_owned()), "{found:?}");
        assert_eq!(lookup["location"]["line"], 3, "{lookup:#}");
        assert!(
            lookup["location"]["file"].as_str().unwrap().ends_with("lookup.sql"),
            "{lookup:#}"
        );
        assert_eq!(query(&doc, "day_totals.sql")["status"], "unchanged");
        let text = check(&db, dir.path(), &baseline, &[]);
        assert_eq!(text.status.code(), Some(1));
        let text = String::from_utf8(text.stdout).unwrap();
        assert!(text.contains("REGRESSED  lookup.sql"), "{text}");
        assert!(text.contains("[new_seq_scan] Seq Scan on public.orders"), "{text}");
        let sarif_file = dir.path().join("check.sarif");
        let out = check(&db, dir.path(), &baseline, &["--format", "sarif", "-o", sarif_file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let sarif: Value = serde_json::from_str(&std::fs::read_to_string(&sarif_file).unwrap()).unwrap();
        let results = validate_sarif(&sarif);
        assert_eq!(results.len(), 1, "{sarif:#}");
        assert_eq!(results[0]["ruleId"], "pages_regression");
        let location = &results[0]["locations"][0]["physicalLocation"];
        assert!(location["artifactLocation"]["uri"].as_str().unwrap().ends_with("/lookup.sql"));
        assert_eq!(location["region"]["startLine"], 3);
        let out = check(&db, dir.path(), &baseline, &["--format", "junit"]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let failures = junit_failures(&String::from_utf8(out.stdout).unwrap());
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures.contains(&("lookup.sql".to_owned(), "new_seq_scan".to_owned())), "{failures:?}");
        assert!(failures.contains(&("lookup.sql".to_owned(), "pages_regression".to_owned())), "{failures:?}");
        assert_eq!(std::fs::read_to_string(&baseline).unwrap(), recorded);
        assert_nothing_left(&db, &before).await;

        // Back, and an index that helps the other query: passes, named as an improvement.
        db.run(
            "CREATE INDEX orders_customer_idx ON orders (customer_id); \
             CREATE INDEX orders_day_idx ON orders (created_day); ANALYZE orders",
        )
        .await;
        let before = state(&db).await;
        let out = check(&db, dir.path(), &baseline, &["--format", "json"]);
        let doc = json_stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{doc:#}\n{}", stderr(&out));
        assert_eq!(query(&doc, "day_totals.sql")["status"], "improved", "{doc:#}");
        assert_eq!(query(&doc, "lookup.sql")["status"], "unchanged", "{doc:#}");
        assert_eq!(std::fs::read_to_string(&baseline).unwrap(), recorded);
        assert_nothing_left(&db, &before).await;

        // A changed query text is matched by its file and shown with its diff; a new query is
        // reported; neither fails.
        std::fs::write(
            dir.path().join("lookup.sql"),
            "-- calls: 5000\n-- params: [42]\nSELECT id, status, pad FROM orders WHERE customer_id = $1\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("extra.sql"), "SELECT count(*) FROM orders WHERE id < 100\n").unwrap();
        let out = check(&db, dir.path(), &baseline, &["--format", "json"]);
        let doc = json_stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{doc:#}\n{}", stderr(&out));
        let lookup = query(&doc, "lookup.sql");
        assert_eq!(lookup["text_changed"], true);
        let diff = lookup["sql_diff"].as_str().unwrap();
        assert!(
            diff.contains("-SELECT id, status FROM orders") && diff.contains("+SELECT id, status, pad FROM orders"),
            "{diff}"
        );
        assert_eq!(query(&doc, "extra.sql")["status"], "new");
        assert_eq!(std::fs::read_to_string(&baseline).unwrap(), recorded);
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn estimated_checks_compare_plan_shapes_and_costs() {
    for_each_version("check_estimated", |major| async move {
        let db = TestDb::create(major, "check_estimated").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        workload_dir(dir.path());
        let baseline = dir.path().join("baseline.json");
        let before = state(&db).await;
        let out = check(&db, dir.path(), &baseline, &["--update", "--estimated"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
        assert_eq!(doc["mode"], "estimated");
        let sample = &doc["queries"][2]["samples"][0];
        assert!(sample["total_cost"].as_f64().unwrap() > 0.0, "{sample:#}");
        assert!(
            sample.get("pages").is_none(),
            "nothing is measured: {sample:#}"
        );
        assert!(sample["plan"][0].get("actual_rows").is_none(), "{sample:#}");

        // A measured check refuses an estimated baseline, saying how to fix it.
        let out = check(&db, dir.path(), &baseline, &[]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            stderr(&out).contains("check with --estimated"),
            "{}",
            stderr(&out)
        );

        let out = check(
            &db,
            dir.path(),
            &baseline,
            &["--estimated", "--format", "json"],
        );
        let doc = json_stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{doc:#}\n{}", stderr(&out));
        assert_eq!(doc["estimated"], true);

        db.run("DROP INDEX orders_customer_idx").await;
        let out = check(
            &db,
            dir.path(),
            &baseline,
            &["--estimated", "--format", "json"],
        );
        let doc = json_stdout(&out);
        assert_eq!(out.status.code(), Some(1), "{doc:#}\n{}", stderr(&out));
        let found = classes(query(&doc, "lookup.sql"));
        assert!(found.contains(&"cost_regression".to_owned()), "{found:?}");
        assert!(found.contains(&"new_seq_scan".to_owned()), "{found:?}");
        let text = check(&db, dir.path(), &baseline, &["--estimated"]);
        let text = String::from_utf8(text.stdout).unwrap();
        assert!(text.contains("ESTIMATED"), "{text}");
        db.run("CREATE INDEX orders_customer_idx ON orders (customer_id)")
            .await;
        assert_nothing_left(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}

/// Production: `status` is skewed (a rare value among common ones), so its statistics are worth
/// carrying; `pad` is text.
const PRODUCTION: &str = "
CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL, pad text NOT NULL);
INSERT INTO orders
SELECT i, CASE WHEN i % 100 = 0 THEN 'disputed' WHEN i % 3 = 0 THEN 'done' ELSE 'open' END, md5(i::text)
FROM generate_series(1, 30000) AS i;
ANALYZE orders;
";

fn stats(db: &TestDb, args: &[&str]) -> Output {
    let mut cmd = pgplan_command(&["stats"]);
    cmd.args(args).arg("-d").arg(db.conninfo());
    cmd.output().expect("running pgplan")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn production_statistics_move_to_a_ci_database() {
    for_each_version("check_stats", |major| async move {
        let prod = TestDb::create(major, "check_stats_prod").await;
        prod.run(PRODUCTION).await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("by_status.sql"),
            "SELECT id FROM orders WHERE status = $1\n",
        )
        .unwrap();
        let file = dir.path().join("stats.json");
        let prod_before = state_of(&prod).await;
        let out = stats(
            &prod,
            &["export", "--workload", dir.path().to_str().unwrap(), "-o", file.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(doc["pgplan_stats"], 1);
        assert_eq!(doc["values_withheld"], false);
        let table = &doc["tables"][0];
        assert_eq!((table["schema"].as_str(), table["table"].as_str()), (Some("public"), Some("orders")));
        assert_eq!(table["reltuples"], 30000.0);
        let status = table["stats"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["column"] == "status")
            .unwrap();
        assert!(status["most_common_vals"].as_str().unwrap().contains("disputed"), "{status:#}");
        assert_eq!(table["columns"][2], serde_json::json!({"name": "pad", "type": "text"}));

        // --no-values: the lists go, histograms stay.
        let out = stats(&prod, &["export", "--table", "orders", "--no-values"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let private = json_stdout(&out);
        assert_eq!(private["values_withheld"], true);
        let rows = private["tables"][0]["stats"].as_array().unwrap();
        assert!(rows.iter().all(|r| r.get("most_common_vals").is_none()), "{rows:#?}");
        assert!(rows.iter().any(|r| r["histogram_bounds"].is_string()), "{rows:#?}");
        assert_eq!(state_of(&prod).await, prod_before, "export changed the server");
        prod.wait_until_pgplan_sessions_are_gone().await;

        // A CI database: a few rows, `pad` of another type, a column production lacks.
        let ci = TestDb::create(major, "check_stats_ci").await;
        ci.run(
            "CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL, pad varchar(40), note text); \
             INSERT INTO orders SELECT i, 'open', 'x' FROM generate_series(1, 10) AS i; ANALYZE orders",
        )
        .await;
        let out = stats(&ci, &["import", file.to_str().unwrap()]);
        if major < 18 {
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
            assert!(stderr(&out).contains("needs PostgreSQL 18"), "{}", stderr(&out));
        } else {
            let printed = String::from_utf8_lossy(&out.stdout).into_owned();
            // Something did not match: exit 1, each named.
            assert_eq!(out.status.code(), Some(1), "{printed}\n{}", stderr(&out));
            assert!(printed.contains("public.orders.pad is character varying(40) here and text in the file"), "{printed}");
            assert!(printed.contains("public.orders.note has no statistics in the file"), "{printed}");
            assert_eq!(
                ci.value("SELECT reltuples::text FROM pg_class WHERE oid = 'orders'::regclass").await.as_deref(),
                Some("30000")
            );
            let mcv = ci
                .value("SELECT most_common_vals::text FROM pg_stats WHERE tablename = 'orders' AND attname = 'status'")
                .await
                .unwrap();
            assert!(mcv.contains("disputed"), "{mcv}");
            // The mismatched column kept its own statistics.
            let pad = ci
                .value("SELECT avg_width::text FROM pg_stats WHERE tablename = 'orders' AND attname = 'pad'")
                .await
                .unwrap();
            assert_eq!(pad, "2");
            ci.wait_until_pgplan_sessions_are_gone().await;
        }
        let out = stats(&ci, &["import", dir.path().join("missing.json").to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        prod.drop_db().await;
        ci.drop_db().await;
    })
    .await;
}

async fn state_of(db: &TestDb) -> (String, String) {
    (
        db.value("SELECT reltuples::text || '/' || relpages FROM pg_class WHERE oid = 'orders'::regclass")
            .await
            .unwrap(),
        db.value("SELECT md5(string_agg(s::text, ',' ORDER BY attname)) FROM pg_stats s WHERE tablename = 'orders'")
            .await
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_spill_fails_and_the_setting_behind_it_is_named() {
    for_each_version("check_spill", |major| async move {
        let db = TestDb::create(major, "check_spill").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        // 5,000 rows sorted: in memory with the default work_mem (4MB), on disk with 64kB.
        std::fs::write(
            dir.path().join("sorted.sql"),
            "SELECT pad FROM orders WHERE customer_id < 500 ORDER BY pad\n",
        )
        .unwrap();
        let baseline = dir.path().join("baseline.json");
        let out = check(&db, dir.path(), &baseline, &["--update"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let out = check(&db, dir.path(), &baseline, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

        db.run(&format!(
            "ALTER DATABASE \"{}\" SET work_mem = '64kB'",
            db.name
        ))
        .await;
        let out = check(&db, dir.path(), &baseline, &["--format", "json"]);
        let doc = json_stdout(&out);
        assert_eq!(out.status.code(), Some(1), "{doc:#}\n{}", stderr(&out));
        let sorted = query(&doc, "sorted.sql");
        assert_eq!(classes(sorted), vec!["new_spill".to_owned()], "{sorted:#}");
        let reason = sorted["regressions"][0]["message"].as_str().unwrap();
        assert!(reason.starts_with("Sort now spills to disk"), "{reason}");
        let settings = doc["settings_changed"].as_array().unwrap();
        assert!(
            settings
                .iter()
                .any(|s| s["name"] == "work_mem" && s["now"] == "64kB"),
            "{settings:#?}"
        );
        db.drop_db().await;
    })
    .await;
}

/// From a standby: export is read-only, so it runs there, planning the workload's queries too,
/// and reads what the primary's ANALYZE stored. One version (the newest tested): it starts a
/// primary and a standby of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn statistics_export_from_a_standby() {
    let Some(&major) = common::versions().last() else {
        return;
    };
    let primary =
        pgplan::db::cluster::Cluster::start(common::default_options(common::binaries(major)))
            .unwrap();
    primary.execute("postgres", PRODUCTION).await.unwrap();
    let standby = primary.start_standby().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("by_status.sql"),
        "SELECT id FROM orders WHERE status = $1\n",
    )
    .unwrap();
    let export = |conninfo: String| {
        let out = pgplan_command(&["stats", "export", "-d", &conninfo, "--workload"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        json_stdout(&out)
    };
    let from_primary = export(primary.conninfo("postgres"));
    // The standby replays the primary's pg_statistic rows; wait until it has them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let from_standby = loop {
        let doc = export(standby.conninfo("postgres"));
        if doc == from_primary || std::time::Instant::now() > deadline {
            break doc;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(
        from_standby, from_primary,
        "the standby's export differs from the primary's"
    );
    assert_eq!(from_standby["tables"][0]["table"], "orders");
}
