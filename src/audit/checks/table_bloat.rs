//! table_bloat: tables whose heap is much larger than their rows need, estimated in Rust from
//! `reltuples`, `relpages` and column statistics, with a confidence and its reasons.
//!
//! Layout assumed (PostgreSQL's heap): a page has a 24-byte header; a row has a 23-byte header
//! (plus a null bitmap of one bit per column when it has nulls), MAXALIGNed, then its data with
//! each fixed-width value aligned to its type, MAXALIGNed, plus a 4-byte line pointer; pages are
//! filled to the table's fillfactor (100 by default). `avg_width` in `pg_stats` measures values
//! as stored, so compressed and TOASTed values count with their in-row size.

use foldhash::{HashMap, HashMapExt};

use crate::audit::snapshot::{Column, Table, TableKind};
use crate::audit::{Check, Context, Finding, Output, Severity};

use super::index_bloat::{
    Estimate, NotEstimated, align, column_map, confidence, maxalign, report_not_estimated,
};
use super::{bytes_words, count_words, qualified};

/// Tables smaller than this many pages are not estimated.
pub const MIN_PAGES: i64 = 128;
/// At least this share of the table estimated to be bloat...
pub const MIN_BLOAT_SHARE: f64 = 0.5;
/// ...and at least this many bytes, is a finding.
pub const MIN_BLOAT_BYTES: f64 = 10.0 * 1024.0 * 1024.0;

const PAGE_HEADER: f64 = 24.0;
const ROW_HEADER: f64 = 23.0;
const LINE_POINTER: f64 = 4.0;

/// Estimates a table's expected heap size from its rows.
pub fn estimate(
    table: &Table,
    columns: &[&Column],
    block_size: f64,
) -> Result<Estimate, NotEstimated> {
    if table.reltuples < 0.0 || (table.reltuples == 0.0 && table.relpages > 0) {
        return Err(NotEstimated::NoRowCount);
    }
    let mut reasons = Vec::new();
    let mut data = 0.0;
    let mut nulls = false;
    let live: Vec<&&Column> = columns.iter().filter(|c| !c.dropped).collect();
    let dropped = columns.len() - live.len();
    if dropped > 0 {
        reasons.push(format!(
            "{dropped} dropped column(s) still take space in rows written before the drop"
        ));
    }
    let mut unknown_fixed = Vec::new();
    for c in &live {
        let (width, null_frac) = match (c.avg_width, c.null_frac) {
            (Some(w), n) => (w, n.unwrap_or(0.0)),
            (None, _) if c.type_length > 0 => {
                unknown_fixed.push(c.name.as_str());
                (c.type_length as f64, 0.0)
            }
            (None, _) => return Err(NotEstimated::NoColumnStatistics),
        };
        nulls |= null_frac > 0.0;
        if c.type_length > 0 {
            data = align(data, c.type_align);
        }
        data += width * (1.0 - null_frac);
    }
    if !unknown_fixed.is_empty() {
        reasons.push(format!(
            "no statistics for column(s) {}: their fixed width is used and nulls are ignored",
            unknown_fixed.join(", ")
        ));
    }
    let bitmap = if nulls {
        ((live.len() + dropped) as f64 / 8.0).ceil()
    } else {
        0.0
    };
    let row = maxalign(ROW_HEADER + bitmap) + maxalign(data) + LINE_POINTER;
    let fillfactor = table.reloption_f64("fillfactor").unwrap_or(100.0) / 100.0;
    let usable = block_size - PAGE_HEADER;
    // MaxHeapTuplesPerPage: a page holds at most this many line pointers.
    let max_rows = (usable / (maxalign(ROW_HEADER) + LINE_POINTER)).floor();
    let per_page = (usable * fillfactor / row).floor().clamp(1.0, max_rows);
    let expected = (table.reltuples / per_page).ceil();
    Ok(Estimate {
        actual_pages: table.relpages as f64,
        expected_pages: expected,
        confidence: confidence(reasons, false),
    })
}

pub fn run(ctx: &Context, out: &mut Output) {
    let snapshot = ctx.reference.snapshot;
    let block_size = snapshot.settings.block_size_bytes;
    let by_key = column_map(&snapshot.columns);
    let mut by_table: HashMap<u32, Vec<&Column>> = HashMap::new();
    for c in by_key.values() {
        by_table.entry(c.table_oid).or_default().push(c);
    }
    let mut not_estimated: HashMap<NotEstimated, usize> = HashMap::new();
    for table in &snapshot.tables {
        if table.kind == TableKind::Partitioned
            || table.relpages < MIN_PAGES
            || !ctx.table_big_enough(table)
        {
            continue;
        }
        let mut columns = by_table.get(&table.oid).cloned().unwrap_or_default();
        columns.sort_by_key(|c| c.attnum);
        if columns.is_empty() {
            continue;
        }
        let mut estimate = match estimate(table, &columns, block_size) {
            Ok(e) => e,
            Err(why) => {
                *not_estimated.entry(why).or_default() += 1;
                continue;
            }
        };
        if let Some(m) = ctx
            .primary_row(table)
            .and_then(|t| t.stats.n_mod_since_analyze)
            && m as f64 > 0.2 * table.reltuples.max(1.0)
        {
            estimate.confidence = confidence(
                estimate
                    .confidence
                    .reasons
                    .iter()
                    .cloned()
                    .chain([format!(
                        "the row count is from before {} modifications (ANALYZE first)",
                        count_words(m as f64)
                    )])
                    .collect(),
                false,
            );
        }
        let bloat_bytes = estimate.bloat_pages() * block_size;
        if estimate.bloat_share() < MIN_BLOAT_SHARE || bloat_bytes < MIN_BLOAT_BYTES {
            continue;
        }
        let severity = if estimate.confidence.level == "low" {
            Severity::Info
        } else {
            Severity::Warning
        };
        let name = qualified(&table.schema, &table.name);
        let message = format!(
            "{name} is about {:.0}% bloat: {} pages where its {} rows need about {} (≈{} to \
             reclaim; {} confidence)",
            estimate.bloat_share() * 100.0,
            count_words(estimate.actual_pages),
            count_words(table.reltuples.max(0.0)),
            count_words(estimate.expected_pages),
            bytes_words(bloat_bytes),
            estimate.confidence.level
        );
        let mut finding = Finding::new(Check::TableBloat, severity, message)
            .on_table(table)
            .evidence("table_pages", estimate.actual_pages)
            .evidence("expected_pages", estimate.expected_pages)
            .evidence("estimated_bloat_bytes", bloat_bytes)
            .evidence("estimated_bloat_percent", estimate.bloat_share() * 100.0)
            .fix(format!(
                "-- rewrites the table under an ACCESS EXCLUSIVE lock (pg_repack does it online)\n\
                 VACUUM (FULL, ANALYZE, VERBOSE) {name};"
            ));
        finding.confidence = Some(Box::new(estimate.confidence));
        out.findings.push(finding);
    }
    report_not_estimated(out, Check::TableBloat, "table(s)", &not_estimated);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;

    #[test]
    fn a_mostly_empty_table_is_bloated() {
        let mut p = primary();
        // 100,000 rows of (int4, int4): 24 + 8 + 4 = 36 bytes, 226 per page → 443 pages.
        let mut sparse = table(10, "sparse");
        sparse.relpages = 5000;
        let mut packed = table(11, "packed");
        packed.relpages = 450;
        p.columns = vec![
            int_column(&sparse, 1, "a"),
            int_column(&sparse, 2, "b"),
            int_column(&packed, 1, "a"),
            int_column(&packed, 2, "b"),
        ];
        p.tables = vec![sparse, packed];
        let report = audit_nodes(vec![("p", p)]);
        let found: Vec<_> = findings_of(&report, Check::TableBloat);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].table.as_deref(), Some("sparse"));
        assert_eq!(found[0].evidence_value("expected_pages"), Some(443.0));
        assert_eq!(found[0].severity, Severity::Warning);
        assert!(
            found[0]
                .fix
                .as_deref()
                .unwrap()
                .ends_with("VACUUM (FULL, ANALYZE, VERBOSE) public.sparse;")
        );
    }

    #[test]
    fn dropped_columns_and_missing_stats_lower_confidence() {
        let t = table(10, "t");
        let mut a = int_column(&t, 1, "a");
        a.avg_width = None;
        let mut gone = int_column(&t, 2, "........pg.dropped.2........");
        gone.dropped = true;
        let e = estimate(&t, &[&a, &gone], 8192.0).unwrap();
        assert_eq!(e.confidence.level, "low");
        assert_eq!(e.confidence.reasons.len(), 2);
    }
}
