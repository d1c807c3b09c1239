//! `pgplan demo` as a user runs it: a throwaway server, the story's verdicts, and nothing left
//! behind; and a clear message when there are no server binaries.

mod common;

use std::process::Command;

use common::pgplan_bin;

#[test]
fn the_demo_runs_the_story_and_removes_its_server() {
    // The newest version the tests run against.
    let Some(major) = common::versions().into_iter().max() else {
        return;
    };
    let binaries = common::binaries(major);
    let out = Command::new(pgplan_bin())
        .env("PGPLAN_PG_BIN", &binaries.bin_dir)
        .args(["demo", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let demo: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(demo["schema_version"], 3);
    let doc = &demo["compare"];
    assert_eq!(doc["best"], "events_pending_created_at_idx");
    assert_eq!(doc["candidates"].as_array().unwrap().len(), 3);
    for c in doc["candidates"].as_array().unwrap() {
        let expected = if c["index_name"] == "events_pending_created_at_idx" {
            "pays"
        } else {
            "unused"
        };
        assert_eq!(c["verdict"], expected, "{c:#}");
    }
    // The baseline touches every page of the 500,000-row table: about 9,000.
    let pages = doc["baseline"]["warm"]["pages_touched"].as_f64().unwrap();
    assert!((8_500.0..10_000.0).contains(&pages), "{pages}");
    assert!(stderr.contains("removed the throwaway server"), "{stderr}");
    // advise over the same workload proposes the two indexes an expert would, each measured
    // serving its query, and nothing for the update it did not run. For the dashboard that is
    // the partial index compare found best: 'pending' is 70% of the events, and the partial
    // index reads what the full one does with half the size and none of the other rows' writes.
    let advice = &demo["advise"];
    let rec = advice["recommended"].as_array().unwrap();
    for (definition, name, query) in [
        (
            "ON public.events (created_at DESC) WHERE status = 'pending'::text",
            "events_created_at_idx",
            "demo/workload/dashboard.sql",
        ),
        (
            "ON public.events (tenant_id, created_at DESC)",
            "events_tenant_id_created_at_idx",
            "demo/workload/tenant_feed.sql",
        ),
    ] {
        let r = rec
            .iter()
            .find(|r| r["definition"] == definition)
            .unwrap_or_else(|| panic!("{definition} not recommended: {advice:#}"));
        assert_eq!(r["name"], name, "{r:#}");
        let q = &r["queries"][0];
        assert_eq!(q["id"], query, "{r:#}");
        assert!(
            q["pages_after"].as_f64().unwrap() * 10.0 < q["pages_before"].as_f64().unwrap(),
            "{r:#}"
        );
        assert!(r["net_pages_saved_per_day"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(rec.len(), 2, "{advice:#}");
    // The full index was measured too, and rejected with its reason: with the partial one in
    // place the planner walks that one instead.
    let full = advice["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["definition"] == "ON public.events (status, created_at DESC)")
        .unwrap_or_else(|| panic!("the full index was not rejected: {advice:#}"));
    assert_eq!(full["reason"], "unused", "{full:#}");
    let partial = rec
        .iter()
        .find(|r| r["name"] == "events_created_at_idx")
        .unwrap();
    assert_eq!(
        partial["kinds"],
        serde_json::json!(["partial"]),
        "{partial:#}"
    );
    let figure = |doc: &serde_json::Value, key: &str| doc[key].as_f64().unwrap();
    assert!(
        figure(partial, "size_bytes") < figure(full, "size_bytes"),
        "{partial:#} {full:#}"
    );
    assert!(
        figure(partial, "write_pages_added_per_day") < figure(full, "write_pages_added_per_day"),
        "{partial:#} {full:#}"
    );
    // The demo ends with an audit of its own server: the Friday index is unused.
    let unused = demo["audit"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "unused_index" && f["index"] == "events_status_idx")
        .unwrap_or_else(|| panic!("{:#}", demo["audit"]));
    assert!(
        unused["fix"]
            .as_str()
            .unwrap()
            .contains("DROP INDEX CONCURRENTLY")
    );

    // Text output explains what the user is looking at.
    let out = Command::new(pgplan_bin())
        .env("PGPLAN_PG_BIN", &binaries.bin_dir)
        .env("NO_COLOR", "1")
        .arg("demo")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("What you are looking at"), "{text}");
    assert!(
        text.contains("Best: events_pending_created_at_idx"),
        "{text}"
    );
    assert!(text.contains("Why"), "{text}");
    assert!(text.contains("Then advise"), "{text}");
    assert!(
        text.contains("CREATE INDEX CONCURRENTLY events_created_at_idx ON public.events (created_at DESC) WHERE status = 'pending'::text"),
        "{text}"
    );
    assert!(
        text.contains("CREATE INDEX CONCURRENTLY events_tenant_id_created_at_idx"),
        "{text}"
    );
    assert!(text.contains("Then the audit"), "{text}");
    assert!(text.contains("events_status_idx"), "{text}");
}

#[test]
fn without_server_binaries_the_demo_says_how_to_get_them() {
    let out = Command::new(pgplan_bin())
        .env("PGPLAN_PG_BIN", "/nonexistent/bin")
        .arg("demo")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/bin"), "{stderr}");
    assert!(stderr.contains("initdb"), "{stderr}");
}

/// Ctrl-C while the demo's server is still being made (initdb, start-up) stops pgplan with 130
/// and leaves no directory or server process behind, however early it comes.
#[test]
fn ctrl_c_while_the_server_starts_leaves_nothing() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::time::Duration;
    let Some(major) = common::versions().into_iter().max() else {
        return;
    };
    let binaries = common::binaries(major);
    for delay_ms in [50, 300, 800] {
        let mut child = Command::new(pgplan_bin())
            .env("PGPLAN_PG_BIN", &binaries.bin_dir)
            .args(["demo", "--format", "json"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        stderr.read_line(&mut first).unwrap();
        assert!(first.contains("starting a throwaway"), "{first}");
        std::thread::sleep(Duration::from_millis(delay_ms));
        // SAFETY: signalling the child we started.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "after {delay_ms} ms: {rest}");
        let prefix = format!("owner-{}-", child.id());
        let left: Vec<String> = std::fs::read_dir(std::env::temp_dir().join("pgplan-clusters"))
            .map(|dir| {
                dir.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.starts_with(&prefix))
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "after {delay_ms} ms, left: {left:?}");
    }
}
