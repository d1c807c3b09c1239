//! A relation the baseline read through an index (Index Scan, Index Only Scan, Bitmap Heap
//! Scan) is now read by a sequential scan: the dropped index, the predicate an index no longer
//! matches, the statistics that now make the planner prefer reading everything.

use super::{Regression, RegressionClass, node_label};
use crate::check::baseline::BaselineSample;

fn is_seq(class: &str) -> bool {
    class == "Seq Scan" || class == "Parallel Seq Scan"
}

fn is_index(class: &str) -> bool {
    matches!(
        class.trim_start_matches("Parallel "),
        "Index Scan" | "Index Only Scan" | "Bitmap Heap Scan"
    )
}

/// The relations now read sequentially that the baseline read only through an index: the
/// new node's label and what the baseline read it with.
fn newly_sequential(before: &BaselineSample, after: &BaselineSample) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (relation, classes) in &after.relations {
        if !classes.iter().any(|c| is_seq(c)) {
            continue;
        }
        let Some(was) = before.relations.get(relation) else {
            continue;
        };
        if was.iter().any(|c| is_seq(c)) || !was.iter().any(|c| is_index(c)) {
            continue;
        }
        let new_node = after
            .plan
            .iter()
            .find(|n| n.relation.as_ref() == Some(relation) && is_seq(&n.node_type));
        let old_node = before
            .plan
            .iter()
            .find(|n| n.relation.as_ref() == Some(relation) && is_index(&n.node_type));
        found.push((
            new_node
                .map(node_label)
                .unwrap_or_else(|| format!("Seq Scan on {relation}")),
            old_node.map(node_label).unwrap_or_else(|| was.join(", ")),
        ));
    }
    found
}

/// The first relation read another way (for other rules' reasons).
pub fn changed_access(before: &BaselineSample, after: &BaselineSample) -> Option<(String, String)> {
    newly_sequential(before, after).into_iter().next()
}

pub fn check(before: &BaselineSample, after: &BaselineSample) -> Vec<Regression> {
    newly_sequential(before, after)
        .into_iter()
        .map(|(now, was)| Regression {
            class: RegressionClass::NewSeqScan,
            sample: after.label.clone(),
            message: format!("{now}, where the baseline had {was}"),
            node: Some(now),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::{node, sample};
    use super::*;

    fn index_plan() -> BaselineSample {
        let mut scan = node(Some(0), "Index Scan", Some("public.orders"));
        scan.index = Some("orders_customer_idx".into());
        sample(None, vec![node(None, "Limit", None), scan])
    }

    #[test]
    fn an_index_scan_that_became_sequential_fails() {
        let after = sample(
            None,
            vec![
                node(None, "Limit", None),
                node(Some(0), "Seq Scan", Some("public.orders")),
            ],
        );
        let r = check(&index_plan(), &after);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].class, RegressionClass::NewSeqScan);
        assert_eq!(
            r[0].message,
            "Seq Scan on public.orders, where the baseline had Index Scan using orders_customer_idx on public.orders"
        );
    }

    #[test]
    fn other_changes_are_not_this_rule() {
        // Already sequential, or sequential then too.
        let seq = sample(None, vec![node(None, "Seq Scan", Some("public.orders"))]);
        assert!(check(&seq, &seq).is_empty());
        // Index to index, and a new relation read sequentially.
        assert!(check(&index_plan(), &index_plan()).is_empty());
        let other = sample(None, vec![node(None, "Seq Scan", Some("public.other"))]);
        assert!(check(&index_plan(), &other).is_empty());
        // Sequential to index is an improvement, not this rule.
        assert!(check(&seq, &index_plan()).is_empty());
    }
}
