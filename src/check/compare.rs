//! The comparison of a new recording with the baseline: queries matched by id (their file),
//! samples by label, every rule over every matched sample. Improvements and new queries are
//! reported and never fail; a query whose text changed is still compared, shown with its diff.

use std::collections::BTreeMap;

use serde::Serialize;

use super::baseline::{Baseline, BaselineQuery, CheckMode};
use super::rules::{self, Regression, Thresholds, improvement};
use super::sql_diff;

/// How the comparison judges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckOptions {
    pub max_regression_percent: f64,
}

/// Where a query is written, for annotations (SARIF) and reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// The path as given on the command line (relative paths stay relative).
    pub file: String,
    /// 1-based line where the statement starts.
    pub line: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryStatus {
    Regressed,
    Improved,
    Unchanged,
    /// In the workload, not in the baseline.
    New,
    /// In the baseline, not in the workload any more.
    Removed,
}

impl QueryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            QueryStatus::Regressed => "regressed",
            QueryStatus::Improved => "improved",
            QueryStatus::Unchanged => "unchanged",
            QueryStatus::New => "new",
            QueryStatus::Removed => "removed",
        }
    }
}

/// A figure of a query before and after (the mean over its samples measured on both sides).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct FigurePair {
    pub baseline: Option<f64>,
    pub now: Option<f64>,
}

impl FigurePair {
    /// now / baseline; `None` when either is missing or the baseline is zero.
    pub fn ratio(&self) -> Option<f64> {
        match (self.baseline, self.now) {
            (Some(b), Some(a)) if b > 0.0 => Some(a / b),
            _ => None,
        }
    }
}

/// One query's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryCheck {
    pub id: String,
    pub status: QueryStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    pub pages: FigurePair,
    pub cost: FigurePair,
    pub regressions: Vec<Regression>,
    pub improvements: Vec<String>,
    /// Whether its text differs from the baseline's.
    pub text_changed: bool,
    /// The unified diff of its SQL, when the text changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql_diff: Option<String>,
    /// What else the comparison noticed (a sample only one side has, a failure on both sides).
    pub notes: Vec<String>,
}

/// A plan-changing setting that differs from the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SettingChange {
    pub name: String,
    pub baseline: Option<String>,
    pub now: Option<String>,
}

/// Everything `pgplan check` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    pub mode: CheckMode,
    pub max_regression_percent: f64,
    pub baseline_file: String,
    pub server_version: String,
    pub baseline_server_major: u32,
    /// Sorted by id.
    pub queries: Vec<QueryCheck>,
    pub settings_changed: Vec<SettingChange>,
    pub warnings: Vec<String>,
    /// What the check's runs left on the server that no rollback undoes (a session-level
    /// advisory lock, a replication slot, a prepared transaction, rows a trigger committed),
    /// each with the command that removes it: exit 4 whatever the verdict.
    pub left_behind: Vec<String>,
}

impl CheckReport {
    pub fn regressed(&self) -> bool {
        self.queries
            .iter()
            .any(|q| q.status == QueryStatus::Regressed)
    }

    pub fn count(&self, status: QueryStatus) -> usize {
        self.queries.iter().filter(|q| q.status == status).count()
    }

    /// Best and worst first: regressions (the largest growth first), then improvements (the
    /// largest fall first), then new, unchanged and removed queries by id.
    pub fn ranked(&self) -> Vec<&QueryCheck> {
        let mut order: Vec<&QueryCheck> = self.queries.iter().collect();
        let ratio = |q: &QueryCheck| q.pages.ratio().or_else(|| q.cost.ratio()).unwrap_or(1.0);
        order.sort_by(|a, b| {
            a.status.cmp(&b.status).then_with(|| match a.status {
                QueryStatus::Regressed => ratio(b).total_cmp(&ratio(a)),
                QueryStatus::Improved => ratio(a).total_cmp(&ratio(b)),
                _ => std::cmp::Ordering::Equal,
            })
        });
        order
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// One query present on both sides.
fn compare_query(
    before: &BaselineQuery,
    after: &BaselineQuery,
    thresholds: Thresholds,
) -> QueryCheck {
    let mut regressions = Vec::new();
    let mut improvements = Vec::new();
    let mut notes = Vec::new();
    let (mut pages_b, mut pages_a, mut cost_b, mut cost_a) = (vec![], vec![], vec![], vec![]);
    for (i, now) in after.samples.iter().enumerate() {
        let then = before
            .samples
            .iter()
            .find(|s| s.label == now.label)
            .or_else(|| (before.samples.len() == after.samples.len()).then(|| &before.samples[i]));
        let Some(then) = then else {
            notes.push(format!("sample {:?} is not in the baseline", now.label));
            continue;
        };
        if let (Some(b), Some(a)) = (then.pages, now.pages) {
            pages_b.push(b.median);
            pages_a.push(a.median);
        }
        if let (Some(b), Some(a)) = (then.total_cost, now.total_cost) {
            cost_b.push(b);
            cost_a.push(a);
        }
        if then.error.is_some() && now.error.is_some() {
            notes.push(format!(
                "sample {:?} failed when the baseline was recorded and still fails",
                now.label
            ));
        }
        let found = rules::regressions(then, now, thresholds);
        if found.is_empty()
            && let Some(better) = improvement::check(then, now, thresholds)
        {
            improvements.push(if after.samples.len() > 1 {
                format!("{}: {better}", now.label)
            } else {
                better
            });
        }
        regressions.extend(found);
    }
    for then in &before.samples {
        if !after.samples.iter().any(|s| s.label == then.label)
            && before.samples.len() != after.samples.len()
        {
            notes.push(format!(
                "the baseline's sample {:?} was not run",
                then.label
            ));
        }
    }
    let status = if !regressions.is_empty() {
        QueryStatus::Regressed
    } else if !improvements.is_empty() {
        QueryStatus::Improved
    } else {
        QueryStatus::Unchanged
    };
    let sql_diff = (before.sql_sha256 != after.sql_sha256)
        .then(|| sql_diff::unified(&after.id, &before.sql, &after.sql))
        .flatten();
    QueryCheck {
        id: after.id.clone(),
        status,
        location: None,
        pages: FigurePair {
            baseline: mean(&pages_b),
            now: mean(&pages_a),
        },
        cost: FigurePair {
            baseline: mean(&cost_b),
            now: mean(&cost_a),
        },
        regressions,
        improvements,
        text_changed: before.sql_sha256 != after.sql_sha256,
        sql_diff,
        notes,
    }
}

/// A query only one side has.
fn one_sided(query: &BaselineQuery, status: QueryStatus) -> QueryCheck {
    let figure = |f: fn(&super::BaselineSample) -> Option<f64>| {
        let v: Vec<f64> = query.samples.iter().filter_map(f).collect();
        mean(&v)
    };
    let pages = figure(|s| s.pages.map(|p| p.median));
    let cost = figure(|s| s.total_cost);
    let (pages, cost) = if status == QueryStatus::New {
        (
            FigurePair {
                baseline: None,
                now: pages,
            },
            FigurePair {
                baseline: None,
                now: cost,
            },
        )
    } else {
        (
            FigurePair {
                baseline: pages,
                now: None,
            },
            FigurePair {
                baseline: cost,
                now: None,
            },
        )
    };
    let mut notes = Vec::new();
    if status == QueryStatus::New {
        for s in &query.samples {
            if let Some(e) = &s.error {
                notes.push(format!("sample {:?} fails: {e}", s.label));
            }
        }
    }
    QueryCheck {
        id: query.id.clone(),
        status,
        location: None,
        pages,
        cost,
        regressions: Vec::new(),
        improvements: Vec::new(),
        text_changed: false,
        sql_diff: None,
        notes,
    }
}

/// The settings that differ between the two recordings.
fn settings_changed(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<SettingChange> {
    let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| before.get(*n) != after.get(*n))
        .map(|n| SettingChange {
            name: n.clone(),
            baseline: before.get(n).cloned(),
            now: after.get(n).cloned(),
        })
        .collect()
}

/// Compares `now` (the workload recorded again) with `baseline`. `locations` says where each
/// query id is written.
pub fn check(
    baseline: &Baseline,
    now: &Baseline,
    options: CheckOptions,
    locations: &BTreeMap<String, Location>,
) -> (Vec<QueryCheck>, Vec<SettingChange>, Vec<String>) {
    let thresholds = Thresholds {
        max_regression_percent: options.max_regression_percent,
    };
    let mut queries = Vec::new();
    for after in &now.queries {
        let mut q = match baseline.query(&after.id) {
            Some(before) => compare_query(before, after, thresholds),
            None => one_sided(after, QueryStatus::New),
        };
        q.location = locations.get(&after.id).cloned();
        queries.push(q);
    }
    for before in &baseline.queries {
        if now.query(&before.id).is_none() {
            queries.push(one_sided(before, QueryStatus::Removed));
        }
    }
    queries.sort_by(|a, b| a.id.cmp(&b.id));
    let mut warnings = Vec::new();
    if baseline.server_major != now.server_major {
        warnings.push(format!(
            "the baseline was recorded on PostgreSQL {} and this server is PostgreSQL {}: plans may differ for that alone",
            baseline.server_major, now.server_major
        ));
    }
    (
        queries,
        settings_changed(&baseline.settings, &now.settings),
        warnings,
    )
}

#[cfg(test)]
mod tests {
    use super::super::baseline::{BaselineSample, sql_sha256};
    use super::super::rules::RegressionClass;
    use super::super::rules::testing::{node, sample};
    use super::*;

    fn query(id: &str, sql: &str, samples: Vec<BaselineSample>) -> BaselineQuery {
        BaselineQuery {
            id: id.into(),
            sql_sha256: sql_sha256(sql),
            sql: sql.into(),
            calls_per_day: 1.0,
            samples,
        }
    }

    fn indexed(pages: f64) -> BaselineSample {
        let mut scan = node(None, "Index Scan", Some("public.t"));
        scan.index = Some("t_a_idx".into());
        sample(Some((pages, pages, pages)), vec![scan])
    }

    fn sequential(pages: f64) -> BaselineSample {
        sample(
            Some((pages, pages, pages)),
            vec![node(None, "Seq Scan", Some("public.t"))],
        )
    }

    fn recording(queries: Vec<BaselineQuery>) -> Baseline {
        Baseline::new(CheckMode::Measured, 17, BTreeMap::new(), queries)
    }

    const OPTIONS: CheckOptions = CheckOptions {
        max_regression_percent: 10.0,
    };

    #[test]
    fn a_dropped_index_regresses_and_an_added_one_improves() {
        let baseline = recording(vec![
            query("a.sql", "SELECT 1", vec![indexed(4.0)]),
            query("b.sql", "SELECT 2", vec![sequential(500.0)]),
            query("gone.sql", "SELECT 3", vec![indexed(4.0)]),
        ]);
        let now = recording(vec![
            query("a.sql", "SELECT 1", vec![sequential(500.0)]),
            query("b.sql", "SELECT 2", vec![indexed(4.0)]),
            query("new.sql", "SELECT 4", vec![indexed(4.0)]),
        ]);
        let (queries, settings, warnings) = check(&baseline, &now, OPTIONS, &BTreeMap::new());
        assert!(settings.is_empty() && warnings.is_empty());
        let status: Vec<(&str, QueryStatus)> =
            queries.iter().map(|q| (q.id.as_str(), q.status)).collect();
        assert_eq!(
            status,
            vec![
                ("a.sql", QueryStatus::Regressed),
                ("b.sql", QueryStatus::Improved),
                ("gone.sql", QueryStatus::Removed),
                ("new.sql", QueryStatus::New),
            ]
        );
        let classes: Vec<RegressionClass> =
            queries[0].regressions.iter().map(|r| r.class).collect();
        assert_eq!(
            classes,
            vec![
                RegressionClass::PagesRegression,
                RegressionClass::NewSeqScan
            ]
        );
        assert_eq!(
            queries[0].pages,
            FigurePair {
                baseline: Some(4.0),
                now: Some(500.0)
            }
        );
    }

    #[test]
    fn an_unchanged_recording_passes_and_a_changed_text_shows_its_diff() {
        let baseline = recording(vec![query("a.sql", "SELECT 1\nFROM t", vec![indexed(4.0)])]);
        let same = recording(vec![query("a.sql", "SELECT 1\nFROM t", vec![indexed(4.0)])]);
        let (queries, _, _) = check(&baseline, &same, OPTIONS, &BTreeMap::new());
        assert_eq!(queries[0].status, QueryStatus::Unchanged);
        assert!(!queries[0].text_changed && queries[0].sql_diff.is_none());
        let edited = recording(vec![query("a.sql", "SELECT 2\nFROM t", vec![indexed(4.0)])]);
        let (queries, _, _) = check(&baseline, &edited, OPTIONS, &BTreeMap::new());
        assert!(queries[0].text_changed);
        assert!(
            queries[0]
                .sql_diff
                .as_deref()
                .unwrap()
                .contains("-SELECT 1\n+SELECT 2\n")
        );
    }

    #[test]
    fn settings_and_versions_that_differ_are_named() {
        let mut baseline = recording(Vec::new());
        baseline.settings.insert("work_mem".into(), "4096".into());
        let mut now = recording(Vec::new());
        now.server_major = 18;
        now.settings.insert("work_mem".into(), "65536".into());
        let (_, settings, warnings) = check(&baseline, &now, OPTIONS, &BTreeMap::new());
        assert_eq!(settings[0].name, "work_mem");
        assert_eq!(settings[0].now.as_deref(), Some("65536"));
        assert!(warnings[0].contains("PostgreSQL 17"), "{warnings:?}");
    }

    #[test]
    fn ranking_puts_the_worst_and_best_first() {
        let mut report = CheckReport {
            mode: CheckMode::Measured,
            max_regression_percent: 10.0,
            baseline_file: "b.json".into(),
            server_version: "17.10".into(),
            baseline_server_major: 17,
            queries: Vec::new(),
            settings_changed: Vec::new(),
            warnings: Vec::new(),
            left_behind: Vec::new(),
        };
        let baseline = recording(vec![
            query("a", "1", vec![indexed(10.0)]),
            query("b", "2", vec![indexed(10.0)]),
            query("c", "3", vec![indexed(10.0)]),
        ]);
        let now = recording(vec![
            query("a", "1", vec![indexed(100.0)]),
            query("b", "2", vec![indexed(1000.0)]),
            query("c", "3", vec![indexed(10.0)]),
        ]);
        report.queries = check(&baseline, &now, OPTIONS, &BTreeMap::new()).0;
        let ids: Vec<&str> = report.ranked().iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids, vec!["b", "a", "c"]);
        assert!(report.regressed());
        assert_eq!(report.count(QueryStatus::Regressed), 2);
    }
}
