//! HypoPG's estimates of a workload's candidates, for advise's shortlist: every sample planned
//! (never run) with each hypothetical index in place, in one read-only transaction.

use anyhow::{Result, anyhow};

use crate::advise::shortlist::Estimate;
use crate::compare::workload::WorkloadQuery;
use crate::db::connect::Connection;
use crate::db::explain::{self, explain_sql, run};
use crate::db::session::{Limits, SessionError};
use crate::plan::parse_plan;
use crate::sql::IndexCandidate;

use super::Observer;
use super::workload::session_error;
use crate::db::cancel::stop_requested;

/// The planner's total cost of one sample of `query`, and the names of the indexes its plan
/// scans, planned (never run) under a savepoint that is rolled back; the prepared statement a
/// parameterised query needs is prepared and deallocated around every plan, so a cached generic
/// plan never hides an index created since. `None` when it cannot be planned.
async fn planned_cost(
    client: &tokio_postgres::Client,
    query: &WorkloadQuery,
    sample: usize,
) -> Result<Option<(f64, Vec<String>)>, SessionError> {
    let s = &query.samples[sample];
    let parameters = query.source.query.max_parameter.unwrap_or(0);
    run(client, "SAVEPOINT pgplan_plan", "setting a savepoint").await?;
    let mut prepared = None;
    let plan = async {
        let statement = if parameters > 0 {
            let p = explain::prepare(
                client,
                &query.source.query.text,
                &s.params,
                s.generic || s.params.len() != parameters as usize,
                parameters,
            )
            .await?;
            prepared = Some(p.name);
            p.statement
        } else {
            query.source.query.text.clone()
        };
        explain::explain(
            client,
            &explain_sql(&statement, false),
            &format!("planning {}", query.source.id),
        )
        .await
    }
    .await;
    if client.is_closed() {
        return Err(session_error("planning", "the connection closed"));
    }
    run(
        client,
        "ROLLBACK TO SAVEPOINT pgplan_plan",
        "rolling back the plan",
    )
    .await?;
    if let Some(name) = prepared {
        explain::deallocate(client, &name).await?;
    }
    if stop_requested() {
        return Err(session_error("planning", "interrupted"));
    }
    let Ok(raw) = plan else { return Ok(None) };
    let Ok(parsed) = parse_plan(&raw) else {
        return Ok(None);
    };
    let Some(cost) = parsed.root().total_cost else {
        return Ok(None);
    };
    let indexes = parsed
        .nodes
        .iter()
        .filter_map(|n| n.index_name.clone())
        .collect();
    Ok(Some((cost, indexes)))
}

/// The planner's cost of every sample of the queries in `which`, `costs[q][s]`.
async fn planned_costs(
    client: &tokio_postgres::Client,
    queries: &[WorkloadQuery],
    which: impl Iterator<Item = usize>,
) -> Result<Vec<(usize, Vec<Option<(f64, Vec<String>)>>)>, SessionError> {
    let mut out = Vec::new();
    for q in which {
        let mut per_sample = Vec::new();
        for s in 0..queries[q].samples.len() {
            per_sample.push(planned_cost(client, &queries[q], s).await?);
        }
        out.push((q, per_sample));
    }
    Ok(out)
}

/// With HypoPG: each candidate created hypothetically (nothing is built: only this backend's
/// planner sees it), the queries `serves[i]` lists for candidate i planned with it, and the
/// cost saved per day against the same plans without it. One read-only transaction; every
/// hypothetical index is dropped again inside it, before the next one is made — HypoPG keeps
/// them in backend memory, outside any transaction, and a pooled server connection (PgBouncer
/// in transaction mode) would hand them to the next client's planner. A candidate HypoPG
/// cannot represent (GIN and GiST: HypoPG 1.3 has btree, brin, hash and bloom) is its error.
pub async fn estimate_hypothetical(
    conn: &mut Connection,
    limits: &Limits,
    queries: &[WorkloadQuery],
    candidates: &[IndexCandidate],
    serves: &[Vec<usize>],
    progress: &dyn Observer,
) -> Result<Vec<Result<Estimate, String>>> {
    let mut wanted: Vec<usize> = serves.iter().flatten().copied().collect();
    wanted.sort_unstable();
    wanted.dedup();
    let result = conn
        .read_only(limits, async |client| {
            progress.update("HypoPG: planning the workload without the candidates");
            let base = planned_costs(client, queries, wanted.iter().copied()).await?;
            let mut out = Vec::with_capacity(candidates.len());
            for (i, candidate) in candidates.iter().enumerate() {
                progress.update(&format!(
                    "HypoPG: candidate {} of {} ({})",
                    i + 1,
                    candidates.len(),
                    candidate.describe()
                ));
                run(client, "SAVEPOINT pgplan_hypo", "setting a savepoint").await?;
                let created = explain::hypopg_create(client, &candidate.sql).await;
                let (oid, name) = match created {
                    Ok(c) => c,
                    Err(e) => {
                        run(client, "ROLLBACK TO SAVEPOINT pgplan_hypo", "rolling back").await?;
                        out.push(Err(e.to_string()));
                        continue;
                    }
                };
                let measured = async {
                    let size_bytes = explain::hypopg_size(client, oid).await?;
                    let with = planned_costs(client, queries, serves[i].iter().copied()).await?;
                    Ok::<_, SessionError>((size_bytes, with))
                }
                .await;
                if measured.is_err() && !client.is_closed() {
                    // Back to a usable transaction, so the hypothetical index can be dropped.
                    let _ = run(client, "ROLLBACK TO SAVEPOINT pgplan_hypo", "rolling back").await;
                }
                explain::hypopg_drop(client, oid).await?;
                let (size_bytes, with) = measured?;
                let mut saved = 0.0;
                let mut used = false;
                for (q, samples) in &with {
                    let Some((_, before)) = base.iter().find(|(b, _)| b == q) else {
                        continue;
                    };
                    let mut diffs = Vec::new();
                    for (after, before) in samples.iter().zip(before) {
                        if let (Some((a, names)), Some((b, _))) = (after, before) {
                            used |= names.contains(&name);
                            diffs.push(b - a);
                        }
                    }
                    if !diffs.is_empty() {
                        saved += diffs.iter().sum::<f64>() / diffs.len() as f64
                            * queries[*q].source.calls_per_day;
                    }
                }
                out.push(Ok(Estimate {
                    cost_saved_per_day: saved,
                    used,
                    size_bytes,
                }));
            }
            Ok(out)
        })
        .await;
    progress.clear();
    result.map_err(|e| anyhow!("estimating the candidates with HypoPG: {e}"))
}
