//! The figures an expert reads off a plan, computed exactly from what the server reported:
//! loop-aware totals, exclusive buffers and time, and the estimate error of each node.
//!
//! What the server reports, and how it is turned into totals (verified on PostgreSQL 13–18):
//! - `Actual Rows`, `Actual Startup/Total Time` are per-loop averages, so totals are `× loops`.
//! - `Rows Removed by Filter/Join Filter/Index Recheck` are per-loop averages rounded to whole
//!   numbers, so their totals are `× loops` too (and approximate by up to half a row per loop).
//! - `Heap Fetches`, `Exact/Lossy Heap Blocks`, `Index Searches` and buffer counters are already
//!   totals over all loops; buffer counters include the node's children.
//! - A parallel node's figures sum the leader and the workers, and its `Actual Loops` counts the
//!   processes, so a parallel node's time × loops is CPU time, not elapsed time.

use super::extra::Extra;
use super::model::{Buffers, Node, NodeId, Plan};

/// Which way the planner was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// More rows came than the planner expected.
    Under,
    /// Fewer rows came than the planner expected.
    Over,
}

/// Actual against estimated rows per loop, as a factor ≥ 1 with its direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Misestimate {
    pub factor: f64,
    /// `None` for a perfect estimate (factor 1): it is neither under nor over.
    pub direction: Option<Direction>,
}

/// Figures derived for one node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeMetrics {
    /// `Actual Loops`; `None` for estimate-only plans.
    pub loops: Option<f64>,
    /// The node ran zero times ("never executed").
    pub never_executed: bool,
    /// The node runs inside parallel workers (below a Gather or Gather Merge).
    pub in_parallel_worker: bool,
    /// The node's consumer may stop reading before the node is exhausted (a Limit above it with
    /// only streaming nodes between, the inner side of a semi or anti join, a merge join's
    /// inputs). `Plan Rows` is the estimate for running to completion, so fewer actual rows than
    /// estimated is expected here, not an estimate error.
    pub may_stop_early: bool,
    /// Rows produced over all loops (`Actual Rows × Actual Loops`).
    pub actual_rows_total: Option<f64>,
    /// Estimated rows over all loops (`Plan Rows × Actual Loops`, or `Plan Rows` when not run).
    pub estimated_rows_total: Option<f64>,
    /// The rows the node actually dealt with, over all loops: the rows it returned plus those
    /// its own filters, join filter or index recheck removed. `None` for estimate-only plans.
    pub rows_handled: Option<f64>,
    pub rows_removed_by_filter_total: Option<f64>,
    pub rows_removed_by_join_filter_total: Option<f64>,
    pub rows_removed_by_index_recheck_total: Option<f64>,
    /// Buffers used by this node alone: its inclusive counters minus its children's.
    pub exclusive_buffers: Option<Buffers>,
    /// Elapsed time spent in this node and its children, in ms (for a node in parallel workers,
    /// its CPU time divided by the number of processes). `None` when the node never ran (not
    /// fast: not run) or the plan was measured with `TIMING OFF`.
    pub inclusive_ms: Option<f64>,
    /// Elapsed time spent in this node alone, in ms; `None` as for `inclusive_ms`.
    pub exclusive_ms: Option<f64>,
    pub misestimate: Option<Misestimate>,
}

/// Figures for the whole plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanTotals {
    pub planning_ms: Option<f64>,
    pub execution_ms: Option<f64>,
    pub shared_hit_blocks: Option<f64>,
    pub shared_read_blocks: Option<f64>,
    pub shared_dirtied_blocks: Option<f64>,
    pub shared_written_blocks: Option<f64>,
    /// Shared hit + read: every page the execution touched.
    pub pages_touched: Option<f64>,
    /// Pages read from outside shared buffers (the OS cache or disk).
    pub pages_read: Option<f64>,
    pub temp_blocks: Option<f64>,
    /// The root's `Total Cost`: the planner's estimate for the whole plan.
    pub total_cost: Option<f64>,
    /// The root's `Plan Rows`.
    pub estimated_rows: Option<f64>,
    /// I/O time with `track_io_timing`, in ms.
    pub io_ms: Option<f64>,
    pub planning_pages_touched: Option<f64>,
}

/// A plan's figures, one [`NodeMetrics`] per node (same ids as [`Plan::nodes`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanMetrics {
    pub nodes: Vec<NodeMetrics>,
    pub totals: PlanTotals,
}

/// An init plan that computes a CTE. The CTE Scan nodes that read it already include its work,
/// so subtracting it from the node it hangs under too would count it twice.
fn is_cte_init_plan(node: &Node) -> bool {
    node.parent_relationship.as_deref() == Some("InitPlan")
        && node
            .subplan_name
            .as_deref()
            .is_some_and(|n| n.starts_with("CTE "))
}

/// The init plan computing the CTE that `scan` (a CTE Scan) reads: among the CTE init plans
/// hanging under the scan's ancestors, the nearest one of that name (a nested query may reuse a
/// CTE name).
fn cte_of_scan(plan: &Plan, scan: NodeId) -> Option<NodeId> {
    let name = plan.nodes[scan].cte_name.as_deref()?;
    ancestors(plan, scan).find_map(|a| {
        plan.nodes[a].children.iter().copied().find(|&c| {
            let child = &plan.nodes[c];
            is_cte_init_plan(child)
                && child
                    .subplan_name
                    .as_deref()
                    .and_then(|n| n.strip_prefix("CTE "))
                    == Some(name)
        })
    })
}

/// What each CTE Scan must give up of its inclusive figures so that a materialized CTE's work
/// is counted once, in the CTE's own nodes.
///
/// A CTE Scan pulls rows from the CTE's tuplestore and, when it is the first to reach rows not
/// yet computed, runs the CTE's plan for them (PostgreSQL's CteScanNext): the CTE's time and
/// buffers land in the inclusive figures of whichever scan pulled them, and through it in every
/// ancestor's, the node the init plan hangs under included. So the CTE's work is subtracted from
/// its scans, never from the node above the init plan. Which scan pulled which rows is not
/// reported; the work is charged to the scans in plan order, each giving up at most its own
/// inclusive figures. (A data-modifying CTE that no scan read to the end is finished after the
/// plan runs, outside every node's figures: its remainder is charged to no scan.)
fn cte_deductions(plan: &Plan, metrics: &[NodeMetrics]) -> Vec<Option<(f64, Buffers)>> {
    let n = plan.nodes.len();
    let mut deductions = vec![None; n];
    // What is left to charge of each CTE: its time and buffers.
    let mut left: Vec<Option<(f64, Buffers)>> = vec![None; n];
    for (id, node) in plan.nodes.iter().enumerate() {
        if node.node_type != "CTE Scan" {
            continue;
        }
        let Some(cte) = cte_of_scan(plan, id) else {
            continue;
        };
        let remaining = left[cte].get_or_insert_with(|| {
            (
                metrics[cte].inclusive_ms.unwrap_or(0.0),
                plan.nodes[cte].buffers.unwrap_or_default(),
            )
        });
        let scan_ms = metrics[id].inclusive_ms.unwrap_or(0.0);
        let scan_buffers = node.buffers.unwrap_or_default();
        let ms = remaining.0.min(scan_ms);
        // Component-wise minimum: what the scan has, up to what is left.
        let buffers = scan_buffers.saturating_sub(&scan_buffers.saturating_sub(&remaining.1));
        remaining.0 -= ms;
        remaining.1 = remaining.1.saturating_sub(&buffers);
        deductions[id] = Some((ms, buffers));
    }
    deductions
}

/// An init plan that computes a value (not a CTE): a scalar subquery, `EXISTS` or `ANY` that
/// does not depend on the outer row.
fn is_value_init_plan(node: &Node) -> bool {
    node.parent_relationship.as_deref() == Some("InitPlan") && !is_cte_init_plan(node)
}

/// How the expressions of a plan refer to the value an init plan computes: `$0` (or `$0,$1`,
/// from the name "InitPlan 1 (returns $0,$1)") before PostgreSQL 17, `(InitPlan 1).col1` from 17
/// on, where the name lost its "(returns ...)" part.
fn init_plan_references(name: &str) -> Vec<String> {
    match name.split_once(" (returns ") {
        Some((_, params)) => params
            .trim_end_matches(')')
            .split(',')
            .map(|p| p.trim().to_owned())
            .filter(|p| p.starts_with('$'))
            .collect(),
        None => vec![format!("({name}).")],
    }
}

/// Whether `text` contains `reference`, not as the prefix of a longer parameter (`$1` in `$12`).
fn mentions(text: &str, reference: &str) -> bool {
    text.match_indices(reference).any(|(at, _)| {
        !text[at + reference.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// Whether any expression the node shows (`Filter`, `Index Cond`, `Output`, `One-Time Filter`,
/// `Sort Key`, `Params Evaluated`, ...) refers to one of `references`.
fn node_mentions(node: &Node, references: &[String]) -> bool {
    let modelled = [
        &node.filter,
        &node.join_filter,
        &node.index_cond,
        &node.recheck_cond,
        &node.hash_cond,
        &node.merge_cond,
    ];
    let mut texts: Vec<&str> = modelled.iter().filter_map(|t| t.as_deref()).collect();
    texts.extend(node.output.iter().map(String::as_str));
    for value in node.extra.values() {
        match value {
            Extra::String(s) => texts.push(s),
            Extra::Array(items) => texts.extend(items.iter().filter_map(|v| v.as_str())),
            _ => {}
        }
    }
    texts
        .iter()
        .any(|t| references.iter().any(|r| mentions(t, r)))
}

/// The node whose inclusive figures include the work of each value init plan (indexed by the
/// init plan's id; `None` for other nodes).
///
/// PostgreSQL attaches every init plan to the topmost plan node of its query level
/// (SS_attach_initplans, SS_finalize_plan), but runs it lazily, when an expression first reads
/// its parameter (ExecEvalParamExec → ExecSetParamPlan). That expression belongs to the node
/// whose filter, condition or output names the parameter, so the init plan's time and buffers
/// land in that node's inclusive figures, and through it in every ancestor's up to the node the
/// init plan hangs under. The deepest node that names it is taken (rows flow up: a lower node
/// evaluates its expressions first); a node that never ran evaluated nothing. Inside a parallel
/// section the leader evaluates the parameters before starting the workers (the Gather's
/// "Params Evaluated"), so the Gather carries the work. With no reference found, the node the
/// init plan hangs under is charged.
fn init_plan_hosts(plan: &Plan, metrics: &[NodeMetrics]) -> Vec<Option<NodeId>> {
    let n = plan.nodes.len();
    let mut hosts = vec![None; n];
    for (id, node) in plan.nodes.iter().enumerate() {
        if !is_value_init_plan(node) {
            continue;
        }
        let Some(hung_under) = node.parent else {
            continue;
        };
        let references = node
            .subplan_name
            .as_deref()
            .map(init_plan_references)
            .unwrap_or_default();
        let own_end = subtree_end(plan, id);
        let level_end = subtree_end(plan, hung_under);
        let mut host = hung_under;
        if !references.is_empty() {
            // The query level is the subtree of the node it hangs under, less the init plan's own.
            let deepest = (hung_under + 1..level_end)
                .filter(|&c| !(id..own_end).contains(&c))
                .filter(|&c| !metrics[c].never_executed)
                .filter(|&c| node_mentions(&plan.nodes[c], &references))
                .max_by_key(|&c| (plan.nodes[c].depth, std::cmp::Reverse(c)));
            if let Some(found) = deepest {
                let path: Vec<NodeId> = std::iter::once(found)
                    .chain(ancestors(plan, found).take_while(|&a| a != hung_under))
                    .chain(std::iter::once(hung_under))
                    .collect();
                host = path
                    .into_iter()
                    .rfind(|&a| is_gather(&plan.nodes[a]))
                    .unwrap_or(found);
            }
        }
        hosts[id] = Some(host);
    }
    hosts
}

/// One past the last id of `id`'s subtree (pre-order keeps a subtree's ids contiguous).
fn subtree_end(plan: &Plan, id: NodeId) -> NodeId {
    let mut end = id;
    while let Some(&last) = plan.nodes[end].children.last() {
        end = last;
    }
    end + 1
}

/// Nodes that read all of their input before returning their first row: an early stop above
/// them does not reach their children.
fn reads_all_input(node: &Node) -> bool {
    match node.node_type.as_str() {
        "Sort" | "Hash" => true,
        "Aggregate" => node.strategy.as_deref() != Some("Sorted"),
        "SetOp" => node.strategy.as_deref() == Some("Hashed"),
        _ => false,
    }
}

/// Whether `child` of `parent` may be stopped early by its parent.
fn stops_child_early(parent: &Node, parent_stops_early: bool, child: &Node) -> bool {
    if parent.node_type == "Limit" {
        return true;
    }
    if parent.node_type == "Merge Join" {
        return true;
    }
    if parent.is_join()
        && matches!(parent.join_type.as_deref(), Some("Semi" | "Anti"))
        && child.parent_relationship.as_deref() == Some("Inner")
    {
        return true;
    }
    // Init plans and subplans are run by expressions, not pulled by the parent's consumer.
    if matches!(
        child.parent_relationship.as_deref(),
        Some("InitPlan" | "SubPlan")
    ) {
        return false;
    }
    parent_stops_early && !reads_all_input(parent)
}

fn is_gather(node: &Node) -> bool {
    matches!(node.node_type.as_str(), "Gather" | "Gather Merge")
}

/// Computes every node's figures and the plan totals in two linear passes.
pub fn measure(plan: &Plan) -> PlanMetrics {
    let n = plan.nodes.len();
    let mut metrics: Vec<NodeMetrics> = Vec::with_capacity(n);
    // Processes running each node: 1 outside parallel sections, the Gather's process count below.
    let mut processes: Vec<f64> = vec![1.0; n];

    // Pre-order: parents come before children, so parallel context flows down in one pass.
    for (id, node) in plan.nodes.iter().enumerate() {
        let parent = node.parent;
        let in_parallel_worker =
            parent.is_some_and(|p| metrics[p].in_parallel_worker || is_gather(&plan.nodes[p]));
        if let Some(p) = parent {
            processes[id] = if is_gather(&plan.nodes[p]) {
                // The Gather's child runs once per process (workers, plus the leader unless
                // parallel_leader_participation is off), so its loops count the processes.
                node.actual.map(|a| a.loops.max(1.0)).unwrap_or(1.0)
            } else {
                processes[p]
            };
        }
        let may_stop_early = parent
            .is_some_and(|p| stops_child_early(&plan.nodes[p], metrics[p].may_stop_early, node));
        let mut m = node_metrics(node, in_parallel_worker, processes[id]);
        m.may_stop_early = may_stop_early;
        metrics.push(m);
    }

    let cte = cte_deductions(plan, &metrics);
    let hosts = init_plan_hosts(plan, &metrics);
    // The value init plans each node carries the work of, wherever they hang.
    let mut hosted: Vec<Vec<NodeId>> = vec![Vec::new(); n];
    for (ip, host) in hosts.iter().enumerate() {
        if let Some(h) = host {
            hosted[*h].push(ip);
        }
    }
    // Children have larger ids than their parents: walking backwards sees children first.
    for id in (0..n).rev() {
        let node = &plan.nodes[id];
        // A CTE's init plan is charged to its scans, a value init plan to the node that ran
        // it: the children whose work this node's inclusive figures hold apart from the rest.
        let counted_children = || {
            node.children
                .iter()
                .copied()
                .filter(|&c| !is_cte_init_plan(&plan.nodes[c]) && hosts[c].is_none())
                .chain(hosted[id].iter().copied())
        };
        if let Some(own) = node.buffers {
            let mut children = cte[id].map(|(_, b)| b).unwrap_or_default();
            for c in counted_children() {
                if let Some(b) = plan.nodes[c].buffers {
                    children.add(&b);
                }
            }
            metrics[id].exclusive_buffers = Some(own.saturating_sub(&children));
        }
        if let Some(own) = metrics[id].inclusive_ms {
            let children: f64 = counted_children()
                .filter_map(|c| metrics[c].inclusive_ms)
                .sum::<f64>()
                + cte[id].map_or(0.0, |(ms, _)| ms);
            metrics[id].exclusive_ms = Some(round_us(own - children).max(0.0));
        }
        if let Some(returned) = metrics[id].actual_rows_total {
            // What the node read and checked itself: rows a scan's filter or recheck removed,
            // row pairs a join's filter removed. Not its children's rows: those are theirs.
            let m = &metrics[id];
            let read = returned
                + m.rows_removed_by_filter_total.unwrap_or(0.0)
                + m.rows_removed_by_join_filter_total.unwrap_or(0.0)
                + m.rows_removed_by_index_recheck_total.unwrap_or(0.0);
            metrics[id].rows_handled = Some(read);
        }
    }

    PlanMetrics {
        totals: totals(plan),
        nodes: metrics,
    }
}

/// Rounds milliseconds to the microsecond, the precision EXPLAIN reports: differences of its
/// three-decimal figures would otherwise show binary noise (0.0010000000000000009).
fn round_us(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

fn node_metrics(node: &Node, in_parallel_worker: bool, processes: f64) -> NodeMetrics {
    let loops = node.actual.map(|a| a.loops);
    let never_executed = loops == Some(0.0);
    let times_loops = |per_loop: Option<f64>| match (per_loop, loops) {
        (Some(v), Some(l)) => Some(v * l),
        _ => None,
    };
    let estimated_rows_total = node.plan_rows.map(|rows| match loops {
        Some(l) if l > 0.0 => rows * l,
        _ => rows,
    });
    // A node that never ran has no time (the server prints zeros, the text format "never
    // executed"), and TIMING OFF reports none: both are unknown, not 0 ms.
    let inclusive_ms = node.actual.filter(|a| a.loops > 0.0).and_then(|a| {
        let cpu = a.total_ms? * a.loops;
        Some(round_us(if in_parallel_worker {
            cpu / processes.max(1.0)
        } else {
            cpu
        }))
    });
    NodeMetrics {
        loops,
        never_executed,
        in_parallel_worker,
        may_stop_early: false,
        actual_rows_total: node.actual.map(|a| a.rows * a.loops),
        estimated_rows_total,
        rows_handled: None,
        rows_removed_by_filter_total: times_loops(node.rows_removed_by_filter),
        rows_removed_by_join_filter_total: times_loops(node.rows_removed_by_join_filter),
        rows_removed_by_index_recheck_total: times_loops(node.rows_removed_by_index_recheck),
        exclusive_buffers: None,
        inclusive_ms,
        exclusive_ms: None,
        misestimate: misestimate(node),
    }
}

/// The estimate error of a node that ran: actual against estimated rows per loop. Both are
/// floored at one row, so "0 rows, 1 estimated" is not an error and the factor stays finite.
pub fn misestimate(node: &Node) -> Option<Misestimate> {
    let actual = node.actual?;
    if actual.loops <= 0.0 {
        return None;
    }
    let estimated = node.plan_rows?.max(1.0);
    let rows = actual.rows.max(1.0);
    Some(if rows >= estimated {
        Misestimate {
            factor: rows / estimated,
            direction: (rows > estimated).then_some(Direction::Under),
        }
    } else {
        Misestimate {
            factor: estimated / rows,
            direction: Some(Direction::Over),
        }
    })
}

fn totals(plan: &Plan) -> PlanTotals {
    let root = plan.nodes.first();
    let buffers = root.and_then(|r| r.buffers);
    // Execution I/O time is the root's: its counters include every node below it.
    let io_ms = root.and_then(|r| r.io.total_ms());
    PlanTotals {
        planning_ms: plan.planning_ms,
        execution_ms: plan.execution_ms,
        shared_hit_blocks: buffers.map(|b| b.shared_hit_blocks),
        shared_read_blocks: buffers.map(|b| b.shared_read_blocks),
        shared_dirtied_blocks: buffers.map(|b| b.shared_dirtied_blocks),
        shared_written_blocks: buffers.map(|b| b.shared_written_blocks),
        pages_touched: buffers.map(|b| b.pages_touched()),
        pages_read: buffers.map(|b| b.shared_read_blocks),
        temp_blocks: buffers.map(|b| b.temp_blocks()),
        total_cost: root.and_then(|r| r.total_cost),
        estimated_rows: root.and_then(|r| r.plan_rows),
        io_ms,
        planning_pages_touched: plan.planning_buffers.map(|b| b.pages_touched()),
    }
}

/// The node ids of `plan` whose subtree contains `id` (its ancestors), nearest first.
pub fn ancestors(plan: &Plan, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
    std::iter::successors(plan.nodes[id].parent, |&p| plan.nodes[p].parent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;

    fn plan(json: &str) -> Plan {
        parse_plan(json).unwrap()
    }

    #[test]
    fn loops_multiply_per_loop_figures_but_not_totals() {
        // An inner index scan run 100 times: 3 rows and 2 removed per loop, 50 heap fetches in all.
        let p = plan(
            r#"{"Plan": {"Node Type": "Index Scan", "Relation Name": "t", "Plan Rows": 1,
                "Actual Startup Time": 0.01, "Actual Total Time": 0.02, "Actual Rows": 3,
                "Actual Loops": 100, "Rows Removed by Filter": 2, "Heap Fetches": 50,
                "Shared Hit Blocks": 300, "Shared Read Blocks": 0}}"#,
        );
        let m = measure(&p);
        let root = &m.nodes[0];
        assert_eq!(root.actual_rows_total, Some(300.0));
        assert_eq!(root.rows_removed_by_filter_total, Some(200.0));
        assert_eq!(root.estimated_rows_total, Some(100.0));
        assert_eq!(p.root().heap_fetches, Some(50.0));
        assert_eq!(root.inclusive_ms, Some(2.0));
        let mis = root.misestimate.unwrap();
        assert_eq!(mis.factor, 3.0);
        assert_eq!(mis.direction, Some(Direction::Under));
    }

    #[test]
    fn exclusive_buffers_subtract_children() {
        let p = plan(
            r#"{"Plan": {"Node Type": "Limit", "Shared Hit Blocks": 10, "Shared Read Blocks": 5,
                "Plans": [{"Node Type": "Seq Scan", "Relation Name": "t",
                           "Shared Hit Blocks": 7, "Shared Read Blocks": 5}]}}"#,
        );
        let m = measure(&p);
        let own = m.nodes[0].exclusive_buffers.unwrap();
        assert_eq!(own.shared_hit_blocks, 3.0);
        assert_eq!(own.shared_read_blocks, 0.0);
        assert_eq!(m.totals.pages_touched, Some(15.0));
        assert_eq!(m.totals.pages_read, Some(5.0));
    }

    #[test]
    fn never_executed_is_not_fast() {
        let p = plan(
            r#"{"Plan": {"Node Type": "Index Scan", "Relation Name": "t", "Plan Rows": 5,
                "Actual Startup Time": 0, "Actual Total Time": 0, "Actual Rows": 0,
                "Actual Loops": 0}}"#,
        );
        let m = measure(&p);
        assert!(m.nodes[0].never_executed);
        assert_eq!(m.nodes[0].misestimate, None);
    }

    #[test]
    fn parallel_time_is_divided_by_processes() {
        // Gather ran once for 30 ms; its parallel child ran in 3 processes, 27 ms each on average.
        let p = plan(
            r#"{"Plan": {"Node Type": "Gather", "Actual Startup Time": 1, "Actual Total Time": 30,
                "Actual Rows": 300, "Actual Loops": 1, "Workers Launched": 2,
                "Plans": [{"Node Type": "Seq Scan", "Parallel Aware": true, "Relation Name": "t",
                    "Actual Startup Time": 0, "Actual Total Time": 27, "Actual Rows": 100,
                    "Actual Loops": 3}]}}"#,
        );
        let m = measure(&p);
        assert!(m.nodes[1].in_parallel_worker);
        assert_eq!(m.nodes[1].actual_rows_total, Some(300.0));
        assert_eq!(m.nodes[1].inclusive_ms, Some(27.0));
        assert_eq!(m.nodes[0].exclusive_ms, Some(3.0));
    }

    #[test]
    fn limit_stops_streaming_children_early_but_not_below_a_sort() {
        let p = plan(
            r#"{"Plan": {"Node Type": "Limit", "Plans": [{"Node Type": "Gather Merge", "Plans": [
                {"Node Type": "Sort", "Plans": [{"Node Type": "Seq Scan", "Relation Name": "t"}]}]}]}}"#,
        );
        let m = measure(&p);
        let early: Vec<bool> = m.nodes.iter().map(|n| n.may_stop_early).collect();
        assert_eq!(early, [false, true, true, false]);
    }

    /// An init plan hung under a Limit but run by the scan whose filter reads its value: its
    /// work is in the scan's inclusive figures, so it is taken from the scan, not the Limit.
    #[test]
    fn an_init_plan_is_charged_to_the_node_that_reads_its_value() {
        for (name, filter) in [
            ("InitPlan 1 (returns $0)", "(t.a > $0)"),
            ("InitPlan 1", "(t.a > (InitPlan 1).col1)"),
        ] {
            let p = plan(&format!(
                r#"{{"Plan": {{"Node Type": "Limit", "Actual Total Time": 10, "Actual Rows": 10,
                "Actual Loops": 1, "Shared Hit Blocks": 110, "Shared Read Blocks": 0, "Plans": [
                {{"Node Type": "Aggregate", "Parent Relationship": "InitPlan",
                  "Subplan Name": "{name}", "Actual Total Time": 5, "Actual Rows": 1,
                  "Actual Loops": 1, "Shared Hit Blocks": 100, "Shared Read Blocks": 0,
                  "Plans": [{{"Node Type": "Seq Scan", "Relation Name": "u",
                    "Actual Total Time": 4, "Actual Rows": 1000, "Actual Loops": 1,
                    "Shared Hit Blocks": 100, "Shared Read Blocks": 0}}]}},
                {{"Node Type": "Sort", "Parent Relationship": "Outer", "Actual Total Time": 9.9,
                  "Actual Rows": 10, "Actual Loops": 1, "Shared Hit Blocks": 110,
                  "Shared Read Blocks": 0, "Plans": [{{"Node Type": "Seq Scan",
                    "Relation Name": "t", "Filter": "{filter}", "Actual Total Time": 9,
                    "Actual Rows": 10, "Actual Loops": 1, "Shared Hit Blocks": 110,
                    "Shared Read Blocks": 0}}]}}]}}}}"#
            ));
            let m = measure(&p);
            let own_ms: Vec<f64> = m.nodes.iter().map(|n| n.exclusive_ms.unwrap()).collect();
            assert_eq!(own_ms, [0.1, 1.0, 4.0, 0.9, 4.0], "{name}");
            let own_pages: Vec<f64> = m
                .nodes
                .iter()
                .map(|n| n.exclusive_buffers.unwrap().pages_touched())
                .collect();
            assert_eq!(own_pages, [0.0, 0.0, 100.0, 0.0, 10.0], "{name}");
        }
    }

    /// With no expression naming its value, the init plan is charged to the node it hangs under.
    #[test]
    fn an_unreferenced_init_plan_is_charged_to_the_node_it_hangs_under() {
        let p = plan(
            r#"{"Plan": {"Node Type": "Result", "Actual Total Time": 3, "Actual Rows": 1,
                "Actual Loops": 1, "Plans": [{"Node Type": "Result",
                "Parent Relationship": "InitPlan", "Subplan Name": "InitPlan 1",
                "Actual Total Time": 2, "Actual Rows": 1, "Actual Loops": 1}]}}"#,
        );
        let m = measure(&p);
        assert_eq!(m.nodes[0].exclusive_ms, Some(1.0));
    }

    #[test]
    fn init_plan_references_by_version() {
        assert_eq!(
            init_plan_references("InitPlan 2 (returns $1,$2)"),
            ["$1", "$2"]
        );
        assert_eq!(init_plan_references("InitPlan 2"), ["(InitPlan 2)."]);
        assert!(mentions("(a > $1)", "$1"));
        assert!(!mentions("(a > $12)", "$1"));
    }

    /// Actual rows equal to the estimate: no error, so no direction.
    #[test]
    fn a_perfect_estimate_has_no_direction() {
        let p = plan(
            r#"{"Plan": {"Node Type": "Seq Scan", "Relation Name": "t", "Plan Rows": 50,
                "Actual Startup Time": 0, "Actual Total Time": 1, "Actual Rows": 50,
                "Actual Loops": 1}}"#,
        );
        let mis = measure(&p).nodes[0].misestimate.unwrap();
        assert_eq!(mis.factor, 1.0);
        assert_eq!(mis.direction, None);
    }

    #[test]
    fn overestimate_direction() {
        let p = plan(
            r#"{"Plan": {"Node Type": "Seq Scan", "Relation Name": "t", "Plan Rows": 5000,
                "Actual Startup Time": 0, "Actual Total Time": 1, "Actual Rows": 0,
                "Actual Loops": 1}}"#,
        );
        let mis = measure(&p).nodes[0].misestimate.unwrap();
        assert_eq!(mis.factor, 5000.0);
        assert_eq!(mis.direction, Some(Direction::Over));
    }
}
