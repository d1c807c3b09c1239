//! Index proposals for `pgplan advise`, pure: from parsed plans and plain catalog facts to the
//! candidate indexes an expert would try, and from measured figures to the set worth building.
//!
//! The pipeline: [`access::accesses`] reads what each scan does; each rule in [`rules`] proposes
//! candidates for one scan; [`rules::merge`] folds candidates one index can serve together;
//! [`rules::covered`] drops those an existing index already is; [`choose`] picks the set from
//! measurements. Nothing here is a verdict: every candidate is only worth measuring.

pub mod access;
pub mod choose;
pub mod colname;
pub mod coverage;
pub mod drops;
pub mod expr;
pub mod facts;
pub mod naming;
pub mod report;
pub mod rules;
pub mod shortlist;
#[cfg(test)]
pub(crate) mod testing;

pub use access::{Access, Key};
pub use facts::{ColumnFacts, ColumnStats, Facts, IndexFacts, IndexKeyFacts, TableFacts};

use crate::plan::Plan;
use crate::sql::quote_ident;

/// The index access methods advise proposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    Btree,
    Gin,
    Gist,
    Brin,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Btree => "btree",
            Method::Gin => "gin",
            Method::Gist => "gist",
            Method::Brin => "brin",
        }
    }
}

/// Which rule proposed a candidate: what the report says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Equality columns, then a range or the sort key.
    Btree,
    /// A partial index on a constant that selects a small slice.
    Partial,
    /// A key that is an expression (`lower(email)`).
    Expression,
    /// Key columns plus INCLUDE columns for an index-only scan.
    Include,
    /// GIN for containment and overlap operators.
    Gin,
    /// GiST for range and geometric operators.
    Gist,
    /// GIN with pg_trgm's operator class for substring searches.
    Trigram,
    /// BRIN for a column that follows the rows' physical order.
    Brin,
    /// The join key of the larger side of a join.
    JoinKey,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Btree => "btree",
            Kind::Partial => "partial",
            Kind::Expression => "expression",
            Kind::Include => "include",
            Kind::Gin => "gin",
            Kind::Gist => "gist",
            Kind::Trigram => "trigram",
            Kind::Brin => "brin",
            Kind::JoinKey => "join_key",
        }
    }
}

/// One key of a candidate.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexKey {
    pub key: Key,
    /// A non-default operator class (`text_pattern_ops`, `jsonb_path_ops`, `gin_trgm_ops`).
    pub opclass: Option<String>,
    pub descending: bool,
    /// Written only when it differs from the direction's default.
    pub nulls_first: Option<bool>,
}

impl IndexKey {
    pub fn plain(key: Key) -> Self {
        IndexKey {
            key,
            opclass: None,
            descending: false,
            nulls_first: None,
        }
    }

    pub fn effective_nulls_first(&self) -> bool {
        self.nulls_first.unwrap_or(self.descending)
    }

    fn definition(&self) -> String {
        let mut s = self.key.definition();
        if let Some(op) = &self.opclass {
            s.push(' ');
            s.push_str(op);
        }
        if self.descending {
            s.push_str(" DESC");
        }
        match (self.descending, self.nulls_first) {
            (false, Some(true)) => s.push_str(" NULLS FIRST"),
            (true, Some(false)) => s.push_str(" NULLS LAST"),
            _ => {}
        }
        s
    }
}

/// Which query and which scan of it a candidate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Serves {
    /// The query's position in the workload.
    pub query: usize,
    pub node: usize,
}

/// A candidate index: worth measuring, not yet worth building.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub schema: String,
    pub table: String,
    pub method: Method,
    pub keys: Vec<IndexKey>,
    pub include: Vec<String>,
    /// The WHERE of a partial index, as SQL with columns unqualified.
    pub predicate: Option<String>,
    /// The rules that proposed it (several once merged).
    pub kinds: Vec<Kind>,
    /// Why, in a sentence per rule, with the evidence.
    pub reasons: Vec<String>,
    pub serves: Vec<Serves>,
    /// The name to create it under: the one PostgreSQL would give it, stepping over the
    /// schema's relations and the other candidates ([`assign_names`]).
    pub name: String,
}

impl Candidate {
    pub fn new(table: &TableRef, method: Method, keys: Vec<IndexKey>, kind: Kind) -> Self {
        Candidate {
            schema: table.schema.clone(),
            table: table.name.clone(),
            method,
            keys,
            include: Vec::new(),
            predicate: None,
            kinds: vec![kind],
            reasons: Vec::new(),
            serves: Vec::new(),
            name: String::new(),
        }
    }

    /// Everything from ON on: `ON public.tickets USING btree (account_id, created_at DESC)`.
    pub fn definition(&self) -> String {
        let keys: Vec<String> = self.keys.iter().map(IndexKey::definition).collect();
        let mut s = format!(
            "ON {}.{}",
            quote_ident(&self.schema),
            quote_ident(&self.table)
        );
        if self.method != Method::Btree {
            s.push_str(" USING ");
            s.push_str(self.method.name());
        }
        s.push_str(&format!(" ({})", keys.join(", ")));
        if !self.include.is_empty() {
            let inc: Vec<String> = self.include.iter().map(|c| quote_ident(c)).collect();
            s.push_str(&format!(" INCLUDE ({})", inc.join(", ")));
        }
        if let Some(p) = &self.predicate {
            s.push_str(" WHERE ");
            s.push_str(p);
        }
        s
    }

    /// The name PostgreSQL would choose for it in a schema where nothing is taken
    /// ([`naming::index_name`]), which a user can keep or change.
    pub fn default_name(&self) -> String {
        naming::index_name(
            &self.table,
            self.keys.iter().map(|k| &k.key),
            &self.include,
            |_| false,
        )
    }

    /// The statement to run on production: built without blocking writes.
    pub fn create_statement(&self) -> String {
        let name = if self.name.is_empty() {
            self.default_name()
        } else {
            self.name.clone()
        };
        format!(
            "CREATE INDEX CONCURRENTLY {} {}",
            quote_ident(&name),
            self.definition()
        )
    }

    /// Same index: method, keys, INCLUDE columns and predicate.
    pub fn same_index(&self, other: &Candidate) -> bool {
        self.schema == other.schema
            && self.table == other.table
            && self.method == other.method
            && self.keys == other.keys
            && self.include == other.include
            && self.predicate == other.predicate
    }

    /// Whether this index can do everything `other` does: same table, method and predicate,
    /// B-tree keys that start with all of `other`'s (same directions and operator classes),
    /// and every INCLUDE column of `other` among its keys or INCLUDE columns. A scan that can
    /// use `other` can use this one, so once both are chosen `other` is redundant.
    pub fn extends(&self, other: &Candidate) -> bool {
        let columns = |c: &Candidate| -> Vec<String> {
            c.keys
                .iter()
                .filter_map(|k| k.key.column().map(str::to_owned))
                .chain(c.include.iter().cloned())
                .collect()
        };
        let mine = columns(self);
        self.schema == other.schema
            && self.table == other.table
            && self.method == Method::Btree
            && other.method == Method::Btree
            && self.predicate == other.predicate
            && !self.same_index(other)
            && self.keys.len() >= other.keys.len()
            && self.keys[..other.keys.len()] == other.keys[..]
            && other.include.iter().all(|c| mine.contains(c))
    }

    fn add_kind(&mut self, kind: Kind) {
        if !self.kinds.contains(&kind) {
            self.kinds.push(kind);
        }
    }

    fn absorb(&mut self, other: Candidate) {
        for k in other.kinds {
            self.add_kind(k);
        }
        for r in other.reasons {
            if !self.reasons.contains(&r) {
                self.reasons.push(r);
            }
        }
        for s in other.serves {
            if !self.serves.contains(&s) {
                self.serves.push(s);
            }
        }
    }
}

/// Names each candidate, in the order given, as PostgreSQL would name it if its `CREATE INDEX`
/// ran unnamed after those before it: stepping over every relation of its schema
/// ([`Facts::name_taken`]) and the names given to the candidates before it.
pub fn assign_names<'c>(candidates: impl IntoIterator<Item = &'c mut Candidate>, facts: &Facts) {
    let mut given: Vec<(String, String)> = Vec::new();
    for c in candidates {
        let name = naming::index_name(&c.table, c.keys.iter().map(|k| &k.key), &c.include, |n| {
            facts.name_taken(&c.schema, n) || given.iter().any(|(s, g)| *s == c.schema && g == n)
        });
        given.push((c.schema.clone(), name.clone()));
        c.name = name;
    }
}

/// The table a scan reads, as advise names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRef {
    pub schema: String,
    pub name: String,
}

/// Something advise noticed and did not propose, with why: a query no index helps, an operator
/// that needs an extension, a visibility map too stale for an index-only scan.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    /// The workload query it concerns; `None` for the whole workload or a candidate.
    pub query: Option<usize>,
    pub table: Option<String>,
    pub message: String,
}

/// A query's note when its own plan gave no candidate.
pub const NOTHING_PROPOSED: &str = "no index proposed: every scan already uses an index that fits, or keeps most of the rows it reads";

impl Note {
    /// Whether it says no index was proposed for its query: not true of a query that an index
    /// proposed for another query serves, once measured (a merged candidate, or one the planner
    /// picks for both).
    pub fn contradicted_by(&self, served: &[usize]) -> bool {
        self.message == NOTHING_PROPOSED && self.query.is_some_and(|q| served.contains(&q))
    }
}

/// A candidate an existing index already is.
#[derive(Debug, Clone, PartialEq)]
pub struct Covered {
    pub candidate: Candidate,
    pub by_index: String,
}

/// What the rules proposed for a workload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Proposals {
    /// Distinct candidates, merged, none an existing index covers, in a stable order.
    pub candidates: Vec<Candidate>,
    pub covered: Vec<Covered>,
    pub notes: Vec<Note>,
}

/// Proposes candidates for every scan of every plan (`plans[i]` is workload query i).
pub fn propose(plans: &[&Plan], facts: &Facts) -> Proposals {
    let mut raw = Vec::new();
    let mut notes = Vec::new();
    for (query, plan) in plans.iter().enumerate() {
        let before = raw.len();
        let mut considered = false;
        for access in access::accesses(plan) {
            let Some(table) = facts.table(access.schema.as_deref(), &access.table) else {
                notes.push(Note {
                    query: Some(query),
                    table: Some(access.table.clone()),
                    message: format!(
                        "no catalog facts for {} (a partition, a temporary table, or another database's): nothing proposed for it",
                        access.table
                    ),
                });
                continue;
            };
            considered = true;
            let input = rules::Input {
                query,
                access: &access,
                table,
                facts,
            };
            rules::propose(&input, &mut raw, &mut notes);
        }
        if considered && raw.len() == before && !notes.iter().any(|n| n.query == Some(query)) {
            notes.push(Note {
                query: Some(query),
                table: None,
                message: NOTHING_PROPOSED.into(),
            });
        }
    }
    let merged = rules::merge::merge(raw);
    let mut candidates = Vec::new();
    let mut covered = Vec::new();
    for c in merged {
        let existing = facts
            .table(Some(&c.schema), &c.table)
            .and_then(|t| rules::covered::covering_index(&c, t));
        match existing {
            Some(index) => covered.push(Covered {
                candidate: c,
                by_index: index.to_owned(),
            }),
            None => candidates.push(c),
        }
    }
    assign_names(&mut candidates, facts);
    Proposals {
        candidates,
        covered,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::testing::propose_for;
    use super::{NOTHING_PROPOSED, Note};

    #[test]
    fn nothing_proposed_is_contradicted_only_by_a_served_query() {
        let note = |query: Option<usize>, message: &str| Note {
            query,
            table: None,
            message: message.into(),
        };
        assert!(note(Some(2), NOTHING_PROPOSED).contradicted_by(&[0, 2]));
        assert!(!note(Some(1), NOTHING_PROPOSED).contradicted_by(&[0, 2]));
        assert!(!note(None, NOTHING_PROPOSED).contradicted_by(&[0, 2]));
        assert!(!note(Some(2), "no catalog facts for t").contradicted_by(&[2]));
    }

    #[test]
    fn names_follow_postgres_and_stay_unique() {
        let p = propose_for("advise/partial_hot_constant", 17);
        let names: Vec<&str> = p.candidates.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "tickets_state_created_at_idx",
                "tickets_created_at_idx",
                "tickets_state_created_at_id_priority_idx"
            ]
        );
        let p = propose_for("advise/brin_time_range", 17);
        let names: Vec<&str> = p.candidates.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["logs_ts_idx", "logs_ts_idx1"]);
        assert!(
            p.candidates[1].create_statement().starts_with(
                "CREATE INDEX CONCURRENTLY logs_ts_idx1 ON public.logs USING brin (ts)"
            )
        );
    }

    #[test]
    fn any_relation_of_the_schema_takes_a_name_and_the_order_given_decides_the_numbers() {
        use super::testing::{facts, propose_with};
        let mut f = facts();
        // A sequence (or a view, a table) of that name: CREATE INDEX steps over it too.
        f.taken_names
            .insert(("public".into(), "logs_ts_idx".into()));
        // In another schema: no clash.
        f.taken_names
            .insert(("archive".into(), "logs_ts_idx1".into()));
        let p = propose_with("advise/brin_time_range", 17, &f);
        let names: Vec<&str> = p.candidates.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["logs_ts_idx1", "logs_ts_idx2"]);
        // Named again with the BRIN one first, as when it alone is recommended: it is the one
        // PostgreSQL would name first.
        let mut again: Vec<super::Candidate> = p.candidates.iter().rev().cloned().collect();
        super::assign_names(&mut again, &facts());
        assert_eq!(again[0].method, super::Method::Brin);
        assert_eq!(again[0].name, "logs_ts_idx");
        assert_eq!(again[1].name, "logs_ts_idx1");
    }

    #[test]
    fn an_index_extends_another_whose_keys_it_starts_with() {
        let p = propose_for("advise/composite_eq_sort", 17);
        let find = |def: &str| {
            p.candidates
                .iter()
                .find(|c| c.definition() == def)
                .unwrap_or_else(|| panic!("{def} not proposed"))
        };
        let plain = find("ON public.tickets (account_id, created_at DESC)");
        let include = find("ON public.tickets (account_id, created_at DESC) INCLUDE (id)");
        assert!(include.extends(plain));
        assert!(
            !plain.extends(include),
            "INCLUDE (id) is not among its columns"
        );
        assert!(!plain.extends(plain));
        let mut ascending = include.clone();
        ascending.keys[1].descending = false;
        assert!(
            !ascending.extends(plain),
            "a different direction serves another order"
        );
        let mut partial = include.clone();
        partial.predicate = Some("state = 'open'::text".into());
        assert!(!partial.extends(plain), "a partial index holds fewer rows");
    }

    #[test]
    fn long_names_are_cut_to_63_bytes() {
        let mut c = propose_for("advise/composite_eq_sort", 17).candidates[0].clone();
        c.table = "t".repeat(70);
        assert_eq!(c.default_name().len(), 63);
        assert!(c.default_name().ends_with("_idx"));
    }
}
