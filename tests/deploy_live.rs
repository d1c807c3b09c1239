//! The periodic audit as fleets run it (`deploy/`): Prometheus's own tool accepts the metrics of
//! a live audit on every server version, the alerting rules, and their unit tests (one or more
//! per alert); the rules and the Grafana dashboard name only metrics pgplan exports.

mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{TestDb, for_each_version, pgplan_bin};

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(path)
}

/// promtool, from Debian's `prometheus` package (scripts/test.sh installs it).
fn promtool(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new("promtool")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("promtool: {e}; install it (Debian: apt-get install prometheus; scripts/test.sh does)")
        });
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        input.write_all(bytes).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const SETUP: &str = "
CREATE TABLE customers (id integer PRIMARY KEY);
INSERT INTO customers SELECT generate_series(1, 100);
CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer REFERENCES customers, status text);
INSERT INTO orders SELECT i, i % 100 + 1, 'done' FROM generate_series(1, 5000) i;
CREATE INDEX orders_status_idx ON orders (status);
CREATE INDEX orders_status_dup_idx ON orders (status);
CREATE TABLE \"we\"\"ird\" (id integer PRIMARY KEY, note text);
CREATE INDEX \"we\"\"ird_note\\idx\" ON \"we\"\"ird\" (note);
VACUUM (ANALYZE) customers, orders, \"we\"\"ird\";
SELECT count(*) FROM orders WHERE id = 7;
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn promtool_accepts_a_live_audit_s_metrics_on_every_version() {
    for_each_version("deploy_metrics", |major| async move {
        let db = TestDb::create(major, "deploy_metrics").await;
        db.run(SETUP).await;
        let out = Command::new(pgplan_bin())
            .args(["audit", "-d", &db.conninfo(), "--format", "prometheus"])
            .output()
            .unwrap();
        // Findings (exit 1) are what the metrics are for.
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let metrics = String::from_utf8(out.stdout).unwrap();
        for family in [
            "pgplan_audit_duplicate_index",
            "pgplan_audit_missing_fk_index",
            "pgplan_audit_index_scans_total",
            "pgplan_audit_timestamp_seconds",
            // The session gauges are written whether or not anything is a finding.
            "pgplan_audit_idle_in_transaction_max_seconds",
            "pgplan_audit_idle_advisory_locks",
            "pgplan_audit_lock_wait_max_seconds",
            "pgplan_audit_lock_waiters",
            "pgplan_audit_client_sessions",
            "pgplan_audit_connection_slots",
        ] {
            assert!(
                metrics.contains(&format!("# TYPE {family} ")),
                "no {family}:\n{metrics}"
            );
        }
        assert!(metrics.contains("# TYPE pgplan_audit_index_scans_total counter"));
        // Label values are escaped: a quote and a backslash in object names.
        assert!(metrics.contains(r#"table="we\"ird""#), "{metrics}");
        // promtool parses the exposition and lints the names (units, _total on counters).
        let check = promtool(&["check", "metrics"], Some(metrics.as_bytes()));
        assert!(
            check.status.success() && text(&check).trim().is_empty(),
            "promtool check metrics on PostgreSQL {major}:\n{}\n{metrics}",
            text(&check)
        );
        // Every family the audit wrote is one the rules and the dashboard may name.
        let known = pgplan::report::audit::prometheus_metric_names();
        for line in metrics.lines().filter(|l| l.starts_with("# TYPE ")) {
            let name = line.split_whitespace().nth(2).unwrap();
            assert!(
                known.contains(&name),
                "{name} is not in prometheus_metric_names"
            );
        }
    })
    .await;
}

#[test]
fn the_alerting_rules_pass_promtool_and_their_unit_tests() {
    let rules = deploy("prometheus/alerts.yaml");
    let check = promtool(&["check", "rules", rules.to_str().unwrap()], None);
    assert!(check.status.success(), "{}", text(&check));
    assert!(
        text(&check).contains("SUCCESS: 13 rules found"),
        "{}",
        text(&check)
    );
    let tests = deploy("prometheus/alerts.test.yaml");
    let run = promtool(&["test", "rules", tests.to_str().unwrap()], None);
    assert!(run.status.success(), "{}", text(&run));
    assert!(text(&run).contains("SUCCESS"), "{}", text(&run));
}

/// `alert: Name` lines of the rules, `alertname: Name` lines of their tests.
fn names_after(text: &str, key: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix(key))
        .map(|n| n.trim().to_owned())
        .collect()
}

#[test]
fn every_alert_has_a_unit_test_that_fires_it() {
    let rules = std::fs::read_to_string(deploy("prometheus/alerts.yaml")).unwrap();
    let tests = std::fs::read_to_string(deploy("prometheus/alerts.test.yaml")).unwrap();
    let alerts = names_after(&rules, "- alert:");
    assert_eq!(alerts.len(), 13, "{alerts:?}");
    for alert in &alerts {
        // A test of this alert that expects it to fire: its alertname followed by labels.
        let fires = tests.split("- eval_time:").any(|case| {
            case.contains(&format!("alertname: {alert}\n")) && case.contains("exp_labels:")
        });
        assert!(fires, "no unit test fires {alert}");
    }
    assert_eq!(names_after(&tests, "alertname:"), alerts);
}

/// The `pgplan_...` names a PromQL expression reads.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(start) = rest.find("pgplan_") {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.push(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

fn expressions(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("expr" | "query" | "definition", serde_json::Value::String(s)) => {
                        out.push(s.clone())
                    }
                    _ => expressions(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| expressions(v, out)),
        _ => {}
    }
}

#[test]
fn the_dashboard_and_the_rules_name_only_metrics_pgplan_exports() {
    let known = pgplan::report::audit::prometheus_metric_names();
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(deploy("grafana/pgplan-audit.json")).unwrap(),
    )
    .unwrap();
    let mut exprs = Vec::new();
    expressions(&dashboard, &mut exprs);
    assert!(exprs.len() > 15, "{exprs:?}");
    let rules = std::fs::read_to_string(deploy("prometheus/alerts.yaml")).unwrap();
    exprs.extend(
        rules
            .lines()
            .filter_map(|l| l.trim().strip_prefix("expr:"))
            .map(str::to_owned),
    );
    let mut used = BTreeSet::new();
    for expr in &exprs {
        for name in metric_names(expr) {
            assert!(
                known.contains(&name.as_str()),
                "{name} (in {expr}) is not a metric pgplan exports"
            );
            used.insert(name);
        }
    }
    // The dashboard shows the audit's health and the findings the alerts are about.
    for name in [
        "pgplan_audit_node_up",
        "pgplan_audit_timestamp_seconds",
        "pgplan_audit_findings",
        "pgplan_audit_dead_tuples",
        "pgplan_audit_invalid_index",
        "pgplan_audit_xmin_horizon",
        "pgplan_audit_xid_wraparound",
    ] {
        assert!(used.contains(name), "nothing reads {name}");
    }
    assert_eq!(dashboard["uid"], "pgplan-audit");
}

#[test]
fn the_cronjob_script_is_valid_sh_and_hands_on_partial_audits() {
    let script = deploy("kubernetes/run-audit.sh");
    let syntax = Command::new("sh").arg("-n").arg(&script).output().unwrap();
    assert!(syntax.status.success(), "{}", text(&syntax));
    // The textfile path: pgplan's -o renames into place; findings (exit 1) and a partial audit
    // (exit 3) still leave the job succeeded, with the file written.
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("bin");
    std::fs::create_dir(&fake).unwrap();
    let pgplan = fake.join("pgplan");
    std::fs::write(
        &pgplan,
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do case $1 in -o) out=$2; shift;; -d) echo \"$2\" >>\"$NODES_SEEN\";; esac; shift; done\necho 'pgplan_audit_timestamp_seconds 1' >\"$out\"\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&pgplan, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let textfile = dir.path().join("textfile");
    std::fs::create_dir(&textfile).unwrap();
    let seen = dir.path().join("nodes");
    let out = Command::new("sh")
        .arg(&script)
        .env("PATH", format!("{}:/usr/bin:/bin", fake.display()))
        .env(
            "PGPLAN_NODES",
            "host=primary dbname=app\nhost=replica dbname=app\n",
        )
        .env("PGPLAN_INSTANCE", "app")
        .env("TEXTFILE_DIR", &textfile)
        .env("NODES_SEEN", &seen)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        "host=primary dbname=app\nhost=replica dbname=app\n"
    );
    assert!(textfile.join("pgplan-app.prom").is_file());
}
