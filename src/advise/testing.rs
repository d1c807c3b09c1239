//! Test helpers: recorded plans from `fixtures/`, and the catalog facts of the tables those
//! fixtures' setup scripts create (`fixtures/plans/setup.sql`, `demo/story.sql`,
//! `fixtures/advise/setup.sql`), as a server reports them after their VACUUM (ANALYZE).
//! `tests/advise_live.rs` reads the same facts from real servers and checks these.

use super::facts::*;
use super::{Proposals, propose};
use crate::plan::{Plan, parse_plan};

pub fn fixture(name: &str, major: u32) -> Plan {
    let path = format!(
        "{}/fixtures/{name}.pg{major}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_plan(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn propose_for(name: &str, major: u32) -> Proposals {
    propose_with(name, major, &facts())
}

pub fn propose_with(name: &str, major: u32, facts: &Facts) -> Proposals {
    propose(&[&fixture(name, major)], facts)
}

pub fn propose_all(names: &[&str], major: u32) -> Proposals {
    let plans: Vec<Plan> = names.iter().map(|n| fixture(n, major)).collect();
    let refs: Vec<&Plan> = plans.iter().collect();
    propose(&refs, &facts())
}

pub fn definitions(p: &Proposals) -> Vec<String> {
    p.candidates.iter().map(|c| c.definition()).collect()
}

fn col(name: &str, type_name: &str) -> ColumnFacts {
    let collatable = matches!(type_name, "text" | "text[]");
    ColumnFacts {
        name: name.into(),
        type_name: type_name.into(),
        collation: collatable.then(|| "default".into()),
        default_collation: Some("C".into()),
        stats: Some(ColumnStats {
            n_distinct: -1.0,
            correlation: Some(0.0),
            ..ColumnStats::default()
        }),
    }
}

fn with_stats(mut c: ColumnFacts, n_distinct: f64, mcv: &[(&str, f64)], corr: f64) -> ColumnFacts {
    c.stats = Some(ColumnStats {
        null_frac: 0.0,
        n_distinct,
        most_common_vals: mcv.iter().map(|(v, _)| (*v).into()).collect(),
        most_common_freqs: mcv.iter().map(|(_, f)| *f).collect(),
        correlation: Some(corr),
    });
    c
}

fn pkey(table: &str, column: &str) -> IndexFacts {
    IndexFacts {
        unique: true,
        primary: true,
        backs_constraint: true,
        ..btree(&format!("{table}_pkey"), &[column])
    }
}

fn btree(name: &str, columns: &[&str]) -> IndexFacts {
    btree_of(
        name,
        columns
            .iter()
            .map(|c| IndexKeyFacts {
                expr: (*c).into(),
                opclass: "default_ops".into(),
                default_opclass: true,
                ..IndexKeyFacts::default()
            })
            .collect(),
    )
}

fn table(
    name: &str,
    rows: f64,
    pages: f64,
    columns: Vec<ColumnFacts>,
    indexes: Vec<IndexFacts>,
) -> TableFacts {
    TableFacts {
        schema: "public".into(),
        name: name.into(),
        columns,
        indexes,
        rows: Some(rows),
        pages,
        all_visible_pages: pages,
        inserts: Some(rows),
        updates: Some(0.0),
        deletes: Some(0.0),
        hot_updates: Some(0.0),
    }
}

pub fn facts() -> Facts {
    let tickets = table(
        "tickets",
        200_000.0,
        3_704.0,
        vec![
            with_stats(col("id", "bigint"), -1.0, &[], 1.0),
            with_stats(col("account_id", "integer"), 2000.0, &[], 0.01),
            with_stats(
                col("state", "text"),
                2.0,
                &[("closed", 0.98), ("open", 0.02)],
                0.96,
            ),
            with_stats(
                col("priority", "integer"),
                5.0,
                &[("0", 0.2), ("1", 0.2), ("2", 0.2), ("3", 0.2), ("4", 0.2)],
                0.2,
            ),
            col("amount", "numeric"),
            with_stats(
                col("created_at", "timestamp with time zone"),
                -1.0,
                &[],
                1.0,
            ),
            col("body", "text"),
        ],
        vec![pkey("tickets", "id")],
    );
    let logs = table(
        "logs",
        300_000.0,
        2_804.0,
        vec![
            with_stats(col("id", "bigint"), -1.0, &[], 1.0),
            with_stats(col("ts", "timestamp with time zone"), -1.0, &[], 1.0),
            with_stats(
                col("level", "integer"),
                4.0,
                &[("0", 0.25), ("1", 0.25), ("2", 0.25), ("3", 0.25)],
                0.25,
            ),
            col("line", "text"),
        ],
        vec![pkey("logs", "id")],
    );
    let orders = table(
        "orders",
        200_000.0,
        2_500.0,
        vec![
            col("id", "bigint"),
            with_stats(col("customer_id", "integer"), 200.0, &[], 0.0),
            col("amount", "numeric"),
            with_stats(
                col("status", "text"),
                2.0,
                &[("shipped", 0.8), ("open", 0.2)],
                0.65,
            ),
            with_stats(
                col("created_at", "timestamp with time zone"),
                -1.0,
                &[],
                1.0,
            ),
            col("note", "text"),
        ],
        vec![
            pkey("orders", "id"),
            btree("orders_customer_id_idx", &["customer_id"]),
            btree("orders_created_at_idx", &["created_at"]),
        ],
    );
    let customers = table(
        "customers",
        10_000.0,
        64.0,
        vec![
            col("id", "integer"),
            col("name", "text"),
            with_stats(
                col("country", "text"),
                5.0,
                &[
                    ("de", 0.2),
                    ("fr", 0.2),
                    ("jp", 0.2),
                    ("nl", 0.2),
                    ("us", 0.2),
                ],
                0.2,
            ),
        ],
        vec![pkey("customers", "id")],
    );
    let events = table(
        "events",
        500_000.0,
        9_804.0,
        vec![
            col("id", "bigint"),
            with_stats(col("tenant_id", "integer"), 1000.0, &[], 0.0),
            with_stats(
                col("status", "text"),
                4.0,
                &[
                    ("pending", 0.7),
                    ("done", 0.2),
                    ("failed", 0.07),
                    ("cancelled", 0.03),
                ],
                0.5,
            ),
            with_stats(
                col("created_at", "timestamp with time zone"),
                -1.0,
                &[],
                1.0,
            ),
            col("payload", "text"),
        ],
        vec![pkey("events", "id")],
    );
    Facts {
        tables: vec![
            tickets,
            table(
                "accounts",
                2_000.0,
                11.0,
                vec![col("id", "integer"), col("region", "text")],
                vec![pkey("accounts", "id")],
            ),
            table(
                "users",
                100_000.0,
                736.0,
                vec![
                    col("id", "integer"),
                    col("email", "text"),
                    col("name", "text"),
                ],
                vec![pkey("users", "id")],
            ),
            table(
                "docs",
                100_000.0,
                1_400.0,
                vec![
                    col("id", "integer"),
                    col("tags", "text[]"),
                    col("attrs", "jsonb"),
                    col("title", "text"),
                ],
                vec![pkey("docs", "id")],
            ),
            logs,
            orders,
            customers,
            events,
        ],
        extensions: vec!["plpgsql".into(), "pg_trgm".into()],
        taken_names: Default::default(),
    }
}

/// A key of an existing index in the catalog facts: a plain column or expression with a default
/// opclass and no collation, in the given direction (NULLS FIRST with DESC, as PostgreSQL's
/// default).
pub fn key(expr: &str, descending: bool) -> IndexKeyFacts {
    IndexKeyFacts {
        expr: expr.into(),
        opclass: "whatever_ops".into(),
        default_opclass: true,
        collation: None,
        descending,
        nulls_first: descending,
    }
}

/// A valid B-tree of the catalog facts with these keys.
pub fn btree_of(name: &str, keys: Vec<IndexKeyFacts>) -> IndexFacts {
    IndexFacts {
        name: name.into(),
        method: "btree".into(),
        keys,
        valid: true,
        ..IndexFacts::default()
    }
}
