//! `--update` over an existing baseline: a query whose plan is the same as the baseline's (same
//! nodes, relations and indexes, the same failures and spills, figures within the noise the
//! rules allow) keeps its recorded entry, so the file changes in review only where a plan did.

use super::baseline::{Baseline, BaselineQuery, BaselineSample};
use super::rules::{Thresholds, improvement, regressions};

/// The same plan: node for node the same kind of work on the same relation through the same
/// index, the same spills and estimate errors of note, and the same failure.
fn same_shape(a: &BaselineSample, b: &BaselineSample) -> bool {
    a.label == b.label
        && a.params == b.params
        && a.error == b.error
        && a.plan.len() == b.plan.len()
        && a.plan.iter().zip(&b.plan).all(|(x, y)| {
            x.parent == y.parent
                && x.node_type == y.node_type
                && x.relation == y.relation
                && x.index == y.index
                && x.spills == y.spills
                && x.decides_join_order == y.decides_join_order
                && x.estimate_error.is_some() == y.estimate_error.is_some()
        })
}

fn unchanged(old: &BaselineQuery, new: &BaselineQuery, thresholds: Thresholds) -> bool {
    old.sql_sha256 == new.sql_sha256
        && old.calls_per_day == new.calls_per_day
        && old.samples.len() == new.samples.len()
        && old.samples.iter().zip(&new.samples).all(|(a, b)| {
            same_shape(a, b)
                && regressions(a, b, thresholds).is_empty()
                && improvement::check(a, b, thresholds).is_none()
        })
}

/// `new` with every query whose plan did not change taken from `old` as it was recorded.
pub fn settle(old: &Baseline, mut new: Baseline, thresholds: Thresholds) -> Baseline {
    if old.mode != new.mode || old.server_major != new.server_major {
        return new;
    }
    for q in &mut new.queries {
        if let Some(previous) = old.query(&q.id)
            && unchanged(previous, q, thresholds)
        {
            *q = previous.clone();
        }
    }
    new
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::check::CheckMode;
    use crate::check::baseline::sql_sha256;
    use crate::check::rules::testing::{node, sample};

    const T: Thresholds = Thresholds {
        max_regression_percent: 10.0,
    };

    fn recording(pages: f64, node_type: &str) -> Baseline {
        Baseline::new(
            CheckMode::Measured,
            17,
            BTreeMap::new(),
            vec![BaselineQuery {
                id: "q.sql".into(),
                sql_sha256: sql_sha256("SELECT 1"),
                sql: "SELECT 1".into(),
                calls_per_day: 1.0,
                samples: vec![sample(
                    Some((pages, pages, pages)),
                    vec![node(None, node_type, Some("public.t"))],
                )],
            }],
        )
    }

    #[test]
    fn noise_keeps_the_recorded_entry_a_new_plan_replaces_it() {
        let old = recording(100.0, "Index Scan");
        // A page more: the same plan, the file stays as it was.
        let settled = settle(&old, recording(101.0, "Index Scan"), T);
        assert_eq!(settled, old);
        // Another plan, or pages beyond the noise: the new recording.
        let new = recording(100.0, "Seq Scan");
        assert_eq!(settle(&old, new.clone(), T), new);
        let new = recording(300.0, "Index Scan");
        assert_eq!(settle(&old, new.clone(), T), new);
    }
}
