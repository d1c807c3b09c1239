//! Pages touched (shared hit + read, the warm runs' median) grew: by more than
//! `--max-regression` percent, beyond the wider of the two measured spreads, and by at least
//! [`MIN_PAGES`] pages. Pages, not time: the same plan over the same rows touches the same pages
//! on a busy machine, where its time does not. The spread still counts, because a few pages do
//! move between runs (an index-only scan's heap fetches follow the visibility map, which
//! vacuum changes under it).

use super::{Regression, RegressionClass, Thresholds};
use crate::check::baseline::{BaselineSample, PagesFigure};

/// Fewer extra pages than this never fail a check: a B-tree growing a level, a page split.
pub const MIN_PAGES: f64 = 4.0;

/// How many pages beyond the baseline's median fail: the threshold, the spread, the floor.
pub fn allowed_growth(before: PagesFigure, after: PagesFigure, percent: f64) -> f64 {
    let noise = before.spread().max(after.spread());
    (before.median * percent / 100.0 + noise).max(MIN_PAGES)
}

pub fn check(
    before: &BaselineSample,
    after: &BaselineSample,
    thresholds: Thresholds,
) -> Option<Regression> {
    let (b, a) = (before.pages?, after.pages?);
    let growth = a.median - b.median;
    if growth <= allowed_growth(b, a, thresholds.max_regression_percent) {
        return None;
    }
    let percent = if b.median > 0.0 {
        format!(" (+{:.0}%)", growth / b.median * 100.0)
    } else {
        String::new()
    };
    // The node whose own reads grew most is the reason; a relation read another way first.
    let node = super::seq_scan::changed_access(before, after).map(|(label, _)| label);
    Some(Regression {
        class: RegressionClass::PagesRegression,
        sample: after.label.clone(),
        message: format!(
            "touches {} pages where the baseline touched {}{percent}, beyond the {}% allowed and the measured spread of {} pages{}",
            a.median,
            b.median,
            thresholds.max_regression_percent,
            b.spread().max(a.spread()),
            node.as_ref()
                .map(|n| format!("; the plan now has {n}"))
                .unwrap_or_default()
        ),
        node,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::sample;
    use super::*;

    const T: Thresholds = Thresholds {
        max_regression_percent: 10.0,
    };

    #[test]
    fn growth_beyond_threshold_and_spread_fails() {
        let before = sample(Some((100.0, 100.0, 100.0)), Vec::new());
        let worse = sample(Some((120.0, 118.0, 121.0)), Vec::new());
        let r = check(&before, &worse, T).unwrap();
        assert_eq!(r.class, RegressionClass::PagesRegression);
        assert!(r.message.contains("touches 120 pages"), "{}", r.message);
        assert!(r.message.contains("(+20%)"), "{}", r.message);
    }

    #[test]
    fn noise_and_small_changes_pass() {
        let before = sample(Some((100.0, 95.0, 110.0)), Vec::new());
        // +20 pages, but 10% (10) plus a spread of 15 allows 25.
        assert_eq!(
            check(&before, &sample(Some((120.0, 120.0, 120.0)), Vec::new()), T),
            None
        );
        // A tiny query: 2 → 5 pages is under the floor.
        let tiny = sample(Some((2.0, 2.0, 2.0)), Vec::new());
        assert_eq!(
            check(&tiny, &sample(Some((5.0, 5.0, 5.0)), Vec::new()), T),
            None
        );
        // Fewer pages never fail.
        assert_eq!(
            check(&before, &sample(Some((10.0, 10.0, 10.0)), Vec::new()), T),
            None
        );
        // Nothing measured (an estimated sample) is not compared here.
        assert_eq!(check(&before, &sample(None, Vec::new()), T), None);
    }
}
