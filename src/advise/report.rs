//! The advise report as a value: the recommended set best first with what each index serves,
//! measured before and after, and what it costs; existing indexes to drop; candidates rejected
//! with the measured reason; candidates an existing index already is; and what was noticed.
//! `report::advise` renders it.

use super::choose::{Measurement, Rejection};
use super::drops::DropSuggestion;
use super::shortlist::Estimate;
use super::{Candidate, Covered, Note};

/// One query of the workload, as the report names it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadQuery {
    /// The queryid where known, else the file name.
    pub id: String,
    pub text: String,
    pub calls_per_day: f64,
    /// Planned generically (no parameter values found): its figures are estimates.
    pub estimated: bool,
}

/// A workload query an index serves, measured without and with it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedQuery {
    /// Position in [`AdviseReport::queries`].
    pub query: usize,
    pub pages_before: f64,
    pub pages_after: f64,
    pub ms_before: Option<f64>,
    pub ms_after: Option<f64>,
    /// The time difference is inside the spread of the warm runs: neither faster nor slower.
    pub time_within_noise: bool,
    /// It reads more pages with the index than without.
    pub regression: bool,
}

/// One index of the recommended set.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    pub candidate: Candidate,
    /// Measured with the indexes chosen before it in place.
    pub measurement: Measurement,
    pub build_ms: Option<f64>,
    pub queries: Vec<ServedQuery>,
    pub wal_bytes_added_per_day: Option<f64>,
    pub hot_updates_lost_per_day: Option<f64>,
    /// Whether any write figure is an estimate rather than a measurement.
    pub write_estimated: bool,
    /// Existing indexes it makes redundant ([`super::rules::replaces`]).
    pub replaces: Vec<Replaced>,
    /// HypoPG's estimate, with `--hypothetical` (it only ordered the measuring).
    pub estimate: Option<Estimate>,
}

/// An existing index a recommendation makes redundant, to drop once the recommendation is
/// built, with the evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Replaced {
    pub schema: String,
    pub index: String,
    /// `DROP INDEX CONCURRENTLY schema.index;`
    pub statement: String,
    pub size_bytes: Option<f64>,
    /// Its `idx_scan` since the statistics were reset.
    pub scans: Option<f64>,
    /// Why every scan it serves, the recommendation serves.
    pub evidence: String,
    /// Workload queries (positions) whose baseline plan scanned it.
    pub used_before: Vec<usize>,
    /// Of those, the ones still scanning it with the recommendation in place.
    pub used_after: Vec<usize>,
}

/// A candidate left out of the measuring because, with HypoPG, the planner chose it for none
/// of its queries.
#[derive(Debug, Clone, PartialEq)]
pub struct NotShortlisted {
    pub candidate: Candidate,
    pub estimate: Estimate,
}

/// A candidate measured and not chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedCandidate {
    pub candidate: Candidate,
    pub reason: Rejection,
    pub measurement: Measurement,
    /// Names of the chosen indexes that were in place when it was measured.
    pub with_chosen: Vec<String>,
    /// HypoPG's estimate, with `--hypothetical`.
    pub estimate: Option<Estimate>,
    /// The HOT updates a day it ends (an update of a column it covers must write a new
    /// entry): often what makes an index on an updated column not pay.
    pub hot_updates_lost_per_day: Option<f64>,
}

impl RejectedCandidate {
    /// The measured reason in words.
    pub fn explanation(&self) -> String {
        let m = &self.measurement;
        let after = match self.with_chosen.as_slice() {
            [] => String::new(),
            [one] => format!(" once {one} is in place"),
            several => format!(" once {} are in place", several.join(", ")),
        };
        match self.reason {
            Rejection::Unused => format!("unused: no workload query's plan used it{after}"),
            Rejection::DoesNotPay if m.read_pages_saved_per_day < 0.0 => format!(
                "does not pay: the workload reads {} more pages a day with it{after}",
                crate::advise::rules::count(-m.read_pages_saved_per_day)
            ),
            Rejection::DoesNotPay => format!("does not pay: it saves no pages read{after}"),
            Rejection::WritesExceedSavings => format!(
                "costs more writes than it saves: {} pages written a day against {} read pages saved{after}",
                crate::advise::rules::count(m.write_pages_added_per_day),
                crate::advise::rules::count(m.read_pages_saved_per_day)
            ),
            Rejection::OverMaxIndexes => "would pay, but --max-indexes was reached".to_owned(),
            Rejection::Superseded => {
                format!("superseded: chosen, then no workload query's plan used it{after}")
            }
            Rejection::OverMaxSize => {
                "would pay, but does not fit in what --max-size leaves".to_owned()
            }
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq)]
pub struct AdviseReport {
    pub server_version: String,
    pub database: String,
    /// `pg_stat_statements`, or the file or directory given.
    pub workload_source: String,
    pub queries: Vec<WorkloadQuery>,
    /// The shortlist was ordered by HypoPG's estimates (never the recommendation itself).
    pub shortlist_estimated: bool,
    pub recommended: Vec<Recommendation>,
    pub drops: Vec<DropSuggestion>,
    pub rejected: Vec<RejectedCandidate>,
    /// With HypoPG: candidates not measured because the planner did not choose them.
    pub not_shortlisted: Vec<NotShortlisted>,
    pub covered: Vec<Covered>,
    pub notes: Vec<Note>,
    /// What the server does not roll back (statistics counters, planner estimates), named.
    pub not_rolled_back: Vec<String>,
    /// pg_stat_statements' statements set aside, and the time of those read.
    pub screening: crate::compare::workload::statements::Screening,
    /// Queries that could not be measured, where and why.
    pub unmeasured: Vec<crate::compare::workload::unmeasured::Unmeasured>,
    /// What was proposed and what of it was measured.
    pub coverage: super::coverage::Coverage,
    pub elapsed_ms: f64,
    pub budget_ms: f64,
}

impl AdviseReport {
    /// Whether there is anything to do, for `--fail-if-advice`: an index to build, or one to
    /// drop whose counters counted long enough to trust (an info-level drop is not advice).
    pub fn has_advice(&self) -> bool {
        !self.recommended.is_empty()
            || self
                .drops
                .iter()
                .any(|d| d.severity >= crate::audit::Severity::Warning)
    }
}

/// Splits the candidates the way `choice` decided: the chosen ones in the order chosen, with the
/// measurement each was chosen on, and the rejected ones with the names of the indexes that
/// were in place when they were measured.
pub fn sort_out(
    candidates: &[Candidate],
    choice: &super::choose::Choice,
) -> (Vec<(Candidate, Measurement)>, Vec<RejectedCandidate>) {
    let chosen: Vec<(Candidate, Measurement)> = choice
        .chosen
        .iter()
        .map(|&(i, m)| (candidates[i].clone(), m))
        .collect();
    let rejected = choice
        .rejected
        .iter()
        .map(|r| RejectedCandidate {
            candidate: candidates[r.candidate].clone(),
            reason: r.reason,
            measurement: r.measurement,
            with_chosen: chosen
                .iter()
                .take(r.with_chosen)
                .map(|(c, _)| c.name.clone())
                .collect(),
            estimate: None,
            hot_updates_lost_per_day: None,
        })
        .collect();
    (chosen, rejected)
}
