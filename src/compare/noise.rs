//! Timing noise: the spread of the warm runs decides whether a time difference means anything.
//! A difference no larger than the spread (max − min) of either side's warm runs is "within
//! noise": it is never called faster or slower, and it never orders two candidates.

use serde::Serialize;

/// The fastest and slowest of a set of runs, ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; `None` when there are none.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        values.into_iter().fold(None, |acc, v| {
            Some(match acc {
                None => Spread { min: v, max: v },
                Some(s) => Spread {
                    min: s.min.min(v),
                    max: s.max.max(v),
                },
            })
        })
    }

    pub fn width(self) -> f64 {
        self.max - self.min
    }
}

/// Whether `a` and `b` (two figures of the same kind: medians, or first runs) differ by no
/// more than the wider of the two sides' warm spreads. With no spread known on either side
/// (a single warm run each) nothing can be told apart from noise but an exact tie, so only
/// equal figures are within noise.
pub fn within_noise(a: f64, b: f64, spreads: [Option<Spread>; 2]) -> bool {
    let width = spreads
        .iter()
        .flatten()
        .map(|s| s.width())
        .fold(0.0, f64::max);
    (a - b).abs() <= width
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads() {
        assert_eq!(Spread::of([]), None);
        let s = Spread::of([0.108, 0.101, 0.104]).unwrap();
        assert_eq!((s.min, s.max), (0.101, 0.108));
        assert!((s.width() - 0.007).abs() < 1e-12);
    }

    #[test]
    fn differences_inside_the_spread_are_noise() {
        let wide = Spread::of([0.095, 0.110]);
        let narrow = Spread::of([0.100, 0.102]);
        // 0.101 against 0.108 ms: inside the 0.015 ms spread of one side.
        assert!(within_noise(0.101, 0.108, [wide, narrow]));
        assert!(within_noise(0.108, 0.101, [narrow, wide]));
        // 105 ms against 0.054 ms is no noise.
        let base = Spread::of([101.0, 110.0]);
        assert!(!within_noise(
            105.0,
            0.054,
            [base, Spread::of([0.05, 0.06])]
        ));
        // No spread known: only a tie is noise.
        assert!(within_noise(1.0, 1.0, [None, None]));
        assert!(!within_noise(1.0, 1.01, [None, None]));
    }
}
