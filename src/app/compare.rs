//! `pgplan compare`: the request read from the arguments, the measurement engine's one-query
//! experiment, and the report and exit code.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};

use crate::cli::CompareArgs;
use crate::compare::{CompareReport, CompareRequest, Measurement, Mode, RequestInput};
use crate::db::session::Limits;
use crate::exit;
use crate::report::{Format, TextOptions, compare as render, write_json};

use super::input::{QUERY_LIMIT_BYTES, read_text};
use super::live::{Interrupt, open, report_destination, resolve, runtime};
use super::progress::Progress;
use super::writers::open_writers;
use crate::measure::one_query::run_compare_with;

/// Turns the command line into a validated request, before connecting.
pub fn request_from_args(args: &CompareArgs) -> Result<CompareRequest> {
    if !args.allow_probe_triggers.is_empty() {
        bail!(
            "--allow-probe-triggers applies to a workload's representative write (compare \
             --workload, advise); one query's compare runs no write of pgplan's own"
        );
    }
    let [query] = args.queries.as_slice() else {
        bail!(
            "give the query: a file holding one statement, or - for standard input (several files, or --workload, measure a workload)"
        );
    };
    let (query_source, query_text) = read_text(query, "the query", QUERY_LIMIT_BYTES)?;
    let index_file = match &args.index_file {
        Some(path) => Some(read_text(
            &path.display().to_string(),
            "the candidate file",
            QUERY_LIMIT_BYTES,
        )?),
        None => None,
    };
    let input = RequestInput {
        query_text,
        query_source,
        index_sqls: args.indexes.clone(),
        index_file,
        drop_indexes: args.drop_indexes.clone(),
        runs: args.runs,
        min_gain_percent: args.min_gain,
        analyze: args.analyze,
        allow_writes: args.allow_writes,
        allow_lasting_effects: args.allow_lasting_effects,
        params: args.params.clone(),
        generic_plan: args.generic_plan,
        hypothetical: args.hypothetical,
        cold: args.cold,
    };
    CompareRequest::validate(input).map_err(|e| anyhow!("{e}"))
}

/// Writes every captured plan into `dir`, named by what it measured and the run.
fn save_plans(dir: &Path, report: &CompareReport) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let write = |stem: &str, m: &Measurement| -> Result<()> {
        for (i, raw) in m.raw_plans.iter().enumerate() {
            let run = if i == 0 {
                "cold".to_owned()
            } else {
                format!("run{i}")
            };
            let path = dir.join(format!("{stem}.{run}.json"));
            std::fs::write(&path, format!("{raw}\n"))
                .with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    };
    write("baseline", &report.baseline)?;
    for (n, rerun) in report.baseline_reruns.iter().enumerate() {
        let stem = if n == 0 {
            "baseline_again".to_owned()
        } else {
            format!("baseline_again{}", n + 1)
        };
        write(&stem, &rerun.measurement)?;
    }
    for (i, outcome) in report.outcomes.iter().enumerate() {
        if let Ok(run) = &outcome.result {
            // The name PostgreSQL gave an unnamed candidate, as the report shows it.
            let stem: String = report
                .name(i)
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            write(&stem, &run.measurement)?;
        }
    }
    Ok(())
}

pub fn compare(args: CompareArgs, options: &TextOptions) -> Result<u8> {
    if args.workload.is_some() || args.queries.len() > 1 {
        if args.cold {
            bail!(
                "--cold applies to one query's compare; a workload's runs are not evicted. Drop \
                 --cold, or compare one query"
            );
        }
        return super::workload::compare_workload(args, options);
    }
    let request = request_from_args(&args)?;
    if args.format == Format::Text || args.format == Format::Markdown {
        for warning in &request.warnings {
            eprintln!("pgplan: note: {warning}");
        }
    }
    let params = resolve(&args.conn)?;
    // Checked (and for a file, its temporary created) before anything is measured.
    let (mut out, text_options) = report_destination(args.output.as_deref(), options)?;
    let limits =
        Limits::compare_defaults().with(args.session.statement_timeout, args.session.lock_timeout);
    let interrupt = Interrupt::new();
    let policy = args.writers.policy();
    let report = runtime()?.block_on(interrupt.run(async {
        let mut conn = open(&params, &args.session, &interrupt).await?;
        // Hypothetical candidates build nothing and lock nothing writers need.
        let builds = request.mode != Mode::Hypothetical;
        let mut writers =
            open_writers(policy, &params, &args.session, &interrupt, &conn, builds).await?;
        run_compare_with(
            &mut conn,
            &request,
            &limits,
            &Progress::new(),
            Some(&mut writers),
        )
        .await
    }))?;
    if let Some(dir) = &args.save_plans {
        save_plans(dir, &report)?;
    }
    match args.format {
        Format::Text => render::write_text(&mut out, &report, &text_options)?,
        Format::Json => write_json(&mut out, &render::CompareDoc::new(&report))?,
        Format::Markdown => render::write_markdown(&mut out, &report)?,
        Format::Html => crate::report::html::write_compare(&mut out, &report)?,
    }
    out.flush()?;
    let failed: Vec<(usize, &str)> = report.failed().collect();
    if !failed.is_empty() {
        for (i, error) in &failed {
            eprintln!("pgplan: candidate {} failed: {error}", report.name(*i));
        }
        return Ok(exit::ERROR);
    }
    Ok(if crate::lasting_state::any_left(&report.warnings) {
        exit::LEFT_BEHIND
    } else if args.fail_unless_pays && report.best().is_none() {
        exit::FINDINGS
    } else {
        exit::SUCCESS
    })
}
