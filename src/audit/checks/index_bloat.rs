//! index_bloat: btree indexes much larger than their entries need, estimated in Rust from
//! `reltuples`, `relpages` and the table's column statistics (the usual SQL estimate takes a
//! minute on 50,000 indexes; this takes milliseconds). Each estimate carries a confidence and the
//! reasons it cannot be trusted further.
//!
//! Layout assumed (PostgreSQL's btree): a page has a 24-byte header and 16 bytes of btree
//! special space; a leaf entry is an 8-byte IndexTupleData (plus a null bitmap when values can be
//! null) and the key data, MAXALIGNed, plus a 4-byte line pointer; leaves are filled to the
//! index's fillfactor (90 by default), inner pages to 70%.

use foldhash::{HashMap, HashMapExt};

use crate::audit::snapshot::{Column, Index, reloption};
use crate::audit::{Check, Confidence, Context, Finding, Output, Severity};

use super::{bytes_words, count_words, qualified};

/// Indexes smaller than this many pages are not estimated.
pub const MIN_PAGES: i64 = 128;
/// At least this share of the index estimated to be bloat...
pub const MIN_BLOAT_SHARE: f64 = 0.5;
/// ...and at least this many bytes, is a finding.
pub const MIN_BLOAT_BYTES: f64 = 10.0 * 1024.0 * 1024.0;

const PAGE_HEADER: f64 = 24.0;
const BTREE_SPECIAL: f64 = 16.0;
const INDEX_TUPLE_HEADER: f64 = 8.0;
const INDEX_NULL_BITMAP: f64 = 4.0;
const LINE_POINTER: f64 = 4.0;
const MAXALIGN: f64 = 8.0;
const INNER_FILL: f64 = 0.70;

pub fn maxalign(bytes: f64) -> f64 {
    (bytes / MAXALIGN).ceil() * MAXALIGN
}

/// An estimate and how far to trust it.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub actual_pages: f64,
    pub expected_pages: f64,
    pub confidence: Confidence,
}

impl Estimate {
    pub fn bloat_pages(&self) -> f64 {
        (self.actual_pages - self.expected_pages).max(0.0)
    }

    pub fn bloat_share(&self) -> f64 {
        if self.actual_pages <= 0.0 {
            0.0
        } else {
            self.bloat_pages() / self.actual_pages
        }
    }
}

/// Turns a list of reasons into a level: none is high, one is medium, more is low.
pub fn confidence(reasons: Vec<String>, force_low: bool) -> Confidence {
    let level = if force_low || reasons.len() >= 2 {
        "low"
    } else if reasons.len() == 1 {
        "medium"
    } else {
        "high"
    };
    Confidence { level, reasons }
}

/// Why an index cannot be estimated at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NotEstimated {
    Expression,
    NoColumnStatistics,
    NoRowCount,
}

/// Estimates a btree index's expected size from its entries.
pub fn estimate(
    index: &Index,
    columns: &HashMap<(u32, i16), &Column>,
    block_size: f64,
    major: u32,
    modified_since_analyze: Option<i64>,
) -> Result<Estimate, NotEstimated> {
    let tuples = if index.reltuples >= 0.0 {
        index.reltuples
    } else {
        return Err(NotEstimated::NoRowCount);
    };
    let mut reasons = Vec::new();
    let mut data = 0.0;
    let mut nulls = false;
    for c in &index.columns {
        if c.attnum <= 0 {
            return Err(NotEstimated::Expression);
        }
        let Some(col) = columns.get(&(index.table_oid, c.attnum)) else {
            return Err(NotEstimated::NoColumnStatistics);
        };
        let (width, null_frac) = match (col.avg_width, col.null_frac) {
            (Some(w), n) => (w, n.unwrap_or(0.0)),
            (None, _) if col.type_length > 0 => {
                reasons.push(format!(
                    "no statistics for column {}: its fixed width is used and nulls are ignored",
                    col.name
                ));
                (col.type_length as f64, 0.0)
            }
            (None, _) => return Err(NotEstimated::NoColumnStatistics),
        };
        nulls |= null_frac > 0.0;
        if col.type_length > 0 {
            data = align(data, col.type_align);
        }
        data += width * (1.0 - null_frac);
    }
    let header = INDEX_TUPLE_HEADER + if nulls { INDEX_NULL_BITMAP } else { 0.0 };
    let entry = maxalign(header + data) + LINE_POINTER;
    let fillfactor = reloption(&index.reloptions, "fillfactor")
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(90.0)
        / 100.0;
    let usable = block_size - PAGE_HEADER - BTREE_SPECIAL;
    let per_leaf = (usable * fillfactor / entry).floor().max(1.0);
    let leaves = (tuples / per_leaf).ceil().max(1.0);
    // Inner levels: one downlink per page below, until a single root.
    let per_inner = (usable * INNER_FILL / entry).floor().max(2.0);
    let mut level = leaves;
    let mut inner = 0.0;
    while level > 1.0 {
        level = (level / per_inner).ceil();
        inner += level;
    }
    let expected = 1.0 + leaves + inner; // the metapage

    if major >= 13
        && !index.unique
        && reloption(&index.reloptions, "deduplicate_items") != Some("off")
        && let Some(lead) = index.columns.first()
        && let Some(col) = columns.get(&(index.table_oid, lead.attnum))
        && let Some(n) = col.n_distinct
    {
        let distinct_share = if n < 0.0 { -n } else { n / tuples.max(1.0) };
        if distinct_share < 0.5 {
            reasons.push(format!(
                "btree deduplication (13+) may store the repeated values of {} compactly, so \
                 the real bloat may be larger than estimated",
                col.name
            ));
        }
    }
    if let Some(m) = modified_since_analyze
        && m as f64 > 0.2 * tuples.max(1.0)
    {
        reasons.push(format!(
            "the row count is from before {} modifications (ANALYZE the table first)",
            count_words(m as f64)
        ));
    }
    let actual = if index.relpages > 0 {
        index.relpages as f64
    } else {
        index.size_bytes.unwrap_or(0) as f64 / block_size
    };
    Ok(Estimate {
        actual_pages: actual,
        expected_pages: expected,
        confidence: confidence(reasons, false),
    })
}

/// Moves an offset to the type's alignment ('c' 1, 's' 2, 'i' 4, 'd' 8).
pub fn align(offset: f64, type_align: char) -> f64 {
    let a = match type_align {
        's' => 2.0,
        'i' => 4.0,
        'd' => 8.0,
        _ => 1.0,
    };
    (offset / a).ceil() * a
}

pub fn column_map(columns: &[Column]) -> HashMap<(u32, i16), &Column> {
    columns
        .iter()
        .map(|c| ((c.table_oid, c.attnum), c))
        .collect()
}

pub fn run(ctx: &Context, out: &mut Output) {
    let snapshot = ctx.reference.snapshot;
    let columns = column_map(&snapshot.columns);
    let block_size = snapshot.settings.block_size_bytes;
    let major = snapshot.server.major();
    let mut not_estimated: HashMap<NotEstimated, usize> = HashMap::new();
    for index in &snapshot.indexes {
        if index.access_method != "btree"
            || !index.valid
            || index.partitioned
            || index.relpages < MIN_PAGES
            || !ctx.index_big_enough(index)
        {
            continue;
        }
        let modified = ctx
            .primary_table(&index.schema, &index.table)
            .and_then(|t| t.stats.n_mod_since_analyze);
        let estimate = match estimate(index, &columns, block_size, major, modified) {
            Ok(e) => e,
            Err(why) => {
                *not_estimated.entry(why).or_default() += 1;
                continue;
            }
        };
        let bloat_bytes = estimate.bloat_pages() * block_size;
        if estimate.bloat_share() < MIN_BLOAT_SHARE || bloat_bytes < MIN_BLOAT_BYTES {
            continue;
        }
        let severity = if estimate.confidence.level == "low" {
            Severity::Info
        } else {
            Severity::Warning
        };
        let name = qualified(&index.schema, &index.name);
        let message = format!(
            "index {} on {} is about {:.0}% bloat: {} pages where its {} entries need about {} \
             (≈{} to reclaim; {} confidence)",
            index.name,
            qualified(&index.schema, &index.table),
            estimate.bloat_share() * 100.0,
            count_words(estimate.actual_pages),
            count_words(index.reltuples.max(0.0)),
            count_words(estimate.expected_pages.round()),
            bytes_words(bloat_bytes),
            estimate.confidence.level
        );
        let mut finding = Finding::new(Check::IndexBloat, severity, message)
            .on_index(index)
            .evidence("index_size_bytes", index.size_bytes.unwrap_or(0) as f64)
            .evidence("index_pages", estimate.actual_pages)
            .evidence("expected_pages", estimate.expected_pages.round())
            .evidence("estimated_bloat_bytes", bloat_bytes)
            .evidence("estimated_bloat_percent", estimate.bloat_share() * 100.0)
            .fix(format!("REINDEX INDEX CONCURRENTLY {name};"));
        finding.confidence = Some(Box::new(estimate.confidence));
        out.findings.push(finding);
    }
    report_not_estimated(out, Check::IndexBloat, "btree index(es)", &not_estimated);
}

pub fn report_not_estimated(
    out: &mut Output,
    check: Check,
    what: &str,
    counts: &HashMap<NotEstimated, usize>,
) {
    let mut reasons: Vec<(NotEstimated, usize)> = counts.iter().map(|(k, v)| (*k, *v)).collect();
    reasons.sort_by_key(|(k, _)| *k as u8);
    for (why, n) in reasons {
        let words = match why {
            NotEstimated::Expression => "they have expression columns, whose width is unknown",
            NotEstimated::NoColumnStatistics => {
                "a variable-width column has no statistics: never analyzed, or hidden from this \
                 role (pg_stats shows only columns it may SELECT)"
            }
            NotEstimated::NoRowCount => "never vacuumed or analyzed, so the row count is unknown",
        };
        out.skip(check, format!("{n} {what} not estimated: {words}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;

    #[test]
    fn a_sparse_index_is_bloated_and_a_packed_one_is_not() {
        let mut p = primary();
        let t = table(10, "t");
        // 100,000 int4 entries: 16 bytes + 4 pointer each, 365 per leaf at 90% → 274 leaves.
        let mut sparse = index(100, &t, "t_sparse", vec![col(1, "id")]);
        sparse.relpages = 3000;
        sparse.size_bytes = Some(3000 * 8192);
        let mut packed = index(101, &t, "t_packed", vec![col(1, "id")]);
        packed.relpages = 280;
        packed.unique = true;
        // Another operator class, so the two are not duplicates (a duplicate would be one
        // finding under that stronger reason, with its bloat as another reason).
        packed.columns[0].opclass = 3035;
        p.columns = vec![int_column(&t, 1, "id")];
        p.indexes = vec![sparse, packed];
        p.tables = vec![t];
        let report = audit_nodes(vec![("p", p)]);
        let found: Vec<_> = findings_of(&report, Check::IndexBloat);
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = found[0];
        assert_eq!(f.index.as_deref(), Some("t_sparse"));
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.evidence_value("expected_pages"), Some(276.0));
        assert_eq!(f.confidence.as_ref().unwrap().level, "high");
        assert_eq!(
            f.fix.as_deref(),
            Some("REINDEX INDEX CONCURRENTLY public.t_sparse;")
        );
    }

    #[test]
    fn hidden_statistics_are_reported_as_skipped() {
        let mut p = primary();
        let t = table(10, "t");
        let mut i = index(100, &t, "t_name", vec![col(2, "name")]);
        i.relpages = 3000;
        let mut name = int_column(&t, 2, "name");
        name.type_length = -1;
        name.avg_width = None;
        name.null_frac = None;
        p.columns = vec![name];
        p.indexes = vec![i];
        p.tables = vec![t];
        let report = audit_nodes(vec![("p", p)]);
        assert!(report.findings.iter().all(|f| f.check != Check::IndexBloat));
        assert!(report.skipped.iter().any(|s| s.check == Check::IndexBloat
            && s.reason.contains("1 btree index(es) not estimated")));
    }

    #[test]
    fn deduplication_lowers_confidence() {
        let t = table(10, "t");
        let i = index(100, &t, "t_status", vec![col(1, "status")]);
        let mut c = int_column(&t, 1, "status");
        c.n_distinct = Some(5.0);
        let columns = vec![c];
        let map = column_map(&columns);
        let e = estimate(&i, &map, 8192.0, 13, None).unwrap();
        assert_eq!(e.confidence.level, "medium");
        assert!(e.confidence.reasons[0].contains("deduplication"));
        let e = estimate(&i, &map, 8192.0, 12, None).unwrap();
        assert_eq!(e.confidence.level, "high");
    }
}
