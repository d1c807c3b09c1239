//! What only a live server knows, added to a plan's findings: for a misestimate whether the
//! table's statistics are stale (`n_mod_since_analyze` against its autoanalyze threshold) and
//! which extended statistics it has; for heap fetches the table's all-visible share and its last
//! vacuum; for a spill the session's `work_mem` and `hash_mem_multiplier`.

use crate::audit::checks::age_words;
use crate::format::count;
use crate::plan::{Analysis, Finding, FindingKind, NodeId, Plan};
use crate::sql::quote_ident;

/// A table's statistics as the server holds them (`pg_class`, `pg_stat_all_tables`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableStatistics {
    /// `schema.table`, quoted as needed (as [`relation_name`] spells a plan's relation).
    pub table: String,
    pub reltuples: f64,
    pub relpages: f64,
    pub relallvisible: f64,
    pub n_live_tup: Option<f64>,
    pub n_mod_since_analyze: Option<f64>,
    /// `autovacuum_analyze_threshold` and `..._scale_factor`: the table's own, else the server's.
    pub analyze_threshold: f64,
    pub analyze_scale_factor: f64,
    /// Since the later of `last_analyze` and `last_autoanalyze`; `None` when none is on record.
    pub last_analyze_age_seconds: Option<f64>,
    /// Whether that later analyze was autovacuum's.
    pub last_analyze_auto: bool,
    pub last_vacuum_age_seconds: Option<f64>,
    pub last_vacuum_auto: bool,
}

impl TableStatistics {
    /// Rows modified since the last analyze past which autovacuum analyzes the table:
    /// `threshold + scale_factor × reltuples` (reltuples -1, never counted, as 0).
    pub fn autoanalyze_threshold(&self) -> f64 {
        self.analyze_threshold + self.analyze_scale_factor * self.reltuples.max(0.0)
    }
}

/// An extended statistics object (`CREATE STATISTICS`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExtendedStatistics {
    pub table: String,
    pub name: String,
    /// `stxkind`: `d`, `f`, `m`, `e`.
    pub kinds: Vec<String>,
    pub columns: Vec<String>,
}

impl ExtendedStatistics {
    fn describe(&self) -> String {
        let kinds: Vec<&str> = self
            .kinds
            .iter()
            .map(|k| match k.as_str() {
                "d" => "ndistinct",
                "f" => "dependencies",
                "m" => "mcv",
                "e" => "expressions",
                other => other,
            })
            .collect();
        let columns = if self.columns.is_empty() {
            "expressions".to_owned()
        } else {
            self.columns.join(", ")
        };
        format!("{} ({}) on ({columns})", self.name, kinds.join(", "))
    }
}

/// The memory settings of the transaction that ran the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionMemory {
    pub work_mem_kb: f64,
    pub hash_mem_multiplier: f64,
}

/// Everything the server told pgplan beside the plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveFacts {
    pub tables: Vec<TableStatistics>,
    pub extended: Vec<ExtendedStatistics>,
    pub memory: Option<SessionMemory>,
}

/// A plan node's relation as `schema.table`, quoted as needed (VERBOSE plans name the schema).
pub fn relation_name(plan: &Plan, id: NodeId) -> Option<String> {
    let node = &plan.nodes[id];
    match (&node.schema, &node.relation_name) {
        (Some(schema), Some(rel)) => Some(format!("{}.{}", quote_ident(schema), quote_ident(rel))),
        _ => None,
    }
}

/// The tables a finding is about: the node's own relation, else (a join, an aggregate) the
/// relations scanned beneath it.
pub fn finding_tables(plan: &Plan, node: NodeId) -> Vec<String> {
    if let Some(name) = relation_name(plan, node) {
        return vec![name];
    }
    let mut tables = Vec::new();
    let mut stack = vec![node];
    while let Some(id) = stack.pop() {
        if let Some(name) = relation_name(plan, id)
            && !tables.contains(&name)
        {
            tables.push(name);
        }
        stack.extend(plan.children(id).iter().rev());
    }
    tables
}

/// The tables whose statistics the findings of `analysis` want read.
pub fn tables_to_read(analysis: &Analysis) -> Vec<String> {
    let mut tables: Vec<String> = Vec::new();
    for f in &analysis.findings {
        if !matches!(f.kind, FindingKind::Misestimate | FindingKind::HeapFetches) {
            continue;
        }
        let Some(node) = f.node else { continue };
        for t in finding_tables(&analysis.plan, node) {
            if !tables.contains(&t) {
                tables.push(t);
            }
        }
    }
    tables
}

/// A memory setting as PostgreSQL shows it: `4MB`, `64kB`, `1GB`.
fn memory_setting(kb: f64) -> String {
    let kb = kb.round() as u64;
    if kb > 0 && kb.is_multiple_of(1024 * 1024) {
        format!("{}GB", kb / (1024 * 1024))
    } else if kb > 0 && kb.is_multiple_of(1024) {
        format!("{}MB", kb / 1024)
    } else {
        format!("{kb}kB")
    }
}

fn multiplier(value: f64) -> String {
    crate::plan::hash_mem::show(value)
}

/// "12 min ago by autovacuum", "3.0 days ago (manual)".
fn when(age: f64, auto: bool) -> String {
    format!(
        "{} ago ({})",
        age_words(age),
        if auto { "autovacuum" } else { "manual" }
    )
}

/// Adds the live facts to each finding they bear on: a sentence to the message, the fix first
/// when the facts name one, and the figures to the evidence.
pub fn enrich(analysis: &mut Analysis, facts: &LiveFacts) {
    let plan = &analysis.plan;
    for f in &mut analysis.findings {
        match f.kind {
            FindingKind::Misestimate => {
                if let Some(node) = f.node {
                    for table in finding_tables(plan, node) {
                        statistics_freshness(f, &table, facts);
                    }
                }
            }
            FindingKind::HeapFetches => {
                if let Some(table) = f.node.and_then(|n| relation_name(plan, n)) {
                    visibility(f, &table, facts);
                }
            }
            FindingKind::SortSpill | FindingKind::HashBatches | FindingKind::HashAggregateSpill => {
                if let Some(memory) = facts.memory {
                    f.message.push_str(&format!(
                        "; this session runs with work_mem {} and hash_mem_multiplier {}",
                        memory_setting(memory.work_mem_kb),
                        multiplier(memory.hash_mem_multiplier)
                    ));
                    f.evidence.push(("session_work_mem_kb", memory.work_mem_kb));
                    f.evidence
                        .push(("session_hash_mem_multiplier", memory.hash_mem_multiplier));
                }
            }
            _ => {}
        }
    }
}

fn statistics_freshness(f: &mut Finding, table: &str, facts: &LiveFacts) {
    let Some(stats) = facts.tables.iter().find(|t| t.table == table) else {
        return;
    };
    let threshold = stats.autoanalyze_threshold();
    let modified = stats.n_mod_since_analyze.unwrap_or(0.0);
    let extended: Vec<String> = facts
        .extended
        .iter()
        .filter(|x| x.table == table)
        .map(ExtendedStatistics::describe)
        .collect();
    let sentence = match stats.last_analyze_age_seconds {
        None => {
            f.hint = format!(
                "Run ANALYZE {table} first: it has never been analyzed. {}",
                f.hint
            );
            format!(
                "{table} has never been analyzed ({} rows modified since its statistics were \
                 reset, autoanalyze threshold {})",
                count(modified),
                count(threshold.round())
            )
        }
        Some(age) if modified > threshold => {
            f.hint = format!(
                "Run ANALYZE {table} first: its statistics are stale. {}",
                f.hint
            );
            format!(
                "the statistics of {table} are stale: {} rows modified since its last analyze {}, past \
                 its autoanalyze threshold of {}",
                count(modified),
                when(age, stats.last_analyze_auto),
                count(threshold.round())
            )
        }
        Some(age) => {
            f.hint = if extended.is_empty() {
                format!(
                    "the statistics of {table} are fresh, so the estimate is off for another reason, \
                     most often correlated columns. {}",
                    f.hint
                )
            } else {
                format!(
                    "the statistics of {table} are fresh and it has extended statistics: check that \
                     they cover the condition's columns with the kinds it needs. {}",
                    f.hint
                )
            };
            format!(
                "the statistics of {table} are not stale: {} rows modified since its last analyze {}, \
                 within its autoanalyze threshold of {}",
                count(modified),
                when(age, stats.last_analyze_auto),
                count(threshold.round())
            )
        }
    };
    f.message.push_str("; ");
    f.message.push_str(&sentence);
    if extended.is_empty() {
        f.message
            .push_str(&format!("; {table} has no extended statistics"));
    } else {
        f.message.push_str(&format!(
            "; extended statistics on {table}: {}",
            extended.join(", ")
        ));
    }
    f.evidence.push(("n_mod_since_analyze", modified));
    f.evidence
        .push(("autoanalyze_threshold_rows", threshold.round()));
    if let Some(age) = stats.last_analyze_age_seconds {
        f.evidence.push(("last_analyze_age_seconds", age.round()));
    }
    f.evidence
        .push(("extended_statistics", extended.len() as f64));
}

fn visibility(f: &mut Finding, table: &str, facts: &LiveFacts) {
    let Some(stats) = facts.tables.iter().find(|t| t.table == table) else {
        return;
    };
    let vacuumed = match stats.last_vacuum_age_seconds {
        Some(age) => format!("last vacuumed {}", when(age, stats.last_vacuum_auto)),
        None => "never vacuumed".to_owned(),
    };
    if stats.relpages > 0.0 {
        let share = (stats.relallvisible / stats.relpages).min(1.0);
        // relallvisible is what the last VACUUM (or ANALYZE) counted; writes since then clear
        // visibility-map bits without updating it.
        f.message.push_str(&format!(
            "; pg_class counts {} of the {} pages of {table} all-visible (as of its last VACUUM or \
             ANALYZE), {vacuumed}",
            percent(share),
            count(stats.relpages)
        ));
        f.evidence.push(("all_visible_share", share));
    } else {
        f.message.push_str(&format!(
            "; {table} has no page count in pg_class yet, {vacuumed}"
        ));
    }
    if let Some(age) = stats.last_vacuum_age_seconds {
        f.evidence.push(("last_vacuum_age_seconds", age.round()));
    }
}

/// A share as a percentage that never rounds 99.6% up to "100%" or 0.4% down to "0%".
fn percent(share: f64) -> String {
    let pct = share * 100.0;
    if pct > 99.0 && pct < 100.0 {
        format!("{:.1}%", pct.min(99.9))
    } else if pct > 0.0 && pct < 1.0 {
        format!("{:.1}%", pct.max(0.1))
    } else {
        format!("{pct:.0}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;

    /// A Seq Scan estimated at 10 rows that returned 100,000, under an Index Only Scan that
    /// fetched from the heap for all of its rows, and a sort that spilled.
    fn analysis() -> Analysis {
        let json = r#"{"Plan": {"Node Type": "Nested Loop", "Join Type": "Inner",
          "Plan Rows": 10, "Actual Startup Time": 1, "Actual Total Time": 90,
          "Actual Rows": 100000, "Actual Loops": 1, "Plans": [
            {"Node Type": "Seq Scan", "Relation Name": "events", "Schema": "public",
             "Alias": "events", "Plan Rows": 10, "Actual Startup Time": 1,
             "Actual Total Time": 20, "Actual Rows": 100000, "Actual Loops": 1},
            {"Node Type": "Index Only Scan", "Relation Name": "Tenants", "Schema": "public",
             "Index Name": "tenants_pkey", "Alias": "t", "Plan Rows": 1,
             "Actual Startup Time": 0.01, "Actual Total Time": 0.01, "Actual Rows": 1,
             "Actual Loops": 100000, "Heap Fetches": 100000}]}}"#;
        Analysis::of(parse_plan(json).unwrap())
    }

    fn stats(table: &str) -> TableStatistics {
        TableStatistics {
            table: table.into(),
            reltuples: 100_000.0,
            relpages: 1_000.0,
            relallvisible: 120.0,
            n_live_tup: Some(100_000.0),
            n_mod_since_analyze: Some(60_000.0),
            analyze_threshold: 50.0,
            analyze_scale_factor: 0.1,
            last_analyze_age_seconds: Some(3.0 * 86_400.0),
            last_analyze_auto: true,
            last_vacuum_age_seconds: Some(7_200.0),
            last_vacuum_auto: false,
        }
    }

    fn finding(a: &Analysis, kind: FindingKind) -> &Finding {
        a.findings.iter().find(|f| f.kind == kind).unwrap()
    }

    #[test]
    fn a_misestimate_says_whether_the_statistics_are_stale_and_which_extended_ones_exist() {
        let mut a = analysis();
        assert_eq!(tables_to_read(&a), ["public.events", r#"public."Tenants""#]);
        let facts = LiveFacts {
            tables: vec![stats("public.events")],
            extended: vec![],
            memory: None,
        };
        enrich(&mut a, &facts);
        let scan = a
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::Misestimate && f.node == Some(1))
            .unwrap();
        assert!(
            scan.message.ends_with(
                "; the statistics of public.events are stale: 60,000 rows modified since its last \
                 analyze 3.0 days ago (autovacuum), past its autoanalyze threshold of 10,050; \
                 public.events has no extended statistics"
            ),
            "{}",
            scan.message
        );
        assert!(
            scan.hint
                .starts_with("Run ANALYZE public.events first: its statistics are stale. "),
            "{}",
            scan.hint
        );
        assert!(
            scan.evidence
                .contains(&("autoanalyze_threshold_rows", 10_050.0))
        );

        // Fresh statistics, and an extended statistics object: said so, no ANALYZE advised.
        let mut a = analysis();
        let mut fresh = stats("public.events");
        fresh.n_mod_since_analyze = Some(12.0);
        let facts = LiveFacts {
            tables: vec![fresh],
            extended: vec![ExtendedStatistics {
                table: "public.events".into(),
                name: "public.events_stx".into(),
                kinds: vec!["d".into(), "f".into()],
                columns: vec!["tenant_id".into(), "status".into()],
            }],
            memory: None,
        };
        enrich(&mut a, &facts);
        let scan = a
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::Misestimate && f.node == Some(1))
            .unwrap();
        assert!(
            scan.message.ends_with(
                "; the statistics of public.events are not stale: 12 rows modified since its last \
                 analyze 3.0 days ago (autovacuum), within its autoanalyze threshold of 10,050; \
                 extended statistics on public.events: public.events_stx (ndistinct, \
                 dependencies) on (tenant_id, status)"
            ),
            "{}",
            scan.message
        );
        assert!(
            scan.hint.starts_with(
                "the statistics of public.events are fresh and it has extended statistics: check that \
                 they cover the condition's columns"
            ),
            "{}",
            scan.hint
        );

        // Never analyzed.
        let mut a = analysis();
        let mut never = stats("public.events");
        never.last_analyze_age_seconds = None;
        enrich(
            &mut a,
            &LiveFacts {
                tables: vec![never],
                ..LiveFacts::default()
            },
        );
        let scan = finding(&a, FindingKind::Misestimate);
        assert!(
            scan.message
                .contains("public.events has never been analyzed"),
            "{}",
            scan.message
        );
    }

    #[test]
    fn heap_fetches_say_how_much_is_all_visible_and_when_it_was_vacuumed() {
        let mut a = analysis();
        enrich(
            &mut a,
            &LiveFacts {
                tables: vec![stats(r#"public."Tenants""#)],
                ..LiveFacts::default()
            },
        );
        let f = finding(&a, FindingKind::HeapFetches);
        assert!(
            f.message.ends_with(
                r#"; pg_class counts 12% of the 1,000 pages of public."Tenants" all-visible (as of its last VACUUM or ANALYZE), last vacuumed 2.0 h ago (manual)"#
            ),
            "{}",
            f.message
        );
        assert!(f.evidence.contains(&("all_visible_share", 0.12)));
    }

    #[test]
    fn spills_name_the_session_s_memory_settings() {
        let json = r#"{"Plan": {"Node Type": "Sort", "Plan Rows": 10, "Actual Startup Time": 1,
          "Actual Total Time": 9, "Actual Rows": 10, "Actual Loops": 1,
          "Sort Method": "external merge", "Sort Space Used": 2000, "Sort Space Type": "Disk",
          "Plans": [{"Node Type": "Seq Scan", "Relation Name": "t", "Plan Rows": 10,
          "Actual Startup Time": 1, "Actual Total Time": 2, "Actual Rows": 10,
          "Actual Loops": 1}]}}"#;
        let mut a = Analysis::of(parse_plan(json).unwrap());
        enrich(
            &mut a,
            &LiveFacts {
                memory: Some(SessionMemory {
                    work_mem_kb: 4096.0,
                    hash_mem_multiplier: 2.0,
                }),
                ..LiveFacts::default()
            },
        );
        let f = finding(&a, FindingKind::SortSpill);
        assert!(
            f.message
                .ends_with("; this session runs with work_mem 4MB and hash_mem_multiplier 2"),
            "{}",
            f.message
        );
        assert_eq!(memory_setting(64.0), "64kB");
        assert_eq!(memory_setting(1024.0 * 1024.0), "1GB");
    }
}
