//! A node-matched diff of two plans of the same query.
//!
//! Nodes are matched by the work they do, not by their position: a scan by the relation it reads
//! (so a Seq Scan that became an Index Scan on the same table is one change, not a removal and an
//! addition), a join or any other node by its kind and the relations below it. Matching is by
//! hashing, so the diff costs O(n log n) at worst for plans of n nodes.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};

use serde::Serialize;

use super::findings::{node_label, significant_misestimate, spills};
use super::metrics::{NodeMetrics, PlanMetrics, PlanTotals};
use super::model::{Node, NodeId, Plan};

/// A figure before and after.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pair {
    pub before: Option<f64>,
    pub after: Option<f64>,
}

impl Pair {
    pub fn new(before: Option<f64>, after: Option<f64>) -> Self {
        Self { before, after }
    }

    /// after / before; `None` when either is missing or before is zero.
    pub fn ratio(&self) -> Option<f64> {
        match (self.before, self.after) {
            (Some(b), Some(a)) if b > 0.0 => Some(a / b),
            _ => None,
        }
    }
}

/// Plan totals before and after.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TotalsDiff {
    pub planning_ms: Pair,
    pub execution_ms: Pair,
    pub shared_hit_blocks: Pair,
    pub shared_read_blocks: Pair,
    pub pages_touched: Pair,
    pub temp_blocks: Pair,
    pub io_ms: Pair,
    /// The root's estimated cost and rows: the only totals an estimate-only plan has.
    pub total_cost: Pair,
    pub estimated_rows: Pair,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The same relation is read another way (Seq Scan → Index Scan, ...).
    AccessMethodChanged,
    /// The same access method through another index.
    IndexChanged,
    /// The same relations joined another way (Hash Join → Nested Loop, ...).
    JoinStrategyChanged,
    /// Another node type doing the same work (HashAggregate → GroupAggregate, Sort → Incremental Sort).
    NodeTypeChanged,
    NodeAdded,
    NodeRemoved,
    /// The node's estimate became wrong by 10× or more.
    EstimateErrorAppeared,
    /// The node's estimate error of 10× or more is gone.
    EstimateErrorVanished,
    /// The pages the node itself touched changed by half or more.
    PagesChanged,
    /// The rows its filter removed changed by half or more.
    RowsRemovedChanged,
    HeapFetchesChanged,
    /// A sort or hash now spills to disk.
    SpillAppeared,
    /// A sort or hash no longer spills to disk.
    SpillVanished,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::AccessMethodChanged => "access_method_changed",
            ChangeKind::IndexChanged => "index_changed",
            ChangeKind::JoinStrategyChanged => "join_strategy_changed",
            ChangeKind::NodeTypeChanged => "node_type_changed",
            ChangeKind::NodeAdded => "node_added",
            ChangeKind::NodeRemoved => "node_removed",
            ChangeKind::EstimateErrorAppeared => "estimate_error_appeared",
            ChangeKind::EstimateErrorVanished => "estimate_error_vanished",
            ChangeKind::PagesChanged => "pages_changed",
            ChangeKind::RowsRemovedChanged => "rows_removed_changed",
            ChangeKind::HeapFetchesChanged => "heap_fetches_changed",
            ChangeKind::SpillAppeared => "spill_appeared",
            ChangeKind::SpillVanished => "spill_vanished",
        }
    }
}

/// One classified difference between the plans.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub kind: ChangeKind,
    pub before_node: Option<NodeId>,
    pub after_node: Option<NodeId>,
    /// The relation concerned, schema-qualified, when the node reads one.
    pub relation: Option<String>,
    pub message: String,
    /// The figure that changed, when the change is about a figure.
    pub figure: Option<Pair>,
}

/// The diff of two plans.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanDiff {
    /// For each node of the after plan, the before node it was matched to.
    pub after_to_before: Vec<Option<NodeId>>,
    /// For each node of the before plan, the after node it was matched to.
    pub before_to_after: Vec<Option<NodeId>>,
    pub totals: TotalsDiff,
    /// Changes in the after plan's order, then removals in the before plan's order.
    pub changes: Vec<Change>,
}

/// A changed figure must move by at least this factor...
const FIGURE_CHANGE_FACTOR: f64 = 2.0;
/// ...and by at least this much, to count as a change.
const PAGES_CHANGE_MIN: f64 = 100.0;
const ROWS_CHANGE_MIN: f64 = 1000.0;

/// What kind of work a node does, for matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Category {
    /// Reads one relation (table, CTE, function): matched by that relation.
    Scan,
    /// Reads an index into a bitmap: matched by the index.
    BitmapIndex,
    Join,
    Aggregate,
    Sort,
    Gather,
    /// Anything else: matched by node type and the relations below it.
    Other(u64),
}

/// The category of `node`, whose [`relation_key`] is `relation` (hashing strings is the costly
/// part of matching, so each node's key is computed once).
fn category(node: &Node, relation: Option<u64>) -> Category {
    if node.node_type == "Bitmap Index Scan" {
        return Category::BitmapIndex;
    }
    if relation.is_some() {
        return Category::Scan;
    }
    match node.node_type.as_str() {
        "Nested Loop" | "Hash Join" | "Merge Join" => Category::Join,
        "Aggregate" | "Group" => Category::Aggregate,
        "Sort" | "Incremental Sort" => Category::Sort,
        "Gather" | "Gather Merge" => Category::Gather,
        other => Category::Other(hash_of(&other)),
    }
}

/// The relation a scan reads, as a stable key: schema and name, the CTE's name, or the
/// function's. Not the alias: a query that names `orders` as `o` in one version and not in the
/// other still reads the same table (the alias only tells apart scans of one relation).
fn relation_key(node: &Node) -> Option<u64> {
    if let Some(rel) = &node.relation_name {
        return Some(hash_of(&("rel", &node.schema, rel)));
    }
    if node.node_type == "CTE Scan"
        && let Some(cte) = &node.cte_name
    {
        return Some(hash_of(&("cte", cte)));
    }
    if let Some(function) = &node.function_name {
        return Some(hash_of(&("fn", function)));
    }
    None
}

fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// Mixes a hash so that summing mixed hashes gives a usable multiset hash.
fn mix(mut x: u64) -> u64 {
    // splitmix64's finaliser.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A node's match key: its category and what it works on.
type MatchKey = (Category, u64);

/// Per node: the match key, in one bottom-up pass (children have larger ids than their parent),
/// which reads each node once: on plans too big for the cache, reading is what costs.
fn match_keys(plan: &Plan) -> (Vec<MatchKey>, Vec<MatchKey>) {
    let n = plan.nodes.len();
    // Multiset hash of the relations read in each subtree: the sum of mixed relation keys, which
    // does not depend on child order.
    let mut relations = vec![0u64; n];
    let mut keys = vec![(Category::Sort, 0); n];
    // The same with a scan's alias: a self-join's scans of one table, told apart.
    let mut aliased = vec![(Category::Sort, 0); n];
    for id in (0..n).rev() {
        let node = &plan.nodes[id];
        let own = relation_key(node);
        let mut sum = own.map(mix).unwrap_or(0);
        for &c in &node.children {
            sum = sum.wrapping_add(relations[c]);
        }
        relations[id] = sum;
        let category = category(node, own);
        let what = match category {
            Category::Scan => own.unwrap_or(0),
            Category::BitmapIndex => hash_of(&node.index_name),
            _ => sum,
        };
        keys[id] = (category, what);
        aliased[id] = match category {
            Category::Scan => (category, hash_of(&(what, &node.alias))),
            _ => keys[id],
        };
    }
    (keys, aliased)
}

/// A hasher for match keys, which are already hashes: hashing them again with SipHash only costs
/// time. (It gives up SipHash's resistance to chosen keys; a plan is the user's own input.)
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        mix(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_isize(&mut self, n: isize) {
        self.write_u64(n as u64);
    }
}

type KeyMap<V> = HashMap<MatchKey, V, BuildHasherDefault<KeyHasher>>;

/// Both plans' node pairing and the after plan's match keys.
struct Matching {
    after_to_before: Vec<Option<NodeId>>,
    before_to_after: Vec<Option<NodeId>>,
    after_keys: Vec<MatchKey>,
}

/// Matches after-plan nodes to before-plan nodes with the same key, in plan order: each after
/// node takes the first before node with its key that is not taken yet. Scans are matched by
/// relation and alias first, then, among the nodes left, by relation alone: a self-join's two
/// scans of one table keep their own partners, and a table whose alias changed is still one
/// node read another way.
fn match_nodes(before: &Plan, after: &Plan) -> Matching {
    let (before_keys, before_aliased) = match_keys(before);
    let (after_keys, after_aliased) = match_keys(after);
    let mut after_to_before = vec![None; after.nodes.len()];
    let mut before_to_after = vec![None; before.nodes.len()];
    for (b_keys, a_keys) in [
        (&before_aliased, &after_aliased),
        (&before_keys, &after_keys),
    ] {
        // The untaken before nodes of each key, as a queue in plan order: the map holds the
        // first, `next` links each to the following one (a queue per key without an allocation
        // each).
        let mut first: KeyMap<Option<NodeId>> =
            KeyMap::with_capacity_and_hasher(b_keys.len(), Default::default());
        let mut next: Vec<Option<NodeId>> = vec![None; b_keys.len()];
        for (id, key) in b_keys.iter().enumerate().rev() {
            if before_to_after[id].is_none() {
                next[id] = first.insert(*key, Some(id)).flatten();
            }
        }
        for (id, key) in a_keys.iter().enumerate() {
            if after_to_before[id].is_some() {
                continue;
            }
            if let Some(head) = first.get_mut(key)
                && let Some(b) = *head
            {
                *head = next[b];
                after_to_before[id] = Some(b);
                before_to_after[b] = Some(id);
            }
        }
    }
    Matching {
        after_to_before,
        before_to_after,
        after_keys,
    }
}

/// Whether two nodes have the same [`Node::display_type`], without building the names when the
/// fields it is made of are equal (nearly every matched pair).
fn same_display_type(a: &Node, b: &Node) -> bool {
    let same_fields = a.parallel_aware == b.parallel_aware
        && a.node_type == b.node_type
        && a.strategy == b.strategy
        && a.join_type == b.join_type
        && a.operation == b.operation;
    same_fields || a.display_type() == b.display_type()
}

fn changed_enough(pair: Pair, minimum: f64) -> bool {
    let (b, a) = (pair.before.unwrap_or(0.0), pair.after.unwrap_or(0.0));
    let (lo, hi) = (b.min(a), b.max(a));
    hi - lo >= minimum && (lo == 0.0 || hi / lo >= FIGURE_CHANGE_FACTOR)
}

fn count(v: f64) -> String {
    crate::format::count(v)
}

/// A figure of a change message; "—" when that plan's node does not report it (an Index Scan
/// has no heap fetches), which is not the same as 0.
fn count_or_absent(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_owned(), count)
}

/// Diffs two plans of the same query.
pub fn diff(before: &Plan, bm: &PlanMetrics, after: &Plan, am: &PlanMetrics) -> PlanDiff {
    let Matching {
        after_to_before,
        before_to_after,
        after_keys,
    } = match_nodes(before, after);
    let mut changes = Vec::new();

    for (a_id, a) in after.nodes.iter().enumerate() {
        let Some(b_id) = after_to_before[a_id] else {
            changes.push(Change {
                kind: ChangeKind::NodeAdded,
                before_node: None,
                after_node: Some(a_id),
                relation: a.qualified_relation(),
                message: format!("added: {}", node_label(a)),
                figure: None,
            });
            continue;
        };
        let mut pair = MatchedPair {
            b_id,
            a_id,
            b: &before.nodes[b_id],
            a,
            b_m: &bm.nodes[b_id],
            a_m: &am.nodes[a_id],
            changes: &mut changes,
        };
        pair.node_type_change(after_keys[a_id].0);
        pair.estimate_change();
        pair.figure_changes();
        pair.spill_change();
    }

    for (b_id, b) in before.nodes.iter().enumerate() {
        if before_to_after[b_id].is_none() {
            changes.push(Change {
                kind: ChangeKind::NodeRemoved,
                before_node: Some(b_id),
                after_node: None,
                relation: b.qualified_relation(),
                message: format!("removed: {}", node_label(b)),
                figure: None,
            });
        }
    }

    PlanDiff {
        after_to_before,
        before_to_after,
        totals: totals_diff(&bm.totals, &am.totals),
        changes,
    }
}

/// The plan totals, before and after.
fn totals_diff(bt: &PlanTotals, at: &PlanTotals) -> TotalsDiff {
    TotalsDiff {
        planning_ms: Pair::new(bt.planning_ms, at.planning_ms),
        execution_ms: Pair::new(bt.execution_ms, at.execution_ms),
        shared_hit_blocks: Pair::new(bt.shared_hit_blocks, at.shared_hit_blocks),
        shared_read_blocks: Pair::new(bt.shared_read_blocks, at.shared_read_blocks),
        pages_touched: Pair::new(bt.pages_touched, at.pages_touched),
        temp_blocks: Pair::new(bt.temp_blocks, at.temp_blocks),
        io_ms: Pair::new(bt.io_ms, at.io_ms),
        total_cost: Pair::new(bt.total_cost, at.total_cost),
        estimated_rows: Pair::new(bt.estimated_rows, at.estimated_rows),
    }
}

/// A before node and the after node matched to it, with their figures, and the list their
/// changes go to.
struct MatchedPair<'a> {
    b_id: NodeId,
    a_id: NodeId,
    b: &'a Node,
    a: &'a Node,
    b_m: &'a NodeMetrics,
    a_m: &'a NodeMetrics,
    changes: &'a mut Vec<Change>,
}

impl MatchedPair<'_> {
    /// Records one change of this pair. Most matched pairs change nothing: the relation is
    /// named only for a change.
    fn push(&mut self, kind: ChangeKind, message: String, figure: Option<Pair>) {
        self.changes.push(Change {
            kind,
            before_node: Some(self.b_id),
            after_node: Some(self.a_id),
            relation: self.a.qualified_relation(),
            message,
            figure,
        })
    }

    /// Another access method, index, join strategy or node type, by the node's category.
    fn node_type_change(&mut self, category: Category) {
        let (b, a) = (self.b, self.a);
        let same_type = same_display_type(b, a);
        match category {
            Category::Scan if !same_type => self.push(
                ChangeKind::AccessMethodChanged,
                format!("{} → {}", node_label(b), node_label(a)),
                None,
            ),
            Category::Scan if b.index_name != a.index_name => self.push(
                ChangeKind::IndexChanged,
                format!(
                    "{}: index {} → {}",
                    a.qualified_relation().unwrap_or_default(),
                    b.index_name.as_deref().unwrap_or("none"),
                    a.index_name.as_deref().unwrap_or("none")
                ),
                None,
            ),
            Category::Join if !same_type => self.push(
                ChangeKind::JoinStrategyChanged,
                format!("join strategy {} → {}", b.display_type(), a.display_type()),
                None,
            ),
            _ if !same_type => self.push(
                ChangeKind::NodeTypeChanged,
                format!("{} → {}", b.display_type(), a.display_type()),
                None,
            ),
            _ => {}
        }
    }

    /// An estimate error of 10× or more that appeared or vanished.
    fn estimate_change(&mut self) {
        let (a, b_m, a_m) = (self.a, self.b_m, self.a_m);
        let factors = Pair::new(
            b_m.misestimate.map(|e| e.factor),
            a_m.misestimate.map(|e| e.factor),
        );
        match (significant_misestimate(b_m), significant_misestimate(a_m)) {
            (false, true) => {
                let e = factors.after.unwrap_or(0.0);
                self.push(
                    ChangeKind::EstimateErrorAppeared,
                    format!(
                        "{}: estimate now off by {e:.0}× ({} estimated, {} actual per loop)",
                        node_label(a),
                        count(a.plan_rows.unwrap_or(0.0)),
                        count(a.actual.map(|x| x.rows).unwrap_or(0.0))
                    ),
                    Some(factors),
                );
            }
            (true, false) => {
                let e = factors.before.unwrap_or(0.0);
                self.push(
                    ChangeKind::EstimateErrorVanished,
                    format!("{}: the {e:.0}× estimate error is gone", node_label(a)),
                    Some(factors),
                );
            }
            _ => {}
        }
    }

    /// The node's own pages, rows removed by its filter and heap fetches, when one moved enough.
    fn figure_changes(&mut self) {
        let (b, a, b_m, a_m) = (self.b, self.a, self.b_m, self.a_m);
        let pages = Pair::new(
            b_m.exclusive_buffers.map(|x| x.pages_touched()),
            a_m.exclusive_buffers.map(|x| x.pages_touched()),
        );
        if pages.before.is_some()
            && pages.after.is_some()
            && changed_enough(pages, PAGES_CHANGE_MIN)
        {
            self.push_figure(ChangeKind::PagesChanged, "own pages", pages);
        }

        let removed = Pair::new(
            b_m.rows_removed_by_filter_total,
            a_m.rows_removed_by_filter_total,
        );
        if (removed.before.is_some() || removed.after.is_some())
            && changed_enough(removed, ROWS_CHANGE_MIN)
        {
            self.push_figure(
                ChangeKind::RowsRemovedChanged,
                "rows removed by filter",
                removed,
            );
        }

        let fetches = Pair::new(b.heap_fetches, a.heap_fetches);
        if (fetches.before.is_some() || fetches.after.is_some())
            && changed_enough(fetches, ROWS_CHANGE_MIN)
        {
            self.push_figure(ChangeKind::HeapFetchesChanged, "heap fetches", fetches);
        }
    }

    /// Records a figure that moved, as "<node>: <what> <before> → <after>".
    fn push_figure(&mut self, kind: ChangeKind, what: &str, figure: Pair) {
        let message = format!(
            "{}: {what} {} → {}",
            node_label(self.a),
            count_or_absent(figure.before),
            count_or_absent(figure.after)
        );
        self.push(kind, message, Some(figure));
    }

    /// A sort or hash that started or stopped spilling to disk.
    fn spill_change(&mut self) {
        let (b, a) = (self.b, self.a);
        match (spills(b, self.b_m), spills(a, self.a_m)) {
            (false, true) => self.push(
                ChangeKind::SpillAppeared,
                format!("{}: now spills to disk", node_label(a)),
                None,
            ),
            (true, false) => self.push(
                ChangeKind::SpillVanished,
                format!("{}: no longer spills to disk", node_label(a)),
                None,
            ),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{metrics::measure, parse_plan};

    fn diff_json(before: &str, after: &str) -> PlanDiff {
        let (b, a) = (parse_plan(before).unwrap(), parse_plan(after).unwrap());
        diff(&b, &measure(&b), &a, &measure(&a))
    }

    #[test]
    fn seq_scan_to_index_scan_is_one_change() {
        let d = diff_json(
            r#"{"Plan": {"Node Type": "Limit", "Plans": [{"Node Type": "Sort", "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "events", "Schema": "public", "Alias": "events"}]}]}}"#,
            r#"{"Plan": {"Node Type": "Limit", "Plans": [
                {"Node Type": "Index Scan", "Relation Name": "events", "Schema": "public", "Alias": "events",
                 "Index Name": "events_idx"}]}}"#,
        );
        let kinds: Vec<ChangeKind> = d.changes.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [ChangeKind::AccessMethodChanged, ChangeKind::NodeRemoved]
        );
        assert_eq!(d.changes[0].relation.as_deref(), Some("public.events"));
        assert_eq!(d.after_to_before, [Some(0), Some(2)]);
    }

    #[test]
    fn join_matched_by_relations_not_position() {
        let d = diff_json(
            r#"{"Plan": {"Node Type": "Hash Join", "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "a"},
                {"Node Type": "Hash", "Plans": [{"Node Type": "Seq Scan", "Relation Name": "b"}]}]}}"#,
            r#"{"Plan": {"Node Type": "Nested Loop", "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "b"},
                {"Node Type": "Index Scan", "Relation Name": "a", "Index Name": "a_pkey"}]}}"#,
        );
        let kinds: Vec<ChangeKind> = d.changes.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [
                ChangeKind::JoinStrategyChanged,
                ChangeKind::AccessMethodChanged,
                ChangeKind::NodeRemoved
            ]
        );
        // b's scan matched b's scan though it moved from inner to outer.
        assert_eq!(d.after_to_before[1], Some(3));
    }

    /// The alias is the query's spelling, not the work: `orders o` and `orders` are one table.
    #[test]
    fn a_scan_is_matched_by_relation_whatever_its_alias() {
        let d = diff_json(
            r#"{"Plan": {"Node Type": "Seq Scan", "Relation Name": "orders", "Schema": "public",
                "Alias": "o"}}"#,
            r#"{"Plan": {"Node Type": "Index Scan", "Relation Name": "orders", "Schema": "public",
                "Alias": "orders", "Index Name": "orders_pkey"}}"#,
        );
        let kinds: Vec<ChangeKind> = d.changes.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [ChangeKind::AccessMethodChanged]);
    }

    /// A self-join's scans of one table keep their partners by alias, wherever they moved.
    #[test]
    fn a_self_joins_scans_are_told_apart_by_alias() {
        let d = diff_json(
            r#"{"Plan": {"Node Type": "Hash Join", "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "t", "Alias": "a"},
                {"Node Type": "Hash", "Plans": [
                    {"Node Type": "Seq Scan", "Relation Name": "t", "Alias": "b"}]}]}}"#,
            r#"{"Plan": {"Node Type": "Nested Loop", "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "t", "Alias": "b"},
                {"Node Type": "Index Scan", "Relation Name": "t", "Alias": "a",
                 "Index Name": "t_pkey"}]}}"#,
        );
        assert_eq!(d.after_to_before, [Some(0), Some(3), Some(1)]);
    }

    /// pages_changed compares the node's own pages (children subtracted), and says so.
    #[test]
    fn pages_changed_names_the_nodes_own_pages() {
        let d = diff_json(
            r#"{"Plan": {"Node Type": "Limit", "Shared Hit Blocks": 900, "Shared Read Blocks": 0,
                "Plans": [{"Node Type": "Seq Scan", "Relation Name": "t",
                "Shared Hit Blocks": 900, "Shared Read Blocks": 0}]}}"#,
            r#"{"Plan": {"Node Type": "Limit", "Shared Hit Blocks": 5, "Shared Read Blocks": 0,
                "Plans": [{"Node Type": "Index Scan", "Relation Name": "t", "Index Name": "i",
                "Shared Hit Blocks": 5, "Shared Read Blocks": 0}]}}"#,
        );
        let pages = d
            .changes
            .iter()
            .find(|c| c.kind == ChangeKind::PagesChanged)
            .unwrap();
        assert!(
            pages.message.ends_with(": own pages 900 → 5"),
            "{}",
            pages.message
        );
    }

    #[test]
    fn identical_plans_have_no_changes() {
        let json = r#"{"Plan": {"Node Type": "Seq Scan", "Relation Name": "t", "Plan Rows": 5,
            "Actual Startup Time": 0, "Actual Total Time": 1, "Actual Rows": 5, "Actual Loops": 1}}"#;
        assert!(diff_json(json, json).changes.is_empty());
    }

    #[test]
    fn a_figure_the_after_node_does_not_report_is_shown_absent_not_zero() {
        let d = diff_json(
            r#"{"Plan": {"Node Type": "Index Only Scan", "Relation Name": "t", "Index Name": "i",
                "Plan Rows": 5, "Actual Startup Time": 0, "Actual Total Time": 1, "Actual Rows": 5,
                "Actual Loops": 1, "Heap Fetches": 3750}}"#,
            r#"{"Plan": {"Node Type": "Index Scan", "Relation Name": "t", "Index Name": "i",
                "Plan Rows": 5, "Actual Startup Time": 0, "Actual Total Time": 1, "Actual Rows": 5,
                "Actual Loops": 1}}"#,
        );
        let fetches = d
            .changes
            .iter()
            .find(|c| c.kind == ChangeKind::HeapFetchesChanged)
            .unwrap();
        assert!(
            fetches.message.ends_with("heap fetches 3,750 → —"),
            "{}",
            fetches.message
        );
        assert_eq!(fetches.figure.unwrap().after, None);
    }

    #[test]
    fn ratio_needs_a_nonzero_before() {
        assert_eq!(Pair::new(Some(10.0), Some(5.0)).ratio(), Some(0.5));
        assert_eq!(Pair::new(Some(0.0), Some(5.0)).ratio(), None);
        assert_eq!(Pair::new(None, Some(5.0)).ratio(), None);
    }
}
