//! The pure side of `pgplan explain -d`: the validated request (one query of an allowed kind,
//! a value for each parameter), and what only a live server knows, added to the plan's
//! findings ([`mod@enrich`]).

pub mod enrich;

use crate::sql::{self, Query, QueryKind, SqlError};

pub use enrich::{ExtendedStatistics, LiveFacts, SessionMemory, TableStatistics, enrich};

/// What the user asked for, read from the command line and the query file.
#[derive(Debug, Clone, Default)]
pub struct ExplainInput {
    pub query_text: String,
    /// Where the query came from (a file name, or "standard input").
    pub query_source: String,
    pub params: Vec<String>,
    pub generic_plan: bool,
    pub allow_writes: bool,
    pub allow_lasting_effects: bool,
}

/// A validated live explain.
#[derive(Debug, Clone)]
pub struct ExplainRequest {
    pub query: Query,
    pub query_source: String,
    pub params: Vec<String>,
    /// The estimate-only generic plan (nothing runs).
    pub generic_plan: bool,
    /// `--allow-writes`: the run may write (rolled back), a function's writes too.
    pub allow_writes: bool,
    /// `--allow-lasting-effects`: functions whose effects outlive the rollback run anyway.
    pub allow_lasting_effects: bool,
    /// Things the user must know before reading the figures.
    pub warnings: Vec<String>,
}

impl ExplainRequest {
    /// Whether the query is run (EXPLAIN ANALYZE) rather than only planned.
    pub fn runs(&self) -> bool {
        !self.generic_plan
    }

    /// Whether the query writes (or `--allow-writes` lets what it calls write), so its
    /// transaction cannot be read-only.
    pub fn writes(&self) -> bool {
        matches!(self.query.kind, QueryKind::Write(_)) || self.allow_writes
    }

    /// Checks everything that can be checked without a server.
    pub fn validate(input: ExplainInput) -> Result<Self, ExplainRequestError> {
        let source_name = input.query_source.clone();
        let query = sql::parse_single_query(&input.query_text).map_err(|error| {
            ExplainRequestError::Sql {
                source_name: source_name.clone(),
                error,
            }
        })?;
        let mut warnings = Vec::new();
        match &query.kind {
            QueryKind::Read => {}
            QueryKind::Write(_) if input.generic_plan => {}
            QueryKind::Write(kind) if input.allow_writes => warnings.push(format!(
                "the query is {}: it runs and is rolled back, but sequences it draws from still \
                 advance (nextval is not transactional), and its triggers run",
                kind.with_article()
            )),
            QueryKind::Write(kind) => {
                return Err(ExplainRequestError::WriteNotAllowed {
                    source_name,
                    kind: kind.with_article(),
                });
            }
            QueryKind::Other(keyword) => {
                return Err(ExplainRequestError::NotAQuery {
                    source_name,
                    keyword: keyword.to_uppercase(),
                });
            }
        }
        let highest = query.max_parameter.unwrap_or(0);
        if input.generic_plan && !input.params.is_empty() {
            return Err(ExplainRequestError::ParamsWithGenericPlan);
        }
        if !input.generic_plan && highest as usize != input.params.len() {
            return Err(ExplainRequestError::Parameters {
                highest,
                given: input.params.len(),
            });
        }
        if input.generic_plan {
            warnings.push(
                "generic plan: the query is planned without parameter values and not run; every \
                 figure is the planner's estimate"
                    .into(),
            );
        }
        Ok(ExplainRequest {
            query,
            query_source: input.query_source,
            params: input.params,
            generic_plan: input.generic_plan,
            allow_writes: input.allow_writes,
            allow_lasting_effects: input.allow_lasting_effects,
            warnings,
        })
    }
}

/// Why a live explain cannot run. Each message says what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ExplainRequestError {
    #[error("{source_name}: {error}")]
    Sql {
        source_name: String,
        error: SqlError,
    },
    #[error(
        "{source_name}: the query is {kind}, which writes; pgplan runs it only with --allow-writes (then rolled back)"
    )]
    WriteNotAllowed {
        source_name: String,
        kind: &'static str,
    },
    #[error(
        "{source_name}: expected a query (SELECT, WITH, VALUES, TABLE, or INSERT/UPDATE/DELETE/MERGE with --allow-writes), found a statement starting with {keyword}"
    )]
    NotAQuery {
        source_name: String,
        keyword: String,
    },
    #[error(
        "the query uses parameters up to ${highest} but {given} --param value(s) were given; give one --param per parameter, in order, or use --generic-plan for the estimate-only generic plan"
    )]
    Parameters { highest: u32, given: usize },
    #[error(
        "--param with --generic-plan: the generic plan is planned without parameter values; drop the --param values, or drop --generic-plan to run with them"
    )]
    ParamsWithGenericPlan,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(query: &str) -> ExplainInput {
        ExplainInput {
            query_text: query.into(),
            query_source: "q.sql".into(),
            ..ExplainInput::default()
        }
    }

    #[test]
    fn writes_run_only_when_allowed() {
        let err = ExplainRequest::validate(input("UPDATE t SET a = 1")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "q.sql: the query is an UPDATE, which writes; pgplan runs it only with --allow-writes \
             (then rolled back)"
        );
        let mut allowed = input("UPDATE t SET a = 1");
        allowed.allow_writes = true;
        let request = ExplainRequest::validate(allowed).unwrap();
        assert!(request.writes() && request.runs());
        assert!(
            request.warnings[0].contains("sequences"),
            "{:?}",
            request.warnings
        );
        // A generic plan only plans: a write needs no --allow-writes there.
        let mut generic = input("DELETE FROM t WHERE id = $1");
        generic.generic_plan = true;
        assert!(!ExplainRequest::validate(generic).unwrap().runs());
    }

    #[test]
    fn parameters_are_counted_before_connecting() {
        let err = ExplainRequest::validate(input("SELECT * FROM t WHERE a = $2")).unwrap_err();
        assert!(
            err.to_string().contains("parameters up to $2 but 0"),
            "{err}"
        );
        let mut both = input("SELECT * FROM t WHERE a = $1");
        both.generic_plan = true;
        both.params = vec!["1".into()];
        assert!(matches!(
            ExplainRequest::validate(both),
            Err(ExplainRequestError::ParamsWithGenericPlan)
        ));
        let mut given = input("SELECT * FROM t WHERE a = $1");
        given.params = vec!["1".into()];
        assert_eq!(ExplainRequest::validate(given).unwrap().params, ["1"]);
    }

    #[test]
    fn other_statements_and_smuggled_ones_are_refused() {
        let err = ExplainRequest::validate(input("VACUUM t")).unwrap_err();
        assert!(err.to_string().contains("starting with VACUUM"), "{err}");
        assert!(ExplainRequest::validate(input("SELECT 1; DROP TABLE t")).is_err());
    }
}
