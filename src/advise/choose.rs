//! The set to build, chosen greedily from measurements: repeatedly take the candidate that
//! saves the most pages per day, net of the pages its writes add, per byte of index; then
//! measure the rest again with it in place (an index that served a query may have made another
//! candidate for that query useless) until nothing pays or a limit is reached.
//!
//! Pure over measured values: the caller measures, this decides.

/// One candidate's measured figures with the indexes chosen so far in place.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    pub size_bytes: f64,
    pub read_pages_saved_per_day: f64,
    pub write_pages_added_per_day: f64,
    /// Whether the planner used the index in any workload query.
    pub used: bool,
}

impl Measurement {
    pub fn net_pages_per_day(&self) -> f64 {
        self.read_pages_saved_per_day - self.write_pages_added_per_day
    }

    /// Net pages saved per day per byte of index: what the greedy choice maximizes.
    pub fn score(&self) -> f64 {
        self.net_pages_per_day() / self.size_bytes.max(1.0)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    pub max_indexes: Option<usize>,
    pub max_size_bytes: Option<f64>,
}

/// Why a candidate was not chosen, as measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rejection {
    /// No workload query's plan used it.
    Unused,
    /// Used, but it saves no pages (or makes the queries read more).
    DoesNotPay,
    /// It saves pages, and its writes cost at least as many.
    WritesExceedSavings,
    /// It would pay, but --max-indexes was reached.
    OverMaxIndexes,
    /// It would pay, but it does not fit in what --max-size leaves.
    OverMaxSize,
    /// Chosen, then made redundant by indexes chosen later: one whose keys start with its keys
    /// (see [`crate::advise::Candidate::extends`]), or no plan used it with all of them in place.
    Superseded,
}

impl Rejection {
    pub fn name(self) -> &'static str {
        match self {
            Rejection::Unused => "unused",
            Rejection::DoesNotPay => "does_not_pay",
            Rejection::WritesExceedSavings => "writes_exceed_savings",
            Rejection::OverMaxIndexes => "over_max_indexes",
            Rejection::OverMaxSize => "over_max_size",
            Rejection::Superseded => "superseded",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub candidate: usize,
    pub reason: Rejection,
    /// The measurement that decided it.
    pub measurement: Measurement,
    /// How many chosen indexes were in place when it was measured.
    pub with_chosen: usize,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Choice {
    /// Candidates in the order chosen, each with the measurement it was chosen on.
    pub chosen: Vec<(usize, Measurement)>,
    pub rejected: Vec<Rejected>,
}

/// The greedy choice as a state machine, for a caller that measures asynchronously: call
/// [`Chooser::choose_next`] until it returns `None`; after each index it returns, measure the
/// candidates still open with every chosen index in place and hand what was measured to
/// [`Chooser::remeasured`]. [`choose`] drives it with a closure.
#[derive(Debug, Clone)]
pub struct Chooser {
    current: Vec<Measurement>,
    open: Vec<usize>,
    limits: Limits,
    total_size: f64,
    choice: Choice,
}

impl Chooser {
    /// Starts from `first`: candidate i's measurement against the baseline.
    pub fn new(first: Vec<Measurement>, limits: &Limits) -> Self {
        Chooser {
            open: (0..first.len()).collect(),
            current: first,
            limits: *limits,
            total_size: 0.0,
            choice: Choice::default(),
        }
    }

    /// Rejects what no longer pays or fits, then chooses the best of the rest, if any.
    pub fn choose_next(&mut self) -> Option<usize> {
        let with_chosen = self.choice.chosen.len();
        let mut still = Vec::new();
        for &i in &self.open {
            let m = self.current[i];
            let reason = if !m.used {
                Some(Rejection::Unused)
            } else if m.read_pages_saved_per_day <= 0.0 {
                Some(Rejection::DoesNotPay)
            } else if m.net_pages_per_day() <= 0.0 {
                Some(Rejection::WritesExceedSavings)
            } else if self.limits.max_indexes.is_some_and(|k| with_chosen >= k) {
                Some(Rejection::OverMaxIndexes)
            } else if self
                .limits
                .max_size_bytes
                .is_some_and(|max| self.total_size + m.size_bytes > max)
            {
                Some(Rejection::OverMaxSize)
            } else {
                None
            };
            match reason {
                Some(reason) => self.choice.rejected.push(Rejected {
                    candidate: i,
                    reason,
                    measurement: m,
                    with_chosen,
                }),
                None => still.push(i),
            }
        }
        self.open = still;
        let current = &self.current;
        let &best = self.open.iter().max_by(|&&a, &&b| {
            let (ma, mb) = (current[a], current[b]);
            ma.score()
                .total_cmp(&mb.score())
                .then(ma.net_pages_per_day().total_cmp(&mb.net_pages_per_day()))
                // The earlier candidate wins a tie: max_by keeps the last maximum.
                .then(b.cmp(&a))
        })?;
        self.total_size += current[best].size_bytes;
        self.choice.chosen.push((best, current[best]));
        self.open.retain(|&i| i != best);
        Some(best)
    }

    /// The candidates chosen so far, in order.
    pub fn chosen(&self) -> Vec<usize> {
        self.choice.chosen.iter().map(|(i, _)| *i).collect()
    }

    /// The candidates still to decide.
    pub fn open(&self) -> &[usize] {
        &self.open
    }

    /// New measurements of open candidates, taken with every chosen index in place; the others
    /// keep theirs.
    pub fn remeasured(&mut self, measured: impl IntoIterator<Item = (usize, Measurement)>) {
        for (i, m) in measured {
            if self.open.contains(&i) {
                self.current[i] = m;
            }
        }
    }

    pub fn finish(self) -> Choice {
        self.choice
    }
}

/// Chooses from `first` (candidate i's measurement against the baseline). After each choice,
/// `remeasure(chosen, open)` returns new measurements for those of `open` it measured again
/// with every chosen index in place; the others keep theirs.
pub fn choose(
    first: Vec<Measurement>,
    limits: &Limits,
    mut remeasure: impl FnMut(&[usize], &[usize]) -> Vec<(usize, Measurement)>,
) -> Choice {
    let mut chooser = Chooser::new(first, limits);
    while chooser.choose_next().is_some() {
        if chooser.open().is_empty() {
            break;
        }
        let measured = remeasure(&chooser.chosen(), chooser.open());
        chooser.remeasured(measured);
    }
    chooser.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(size: f64, saved: f64, written: f64) -> Measurement {
        Measurement {
            size_bytes: size,
            read_pages_saved_per_day: saved,
            write_pages_added_per_day: written,
            used: true,
        }
    }

    fn unused() -> Measurement {
        Measurement {
            used: false,
            ..m(8192.0, 0.0, 0.0)
        }
    }

    fn no_remeasure(_: &[usize], _: &[usize]) -> Vec<(usize, Measurement)> {
        Vec::new()
    }

    #[test]
    fn best_net_savings_per_byte_first() {
        // 1 saves fewer pages than 0 but per byte far more.
        let c = choose(
            vec![m(1e6, 1000.0, 0.0), m(1e4, 500.0, 0.0)],
            &Limits::default(),
            no_remeasure,
        );
        let order: Vec<usize> = c.chosen.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, [1, 0]);
        assert!(c.rejected.is_empty());
    }

    #[test]
    fn each_reason_to_reject() {
        let c = choose(
            vec![
                unused(),
                m(1e4, 0.0, 5.0),
                m(1e4, 100.0, 150.0),
                m(1e4, 100.0, 10.0),
            ],
            &Limits::default(),
            no_remeasure,
        );
        assert_eq!(c.chosen.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [3]);
        let reasons: Vec<(usize, Rejection)> =
            c.rejected.iter().map(|r| (r.candidate, r.reason)).collect();
        assert_eq!(
            reasons,
            [
                (0, Rejection::Unused),
                (1, Rejection::DoesNotPay),
                (2, Rejection::WritesExceedSavings)
            ]
        );
    }

    #[test]
    fn remeasured_with_the_chosen_in_place() {
        // 0 and 1 serve the same query: once 0 is built, 1 saves nothing more.
        let mut calls = Vec::new();
        let c = choose(
            vec![m(1e4, 1000.0, 0.0), m(2e4, 900.0, 0.0), m(1e5, 50.0, 0.0)],
            &Limits::default(),
            |chosen, open| {
                calls.push((chosen.to_vec(), open.to_vec()));
                if chosen == [0] {
                    vec![(1, m(2e4, 0.0, 0.0))]
                } else {
                    Vec::new()
                }
            },
        );
        assert_eq!(c.chosen.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 2]);
        assert_eq!(calls[0], (vec![0], vec![1, 2]));
        assert_eq!(c.rejected[0].candidate, 1);
        assert_eq!(c.rejected[0].reason, Rejection::DoesNotPay);
        assert_eq!(c.rejected[0].with_chosen, 1);
    }

    #[test]
    fn a_partial_index_reading_the_same_for_less_size_and_writes_wins() {
        // The demo's dashboard: the full (status, created_at DESC) and the partial
        // (created_at DESC) WHERE status = 'pending' read the same pages; the partial one is
        // half the size and a write outside its slice never reaches it.
        let full = m(15.2e6, 460e6, 500_000.0);
        let partial = m(7.5e6, 460e6, 100_000.0);
        assert!(partial.score() > full.score());
        let c = choose(vec![full, partial], &Limits::default(), |chosen, open| {
            assert_eq!((chosen, open), (&[1][..], &[0][..]));
            // With the partial one in place the planner walks it, not the full one.
            vec![(0, unused())]
        });
        assert_eq!(c.chosen, [(1, partial)]);
        assert_eq!(c.rejected.len(), 1);
        assert_eq!(c.rejected[0].candidate, 0);
        assert_eq!(c.rejected[0].reason, Rejection::Unused);
        assert_eq!(c.rejected[0].with_chosen, 1);
        // Same reads, same writes: the smaller one still wins, per byte.
        let c = choose(
            vec![full, m(7.5e6, 460e6, 500_000.0)],
            &Limits::default(),
            |_, _| vec![(0, unused())],
        );
        assert_eq!(c.chosen[0].0, 1);
    }

    #[test]
    fn limits_on_count_and_size() {
        let all = vec![m(1e4, 1000.0, 0.0), m(1e4, 900.0, 0.0), m(1e6, 5e5, 0.0)];
        let c = choose(
            all.clone(),
            &Limits {
                max_indexes: Some(1),
                max_size_bytes: None,
            },
            no_remeasure,
        );
        assert_eq!(c.chosen.len(), 1);
        assert!(
            c.rejected
                .iter()
                .all(|r| r.reason == Rejection::OverMaxIndexes)
        );
        let c = choose(
            all,
            &Limits {
                max_indexes: None,
                max_size_bytes: Some(5e5),
            },
            no_remeasure,
        );
        assert_eq!(c.chosen.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(c.rejected[0].candidate, 2);
        assert_eq!(c.rejected[0].reason, Rejection::OverMaxSize);
    }

    #[test]
    fn the_stepper_an_async_caller_drives() {
        let mut chooser = Chooser::new(
            vec![m(1e4, 1000.0, 0.0), m(1e4, 900.0, 0.0)],
            &Limits::default(),
        );
        assert_eq!(chooser.choose_next(), Some(0));
        assert_eq!(chooser.open(), [1]);
        // Measured again with 0 in place: 1 now makes the workload read more.
        chooser.remeasured([(1, m(1e4, -20.0, 0.0)), (0, m(1.0, 1e9, 0.0))]);
        assert_eq!(chooser.choose_next(), None);
        let choice = chooser.finish();
        assert_eq!(choice.chosen, [(0, m(1e4, 1000.0, 0.0))]);
        assert_eq!(choice.rejected[0].reason, Rejection::DoesNotPay);
    }
}
