//! A `compare` request, validated before anything connects: one query statement of an allowed
//! kind with a value for each of its parameters, and candidates that are each exactly one
//! `CREATE [UNIQUE] INDEX` statement (or the name of an index to drop).

use crate::sql::{self, IndexCandidate, Query, QueryKind, SqlError, WriteKind};

/// How the plans are obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// EXPLAIN ANALYZE with real indexes built in rolled-back transactions.
    Measured,
    /// EXPLAIN without ANALYZE, with HypoPG's hypothetical indexes: estimates only.
    Hypothetical,
    /// The estimate-only generic plan of a parameterised query.
    GenericPlan,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Measured => "measured",
            Mode::Hypothetical => "hypothetical",
            Mode::GenericPlan => "generic_plan",
        }
    }

    /// Whether the plans carry only the planner's estimates.
    pub fn is_estimate(self) -> bool {
        self != Mode::Measured
    }
}

/// A candidate: an index to build, or an existing one to drop.
#[derive(Debug, Clone, PartialEq)]
pub enum CandidateSpec {
    Create(IndexCandidate),
    /// `--drop-index NAME`: how the query runs without this existing index.
    Drop {
        name: String,
    },
}

impl CandidateSpec {
    /// The index's name as the user knows it (generated when the statement named none).
    pub fn name(&self) -> &str {
        match self {
            CandidateSpec::Create(c) => &c.name,
            CandidateSpec::Drop { name } => name,
        }
    }

    /// How messages name it before PostgreSQL has: the user's name, or for an unnamed
    /// candidate its definition ("unnamed index ON events (status)"), never the placeholder
    /// pgplan keeps internally.
    pub fn describe(&self) -> &str {
        match self {
            CandidateSpec::Create(c) => c.describe(),
            CandidateSpec::Drop { name } => name,
        }
    }

    /// The statement as the user wrote it (to run in production, CONCURRENTLY and all).
    pub fn user_sql(&self) -> String {
        match self {
            CandidateSpec::Create(c) => c.original.clone(),
            CandidateSpec::Drop { name } => format!("DROP INDEX CONCURRENTLY {name}"),
        }
    }

    /// The statement pgplan runs for it.
    pub fn sql(&self) -> String {
        match self {
            CandidateSpec::Create(c) => c.sql.clone(),
            CandidateSpec::Drop { name } => format!("DROP INDEX {name}"),
        }
    }
}

/// What the user asked for, read from the command line and files but not yet checked.
#[derive(Debug, Clone, Default)]
pub struct RequestInput {
    pub query_text: String,
    /// Where the query came from (a file name, or "standard input").
    pub query_source: String,
    pub index_sqls: Vec<String>,
    /// `--index-file`: its name and contents.
    pub index_file: Option<(String, String)>,
    pub drop_indexes: Vec<String>,
    pub runs: u32,
    pub min_gain_percent: f64,
    pub analyze: bool,
    pub allow_writes: bool,
    pub allow_lasting_effects: bool,
    pub params: Vec<String>,
    pub generic_plan: bool,
    pub hypothetical: bool,
    /// `--cold`: evict the query's relations from shared buffers before each first run.
    pub cold: bool,
}

/// Why a request cannot run. Each message says what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("{source_name}: {error}")]
    Sql {
        source_name: String,
        error: SqlError,
    },
    #[error(
        "{source_name}: the query is {kind}, which writes; pgplan runs it only with --allow-writes (still rolled back)"
    )]
    WriteNotAllowed { source_name: String, kind: String },
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
        "the query has no parameters ($1, $2, ...) but {given} --param value(s) were given; drop --param, or write the query with $1 where the value goes"
    )]
    ParamsWithoutParameters { given: usize },
    #[error(
        "--param with --generic-plan: the generic plan is planned without parameter values; drop the --param values, or drop --generic-plan to measure with them"
    )]
    ParamsWithGenericPlan,
    #[error("nothing to compare: give a candidate with --index, --index-file or --drop-index")]
    NoCandidates,
    #[error("--index {number}: {error}")]
    Candidate { number: usize, error: SqlError },
    #[error("{file}: {error}")]
    CandidateFile { file: String, error: SqlError },
    #[error("{file} holds no CREATE INDEX statement")]
    EmptyCandidateFile { file: String },
    #[error("two candidates are named {name}; name them apart (CREATE INDEX name ON ...)")]
    DuplicateName { name: String },
    #[error(
        "--runs must be at least 1 (got {0}): the warm figures are the median of the counted runs"
    )]
    Runs(u32),
    #[error("--min-gain must be a percentage from 0 to 100 (got {0})")]
    MinGain(f64),
    #[error("--hypothetical and --generic-plan cannot be combined; choose one")]
    ModeConflict,
    #[error(
        "--cold evicts the query's relations before its first run, which only a measured compare runs; drop --cold, or drop --hypothetical/--generic-plan"
    )]
    ColdWithoutRuns,
    #[error("--drop-index {name:?} is not an index name (expected name or schema.name)")]
    DropName { name: String },
}

/// A validated `compare` request.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    pub query: Query,
    pub query_source: String,
    pub candidates: Vec<CandidateSpec>,
    pub runs: u32,
    pub min_gain_percent: f64,
    pub analyze: bool,
    /// `--allow-writes`: the measured runs may write (rolled back); read-only otherwise.
    pub allow_writes: bool,
    /// `--allow-lasting-effects`: functions whose effects outlive the rollback are run anyway.
    pub allow_lasting_effects: bool,
    pub params: Vec<String>,
    pub mode: Mode,
    /// `--cold`: each transaction's first run starts with the query's relations evicted from
    /// shared buffers (truly cold); otherwise it runs on the cache as it is.
    pub cold: bool,
    /// Things the user must know before reading the figures.
    pub warnings: Vec<String>,
}

impl CompareRequest {
    /// Checks everything that can be checked without a server.
    pub fn validate(input: RequestInput) -> Result<Self, RequestError> {
        let query =
            sql::parse_single_query(&input.query_text).map_err(|error| RequestError::Sql {
                source_name: input.query_source.clone(),
                error,
            })?;
        let mode = mode_of(&input)?;
        let mut warnings = Vec::new();
        check_query_kind(&input, &query, mode, &mut warnings)?;
        check_parameters_and_figures(&input, &query, mode)?;

        let candidates = parse_candidates(&input)?;
        analyze_warnings(&input, mode, &mut warnings);
        concurrently_warnings(&candidates, mode, &mut warnings);
        let mut specs: Vec<CandidateSpec> =
            candidates.into_iter().map(CandidateSpec::Create).collect();
        specs.extend(drop_specs(&input, mode, &mut warnings)?);
        if specs.is_empty() {
            return Err(RequestError::NoCandidates);
        }
        if input.cold {
            warnings.push(
                "--cold evicts the query's tables and their indexes from shared buffers before \
                 each first run (pg_buffercache_evict): other sessions then read those pages \
                 again, and the reads pgplan counts may still come from the operating system's \
                 page cache"
                    .into(),
            );
        }
        check_unique_names(&specs)?;
        if let Some(warning) = mode_warning(mode) {
            warnings.push(warning.into());
        }
        Ok(CompareRequest {
            query,
            query_source: input.query_source,
            candidates: specs,
            runs: input.runs,
            min_gain_percent: input.min_gain_percent,
            analyze: input.analyze,
            allow_writes: input.allow_writes,
            allow_lasting_effects: input.allow_lasting_effects,
            params: input.params,
            mode,
            cold: input.cold,
            warnings,
        })
    }
}

/// How the plans are obtained, from flags that exclude each other.
fn mode_of(input: &RequestInput) -> Result<Mode, RequestError> {
    if input.hypothetical && input.generic_plan {
        return Err(RequestError::ModeConflict);
    }
    if input.cold && (input.hypothetical || input.generic_plan) {
        return Err(RequestError::ColdWithoutRuns);
    }
    Ok(if input.hypothetical {
        Mode::Hypothetical
    } else if input.generic_plan {
        Mode::GenericPlan
    } else {
        Mode::Measured
    })
}

/// Refuses a query that is not a read, or a write without `--allow-writes`; warns of what a
/// measured write does in spite of the rollback.
fn check_query_kind(
    input: &RequestInput,
    query: &Query,
    mode: Mode,
    warnings: &mut Vec<String>,
) -> Result<(), RequestError> {
    match &query.kind {
        QueryKind::Read => {}
        // Only measured runs execute the query: the estimate-only modes never run it.
        QueryKind::Write(_) if input.allow_writes && mode != Mode::Measured => {}
        QueryKind::Write(kind) if input.allow_writes => {
            warnings.push(format!(
                "the query is {}: every run is rolled back, but sequences it draws from still advance \
                 (nextval is not transactional), and its triggers run",
                kind.with_article()
            ));
        }
        QueryKind::Write(kind) => {
            return Err(RequestError::WriteNotAllowed {
                source_name: input.query_source.clone(),
                kind: write_kind(*kind),
            });
        }
        QueryKind::Other(keyword) => {
            return Err(RequestError::NotAQuery {
                source_name: input.query_source.clone(),
                keyword: keyword.to_uppercase(),
            });
        }
    }
    Ok(())
}

/// One value per parameter of the query (none for a generic plan), at least one run, and a
/// minimum gain that is a percentage.
fn check_parameters_and_figures(
    input: &RequestInput,
    query: &Query,
    mode: Mode,
) -> Result<(), RequestError> {
    let highest = query.max_parameter.unwrap_or(0);
    if mode == Mode::GenericPlan && !input.params.is_empty() {
        return Err(RequestError::ParamsWithGenericPlan);
    }
    if mode != Mode::GenericPlan && highest == 0 && !input.params.is_empty() {
        return Err(RequestError::ParamsWithoutParameters {
            given: input.params.len(),
        });
    }
    if mode != Mode::GenericPlan && highest as usize != input.params.len() {
        return Err(RequestError::Parameters {
            highest,
            given: input.params.len(),
        });
    }
    if input.runs == 0 {
        return Err(RequestError::Runs(0));
    }
    if !(0.0..=100.0).contains(&input.min_gain_percent) || input.min_gain_percent.is_nan() {
        return Err(RequestError::MinGain(input.min_gain_percent));
    }
    Ok(())
}

/// The candidates of `--index`, in order, then those of `--index-file`.
fn parse_candidates(input: &RequestInput) -> Result<Vec<IndexCandidate>, RequestError> {
    let mut candidates = Vec::new();
    for (i, text) in input.index_sqls.iter().enumerate() {
        let number = i + 1;
        let candidate = sql::parse_index_candidate(text, &format!("pgplan_candidate_{number}"))
            .map_err(|error| RequestError::Candidate { number, error })?;
        candidates.push(candidate);
    }
    if let Some((file, text)) = &input.index_file {
        let from_file = sql::parse_index_file(text, "pgplan_file_candidate").map_err(|error| {
            RequestError::CandidateFile {
                file: file.clone(),
                error,
            }
        })?;
        if from_file.is_empty() {
            return Err(RequestError::EmptyCandidateFile { file: file.clone() });
        }
        candidates.extend(from_file);
    }
    Ok(candidates)
}

/// What `--analyze` does in this mode.
fn analyze_warnings(input: &RequestInput, mode: Mode, warnings: &mut Vec<String>) {
    if input.analyze && mode == Mode::Measured {
        warnings.push(crate::effects::ANALYZE_BEFORE.into());
    }
    if input.analyze && mode == Mode::Hypothetical {
        warnings.push(
            "--analyze is ignored with --hypothetical: nothing is built, so there is nothing \
             new to gather statistics for"
                .into(),
        );
    }
}

/// The lock each CONCURRENTLY candidate takes instead, built plainly in the transaction.
fn concurrently_warnings(candidates: &[IndexCandidate], mode: Mode, warnings: &mut Vec<String>) {
    for c in candidates {
        // Hypothetical indexes are never built, so no lock is taken.
        if c.concurrently && mode != Mode::Hypothetical {
            let which = if c.name_generated {
                sql::shorten(&c.original)
            } else {
                c.name.clone()
            };
            warnings.push(format!(
                "{which}: CONCURRENTLY cannot run inside a transaction block, so pgplan builds it \
                 plainly inside the rolled-back transaction (it holds a SHARE lock on {} while it \
                 builds: writes to the table wait)",
                c.table
            ));
        }
    }
}

/// The `--drop-index` candidates, each name a possibly qualified identifier, with the lock a
/// real drop takes.
fn drop_specs(
    input: &RequestInput,
    mode: Mode,
    warnings: &mut Vec<String>,
) -> Result<Vec<CandidateSpec>, RequestError> {
    let mut specs = Vec::new();
    for name in &input.drop_indexes {
        let valid = sql::tokenize(name).is_ok_and(|tokens| {
            !tokens.is_empty()
                && tokens.iter().all(|t| {
                    matches!(
                        t.kind,
                        sql::TokenKind::Word | sql::TokenKind::QuotedIdentifier
                    ) || t.text == "."
                })
        });
        if !valid {
            return Err(RequestError::DropName { name: name.clone() });
        }
        // Only HypoPG's hiding is free of locks: the generic plan still drops it for real.
        if mode != Mode::Hypothetical {
            warnings.push(format!(
                "--drop-index {name}: DROP INDEX takes an ACCESS EXCLUSIVE lock on the table, held \
                 until the transaction rolls back: other sessions' queries on it wait meanwhile \
                 (getting the lock is bounded by --lock-timeout)"
            ));
        }
        specs.push(CandidateSpec::Drop { name: name.clone() });
    }
    Ok(specs)
}

/// Refuses two candidates of one name: the report tells candidates apart by name.
fn check_unique_names(specs: &[CandidateSpec]) -> Result<(), RequestError> {
    let mut names: Vec<&str> = specs.iter().map(CandidateSpec::name).collect();
    names.sort_unstable();
    if let Some(dup) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(RequestError::DuplicateName {
            name: dup[0].to_owned(),
        });
    }
    Ok(())
}

/// What an estimate-only mode's figures are.
fn mode_warning(mode: Mode) -> Option<&'static str> {
    match mode {
        Mode::Hypothetical => Some(
            "hypothetical mode: nothing is built or run; every figure is the planner's estimate \
             (HypoPG), not a measurement",
        ),
        Mode::GenericPlan => Some(
            "generic plan: the query is planned without parameter values and not run; every \
             figure is the planner's estimate",
        ),
        Mode::Measured => None,
    }
}

fn write_kind(kind: WriteKind) -> String {
    match kind {
        WriteKind::SelectInto => "SELECT ... INTO (it creates a table)".into(),
        other => other.with_article().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(query: &str, indexes: &[&str]) -> RequestInput {
        RequestInput {
            query_text: query.into(),
            query_source: "q.sql".into(),
            index_sqls: indexes.iter().map(|s| s.to_string()).collect(),
            runs: 3,
            min_gain_percent: 10.0,
            ..RequestInput::default()
        }
    }

    #[test]
    fn generic_plans_take_no_parameter_values_and_still_warn_of_drop_locks() {
        let mut i = input("SELECT * FROM t WHERE a = $1", &[]);
        i.generic_plan = true;
        i.drop_indexes = vec!["t_a_idx".into()];
        let r = CompareRequest::validate(i.clone()).unwrap();
        assert!(
            r.warnings.iter().any(|w| w.contains("ACCESS EXCLUSIVE")),
            "{:?}",
            r.warnings
        );
        i.params = vec!["1".into()];
        assert!(matches!(
            CompareRequest::validate(i),
            Err(RequestError::ParamsWithGenericPlan)
        ));
    }

    #[test]
    fn a_plain_request_validates() {
        let r = CompareRequest::validate(input(
            "SELECT * FROM t WHERE a = 1",
            &["CREATE INDEX CONCURRENTLY ON t (a)"],
        ))
        .unwrap();
        assert_eq!(r.mode, Mode::Measured);
        assert_eq!(r.candidates.len(), 1);
        assert_eq!(r.candidates[0].name(), "pgplan_candidate_1");
        assert!(!r.candidates[0].sql().contains("CONCURRENTLY"));
        assert!(r.warnings.iter().any(|w| w.contains("CONCURRENTLY")));
    }

    #[test]
    fn writes_need_allow_writes() {
        let err = CompareRequest::validate(input("DELETE FROM t", &["CREATE INDEX ON t (a)"]))
            .unwrap_err();
        assert!(err.to_string().contains("--allow-writes"), "{err}");
        let mut ok = input("DELETE FROM t", &["CREATE INDEX ON t (a)"]);
        ok.allow_writes = true;
        let r = CompareRequest::validate(ok).unwrap();
        assert!(r.warnings.iter().any(|w| w.contains("sequences")));
        // Each statement with the article a person would use before it.
        for (query, kind) in [
            ("UPDATE t SET a = 1", "an UPDATE"),
            ("INSERT INTO t VALUES (1)", "an INSERT"),
            ("DELETE FROM t", "a DELETE"),
        ] {
            let err = CompareRequest::validate(input(query, &["CREATE INDEX ON t (a)"]))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("the query is {kind}, which writes")),
                "{err}"
            );
            let mut ok = input(query, &["CREATE INDEX ON t (a)"]);
            ok.allow_writes = true;
            let warnings = CompareRequest::validate(ok).unwrap().warnings;
            assert!(
                warnings
                    .iter()
                    .any(|w| w.starts_with(&format!("the query is {kind}: every run"))),
                "{warnings:?}"
            );
        }
    }

    #[test]
    fn smuggled_statements_and_other_kinds_are_refused() {
        assert!(
            CompareRequest::validate(input("SELECT 1; DROP TABLE t", &["CREATE INDEX ON t (a)"]))
                .is_err()
        );
        assert!(
            CompareRequest::validate(input("SELECT 1", &["CREATE INDEX ON t (a); DROP TABLE t"]))
                .is_err()
        );
        let err =
            CompareRequest::validate(input("VACUUM t", &["CREATE INDEX ON t (a)"])).unwrap_err();
        assert!(err.to_string().contains("VACUUM"), "{err}");
        let err =
            CompareRequest::validate(input("SELECT 1", &["CREATE TABLE x (a int)"])).unwrap_err();
        assert!(err.to_string().contains("--index 1"), "{err}");
    }

    #[test]
    fn parameters_must_match() {
        let err = CompareRequest::validate(input(
            "SELECT * FROM t WHERE a = $2",
            &["CREATE INDEX ON t (a)"],
        ))
        .unwrap_err();
        assert!(err.to_string().contains("$2"), "{err}");
        let mut none = input("SELECT * FROM t WHERE a = 1", &["CREATE INDEX ON t (a)"]);
        none.params = vec!["7".into()];
        assert_eq!(
            CompareRequest::validate(none).unwrap_err().to_string(),
            "the query has no parameters ($1, $2, ...) but 1 --param value(s) were given; drop \
             --param, or write the query with $1 where the value goes"
        );
        let mut with_params = input("SELECT * FROM t WHERE a = $1", &["CREATE INDEX ON t (a)"]);
        with_params.params = vec!["7".into()];
        assert!(CompareRequest::validate(with_params).is_ok());
        let mut generic = input("SELECT * FROM t WHERE a = $1", &["CREATE INDEX ON t (a)"]);
        generic.generic_plan = true;
        assert_eq!(
            CompareRequest::validate(generic).unwrap().mode,
            Mode::GenericPlan
        );
    }

    #[test]
    fn candidates_are_required_and_named_apart() {
        assert!(matches!(
            CompareRequest::validate(input("SELECT 1", &[])),
            Err(RequestError::NoCandidates)
        ));
        assert!(matches!(
            CompareRequest::validate(input(
                "SELECT 1",
                &["CREATE INDEX i ON t (a)", "CREATE INDEX i ON t (b)"]
            )),
            Err(RequestError::DuplicateName { .. })
        ));
        let mut drop = input("SELECT 1", &[]);
        drop.drop_indexes = vec!["public.t_a_idx".into()];
        let r = CompareRequest::validate(drop).unwrap();
        assert!(r.warnings.iter().any(|w| w.contains("ACCESS EXCLUSIVE")));
        let mut bad = input("SELECT 1", &[]);
        bad.drop_indexes = vec!["x; DROP TABLE t".into()];
        assert!(matches!(
            CompareRequest::validate(bad),
            Err(RequestError::DropName { .. })
        ));
    }
}
