//! Rule: GIN for containment and overlap on arrays, jsonb and tsvector (`@>`, `<@`, `&&`, `?`,
//! `@@`), GiST for the operators of range and geometric types. A btree cannot answer these.
//! For jsonb searched only by `@>` (and the jsonpath operators), `jsonb_path_ops`: its entries
//! hash whole paths, so the index is smaller and a containment search reads fewer entries.

use super::Input;
use crate::advise::access::{Key, Use};
use crate::advise::{Candidate, IndexKey, Kind, Method, Note};

const GIN_ARRAY: &[&str] = &["@>", "<@", "&&"];
const GIN_JSONB: &[&str] = &["@>", "?", "?|", "?&", "@?", "@@"];
const JSONB_PATH_OPS: &[&str] = &["@>", "@?", "@@"];
const GIST: &[&str] = &["&&", "@>", "<@", "<<", ">>", "&<", "&>", "-|-", "~=", "<->"];

fn gist_type(type_name: &str) -> bool {
    type_name.ends_with("range")
        || type_name.ends_with("multirange")
        || matches!(
            type_name,
            "point" | "box" | "polygon" | "circle" | "inet" | "cidr"
        )
}

pub fn propose(input: &Input<'_>, notes: &mut Vec<Note>) -> Vec<Candidate> {
    let a = input.access;
    let Some(evidence) = input.evidence() else {
        return Vec::new();
    };
    let mut out: Vec<Candidate> = Vec::new();
    for cond in &a.conditions {
        let Use::Operator(op) = &cond.uses else {
            continue;
        };
        let method = match &cond.key {
            Key::Column(name) => {
                let Some(col) = input.table.column(name) else {
                    continue;
                };
                let t = col.type_name.as_str();
                if col.is_array() && GIN_ARRAY.contains(&op.as_str()) {
                    Some((Method::Gin, None))
                } else if t == "jsonb" && GIN_JSONB.contains(&op.as_str()) {
                    let ops_on_column: Vec<&str> = a
                        .conditions
                        .iter()
                        .filter(|c| c.key == cond.key)
                        .filter_map(|c| match &c.uses {
                            Use::Operator(o) => Some(o.as_str()),
                            _ => None,
                        })
                        .collect();
                    let path_ops = ops_on_column.iter().all(|o| JSONB_PATH_OPS.contains(o));
                    Some((Method::Gin, path_ops.then(|| "jsonb_path_ops".to_owned())))
                } else if t == "tsvector" && op == "@@" {
                    Some((Method::Gin, None))
                } else if gist_type(t) && GIST.contains(&op.as_str()) {
                    Some((Method::Gist, None))
                } else {
                    None
                }
            }
            // An expression searched by text search (`to_tsvector('english', body) @@ q`).
            Key::Expression { sql, .. } if op == "@@" && sql.starts_with("to_tsvector(") => {
                Some((Method::Gin, None))
            }
            Key::Expression { .. } => None,
        };
        let Some((method, opclass)) = method else {
            notes.push(input.note(format!(
                "no index proposed for {}: advise knows no operator class for {op} on it",
                cond.sql
            )));
            continue;
        };
        let key = IndexKey {
            opclass,
            ..IndexKey::plain(cond.key.clone())
        };
        if out.iter().any(|c| c.keys[0] == key) {
            continue;
        }
        let kind = if method == Method::Gin {
            Kind::Gin
        } else {
            Kind::Gist
        };
        let mut c = input.candidate(method, vec![key], kind);
        c.reasons.push(format!(
            "{evidence}: {} uses {op}, which a {} index answers",
            cond.sql,
            method.name().to_uppercase()
        ));
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::advise::testing::{definitions, propose_for};

    #[test]
    fn jsonb_containment_gets_jsonb_path_ops() {
        for v in 13..=18 {
            let p = propose_for("advise/gin_jsonb_contains", v);
            assert_eq!(
                definitions(&p),
                ["ON public.docs USING gin (attrs jsonb_path_ops)"],
                "pg{v}"
            );
        }
    }

    #[test]
    fn array_overlap_gets_gin() {
        for v in 13..=18 {
            let p = propose_for("advise/gin_array_overlap", v);
            assert_eq!(
                definitions(&p),
                ["ON public.docs USING gin (tags)"],
                "pg{v}"
            );
            assert_eq!(p.candidates[0].kinds, [crate::advise::Kind::Gin]);
        }
    }
}
