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
