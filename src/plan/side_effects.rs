//! What running a plan leaves behind that a rollback does not undo, read off the measured plan:
//! the index scans the statistics system counted (`idx_scan` in `pg_stat_user_indexes` is not
//! transactional), and the row versions a rolled-back write leaves as dead tuples.

use super::model::Plan;
use super::{Analysis, NodeId};

/// Index scans one run counted against an index.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexScansCounted {
    /// As plans name it (without schema).
    pub index: String,
    /// `Index Searches` where the server reports it (18+), else the node's loops: each
    /// (re)scan of an index counts once in `idx_scan`.
    pub scans: f64,
}

/// The indexes a measured run scanned and how many scans it counted against each, in plan
/// order. A plan without ANALYZE ran nothing and counted nothing.
pub fn index_scans_counted(analysis: &Analysis) -> Vec<IndexScansCounted> {
    let mut counted: Vec<IndexScansCounted> = Vec::new();
    for (id, node) in analysis.plan.nodes.iter().enumerate() {
        let Some(index) = &node.index_name else {
            continue;
        };
        let m = &analysis.metrics.nodes[id];
        if m.never_executed || node.actual.is_none() {
            continue;
        }
        let scans = node.index_searches.or(m.loops).unwrap_or(0.0);
        if scans <= 0.0 {
            continue;
        }
        match counted.iter_mut().find(|c| &c.index == index) {
            Some(c) => c.scans += scans,
            None => counted.push(IndexScansCounted {
                index: index.clone(),
                scans,
            }),
        }
    }
    counted
}

/// Row versions a rolled-back write left in a table.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadVersions {
    /// `schema.table` as the plan names it (VERBOSE), else the bare name.
    pub table: String,
    pub rows: f64,
}

/// The row versions one measured run of a write creates, which its rollback leaves behind as
/// dead tuples until VACUUM removes them: every row an INSERT inserted and every new version an
/// UPDATE wrote (a rolled-back DELETE only marks rows, which stay live). MERGE reports its
/// inserts and updates itself (15+). Triggers and cascades can write more.
pub fn dead_versions(analysis: &Analysis) -> Vec<DeadVersions> {
    let plan = &analysis.plan;
    let mut out: Vec<DeadVersions> = Vec::new();
    for (id, node) in plan.nodes.iter().enumerate() {
        if node.node_type != "ModifyTable" || node.actual.is_none() {
            continue;
        }
        let rows = match node.operation.as_deref() {
            Some("Insert" | "Update") => first_child_rows(analysis, id),
            Some("Merge") => {
                let key = |k: &str| node.extra.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
                key("Tuples Inserted") + key("Tuples Updated")
            }
            _ => 0.0,
        };
        if rows <= 0.0 {
            continue;
        }
        let table = table_name(plan, id);
        match out.iter_mut().find(|d| d.table == table) {
            Some(d) => d.rows += rows,
            None => out.push(DeadVersions { table, rows }),
        }
    }
    out
}

/// The rows a ModifyTable's input produced (the rows it inserted or updated); an INSERT ... ON
/// CONFLICT DO NOTHING's conflicting rows wrote nothing.
fn first_child_rows(analysis: &Analysis, id: NodeId) -> f64 {
    let node = &analysis.plan.nodes[id];
    let conflicts = node
        .extra
        .get("Conflicting Tuples")
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0);
    let rows = analysis
        .plan
        .children(id)
        .first()
        .and_then(|&c| analysis.metrics.nodes[c].actual_rows_total)
        .unwrap_or(0.0);
    (rows - conflicts).max(0.0)
}

fn table_name(plan: &Plan, id: NodeId) -> String {
    let node = &plan.nodes[id];
    match (&node.schema, &node.relation_name) {
        (Some(s), Some(r)) => format!("{s}.{r}"),
        (None, Some(r)) => r.clone(),
        _ => "(unknown table)".to_owned(),
    }
}

/// Adds one run's counts into `total` (several runs of one command).
pub fn add_scans(total: &mut Vec<IndexScansCounted>, run: Vec<IndexScansCounted>) {
    for s in run {
        match total.iter_mut().find(|t| t.index == s.index) {
            Some(t) => t.scans += s.scans,
            None => total.push(s),
        }
    }
}

/// Adds one run's dead row versions into `total`.
pub fn add_dead(total: &mut Vec<DeadVersions>, run: Vec<DeadVersions>) {
    for d in run {
        match total.iter_mut().find(|t| t.table == d.table) {
            Some(t) => t.rows += d.rows,
            None => total.push(d),
        }
    }
}

/// What `subject` ("the run", "compare's runs") left behind that a rollback does not undo, in
/// words: the usage counters it increased, and the dead row versions of a rolled-back write.
pub fn side_effect_notes(
    subject: &str,
    scans: &[IndexScansCounted],
    dead: &[DeadVersions],
) -> Vec<String> {
    let count = crate::format::count;
    let mut notes = Vec::new();
    if !scans.is_empty() {
        let list: Vec<String> = scans
            .iter()
            .map(|s| {
                let noun = if s.scans == 1.0 { "scan" } else { "scans" };
                format!("{} (+{} {noun})", s.index, count(s.scans))
            })
            .collect();
        notes.push(format!(
            "{subject} increased the usage counters (idx_scan in pg_stat_user_indexes, which a \
             rollback does not undo) of {}: audit's unused and duplicate index checks count \
             these scans too",
            list.join(", ")
        ));
    }
    for d in dead {
        let noun = if d.rows == 1.0 {
            "dead row version"
        } else {
            "dead row versions"
        };
        notes.push(format!(
            "{subject} left about {} {noun} in {} (the rolled-back write's) until VACUUM removes \
             them (autovacuum counts them toward its next run)",
            count(d.rows),
            d.table
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;

    fn analysis(json: &str) -> Analysis {
        Analysis::of(parse_plan(json).unwrap())
    }

    #[test]
    fn index_scans_count_each_loop_or_the_reported_searches() {
        let a = analysis(
            r#"{"Plan": {"Node Type": "Nested Loop", "Join Type": "Inner", "Plan Rows": 1,
              "Actual Startup Time": 1, "Actual Total Time": 2, "Actual Rows": 3, "Actual Loops": 1,
              "Plans": [
                {"Node Type": "Index Scan", "Index Name": "a_pkey", "Relation Name": "a",
                 "Plan Rows": 3, "Actual Startup Time": 0, "Actual Total Time": 1,
                 "Actual Rows": 3, "Actual Loops": 1},
                {"Node Type": "Index Only Scan", "Index Name": "b_pkey", "Relation Name": "b",
                 "Plan Rows": 1, "Actual Startup Time": 0, "Actual Total Time": 0,
                 "Actual Rows": 1, "Actual Loops": 3, "Heap Fetches": 0}]}}"#,
        );
        assert_eq!(
            index_scans_counted(&a),
            [
                IndexScansCounted {
                    index: "a_pkey".into(),
                    scans: 1.0
                },
                IndexScansCounted {
                    index: "b_pkey".into(),
                    scans: 3.0
                }
            ]
        );
        let searches = analysis(
            r#"{"Plan": {"Node Type": "Index Scan", "Index Name": "a_pkey", "Relation Name": "a",
              "Plan Rows": 3, "Actual Startup Time": 0, "Actual Total Time": 1,
              "Actual Rows": 3, "Actual Loops": 1, "Index Searches": 4}}"#,
        );
        assert_eq!(index_scans_counted(&searches)[0].scans, 4.0);
        // Planned only: nothing ran.
        let planned = analysis(
            r#"{"Plan": {"Node Type": "Index Scan", "Index Name": "a_pkey", "Relation Name": "a",
              "Plan Rows": 3, "Total Cost": 8}}"#,
        );
        assert!(index_scans_counted(&planned).is_empty());
    }

    #[test]
    fn updates_and_inserts_leave_their_new_versions_and_deletes_none() {
        let modify = |operation: &str, rows: u32| {
            analysis(&format!(
                r#"{{"Plan": {{"Node Type": "ModifyTable", "Operation": "{operation}",
                  "Relation Name": "events", "Schema": "public", "Plan Rows": 0,
                  "Actual Startup Time": 1, "Actual Total Time": 9, "Actual Rows": 0,
                  "Actual Loops": 1, "Plans": [{{"Node Type": "Seq Scan",
                  "Relation Name": "events", "Schema": "public", "Plan Rows": 10,
                  "Actual Startup Time": 0, "Actual Total Time": 5, "Actual Rows": {rows},
                  "Actual Loops": 1}}]}}}}"#
            ))
        };
        assert_eq!(
            dead_versions(&modify("Update", 8000)),
            [DeadVersions {
                table: "public.events".into(),
                rows: 8000.0
            }]
        );
        assert_eq!(dead_versions(&modify("Insert", 5))[0].rows, 5.0);
        assert!(dead_versions(&modify("Delete", 8000)).is_empty());

        // Four runs of the UPDATE, in words.
        let mut total = Vec::new();
        for _ in 0..4 {
            add_dead(&mut total, dead_versions(&modify("Update", 2000)));
        }
        let mut scans = Vec::new();
        add_scans(
            &mut scans,
            vec![IndexScansCounted {
                index: "i".into(),
                scans: 1.0,
            }],
        );
        add_scans(
            &mut scans,
            vec![IndexScansCounted {
                index: "i".into(),
                scans: 3.0,
            }],
        );
        assert_eq!(
            side_effect_notes("compare's runs", &scans, &total),
            [
                "compare's runs increased the usage counters (idx_scan in pg_stat_user_indexes, \
                 which a rollback does not undo) of i (+4 scans): audit's unused and duplicate \
                 index checks count these scans too",
                "compare's runs left about 8,000 dead row versions in public.events (the \
                 rolled-back write's) until VACUUM removes them (autovacuum counts them toward \
                 its next run)"
            ]
        );
    }
}
