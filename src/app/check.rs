//! `pgplan check`: measures the workload as `compare --workload` measures its baseline (every
//! query in an always-rolled-back, read-only transaction), then either writes the baseline
//! (`--update`) or compares with it and exits 1 on a regression, 4 when the runs left something
//! on the server.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};

use crate::check::{
    self, Baseline, BaselineQuery, CheckMode, CheckOptions, CheckReport, Location, baseline,
};
use crate::cli::{CheckArgs, CheckFormat};
use crate::compare::workload::params::Sample;
use crate::compare::workload::{SourceQuery, WorkloadQuery, source};
use crate::db::connect::Connection;
use crate::db::session::Limits;
use crate::exit;
use crate::report::{TextOptions, check as render};
use crate::sql::QueryKind;

use super::live::{Interrupt, open, report_destination, resolve, runtime};
use super::progress::Progress;
use crate::compare::workload::statements::Screening;
use crate::measure::guard::LastingWatch;
use crate::measure::prepare::prepare_queries;
use crate::measure::workload::{EngineOptions, measure_workload};

/// The workload's queries and where each is written, read before connecting. A directory's
/// queries go by their file names, a file's by its path (`#n` for the n-th of several).
pub(crate) fn read_workload(
    paths: &[String],
) -> Result<(Vec<SourceQuery>, BTreeMap<String, Location>)> {
    let mut files: Vec<(String, String)> = Vec::new();
    for w in paths {
        let path = Path::new(w);
        if path.is_dir() {
            let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("reading the directory {w}"))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "sql"))
                .collect();
            found.sort();
            if found.is_empty() {
                bail!("{w} holds no .sql file; put one query per .sql file there");
            }
            for f in found {
                let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
                files.push((name.unwrap_or_default(), f.display().to_string()));
            }
        } else {
            files.push((w.clone(), w.clone()));
        }
    }
    let mut queries = Vec::new();
    let mut locations = BTreeMap::new();
    for (name, path) in files {
        let (_, text) =
            super::input::read_text(&path, "the workload file", super::input::QUERY_LIMIT_BYTES)?;
        let parsed = source::parse_file(&name, &text).map_err(|e| anyhow!("{e}"))?;
        let lines: Vec<usize> = crate::sql::split_statements(&text)
            .map(|s| s.iter().map(|st| st.start.line).collect())
            .unwrap_or_default();
        for (i, q) in parsed.into_iter().enumerate() {
            let location = Location {
                file: path.clone(),
                line: lines.get(i).copied().unwrap_or(1),
            };
            if locations.insert(q.id.clone(), location).is_some() {
                bail!(
                    "two workload queries are named {}: a baseline matches queries by name, so give them different file names",
                    q.id
                );
            }
            queries.push(q);
        }
    }
    Ok((queries, locations))
}

/// Reads the baseline, or says how to record one.
fn read_baseline(path: &Path) -> Result<Baseline> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "no baseline at {}: record one first with pgplan check --update (it measures the workload and writes the file to commit)",
            path.display()
        ),
        Err(e) => {
            return Err(e).with_context(|| format!("reading the baseline {}", path.display()));
        }
    };
    Baseline::from_json(&text).map_err(|e| anyhow!("the baseline {}: {e}", path.display()))
}

/// Writes the baseline through a temporary file renamed over it, so a failed run never leaves
/// half a baseline.
fn write_baseline(path: &Path, baseline: &Baseline) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => std::path::PathBuf::from("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(&dir).with_context(|| {
        format!(
            "writing the baseline: cannot create a file in {}",
            dir.display()
        )
    })?;
    file.write_all(baseline.to_json().as_bytes())
        .and_then(|_| file.as_file().sync_all())
        .with_context(|| format!("writing the baseline {}", path.display()))?;
    file.persist(path)
        .map_err(|e| anyhow!("writing the baseline {}: {}", path.display(), e.error))?;
    Ok(())
}

/// The baseline's samples for a query whose text is unchanged, so a check runs it with the
/// same values (and reads the same rows) as the baseline did even when the statistics the
/// values were chosen from have moved. Values given with `-- params:` are the user's: those
/// are always taken from the file (the header is not part of the text's digest).
fn baseline_samples(source: &SourceQuery, recorded: Option<&BaselineQuery>) -> Option<Vec<Sample>> {
    let recorded = recorded?;
    if source.params.is_some() {
        return None;
    }
    if recorded.sql_sha256 != baseline::sql_sha256(&source.query.text)
        || recorded.samples.is_empty()
    {
        return None;
    }
    Some(
        recorded
            .samples
            .iter()
            .map(|s| Sample {
                label: s.label.clone(),
                params: s.params.clone(),
                generic: s.generic,
                why: vec!["the values the baseline ran with".into()],
            })
            .collect(),
    )
}

/// The queries ready to measure: the baseline's samples where it has them, values chosen from
/// the statistics otherwise.
async fn ready_queries(
    conn: &mut Connection,
    limits: &Limits,
    sources: Vec<SourceQuery>,
    recorded: Option<&Baseline>,
    args: &CheckArgs,
) -> Result<Vec<WorkloadQuery>> {
    let allow_writes = args.allow_writes;
    let mut ready: Vec<Option<WorkloadQuery>> = Vec::new();
    let mut fresh = Vec::new();
    for source in sources {
        let runnable = match &source.query.kind {
            QueryKind::Read => true,
            QueryKind::Write(_) => allow_writes,
            QueryKind::Other(_) => false,
        };
        match baseline_samples(&source, recorded.and_then(|b| b.query(&source.id))) {
            Some(samples) if runnable => ready.push(Some(WorkloadQuery {
                source,
                samples,
                runnable,
            })),
            _ => {
                ready.push(None);
                fresh.push(source);
            }
        }
    }
    // A check reads query files only: a file's query that cannot be planned is an error, never
    // set aside, so nothing lands in the screening and every query comes back in order.
    let mut screening = Screening::default();
    let mut prepared = prepare_queries(
        conn,
        limits,
        fresh,
        allow_writes,
        args.allow_lasting_effects,
        args.estimated,
        &mut screening,
    )
    .await?
    .into_iter();
    ready
        .into_iter()
        .map(|q| q.or_else(|| prepared.next()))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| anyhow!("preparing the workload's queries returned fewer than asked for"))
}

/// The workload measured now, with what the runs left on the server.
struct Measured {
    now: Baseline,
    server_version: String,
    /// The lasting-state notes ([`LastingWatch::notes`]): what the runs moved, and what they
    /// left behind (each of those starts with [`crate::lasting_state::PREFIX`]).
    lasting: Vec<String>,
}

/// Measures (or, estimated, plans) the workload and records it as a baseline would, between
/// two readings of the server's lasting state: a query's function can make what no rollback
/// undoes (a session-level advisory lock, a replication slot), and a check that passed must
/// not hide it.
async fn record(
    conn: &mut Connection,
    limits: &Limits,
    args: &CheckArgs,
    sources: Vec<SourceQuery>,
    recorded: Option<&Baseline>,
    progress: &Progress,
) -> Result<Measured> {
    let read_write = args.allow_writes && !args.estimated;
    let mut lasting = LastingWatch::start(conn, limits, read_write).await;
    match record_watched(
        conn,
        limits,
        args,
        sources,
        recorded,
        &mut lasting,
        progress,
    )
    .await
    {
        Ok(now) => Ok(Measured {
            now,
            server_version: conn.facts.version.clone(),
            lasting: lasting.notes(conn, limits).await,
        }),
        Err(e) => Err(lasting.error(conn, limits, e).await),
    }
}

/// [`record`]'s work, between the two readings of the lasting state.
async fn record_watched(
    conn: &mut Connection,
    limits: &Limits,
    args: &CheckArgs,
    sources: Vec<SourceQuery>,
    recorded: Option<&Baseline>,
    lasting: &mut LastingWatch,
    progress: &Progress,
) -> Result<Baseline> {
    let settings = conn
        .read_only(limits, async |client| {
            crate::db::check::planner_settings(client).await
        })
        .await?;
    let mut queries = ready_queries(conn, limits, sources, recorded, args).await?;
    if args.estimated {
        // Planned, never run: EXPLAIN without ANALYZE, with the sample's values.
        for q in &mut queries {
            q.runnable = false;
        }
    } else if args.allow_writes {
        let written = super::workload::written_tables(&queries, &[]);
        lasting.watch_rows(conn, limits, written).await;
    }
    let engine = EngineOptions {
        runs: args.runs,
        allow_writes: args.allow_writes,
        analyze: false,
        deadline: None,
        allow_lasting_effects: args.allow_lasting_effects,
        untracked: conn.facts.superuser,
        // check builds no candidate, so it runs no representative write.
        probe_accepted: Vec::new(),
    };
    let measured =
        measure_workload(conn, limits, &queries, &[], &[], &engine, None, progress).await?;
    progress.clear();
    let runs = &measured.baselines[0].queries;
    let recorded_queries = queries
        .iter()
        .zip(runs)
        .map(|(q, r)| baseline::query_of(q, r))
        .collect();
    Ok(Baseline::new(
        mode_of(args),
        conn.facts.major(),
        settings,
        recorded_queries,
    ))
}

fn mode_of(args: &CheckArgs) -> CheckMode {
    if args.estimated {
        CheckMode::Estimated
    } else {
        CheckMode::Measured
    }
}

fn validate(args: &CheckArgs) -> Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1 (got 0): pages are the median of the counted runs");
    }
    if !args.max_regression.is_finite() || args.max_regression < 0.0 {
        bail!(
            "--max-regression must be a percentage of 0 or more (got {})",
            args.max_regression
        );
    }
    Ok(())
}

/// `pgplan check ...`.
pub fn check(args: CheckArgs, options: &TextOptions) -> Result<u8> {
    validate(&args)?;
    let (sources, locations) = read_workload(&args.workload)?;
    let (previous, existing) = baselines(&args)?;
    let measured = measure(&args, sources, previous.as_ref().or(existing.as_ref()))?;
    match previous {
        Some(baseline) => compare_with(&args, options, &baseline, measured, &locations),
        None => update(&args, existing.as_ref(), measured),
    }
}

/// The baseline to check against (none with `--update`), and with `--update` the existing
/// baseline of the same mode, whose queries keep their recorded entries when their plans did
/// not change (see [`check::settle`]).
fn baselines(args: &CheckArgs) -> Result<(Option<Baseline>, Option<Baseline>)> {
    if args.update {
        let existing = if args.baseline.exists() {
            read_baseline(&args.baseline)
                .ok()
                .filter(|b| b.mode == mode_of(args))
        } else {
            None
        };
        return Ok((None, existing));
    }
    let b = read_baseline(&args.baseline)?;
    let wanted = mode_of(args);
    if b.mode != wanted {
        let fix = if args.estimated {
            "check without --estimated, or record an estimated baseline with --update --estimated"
        } else {
            "check with --estimated, or record a measured baseline with --update"
        };
        bail!(
            "the baseline {} holds {} figures and this check is {}: {fix}",
            args.baseline.display(),
            b.mode.as_str(),
            wanted.as_str(),
        );
    }
    Ok((Some(b), None))
}

/// Connects and measures the workload now.
fn measure(
    args: &CheckArgs,
    sources: Vec<SourceQuery>,
    recorded: Option<&Baseline>,
) -> Result<Measured> {
    let params = resolve(&args.conn)?;
    let limits =
        Limits::compare_defaults().with(args.session.statement_timeout, args.session.lock_timeout);
    let interrupt = Interrupt::new();
    let progress = Progress::new();
    runtime()?.block_on(interrupt.run(async {
        let mut conn = open(&params, &args.session, &interrupt).await?;
        record(&mut conn, &limits, args, sources, recorded, &progress).await
    }))
}

/// `--update`: writes the baseline (settled against the existing one), and says what the runs
/// left on the server, which exits 4 even though the baseline was written.
fn update(args: &CheckArgs, existing: Option<&Baseline>, measured: Measured) -> Result<u8> {
    let now = match existing {
        Some(old) => check::settle::settle(
            old,
            measured.now,
            check::rules::Thresholds {
                max_regression_percent: args.max_regression,
            },
        ),
        None => measured.now,
    };
    write_baseline(&args.baseline, &now)?;
    let samples: usize = now.queries.iter().map(|q| q.samples.len()).sum();
    eprintln!(
        "pgplan: baseline recorded in {}: {} queries, {samples} samples, {} figures",
        args.baseline.display(),
        now.queries.len(),
        now.mode.as_str()
    );
    for note in &measured.lasting {
        eprintln!("pgplan: warning: {}", crate::format::printable(note));
    }
    Ok(if crate::lasting_state::any_left(&measured.lasting) {
        exit::LEFT_BEHIND
    } else {
        exit::SUCCESS
    })
}

/// Compares the workload measured now with `baseline`, writes the report, and exits 4 when the
/// runs left something on the server, 1 on a regression.
fn compare_with(
    args: &CheckArgs,
    options: &TextOptions,
    baseline: &Baseline,
    measured: Measured,
    locations: &BTreeMap<String, Location>,
) -> Result<u8> {
    let (queries, settings_changed, mut warnings) = check::check(
        baseline,
        &measured.now,
        CheckOptions {
            max_regression_percent: args.max_regression,
        },
        locations,
    );
    let (left_behind, moved): (Vec<String>, Vec<String>) = measured
        .lasting
        .into_iter()
        .partition(|n| n.starts_with(crate::lasting_state::PREFIX));
    warnings.extend(moved);
    let report = CheckReport {
        mode: measured.now.mode,
        max_regression_percent: args.max_regression,
        baseline_file: args.baseline.display().to_string(),
        server_version: measured.server_version,
        baseline_server_major: baseline.server_major,
        queries,
        settings_changed,
        warnings,
        left_behind,
    };
    let (mut out, text_options) = report_destination(args.output.as_deref(), options)?;
    match args.format {
        CheckFormat::Text => render::write_text(&mut out, &report, &text_options)?,
        CheckFormat::Json => crate::report::write_json(&mut out, &render::CheckDoc::new(&report))?,
        CheckFormat::Markdown => crate::report::check_markdown::write_markdown(&mut out, &report)?,
        CheckFormat::Sarif => crate::report::check_sarif::write_sarif(&mut out, &report)?,
        CheckFormat::Junit => crate::report::check_junit::write_junit(&mut out, &report)?,
    }
    out.flush()?;
    Ok(if !report.left_behind.is_empty() {
        exit::LEFT_BEHIND
    } else if report.regressed() {
        exit::FINDINGS
    } else {
        exit::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::baseline::BaselineSample;

    fn source(text: &str, params: Option<Vec<String>>) -> SourceQuery {
        let mut q = source::parse_file("q.sql", text).unwrap().remove(0);
        q.params = params;
        q
    }

    fn recorded(text: &str) -> BaselineQuery {
        BaselineQuery {
            id: "q.sql".into(),
            sql_sha256: baseline::sql_sha256(text),
            sql: text.into(),
            calls_per_day: 1.0,
            samples: vec![BaselineSample {
                label: "common".into(),
                params: vec!["open".into()],
                generic: false,
                error: None,
                pages: None,
                temp_blocks: None,
                total_cost: None,
                relations: BTreeMap::new(),
                plan: Vec::new(),
            }],
        }
    }

    #[test]
    fn an_unchanged_query_runs_with_the_baselines_values() {
        let text = "SELECT 1 FROM t WHERE a = $1";
        let samples = baseline_samples(&source(text, None), Some(&recorded(text))).unwrap();
        assert_eq!(samples[0].label, "common");
        assert_eq!(samples[0].params, vec!["open".to_owned()]);
        // A changed text, values the user gives, or no baseline: chosen afresh.
        let other = "SELECT 2 FROM t WHERE a = $1";
        assert!(baseline_samples(&source(other, None), Some(&recorded(text))).is_none());
        let given = source(text, Some(vec!["done".into()]));
        assert!(baseline_samples(&given, Some(&recorded(text))).is_none());
        assert!(baseline_samples(&source(text, None), None).is_none());
    }
}
