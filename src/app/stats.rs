//! `pgplan stats export` and `pgplan stats import`: production's planner statistics on a CI
//! database. Export is read-only (a standby too); import is the one pgplan command meant to
//! change a server, and changes only statistics, in one committed transaction.

use std::io::Write;

use anyhow::{Context, Result, anyhow, bail};

use crate::check::stats::{StatsFile, TableStats, match_table};
use crate::cli::{StatsArgs, StatsCommand, StatsExportArgs, StatsImportArgs};
use crate::db::connect::Connection;
use crate::db::explain::{self, explain_sql, run};
use crate::db::session::{Limits, SessionError};
use crate::db::stats as dbs;
use crate::effects::Run;
use crate::exit;
use crate::plan::parse_plan;
use crate::sql::quote_ident;

use super::live::{Interrupt, open, report_destination, resolve, runtime};

pub fn stats(args: StatsArgs) -> Result<u8> {
    match args.command {
        StatsCommand::Export(args) => export(*args),
        StatsCommand::Import(args) => import(args),
    }
}

/// The relations a query's plan reads (planned, never run: the generic plan of a query with
/// parameters), as regclass input; under a savepoint, so a query that cannot be planned is
/// only a warning.
async fn planned_relations(
    client: &tokio_postgres::Client,
    text: &str,
    parameters: u32,
) -> Result<Result<Vec<String>, String>, SessionError> {
    run(client, "SAVEPOINT pgplan_stats", "setting a savepoint").await?;
    let mut prepared = None;
    let plan = async {
        let statement = if parameters > 0 {
            let p = explain::prepare(client, text, &[], true, parameters).await?;
            prepared = Some(p.name);
            p.statement
        } else {
            text.to_owned()
        };
        explain::explain(
            client,
            &explain_sql(&statement, false),
            "planning a workload query",
        )
        .await
    }
    .await;
    run(client, "ROLLBACK TO SAVEPOINT pgplan_stats", "rolling back").await?;
    if let Some(name) = prepared {
        explain::deallocate(client, &name).await?;
    }
    let plan = match plan {
        Ok(raw) => raw,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let parsed = parse_plan(&plan).map_err(|e| SessionError {
        context: "reading a plan".into(),
        message: e.to_string(),
        sqlstate: None,
    })?;
    Ok(Ok(parsed
        .nodes
        .iter()
        .filter_map(|n| {
            Some(format!(
                "{}.{}",
                quote_ident(n.schema.as_deref()?),
                quote_ident(n.relation_name.as_deref()?)
            ))
        })
        .collect()))
}

/// The tables to export, as regclass input: --table, every table of each --schema, and those
/// the workload's queries read.
async fn export_names(
    client: &tokio_postgres::Client,
    args: &StatsExportArgs,
    queries: &[crate::compare::workload::SourceQuery],
    warnings: &mut Vec<String>,
) -> Result<Vec<String>, SessionError> {
    let mut names = args.tables.clone();
    for schema in &args.schemas {
        let found = dbs::schema_tables(client, schema).await?;
        if found.is_empty() {
            warnings.push(format!("schema {schema} has no table"));
        }
        names.extend(found);
    }
    for q in queries {
        // Planning runs a function marked IMMUTABLE or STABLE on constants: one whose body
        // reaches what outlives the rollback is not planned (stats export accepts no such
        // function), and its tables are left out.
        let verdict =
            crate::measure::guard::text_verdict(client, &q.query.text, false, Run::PlansOnly)
                .await?;
        if let Some(reasons) = verdict.reasons() {
            warnings.push(format!(
                "{}: not planned, its tables are left out: planning it runs functions whose \
                 effects outlive a rollback: {reasons}",
                q.id
            ));
            continue;
        }
        match planned_relations(client, &q.query.text, q.query.max_parameter.unwrap_or(0)).await? {
            Ok(found) => names.extend(found),
            Err(e) => warnings.push(format!(
                "{}: cannot be planned, its tables are left out: {e}",
                q.id
            )),
        }
    }
    Ok(names)
}

/// Reads every named table's figures and statistics.
async fn read_tables(
    client: &tokio_postgres::Client,
    major: u32,
    names: &[String],
    no_values: bool,
    warnings: &mut Vec<String>,
) -> Result<Result<Vec<TableStats>, String>, SessionError> {
    let mut tables: Vec<TableStats> = Vec::new();
    for name in names {
        let Some(mut t) = dbs::table(client, major, name).await? else {
            return Ok(Err(format!("no table {name} in this database")));
        };
        if tables
            .iter()
            .any(|x| x.schema == t.schema && x.table == t.table)
        {
            continue;
        }
        t.stats = dbs::column_stats(client, major, &t.schema, &t.table).await?;
        if no_values {
            t.stats = t.stats.into_iter().map(|r| r.without_values()).collect();
        }
        if t.stats.is_empty() {
            warnings.push(format!(
                "{}.{} has no column statistics (never analyzed, or no column you may read): only its pg_class figures are exported",
                t.schema, t.table
            ));
        }
        tables.push(t);
    }
    Ok(Ok(tables))
}

fn export(args: StatsExportArgs) -> Result<u8> {
    if args.tables.is_empty() && args.schemas.is_empty() && args.workload.is_empty() {
        bail!("nothing to export: name the tables with --table, --schema or --workload");
    }
    let queries = if args.workload.is_empty() {
        Vec::new()
    } else {
        super::check::read_workload(&args.workload)?.0
    };
    let params = resolve(&args.conn)?;
    let limits = Limits::read_only_defaults()
        .with(args.session.statement_timeout, args.session.lock_timeout);
    let interrupt = Interrupt::new();
    let mut warnings = Vec::new();
    let file = runtime()?.block_on(interrupt.run(async {
        let mut conn = open(&params, &args.session, &interrupt).await?;
        let major = conn.facts.major();
        let tables = conn
            .read_only(&limits, async |client| {
                let names = export_names(client, &args, &queries, &mut warnings).await?;
                read_tables(client, major, &names, args.no_values, &mut warnings).await
            })
            .await?
            .map_err(|e| anyhow!("{e}"))?;
        Ok::<_, anyhow::Error>(StatsFile::new(major, args.no_values, tables))
    }))?;
    for w in &warnings {
        eprintln!("pgplan: warning: {w}");
    }
    let (mut out, _) = report_destination(args.output.as_deref(), &Default::default())?;
    out.write_all(file.to_json().as_bytes())?;
    out.flush()?;
    eprintln!(
        "pgplan: exported the statistics of {} table(s){}",
        file.tables.len(),
        if args.no_values {
            ", most-common values withheld"
        } else {
            ""
        }
    );
    Ok(exit::SUCCESS)
}

/// Applies `file` in one transaction, committed only when every statement succeeded; returns
/// what did not match or was refused.
async fn apply(
    conn: &mut Connection,
    limits: &Limits,
    file: &StatsFile,
) -> Result<(usize, usize, Vec<String>)> {
    let major = conn.facts.major();
    let result = conn
        .committed(limits, async |client| {
            let (mut tables, mut columns, mut problems) = (0, 0, Vec::new());
            for t in &file.tables {
                let name = format!("{}.{}", quote_ident(&t.schema), quote_ident(&t.table));
                let here = dbs::table(client, major, &name).await?;
                let plan = match_table(t, here.as_ref().map(|h| h.columns.as_slice()));
                problems.extend(plan.mismatches.iter().cloned());
                if here.is_none() {
                    continue;
                }
                if dbs::restore_relation(client, t).await? {
                    tables += 1;
                } else {
                    problems.push(format!(
                        "{name}: the server refused some of its pg_class figures (see its WARNING)"
                    ));
                }
                for row in &plan.rows {
                    if dbs::restore_attribute(client, &t.schema, &t.table, row).await? {
                        columns += 1;
                    } else {
                        problems.push(format!(
                        "{name}.{}: the server refused some of its statistics (see its WARNING)",
                        quote_ident(&row.column)
                    ));
                    }
                }
            }
            Ok::<_, SessionError>((tables, columns, problems))
        })
        .await;
    result.map_err(|e| anyhow!("importing statistics (nothing was applied): {e}"))
}

fn import(args: StatsImportArgs) -> Result<u8> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading the statistics file {}", args.file.display()))?;
    let file = StatsFile::from_json(&text).map_err(|e| anyhow!("{}: {e}", args.file.display()))?;
    let params = resolve(&args.conn)?;
    let limits = Limits::read_only_defaults()
        .with(args.session.statement_timeout, args.session.lock_timeout);
    let interrupt = Interrupt::new();
    let (tables, columns, problems) = runtime()?.block_on(interrupt.run(async {
        let mut conn = open(&params, &args.session, &interrupt).await?;
        if conn.facts.major() < 18 {
            bail!(
                "pgplan stats import needs PostgreSQL 18 or later (pg_restore_relation_stats and \
                 pg_restore_attribute_stats); {} is PostgreSQL {}",
                conn.target,
                conn.facts.version
            );
        }
        apply(&mut conn, &limits, &file).await
    }))?;
    println!(
        "imported the statistics of {tables} table(s) and {columns} column(s) from {} (exported from PostgreSQL {}{}); \
         the next ANALYZE of a table, autovacuum's too, replaces them",
        args.file.display(),
        file.server_major,
        if file.values_withheld {
            ", most-common values withheld"
        } else {
            ""
        }
    );
    for p in &problems {
        println!("did not match: {p}");
    }
    Ok(if problems.is_empty() {
        exit::SUCCESS
    } else {
        exit::FINDINGS
    })
}
