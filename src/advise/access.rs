//! What each scan of a plan does, read off its node and the nodes around it: the conditions on
//! its own table (equality, range, in-list, operator), the join keys it is matched on, the
//! order a sort above it wants and whether a LIMIT ends that sort early, the rows it read and
//! threw away, and the columns it had to produce.

use super::expr::{self, Conjunct, Expr, SortKey};
use crate::plan::{Node, NodeId, Plan};

/// The key side of a condition: a column, or an expression over the table's columns (what an
/// expression index would store).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    Column(String),
    /// The expression as SQL with columns unqualified (`lower(email)`), its columns, and the
    /// name PostgreSQL gives it as an index column (`lower`; `None` where it names it `expr`:
    /// [`super::colname::expression_column_name`]).
    Expression {
        sql: String,
        columns: Vec<String>,
        name: Option<String>,
    },
}

impl Key {
    /// How the key is written in an index definition: a column as its quoted name, an
    /// expression in the parentheses PostgreSQL requires.
    pub fn definition(&self) -> String {
        match self {
            Key::Column(name) => crate::sql::quote_ident(name),
            Key::Expression { sql, .. } if sql.starts_with('(') && sql.ends_with(')') => {
                sql.clone()
            }
            Key::Expression { sql, .. } => format!("({sql})"),
        }
    }

    pub fn columns(&self) -> Vec<&str> {
        match self {
            Key::Column(c) => vec![c.as_str()],
            Key::Expression { columns, .. } => columns.iter().map(String::as_str).collect(),
        }
    }

    pub fn column(&self) -> Option<&str> {
        match self {
            Key::Column(c) => Some(c),
            Key::Expression { .. } => None,
        }
    }
}

/// What the other side of a condition is.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A constant in the query text, as its literal (`pending`, `42`).
    Constant(String),
    /// A constant that is not one literal: an array, a `$n`, a cast of either.
    Value,
    /// A column of another table of the query: a join key.
    Outer,
}

/// How a condition uses its key.
#[derive(Debug, Clone, PartialEq)]
pub enum Use {
    /// `=`, or `IS NULL` (which a btree also answers by equality).
    Equal,
    /// `= ANY (...)`.
    InList,
    /// `<`, `<=`, `>`, `>=`.
    Range,
    /// `LIKE 'prefix%'` (`~~`) with a fixed prefix: a range over the prefix.
    Prefix,
    /// `LIKE`/`ILIKE` or a regular expression with no fixed prefix: only a trigram index helps.
    Substring,
    /// Any other operator (`@>`, `&&`, `?`, `@@`, ...), as printed.
    Operator(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub key: Key,
    pub uses: Use,
    pub operand: Operand,
    /// The conjunct as SQL with columns unqualified: what a partial index's WHERE would say.
    pub sql: String,
}

/// The order a Sort above the scan wants, and whether a LIMIT stops it early.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    pub keys: Vec<OrderKey>,
    /// The Limit above the sort, by its estimated rows (the LIMIT when the input has enough).
    pub limit_rows: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderKey {
    pub key: Key,
    pub descending: bool,
    /// NULLS FIRST/LAST when the sort does not use the default for its direction.
    pub nulls_first: Option<bool>,
}

/// A join key of the scan, with how many rows the other side brought.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinKey {
    pub key: Key,
    pub other_rows: Option<f64>,
}

/// One scan of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    pub node: NodeId,
    pub node_type: String,
    pub schema: Option<String>,
    pub table: String,
    pub alias: String,
    /// The index the scan used, if any.
    pub index_name: Option<String>,
    pub conditions: Vec<Condition>,
    /// Conjuncts the reader could not read: they propose nothing.
    pub unread: Vec<String>,
    pub join_keys: Vec<JoinKey>,
    pub order: Option<Order>,
    /// A Limit directly above the scan (no sort between them: the scan's own order is the
    /// query's), by its estimated rows.
    pub limit_above: Option<f64>,
    /// `Scan Direction` of an index scan: `Forward` or `Backward`.
    pub scan_direction: Option<String>,
    /// Rows the scan returned, over all loops (measured plans only).
    pub rows_returned: Option<f64>,
    /// The planner's estimate of the same, over the estimated loops of one.
    pub plan_rows: Option<f64>,
    /// Rows its Filter (and a bitmap's recheck) threw away, over all loops.
    pub rows_removed: Option<f64>,
    pub heap_fetches: Option<f64>,
    /// Plain columns the scan produced or tested.
    pub output_columns: Vec<String>,
    /// Whether the output holds anything besides plain columns of the table.
    pub output_has_expressions: bool,
}

impl Access {
    /// The share of the rows the scan read that it kept; `None` without measured figures.
    pub fn kept_share(&self) -> Option<f64> {
        let returned = self.rows_returned?;
        let read = returned + self.rows_removed.unwrap_or(0.0);
        (read > 0.0).then(|| returned / read)
    }

    /// The columns an index-only scan would have to return: output and condition columns.
    pub fn needed_columns(&self) -> Vec<String> {
        let mut out = self.output_columns.clone();
        for c in &self.conditions {
            for col in c.key.columns() {
                if !out.iter().any(|o| o == col) {
                    out.push(col.to_owned());
                }
            }
        }
        out
    }

    pub fn equalities(&self) -> impl Iterator<Item = &Condition> {
        self.conditions
            .iter()
            .filter(|c| c.uses == Use::Equal && c.operand != Operand::Outer)
    }
}

/// Every scan of a table in the plan, in plan order.
pub fn accesses(plan: &Plan) -> Vec<Access> {
    let mut out: Vec<Access> = plan
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.relation_name.is_some() && n.node_type != "ModifyTable")
        .map(|(id, n)| access(plan, id, n))
        .collect();
    add_join_keys(plan, &mut out);
    out
}

fn access(plan: &Plan, id: NodeId, node: &Node) -> Access {
    let table = node.relation_name.clone().unwrap_or_default();
    let alias = node.alias.clone().unwrap_or_else(|| table.clone());
    let mut a = Access {
        node: id,
        node_type: node.node_type.clone(),
        schema: node.schema.clone(),
        table,
        alias,
        index_name: node.index_name.clone(),
        conditions: Vec::new(),
        unread: Vec::new(),
        join_keys: Vec::new(),
        order: order_above(plan, id),
        limit_above: limit_above(plan, id),
        scan_direction: node.scan_direction.clone(),
        rows_returned: node.actual.map(|x| x.rows * x.loops),
        plan_rows: node.plan_rows,
        rows_removed: node.actual.map(|x| {
            (node.rows_removed_by_filter.unwrap_or(0.0)
                + node.rows_removed_by_index_recheck.unwrap_or(0.0))
                * x.loops
        }),
        heap_fetches: node.heap_fetches,
        output_columns: Vec::new(),
        output_has_expressions: false,
    };
    // A bitmap heap scan repeats its index conditions as Recheck Cond.
    let conds = [&node.index_cond, &node.recheck_cond, &node.filter];
    for text in conds.into_iter().flatten() {
        for part in expr::conjuncts(text) {
            match part {
                Conjunct::Read(e) => match condition(&e, &a.alias) {
                    Some(c) if !a.conditions.contains(&c) => a.conditions.push(c),
                    Some(_) => {}
                    None => a.unread.push(e.to_string()),
                },
                Conjunct::Unread(t) => a.unread.push(t),
            }
        }
    }
    for entry in &node.output {
        match expr::read(entry) {
            Some(e) if e.as_column().is_some() => {
                let (q, name) = e.as_column().unwrap_or_default();
                if own(q, &a.alias) && !a.output_columns.iter().any(|c| c == name) {
                    a.output_columns.push(name.to_owned());
                }
            }
            _ => a.output_has_expressions = true,
        }
    }
    a
}

fn own(qualifier: Option<&str>, alias: &str) -> bool {
    qualifier.is_none_or(|q| q == alias)
}

/// The key an expression is over this scan's table: a column, or an expression whose every
/// column is the table's own (and which holds no parameter or subplan).
fn key_of(e: &Expr, alias: &str) -> Option<Key> {
    if let Some((q, name)) = e.as_column() {
        return own(q, alias).then(|| Key::Column(name.to_owned()));
    }
    let cols = e.columns();
    if cols.is_empty() || e.has_param() || !cols.iter().all(|(q, _)| own(*q, alias)) {
        return None;
    }
    let mut columns: Vec<String> = cols.iter().map(|(_, n)| (*n).to_owned()).collect();
    columns.dedup();
    Some(Key::Expression {
        sql: e.unqualified(),
        columns,
        name: super::colname::expression_column_name(e),
    })
}

fn operand_of(e: &Expr, alias: &str) -> Option<Operand> {
    if let Some(lit) = e.literal()
        && !matches!(e, Expr::Param(_))
    {
        return Some(Operand::Constant(lit.to_owned()));
    }
    let cols = e.columns();
    // A constant, a parameter, or an expression over neither columns nor subplans
    // (`(now() - '1 day'::interval)`): known when the scan starts, so an index can search by it.
    if e.is_value() || cols.is_empty() {
        return Some(Operand::Value);
    }
    (!cols.is_empty() && cols.iter().all(|(q, _)| q.is_some_and(|q| q != alias)))
        .then_some(Operand::Outer)
}

/// The operator with its operands swapped, for `(42 = t.x)` written constant first.
fn commute(op: &str) -> Option<&str> {
    Some(match op {
        "=" => "=",
        "<" => ">",
        ">" => "<",
        "<=" => ">=",
        ">=" => "<=",
        "&&" => "&&",
        "@>" => "<@",
        "<@" => "@>",
        _ => return None,
    })
}

fn condition(e: &Expr, alias: &str) -> Option<Condition> {
    let sql = e.unqualified();
    let sql = sql
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .filter(|_| matches!(e, Expr::Binary { .. } | Expr::IsNull { .. }))
        .map_or(sql.clone(), str::to_owned);
    match e {
        Expr::Binary { op, left, right } => {
            let (key, operand, op) = match (key_of(left, alias), operand_of(right, alias)) {
                (Some(k), Some(o)) => (k, o, op.as_str()),
                _ => (
                    key_of(right, alias)?,
                    operand_of(left, alias)?,
                    commute(op)?,
                ),
            };
            let uses = match op {
                "=" => Use::Equal,
                "<" | "<=" | ">" | ">=" => Use::Range,
                "~~" | "~~*" | "~" | "~*" => like_use(op, &operand),
                other => Use::Operator(other.to_owned()),
            };
            Some(Condition {
                key,
                uses,
                operand,
                sql,
            })
        }
        Expr::ArrayOp {
            op,
            all: false,
            left,
            right,
        } if op == "=" => Some(Condition {
            key: key_of(left, alias)?,
            uses: Use::InList,
            operand: operand_of(right, alias)?,
            sql,
        }),
        Expr::IsNull {
            expr,
            negated: false,
        } => Some(Condition {
            key: key_of(expr, alias)?,
            uses: Use::Equal,
            operand: Operand::Constant("NULL".into()),
            sql,
        }),
        // A boolean column tested by itself: `WHERE active` / `WHERE NOT active`.
        Expr::Column { .. } => Some(Condition {
            key: key_of(e, alias)?,
            uses: Use::Equal,
            operand: Operand::Constant("true".into()),
            sql,
        }),
        Expr::Not(inner) if inner.as_column().is_some() => Some(Condition {
            key: key_of(inner, alias)?,
            uses: Use::Equal,
            operand: Operand::Constant("false".into()),
            sql,
        }),
        _ => None,
    }
}

/// A LIKE with a fixed prefix is a btree range; any other pattern (or ILIKE, or a regular
/// expression) needs a trigram index.
fn like_use(op: &str, operand: &Operand) -> Use {
    match (op, operand) {
        ("~~", Operand::Constant(p)) if fixed_prefix(p).is_some() => Use::Prefix,
        _ => Use::Substring,
    }
}

/// The literal prefix of a LIKE pattern, if the pattern starts with one.
pub fn fixed_prefix(pattern: &str) -> Option<&str> {
    let end = pattern.find(['%', '_', '\\']).unwrap_or(pattern.len());
    (end > 0).then(|| &pattern[..end])
}

fn passes_rows_in_order(n: &Node) -> bool {
    matches!(
        n.node_type.as_str(),
        "Gather" | "Gather Merge" | "Result" | "Materialize"
    )
}

fn limit_above(plan: &Plan, scan: NodeId) -> Option<f64> {
    let mut at = plan.nodes[scan].parent?;
    while passes_rows_in_order(&plan.nodes[at]) {
        at = plan.nodes[at].parent?;
    }
    limit_returned(&plan.nodes[at])
}

/// The rows a Limit node returned: its actual rows when measured, per loop times loops. Its
/// `Plan Rows` is no LIMIT: the planner's estimate of what it returns, the LIMIT or fewer (a
/// LIMIT 20 over 2 estimated rows plans 2).
fn limit_returned(n: &crate::plan::Node) -> Option<f64> {
    if n.node_type != "Limit" {
        return None;
    }
    n.actual.map(|x| x.rows * x.loops).or(n.plan_rows)
}

/// The sort an ancestor performs on this scan's rows, when only nodes that keep the rows and
/// their order as they are stand between them (Gather Merge, Result, Materialize, Memoize), and
/// the Limit above that sort.
fn order_above(plan: &Plan, scan: NodeId) -> Option<Order> {
    let passes = passes_rows_in_order;
    let mut at = plan.nodes[scan].parent?;
    while passes(&plan.nodes[at]) {
        at = plan.nodes[at].parent?;
    }
    let sort = &plan.nodes[at];
    if !matches!(sort.node_type.as_str(), "Sort" | "Incremental Sort") {
        return None;
    }
    let alias = plan.nodes[scan]
        .alias
        .as_deref()
        .or(plan.nodes[scan].relation_name.as_deref())?;
    let entries = sort.extra.get("Sort Key")?.as_array()?;
    let mut keys = Vec::new();
    for entry in entries {
        let SortKey {
            expr,
            descending,
            nulls_first,
            collation: None,
        } = expr::read_sort_key(entry.as_str()?)?
        else {
            return None;
        };
        keys.push(OrderKey {
            key: key_of(&expr, alias)?,
            descending,
            nulls_first,
        });
    }
    let mut up = sort.parent;
    while let Some(p) = up.filter(|&p| passes(&plan.nodes[p])) {
        up = plan.nodes[p].parent;
    }
    let limit_rows = up.map(|p| &plan.nodes[p]).and_then(limit_returned);
    Some(Order { keys, limit_rows })
}

/// Join keys from Hash Cond, Merge Cond and a nested loop's Join Filter, given to the scan of
/// each side, with the rows the other side brought.
fn add_join_keys(plan: &Plan, accesses: &mut [Access]) {
    for join in plan.nodes.iter().filter(|n| n.is_join()) {
        let conds = [&join.hash_cond, &join.merge_cond, &join.join_filter];
        for text in conds.into_iter().flatten() {
            for part in expr::conjuncts(text) {
                let Conjunct::Read(Expr::Binary { op, left, right }) = part else {
                    continue;
                };
                if op != "=" {
                    continue;
                }
                for (mine, theirs) in [(&left, &right), (&right, &left)] {
                    let (Some((Some(q), _)), Some((Some(other), _))) =
                        (mine.as_column(), theirs.as_column())
                    else {
                        continue;
                    };
                    let other_rows = side_rows(plan, join, other);
                    if let Some(a) = accesses
                        .iter_mut()
                        .find(|a| a.alias == q && under(plan, a.node, join))
                        && let Some(key) = key_of(mine, q)
                    {
                        a.join_keys.push(JoinKey { key, other_rows });
                    }
                }
            }
        }
    }
}

fn under(plan: &Plan, node: NodeId, ancestor: &Node) -> bool {
    let mut at = plan.nodes[node].parent;
    while let Some(p) = at {
        if std::ptr::eq(&plan.nodes[p], ancestor) {
            return true;
        }
        at = plan.nodes[p].parent;
    }
    false
}

/// Rows the join's child holding the scan of `alias` produced, over all its loops.
fn side_rows(plan: &Plan, join: &Node, alias: &str) -> Option<f64> {
    join.children.iter().find_map(|&child| {
        let holds = std::iter::once(child)
            .chain(descendants(plan, child))
            .any(|d| plan.nodes[d].alias.as_deref() == Some(alias));
        let n = &plan.nodes[child];
        holds
            .then(|| n.actual.map(|a| a.rows * a.loops).or(n.plan_rows))
            .flatten()
    })
}

fn descendants(plan: &Plan, id: NodeId) -> Vec<NodeId> {
    let mut out = Vec::new();
    let mut stack = plan.nodes[id].children.clone();
    while let Some(n) = stack.pop() {
        out.push(n);
        stack.extend(plan.nodes[n].children.iter().copied());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::testing::fixture;

    #[test]
    fn equality_then_a_top_n_sort() {
        for v in 13..=18 {
            let plan = fixture("advise/composite_eq_sort", v);
            let a = &accesses(&plan)[0];
            assert_eq!(a.table, "tickets", "pg{v}");
            assert_eq!(a.conditions.len(), 1);
            let c = &a.conditions[0];
            assert_eq!(c.key, Key::Column("account_id".into()));
            assert_eq!(c.uses, Use::Equal);
            assert_eq!(c.operand, Operand::Constant("17".into()));
            let order = a.order.as_ref().expect("the sort above");
            assert_eq!(order.keys.len(), 1);
            assert_eq!(order.keys[0].key, Key::Column("created_at".into()));
            assert!(order.keys[0].descending);
            assert_eq!(order.limit_rows, Some(20.0));
            assert_eq!(a.rows_returned, Some(100.0));
            assert_eq!(a.rows_removed, Some(199_900.0));
            assert_eq!(a.output_columns, ["id", "created_at"]);
        }
    }

    #[test]
    fn the_limit_is_what_the_limit_node_returned_not_its_estimate() {
        // LIMIT 20 over a sort the planner expected 2 rows from: its Plan Rows is 2.
        let raw = r#"[{"Plan": {"Node Type": "Limit", "Plan Rows": 2, "Actual Rows": 20, "Actual Loops": 1,
            "Plans": [{"Node Type": "Sort", "Parent Relationship": "Outer", "Sort Key": ["t.created_at"],
              "Plan Rows": 2, "Actual Rows": 20, "Actual Loops": 1,
              "Plans": [{"Node Type": "Seq Scan", "Parent Relationship": "Outer", "Relation Name": "t",
                "Schema": "public", "Alias": "t", "Plan Rows": 2, "Actual Rows": 900, "Actual Loops": 1}]}]}}]"#;
        let plan = crate::plan::parse_plan(raw).unwrap();
        let a = &accesses(&plan)[0];
        assert_eq!(a.order.as_ref().unwrap().limit_rows, Some(20.0));
    }

    #[test]
    fn ranges_expressions_and_operators() {
        for v in 13..=18 {
            let a = &accesses(&fixture("advise/composite_eq_range", v))[0];
            let uses: Vec<_> = a.conditions.iter().map(|c| c.uses.clone()).collect();
            assert_eq!(uses, [Use::Range, Use::Range, Use::Equal], "pg{v}");

            let a = &accesses(&fixture("advise/expression_lower", v))[0];
            assert_eq!(
                a.conditions[0].key,
                Key::Expression {
                    sql: "lower(email)".into(),
                    columns: vec!["email".into()],
                    name: Some("lower".into()),
                }
            );
            assert_eq!(a.conditions[0].key.definition(), "(lower(email))");

            let a = &accesses(&fixture("advise/gin_jsonb_contains", v))[0];
            assert_eq!(a.conditions[0].uses, Use::Operator("@>".into()));
            let a = &accesses(&fixture("advise/trigram_substring", v))[0];
            assert_eq!(a.conditions[0].uses, Use::Substring);
            let a = &accesses(&fixture("advise/prefix_like", v))[0];
            assert_eq!(a.conditions[0].uses, Use::Prefix);
        }
    }

    #[test]
    fn join_keys_carry_the_other_sides_rows() {
        for v in 13..=18 {
            let all = accesses(&fixture("advise/join_key", v));
            let tickets = all.iter().find(|a| a.table == "tickets").unwrap();
            assert_eq!(
                tickets.join_keys,
                [JoinKey {
                    key: Key::Column("account_id".into()),
                    other_rows: Some(3.0)
                }],
                "pg{v}"
            );
        }
    }

    #[test]
    fn conditions_written_constant_first_are_commuted() {
        let e = expr::read("('2026-01-01'::date <= m.taken_on)").unwrap();
        let c = condition(&e, "m").unwrap();
        assert_eq!(c.key, Key::Column("taken_on".into()));
        assert_eq!(c.uses, Use::Range);
        let e = expr::read("(o.customer_id = c.id)").unwrap();
        assert_eq!(condition(&e, "o").unwrap().operand, Operand::Outer);
        let e = expr::read("(e.last_occurred_at >= (now() - '1 day'::interval))").unwrap();
        let c = condition(&e, "e").unwrap();
        assert_eq!((c.uses, c.operand), (Use::Range, Operand::Value));
        // Two columns of the same table compared: no index searches by that.
        let e = expr::read("(l.l_shipdate < l.l_commitdate)").unwrap();
        assert_eq!(condition(&e, "l"), None);
        assert_eq!(fixed_prefix("ab%"), Some("ab"));
        assert_eq!(fixed_prefix("%ab"), None);
    }
}
