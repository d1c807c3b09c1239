//! The baseline file of `pgplan check`: per query its text and digest, calls, and per sample the
//! plan's shape (node by node, with the figures that are stable from run to run: estimated and
//! actual rows, estimate errors, spills, costs), pages touched (warm median and spread) and temp
//! blocks. Timings and host names are left out so the file only changes when a plan does.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::compare::Measurement;
use crate::compare::workload::{QueryRuns, WorkloadQuery};
use crate::plan::findings::{significant_misestimate, spills};
use crate::plan::{Analysis, Plan};

/// Bumped when a field changes meaning or goes; a baseline of another version is refused with
/// the fix (record it again with `--update`).
pub const BASELINE_VERSION: u32 = 1;

/// What the figures of a baseline are: measured pages, or the planner's costs (`--estimated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckMode {
    Measured,
    Estimated,
}

impl CheckMode {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckMode::Measured => "measured",
            CheckMode::Estimated => "estimated",
        }
    }
}

/// The whole baseline file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub pgplan_baseline: u32,
    pub mode: CheckMode,
    /// The server's major version: plans of another major version may differ for its own reasons.
    pub server_major: u32,
    /// The settings that change plans, as the server reported them (sorted by name).
    pub settings: BTreeMap<String, String>,
    /// Sorted by id.
    pub queries: Vec<BaselineQuery>,
}

/// One query of the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineQuery {
    /// The file name (`#n` for the n-th statement of a file of several).
    pub id: String,
    /// SHA-256 of the query text, hex: a changed query is told by it.
    pub sql_sha256: String,
    /// The text, for the unified diff a changed query is shown with.
    pub sql: String,
    pub calls_per_day: f64,
    pub samples: Vec<BaselineSample>,
}

/// One sample (one set of parameter values) of a query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineSample {
    /// "given", "common", "rare", "generic", ...: samples are matched by label.
    pub label: String,
    /// The parameter values it ran with (text literals), reused by later checks so the same
    /// rows are read.
    pub params: Vec<String>,
    /// No values: the generic plan, estimated.
    pub generic: bool,
    /// Why the query did not run (its error), or `None` when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Pages touched (shared hit + read) over the warm runs: median, min and max.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<PagesFigure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_blocks: Option<f64>,
    /// The planner's total cost of the plan (the root's Total Cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost: Option<f64>,
    /// The node classes that read each relation (`Index Scan`, `Seq Scan`, ...), sorted.
    #[serde(default)]
    pub relations: BTreeMap<String, Vec<String>>,
    /// The plan's nodes in pre-order.
    #[serde(default)]
    pub plan: Vec<BaselineNode>,
}

/// The warm runs' pages touched.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PagesFigure {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl PagesFigure {
    pub fn spread(&self) -> f64 {
        self.max - self.min
    }
}

/// One plan node, as stable figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineNode {
    /// The parent's position in `plan`; `None` for the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<usize>,
    /// As EXPLAIN's text format names it (`Hash Left Join`, `Parallel Seq Scan`).
    pub node_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_rows: Option<f64>,
    /// Rows over all loops; `None` in an estimated plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual_rows: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost: Option<f64>,
    /// Actual against estimated rows per loop when it is off by 10× or more on enough rows
    /// (pgplan's misestimate finding), rounded to one decimal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_error: Option<f64>,
    /// Its row count feeds a join: the planner chose the join order and method on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub decides_join_order: bool,
    /// A sort, hash or hash aggregate that went to disk.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spills: bool,
}

/// SHA-256 of `text`, lower-case hex.
pub fn sql_sha256(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

fn is_join(node_type: &str) -> bool {
    node_type.contains("Join") || node_type.starts_with("Nested Loop")
}

/// Whether the node at `id` is an input of a join, directly or through the nodes that only
/// pass rows on (Hash, Materialize, Sort, Memoize): the rows the planner expected of it chose
/// the join's order and method.
fn feeds_join(plan: &Plan, id: usize) -> bool {
    let mut at = plan.nodes[id].parent;
    while let Some(p) = at {
        let node = &plan.nodes[p];
        if is_join(&node.display_type()) {
            return true;
        }
        if !matches!(
            node.node_type.as_str(),
            "Hash" | "Materialize" | "Sort" | "Memoize" | "Incremental Sort"
        ) {
            return false;
        }
        at = node.parent;
    }
    false
}

/// The stable figures of one analysed plan.
pub fn plan_nodes(analysis: &Analysis) -> Vec<BaselineNode> {
    let plan = &analysis.plan;
    plan.nodes
        .iter()
        .enumerate()
        .map(|(id, node)| {
            let metrics = &analysis.metrics.nodes[id];
            BaselineNode {
                parent: node.parent,
                node_type: node.display_type(),
                relation: node.qualified_relation(),
                index: node.index_name.clone(),
                estimated_rows: node.plan_rows,
                actual_rows: metrics.actual_rows_total.map(round2),
                total_cost: node.total_cost.map(round2),
                estimate_error: significant_misestimate(metrics)
                    .then(|| {
                        metrics
                            .misestimate
                            .map(|m| (m.factor * 10.0).round() / 10.0)
                    })
                    .flatten(),
                decides_join_order: feeds_join(plan, id),
                spills: spills(node, metrics),
            }
        })
        .collect()
}

/// The node classes reading each relation.
pub fn relation_classes(nodes: &[BaselineNode]) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for node in nodes {
        if let Some(rel) = &node.relation {
            let classes = map.entry(rel.clone()).or_default();
            if !classes.contains(&node.node_type) {
                classes.push(node.node_type.clone());
                classes.sort();
            }
        }
    }
    map
}

fn pages_of(measurement: &Measurement) -> Option<PagesFigure> {
    let values: Vec<f64> = measurement
        .warm
        .iter()
        .filter_map(|a| a.metrics.totals.pages_touched)
        .collect();
    if values.is_empty() {
        return None;
    }
    let median = measurement.warm_figures().pages_touched?;
    Some(PagesFigure {
        median,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

/// One sample as recorded: its plan shape and figures, or its error.
fn sample_of(
    query: &WorkloadQuery,
    index: usize,
    run: &Result<Measurement, String>,
) -> BaselineSample {
    let sample = &query.samples[index];
    let mut recorded = BaselineSample {
        label: sample.label.clone(),
        params: sample.params.clone(),
        generic: sample.generic,
        error: None,
        pages: None,
        temp_blocks: None,
        total_cost: None,
        relations: BTreeMap::new(),
        plan: Vec::new(),
    };
    match run {
        Err(error) => recorded.error = Some(error.clone()),
        Ok(m) => {
            let measured = !m.warm.is_empty();
            let figures = m.warm_figures();
            let plan = plan_nodes(m.representative());
            recorded.pages = if measured { pages_of(m) } else { None };
            recorded.temp_blocks = if measured { figures.temp_blocks } else { None };
            recorded.total_cost = figures.total_cost.map(round2);
            recorded.relations = relation_classes(&plan);
            recorded.plan = plan;
        }
    }
    recorded
}

/// One query as recorded from its runs (one per sample).
pub fn query_of(query: &WorkloadQuery, runs: &QueryRuns) -> BaselineQuery {
    BaselineQuery {
        id: query.source.id.clone(),
        sql_sha256: sql_sha256(&query.source.query.text),
        sql: query.source.query.text.clone(),
        calls_per_day: query.source.calls_per_day,
        samples: runs
            .iter()
            .enumerate()
            .map(|(i, run)| sample_of(query, i, run))
            .collect(),
    }
}

impl Baseline {
    /// A baseline of `queries`, sorted by id so the file diffs well.
    pub fn new(
        mode: CheckMode,
        server_major: u32,
        settings: BTreeMap<String, String>,
        mut queries: Vec<BaselineQuery>,
    ) -> Self {
        queries.sort_by(|a, b| a.id.cmp(&b.id));
        Baseline {
            pgplan_baseline: BASELINE_VERSION,
            mode,
            server_major,
            settings,
            queries,
        }
    }

    pub fn query(&self, id: &str) -> Option<&BaselineQuery> {
        self.queries.iter().find(|q| q.id == id)
    }

    /// The file's text: pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Reads a baseline file's text, refusing another version with the fix.
    pub fn from_json(text: &str) -> Result<Baseline, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
        match value.get("pgplan_baseline").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(BASELINE_VERSION) => {}
            Some(v) => {
                return Err(format!(
                    "a baseline of version {v}, and this pgplan reads version {BASELINE_VERSION}: \
                     record it again with --update"
                ));
            }
            None => return Err("not a pgplan baseline (no \"pgplan_baseline\" version)".into()),
        }
        serde_json::from_value(value).map_err(|e| format!("not a valid pgplan baseline ({e})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;

    pub(crate) fn analysis(json: &str) -> Analysis {
        Analysis::of(parse_plan(json).unwrap())
    }

    const JOIN: &str = r#"[{"Plan": {"Node Type": "Hash Join", "Join Type": "Inner",
        "Total Cost": 100.0, "Plan Rows": 10, "Actual Rows": 5000, "Actual Loops": 1,
        "Plans": [
          {"Node Type": "Seq Scan", "Parent Relationship": "Outer", "Relation Name": "a",
           "Schema": "public", "Alias": "a", "Total Cost": 40.0, "Plan Rows": 10,
           "Actual Rows": 5000, "Actual Loops": 1},
          {"Node Type": "Hash", "Parent Relationship": "Inner", "Total Cost": 20.0,
           "Plan Rows": 100, "Actual Rows": 100, "Actual Loops": 1,
           "Plans": [{"Node Type": "Index Scan", "Parent Relationship": "Outer",
             "Relation Name": "b", "Schema": "public", "Alias": "b", "Index Name": "b_pkey",
             "Total Cost": 20.0, "Plan Rows": 100, "Actual Rows": 100, "Actual Loops": 1}]}
        ]}}]"#;

    #[test]
    fn nodes_keep_shape_and_stable_figures() {
        let nodes = plan_nodes(&analysis(JOIN));
        assert_eq!(nodes.len(), 4);
        assert_eq!(nodes[0].node_type, "Hash Join");
        assert!(!nodes[0].decides_join_order);
        assert_eq!(nodes[1].relation.as_deref(), Some("public.a"));
        assert!(nodes[1].decides_join_order);
        assert_eq!(nodes[1].estimate_error, Some(500.0));
        // Below the Hash, still an input of the join.
        assert!(nodes[3].decides_join_order);
        assert_eq!(nodes[3].parent, Some(2));
        assert_eq!(nodes[3].estimate_error, None);
        let classes = relation_classes(&nodes);
        assert_eq!(classes["public.b"], vec!["Index Scan".to_owned()]);
    }

    #[test]
    fn the_file_is_sorted_and_reads_back() {
        let q = |id: &str| BaselineQuery {
            id: id.into(),
            sql_sha256: sql_sha256("SELECT 1"),
            sql: "SELECT 1".into(),
            calls_per_day: 1.0,
            samples: Vec::new(),
        };
        let b = Baseline::new(
            CheckMode::Measured,
            17,
            BTreeMap::from([("work_mem".to_owned(), "4096".to_owned())]),
            vec![q("z.sql"), q("a.sql")],
        );
        assert_eq!(b.queries[0].id, "a.sql");
        let text = b.to_json();
        assert!(text.ends_with("}\n"));
        assert_eq!(Baseline::from_json(&text).unwrap(), b);
        assert_eq!(
            sql_sha256("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn other_files_are_refused_with_the_fix() {
        let err = Baseline::from_json("{\"pgplan_baseline\": 99}").unwrap_err();
        assert!(err.contains("--update"), "{err}");
        assert!(
            Baseline::from_json("[]")
                .unwrap_err()
                .contains("not a pgplan")
        );
        assert!(
            Baseline::from_json("nope")
                .unwrap_err()
                .contains("not JSON")
        );
    }
}
