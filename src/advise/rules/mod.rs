//! The proposal rules, one per file, each over one scan and its table's facts, and the two
//! passes over all candidates: [`merge`] and [`covered`]; [`replaces`] names the existing
//! indexes a chosen one makes redundant.

pub mod brin;
pub mod btree;
pub mod covered;
pub mod gin;
pub mod include;
pub mod join_key;
pub mod merge;
pub mod partial;
pub mod replaces;
pub mod trigram;

use super::access::{Access, Condition, Key, Operand, Order, OrderKey, Use};
use super::expr;
use super::{Candidate, Facts, IndexKey, Kind, Note, Serves, TableFacts, TableRef};

/// A scan keeping at most this share of the rows it reads is worth an index: past half, a
/// sequential read of the table costs about what an index's random reads would.
pub const SELECTIVE_SHARE: f64 = 0.5;

/// What a rule sees: one scan of one workload query, its table and the database.
pub struct Input<'a> {
    pub query: usize,
    pub access: &'a Access,
    pub table: &'a TableFacts,
    pub facts: &'a Facts,
}

impl Input<'_> {
    pub fn table_ref(&self) -> TableRef {
        TableRef {
            schema: self.table.schema.clone(),
            name: self.table.name.clone(),
        }
    }

    pub fn serves(&self) -> Serves {
        Serves {
            query: self.query,
            node: self.access.node,
        }
    }

    pub fn candidate(&self, method: super::Method, keys: Vec<IndexKey>, kind: Kind) -> Candidate {
        let mut c = Candidate::new(&self.table_ref(), method, keys, kind);
        c.serves.push(self.serves());
        c
    }

    pub fn note(&self, message: String) -> Note {
        Note {
            query: Some(self.query),
            table: Some(format!("{}.{}", self.table.schema, self.table.name)),
            message,
        }
    }

    /// The order the query wants from this scan: a Sort's above it, or, for an index scan
    /// right under a LIMIT, the order of the index it walks (its keys, reversed for a backward
    /// scan), which a better index must keep to end the scan as early.
    pub fn order(&self) -> Option<Order> {
        let a = self.access;
        if a.order.is_some() {
            return a.order.clone();
        }
        let limit_rows = a.limit_above?;
        let index = self
            .table
            .indexes
            .iter()
            .find(|i| Some(&i.name) == a.index_name.as_ref() && i.method == "btree")?;
        let backward = a.scan_direction.as_deref() == Some("Backward");
        let keys = index
            .keys
            .iter()
            .map_while(|k| {
                let e = expr::read(&k.expr)?;
                let (_, name) = e.as_column()?;
                let descending = k.descending != backward;
                let nulls_first = k.nulls_first != backward;
                Some(OrderKey {
                    key: Key::Column(name.to_owned()),
                    descending,
                    nulls_first: (nulls_first != descending).then_some(nulls_first),
                })
            })
            .collect::<Vec<_>>();
        (!keys.is_empty()).then_some(Order {
            keys,
            limit_rows: Some(limit_rows),
        })
    }

    /// Why the scan is worth an index, with the evidence; `None` when it keeps most of what it
    /// reads and no LIMIT cuts a sort above it short.
    pub fn evidence(&self) -> Option<String> {
        let a = self.access;
        let kind = &a.node_type;
        if let Some(order) = self.order()
            && let Some(limit) = order.limit_rows
            && let Some(returned) = a.rows_returned.or(a.plan_rows)
            && returned > limit
        {
            return Some(format!(
                "the {kind} on {} produced {} rows for the {} its LIMIT returned",
                a.table,
                count(returned),
                count(limit)
            ));
        }
        match (a.rows_returned, a.rows_removed, a.kept_share()) {
            (Some(kept), Some(removed), Some(share)) if share <= SELECTIVE_SHARE => Some(format!(
                "the {kind} on {} kept {} of the {} rows it read",
                a.table,
                count(kept),
                count(kept + removed)
            )),
            (Some(_), _, _) => None,
            // Estimates only (a generic plan): judge by the estimated rows against the table.
            (None, _, _) => {
                let rows = a.plan_rows?;
                let total = self.table.rows?;
                (!a.conditions.is_empty() && total > 0.0 && rows / total <= SELECTIVE_SHARE).then(
                    || {
                        format!(
                            "the {kind} on {} is estimated to keep {} of its {} rows",
                            a.table,
                            count(rows),
                            count(total)
                        )
                    },
                )
            }
        }
    }

    /// Whether the scan's output is the table's whole row (EXPLAIN VERBOSE shows a scan's
    /// "physical tlist", every column, when no projection was needed), so the columns the
    /// query needs are not known from it.
    pub fn outputs_whole_row(&self) -> bool {
        let cols = &self.access.output_columns;
        cols.len() == self.table.columns.len()
            && self.table.columns.iter().all(|c| cols.contains(&c.name))
    }
}

/// Rows as a whole number with thousands separators.
pub fn count(n: f64) -> String {
    let s = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The conditions a btree can start from: equalities with a constant or parameter.
pub fn equality_keys(a: &Access) -> Vec<&Condition> {
    let mut out: Vec<&Condition> = Vec::new();
    for c in a.equalities() {
        if !out.iter().any(|o| o.key == c.key) {
            out.push(c);
        }
    }
    out
}

pub fn in_list_keys(a: &Access) -> Vec<&Condition> {
    let mut out: Vec<&Condition> = Vec::new();
    for c in a
        .conditions
        .iter()
        .filter(|c| c.uses == Use::InList && c.operand != Operand::Outer)
    {
        if !out.iter().any(|o| o.key == c.key) {
            out.push(c);
        }
    }
    out
}

/// Range conditions (and LIKE prefixes), one per key, in the order of the plan.
pub fn range_keys(a: &Access) -> Vec<&Condition> {
    let mut out: Vec<&Condition> = Vec::new();
    for c in a
        .conditions
        .iter()
        .filter(|c| matches!(c.uses, Use::Range | Use::Prefix) && c.operand != Operand::Outer)
    {
        if !out.iter().any(|o| o.key == c.key) {
            out.push(c);
        }
    }
    out
}

/// A btree key for a condition's key: a LIKE prefix on a column whose collation does not sort
/// by bytes needs the pattern operator class of its type.
pub fn btree_key(cond: &Condition, table: &TableFacts) -> IndexKey {
    let mut key = IndexKey::plain(cond.key.clone());
    if cond.uses == Use::Prefix
        && let Key::Column(name) = &cond.key
        && let Some(col) = table.column(name)
        && !col.byte_order_collation()
    {
        key.opclass = match col.type_name.split('(').next().unwrap_or_default() {
            "text" => Some("text_pattern_ops".into()),
            "character varying" => Some("varchar_pattern_ops".into()),
            "character" => Some("bpchar_pattern_ops".into()),
            _ => None,
        };
    }
    key
}

/// Runs every per-scan rule.
pub fn propose(input: &Input<'_>, out: &mut Vec<Candidate>, notes: &mut Vec<Note>) {
    out.extend(btree::propose(input));
    out.extend(partial::propose(input));
    out.extend(include::propose(input, notes));
    out.extend(gin::propose(input, notes));
    out.extend(trigram::propose(input, notes));
    out.extend(brin::propose(input));
    out.extend(join_key::propose(input));
}
