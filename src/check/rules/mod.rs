//! The regression rules of `pgplan check`, one per file. Each compares one sample of a query as
//! the baseline recorded it with the same sample now, and names what got worse and where.

pub mod cost;
pub mod estimate_error;
pub mod failed;
pub mod improvement;
pub mod pages;
pub mod seq_scan;
pub mod spill;

use serde::Serialize;

use super::baseline::BaselineSample;

/// The kinds of regression, each a SARIF rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegressionClass {
    /// The query no longer runs.
    QueryFailed,
    /// Pages touched grew beyond the threshold and the measured spread.
    PagesRegression,
    /// The planner's total cost grew beyond the threshold (`--estimated`).
    CostRegression,
    /// A relation the baseline read through an index is now read sequentially.
    NewSeqScan,
    /// A sort, hash or aggregate now spills to disk (temp blocks).
    NewSpill,
    /// A node whose row count decides the join order is now misestimated by 10× or more.
    NewEstimateError,
}

impl RegressionClass {
    pub const ALL: [RegressionClass; 6] = [
        RegressionClass::QueryFailed,
        RegressionClass::PagesRegression,
        RegressionClass::CostRegression,
        RegressionClass::NewSeqScan,
        RegressionClass::NewSpill,
        RegressionClass::NewEstimateError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RegressionClass::QueryFailed => "query_failed",
            RegressionClass::PagesRegression => "pages_regression",
            RegressionClass::CostRegression => "cost_regression",
            RegressionClass::NewSeqScan => "new_seq_scan",
            RegressionClass::NewSpill => "new_spill",
            RegressionClass::NewEstimateError => "new_estimate_error",
        }
    }

    /// One line on what the class means (SARIF's rule description, the docs).
    pub fn description(self) -> &'static str {
        match self {
            RegressionClass::QueryFailed => {
                "The query ran when the baseline was recorded and now fails."
            }
            RegressionClass::PagesRegression => {
                "The query touches more pages than the baseline, beyond --max-regression and the measured spread."
            }
            RegressionClass::CostRegression => {
                "The planner's estimated cost grew beyond --max-regression (--estimated)."
            }
            RegressionClass::NewSeqScan => {
                "A relation the baseline read through an index is now read by a sequential scan."
            }
            RegressionClass::NewSpill => {
                "A sort, hash or aggregate now spills to disk (temp blocks)."
            }
            RegressionClass::NewEstimateError => {
                "A node whose row count decides the join order is now misestimated by 10x or more."
            }
        }
    }
}

/// One regression of one sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Regression {
    pub class: RegressionClass,
    /// The sample's label ("given", "common", ...).
    pub sample: String,
    /// The node-level reason, one sentence.
    pub message: String,
    /// The node concerned, as `Seq Scan on public.orders`, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// How much worse counts, for the rules that measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// `--max-regression`: a figure must grow by more than this percentage (beyond the spread).
    pub max_regression_percent: f64,
}

/// `Seq Scan on public.orders`, `Index Scan using orders_pkey on public.orders`, `Hash Join`.
pub fn node_label(node: &super::baseline::BaselineNode) -> String {
    let mut label = node.node_type.clone();
    if let Some(index) = &node.index {
        label.push_str(" using ");
        label.push_str(index);
    }
    if let Some(rel) = &node.relation {
        label.push_str(" on ");
        label.push_str(rel);
    }
    label
}

/// Every rule over one sample, in class order.
pub fn regressions(
    before: &BaselineSample,
    after: &BaselineSample,
    thresholds: Thresholds,
) -> Vec<Regression> {
    if let Some(r) = failed::check(before, after) {
        return vec![r];
    }
    let mut found = Vec::new();
    found.extend(pages::check(before, after, thresholds));
    found.extend(cost::check(before, after, thresholds));
    found.extend(seq_scan::check(before, after));
    found.extend(spill::check(before, after));
    found.extend(estimate_error::check(before, after));
    found
}

#[cfg(test)]
pub(crate) mod testing {
    //! Samples written from a description, for the rules' tests.
    use std::collections::BTreeMap;

    use super::super::baseline::{BaselineNode, BaselineSample, PagesFigure, relation_classes};

    pub fn node(parent: Option<usize>, node_type: &str, relation: Option<&str>) -> BaselineNode {
        BaselineNode {
            parent,
            node_type: node_type.into(),
            relation: relation.map(Into::into),
            index: None,
            estimated_rows: Some(10.0),
            actual_rows: Some(10.0),
            total_cost: Some(10.0),
            estimate_error: None,
            decides_join_order: false,
            spills: false,
        }
    }

    pub fn sample(pages: Option<(f64, f64, f64)>, plan: Vec<BaselineNode>) -> BaselineSample {
        BaselineSample {
            label: "given".into(),
            params: Vec::new(),
            generic: false,
            error: None,
            pages: pages.map(|(median, min, max)| PagesFigure { median, min, max }),
            temp_blocks: Some(0.0),
            total_cost: plan.first().and_then(|n| n.total_cost),
            relations: relation_classes(&plan),
            plan,
        }
    }

    pub fn empty() -> BaselineSample {
        BaselineSample {
            relations: BTreeMap::new(),
            ..sample(None, Vec::new())
        }
    }
}
