//! The verdict on a candidate for a whole workload: the pages its queries stop reading per day
//! (per-call savings × calls per day, measured queries only) against the pages its writes add
//! per day; `unused` when no query's plan used it. Each query keeps its own verdict, and a
//! query the index makes worse is named as a regression even when the total pays. Candidates
//! rank by net pages saved per day.

use serde::Serialize;

use crate::compare::{Verdict, verdict};

use super::write_cost::WriteCost;

/// One query's figures without and with a candidate, over its samples (each sample weighs the
/// same).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueryFigures {
    pub id: String,
    pub calls_per_day: f64,
    /// False for a generic plan: figures are estimated costs then, never counted with pages.
    pub measured: bool,
    pub used: bool,
    pub pages_before: Option<f64>,
    pub pages_after: Option<f64>,
    pub ms_before: Option<f64>,
    pub ms_after: Option<f64>,
    /// The time difference is inside the warm runs' spread.
    pub time_within_noise: bool,
    pub cost_before: Option<f64>,
    pub cost_after: Option<f64>,
    /// Its plans read none of the candidate's tables: whatever its figures did is noise, never
    /// the candidate's effect.
    pub unaffected: bool,
    /// Measured with one warm run on a side: no spread, so a time difference is neither
    /// faster nor slower (`time_within_noise` is then true).
    pub one_run: bool,
}

/// One query's judgement under a candidate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryJudgement {
    pub id: String,
    pub verdict: Verdict,
    pub measured: bool,
    /// Pages (or, for an estimated query, estimated cost) got worse by at least the minimum
    /// gain, or the time did outside noise.
    pub regression: bool,
    pub pages_saved_per_day: Option<f64>,
    /// Reads none of the candidate's tables: not affected, neither a gain nor a loss.
    pub affected: bool,
}

/// A candidate's workload verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadVerdict {
    pub verdict: Verdict,
    pub read_pages_saved_per_day: f64,
    /// None when no write figure could be had (no counting window).
    pub write_pages_added_per_day: Option<f64>,
    pub wal_bytes_added_per_day: Option<f64>,
    pub hot_updates_lost_per_day: Option<f64>,
    pub net_pages_saved_per_day: f64,
    pub queries: Vec<QueryJudgement>,
}

fn sum(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values.fold(None, |acc, v| match (acc, v) {
        (a, None) => a,
        (None, Some(v)) => Some(v),
        (Some(a), Some(v)) => Some(a + v),
    })
}

/// Judges one candidate. It pays when some query uses it, its net pages saved per day are
/// positive, and the pages saved reach `min_gain_percent` of what the queries using it read
/// before.
pub fn judge_workload(
    queries: &[QueryFigures],
    writes: &[WriteCost],
    min_gain_percent: f64,
) -> WorkloadVerdict {
    let grows = |before: Option<f64>, after: Option<f64>| match (before, after) {
        (Some(b), Some(a)) => a > b * (1.0 + min_gain_percent / 100.0) && a > b,
        _ => false,
    };
    let judged: Vec<QueryJudgement> = queries
        .iter()
        .map(|q| {
            let (before, after) = if q.measured {
                (q.pages_before, q.pages_after)
            } else {
                (q.cost_before, q.cost_after)
            };
            // A plan that does not use the index is the baseline's plan: a time difference
            // there is the machine's, never the index's.
            let slower =
                q.measured && q.used && !q.time_within_noise && grows(q.ms_before, q.ms_after);
            QueryJudgement {
                id: q.id.clone(),
                verdict: verdict(q.used, before, after, min_gain_percent),
                measured: q.measured,
                regression: !q.unaffected && (grows(before, after) || slower),
                pages_saved_per_day: match (q.measured, q.pages_before, q.pages_after) {
                    (true, Some(b), Some(a)) if !q.unaffected => Some((b - a) * q.calls_per_day),
                    _ => None,
                },
                affected: !q.unaffected,
            }
        })
        .collect();
    // Folded from +0.0: an empty f64 sum is -0.0, which JSON would print as such.
    let read_saved: f64 = judged
        .iter()
        .filter_map(|j| j.pages_saved_per_day)
        .fold(0.0, |a, b| a + b);
    let write_pages = sum(writes.iter().map(|w| w.write_pages_added_per_day));
    let net = read_saved - write_pages.unwrap_or(0.0);
    let used = queries.iter().any(|q| q.used);
    let read_before_of_users: f64 = queries
        .iter()
        .filter(|q| q.used && q.measured)
        .filter_map(|q| q.pages_before.map(|p| p * q.calls_per_day))
        .sum();
    let verdict = if !used {
        Verdict::Unused
    } else if net > 0.0
        && read_before_of_users > 0.0
        && read_saved / read_before_of_users * 100.0 >= min_gain_percent - 1e-9
    {
        Verdict::Pays
    } else {
        Verdict::DoesNotPay
    };
    WorkloadVerdict {
        verdict,
        read_pages_saved_per_day: read_saved,
        write_pages_added_per_day: write_pages,
        wal_bytes_added_per_day: sum(writes.iter().map(|w| w.wal_bytes_added_per_day)),
        hot_updates_lost_per_day: sum(writes.iter().map(|w| w.hot_updates_lost_per_day)),
        net_pages_saved_per_day: net,
        queries: judged,
    }
}

/// Positions of `verdicts`, best first: by verdict (pays, does not pay, unused), then net pages
/// saved per day, most first; ties keep the given order.
pub fn rank_workload(verdicts: &[WorkloadVerdict]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..verdicts.len()).collect();
    order.sort_by(|&a, &b| {
        let (va, vb) = (&verdicts[a], &verdicts[b]);
        va.verdict
            .cmp(&vb.verdict)
            .then(
                vb.net_pages_saved_per_day
                    .total_cmp(&va.net_pages_saved_per_day),
            )
            .then(a.cmp(&b))
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::workload::write_cost::{EntryCost, WriteCost};

    fn q(id: &str, calls: f64, used: bool, before: f64, after: f64) -> QueryFigures {
        QueryFigures {
            id: id.into(),
            calls_per_day: calls,
            measured: true,
            used,
            pages_before: Some(before),
            pages_after: Some(after),
            ms_before: Some(1.0),
            ms_after: Some(1.0),
            time_within_noise: true,
            ..QueryFigures::default()
        }
    }

    #[test]
    fn nothing_saved_is_zero_never_negative_zero() {
        let mut noise = q("other", 1000.0, false, 5.0, 5.0);
        noise.unaffected = true;
        let v = judge_workload(&[noise], &[], 10.0);
        assert!(v.read_pages_saved_per_day.is_sign_positive());
        assert!(v.net_pages_saved_per_day.is_sign_positive());
        assert_eq!(
            serde_json::to_string(&v.net_pages_saved_per_day).unwrap(),
            "0.0"
        );
    }

    #[test]
    fn a_query_reading_none_of_the_tables_is_not_affected() {
        let mut noise = q("other", 1000.0, false, 5306.0, 5404.0);
        noise.unaffected = true;
        let v = judge_workload(&[q("a", 100.0, true, 100.0, 10.0), noise], &[], 10.0);
        assert_eq!(v.read_pages_saved_per_day, 9000.0);
        assert!(!v.queries[1].affected);
        assert!(!v.queries[1].regression);
        assert_eq!(v.queries[1].pages_saved_per_day, None);
    }

    fn writes(pages: f64) -> WriteCost {
        WriteCost {
            table: "public.t".into(),
            inserts_per_day: Some(0.0),
            updates_per_day: Some(0.0),
            hot_updates_per_day: Some(0.0),
            deletes_per_day: Some(0.0),
            entries_per_insert: 1.0,
            hot_updates_lost_per_day: Some(0.0),
            index_entries_per_day: Some(pages),
            write_pages_added_per_day: Some(pages),
            wal_bytes_added_per_day: Some(pages * 100.0),
            entry_cost: EntryCost {
                pages_written: 1.0,
                wal_bytes: 100.0,
                estimated: true,
            },
            notes: Vec::new(),
        }
    }

    #[test]
    fn a_hot_read_pays_and_a_worse_query_is_a_regression_all_the_same() {
        let queries = [
            q("hot", 10_000.0, true, 100.0, 4.0),
            q("worse", 10.0, true, 50.0, 80.0),
            q("other", 5.0, false, 30.0, 30.0),
        ];
        let v = judge_workload(&queries, &[writes(1_000.0)], 10.0);
        assert_eq!(v.verdict, Verdict::Pays);
        assert_eq!(v.read_pages_saved_per_day, 960_000.0 - 300.0);
        assert_eq!(v.net_pages_saved_per_day, 960_000.0 - 300.0 - 1_000.0);
        let regressions: Vec<&str> = v
            .queries
            .iter()
            .filter(|j| j.regression)
            .map(|j| j.id.as_str())
            .collect();
        assert_eq!(regressions, ["worse"]);
        assert_eq!(v.queries[2].verdict, Verdict::Unused);
    }

    #[test]
    fn a_rare_read_does_not_pay_for_its_writes() {
        let queries = [q("rare", 2.0, true, 1_000.0, 3.0)];
        let v = judge_workload(&queries, &[writes(50_000.0)], 10.0);
        assert_eq!(v.verdict, Verdict::DoesNotPay);
        assert!(v.net_pages_saved_per_day < 0.0);
        let unused = judge_workload(&[q("x", 1.0, false, 5.0, 5.0)], &[], 10.0);
        assert_eq!(unused.verdict, Verdict::Unused);
        // Slower outside noise, but on the baseline's own plan: no regression.
        let mut slow = q("x", 1.0, false, 5.0, 5.0);
        slow.time_within_noise = false;
        slow.ms_after = Some(2.0);
        assert!(!judge_workload(&[slow.clone()], &[], 10.0).queries[0].regression);
        slow.used = true;
        assert!(judge_workload(&[slow], &[], 10.0).queries[0].regression);
    }

    #[test]
    fn ranking_by_verdict_then_net_pages() {
        let v = |verdict, net| WorkloadVerdict {
            verdict,
            read_pages_saved_per_day: 0.0,
            write_pages_added_per_day: None,
            wal_bytes_added_per_day: None,
            hot_updates_lost_per_day: None,
            net_pages_saved_per_day: net,
            queries: Vec::new(),
        };
        let all = [
            v(Verdict::DoesNotPay, -5.0),
            v(Verdict::Pays, 10.0),
            v(Verdict::Pays, 500.0),
            v(Verdict::Unused, 0.0),
        ];
        assert_eq!(rank_workload(&all), [2, 1, 0, 3]);
    }

    #[test]
    fn estimated_queries_never_count_as_pages() {
        let mut g = q("generic", 1_000.0, true, 0.0, 0.0);
        g.measured = false;
        g.pages_before = None;
        g.pages_after = None;
        g.cost_before = Some(100.0);
        g.cost_after = Some(5.0);
        let v = judge_workload(&[g], &[], 10.0);
        assert_eq!(v.read_pages_saved_per_day, 0.0);
        assert_eq!(v.queries[0].verdict, Verdict::Pays);
        assert_eq!(v.queries[0].pages_saved_per_day, None);
    }
}
