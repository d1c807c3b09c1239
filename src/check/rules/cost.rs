//! With `--estimated`: the planner's total cost grew by more than `--max-regression` percent.
//! An estimate has no spread (the same statistics give the same cost), so the threshold alone
//! decides; only plans that were not measured are compared this way.

use super::{Regression, RegressionClass, Thresholds};
use crate::check::baseline::BaselineSample;

pub fn check(
    before: &BaselineSample,
    after: &BaselineSample,
    thresholds: Thresholds,
) -> Option<Regression> {
    if before.pages.is_some() || after.pages.is_some() {
        // Measured: pages decide, never the estimate.
        return None;
    }
    let (b, a) = (before.total_cost?, after.total_cost?);
    if a <= b * (1.0 + thresholds.max_regression_percent / 100.0) || a - b < 1.0 {
        return None;
    }
    let node = super::seq_scan::changed_access(before, after).map(|(label, _)| label);
    Some(Regression {
        class: RegressionClass::CostRegression,
        sample: after.label.clone(),
        message: format!(
            "estimated cost {a} where the baseline estimated {b}{} (ESTIMATED: planner cost, not measured){}",
            if b > 0.0 {
                format!(" (+{:.0}%)", (a - b) / b * 100.0)
            } else {
                String::new()
            },
            node.as_ref()
                .map(|n| format!("; the plan now has {n}"))
                .unwrap_or_default()
        ),
        node,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{node, sample};
    use super::*;

    const T: Thresholds = Thresholds {
        max_regression_percent: 10.0,
    };

    fn costed(cost: f64) -> BaselineSample {
        let mut n = node(None, "Seq Scan", Some("public.t"));
        n.total_cost = Some(cost);
        sample(None, vec![n])
    }

    #[test]
    fn estimated_cost_beyond_the_threshold_fails() {
        let r = check(&costed(100.0), &costed(200.0), T).unwrap();
        assert_eq!(r.class, RegressionClass::CostRegression);
        assert!(r.message.contains("(+100%)"), "{}", r.message);
        assert!(r.message.contains("ESTIMATED"), "{}", r.message);
        assert_eq!(check(&costed(100.0), &costed(109.0), T), None);
        assert_eq!(check(&costed(200.0), &costed(100.0), T), None);
    }

    #[test]
    fn measured_samples_are_left_to_pages() {
        let mut before = costed(100.0);
        before.pages = Some(crate::check::PagesFigure {
            median: 1.0,
            min: 1.0,
            max: 1.0,
        });
        assert_eq!(check(&before, &costed(900.0), T), None);
    }
}
