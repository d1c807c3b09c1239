//! Whether a `--drop-index` name can be measured, judged from the catalog before any work: a
//! name that resolves to nothing, to a table, or to the index of a primary key or another
//! constraint fails only inside the candidate's transaction otherwise, after the baseline ran.

/// What the catalog says about a `--drop-index` name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DropTarget {
    pub found: bool,
    /// `pg_class.relkind`: `i` an index, `I` a partitioned index.
    pub relkind: Option<String>,
    pub qualified: Option<String>,
    /// `pg_constraint.contype` of a constraint the index backs: `p`, `u` or `x`.
    pub constraint_type: Option<String>,
    pub constraint_name: Option<String>,
}

/// Why `name` cannot be dropped for a measurement, with what to do instead; `None` when it can.
pub fn refusal(name: &str, target: &DropTarget) -> Option<String> {
    if !target.found {
        return Some(format!(
            "--drop-index {name}: no such index on the search path.\n\
             hint: qualify it with its schema (schema.index), or list the table's indexes with \\d TABLE in psql"
        ));
    }
    let shown = target.qualified.as_deref().unwrap_or(name);
    if !matches!(target.relkind.as_deref(), Some("i" | "I")) {
        return Some(format!(
            "--drop-index {name}: {shown} is not an index.\n\
             hint: give the name of one of its indexes"
        ));
    }
    // DROP INDEX refuses an index a constraint owns ("cannot drop index ... because constraint
    // ... requires it"): the constraint would have to go too, which is not what is measured.
    let (kind, fix) = match target.constraint_type.as_deref()? {
        "p" => ("primary key", "ALTER TABLE ... DROP CONSTRAINT"),
        "u" => ("unique constraint", "ALTER TABLE ... DROP CONSTRAINT"),
        _ => ("exclusion constraint", "ALTER TABLE ... DROP CONSTRAINT"),
    };
    Some(format!(
        "--drop-index {name}: {shown} is the index of the {kind} {}, which DROP INDEX cannot drop \
         (only {fix} can, and the constraint would go with it).\n\
         hint: measure the drop of an index that backs no constraint",
        target.constraint_name.as_deref().unwrap_or("?")
    ))
}

#[cfg(test)]
mod tests {
    use super::{DropTarget, refusal};

    fn index(constraint: Option<&str>) -> DropTarget {
        DropTarget {
            found: true,
            relkind: Some("i".into()),
            qualified: Some("public.t_pkey".into()),
            constraint_type: constraint.map(Into::into),
            constraint_name: constraint.map(|_| "t_pkey".into()),
        }
    }

    #[test]
    fn a_plain_index_can_be_dropped() {
        assert_eq!(refusal("t_a_idx", &index(None)), None);
    }

    #[test]
    fn missing_tables_and_constraint_indexes_are_refused() {
        let missing = refusal("nope", &DropTarget::default()).unwrap();
        assert!(
            missing.starts_with("--drop-index nope: no such index"),
            "{missing}"
        );
        let table = DropTarget {
            relkind: Some("r".into()),
            ..index(None)
        };
        assert!(refusal("t", &table).unwrap().contains("is not an index"));
        let pk = refusal("t_pkey", &index(Some("p"))).unwrap();
        assert!(pk.contains("index of the primary key t_pkey"), "{pk}");
        let unique = refusal("t_pkey", &index(Some("u"))).unwrap();
        assert!(unique.contains("unique constraint"), "{unique}");
    }
}
