//! `pgplan explain -d`: the query run once under compare's safety (a transaction that is always
//! rolled back, read-only unless it writes, transaction-local timeouts, no prepared statement
//! left behind), its plan read as a saved one would be, and the findings told what the server
//! knows about the tables and the session.

use std::io::Write;

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;

use crate::cli::ExplainArgs;
use crate::db::connect::Connection;
use crate::db::explain::{self as runner, explain_sql};
use crate::db::live;
use crate::db::session::{Limits, SessionError};
use crate::exit;
use crate::explain::enrich::tables_to_read;
use crate::explain::{ExplainInput, ExplainRequest, LiveFacts, enrich};
use crate::plan::side_effects::{
    DeadVersions, IndexScansCounted, dead_versions, index_scans_counted, side_effect_notes,
};
use crate::plan::{Analysis, Severity, parse_plan};
use crate::report::{Format, TextOptions, markdown, text, wire, write_json};

use super::input::{QUERY_LIMIT_BYTES, read_text};
use super::live::{Interrupt, open, report_destination, resolve, runtime};
use super::output::check_file_destination;
use crate::measure::guard;

/// What one live explain produced.
pub struct LiveExplain {
    pub analysis: Analysis,
    /// The plan as the server sent it, for --save-plan.
    pub raw_plan: String,
    pub server_version: String,
    pub index_scans: Vec<IndexScansCounted>,
    pub dead_versions: Vec<DeadVersions>,
    /// What the reader must know: the request's warnings, then what the run left behind.
    pub notes: Vec<String>,
}

/// Refuses early, with what to do instead, when the server cannot run the query as asked.
fn check_server(conn: &Connection, request: &ExplainRequest) -> Result<()> {
    if !(request.writes() && request.runs()) {
        return Ok(());
    }
    let facts = &conn.facts;
    if facts.in_recovery {
        bail!(
            "{} is a standby (in recovery), which cannot run a write, even one rolled back.\n\
             hint: use --generic-plan for its plan without running it, or explain it on the primary",
            conn.target
        );
    }
    if facts.read_only {
        bail!(
            "the session on {} is read-only (default_transaction_read_only is on), so a write \
             cannot run, even one rolled back.\n\
             hint: use --generic-plan for its plan without running it, or a writable connection",
            conn.target
        );
    }
    Ok(())
}

/// The plan, the session's memory settings, and the statistics of the tables its findings are
/// about, all read in the transaction that ran the query.
async fn explain_in(
    client: &tokio_postgres::Client,
    request: &ExplainRequest,
    major: u32,
) -> Result<(String, Analysis, LiveFacts, Vec<String>), SessionError> {
    let prepared = if !request.params.is_empty() || request.generic_plan {
        Some(
            runner::prepare(
                client,
                &request.query.text,
                &request.params,
                request.generic_plan,
                request.query.max_parameter.unwrap_or(0),
            )
            .await?,
        )
    } else {
        None
    };
    let statement = prepared
        .as_ref()
        .map_or(request.query.text.clone(), |p| p.statement.clone());
    let result = async {
        // The functions the query calls, judged before it runs (refused when their effects
        // would outlive the rollback); a plan that is not run executes nothing but planning,
        // which evaluates a function marked IMMUTABLE or STABLE on constants, so what that
        // reaches is judged from the text before the EXPLAIN.
        let checked = if request.runs() {
            guard::check_calls(
                client,
                &statement,
                &request.query.text,
                request.allow_lasting_effects,
                request.writes(),
            )
            .await?
        } else {
            guard::check_text(client, &request.query.text, request.allow_lasting_effects).await?
        };
        let raw = runner::explain(
            client,
            &explain_sql(&statement, request.runs()),
            "running the query",
        )
        .await
        .map_err(guard::explain_read_only)?;
        let plan = parse_plan(&raw).map_err(|e| SessionError {
            context: "reading the plan the server returned".into(),
            message: e.to_string(),
            sqlstate: None,
        })?;
        let analysis = Analysis::from_server(plan, major);
        let tables = tables_to_read(&analysis);
        let facts = LiveFacts {
            memory: Some(live::session_memory(client).await?),
            extended: live::extended_statistics(client, &tables).await?,
            tables: live::table_statistics(client, &tables).await?,
        };
        Ok((raw, analysis, facts, checked))
    }
    .await;
    // A failed statement aborts the transaction; the prepared statement outlives a rollback,
    // so it is removed either way (after a rollback to the savepoint when something failed).
    if let Some(prepared) = &prepared {
        if result.is_err() {
            let _ = runner::run(client, "ROLLBACK TO SAVEPOINT pgplan_work", "rolling back").await;
        }
        runner::deallocate(client, &prepared.name).await?;
    }
    result
}

/// Runs the request on `conn` and enriches the findings.
pub async fn run_live_explain(
    conn: &mut Connection,
    request: &ExplainRequest,
    limits: &Limits,
) -> Result<LiveExplain> {
    check_server(conn, request)?;
    let major = conn.facts.major();
    let work = async |client: &tokio_postgres::Client| {
        runner::run(client, "SAVEPOINT pgplan_work", "setting a savepoint").await?;
        explain_in(client, request, major).await
    };
    // A read (and any plan that is not run) needs no write access: BEGIN READ ONLY, so a
    // function that writes fails instead of writing. A write runs in a transaction that is
    // always rolled back.
    // Whatever the transaction, a function the query calls may make what no rollback undoes,
    // even when the query is only planned: the planner evaluates an IMMUTABLE function's call
    // on constants (a function wrongly marked so runs whatever it does inside).
    // In a read-write transaction nextval (and an accepted setval) run, and a sequence keeps
    // what they did: every sequence is read before and after, and what moved is said.
    let mut lasting =
        guard::LastingWatch::start(conn, limits, request.writes() && request.runs()).await;
    // A write may fire a trigger that commits elsewhere (through dblink): the rows of the
    // tables such triggers write are counted too.
    if request.writes() && request.runs() {
        let written = crate::lasting_rows::written_tables(&request.query.text);
        lasting.watch_rows(conn, limits, written).await;
    }
    let outcome = if request.writes() && request.runs() {
        conn.rolled_back(limits, work).await
    } else {
        conn.read_only(limits, work).await
    };
    let (raw_plan, mut analysis, facts, checked) = match outcome {
        Ok(done) => done,
        Err(e) => {
            let error = if e.context == guard::CHECK_CONTEXT {
                anyhow!("{}", e.message)
            } else {
                let held = crate::measure::lock_wait::explain(conn, limits, &[], &e).await;
                anyhow!(
                    "the query failed: {e}{}",
                    held.map(|h| format!("\n{h}")).unwrap_or_default()
                )
            };
            return Err(lasting.error(conn, limits, error).await);
        }
    };
    enrich(&mut analysis, &facts);
    let index_scans = index_scans_counted(&analysis);
    let dead = dead_versions(&analysis);
    let mut notes = request.warnings.clone();
    notes.extend(checked);
    notes.extend(side_effect_notes("the run", &index_scans, &dead));
    notes.extend(lasting.notes(conn, limits).await);
    Ok(LiveExplain {
        analysis,
        raw_plan,
        server_version: conn.facts.version.clone(),
        index_scans,
        dead_versions: dead,
        notes,
    })
}

/// `pgplan explain -d ... --format json`: the explain document, and what only the live run says.
#[derive(Serialize)]
struct LiveExplainDoc<'a> {
    #[serde(flatten)]
    explain: wire::ExplainDoc<'a>,
    server_version: &'a str,
    query: QueryDoc<'a>,
    /// Index scans the run counted in `pg_stat_user_indexes` (not undone by the rollback).
    index_scans_counted: Vec<IndexScansDoc<'a>>,
    /// Dead row versions a rolled-back write left behind, per table.
    dead_row_versions: Vec<DeadVersionsDoc<'a>>,
    notes: &'a [String],
}

#[derive(Serialize)]
struct QueryDoc<'a> {
    source: &'a str,
    text: &'a str,
    params: &'a [String],
    generic_plan: bool,
}

#[derive(Serialize)]
struct IndexScansDoc<'a> {
    index: &'a str,
    scans: f64,
}

#[derive(Serialize)]
struct DeadVersionsDoc<'a> {
    table: &'a str,
    rows: f64,
}

/// `pgplan explain -d`: the query run once on the server, its plan and findings written.
pub fn explain(args: ExplainArgs, options: &TextOptions) -> Result<u8> {
    let request = request_of(&args)?;
    let (mut out, text_options) = report_destination(args.output.as_deref(), options)?;
    if let Some(path) = &args.save_plan {
        check_file_destination("--save-plan", path)?;
    }
    let params = resolve(&args.conn)?;
    let limits =
        Limits::compare_defaults().with(args.session.statement_timeout, args.session.lock_timeout);
    let interrupt = Interrupt::new();
    let (result, target) = runtime()?.block_on(interrupt.run(async {
        let mut conn = open(&params, &args.session, &interrupt).await?;
        let result = run_live_explain(&mut conn, &request, &limits).await?;
        Ok((result, conn.target.clone()))
    }))?;
    if let Some(path) = &args.save_plan {
        std::fs::write(path, format!("{}\n", result.raw_plan))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let title = format!(
        "{} on {target} (PostgreSQL {}, {})",
        request.query_source,
        result.server_version,
        if request.runs() {
            "run and rolled back"
        } else {
            "planned, not run"
        }
    );
    write_report(
        &mut out,
        args.format,
        &title,
        &request,
        &result,
        &text_options,
    )?;
    out.flush()?;
    let threshold: Option<Severity> = args.fail_on.map(Into::into);
    let crossed =
        threshold.is_some_and(|t| result.analysis.findings.iter().any(|f| f.severity >= t));
    Ok(if crate::lasting_state::any_left(&result.notes) {
        exit::LEFT_BEHIND
    } else if crossed {
        exit::FINDINGS
    } else {
        exit::SUCCESS
    })
}

/// The request from the arguments, checked before anything connects: the query read and
/// validated with its parameters.
fn request_of(args: &ExplainArgs) -> Result<ExplainRequest> {
    if args.plan_number.is_some() {
        bail!(
            "--plan chooses among the plans of a saved input; with a connection pgplan runs one \
             query and reads its one plan: leave --plan out"
        );
    }
    let (query_source, query_text) = read_text(&args.plan, "the query", QUERY_LIMIT_BYTES)?;
    ExplainRequest::validate(ExplainInput {
        query_text,
        query_source,
        params: args.params.clone(),
        generic_plan: args.generic_plan,
        allow_writes: args.allow_writes,
        allow_lasting_effects: args.allow_lasting_effects,
    })
    .map_err(|e| anyhow!("{e}"))
}

/// Writes the live explain under `title` in `format`, its notes after the plan.
fn write_report(
    out: &mut dyn Write,
    format: Format,
    title: &str,
    request: &ExplainRequest,
    result: &LiveExplain,
    text_options: &TextOptions,
) -> Result<()> {
    match format {
        Format::Text => {
            text::write_explain(out, title, &result.analysis, text_options)?;
            if !result.notes.is_empty() {
                writeln!(out)?;
                writeln!(out, "Notes")?;
                for note in &result.notes {
                    writeln!(out, "  - {note}")?;
                }
            }
        }
        Format::Json => write_json(out, &LiveExplainDoc::of(request, result))?,
        Format::Html => crate::report::html::write_explain_with_notes(
            out,
            title,
            &result.analysis,
            &result.notes,
        )?,
        Format::Markdown => {
            markdown::write_explain(out, title, &result.analysis)?;
            if !result.notes.is_empty() {
                writeln!(out)?;
                for note in &result.notes {
                    writeln!(out, "> {note}")?;
                }
            }
        }
    }
    Ok(())
}

impl<'a> LiveExplainDoc<'a> {
    /// The document of `result`, run for `request`.
    fn of(request: &'a ExplainRequest, result: &'a LiveExplain) -> Self {
        LiveExplainDoc {
            explain: wire::ExplainDoc::new(&result.analysis),
            server_version: &result.server_version,
            query: QueryDoc {
                source: &request.query_source,
                text: &request.query.text,
                params: &request.params,
                generic_plan: request.generic_plan,
            },
            index_scans_counted: result
                .index_scans
                .iter()
                .map(|s| IndexScansDoc {
                    index: &s.index,
                    scans: s.scans,
                })
                .collect(),
            dead_row_versions: result
                .dead_versions
                .iter()
                .map(|d| DeadVersionsDoc {
                    table: &d.table,
                    rows: d.rows,
                })
                .collect(),
            notes: &result.notes,
        }
    }
}
