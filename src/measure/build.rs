//! Building a candidate inside the caller's rolled-back transaction: the one place a candidate
//! index is built (`compare`, `compare --workload`, `advise` and `check` all build through
//! [`build_index`]).

use std::time::Instant;

use crate::db::explain::{self, run};
use crate::db::session::SessionError;
use crate::sql::IndexCandidate;

use super::Observer;

/// A measured transaction's results besides the plans.
#[derive(Debug, Default)]
pub struct SetupFacts {
    pub build_ms: Option<f64>,
    pub size_bytes: Option<f64>,
    /// Every name the plans may show for the index: its own first, then (on a partitioned
    /// table) its partitions' indexes.
    pub plan_index_names: Vec<String>,
    pub has_expressions: bool,
    /// With `--cold`: the buffers evicted before the first run.
    pub evicted_buffers: Option<f64>,
}

/// Builds a candidate inside the caller's transaction, timed, and reads what it became: the
/// name PostgreSQL gave an unnamed one, its size, the names plans show for it. With `analyze`,
/// ANALYZEs its table afterwards.
pub async fn build_index(
    client: &tokio_postgres::Client,
    candidate: &IndexCandidate,
    analyze: bool,
    progress: &dyn Observer,
    label: &str,
) -> Result<SetupFacts, SessionError> {
    let mut facts = SetupFacts::default();
    progress.update(&format!("{label}: building"));
    // An unnamed candidate is built unnamed, so PostgreSQL picks the name it would pick
    // in production (events_status_idx); the new name is found by comparing the table's
    // index names before and after.
    let (sql, before) = if candidate.name_generated {
        let unique = if candidate.unique { "UNIQUE " } else { "" };
        (
            format!("CREATE {unique}INDEX {}", candidate.definition),
            explain::index_names(client, &candidate.table).await?,
        )
    } else {
        (candidate.sql.clone(), Vec::new())
    };
    let started = Instant::now();
    run(client, &sql, &format!("building {}", candidate.describe())).await?;
    facts.build_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
    let name = if candidate.name_generated {
        explain::index_names(client, &candidate.table)
            .await?
            .into_iter()
            .find(|n| !before.contains(n))
            .unwrap_or_else(|| candidate.name.clone())
    } else {
        candidate.name.clone()
    };
    if let Some(index) = explain::index_facts(client, &candidate.table, &name).await? {
        if index.check_xmin {
            // The planner skips an index with indcheckxmin set until the index's own xmin is
            // older than the transaction's (plancat.c): measured here, it would read "unused"
            // whatever it is worth.
            return Err(SessionError {
                context: format!("building {}", candidate.describe()),
                message: format!(
                    "{} has rows whose HOT chains the new index cannot follow (updated rows not yet \
                     vacuumed), so PostgreSQL lets no query use the index in the transaction \
                     that built it (pg_index.indcheckxmin); pgplan cannot measure it.\n\
                     hint: VACUUM {} first, then run pgplan again",
                    candidate.table, candidate.table
                ),
                sqlstate: None,
            });
        }
        facts.size_bytes = Some(index.size_bytes);
        facts.has_expressions = index.has_expressions;
        facts.plan_index_names = index.plan_names;
    }
    if facts.plan_index_names.is_empty() {
        facts.plan_index_names = vec![name];
    }
    if analyze {
        progress.update(&format!("{label}: analyzing {}", candidate.table));
        run(
            client,
            &format!("ANALYZE {}", candidate.table),
            &format!("analyzing {}", candidate.table),
        )
        .await?;
    }
    Ok(facts)
}
