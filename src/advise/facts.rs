//! The catalog facts advise proposes from, as plain values: each table's columns with their
//! types, collations and `pg_stats` figures, its existing indexes in pieces, its size and
//! visibility map, its write counters, the extensions installed, and the relation names an
//! index's name must step over. `db::advise` reads them.

use std::collections::BTreeSet;

/// Everything advise knows about the database besides the plans.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub tables: Vec<TableFacts>,
    /// Extension names installed in the database (`pg_extension`).
    pub extensions: Vec<String>,
    /// (schema, name) of the relations of any kind (tables, indexes, sequences, views, ...) in
    /// the schemas of `tables` whose names an index on one of them could be given: the names
    /// CREATE INDEX without a name steps over, since one namespace holds every relation.
    pub taken_names: BTreeSet<(String, String)>,
}

impl Facts {
    /// The table a plan node names: by schema and name when the plan says the schema
    /// (VERBOSE), else by name alone when exactly one table has it.
    pub fn table(&self, schema: Option<&str>, name: &str) -> Option<&TableFacts> {
        match schema {
            Some(s) => self.tables.iter().find(|t| t.schema == s && t.name == name),
            None => {
                let mut found = self.tables.iter().filter(|t| t.name == name);
                let first = found.next()?;
                found.next().is_none().then_some(first)
            }
        }
    }

    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.iter().any(|e| e == name)
    }

    /// Whether a relation named `name` is in `schema`: an index of the tables read, or any
    /// relation [`Facts::taken_names`] holds.
    pub fn name_taken(&self, schema: &str, name: &str) -> bool {
        self.taken_names
            .contains(&(schema.to_owned(), name.to_owned()))
            || self
                .tables
                .iter()
                .filter(|t| t.schema == schema)
                .any(|t| t.name == name || t.indexes.iter().any(|i| i.name == name))
    }
}

/// One table (or materialized view).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableFacts {
    pub schema: String,
    pub name: String,
    /// Columns in attribute order, dropped ones left out.
    pub columns: Vec<ColumnFacts>,
    pub indexes: Vec<IndexFacts>,
    /// `pg_class.reltuples`; `None` when the table was never vacuumed or analyzed (-1 from 14 on).
    pub rows: Option<f64>,
    /// `pg_class.relpages`.
    pub pages: f64,
    /// `pg_class.relallvisible`: pages the visibility map marks all-visible, as of the last
    /// VACUUM or ANALYZE.
    pub all_visible_pages: f64,
    /// `pg_stat_user_tables` counters since the last reset, on this node.
    pub inserts: Option<f64>,
    pub updates: Option<f64>,
    pub deletes: Option<f64>,
    pub hot_updates: Option<f64>,
}

impl TableFacts {
    pub fn column(&self, name: &str) -> Option<&ColumnFacts> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The share of pages an index-only scan could answer without visiting the heap.
    pub fn all_visible_share(&self) -> Option<f64> {
        (self.pages > 0.0).then(|| (self.all_visible_pages / self.pages).min(1.0))
    }

    /// Whether rows are only ever added: updates and deletes together under 1% of inserts,
    /// over the counters' window. `None` when the counters are missing or still empty.
    pub fn append_only(&self) -> Option<bool> {
        let inserts = self.inserts?;
        let changed = self.updates? + self.deletes?;
        (inserts > 0.0).then_some(changed <= inserts * 0.01)
    }
}

/// One column.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnFacts {
    pub name: String,
    /// `format_type(atttypid, atttypmod)`: `text`, `integer[]`, `jsonb`, `tstzrange`.
    pub type_name: String,
    /// The column's collation when its type is collatable (`C`, `default`, `en_US`).
    pub collation: Option<String>,
    /// The database's default collation provider's `LC_COLLATE`, for a column whose collation
    /// is `default`.
    pub default_collation: Option<String>,
    pub stats: Option<ColumnStats>,
}

impl ColumnFacts {
    /// Whether text comparisons on this column follow byte order (the C or POSIX collation),
    /// so a btree answers `LIKE 'abc%'` without text_pattern_ops.
    pub fn byte_order_collation(&self) -> bool {
        let effective = match self.collation.as_deref() {
            Some("default") => self.default_collation.as_deref(),
            other => other,
        };
        matches!(effective, Some("C" | "POSIX" | "ucs_basic"))
    }

    pub fn is_array(&self) -> bool {
        self.type_name.ends_with("[]")
    }

    pub fn is_text(&self) -> bool {
        matches!(
            self.type_name.split('(').next().unwrap_or_default(),
            "text" | "character varying" | "character" | "citext" | "name"
        )
    }
}

/// `pg_stats` for one column (inherited = false), as text: the MCVs are cast to text so that
/// a literal from a plan can be compared with them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnStats {
    pub null_frac: f64,
    /// Positive: distinct values; negative: minus the distinct share of rows.
    pub n_distinct: f64,
    pub most_common_vals: Vec<String>,
    pub most_common_freqs: Vec<f64>,
    /// Correlation of the column's order with the rows' physical order, -1 to 1.
    pub correlation: Option<f64>,
}

impl ColumnStats {
    /// The estimated share of rows equal to `value`: its MCV frequency, or for a value not in
    /// the list what the planner assumes too (the rows outside the MCVs spread evenly over the
    /// remaining distinct values). `None` when there is no MCV list to judge by.
    pub fn frequency(&self, value: &str, rows: Option<f64>) -> Option<f64> {
        if let Some(i) = self.most_common_vals.iter().position(|v| v == value) {
            return self.most_common_freqs.get(i).copied();
        }
        if self.most_common_vals.is_empty() {
            return None;
        }
        let distinct = if self.n_distinct < 0.0 {
            -self.n_distinct * rows?
        } else {
            self.n_distinct
        };
        let rest_values = distinct - self.most_common_vals.len() as f64;
        let rest_share = 1.0 - self.null_frac - self.most_common_freqs.iter().sum::<f64>();
        if rest_values < 1.0 {
            // Every value is an MCV: a value outside the list matches nothing.
            return Some(0.0);
        }
        Some((rest_share / rest_values).max(0.0))
    }
}

/// One existing index, in the pieces a covered-check compares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexFacts {
    pub name: String,
    /// `btree`, `gin`, `gist`, `brin`, `hash`, `spgist`.
    pub method: String,
    pub keys: Vec<IndexKeyFacts>,
    /// INCLUDE columns.
    pub include: Vec<String>,
    /// `pg_get_expr(indpred, indrelid, true)`.
    pub predicate: Option<String>,
    pub unique: bool,
    /// `indisvalid`: an invalid index (a failed CONCURRENTLY build) serves no query.
    pub valid: bool,
    pub primary: bool,
    pub exclusion: bool,
    /// The table's REPLICA IDENTITY USING INDEX: logical replication identifies rows by it.
    pub replica_identity: bool,
    /// A primary key, unique or exclusion constraint uses it (`pg_constraint.conindid`).
    pub backs_constraint: bool,
    pub size_bytes: Option<f64>,
    /// `idx_scan` since the statistics were last reset.
    pub scans: Option<f64>,
}

/// One key column of an existing index.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexKeyFacts {
    /// The column name, or the expression as `pg_get_indexdef(index, k, true)` prints it.
    pub expr: String,
    pub opclass: String,
    /// Whether `opclass` is the default operator class for the column's type and the method.
    pub default_opclass: bool,
    /// The key's collation when it differs from the column's own (as `COLLATE` in the
    /// definition), else `None`.
    pub collation: Option<String>,
    pub descending: bool,
    pub nulls_first: bool,
}
