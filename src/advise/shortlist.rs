//! Which candidates to measure, and how many fit the budget. Measuring is what decides, and it
//! costs a build and a pass over the workload per candidate, so the candidates most likely to
//! pay go first: by HypoPG's estimate of the planner cost they save (labelled estimated: it only
//! orders the measuring, it never recommends), else by the pages the scans they were proposed
//! for read today, weighted by calls. With HypoPG, a candidate the planner chose for none of
//! its queries while it was hypothetically in place is not measured: a real index the planner
//! would not choose either saves nothing (the candidates HypoPG cannot represent, GIN and
//! GiST, are measured as without it).

use super::Candidate;
use crate::plan::Plan;

/// HypoPG's view of one candidate over the queries it was proposed for: planner cost saved
/// per day with it hypothetically in place (the planner's total cost units times calls), and
/// whether any of their plans chose it. Estimates: they order the measuring, never decide.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub cost_saved_per_day: f64,
    pub used: bool,
    /// HypoPG's estimate of its size.
    pub size_bytes: Option<f64>,
}

/// What is known about a candidate before measuring it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prospect {
    /// Pages the scans it was proposed for read per day in the baseline: each scan's pages
    /// (buffers hit and read) times its query's calls per day.
    pub baseline_pages_per_day: f64,
    /// HypoPG: planner cost saved per day with the index hypothetically in place. `None`
    /// without HypoPG.
    pub estimated_cost_saved_per_day: Option<f64>,
    /// HypoPG: whether any plan of the queries it was proposed for chose it. `None` without
    /// an estimate.
    pub estimated_used: Option<bool>,
}

/// The prospect of `candidate` from the baseline plans (`plans[q]` is query q's) and calls,
/// with HypoPG's estimate where there is one.
pub fn prospect(
    candidate: &Candidate,
    plans: &[&Plan],
    calls_per_day: &[f64],
    estimate: Option<&Estimate>,
) -> Prospect {
    let pages = candidate
        .serves
        .iter()
        .filter_map(|s| {
            let plan = plans.get(s.query)?;
            let node = plan.nodes.get(s.node)?;
            let pages = node.buffers.map(|b| b.pages_touched())?;
            Some(pages * calls_per_day.get(s.query).copied().unwrap_or(1.0))
        })
        .sum();
    Prospect {
        baseline_pages_per_day: pages,
        estimated_cost_saved_per_day: estimate.map(|e| e.cost_saved_per_day),
        estimated_used: estimate.map(|e| e.used),
    }
}

/// Which candidates are measured, and why the others are not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shortlist {
    /// To measure, most promising first.
    pub measure: Vec<usize>,
    /// HypoPG: the planner chose it for none of its queries (an estimate, named as such).
    pub unused_by_planner: Vec<usize>,
    /// Left out because the budget has room for fewer.
    pub over_budget: Vec<usize>,
}

/// The candidates to measure, most promising first, at most `cap`. With estimates, those the
/// planner did not choose at all are left out, and those it expects to save nothing go last
/// (still measured when there is room: the planner's cost is what advise does not trust).
pub fn shortlist(prospects: &[Prospect], cap: usize) -> Shortlist {
    let (mut order, unused_by_planner): (Vec<usize>, Vec<usize>) =
        (0..prospects.len()).partition(|&i| prospects[i].estimated_used != Some(false));
    order.sort_by(|&a, &b| {
        let (pa, pb) = (&prospects[a], &prospects[b]);
        let est = |p: &Prospect| p.estimated_cost_saved_per_day.unwrap_or(0.0);
        let helps = |p: &Prospect| p.estimated_cost_saved_per_day.is_none_or(|e| e > 0.0);
        helps(pb)
            .cmp(&helps(pa))
            .then(est(pb).total_cmp(&est(pa)))
            .then(
                pb.baseline_pages_per_day
                    .total_cmp(&pa.baseline_pages_per_day),
            )
            .then(a.cmp(&b))
    });
    let over_budget = order.split_off(cap.min(order.len()));
    Shortlist {
        measure: order,
        unused_by_planner,
        over_budget,
    }
}

/// How many candidates fit in what is left of the budget, when one pass over the workload
/// (baseline) took `pass_ms` and building one index is expected to take `build_ms`: each
/// candidate costs a build and a pass, and the greedy choice needs about one more pass per
/// index it chooses, so a fifth of the room is kept for it.
pub fn measurable_within(remaining_ms: f64, pass_ms: f64, build_ms: f64) -> usize {
    let per_candidate = (pass_ms + build_ms).max(1.0);
    ((remaining_ms * 0.8) / per_candidate).floor().max(0.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::testing::{facts, fixture};

    fn p(pages: f64, est: Option<f64>) -> Prospect {
        Prospect {
            baseline_pages_per_day: pages,
            estimated_cost_saved_per_day: est,
            estimated_used: est.map(|_| true),
        }
    }

    #[test]
    fn by_pages_read_today_without_estimates() {
        let s = shortlist(&[p(10.0, None), p(500.0, None), p(50.0, None)], 2);
        assert_eq!(s.measure, [1, 2]);
        assert_eq!(s.over_budget, [0]);
        assert!(s.unused_by_planner.is_empty());
    }

    #[test]
    fn the_planner_not_choosing_it_leaves_it_out_and_no_estimate_is_measured() {
        let unused = Prospect {
            estimated_used: Some(false),
            ..p(1e9, Some(0.0))
        };
        // A GIN candidate HypoPG cannot represent has no estimate: measured, after those
        // estimated to help, before those estimated to lose.
        let s = shortlist(
            &[
                unused,
                p(50.0, None),
                p(10.0, Some(30.0)),
                p(99.0, Some(-1.0)),
            ],
            9,
        );
        assert_eq!(s.unused_by_planner, [0]);
        assert_eq!(s.measure, [2, 1, 3]);
        assert!(s.over_budget.is_empty());
    }

    #[test]
    fn estimates_order_first_and_an_estimated_loss_goes_last() {
        let order = shortlist(
            &[
                p(1e6, Some(-5.0)),
                p(10.0, Some(300.0)),
                p(20.0, Some(100.0)),
            ],
            3,
        );
        assert_eq!(order.measure, [1, 2, 0]);
    }

    #[test]
    fn pages_of_the_scans_each_candidate_serves_times_calls() {
        let plans = [
            fixture("advise/composite_eq_sort", 17),
            fixture("advise/join_key", 17),
        ];
        let refs: Vec<&Plan> = plans.iter().collect();
        let proposals = crate::advise::propose(&refs, &facts());
        let served_both = proposals
            .candidates
            .iter()
            .find(|c| c.serves.len() == 2)
            .expect("one tickets index serves both queries");
        let got = prospect(served_both, &refs, &[100.0, 10.0], None);
        let scan_pages = |plan: &Plan, table: &str| {
            plan.nodes
                .iter()
                .find(|n| n.relation_name.as_deref() == Some(table))
                .and_then(|n| n.buffers)
                .unwrap()
                .pages_touched()
        };
        let expected =
            scan_pages(&plans[0], "tickets") * 100.0 + scan_pages(&plans[1], "tickets") * 10.0;
        assert_eq!(got.baseline_pages_per_day, expected);
        assert!(got.estimated_cost_saved_per_day.is_none());
        let estimate = Estimate {
            cost_saved_per_day: 12.5,
            used: false,
            size_bytes: None,
        };
        let got = prospect(served_both, &refs, &[100.0, 10.0], Some(&estimate));
        assert_eq!(got.estimated_cost_saved_per_day, Some(12.5));
        assert_eq!(got.estimated_used, Some(false));
    }

    #[test]
    fn the_budget_bounds_how_many_are_measured() {
        // 5 minutes left, a 2 s pass and a 1 s build: 80 candidates.
        assert_eq!(measurable_within(300_000.0, 2_000.0, 1_000.0), 80);
        assert_eq!(measurable_within(0.0, 2_000.0, 1_000.0), 0);
    }
}
