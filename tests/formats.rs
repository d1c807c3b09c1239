//! The TEXT, YAML and XML readers against the JSON reader, on plans recorded from real servers
//! 13 to 18 (`fixtures/formats/`, `scripts/record-fixtures.sh`): each case ran in JSON, TEXT,
//! YAML, XML and JSON again, back to back on a warm cache. A figure both JSON runs agree on is
//! one the other formats' runs must give too; timings always differ and are only checked for
//! presence. The psql captures (every border, line style, wrapped, expanded, CSV, a session)
//! are estimate-only, so they must agree with their JSON completely.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pgplan::plan::{Node, Plan, PlanFormat, parse_plan, read_plan};
use serde_json::Value;

fn formats_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/formats")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn plan_of(path: &Path) -> Plan {
    parse_plan(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every recorded case: `<case>.pg<major>`, for each the first JSON run.
fn cases() -> Vec<String> {
    let mut cases: Vec<String> = std::fs::read_dir(formats_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| {
            n.strip_suffix(".json")
                .filter(|s| !s.ends_with(".repeat"))
                .map(str::to_owned)
        })
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 250,
        "fixtures missing: {} cases",
        cases.len()
    );
    cases
}

/// What the TEXT format cannot show, by key: the value JSON gives in its place. Each is a
/// default the text leaves out and whose presence in JSON depends on the server version or an
/// option the text does not reveal.
fn text_cannot_say(key: &str, json: &Value) -> bool {
    match key {
        // JSON prints these on every node from 14 on, TEXT only when true.
        "Async Capable" => json == &Value::Bool(false),
        // TEXT prints it only with VERBOSE, and only when true; without VERBOSE, never.
        "Inner Unique" => true,
        _ => false,
    }
}

/// Timings: keys whose values differ on every run. Inside kept values (workers, JIT) too.
fn is_timing(key: &str) -> bool {
    key.ends_with("Time") || key == "Timing" || key == "Time"
}

fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_timing(k) {
                        Value::String("[timing]".into())
                    } else {
                        redact(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

/// The figures of one node by name, timings replaced by whether they are present.
fn node_figures(node: &Node) -> BTreeMap<String, Value> {
    let mut f = BTreeMap::new();
    let mut put = |k: &str, v: Value| {
        f.insert(k.to_owned(), v);
    };
    put("parent", serde_json::json!(node.parent));
    put("children", serde_json::json!(node.children));
    put("depth", serde_json::json!(node.depth));
    put("node_type", serde_json::json!(node.node_type));
    put(
        "parent_relationship",
        serde_json::json!(node.parent_relationship),
    );
    put("subplan_name", serde_json::json!(node.subplan_name));
    put("parallel_aware", serde_json::json!(node.parallel_aware));
    put("relation_name", serde_json::json!(node.relation_name));
    put("schema", serde_json::json!(node.schema));
    put("alias", serde_json::json!(node.alias));
    put("index_name", serde_json::json!(node.index_name));
    put("cte_name", serde_json::json!(node.cte_name));
    put("function_name", serde_json::json!(node.function_name));
    put("join_type", serde_json::json!(node.join_type));
    put("strategy", serde_json::json!(node.strategy));
    put("partial_mode", serde_json::json!(node.partial_mode));
    put("scan_direction", serde_json::json!(node.scan_direction));
    put("operation", serde_json::json!(node.operation));
    put("startup_cost", serde_json::json!(node.startup_cost));
    put("total_cost", serde_json::json!(node.total_cost));
    put("plan_rows", serde_json::json!(node.plan_rows));
    put("plan_width", serde_json::json!(node.plan_width));
    put("disabled", serde_json::json!(node.disabled));
    if let Some(a) = node.actual {
        put(
            "actual_startup_present",
            serde_json::json!(a.startup_ms.is_some()),
        );
        put(
            "actual_total_present",
            serde_json::json!(a.total_ms.is_some()),
        );
        put("actual_rows", serde_json::json!(a.rows));
        put("actual_loops", serde_json::json!(a.loops));
    } else {
        put("actual", Value::Null);
    }
    put(
        "rows_removed_by_filter",
        serde_json::json!(node.rows_removed_by_filter),
    );
    put(
        "rows_removed_by_join_filter",
        serde_json::json!(node.rows_removed_by_join_filter),
    );
    put(
        "rows_removed_by_index_recheck",
        serde_json::json!(node.rows_removed_by_index_recheck),
    );
    put("heap_fetches", serde_json::json!(node.heap_fetches));
    put(
        "exact_heap_blocks",
        serde_json::json!(node.exact_heap_blocks),
    );
    put(
        "lossy_heap_blocks",
        serde_json::json!(node.lossy_heap_blocks),
    );
    put("index_searches", serde_json::json!(node.index_searches));
    match node.buffers {
        Some(b) => {
            put("shared_hit_blocks", serde_json::json!(b.shared_hit_blocks));
            put(
                "shared_read_blocks",
                serde_json::json!(b.shared_read_blocks),
            );
            put(
                "shared_dirtied_blocks",
                serde_json::json!(b.shared_dirtied_blocks),
            );
            put(
                "shared_written_blocks",
                serde_json::json!(b.shared_written_blocks),
            );
            put("local_hit_blocks", serde_json::json!(b.local_hit_blocks));
            put("local_read_blocks", serde_json::json!(b.local_read_blocks));
            put(
                "local_dirtied_blocks",
                serde_json::json!(b.local_dirtied_blocks),
            );
            put(
                "local_written_blocks",
                serde_json::json!(b.local_written_blocks),
            );
            put("temp_read_blocks", serde_json::json!(b.temp_read_blocks));
            put(
                "temp_written_blocks",
                serde_json::json!(b.temp_written_blocks),
            );
        }
        None => put("buffers", Value::Null),
    }
    // I/O timings are timings: present or not.
    let io = node.io;
    put(
        "io_shared_read",
        serde_json::json!(io.shared_read_ms.is_some()),
    );
    put(
        "io_shared_write",
        serde_json::json!(io.shared_write_ms.is_some()),
    );
    put(
        "io_local_read",
        serde_json::json!(io.local_read_ms.is_some()),
    );
    put(
        "io_local_write",
        serde_json::json!(io.local_write_ms.is_some()),
    );
    put("io_temp_read", serde_json::json!(io.temp_read_ms.is_some()));
    put(
        "io_temp_write",
        serde_json::json!(io.temp_write_ms.is_some()),
    );
    put(
        "wal",
        serde_json::json!(node.wal.map(|w| (w.records, w.full_page_images, w.bytes))),
    );
    put("sort_method", serde_json::json!(node.sort_method));
    put(
        "sort_space_used_kb",
        serde_json::json!(node.sort_space_used_kb),
    );
    put("sort_space_type", serde_json::json!(node.sort_space_type));
    put("hash_buckets", serde_json::json!(node.hash_buckets));
    put(
        "original_hash_buckets",
        serde_json::json!(node.original_hash_buckets),
    );
    put("hash_batches", serde_json::json!(node.hash_batches));
    put(
        "original_hash_batches",
        serde_json::json!(node.original_hash_batches),
    );
    put(
        "peak_memory_usage_kb",
        serde_json::json!(node.peak_memory_usage_kb),
    );
    put("hashagg_batches", serde_json::json!(node.hashagg_batches));
    put("disk_usage_kb", serde_json::json!(node.disk_usage_kb));
    put("workers_planned", serde_json::json!(node.workers_planned));
    put("workers_launched", serde_json::json!(node.workers_launched));
    put("filter", serde_json::json!(node.filter));
    put("join_filter", serde_json::json!(node.join_filter));
    put("index_cond", serde_json::json!(node.index_cond));
    put("recheck_cond", serde_json::json!(node.recheck_cond));
    put("hash_cond", serde_json::json!(node.hash_cond));
    put("merge_cond", serde_json::json!(node.merge_cond));
    put("output", serde_json::json!(node.output));
    put("async_capable", serde_json::json!(node.async_capable));
    for (k, v) in node.extra.iter() {
        f.insert(format!("extra {k}"), redact(&Value::from(v)));
    }
    // Each worker's JIT block on its own: the rest of a worker's figures depend on how the run
    // split the rows ("extra Workers" is run-dependent), its compiled functions and options do not.
    let workers = node.extra.get("Workers").map(Value::from);
    let workers_jit: Vec<Value> = workers
        .as_ref()
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|w| {
            Some(serde_json::json!([
                w.get("Worker Number")?,
                redact(w.get("JIT")?)
            ]))
        })
        .collect();
    f.insert("workers_jit".into(), Value::Array(workers_jit));
    f
}

fn plan_figures(plan: &Plan) -> BTreeMap<String, Value> {
    let mut f = BTreeMap::new();
    f.insert("nodes".into(), serde_json::json!(plan.nodes.len()));
    f.insert(
        "planning_present".into(),
        serde_json::json!(plan.planning_ms.is_some()),
    );
    f.insert(
        "execution_present".into(),
        serde_json::json!(plan.execution_ms.is_some()),
    );
    f.insert(
        "planning_buffers".into(),
        serde_json::json!(plan.planning_buffers.map(|b| [
            b.shared_hit_blocks,
            b.shared_read_blocks,
            b.shared_dirtied_blocks,
            b.shared_written_blocks,
            b.local_hit_blocks,
            b.local_read_blocks,
            b.local_dirtied_blocks,
            b.local_written_blocks,
            b.temp_read_blocks,
            b.temp_written_blocks
        ])),
    );
    let triggers: Vec<Value> = plan
        .triggers
        .iter()
        .map(|t| {
            serde_json::json!([
                t.name,
                t.constraint,
                t.relation,
                t.calls,
                t.time_ms.is_some()
            ])
        })
        .collect();
    f.insert("triggers".into(), Value::Array(triggers));
    f.insert("settings".into(), serde_json::json!(plan.settings));
    f.insert("query_text".into(), serde_json::json!(plan.query_text));
    for (k, v) in &plan.extra {
        f.insert(format!("extra {k}"), redact(v));
    }
    f
}

/// A kept value without its I/O timings, for a plan that cannot say whether they were measured.
fn strip_io(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !k.contains("I/O"))
                .map(|(k, v)| (k.clone(), strip_io(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_io).collect()),
        other => other.clone(),
    }
}

/// Figures of a parallel plan that depend on how the run split its rows between the leader and
/// the workers (rows a Sort under Gather Merge returned before the Limit stopped it, temp blocks
/// of each worker's sort): five runs may agree by chance and the sixth not.
const RUN_DEPENDENT: [&str; 5] = [
    "actual_rows",
    "temp_read_blocks",
    "temp_written_blocks",
    "extra Workers",
    "shared_hit_blocks",
];

/// Whether the plan shows any I/O timing: TEXT prints `I/O Timings` only when one is not zero,
/// so a plan that shows none cannot say whether track_io_timing was on.
fn shows_io_timing(plan: &Plan) -> bool {
    plan.nodes.iter().any(|n| n.io.total_ms().is_some())
        || plan.extra.keys().any(|k| k.contains("I/O"))
}

/// The differences between `other` and the first JSON run, wherever the witnesses (the other
/// runs of the same case, each read by its own reader) agree with it.
fn differences(
    first: &Plan,
    witnesses: &[&Plan],
    other: &Plan,
    format: PlanFormat,
    major: u32,
) -> Vec<String> {
    let mut out = Vec::new();
    let io_unknown = format == PlanFormat::Text && !shows_io_timing(other);
    // 15 and 16 print I/O timings with the labels 17 uses, under other JSON keys ("I/O Read
    // Time", no local timings); a plan that shows nothing else of its version cannot say which.
    let io_naming_unknown = format == PlanFormat::Text && (15..=16).contains(&major);
    let parallel = first
        .nodes
        .iter()
        .any(|n| n.workers_launched.is_some_and(|w| w > 0.0));
    let mut compare = |place: &str,
                       a: &BTreeMap<String, Value>,
                       seen: &[BTreeMap<String, Value>],
                       o: &BTreeMap<String, Value>| {
        let keys: std::collections::BTreeSet<&String> = a.keys().chain(o.keys()).collect();
        for key in keys {
            let (mut va, mut vo) = (a.get(key).cloned(), o.get(key).cloned());
            if io_unknown {
                va = va.map(|v| strip_io(&v));
                vo = vo.map(|v| strip_io(&v));
            }
            let (va, vo) = (va.as_ref(), vo.as_ref());
            if seen.iter().any(|w| {
                let w = w
                    .get(key)
                    .map(|v| if io_unknown { strip_io(v) } else { v.clone() });
                w.as_ref() != va
            }) {
                continue; // the runs differ: not a figure to hold the other format to
            }
            if (io_unknown || io_naming_unknown) && (key.starts_with("io_") || key.contains("I/O"))
            {
                continue;
            }
            if va == vo {
                continue;
            }
            if format == PlanFormat::Text
                && vo.is_none()
                && let (Some(stripped), Some(v)) = (key.strip_prefix("extra "), va)
                && text_cannot_say(stripped, v)
            {
                continue;
            }
            // JSON prints these on every node (Async Capable from 14 on, Disabled from 18 on);
            // TEXT only when true, so a plan that does not show the version cannot say.
            if format == PlanFormat::Text
                && (key == "async_capable" || key == "disabled")
                && va == Some(&Value::Bool(false))
                && vo == Some(&Value::Null)
            {
                continue;
            }
            // The ModifyTable's child: "Member" on 13, "Outer" from 14 on; the text does not
            // say which.
            if format == PlanFormat::Text
                && key == "parent_relationship"
                && va == Some(&serde_json::json!("Member"))
                && vo == Some(&serde_json::json!("Outer"))
                && place.contains("parent of ModifyTable")
            {
                continue;
            }
            if parallel && RUN_DEPENDENT.contains(&key.as_str()) {
                continue;
            }
            out.push(format!(
                "{place} {key}: json {va:?}, {} {vo:?}",
                format.name()
            ));
        }
    };
    if first.nodes.len() != other.nodes.len() {
        out.push(format!(
            "{} nodes in JSON, {} in {}",
            first.nodes.len(),
            other.nodes.len(),
            format.name()
        ));
        return out;
    }
    let same_shape: Vec<&&Plan> = witnesses
        .iter()
        .filter(|w| w.nodes.len() == first.nodes.len())
        .collect();
    let seen: Vec<_> = same_shape.iter().map(|w| plan_figures(w)).collect();
    compare("plan", &plan_figures(first), &seen, &plan_figures(other));
    for id in 0..first.nodes.len() {
        let parent_is_modify = first.nodes[id]
            .parent
            .is_some_and(|p| first.nodes[p].node_type == "ModifyTable");
        let place = format!(
            "node {id} ({}{})",
            first.nodes[id].display_type(),
            if parent_is_modify {
                ", parent of ModifyTable"
            } else {
                ""
            }
        );
        let seen: Vec<_> = same_shape
            .iter()
            .map(|w| node_figures(&w.nodes[id]))
            .collect();
        compare(
            &place,
            &node_figures(&first.nodes[id]),
            &seen,
            &node_figures(&other.nodes[id]),
        );
    }
    out
}

/// Each format is held to the figures the JSON runs and the other formats' runs agree on: runs of
/// a parallel plan may split rows between workers differently, and two runs agreeing by chance
/// does not make a figure fixed.
fn check_format(ext: &str, format: PlanFormat, witnesses: &[&str]) {
    check_edited_format(ext, format, witnesses, str::to_owned);
}

/// As [`check_format`], each plan's text edited by `edit` first.
fn check_edited_format(
    ext: &str,
    format: PlanFormat,
    witnesses: &[&str],
    edit: fn(&str) -> String,
) {
    let dir = formats_dir();
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in cases() {
        let path = dir.join(format!("{case}.{ext}"));
        if !path.exists() {
            continue;
        }
        let first = plan_of(&dir.join(format!("{case}.json")));
        let others: Vec<Plan> = witnesses
            .iter()
            .map(|w| plan_of(&dir.join(format!("{case}.{w}"))))
            .collect();
        let others: Vec<&Plan> = others.iter().collect();
        let read = match read_plan(&edit(&read(&path)), None) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{case}.{ext}: {e}"));
                continue;
            }
        };
        assert_eq!(read.format, format, "{case}.{ext}");
        let major: u32 = case.rsplit(".pg").next().unwrap().parse().unwrap();
        for d in differences(&first, &others, &read.plan, format, major) {
            failures.push(format!("{case}.{ext}: {d}"));
        }
        checked += 1;
    }
    assert!(
        checked >= 250,
        "only {checked} {ext} plans read:\n{}",
        failures.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn text_plans_read_as_their_json() {
    check_format("txt", PlanFormat::Text, &["repeat.json", "yaml", "xml"]);
}

/// A plan edited by hand, or with its runs of spaces collapsed, keeps one space before its
/// costs: every figure reads as with EXPLAIN's two.
#[test]
fn text_plans_with_one_space_before_their_costs_read_as_their_json() {
    check_edited_format(
        "txt",
        PlanFormat::Text,
        &["repeat.json", "yaml", "xml"],
        |text| {
            assert!(text.contains("  (cost=") || !text.contains("(cost="));
            text.replace("  (cost=", " (cost=")
        },
    );
}

/// The first child's subtree of every recorded TEXT plan, pasted alone (`->  …` its first
/// line), reads as a subtree whose nodes carry the figures the whole plan gives them (the whole
/// plan being held to its JSON above). Only what a node's own lines say is compared: what the
/// reader fills in from signs elsewhere in the plan (BUFFERS, VERBOSE, the version) may not be
/// in the subtree.
#[test]
fn a_text_plans_subtree_pasted_alone_reads_as_in_the_whole_plan() {
    let dir = formats_dir();
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in cases() {
        let path = dir.join(format!("{case}.txt"));
        if !path.exists() {
            continue;
        }
        let text = read(&path);
        let whole = read_plan(&text, None).unwrap_or_else(|e| panic!("{case}: {e}"));
        if whole.count != 1 {
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        let Some(start) = lines
            .iter()
            .position(|l| l.trim_start().starts_with("->  "))
        else {
            continue;
        };
        let column = lines[start].len() - lines[start].trim_start().len();
        let end = (start + 1..lines.len())
            .find(|&i| {
                let l = lines[i];
                l.trim().is_empty() || l.len() - l.trim_start().len() <= column
            })
            .unwrap_or(lines.len());
        let pasted = lines[start..end].join("\n");
        let sub = match read_plan(&pasted, None) {
            Ok(r) => r.plan,
            Err(e) => {
                failures.push(format!("{case}: {e}"));
                continue;
            }
        };
        if !sub.subtree {
            failures.push(format!("{case}: not read as a subtree"));
        }
        let whole = whole.plan;
        // The first child's subtree: node 1 of the whole plan onwards, in pre-order.
        for (id, node) in sub.nodes.iter().enumerate() {
            let Some(in_whole) = whole.nodes.get(id + 1) else {
                failures.push(format!("{case}: {} nodes in the subtree", sub.nodes.len()));
                break;
            };
            let (a, b) = (node_figures(in_whole), node_figures(node));
            for key in [
                "node_type",
                "parallel_aware",
                "relation_name",
                "schema",
                "alias",
                "index_name",
                "cte_name",
                "function_name",
                "join_type",
                "strategy",
                "startup_cost",
                "total_cost",
                "plan_rows",
                "plan_width",
                "actual_startup_present",
                "actual_total_present",
                "actual_loops",
                "filter",
                "index_cond",
                "hash_cond",
                "output",
            ] {
                if a.get(key) != b.get(key) {
                    failures.push(format!(
                        "{case}: node {id} {key}: whole {:?}, subtree {:?}",
                        a.get(key),
                        b.get(key)
                    ));
                }
            }
            let children: Vec<usize> = node.children.iter().map(|c| c + 1).collect();
            if children != in_whole.children {
                failures.push(format!("{case}: node {id}'s children"));
            }
        }
        checked += 1;
    }
    assert!(
        checked >= 150,
        "only {checked} subtrees:\n{}",
        failures.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn yaml_plans_read_as_their_json() {
    check_format("yaml", PlanFormat::Yaml, &["repeat.json", "xml"]);
}

#[test]
fn xml_plans_read_as_their_json() {
    check_format("xml", PlanFormat::Xml, &["repeat.json", "yaml"]);
}

/// Every psql output style of the same estimate-only plan reads as its JSON.
#[test]
fn every_psql_style_reads_as_the_json() {
    let dir = formats_dir();
    let mut failures = Vec::new();
    let mut checked = 0;
    for major in 13..=18 {
        let case = format!("psql_styles.pg{major}");
        let json = plan_of(&dir.join(format!("{case}.json")));
        let mut styles: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{case}.psql-"))
            })
            .collect();
        styles.sort();
        assert!(styles.len() >= 18, "{case}: {} styles", styles.len());
        for path in styles {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let read = match read_plan(&read(&path), None) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{name}: {e}"));
                    continue;
                }
            };
            let expected = if name.contains("json") {
                PlanFormat::Json
            } else {
                PlanFormat::Text
            };
            if read.format != expected {
                failures.push(format!("{name}: read as {:?}", read.format));
            }
            for d in differences(&json, &[], &read.plan, read.format, major) {
                failures.push(format!("{name}: {d}"));
            }
            checked += 1;
        }
    }
    assert!(checked >= 108, "{checked}");
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// auto_explain's TEXT log excerpts: three plans each, with the log_line_prefix; the first is
/// read unless another is chosen, and each analyzed plan's execution time is its duration.
#[test]
fn auto_explain_text_logs_hold_several_plans() {
    let dir = formats_dir();
    for major in 13..=18 {
        let path = dir.join(format!("auto_explain_log.pg{major}.auto_explain.log"));
        let log = read(&path);
        let first = read_plan(&log, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!((first.number, first.count), (1, 3), "{}", path.display());
        assert_eq!(first.format, PlanFormat::Text);
        let json = plan_of(&dir.join(format!("auto_explain_log.pg{major}.json")));
        assert_eq!(first.plan.nodes.len(), json.nodes.len());
        for (t, j) in first.plan.nodes.iter().zip(&json.nodes) {
            assert_eq!(t.display_type(), j.display_type());
            assert_eq!(t.plan_rows, j.plan_rows);
            assert_eq!(t.total_cost, j.total_cost);
        }
        assert!(
            first
                .plan
                .query_text
                .as_deref()
                .unwrap()
                .starts_with("SELECT customer_id")
        );
        assert!(first.plan.execution_ms.is_some());
        let third = read_plan(&log, Some(3)).unwrap();
        assert_eq!(third.number, 3);
        assert!(
            third
                .plan
                .query_text
                .as_deref()
                .unwrap()
                .contains("country = 'nl'")
        );
        let err = read_plan(&log, Some(4)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "there is no plan 4: the input holds 3 (choose one with --plan 1 to 3)"
        );
    }
}

/// A session pasted with psql's prompt before the statement, and two results in one paste: the
/// first plan is read unless another is chosen, and the count says there are two.
#[test]
fn a_pasted_session_with_prompts_and_two_results() {
    let dir = formats_dir();
    let session = read(&dir.join("psql_styles.pg17.psql-session.txt"));
    let prompted = session.replacen("EXPLAIN (VERBOSE)", "fixtures=# EXPLAIN (VERBOSE)", 1);
    let json = plan_of(&dir.join("psql_styles.pg17.json"));
    let read_one = read_plan(&prompted, None).unwrap();
    assert_eq!((read_one.format, read_one.count), (PlanFormat::Text, 1));
    assert!(differences(&json, &[], &read_one.plan, PlanFormat::Text, 17).is_empty());

    let two = format!(
        "fixtures=# \\timing on\nTiming is on.\nfixtures=# EXPLAIN (VERBOSE) SELECT …;\n{}Time: 1.234 ms\nfixtures=# EXPLAIN (VERBOSE, FORMAT JSON) SELECT …;\n{}",
        read(&dir.join("psql_styles.pg17.psql-aligned.txt")),
        read(&dir.join("psql_styles.pg17.psql-aligned-json.txt"))
    );
    let first = read_plan(&two, None).unwrap();
    assert_eq!(
        (first.format, first.number, first.count),
        (PlanFormat::Text, 1, 2)
    );
    let second = read_plan(&two, Some(2)).unwrap();
    assert_eq!((second.format, second.number), (PlanFormat::Json, 2));
    assert!(differences(&json, &[], &second.plan, PlanFormat::Json, 17).is_empty());
}

/// JIT, recorded from a server built with LLVM: the plan's JIT summary and each worker's own JIT
/// block read from TEXT, YAML and XML as the JSON gives them (timings aside), and the check above
/// does compare them: the recorded plan has both.
#[test]
fn jit_and_jit_inside_workers_read_as_their_json() {
    let dir = formats_dir();
    let json = plan_of(&dir.join("jit_parallel.pg15.json"));
    let figures = |plan: &Plan| {
        let workers: Vec<Value> = plan
            .nodes
            .iter()
            .map(|n| node_figures(n)["workers_jit"].clone())
            .collect();
        (redact(&plan.extra["JIT"]), workers)
    };
    let expected = figures(&json);
    assert_eq!(expected.0["Functions"], 27);
    let in_workers: Vec<&Value> = expected
        .1
        .iter()
        .flat_map(|w| w.as_array().unwrap())
        .collect();
    assert_eq!(
        in_workers.len(),
        2,
        "two workers' JIT blocks: {in_workers:?}"
    );
    for ext in ["txt", "yaml", "xml"] {
        let path = dir.join(format!("jit_parallel.pg15.{ext}"));
        let read = read_plan(&read(&path), None).unwrap();
        assert_eq!(figures(&read.plan), expected, "{}", path.display());
        assert!(read.plan.extra["JIT"]["Timing"]["Total"].as_f64().unwrap() > 0.0);
    }
    let estimate = plan_of(&dir.join("jit_estimate.pg15.json"));
    for ext in ["txt", "yaml", "xml"] {
        let read = read_plan(&read(&dir.join(format!("jit_estimate.pg15.{ext}"))), None).unwrap();
        assert_eq!(
            read.plan.extra["JIT"], estimate.extra["JIT"],
            "jit_estimate.pg15.{ext}"
        );
    }
}
