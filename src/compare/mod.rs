//! The pure side of `pgplan compare`: the validated request, the figures of measured runs (cold
//! and the median of the warm ones), whether the planner used each candidate, and the verdict —
//! decided on pages touched, never on estimated cost.

pub mod drop_target;
pub mod estimates;
pub mod lock_timeout;
pub mod noise;
pub mod request;
pub mod workload;
pub mod writers;

use serde::Serialize;

use crate::plan::{Analysis, Comparison, NodeId, Pair};

pub use estimates::{EstimateChange, TableEstimate, estimate_changes};
pub use noise::{Spread, within_noise};
pub use request::{CandidateSpec, CompareRequest, Mode, RequestError, RequestInput};

/// The figures of one run, or the medians of several.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    pub execution_ms: Option<f64>,
    pub planning_ms: Option<f64>,
    pub shared_hit_blocks: Option<f64>,
    pub shared_read_blocks: Option<f64>,
    pub pages_touched: Option<f64>,
    pub temp_blocks: Option<f64>,
    /// The planner's estimated total cost of the plan (the root's `Total Cost`).
    pub total_cost: Option<f64>,
}

impl Figures {
    pub fn of(analysis: &Analysis) -> Self {
        let t = &analysis.metrics.totals;
        Figures {
            execution_ms: t.execution_ms,
            planning_ms: t.planning_ms,
            shared_hit_blocks: t.shared_hit_blocks,
            shared_read_blocks: t.shared_read_blocks,
            pages_touched: t.pages_touched,
            temp_blocks: t.temp_blocks,
            total_cost: analysis.plan.nodes.first().and_then(|n| n.total_cost),
        }
    }

    /// Each figure's median over `runs` (the mean of the middle two for an even count).
    pub fn median(runs: &[Figures]) -> Self {
        fn med(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
            let mut v: Vec<f64> = values.flatten().collect();
            if v.is_empty() {
                return None;
            }
            v.sort_by(f64::total_cmp);
            let mid = v.len() / 2;
            Some(if v.len() % 2 == 1 {
                v[mid]
            } else {
                (v[mid - 1] + v[mid]) / 2.0
            })
        }
        Figures {
            execution_ms: med(runs.iter().map(|r| r.execution_ms)),
            planning_ms: med(runs.iter().map(|r| r.planning_ms)),
            shared_hit_blocks: med(runs.iter().map(|r| r.shared_hit_blocks)),
            shared_read_blocks: med(runs.iter().map(|r| r.shared_read_blocks)),
            pages_touched: med(runs.iter().map(|r| r.pages_touched)),
            temp_blocks: med(runs.iter().map(|r| r.temp_blocks)),
            total_cost: med(runs.iter().map(|r| r.total_cost)),
        }
    }
}

/// The plans captured in one transaction: the first run and the counted (warm) runs. In
/// estimate-only modes there is one plan and no warm runs. The first run is kept in `cold`;
/// it is truly cold only with `--cold` (`evicted_buffers`), and otherwise ran on the cache as
/// it was.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub cold: Analysis,
    pub warm: Vec<Analysis>,
    /// The plans as the server sent them, in run order (first run first), for --save-plans.
    pub raw_plans: Vec<String>,
    /// With `--cold`: the buffers evicted from shared buffers before the first run.
    pub evicted_buffers: Option<f64>,
}

impl Measurement {
    pub fn cold_figures(&self) -> Figures {
        Figures::of(&self.cold)
    }

    /// Medians of the warm runs; the cold run's figures when there are none (estimate-only).
    pub fn warm_figures(&self) -> Figures {
        if self.warm.is_empty() {
            return self.cold_figures();
        }
        let runs: Vec<Figures> = self.warm.iter().map(Figures::of).collect();
        Figures::median(&runs)
    }

    /// The fastest and slowest warm run's execution time; `None` without warm runs.
    pub fn warm_spread(&self) -> Option<Spread> {
        Spread::of(self.warm.iter().filter_map(|a| a.plan.execution_ms))
    }

    /// The warm run whose execution time is the median (the plan shown and diffed), or the cold
    /// run when there are no warm runs.
    pub fn representative(&self) -> &Analysis {
        if self.warm.is_empty() {
            return &self.cold;
        }
        let mut order: Vec<usize> = (0..self.warm.len()).collect();
        order.sort_by(|&a, &b| {
            let t = |i: usize| self.warm[i].plan.execution_ms.unwrap_or(0.0);
            t(a).total_cmp(&t(b))
        });
        &self.warm[order[(order.len() - 1) / 2]]
    }
}

/// A node of a plan that reads the index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IndexUse {
    pub node: NodeId,
    /// "Index Scan", "Index Only Scan", "Bitmap Index Scan".
    pub node_type: String,
}

/// Every node of `analysis` that reads the index under one of `index_names` (the index and,
/// on a partitioned table, its partitions' indexes).
pub fn index_uses(analysis: &Analysis, index_names: &[String]) -> Vec<IndexUse> {
    analysis
        .plan
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            n.index_name
                .as_deref()
                .is_some_and(|name| index_names.iter().any(|i| i == name))
        })
        .map(|(id, n)| IndexUse {
            node: id,
            node_type: n.display_type(),
        })
        .collect()
}

/// Whether an index pays for itself on this query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Used, and the median pages touched fall by at least `--min-gain`.
    Pays,
    /// Used, without that gain.
    DoesNotPay,
    /// The planner did not use it.
    Unused,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pays => "pays",
            Verdict::DoesNotPay => "does_not_pay",
            Verdict::Unused => "unused",
        }
    }
}

/// The figure a verdict is decided on: pages touched when measured, estimated cost otherwise.
pub fn deciding_figure(mode: Mode, figures: &Figures) -> Option<f64> {
    match mode {
        Mode::Measured => figures.pages_touched,
        Mode::Hypothetical | Mode::GenericPlan => figures.total_cost,
    }
}

/// The relative saving of `with` against `without` the index (0.3 = 30% fewer pages).
pub fn gain(without: Option<f64>, with: Option<f64>) -> Option<f64> {
    match (without, with) {
        (Some(w), Some(i)) if w > 0.0 => Some(1.0 - i / w),
        _ => None,
    }
}

/// The verdict on an index: `without` and `with` are the deciding figures of the query run
/// without and with it.
pub fn verdict(
    used: bool,
    without: Option<f64>,
    with: Option<f64>,
    min_gain_percent: f64,
) -> Verdict {
    if !used {
        return Verdict::Unused;
    }
    match gain(without, with) {
        // A small tolerance: 1 − 90/100 is 0.0999… in binary, and 10% must count as 10%.
        Some(g) if g * 100.0 >= min_gain_percent - 1e-9 => Verdict::Pays,
        _ => Verdict::DoesNotPay,
    }
}

/// What was measured for one candidate.
#[derive(Debug, Clone)]
pub struct CandidateRun {
    pub measurement: Measurement,
    /// Wall time of CREATE INDEX (or DROP INDEX), ms; `None` for hypothetical indexes.
    pub build_ms: Option<f64>,
    /// `pg_relation_size` of the built index (or HypoPG's estimate, or the dropped index's size).
    pub size_bytes: Option<f64>,
    /// Every name a plan may show for it, its own first (HypoPG names hypothetical ones
    /// itself): on a partitioned table the plan scans each partition's index, never the
    /// partitioned index itself.
    pub plan_index_names: Vec<String>,
    /// The name the report shows: as the user wrote it, or as PostgreSQL named an unnamed
    /// candidate, made unique across candidates (see [`display_name`]).
    pub name: String,
}

impl CandidateRun {
    /// The index's own name, as plans and the catalog know it.
    pub fn plan_index_name(&self) -> &str {
        self.plan_index_names.first().map_or("", String::as_str)
    }
}

/// The name to show for a candidate whose index ended up named `plan_name`: unnamed candidates
/// are built unnamed in separate transactions, so PostgreSQL can give two of them the same name.
/// Had both been built, it would have named the second as it does any clash, with the lowest
/// free number appended (`events_created_at_idx1`); the report does the same. With no
/// `plan_name` PostgreSQL would use (a hypothetical index, which HypoPG names
/// `<13556>btree_events_status`), an unnamed candidate is named by its definition.
pub fn display_name(spec: &CandidateSpec, plan_name: &str, taken: &[&str]) -> String {
    let base = match spec {
        CandidateSpec::Create(c) if c.name_generated && !plan_name.is_empty() => plan_name,
        spec => return spec.describe().to_owned(),
    };
    if !taken.contains(&base) {
        return base.to_owned();
    }
    // ChooseRelationName puts the number on the label and cuts the name to fit 63 bytes. Only
    // the name PostgreSQL chose is known here, not its table and column parts, so a name that
    // must be cut for its number loses bytes at the end of its columns' part. That is
    // PostgreSQL's cut too when the columns' part is the longer (makeObjectName cuts the
    // longer part first); with a longer table name PostgreSQL would cut the table's part.
    let (stem, label) = match base.strip_suffix("_idx") {
        Some(stem) => (stem, "idx"),
        None => (base, ""),
    };
    (1u32..)
        .map(|n| {
            let numbered = format!("{label}{n}");
            if label.is_empty() {
                let room = crate::pgnames::MAX_NAME_BYTES - n.to_string().len();
                format!("{}{numbered}", crate::pgnames::clip(stem, room))
            } else {
                crate::pgnames::make_object_name(stem, None, &numbered)
            }
        })
        .find(|name| !taken.contains(&name.as_str()))
        .unwrap_or_else(|| base.to_owned())
}

/// One candidate's outcome: measured, or the error that stopped it.
#[derive(Debug, Clone)]
pub struct CandidateOutcome {
    pub spec: CandidateSpec,
    pub result: Result<CandidateRun, String>,
}

/// A measured candidate, judged against the baseline.
#[derive(Debug, Clone)]
pub struct Judged {
    pub index: usize,
    pub verdict: Verdict,
    /// Nodes of the plan (with the index: the candidate's plan; for a dropped index, the
    /// baseline's) that read the index.
    pub uses: Vec<IndexUse>,
    /// Baseline against the candidate's plans.
    pub comparison: Comparison,
    pub cold: (Figures, Figures),
    pub warm: (Figures, Figures),
    /// The warm runs' spread of execution time, before and after.
    pub spreads: [Option<Spread>; 2],
    /// Whether the cold and the warm execution times differ by no more than the warm runs'
    /// spread: then neither is faster or slower.
    pub time_within_noise: TimeNoise,
    /// Which baseline the candidate was judged against: `None` for the first one, `Some(n)` for
    /// the n-th re-measurement (`CompareReport::baseline_reruns`), taken after a build changed
    /// the planner's estimates.
    pub baseline: Option<usize>,
}

/// Whether each time difference of a candidate is within noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeNoise {
    pub cold: bool,
    pub warm: bool,
    /// A side has one warm run (`--runs 1`): no spread to judge a time difference by, so no
    /// time is called faster or slower.
    pub one_run: bool,
}

/// Whether two figures' execution times are within the noise of the warm runs.
fn time_noise(pair: &(Figures, Figures), spreads: [Option<Spread>; 2]) -> bool {
    match (pair.0.execution_ms, pair.1.execution_ms) {
        (Some(b), Some(a)) => within_noise(b, a, spreads),
        _ => false,
    }
}

/// Judges a candidate against the baseline. For a new index, "before" is the baseline and
/// "after" the run with the index; for a dropped one, "before" is the baseline (with the index)
/// and "after" the run without it, and the verdict asks whether the existing index pays.
pub fn judge(
    index: usize,
    spec: &CandidateSpec,
    run: &CandidateRun,
    baseline: &Measurement,
    mode: Mode,
    min_gain_percent: f64,
) -> Judged {
    let comparison = Comparison::of(
        baseline.representative().clone(),
        run.measurement.representative().clone(),
    );
    let cold = (baseline.cold_figures(), run.measurement.cold_figures());
    let warm = (baseline.warm_figures(), run.measurement.warm_figures());
    let spreads = [baseline.warm_spread(), run.measurement.warm_spread()];
    let time_within_noise = TimeNoise {
        cold: time_noise(&cold, spreads),
        warm: time_noise(&warm, spreads),
        one_run: mode == Mode::Measured
            && (baseline.warm.len() < 2 || run.measurement.warm.len() < 2),
    };
    let (uses, without, with) = match spec {
        CandidateSpec::Create(_) => (
            index_uses(run.measurement.representative(), &run.plan_index_names),
            deciding_figure(mode, &warm.0),
            deciding_figure(mode, &warm.1),
        ),
        CandidateSpec::Drop { .. } => (
            index_uses(baseline.representative(), &run.plan_index_names),
            deciding_figure(mode, &warm.1),
            deciding_figure(mode, &warm.0),
        ),
    };
    Judged {
        index,
        verdict: verdict(!uses.is_empty(), without, with, min_gain_percent),
        uses,
        comparison,
        cold,
        warm,
        spreads,
        time_within_noise,
        baseline: None,
    }
}

/// Orders judged candidates best first: indexes to create before indexes to drop (they answer
/// different questions, and their deciding figures point in opposite directions), then verdict
/// (pays, does not pay, unused), then the deciding figure with the index. Among candidates equal
/// so far, time decides only outside noise: the fastest goes first unless a smaller index is
/// within the noise of it, and then the smallest of those does (see [`by_time_then_size`]).
pub fn rank(judged: &mut Vec<Judged>, outcomes: &[CandidateOutcome], mode: Mode) {
    let size = |j: &Judged| {
        outcomes[j.index]
            .result
            .as_ref()
            .ok()
            .and_then(|r| r.size_bytes)
            .unwrap_or(f64::MAX)
    };
    let figure = |j: &Judged| match outcomes[j.index].spec {
        CandidateSpec::Create(_) => deciding_figure(mode, &j.warm.1).unwrap_or(f64::MAX),
        // For a dropped index, the more the query loses without it, the more it pays.
        CandidateSpec::Drop { .. } => -deciding_figure(mode, &j.warm.1).unwrap_or(0.0),
    };
    let is_drop = |j: &Judged| matches!(outcomes[j.index].spec, CandidateSpec::Drop { .. });
    judged.sort_by(|a, b| {
        is_drop(a)
            .cmp(&is_drop(b))
            .then(a.verdict.cmp(&b.verdict))
            .then(figure(a).total_cmp(&figure(b)))
            .then(a.index.cmp(&b.index))
    });
    // Time and size order each run of candidates equal on the keys above.
    let mut ordered = Vec::with_capacity(judged.len());
    let mut rest = std::mem::take(judged).into_iter().peekable();
    while let Some(first) = rest.next() {
        let key = (is_drop(&first), first.verdict, figure(&first));
        let mut group = vec![first];
        while let Some(next) = rest.next_if(|j| (is_drop(j), j.verdict, figure(j)) == key) {
            group.push(next);
        }
        let timed: Vec<(Option<f64>, Option<Spread>, f64)> = group
            .iter()
            .map(|j| (j.warm.1.execution_ms, j.spreads[1], size(j)))
            .collect();
        let order = by_time_then_size(&timed);
        let mut slots: Vec<Option<Judged>> = group.into_iter().map(Some).collect();
        ordered.extend(order.into_iter().filter_map(|i| slots[i].take()));
    }
    *judged = ordered;
}

/// The order of candidates that tie on everything but time and size, as positions into
/// `timed` (each: median warm time, warm spread, size in bytes). Repeatedly, the fastest left
/// is found; of those whose time is within noise of it (itself included), the smallest index
/// goes next. A time difference inside the spread never decides, so two indexes that run
/// equally fast come out smaller first, whatever order the noise put their medians in.
/// Candidates without a time (estimate-only) go by size.
pub fn by_time_then_size(timed: &[(Option<f64>, Option<Spread>, f64)]) -> Vec<usize> {
    let mut left: Vec<usize> = (0..timed.len()).collect();
    let mut order = Vec::with_capacity(timed.len());
    while !left.is_empty() {
        let fastest = *left
            .iter()
            .min_by(|&&a, &&b| {
                let t = |i: usize| timed[i].0.unwrap_or(f64::MAX);
                t(a).total_cmp(&t(b)).then(a.cmp(&b))
            })
            .expect("not empty");
        let tied = |i: usize| match (timed[i].0, timed[fastest].0) {
            (Some(a), Some(f)) => within_noise(a, f, [timed[i].1, timed[fastest].1]),
            (None, None) => true,
            _ => false,
        };
        let next = *left
            .iter()
            .filter(|&&i| tied(i))
            .min_by(|&&a, &&b| timed[a].2.total_cmp(&timed[b].2).then(a.cmp(&b)))
            .expect("the fastest is tied with itself");
        left.retain(|&i| i != next);
        order.push(next);
    }
    order
}

/// Everything `compare` reports.
#[derive(Debug, Clone)]
pub struct CompareReport {
    pub request: CompareRequest,
    pub server_version: String,
    pub baseline: Measurement,
    /// The baseline measured again each time a candidate changed the planner's estimates in
    /// place, right after it and before the next candidate.
    pub baseline_reruns: Vec<BaselineRerun>,
    pub outcomes: Vec<CandidateOutcome>,
    /// Measured candidates, best first.
    pub ranking: Vec<Judged>,
    pub estimate_changes: Vec<EstimateChange>,
    pub warnings: Vec<String>,
}

/// The baseline measured again after candidate `after` changed the planner's estimates.
#[derive(Debug, Clone)]
pub struct BaselineRerun {
    pub after: usize,
    pub measurement: Measurement,
}

impl CompareReport {
    /// The baseline a candidate was judged against.
    pub fn baseline_of(&self, judged: &Judged) -> &Measurement {
        match judged.baseline {
            Some(n) => &self.baseline_reruns[n].measurement,
            None => &self.baseline,
        }
    }

    /// Which baseline a candidate was judged against, in words.
    pub fn baseline_label(&self, judged: &Judged) -> String {
        match judged.baseline {
            Some(n) => format!(
                "the baseline measured again after {} changed the planner's estimates",
                self.name(self.baseline_reruns[n].after)
            ),
            None => "the baseline".into(),
        }
    }

    /// The best index to create that pays, if any. A dropped index that "pays" is an existing
    /// index earning its keep, not a candidate to build.
    pub fn best(&self) -> Option<&Judged> {
        self.ranking.iter().find(|j| {
            j.verdict == Verdict::Pays
                && matches!(self.outcomes[j.index].spec, CandidateSpec::Create(_))
        })
    }

    /// The name of a candidate: as the user wrote it, or as PostgreSQL named an unnamed one.
    pub fn name(&self, index: usize) -> &str {
        let outcome = &self.outcomes[index];
        match (&outcome.result, &outcome.spec) {
            (Ok(run), _) => &run.name,
            (Err(_), spec) => spec.describe(),
        }
    }

    pub fn failed(&self) -> impl Iterator<Item = (usize, &str)> {
        self.outcomes
            .iter()
            .enumerate()
            .filter_map(|(i, o)| o.result.as_ref().err().map(|e| (i, e.as_str())))
    }
}

/// Figures before and after as pairs, for renderers.
pub fn pairs(figures: &(Figures, Figures)) -> [(&'static str, Pair); 5] {
    let (b, a) = figures;
    [
        ("execution_ms", Pair::new(b.execution_ms, a.execution_ms)),
        ("pages_touched", Pair::new(b.pages_touched, a.pages_touched)),
        (
            "shared_hit_blocks",
            Pair::new(b.shared_hit_blocks, a.shared_hit_blocks),
        ),
        (
            "shared_read_blocks",
            Pair::new(b.shared_read_blocks, a.shared_read_blocks),
        ),
        ("temp_blocks", Pair::new(b.temp_blocks, a.temp_blocks)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        let f = |ms: f64, pages: f64| Figures {
            execution_ms: Some(ms),
            pages_touched: Some(pages),
            ..Figures::default()
        };
        let m = Figures::median(&[f(3.0, 10.0), f(1.0, 10.0), f(2.0, 12.0)]);
        assert_eq!(m.execution_ms, Some(2.0));
        assert_eq!(m.pages_touched, Some(10.0));
        let m = Figures::median(&[f(1.0, 10.0), f(3.0, 20.0)]);
        assert_eq!(m.execution_ms, Some(2.0));
        assert_eq!(m.pages_touched, Some(15.0));
        assert_eq!(Figures::median(&[]).execution_ms, None);
    }

    #[test]
    fn verdicts_decide_on_the_gain() {
        assert_eq!(
            verdict(false, Some(100.0), Some(1.0), 10.0),
            Verdict::Unused
        );
        assert_eq!(verdict(true, Some(100.0), Some(90.0), 10.0), Verdict::Pays);
        assert_eq!(
            verdict(true, Some(100.0), Some(91.0), 10.0),
            Verdict::DoesNotPay
        );
        assert_eq!(
            verdict(true, Some(100.0), Some(150.0), 10.0),
            Verdict::DoesNotPay
        );
        assert_eq!(verdict(true, None, Some(1.0), 10.0), Verdict::DoesNotPay);
    }

    /// A dropped index that pays (the query loses much without it) must not hide the new index
    /// that pays: drops rank after creates, and `best` names the create.
    #[test]
    fn a_paying_drop_does_not_hide_the_best_new_index() {
        let plan = include_str!("../../fixtures/story/before.pg16.json");
        let analysis = Analysis::of(crate::plan::parse_plan(plan).unwrap());
        let figures = |pages: f64| Figures {
            pages_touched: Some(pages),
            execution_ms: Some(1.0),
            ..Figures::default()
        };
        let judged = |index: usize, with: f64| Judged {
            index,
            verdict: Verdict::Pays,
            uses: Vec::new(),
            comparison: Comparison::of(analysis.clone(), analysis.clone()),
            cold: (figures(100.0), figures(with)),
            warm: (figures(100.0), figures(with)),
            spreads: [None, None],
            time_within_noise: TimeNoise::default(),
            baseline: None,
        };
        let outcome = |spec: CandidateSpec| CandidateOutcome {
            spec,
            result: Err("not needed here".into()),
        };
        let create = crate::sql::parse_index_candidate(
            "CREATE INDEX ON events (tenant_id, status)",
            "pgplan_candidate_1",
        )
        .unwrap();
        let outcomes = vec![
            outcome(CandidateSpec::Drop {
                name: "events_tenant_id_idx".into(),
            }),
            outcome(CandidateSpec::Create(create)),
        ];
        // Without the dropped index the query touches 5,000 pages; with the new one, 2.
        let mut ranking = vec![judged(0, 5_000.0), judged(1, 2.0)];
        rank(&mut ranking, &outcomes, Mode::Measured);
        assert_eq!(ranking.iter().map(|j| j.index).collect::<Vec<_>>(), [1, 0]);
        let report = CompareReport {
            request: CompareRequest::validate(request::RequestInput {
                query_text: "SELECT 1".into(),
                query_source: "test".into(),
                index_sqls: vec!["CREATE INDEX ON events (tenant_id, status)".into()],
                drop_indexes: vec!["events_tenant_id_idx".into()],
                runs: 1,
                min_gain_percent: 10.0,
                ..request::RequestInput::default()
            })
            .unwrap(),
            server_version: "16".into(),
            baseline: Measurement {
                cold: analysis.clone(),
                warm: Vec::new(),
                raw_plans: Vec::new(),
                evicted_buffers: None,
            },
            baseline_reruns: Vec::new(),
            outcomes,
            ranking,
            estimate_changes: Vec::new(),
            warnings: Vec::new(),
        };
        assert_eq!(report.best().map(|j| j.index), Some(1));
    }

    /// Two indexes whose plans touch the same pages, 0.101 against 0.108 ms with runs that
    /// spread wider than that: the time does not decide, the smaller index goes first. Outside
    /// the noise, the faster one does.
    #[test]
    fn time_inside_the_noise_never_breaks_a_tie() {
        let spread = |a: f64, b: f64| Spread::of([a, b]);
        let big_fast = (Some(0.101), spread(0.095, 0.112), 9_000_000.0);
        let small_slow = (Some(0.108), spread(0.100, 0.115), 2_000_000.0);
        assert_eq!(by_time_then_size(&[big_fast, small_slow]), [1, 0]);
        let small_far_slower = (Some(0.5), spread(0.49, 0.51), 2_000_000.0);
        assert_eq!(by_time_then_size(&[small_far_slower, big_fast]), [1, 0]);
        // Estimates only (no times): by size.
        assert_eq!(
            by_time_then_size(&[(None, None, 5.0), (None, None, 1.0)]),
            [1, 0]
        );
    }

    #[test]
    fn unnamed_candidates_get_unique_names_as_postgres_would() {
        let spec = |sql: &str| {
            CandidateSpec::Create(
                crate::sql::parse_index_candidate(sql, "pgplan_candidate_1").unwrap(),
            )
        };
        let plain = spec("CREATE INDEX ON events (created_at)");
        assert_eq!(
            display_name(&plain, "events_created_at_idx", &[]),
            "events_created_at_idx"
        );
        assert_eq!(
            display_name(
                &plain,
                "events_created_at_idx",
                &["events_created_at_idx", "events_created_at_idx1"]
            ),
            "events_created_at_idx2"
        );
        // A 63-byte name PostgreSQL cut keeps its number within 63 bytes, as the server does.
        let long_column = "c".repeat(70);
        let long = spec(&format!("CREATE INDEX ON events ({long_column})"));
        let chosen = crate::pgnames::make_object_name("events", Some(&long_column), "idx");
        assert_eq!(chosen.len(), 63);
        let second = display_name(&long, &chosen, &[chosen.as_str()]);
        assert_eq!(second.len(), 63, "{second}");
        assert!(
            second.ends_with("_idx1") && second.starts_with("events_ccc"),
            "{second}"
        );
        let named = spec("CREATE INDEX mine ON events (created_at)");
        assert_eq!(display_name(&named, "mine", &["other"]), "mine");
        // A hypothetical index has no name PostgreSQL would give it: its definition stands in.
        assert_eq!(
            display_name(&plain, "", &[]),
            "unnamed index ON events (created_at)"
        );
    }
}
