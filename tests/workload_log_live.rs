//! `--workload FILE.log`: a workload read from a real server's log on PostgreSQL 13–18, in
//! the stderr and csvlog formats (and jsonlog on 15+), as `log_min_duration_statement` writes
//! them, and auto_explain's plans: every statement counted once, an extended-protocol query measured with the parameter
//! values the server logged, what is not a query left out by name.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{TestDb, binaries, default_options, for_each_version, json_report, pgplan_command};
use pgplan::db::cluster::Cluster;

/// The log files of `ext` the collector wrote under the data directory's `log/`.
fn log_files(cluster: &Cluster, ext: &str) -> Vec<PathBuf> {
    let dir = cluster.data_dir().join("log");
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == ext))
                .collect()
        })
        .unwrap_or_default()
}

/// The concatenated text of the log files of `ext`, once it holds `marker` (the collector
/// writes a moment after the statement).
fn log_text(cluster: &Cluster, ext: &str, marker: &str) -> String {
    let started = Instant::now();
    loop {
        let text: String = log_files(cluster, ext)
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap_or_default())
            .collect();
        if text.contains(marker) {
            return text;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no {marker} in the .{ext} log: {text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_log_is_a_workload_with_its_logged_parameter_values() {
    for_each_version("workload_log", |major| async move {
        let destinations = if major >= 15 {
            "stderr,csvlog,jsonlog"
        } else {
            "stderr,csvlog"
        };
        let cluster = Cluster::start(
            default_options(binaries(major))
                .setting("logging_collector", "on")
                .setting("log_destination", destinations)
                .setting("log_min_duration_statement", 0)
                .setting("shared_preload_libraries", "pg_stat_statements,auto_explain")
                .setting("log_parameter_max_length", -1),
        )
        .unwrap_or_else(|e| panic!("starting PostgreSQL {major}: {e}"));
        let cluster: &'static Cluster = Box::leak(Box::new(cluster));
        cluster
            .execute("postgres", "CREATE DATABASE workload_log")
            .await
            .unwrap();
        let db = TestDb {
            cluster,
            name: "workload_log".into(),
        };
        db.run(
            "CREATE TABLE orders (id integer PRIMARY KEY, customer integer NOT NULL, note text NOT NULL); \
             INSERT INTO orders SELECT i, i % 3000, md5(i::text) FROM generate_series(1, 30000) AS i; \
             VACUUM (ANALYZE) orders;",
        )
        .await;
        let client = db.client().await;
        for customer in [42, 43, 44] {
            // The extended protocol: logged as `execute <unnamed>` with its parameters.
            client
                .query(
                    "SELECT id, note FROM orders WHERE customer = $1",
                    &[&customer],
                )
                .await
                .unwrap();
        }
        client
            .simple_query("SELECT count(*) FROM orders WHERE id < 100")
            .await
            .unwrap();
        // auto_explain alone in this session (both settings are a superuser's to change):
        // the plans are the executions, with their parameter values on 16+.
        client
            .batch_execute(
                "SET log_min_duration_statement = -1; SET auto_explain.log_min_duration = 0",
            )
            .await
            .unwrap();
        if major >= 16 {
            client
                .batch_execute("SET auto_explain.log_parameter_max_length = -1")
                .await
                .unwrap();
        }
        for id in [7, 8] {
            client
                .query("SELECT note FROM orders WHERE id = $1", &[&id])
                .await
                .unwrap();
        }
        client
            .batch_execute("SET log_min_duration_statement = 0")
            .await
            .unwrap();
        client
            .simple_query("SELECT 'workload_log_marker'")
            .await
            .unwrap();
        drop(client);

        let dir = tempfile::tempdir().unwrap();
        let mut formats = vec!["log", "csv"];
        if major >= 15 {
            formats.push("json");
        }
        for ext in formats {
            let text = log_text(cluster, ext, "workload_log_marker");
            let file = dir.path().join(format!("server.{ext}"));
            std::fs::write(&file, text).unwrap();
            let out = pgplan_command(&[
                "compare",
                "-d",
                &db.conninfo(),
                "--workload",
                file.to_str().unwrap(),
                "--index",
                "CREATE INDEX ON orders (customer)",
                "--runs",
                "1",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let doc = json_report(&out);
            let queries = doc["workload"]["queries"].as_array().unwrap();
            let by_customer = queries
                .iter()
                .find(|q| q["text"] == "SELECT id, note FROM orders WHERE customer = $1")
                .unwrap_or_else(|| panic!(".{ext}: {doc:#}"));
            assert_eq!(by_customer["calls"], 3.0, ".{ext}: {by_customer:#}");
            let sample = &by_customer["samples"][0];
            assert_eq!(sample["label"], "given", ".{ext}: {sample:#}");
            assert_eq!(sample["params"], serde_json::json!(["42"]), ".{ext}");
            assert!(
                queries
                    .iter()
                    .any(|q| q["text"] == "SELECT count(*) FROM orders WHERE id < 100"),
                ".{ext}: {doc:#}"
            );
            // auto_explain's plans, counted once each, with the logged value on 16+.
            let by_id = queries
                .iter()
                .find(|q| q["text"] == "SELECT note FROM orders WHERE id = $1")
                .unwrap_or_else(|| panic!(".{ext}: {doc:#}"));
            assert_eq!(by_id["calls"], 2.0, ".{ext}: {by_id:#}");
            if major >= 16 {
                assert_eq!(
                    by_id["samples"][0]["params"],
                    serde_json::json!(["7"]),
                    ".{ext}: {by_id:#}"
                );
            }
            // The candidate serves the logged query, measured with the logged value.
            let c = &doc["candidates"][0]["workload"];
            let measured = c["queries"]
                .as_array()
                .unwrap()
                .iter()
                .find(|q| q["id"] == by_customer["id"])
                .unwrap();
            assert_eq!(measured["used"], true, ".{ext}: {c:#}");
            // The setup's statements are no queries: named as left out.
            assert!(stderr.contains("VACUUM"), ".{ext}: {stderr}");
        }
        db.drop_db().await;
    })
    .await;
}
