//! Which `--schema` and `--table` filters of an audit matched no table: a typo in a scheduled
//! audit would otherwise report a clean database, and exit 0, forever.

use super::Scope;
use super::snapshot::Table;

/// Each filter that matched none of `tables` (the tables the scoped catalog reads returned),
/// as the user wrote it: `--table orderz`, `--schema billing`.
pub fn unmatched(scope: &Scope, tables: &[Table]) -> Vec<String> {
    let mut found = Vec::new();
    // The catalog compares schema names as given (`nspname = ANY(...)`).
    for schema in &scope.schemas {
        if !tables.iter().any(|t| &t.schema == schema) {
            found.push(format!("--schema {schema}"));
        }
    }
    let (schemas, names) = scope.table_filters();
    for ((schema, name), pattern) in schemas.iter().zip(&names).zip(&scope.tables) {
        if !tables
            .iter()
            .any(|t| &t.name == name && (schema.is_empty() || &t.schema == schema))
        {
            found.push(format!("--table {pattern}"));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(schema: &str, name: &str) -> Table {
        Table {
            schema: schema.into(),
            ..crate::audit::checks::fixture::table(1, name)
        }
    }

    #[test]
    fn filters_that_match_no_table_are_named_as_written() {
        let tables = [table("public", "orders"), table("Billing", "Invoices")];
        let scope = Scope {
            schemas: vec!["public".into(), "billing".into()],
            exclude_schemas: Vec::new(),
            tables: vec![
                "ORDERS".into(),
                "orderz".into(),
                "\"Billing\".\"Invoices\"".into(),
                "public.invoices".into(),
            ],
        };
        assert_eq!(
            unmatched(&scope, &tables),
            vec![
                "--schema billing",
                "--table orderz",
                "--table public.invoices"
            ]
        );
        assert!(unmatched(&Scope::default(), &[]).is_empty());
    }
}
