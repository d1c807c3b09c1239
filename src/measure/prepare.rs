//! A workload made ready to measure: the values for each query's parameters (from the workload,
//! the table's own rows, or the generic plan when nothing else fits), and which samples plan at
//! all, each decided in a transaction that is rolled back.

use anyhow::{Context, Result, bail};

use crate::compare::workload::params::{self, ParamSource, ParamUse};
use crate::compare::workload::statements::{self, Screening};
use crate::compare::workload::{SourceQuery, WorkloadQuery};
use crate::db::connect::Connection;
use crate::db::explain::{self, explain_sql, run};
use crate::db::session::{Limits, SessionError};
use crate::db::workload as dbw;
use crate::effects::Run;
use crate::plan::{Analysis, parse_plan};
use crate::sql::{QueryKind, tokenize};

use crate::db::cancel::stop_requested;

use super::workload::{execute_sql, plan_relations, session_error, statement_name};

/// The generic plan of a parameterised query (EXPLAIN without ANALYZE), in the caller's
/// transaction; the prepared statement is removed again.
async fn generic_plan(
    client: &tokio_postgres::Client,
    text: &str,
    parameters: u32,
) -> Result<String, SessionError> {
    let name = statement_name();
    run(client, "SAVEPOINT pgplan_generic", "setting a savepoint").await?;
    let result = async {
        run(
            client,
            &format!("PREPARE {name} AS {text}"),
            "preparing the query",
        )
        .await?;
        run(
            client,
            "SET LOCAL plan_cache_mode = force_generic_plan",
            "setting plan_cache_mode",
        )
        .await?;
        let args = vec!["NULL".to_owned(); parameters as usize];
        explain::explain(
            client,
            &explain_sql(&execute_sql(&name, &args), false),
            "planning the query generically",
        )
        .await
    }
    .await;
    let _ = run(
        client,
        "ROLLBACK TO SAVEPOINT pgplan_generic",
        "rolling back",
    )
    .await;
    // DEALLOCATE of a statement that was never prepared fails: only after a PREPARE.
    let _ = run(client, &format!("DEALLOCATE {name}"), "deallocating").await;
    result
}

/// Where a parameter's values come from: the column it is compared with, found among the
/// relations its generic plan reads.
async fn param_source(
    client: &tokio_postgres::Client,
    usage: &ParamUse,
    relations: &[(String, String, Option<String>)],
) -> Result<ParamSource, SessionError> {
    let (qualifier, column) = match usage {
        ParamUse::Limit => return Ok(ParamSource::Limit),
        ParamUse::Offset => return Ok(ParamSource::Offset),
        ParamUse::Unknown => {
            return Ok(ParamSource::None(
                "not compared with a plain column (an expression, a function argument, an array)"
                    .into(),
            ));
        }
        ParamUse::Column { qualifier, column } => (qualifier, column),
    };
    let matching: Vec<&(String, String, Option<String>)> = relations
        .iter()
        .filter(|(_, rel, alias)| match qualifier {
            Some(q) => q == rel || alias.as_deref() == Some(q.as_str()),
            None => true,
        })
        .collect();
    for (schema, table, _) in &matching {
        if let Some(stats) = dbw::column_stats(client, schema, table, column).await?
            && (!stats.most_common_vals.is_empty() || !stats.histogram_bounds.is_empty())
        {
            return Ok(ParamSource::Stats(stats));
        }
    }
    // No statistics (never analyzed, or every value distinct with no histogram): a sampled row.
    for (schema, table, _) in &matching {
        // A column this table does not have fails the sample: try the next relation.
        run(client, "SAVEPOINT pgplan_sample", "setting a savepoint").await?;
        let value = dbw::sample_value(client, schema, table, column).await;
        let _ = run(
            client,
            "ROLLBACK TO SAVEPOINT pgplan_sample",
            "rolling back",
        )
        .await;
        if let Ok(Some(value)) = value {
            return Ok(ParamSource::Sampled {
                column: format!("{table}.{column}"),
                value,
            });
        }
    }
    Ok(ParamSource::None(format!(
        "compared with {column}, which has no statistics and no row to sample in the tables the plan reads"
    )))
}

/// Turns the workload's queries into queries ready to measure, choosing the values of their
/// parameters (read-only). A statement of pg_stat_statements that cannot be planned (a table
/// since dropped, a temporary table of a session gone, a role's search_path, a parameter of no
/// type) goes to `screening.skipped` with the server's error; a query file's is an error.
///
/// Before anything plans a query, the functions its text calls are judged, through the bodies
/// of the user's functions ([`super::guard::check_text`]): planning alone runs a function
/// marked IMMUTABLE or STABLE on constants. A query refused for what they reach is set aside
/// (a statement of the view) or an error (a file's), unless `allow_lasting_effects`;
/// `planned_only`: no query is run (`check --estimated`), so only what planning runs is judged.
pub async fn prepare_queries(
    conn: &mut Connection,
    limits: &Limits,
    sources: Vec<SourceQuery>,
    allow_writes: bool,
    allow_lasting_effects: bool,
    planned_only: bool,
    screening: &mut Screening,
) -> Result<Vec<WorkloadQuery>> {
    let mut prepared = Vec::new();
    for mut source in sources {
        let runnable = match &source.query.kind {
            QueryKind::Read => true,
            QueryKind::Write(_) => allow_writes,
            QueryKind::Other(_) => false,
        };
        let run = if runnable && !planned_only {
            Run::Executes
        } else {
            Run::PlansOnly
        };
        let verdict = conn
            .read_only(limits, async |client| {
                super::guard::text_verdict(client, &source.query.text, allow_writes, run).await
            })
            .await
            .with_context(|| format!("{}: judging the functions it calls", source.id))?;
        if !allow_lasting_effects && let Some(refusal) = verdict.refusal(super::guard::ACCEPT_FLAG)
        {
            if source.queryid.is_some() {
                let line = verdict
                    .refusal_line(super::guard::ACCEPT_FLAG)
                    .unwrap_or(refusal);
                screening.skip(&source, line);
                continue;
            }
            bail!("{}: {refusal}", source.id);
        }
        let count = source.query.max_parameter.unwrap_or(0);
        if let Some(given) = &source.params
            && given.len() != count as usize
        {
            bail!(
                "{}: `-- params:` gives {} value(s) but the query uses parameters up to ${count}",
                source.id,
                given.len()
            );
        }
        let from_view = source.queryid.is_some();
        if from_view {
            // Planned once before anything else: what cannot be planned is set aside, named.
            match plannable(conn, limits, &mut source, count).await? {
                Ok(()) => {}
                Err(reason) => {
                    screening.skip(&source, reason);
                    continue;
                }
            }
        }
        let samples = if !runnable {
            // Never run: only its estimated plan is shown, and its SET list read.
            vec![params::Sample {
                label: "not run".into(),
                params: Vec::new(),
                generic: true,
                why: vec!["a write: run only with --allow-writes (rolled back)".into()],
            }]
        } else if count == 0 || source.params.is_some() {
            params::choose_samples(source.params.as_deref(), &[])
                .into_iter()
                .map(|mut s| {
                    if let Some(given) = &source.params {
                        s.label = "given".into();
                        s.params = given.clone();
                        s.why = vec!["values given with `-- params:`".into()];
                    }
                    s
                })
                .collect()
        } else {
            let text = source.query.text.clone();
            let mut tokens: Vec<ParamUse> = tokenize(&text)
                .map(|toks| params::parameter_uses(&toks, count))
                .unwrap_or_else(|_| vec![ParamUse::Unknown; count as usize]);
            // `col = ANY($n)`: a value of the column, as a one-element array.
            let arrays: Vec<bool> = match tokenize(&text) {
                Ok(toks) => statements::any_array_uses(&toks, count)
                    .into_iter()
                    .zip(tokens.iter_mut())
                    .map(|(array, usage)| match array {
                        Some(column) if *usage == ParamUse::Unknown => {
                            *usage = column;
                            true
                        }
                        _ => false,
                    })
                    .collect(),
                Err(_) => vec![false; count as usize],
            };
            let found = conn
                .read_only(limits, async |client| {
                    let plan = generic_plan(client, &text, count).await?;
                    let analysis = parse_plan(&plan)
                        .map(Analysis::of)
                        .map_err(|e| session_error("reading the generic plan", e.to_string()))?;
                    let relations = plan_relations(&analysis);
                    let mut found = Vec::new();
                    for usage in &tokens {
                        found.push(param_source(client, usage, &relations).await?);
                    }
                    Ok(found)
                })
                .await;
            match found {
                Ok(sources) => params::choose_samples(None, &sources)
                    .into_iter()
                    .map(|mut sample| {
                        for (value, _) in sample
                            .params
                            .iter_mut()
                            .zip(&arrays)
                            .filter(|(_, array)| **array)
                        {
                            *value = statements::one_element_array(value);
                        }
                        sample
                    })
                    .collect(),
                Err(e) if from_view && !conn.is_closed() && !stop_requested() => {
                    screening.skip(&source, format!("finding values for its parameters: {e}"));
                    continue;
                }
                Err(e) => bail!("{}: finding values for its parameters: {e}", source.id),
            }
        };
        prepared.push(WorkloadQuery {
            source,
            samples,
            runnable,
        });
    }
    Ok(prepared)
}

/// Whether a statement of the view can be planned: its generic plan, read-only. A parameter
/// the server cannot type (the literal it stood for had no type: `SELECT $1`) is cast to
/// `text`, as PostgreSQL resolves such a literal, and the text rewritten. `Err` is why it
/// cannot be planned; a lost connection or Ctrl-C ends the run.
async fn plannable(
    conn: &mut Connection,
    limits: &Limits,
    source: &mut SourceQuery,
    count: u32,
) -> Result<Result<(), String>> {
    for _ in 0..=count {
        let text = source.query.text.clone();
        let planned = conn
            .read_only(limits, async |client| {
                generic_plan(client, &text, count).await
            })
            .await;
        if conn.is_closed() {
            bail!(
                "the connection to {} closed while planning {}",
                conn.target,
                source.id
            );
        }
        if stop_requested() {
            bail!("interrupted while planning {}", source.id);
        }
        match planned {
            Ok(_) => return Ok(Ok(())),
            Err(e) => {
                let undetermined = (e.sqlstate.as_deref() == Some("42P18"))
                    .then(|| statements::undetermined_parameter(&e.message))
                    .flatten();
                match undetermined {
                    Some(n) => {
                        source.query.text = statements::cast_parameter(&text, n, "text");
                    }
                    None => return Ok(Err(format!("planning it: {e}"))),
                }
            }
        }
    }
    Ok(Err(
        "planning it: the server could not determine its parameters' types".into(),
    ))
}
