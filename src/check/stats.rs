//! The statistics file of `pgplan stats export` and `import`: per table its `pg_class` figures
//! and its `pg_stats` rows, as PostgreSQL 18's `pg_restore_relation_stats` and
//! `pg_restore_attribute_stats` take them, and the matching of a file against the tables and
//! columns of the database it is imported into.

use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning or goes.
pub const STATS_VERSION: u32 = 1;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsFile {
    pub pgplan_stats: u32,
    /// The major version of the server the statistics were read from.
    pub server_major: u32,
    /// `--no-values`: the most-common-value lists (values and frequencies, and their element
    /// counterparts) were left out; histograms were kept.
    pub values_withheld: bool,
    /// Sorted by schema, then table.
    pub tables: Vec<TableStats>,
}

/// One table's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableStats {
    pub schema: String,
    pub table: String,
    pub relpages: i32,
    pub reltuples: f32,
    pub relallvisible: i32,
    /// PostgreSQL 18+.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relallfrozen: Option<i32>,
    /// Every column, in order, with its type as `format_type` writes it.
    pub columns: Vec<ColumnType>,
    /// One per `pg_stats` row, sorted by column then `inherited`.
    pub stats: Vec<ColumnStatsRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnType {
    pub name: String,
    #[serde(rename = "type")]
    pub type_name: String,
}

/// One `pg_stats` row. The value arrays are text (`{a,b}`), as `pg_restore_attribute_stats`
/// reads them with the column's own input function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnStatsRow {
    pub column: String,
    pub inherited: bool,
    pub null_frac: Option<f32>,
    pub avg_width: Option<i32>,
    pub n_distinct: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_vals: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_freqs: Option<Vec<f32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram_bounds: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_elems: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_elem_freqs: Option<Vec<f32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elem_count_histogram: Option<Vec<f32>>,
    /// PostgreSQL 17+ (range columns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_length_histogram: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_empty_frac: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_bounds_histogram: Option<String>,
}

impl ColumnStatsRow {
    /// Without its most-common-value lists (`--no-values`): the values, and their frequencies,
    /// which mean nothing without them.
    pub fn without_values(mut self) -> Self {
        self.most_common_vals = None;
        self.most_common_freqs = None;
        self.most_common_elems = None;
        self.most_common_elem_freqs = None;
        self
    }
}

impl StatsFile {
    pub fn new(server_major: u32, values_withheld: bool, mut tables: Vec<TableStats>) -> Self {
        tables.sort_by(|a, b| (&a.schema, &a.table).cmp(&(&b.schema, &b.table)));
        StatsFile {
            pgplan_stats: STATS_VERSION,
            server_major,
            values_withheld,
            tables,
        }
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    pub fn from_json(text: &str) -> Result<StatsFile, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
        match value.get("pgplan_stats").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(STATS_VERSION) => {}
            Some(v) => {
                return Err(format!(
                    "a statistics file of version {v}, and this pgplan reads version {STATS_VERSION}: export it again"
                ));
            }
            None => {
                return Err("not a pgplan statistics file (no \"pgplan_stats\" version)".into());
            }
        }
        serde_json::from_value(value)
            .map_err(|e| format!("not a valid pgplan statistics file ({e})"))
    }
}

/// What an import applies to one table, and what of the file does not match it.
#[derive(Debug, Clone, PartialEq)]
pub struct TablePlan<'a> {
    pub table: &'a TableStats,
    /// The rows whose column exists with the same type.
    pub rows: Vec<&'a ColumnStatsRow>,
    /// One sentence per mismatch ("column note is text here and varchar(20) in the file").
    pub mismatches: Vec<String>,
}

/// Matches a table of the file with the columns the database has (`None`: no such table).
/// Statistics of a column whose type differs are not applied: values of one type read with
/// another's input function would be wrong or refused.
pub fn match_table<'a>(table: &'a TableStats, here: Option<&[ColumnType]>) -> TablePlan<'a> {
    let name = format!("{}.{}", table.schema, table.table);
    let Some(here) = here else {
        return TablePlan {
            table,
            rows: Vec::new(),
            mismatches: vec![format!(
                "table {name} is not in this database: nothing applied to it"
            )],
        };
    };
    let mut mismatches = Vec::new();
    for c in &table.columns {
        match here.iter().find(|h| h.name == c.name) {
            None => mismatches.push(format!("column {name}.{} is not in this database", c.name)),
            Some(h) if h.type_name != c.type_name => mismatches.push(format!(
                "column {name}.{} is {} here and {} in the file: its statistics are not applied",
                c.name, h.type_name, c.type_name
            )),
            Some(_) => {}
        }
    }
    for h in here {
        if !table.columns.iter().any(|c| c.name == h.name) {
            mismatches.push(format!(
                "column {name}.{} has no statistics in the file (it is not in the exported table)",
                h.name
            ));
        }
    }
    let rows = table
        .stats
        .iter()
        .filter(|r| {
            let file_type = table.columns.iter().find(|c| c.name == r.column);
            let here_type = here.iter().find(|h| h.name == r.column);
            matches!((file_type, here_type), (Some(f), Some(h)) if f.type_name == h.type_name)
        })
        .collect();
    TablePlan {
        table,
        rows,
        mismatches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, t: &str) -> ColumnType {
        ColumnType {
            name: name.into(),
            type_name: t.into(),
        }
    }

    fn row(column: &str) -> ColumnStatsRow {
        ColumnStatsRow {
            column: column.into(),
            inherited: false,
            null_frac: Some(0.0),
            avg_width: Some(4),
            n_distinct: Some(-1.0),
            most_common_vals: Some("{a,b}".into()),
            most_common_freqs: Some(vec![0.5, 0.4]),
            histogram_bounds: Some("{1,5,9}".into()),
            correlation: Some(0.9),
            most_common_elems: None,
            most_common_elem_freqs: None,
            elem_count_histogram: None,
            range_length_histogram: None,
            range_empty_frac: None,
            range_bounds_histogram: None,
        }
    }

    fn table() -> TableStats {
        TableStats {
            schema: "public".into(),
            table: "orders".into(),
            relpages: 100,
            reltuples: 5000.0,
            relallvisible: 100,
            relallfrozen: None,
            columns: vec![
                col("id", "bigint"),
                col("status", "text"),
                col("note", "character varying(20)"),
            ],
            stats: vec![row("id"), row("note"), row("status")],
        }
    }

    #[test]
    fn matching_columns_apply_and_the_rest_is_named() {
        let t = table();
        let here = [
            col("id", "bigint"),
            col("status", "text"),
            col("note", "text"),
            col("extra", "integer"),
        ];
        let plan = match_table(&t, Some(&here));
        let applied: Vec<&str> = plan.rows.iter().map(|r| r.column.as_str()).collect();
        assert_eq!(applied, vec!["id", "status"]);
        assert_eq!(plan.mismatches.len(), 2, "{:?}", plan.mismatches);
        assert!(plan.mismatches[0].contains("note is text here and character varying(20)"));
        assert!(plan.mismatches[1].contains("extra has no statistics"));
        let missing = match_table(&t, None);
        assert!(missing.rows.is_empty());
        assert!(missing.mismatches[0].contains("not in this database"));
    }

    #[test]
    fn values_can_be_withheld_histograms_kept() {
        let r = row("status").without_values();
        assert_eq!(r.most_common_vals, None);
        assert_eq!(r.most_common_freqs, None);
        assert_eq!(r.histogram_bounds.as_deref(), Some("{1,5,9}"));
    }

    #[test]
    fn the_file_reads_back_sorted() {
        let mut other = table();
        other.table = "accounts".into();
        let f = StatsFile::new(17, false, vec![table(), other]);
        assert_eq!(f.tables[0].table, "accounts");
        assert_eq!(StatsFile::from_json(&f.to_json()).unwrap(), f);
        assert!(
            StatsFile::from_json("{}")
                .unwrap_err()
                .contains("not a pgplan statistics")
        );
    }
}
