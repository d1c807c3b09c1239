//! A new estimate error of 10× or more on a node whose row count decides the join order (an
//! input of a join, directly or through a Hash, Sort, Materialize or Memoize): the planner chose
//! the order and the method on a wrong number. Nodes are matched by the relations below them, so
//! the same join done another way is the same node; an error the baseline already had there is
//! not new.

use std::collections::BTreeSet;

use super::{Regression, RegressionClass, node_label};
use crate::check::baseline::{BaselineNode, BaselineSample};

/// The relations read at or below each node, joined: what the node computes, however.
fn keys(plan: &[BaselineNode]) -> Vec<String> {
    let mut sets: Vec<BTreeSet<&str>> = vec![BTreeSet::new(); plan.len()];
    // Pre-order: every child comes after its parent, so walking backwards folds children first.
    for id in (0..plan.len()).rev() {
        if let Some(rel) = &plan[id].relation {
            sets[id].insert(rel);
        }
        if let Some(p) = plan[id].parent.filter(|&p| p < id) {
            let child = sets[id].clone();
            sets[p].extend(child);
        }
    }
    sets.into_iter()
        .map(|s| s.into_iter().collect::<Vec<_>>().join(","))
        .collect()
}

fn erring(plan: &[BaselineNode]) -> Vec<(usize, String)> {
    keys(plan)
        .into_iter()
        .enumerate()
        .filter(|(id, key)| {
            let n = &plan[*id];
            n.decides_join_order && n.estimate_error.is_some_and(|f| f >= 10.0) && !key.is_empty()
        })
        .collect()
}

pub fn check(before: &BaselineSample, after: &BaselineSample) -> Vec<Regression> {
    if before.plan.is_empty() {
        return Vec::new();
    }
    let known: BTreeSet<String> = erring(&before.plan).into_iter().map(|(_, k)| k).collect();
    let mut seen = BTreeSet::new();
    erring(&after.plan)
        .into_iter()
        .filter(|(_, key)| !known.contains(key) && seen.insert(key.clone()))
        .map(|(id, _)| {
            let n = &after.plan[id];
            let label = node_label(n);
            Regression {
                class: RegressionClass::NewEstimateError,
                sample: after.label.clone(),
                message: format!(
                    "{label} is misestimated {}× ({} rows estimated, {} actual) and its row count decides the join order",
                    n.estimate_error.unwrap_or_default(),
                    n.estimated_rows.map(|r| r.to_string()).unwrap_or_else(|| "?".into()),
                    n.actual_rows.map(|r| r.to_string()).unwrap_or_else(|| "?".into()),
                ),
                node: Some(label),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::{node, sample};
    use super::*;

    fn join(error: Option<f64>, decides: bool) -> BaselineSample {
        let mut a = node(Some(0), "Seq Scan", Some("public.a"));
        a.estimate_error = error;
        a.decides_join_order = decides;
        sample(
            None,
            vec![
                node(None, "Hash Join", None),
                a,
                node(Some(0), "Hash", None),
                node(Some(2), "Seq Scan", Some("public.b")),
            ],
        )
    }

    #[test]
    fn a_new_error_under_a_join_fails() {
        let r = check(&join(None, true), &join(Some(120.0), true));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].class, RegressionClass::NewEstimateError);
        assert!(
            r[0].message
                .starts_with("Seq Scan on public.a is misestimated 120×"),
            "{}",
            r[0].message
        );
    }

    #[test]
    fn old_errors_and_nodes_that_decide_nothing_pass() {
        assert!(check(&join(Some(50.0), true), &join(Some(120.0), true)).is_empty());
        assert!(check(&join(None, false), &join(Some(120.0), false)).is_empty());
        assert!(check(&join(None, true), &join(Some(9.0), true)).is_empty());
    }

    #[test]
    fn nodes_are_keyed_by_the_relations_below_them() {
        let k = keys(&join(None, true).plan);
        assert_eq!(
            k,
            vec!["public.a,public.b", "public.a", "public.b", "public.b"]
        );
    }
}
