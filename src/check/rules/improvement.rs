//! Improvements: pages touched (or, estimated, the planner's cost) fell by more than the
//! threshold beyond the spread. Reported, never failing.

use super::Thresholds;
use super::pages::allowed_growth;
use crate::check::baseline::BaselineSample;

/// What got better, one sentence; `None` when nothing did beyond the noise.
pub fn check(
    before: &BaselineSample,
    after: &BaselineSample,
    thresholds: Thresholds,
) -> Option<String> {
    let percent = thresholds.max_regression_percent;
    if let (Some(b), Some(a)) = (before.pages, after.pages) {
        let fall = b.median - a.median;
        return (fall > allowed_growth(b, a, percent)).then(|| {
            format!(
                "touches {} pages where the baseline touched {} (-{:.0}%)",
                a.median,
                b.median,
                fall / b.median.max(1.0) * 100.0
            )
        });
    }
    if before.pages.is_some() || after.pages.is_some() {
        return None;
    }
    let (b, a) = (before.total_cost?, after.total_cost?);
    (a < b * (1.0 - percent / 100.0) && b - a >= 1.0).then(|| {
        format!(
            "estimated cost {a} where the baseline estimated {b} (-{:.0}%, ESTIMATED)",
            (b - a) / b * 100.0
        )
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
    fn fewer_pages_beyond_the_noise_improve() {
        let before = sample(Some((100.0, 100.0, 100.0)), Vec::new());
        let better = sample(Some((3.0, 3.0, 3.0)), Vec::new());
        assert_eq!(
            check(&before, &better, T).as_deref(),
            Some("touches 3 pages where the baseline touched 100 (-97%)")
        );
        assert_eq!(
            check(&before, &sample(Some((95.0, 95.0, 95.0)), Vec::new()), T),
            None
        );
        assert_eq!(check(&better, &before, T), None);
    }
}
