//! How much of what `advise` proposed it measured: the candidates proposed, measured, failed
//! and left out by `--budget`, and the line a report opens its verdict with, so "nothing pays"
//! is never said of candidates that were never measured.

use serde::Serialize;

/// What was proposed and what of it was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    pub proposed: usize,
    /// Built and measured over the workload.
    pub measured: usize,
    /// Could not be built or measured (a table the role does not own, a lock...).
    pub failed: usize,
    /// Not measured because `--budget` left no room for them.
    pub over_budget: usize,
}

impl Coverage {
    /// Candidates were proposed and none was measured: no verdict at all.
    pub fn nothing_measured(&self) -> bool {
        self.proposed > 0 && self.measured == 0
    }

    /// The verdict line when nothing is recommended.
    pub fn no_advice_line(&self) -> String {
        let plural = |n: usize| if n == 1 { "candidate" } else { "candidates" };
        let left_out = || {
            let mut parts = Vec::new();
            if self.failed > 0 {
                parts.push(format!("{} could not be measured", self.failed));
            }
            if self.over_budget > 0 {
                parts.push(format!("{} not measured (budget)", self.over_budget));
            }
            parts.join(", ")
        };
        if self.proposed == 0 {
            "No index to build: no query's plan suggested one.".into()
        } else if self.nothing_measured() {
            format!(
                "Nothing was measured: none of the {} proposed {} could be measured ({}); this is no verdict on them.",
                self.proposed,
                plural(self.proposed),
                left_out()
            )
        } else {
            let verdict = if self.measured == 1 {
                "No index to build: the one measured candidate does not pay for the workload".into()
            } else {
                format!(
                    "No index to build: none of the {} measured {} pays for the workload",
                    self.measured,
                    plural(self.measured)
                )
            };
            if self.measured < self.proposed {
                format!(
                    "{verdict} ({} of {} proposed: {}).",
                    self.proposed - self.measured,
                    self.proposed,
                    left_out()
                )
            } else {
                format!("{verdict}.")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_was_measured() {
        let c = |proposed, measured, failed, over_budget| Coverage {
            proposed,
            measured,
            failed,
            over_budget,
        };
        assert_eq!(
            c(0, 0, 0, 0).no_advice_line(),
            "No index to build: no query's plan suggested one."
        );
        let none = c(3, 0, 2, 1);
        assert!(none.nothing_measured());
        assert_eq!(
            none.no_advice_line(),
            "Nothing was measured: none of the 3 proposed candidates could be measured \
             (2 could not be measured, 1 not measured (budget)); this is no verdict on them."
        );
        assert_eq!(
            c(4, 3, 0, 1).no_advice_line(),
            "No index to build: none of the 3 measured candidates pays for the workload \
             (1 of 4 proposed: 1 not measured (budget))."
        );
        assert!(!c(1, 1, 0, 0).nothing_measured());
        assert_eq!(
            c(1, 1, 0, 0).no_advice_line(),
            "No index to build: the one measured candidate does not pay for the workload."
        );
    }
}
