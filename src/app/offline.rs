//! `pgplan explain` and `pgplan diff`: saved plans in, reports out, no database.

use std::io::{self, Read, Write};

use anyhow::{Context, Result, bail};

use crate::cli::{DiffArgs, ExplainArgs};
use crate::exit;
use crate::plan::{Analysis, Comparison, Severity, read_plan};
use crate::report::{Format, TextOptions, markdown, text, wire, write_json};

/// Reads a plan argument: a path, or `-` for standard input.
pub fn read_plan_input(arg: &str) -> Result<(String, Analysis)> {
    read_chosen_plan(arg, None)
}

/// Reads plan `choice` (from 1; the first when `None`) of a plan argument, and says on stderr
/// when the input holds more plans than the one read.
pub fn read_chosen_plan(arg: &str, choice: Option<usize>) -> Result<(String, Analysis)> {
    let (title, content) = if arg == "-" {
        let mut content = String::new();
        io::stdin()
            .read_to_string(&mut content)
            .context("reading the plan from standard input")?;
        ("(standard input)".to_owned(), content)
    } else {
        let bytes = std::fs::read(arg).with_context(|| format!("reading {arg}"))?;
        let content = String::from_utf8(bytes).map_err(|e| {
            anyhow::anyhow!(
                "{arg}: not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            )
        })?;
        (arg.to_owned(), content)
    };
    let read = read_plan(&content, choice).map_err(|e| anyhow::anyhow!("{title}: {e}"))?;
    if read.count > 1 {
        eprintln!(
            "pgplan: {title} holds {} plans; this is plan {} (choose another with --plan N)",
            read.count, read.number
        );
    }
    Ok((title, Analysis::of(read.plan)))
}

pub fn explain(args: ExplainArgs, options: &TextOptions) -> Result<u8> {
    let (title, analysis) = read_chosen_plan(&args.plan, args.plan_number)?;
    let mut out = io::stdout().lock();
    match args.format {
        Format::Text => text::write_explain(&mut out, &title, &analysis, options)?,
        Format::Json => write_json(&mut out, &wire::ExplainDoc::new(&analysis))?,
        Format::Markdown => markdown::write_explain(&mut out, &title, &analysis)?,
    }
    out.flush()?;
    let threshold: Option<Severity> = args.fail_on.map(Into::into);
    let crossed = threshold.is_some_and(|t| analysis.findings.iter().any(|f| f.severity >= t));
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
    let (before_title, before) = read_plan_input(&args.before)?;
    let (after_title, after) = read_plan_input(&args.after)?;
    let comparison = Comparison::of(before, after);
    let mut out = io::stdout().lock();
    let titles = (before_title.as_str(), after_title.as_str());
    match args.format {
        Format::Text => text::write_diff(&mut out, titles, &comparison, options)?,
        Format::Json => write_json(&mut out, &wire::DiffDoc::new(&comparison))?,
        Format::Markdown => markdown::write_diff(&mut out, titles, &comparison)?,
    }
    out.flush()?;
    Ok(match args.fail_on_regression {
        Some(percent) if regressed(&comparison, percent) => exit::FINDINGS,
        _ => exit::SUCCESS,
    })
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
