//! The write side of a candidate index, per day: the index entries its table's writes add, the
//! pages and WAL those cost, and the updates that stop being HOT because they set a column the
//! index covers. Rates come from `pg_stat_user_tables` over its counting window; the cost of one
//! entry is measured (a representative write inside the rolled-back transaction) when allowed,
//! otherwise estimated from the built index and labelled so.

use serde::Serialize;

/// A table's write counters and how long they have been counting.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableActivity {
    /// schema.table
    pub table: String,
    pub inserts: f64,
    pub updates: f64,
    pub hot_updates: f64,
    pub deletes: f64,
    /// Seconds the counters have been counting (audit's window), when known.
    pub window_seconds: Option<f64>,
    /// Indexes the table has now (each non-HOT update adds an entry to every one).
    pub index_count: f64,
}

/// An UPDATE of the workload: which columns it sets, and how often it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadUpdate {
    pub table: String,
    /// Lower-case column names of its SET list.
    pub set_columns: Vec<String>,
    pub calls_per_day: f64,
}

/// What one index entry costs, measured or estimated.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EntryCost {
    pub pages_written: f64,
    pub wal_bytes: f64,
    /// False when measured with EXPLAIN (ANALYZE, BUFFERS, WAL) of a representative write.
    pub estimated: bool,
}

/// The estimate of one entry's cost from the built index: a B-tree insertion dirties one leaf
/// page (page splits and full-page images after a checkpoint come on top, and are not counted),
/// and writes a WAL record of about the entry's size plus the record's header (~64 bytes).
pub fn estimated_entry_cost(index_size_bytes: f64, entries: f64) -> EntryCost {
    let entry_bytes = if entries > 0.0 {
        (index_size_bytes / entries).clamp(16.0, 8192.0)
    } else {
        32.0
    };
    EntryCost {
        pages_written: 1.0,
        wal_bytes: entry_bytes + 64.0,
        estimated: true,
    }
}

/// The write side of one candidate on its table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WriteCost {
    pub table: String,
    pub inserts_per_day: Option<f64>,
    pub updates_per_day: Option<f64>,
    pub hot_updates_per_day: Option<f64>,
    pub deletes_per_day: Option<f64>,
    /// The share of the table's rows the index holds (1 unless partial; measured on a sample).
    pub entries_per_insert: f64,
    /// HOT updates that would set a column the index covers; None when the workload has no
    /// UPDATE of this table to tell.
    pub hot_updates_lost_per_day: Option<f64>,
    pub index_entries_per_day: Option<f64>,
    pub write_pages_added_per_day: Option<f64>,
    pub wal_bytes_added_per_day: Option<f64>,
    pub entry_cost: EntryCost,
    /// What the figures rest on, in words.
    pub notes: Vec<String>,
}

const DAY: f64 = 86_400.0;

/// The write side of an index covering `columns` (lower-case names; `None` when it has
/// expressions pgplan cannot read columns from) on a table with `activity`, holding
/// `entries_per_insert` of its rows.
pub fn write_cost(
    activity: &TableActivity,
    columns: Option<&[String]>,
    entries_per_insert: f64,
    updates: &[WorkloadUpdate],
    entry_cost: EntryCost,
) -> WriteCost {
    let mut notes = Vec::new();
    let per_day = |count: f64| {
        activity
            .window_seconds
            .filter(|w| *w > 0.0)
            .map(|w| count * DAY / w.max(DAY))
    };
    if activity.window_seconds.is_none() {
        notes.push(format!(
            "{}: no counting window is known, so no rates per day",
            activity.table
        ));
    } else if activity.window_seconds.is_some_and(|w| w < DAY) {
        notes.push(format!(
            "{}: the counters have counted for less than a day; rates are per day of at least a day",
            activity.table
        ));
    }
    let inserts = per_day(activity.inserts);
    let updates_per_day = per_day(activity.updates);
    let hot = per_day(activity.hot_updates);
    let deletes = per_day(activity.deletes);

    let on_table: Vec<&WorkloadUpdate> = updates
        .iter()
        .filter(|u| u.table == activity.table)
        .collect();
    let total_calls: f64 = on_table
        .iter()
        .map(|u| u.calls_per_day)
        .fold(0.0, |a, b| a + b);
    let lost_share = match columns {
        // No HOT update to lose.
        _ if hot == Some(0.0) => Some(0.0),
        _ if on_table.is_empty() || total_calls <= 0.0 => {
            notes.push(format!(
                "{}: the workload has no UPDATE of this table, so which HOT updates the index \
                 would end is unknown",
                activity.table
            ));
            None
        }
        None => {
            notes.push(
                "the index has expressions: every update of a column they read stops being \
                 HOT, and pgplan cannot tell which columns those are"
                    .into(),
            );
            None
        }
        Some(cols) => {
            let setting: f64 = on_table
                .iter()
                .filter(|u| u.set_columns.iter().any(|c| cols.contains(c)))
                .map(|u| u.calls_per_day)
                // From +0.0: an empty f64 sum is -0.0, and JSON would print it.
                .fold(0.0, |a, b| a + b);
            Some(setting / total_calls)
        }
    };
    let hot_lost = match (hot, lost_share) {
        (Some(h), Some(share)) => Some(h * share),
        _ => None,
    };
    // Every insert adds an entry when the row is in the index; so does every update that is
    // not HOT (those that already were not, and those the index makes so). A HOT update adds
    // none.
    let entries = match (inserts, updates_per_day, hot) {
        (Some(i), Some(u), Some(h)) => {
            Some((i + (u - h).max(0.0) + hot_lost.unwrap_or(0.0)) * entries_per_insert)
        }
        _ => None,
    };
    // A lost HOT update also adds an entry to each of the table's other indexes.
    let other_entries = hot_lost.map(|l| l * activity.index_count);
    let pages = entries.map(|e| {
        e * entry_cost.pages_written + other_entries.unwrap_or(0.0) * entry_cost.pages_written
    });
    let wal = entries
        .map(|e| e * entry_cost.wal_bytes + other_entries.unwrap_or(0.0) * entry_cost.wal_bytes);
    WriteCost {
        table: activity.table.clone(),
        inserts_per_day: inserts,
        updates_per_day,
        hot_updates_per_day: hot,
        deletes_per_day: deletes,
        entries_per_insert,
        hot_updates_lost_per_day: hot_lost,
        index_entries_per_day: entries,
        write_pages_added_per_day: pages,
        wal_bytes_added_per_day: wal,
        entry_cost,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn activity() -> TableActivity {
        TableActivity {
            table: "public.accounts".into(),
            inserts: 1_000.0,
            updates: 100_000.0,
            hot_updates: 90_000.0,
            deletes: 0.0,
            window_seconds: Some(2.0 * DAY),
            index_count: 2.0,
        }
    }

    fn update(cols: &[&str], calls: f64) -> WorkloadUpdate {
        WorkloadUpdate {
            table: "public.accounts".into(),
            set_columns: cols.iter().map(|c| c.to_string()).collect(),
            calls_per_day: calls,
        }
    }

    const COST: EntryCost = EntryCost {
        pages_written: 1.0,
        wal_bytes: 100.0,
        estimated: true,
    };

    #[test]
    fn no_update_of_a_covered_column_loses_zero_never_negative_zero() {
        let cols = vec!["balance".to_owned()];
        let w = write_cost(
            &activity(),
            Some(&cols),
            1.0,
            &[update(&["note"], 1.0)],
            COST,
        );
        let lost = w.hot_updates_lost_per_day.unwrap();
        assert!(lost == 0.0 && lost.is_sign_positive(), "{lost:?}");
    }

    #[test]
    fn updates_that_set_a_covered_column_stop_being_hot() {
        let cols = vec!["balance".to_owned()];
        let updates = [update(&["balance"], 3.0), update(&["note"], 1.0)];
        let w = write_cost(&activity(), Some(&cols), 1.0, &updates, COST);
        assert_eq!(w.hot_updates_per_day, Some(45_000.0));
        // Three calls in four set balance: three quarters of the HOT updates are lost.
        assert_eq!(w.hot_updates_lost_per_day, Some(33_750.0));
        // 500 inserts + 5,000 non-HOT updates + 33,750 newly non-HOT, per day.
        assert_eq!(w.index_entries_per_day, Some(39_250.0));
        // And each lost HOT update writes to the two existing indexes too.
        assert_eq!(w.write_pages_added_per_day, Some(39_250.0 + 67_500.0));
        assert_eq!(
            w.wal_bytes_added_per_day,
            Some(100.0 * (39_250.0 + 67_500.0))
        );
    }

    #[test]
    fn a_partial_index_takes_its_share_and_unknowns_are_said() {
        let cols = vec!["status".to_owned()];
        let w = write_cost(&activity(), Some(&cols), 0.1, &[], COST);
        assert_eq!(w.hot_updates_lost_per_day, None);
        assert!(
            w.notes.iter().any(|n| n.contains("no UPDATE")),
            "{:?}",
            w.notes
        );
        assert!((w.index_entries_per_day.unwrap() - 550.0).abs() < 1e-9);
        let mut unknown = activity();
        unknown.window_seconds = None;
        let w = write_cost(&unknown, Some(&cols), 1.0, &[], COST);
        assert_eq!(w.write_pages_added_per_day, None);
    }

    #[test]
    fn the_estimate_follows_the_entry_size() {
        let c = estimated_entry_cost(8192.0 * 100.0, 40_000.0);
        assert!(c.estimated);
        assert_eq!(c.pages_written, 1.0);
        assert!((c.wal_bytes - (20.48 + 64.0)).abs() < 1e-9);
    }
}
