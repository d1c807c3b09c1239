//! `pgplan explain` and `pgplan diff`: saved plans in, reports out, no database.

use std::io::Write;

use super::input::{PLAN_LIMIT_BYTES, compact_json_file, read_text};
use super::output::report_destination;

use anyhow::{Result, bail};

use crate::cli::{DiffArgs, ExplainArgs};
use crate::exit;
use crate::plan::{Analysis, Comparison, Severity, read_plan, read_server_json};
use crate::report::{Format, TextOptions, html, markdown, text, wire, write_json};

/// Reads a plan argument: a path, or `-` for standard input.
pub fn read_plan_input(arg: &str) -> Result<(String, Analysis)> {
    read_chosen_plan(arg, None)
}

/// Reads plan `choice` (from 1; the first when `None`) of a plan argument, and says on stderr
/// when the input holds more plans than the one read.
pub fn read_chosen_plan(arg: &str, choice: Option<usize>) -> Result<(String, Analysis)> {
    // The common case, a file of EXPLAIN's JSON as the server sent it, is read compacted. When
    // that does not read, the file is read again whole, for the reader to say what it is.
    if choice.is_none_or(|n| n == 1)
        && let Some(json) = compact_json_file(arg)
        && let Ok(plan) = read_server_json(&json)
    {
        drop(json);
        return Ok((arg.to_owned(), Analysis::of(plan)));
    }
    let (name, content) = read_text(arg, "the plan", PLAN_LIMIT_BYTES)?;
    let title = if arg == "-" {
        "(standard input)".to_owned()
    } else {
        name
    };
    let read = read_plan(&content, choice).map_err(|e| anyhow::anyhow!("{title}: {e}"))?;
    // The text is not needed once read, and can be as large as the plan made of it.
    drop(content);
    if read.count > 1 {
        eprintln!(
            "pgplan: {title} holds {} plans; this is plan {} (choose another with --plan N)",
            read.count, read.number
        );
    }
    Ok((title, Analysis::of(read.plan)))
}

pub fn explain(args: ExplainArgs, options: &TextOptions) -> Result<u8> {
    let live_only = [
        (!args.params.is_empty(), "--param"),
        (args.generic_plan, "--generic-plan"),
        (args.allow_writes, "--allow-writes"),
        (args.allow_lasting_effects, "--allow-lasting-effects"),
        (args.save_plan.is_some(), "--save-plan"),
    ];
    if let Some((_, flag)) = live_only.iter().find(|(given, _)| *given) {
        bail!(
            "{flag} runs the query on a server: give a connection (-d DBNAME, -h, -p, -U) and the \
             query file, or leave {flag} out to read a saved plan"
        );
    }
    let (mut out, options) = report_destination(args.output.as_deref(), options)?;
    let (title, analysis) = read_chosen_plan(&args.plan, args.plan_number)?;
    match args.format {
        Format::Text => text::write_explain(&mut out, &title, &analysis, &options)?,
        Format::Json => write_json(&mut out, &wire::ExplainDoc::new(&analysis))?,
        Format::Markdown => markdown::write_explain(&mut out, &title, &analysis)?,
        Format::Html => html::write_explain(&mut out, &title, &analysis)?,
    }
    out.flush()?;
    let threshold: Option<Severity> = args.fail_on.map(Into::into);
    let crossed = threshold.is_some_and(|t| analysis.findings.iter().any(|f| f.severity >= t));
    leave_to_exit(analysis);
    Ok(if crossed {
        exit::FINDINGS
    } else {
        exit::SUCCESS
    })
}

pub fn diff(args: DiffArgs, options: &TextOptions) -> Result<u8> {
    if args.before == "-" && args.after == "-" {
        bail!("only one of the two plans can come from standard input (-)");
    }
    let (mut out, options) = report_destination(args.output.as_deref(), options)?;
    let (before_title, before) = read_plan_input(&args.before)?;
    let (after_title, after) = read_plan_input(&args.after)?;
    let comparison = Comparison::of(before, after);
    let titles = (before_title.as_str(), after_title.as_str());
    match args.format {
        Format::Text => text::write_diff(&mut out, titles, &comparison, &options)?,
        Format::Json => write_json(&mut out, &wire::DiffDoc::new(&comparison))?,
        Format::Markdown => markdown::write_diff(&mut out, titles, &comparison)?,
        Format::Html => html::write_diff(&mut out, titles, &comparison)?,
    }
    out.flush()?;
    let code = match args.fail_on_regression {
        Some(percent) if regressed(&comparison, percent) => exit::FINDINGS,
        _ => exit::SUCCESS,
    };
    leave_to_exit(comparison);
    Ok(code)
}

/// Lets the process's exit free what a command read, all at once, instead of one allocation at a
/// time: a large plan is millions of them (each node's strings, its unmodelled keys), freed one
/// by one just before the exit that frees everything anyway.
fn leave_to_exit<T>(value: T) {
    std::mem::forget(value);
}

/// Whether the after plan is worse by more than `percent`: pages touched when both plans have
/// buffer counts, execution time otherwise.
pub fn regressed(comparison: &Comparison, percent: f64) -> bool {
    let t = &comparison.diff.totals;
    let pair = if t.pages_touched.before.is_some() && t.pages_touched.after.is_some() {
        t.pages_touched
    } else {
        t.execution_ms
    };
    match (pair.before, pair.after) {
        (Some(b), Some(a)) => a > b * (1.0 + percent / 100.0),
        _ => false,
    }
}
