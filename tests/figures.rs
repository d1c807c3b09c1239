//! Figures checked by hand against recorded plans from PostgreSQL 13 and 18, where the data is
//! known (fixtures/plans/setup.sql): loops, parallel workers, per-loop rounding, totals.

use std::path::Path;

use pgplan::plan::{Analysis, parse_plan};

fn analysis(name: &str) -> Analysis {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/plans")
        .join(name);
    Analysis::of(parse_plan(&std::fs::read_to_string(path).unwrap()).unwrap())
}

fn node<'a>(
    a: &'a Analysis,
    node_type: &str,
    relation: Option<&str>,
) -> (usize, &'a pgplan::plan::Node) {
    a.plan
        .nodes
        .iter()
        .enumerate()
        .find(|(_, n)| n.node_type == node_type && n.relation_name.as_deref() == relation)
        .unwrap_or_else(|| panic!("no {node_type} on {relation:?}"))
}

/// orders: 200,000 rows; amount > 50 keeps i % 1000 in 501..999, 499 of every 1,000 rows.
#[test]
fn a_parallel_scan_sums_leader_and_workers() {
    for (version, rows_per_loop, kept_total) in [(13, 33267.0, 99801.0), (18, 33266.67, 99800.01)] {
        let a = analysis(&format!("parallel_seq_scan_gather.pg{version}.json"));
        let (id, scan) = node(&a, "Seq Scan", Some("orders"));
        let m = &a.metrics.nodes[id];
        assert!(scan.parallel_aware);
        assert!(m.in_parallel_worker);
        // Three processes: the leader and two workers.
        assert_eq!(scan.actual.unwrap().loops, 3.0);
        assert_eq!(
            scan.actual.unwrap().rows,
            rows_per_loop,
            "PostgreSQL {version}"
        );
        // Before 18 the per-loop average is rounded, so the total is off by up to loops/2 rows.
        assert!(
            (m.actual_rows_total.unwrap() - kept_total).abs() < 0.001,
            "{version}: {:?}",
            m.actual_rows_total
        );
        assert!((m.actual_rows_total.unwrap() - 99_800.0).abs() <= 1.5);
        // Rows removed: 100,200 of them, 33,400 per process.
        assert_eq!(m.rows_removed_by_filter_total, Some(100_200.0));
        // Every page of orders was read once across the processes.
        assert_eq!(scan.buffers.unwrap().shared_hit_blocks, 2659.0);
        let (_, gather) = node(&a, "Gather Merge", None);
        assert_eq!(gather.workers_launched, Some(2.0));
    }
}

/// 1,439 orders before noon on the first day, each looking up its customer by primary key.
#[test]
fn an_inner_index_scan_runs_once_per_outer_row() {
    for version in [13, 18] {
        let a = analysis(&format!("nested_loop_inner_index.pg{version}.json"));
        let (id, inner) = node(&a, "Index Scan", Some("customers"));
        let m = &a.metrics.nodes[id];
        assert_eq!(inner.actual.unwrap().loops, 1439.0);
        assert_eq!(inner.actual.unwrap().rows, 1.0);
        assert_eq!(m.actual_rows_total, Some(1439.0));
        assert_eq!(m.estimated_rows_total, Some(1439.0));
        // Buffers are totals over all loops: three pages (root, leaf, heap) per lookup.
        assert_eq!(inner.buffers.unwrap().shared_hit_blocks, 4317.0);
        // The join itself touches nothing of its own.
        let (join, _) = node(&a, "Nested Loop", None);
        assert_eq!(
            a.metrics.nodes[join]
                .exclusive_buffers
                .unwrap()
                .pages_touched(),
            0.0
        );
        assert_eq!(a.metrics.totals.pages_touched, Some(4342.0));
        // One row per loop, exactly as estimated.
        assert_eq!(m.misestimate.unwrap().factor, 1.0);
    }
}

#[test]
fn heap_fetches_and_lossy_blocks_are_totals() {
    for version in [13, 18] {
        let a = analysis(&format!("index_only_scan_heap_fetches.pg{version}.json"));
        let (_, scan) = node(&a, "Index Only Scan", Some("readings"));
        assert_eq!(scan.heap_fetches, Some(44336.0));
        assert!(a.findings.iter().any(|f| f.kind.as_str() == "heap_fetches"));

        let a = analysis(&format!("bitmap_heap_scan_lossy.pg{version}.json"));
        let (id, scan) = node(&a, "Bitmap Heap Scan", Some("orders"));
        // customer_id < 120 keeps 119 of the 200 customers: 119,000 orders.
        assert_eq!(a.metrics.nodes[id].actual_rows_total, Some(119_000.0));
        assert_eq!(scan.lossy_heap_blocks, Some(2070.0));
        assert_eq!(
            a.metrics.nodes[id].rows_removed_by_index_recheck_total,
            Some(63_661.0)
        );
        assert!(a.findings.iter().any(|f| f.kind.as_str() == "lossy_bitmap"));
    }
}

#[test]
fn never_executed_nodes_are_not_fast_nodes() {
    for version in 13..=18 {
        let a = analysis(&format!("never_executed.pg{version}.json"));
        let never: Vec<&str> = a
            .plan
            .nodes
            .iter()
            .enumerate()
            .filter(|(id, _)| a.metrics.nodes[*id].never_executed)
            .map(|(_, n)| n.node_type.as_str())
            .collect();
        assert!(!never.is_empty(), "PostgreSQL {version}");
        for (id, n) in a.plan.nodes.iter().enumerate() {
            if a.metrics.nodes[id].never_executed {
                assert_eq!(n.actual.unwrap().loops, 0.0);
                assert_eq!(
                    a.metrics.nodes[id].misestimate, None,
                    "no estimate error for {}",
                    n.node_type
                );
            }
        }
    }
}

#[test]
fn version_differences_are_read_the_same_way() {
    // 17 renamed the I/O timing keys; both land in the same field.
    for version in [13, 16, 17, 18] {
        let a = analysis(&format!("seq_scan_filter.pg{version}.json"));
        assert!(
            a.plan.nodes[0].io.shared_read_ms.is_some(),
            "PostgreSQL {version}"
        );
    }
    // 17 dropped "(returns $1)" from init plan names.
    let old = analysis("initplan_subplan.pg16.json");
    let new = analysis("initplan_subplan.pg17.json");
    let name = |a: &Analysis| {
        a.plan
            .nodes
            .iter()
            .find_map(|n| n.subplan_name.clone().filter(|s| s.starts_with("InitPlan")))
            .unwrap()
    };
    assert!(name(&old).contains("returns"));
    assert!(!name(&new).contains("returns"));
    // 18 reports Disabled instead of adding 1e10 to the cost; both are found.
    for version in [16, 18] {
        let a = analysis(&format!("disabled_node.pg{version}.json"));
        assert!(
            a.findings
                .iter()
                .any(|f| f.kind.as_str() == "disabled_node"),
            "PostgreSQL {version}"
        );
    }
    // 18 turns BUFFERS on with ANALYZE.
    assert!(!analysis("without_buffers.pg17.json").plan.has_buffers());
    assert!(analysis("without_buffers.pg18.json").plan.has_buffers());
    // Estimates beyond u64.
    let huge = analysis("huge_estimate.pg18.json");
    assert!(
        huge.plan
            .nodes
            .iter()
            .any(|n| n.plan_rows.unwrap_or(0.0) > 1e29)
    );
}

/// Every recorded plan, server JSON and psql captures.
fn every_fixture() -> Vec<(String, Analysis)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut out = Vec::new();
    for dir in ["plans", "story", "advise"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".json") || name.ends_with(".psql.txt") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((name, Analysis::of(parse_plan(&text).unwrap())));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Exclusive figures split the plan's work among its nodes: they add up to the root's inclusive
/// figures, with no work counted twice (a materialized CTE's work sits in the CTE's own nodes,
/// not also in the CTE Scan that pulled it) and none lost.
#[test]
fn exclusive_figures_add_up_to_the_root() {
    let mut checked = 0;
    for (name, a) in every_fixture() {
        let root = &a.metrics.nodes[0];
        if let Some(total) = root.inclusive_ms {
            let sum: f64 = a.metrics.nodes.iter().filter_map(|m| m.exclusive_ms).sum();
            // Per-loop times are printed to the microsecond, so a node's time × loops is off by
            // up to half a microsecond per loop (a Memoize hit prints 0.000 ms), and a parallel
            // node's time is an average over its processes: allow that, and 1% besides.
            let rounding: f64 = a
                .metrics
                .nodes
                .iter()
                .map(|m| 0.001 + 0.0005 * m.loops.unwrap_or(1.0))
                .sum();
            let slack = rounding + 0.01 * total;
            assert!(
                (sum - total).abs() <= slack,
                "{name}: exclusive times sum to {sum} ms, the root took {total} ms"
            );
            checked += 1;
        }
        if let Some(pages) = a.metrics.totals.pages_touched {
            let sum: f64 = a
                .metrics
                .nodes
                .iter()
                .filter_map(|m| m.exclusive_buffers.map(|b| b.pages_touched()))
                .sum();
            assert_eq!(sum, pages, "{name}: exclusive pages against the root's");
        }
    }
    assert!(checked > 100, "only {checked} timed plans");
}

/// orders: 200,000 rows; the CTE sums them per customer (200 customers, 1,000 orders each).
#[test]
fn a_materialized_cte_is_counted_once() {
    for version in 13..=18 {
        let a = analysis(&format!("cte_materialized.pg{version}.json"));
        let (scan, _) = node(&a, "CTE Scan", None);
        let cte = a
            .plan
            .nodes
            .iter()
            .position(|n| n.subplan_name.as_deref() == Some("CTE totals"))
            .unwrap();
        let scan_m = &a.metrics.nodes[scan];
        let cte_m = &a.metrics.nodes[cte];
        // The CTE's plan read every page of orders (2,632); the scan of its tuplestore, none.
        let cte_pages = a.plan.nodes[cte].buffers.unwrap().pages_touched();
        assert!(cte_pages >= 2632.0, "PostgreSQL {version}: {cte_pages}");
        assert_eq!(
            scan_m.exclusive_buffers.unwrap().pages_touched(),
            0.0,
            "PostgreSQL {version}"
        );
        // The scan's own time is what is left of its inclusive time after the CTE's.
        let own = scan_m.exclusive_ms.unwrap();
        let expected = (scan_m.inclusive_ms.unwrap() - cte_m.inclusive_ms.unwrap()).max(0.0);
        assert!((own - expected).abs() < 0.002, "PostgreSQL {version}");
        assert!(own < cte_m.inclusive_ms.unwrap(), "PostgreSQL {version}");
    }
}

/// EXPLAIN (ANALYZE, TIMING OFF): rows and loops measured, times absent, and absent is not 0.
#[test]
fn timing_off_leaves_times_unknown() {
    for version in 13..=18 {
        let a = analysis(&format!("timing_off.pg{version}.json"));
        assert!(a.plan.is_analyzed());
        for (id, n) in a.plan.nodes.iter().enumerate() {
            let actual = n.actual.unwrap();
            assert_eq!(actual.total_ms, None, "PostgreSQL {version}");
            assert!(actual.loops >= 1.0 || a.metrics.nodes[id].never_executed);
            assert_eq!(a.metrics.nodes[id].inclusive_ms, None);
            assert_eq!(a.metrics.nodes[id].exclusive_ms, None);
        }
        // Rows are still measured, and the statement's own time is still reported.
        assert!(a.metrics.nodes[0].actual_rows_total.unwrap() > 0.0);
        assert!(a.plan.execution_ms.is_some());
        let doc = serde_json::to_value(pgplan::report::wire::ExplainDoc::new(&a)).unwrap();
        for node in doc["nodes"].as_array().unwrap() {
            for key in ["actual_total_ms", "inclusive_ms", "exclusive_ms"] {
                assert!(node[key].is_null(), "PostgreSQL {version}: {key}");
            }
        }
        let mut text = Vec::new();
        pgplan::report::text::write_explain(&mut text, "t", &a, &Default::default()).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(!text.contains(" ms\n"), "no node time: {text}");
        assert!(text.contains("TIMING OFF"), "{text}");
    }
}

#[test]
fn never_executed_nodes_have_no_time() {
    for version in 13..=18 {
        let a = analysis(&format!("never_executed.pg{version}.json"));
        let doc = serde_json::to_value(pgplan::report::wire::ExplainDoc::new(&a)).unwrap();
        for (id, m) in a.metrics.nodes.iter().enumerate() {
            if m.never_executed {
                assert_eq!(m.inclusive_ms, None, "PostgreSQL {version}");
                assert_eq!(m.exclusive_ms, None, "PostgreSQL {version}");
                let node = &doc["nodes"][id];
                for key in ["inclusive_ms", "exclusive_ms", "actual_total_ms"] {
                    assert!(node[key].is_null(), "PostgreSQL {version}: {key}");
                }
            }
        }
        // The join saw no rows at all: its 1,000× overestimate cost nothing, and is no finding.
        assert!(
            !a.findings.iter().any(|f| f.kind.as_str() == "misestimate"),
            "PostgreSQL {version}: {:?}",
            a.findings
        );
    }
}

/// A plain Gather (no merge): Finalize Aggregate ← Gather ← Partial Aggregate ← Parallel Seq
/// Scan over orders (2,632 pages), amount > 50 keeping 499 of every 1,000 of its 200,000 rows.
/// Times are the recorded ones; the figures below are worked out by hand from them.
#[test]
fn a_plain_gather_of_a_parallel_aggregate() {
    // (version, scan rows per loop, scan ms, partial ms, gather ms, finalize ms)
    for (version, rows_per_loop, scan_ms, partial_ms, gather_ms, finalize_ms) in [
        (13, 33267.0, 46.566, 68.418, 123.088, 123.115),
        (18, 33266.67, 25.687, 32.609, 51.762, 51.776),
    ] {
        let a = analysis(&format!("gather_aggregate.pg{version}.json"));
        let types: Vec<(String, Option<&str>)> = a
            .plan
            .nodes
            .iter()
            .map(|n| (n.display_type(), n.partial_mode.as_deref()))
            .collect();
        assert_eq!(
            types,
            [
                ("Aggregate".to_owned(), Some("Finalize")),
                ("Gather".to_owned(), None),
                ("Aggregate".to_owned(), Some("Partial")),
                ("Parallel Seq Scan".to_owned(), None),
            ],
            "PostgreSQL {version}"
        );
        let m = &a.metrics.nodes;
        let gather = &a.plan.nodes[1];
        assert_eq!(gather.workers_launched, Some(2.0));
        // The leader and two workers: three processes run everything below the Gather.
        for id in [2, 3] {
            assert!(m[id].in_parallel_worker, "node {id}");
            assert_eq!(m[id].loops, Some(3.0), "node {id}");
        }
        assert!(!m[1].in_parallel_worker);
        // Rows × loops: one partial count per process, and 99,800 kept rows (before 18 the
        // per-loop average is rounded: 33,267 × 3 = 99,801).
        assert_eq!(m[2].actual_rows_total, Some(3.0));
        assert_eq!(m[1].actual_rows_total, Some(3.0));
        let kept = m[3].actual_rows_total.unwrap();
        assert!((kept - rows_per_loop * 3.0).abs() < 1e-6, "{kept}");
        assert!((kept - 99_800.0).abs() <= 1.5, "{kept}");
        // 33,400 removed per process.
        assert_eq!(m[3].rows_removed_by_filter_total, Some(100_200.0));
        // Elapsed time below the Gather is CPU time over the three processes: per-loop time.
        let close = |got: Option<f64>, want: f64| {
            let got = got.unwrap();
            assert!(
                (got - want).abs() < 0.0015,
                "PostgreSQL {version}: {got} ≠ {want}"
            );
        };
        close(m[3].inclusive_ms, scan_ms);
        close(m[2].inclusive_ms, partial_ms);
        close(m[3].exclusive_ms, scan_ms);
        close(m[2].exclusive_ms, partial_ms - scan_ms);
        close(m[1].exclusive_ms, gather_ms - partial_ms);
        close(m[0].exclusive_ms, finalize_ms - gather_ms);
        // Every page was read by the scan; nothing above it touches a page of its own.
        assert_eq!(a.plan.nodes[3].buffers.unwrap().shared_hit_blocks, 2632.0);
        for above in &m[..3] {
            assert_eq!(above.exclusive_buffers.unwrap().pages_touched(), 0.0);
        }
        assert_eq!(a.metrics.totals.pages_touched, Some(2632.0));
        assert!(a.findings.is_empty(), "{:?}", a.findings);
    }
}

/// Spills the node's own keys do not show: a parallel sort that went to disk in its workers
/// only (the leader did not take part), and an Incremental Sort's pre-sorted groups.
#[test]
fn spills_seen_in_workers_and_sort_groups() {
    for version in 13..=18 {
        let a = analysis(&format!("parallel_sort_spill_workers.pg{version}.json"));
        let (id, sort) = node(&a, "Sort", None);
        assert_eq!(sort.sort_method, None, "PostgreSQL {version}");
        let f = a
            .findings
            .iter()
            .find(|f| f.kind.as_str() == "sort_spill")
            .unwrap_or_else(|| panic!("PostgreSQL {version}: {:?}", a.findings));
        assert_eq!(f.node, Some(id));
        assert!(
            f.message.contains("external merge in 2 of 2 workers"),
            "{}",
            f.message
        );

        let a = analysis(&format!("incremental_sort_spill.pg{version}.json"));
        let (id, _) = node(&a, "Incremental Sort", None);
        let f = a
            .findings
            .iter()
            .find(|f| f.kind.as_str() == "sort_spill")
            .unwrap_or_else(|| panic!("PostgreSQL {version}: {:?}", a.findings));
        assert_eq!(f.node, Some(id));
        assert!(f.message.contains("external merge"), "{}", f.message);
    }
}

/// A BRIN bitmap is lossy by design: a finding about the recheck, not "outgrew work_mem".
#[test]
fn a_brin_bitmap_is_not_a_work_mem_problem() {
    for version in 13..=18 {
        let a = analysis(&format!("bitmap_brin.pg{version}.json"));
        let (_, scan) = node(&a, "Bitmap Heap Scan", Some("orders"));
        assert_eq!(scan.exact_heap_blocks, Some(0.0));
        let f = a
            .findings
            .iter()
            .find(|f| f.kind.as_str() == "lossy_bitmap")
            .unwrap_or_else(|| panic!("PostgreSQL {version}: {:?}", a.findings));
        assert!(!f.message.contains("work_mem"), "{}", f.message);
        assert!(f.message.contains("BRIN"), "{}", f.message);
        // A bitmap that did outgrow work_mem still says so.
        let a = analysis(&format!("bitmap_heap_scan_lossy.pg{version}.json"));
        let f = a
            .findings
            .iter()
            .find(|f| f.kind.as_str() == "lossy_bitmap")
            .unwrap();
        assert!(f.message.contains("outgrew work_mem"), "{}", f.message);
    }
}

/// Before 18 a disabled node's only trace is the 1e10 added to its own cost; a Sort forced by
/// ORDER BY with enable_sort off has a child, and is still the node to report (18 says so).
#[test]
fn a_disabled_node_with_children_is_reported() {
    for version in 13..=18 {
        let a = analysis(&format!("disabled_sort.pg{version}.json"));
        let (id, _) = node(&a, "Sort", None);
        let disabled: Vec<Option<usize>> = a
            .findings
            .iter()
            .filter(|f| f.kind.as_str() == "disabled_node")
            .map(|f| f.node)
            .collect();
        assert_eq!(disabled, [Some(id)], "PostgreSQL {version}");
    }
}

/// An init plan hangs under the Limit, the top of its query level, but the scan's filter reads its
/// value, so the scan ran it: its pages are the scan's inclusive pages, not the scan's own.
#[test]
fn an_init_plan_used_below_its_node_is_counted_once() {
    for version in 13..=18 {
        let a = analysis(&format!("initplan_used_below.pg{version}.json"));
        let (ip, _) = a
            .plan
            .nodes
            .iter()
            .enumerate()
            .find(|(_, n)| n.parent_relationship.as_deref() == Some("InitPlan"))
            .unwrap();
        let (scan, scan_node) = a
            .plan
            .nodes
            .iter()
            .enumerate()
            .find(|(_, n)| n.filter.is_some())
            .unwrap();
        let pages = |id: usize| a.plan.nodes[id].buffers.unwrap().pages_touched();
        let own = |id: usize| {
            a.metrics.nodes[id]
                .exclusive_buffers
                .unwrap()
                .pages_touched()
        };
        assert_eq!(pages(0), pages(scan), "PostgreSQL {version}");
        assert_eq!(own(scan), pages(scan) - pages(ip), "PostgreSQL {version}");
        assert_eq!(own(0), 0.0, "PostgreSQL {version}");
        let m = &a.metrics.nodes;
        let scan_ms = m[scan].inclusive_ms.unwrap();
        let ip_ms = m[ip].inclusive_ms.unwrap();
        assert!(scan_ms > ip_ms, "PostgreSQL {version}: {scan_node:?}");
        assert!(
            (m[scan].exclusive_ms.unwrap() - (scan_ms - ip_ms)).abs() < 0.002,
            "PostgreSQL {version}"
        );
    }
}

/// The recorded JIT plan (Debian's PostgreSQL 15, a parallel aggregate whose compilation took
/// twice its execution) gets the jit_overhead warning, read from JSON and from TEXT alike; the
/// estimate-only JIT plan, with no timing, gets none.
#[test]
fn jit_that_outlasts_the_run_is_a_warning() {
    let formats = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/formats");
    for file in ["jit_parallel.pg15.json", "jit_parallel.pg15.txt"] {
        let input = std::fs::read_to_string(formats.join(file)).unwrap();
        let plan = pgplan::plan::input::read_plan(&input, None)
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .plan;
        let a = Analysis::of(plan);
        let jit: Vec<_> = a
            .findings
            .iter()
            .filter(|f| f.kind.as_str() == "jit_overhead")
            .collect();
        assert_eq!(jit.len(), 1, "{file}: {:?}", a.findings);
        let f = jit[0];
        assert_eq!(f.severity.as_str(), "warning", "{file}");
        assert!(
            f.message.contains("parallel workers"),
            "{file}: {}",
            f.message
        );
        let evidence = |name: &str| f.evidence.iter().find(|(n, _)| *n == name).unwrap().1;
        assert!(
            evidence("jit_total_ms") > evidence("execution_ms"),
            "{file}"
        );
    }
    let input = std::fs::read_to_string(formats.join("jit_estimate.pg15.json")).unwrap();
    let a = Analysis::of(parse_plan(&input).unwrap());
    assert!(a.findings.iter().all(|f| f.kind.as_str() != "jit_overhead"));
}
