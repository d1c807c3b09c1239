//! Command-line arguments, and their conversion into validated request values before anything
//! connects or reads a file.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

use crate::plan::Severity;
use crate::report::Format;

#[derive(Debug, Parser)]
#[command(
    name = "pgplan",
    version,
    about = "Measures whether a PostgreSQL index pays for itself, and audits the indexes and tables you already have.",
    long_about = None,
    // psql's -h is the host; help is --help (or -?).
    disable_help_flag = true,
    propagate_version = true,
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// When to colour text output: auto (a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,

    /// Say more on stderr (connection sources, every step).
    #[arg(short = 'v', long, action = ArgAction::Count, global = true)]
    pub verbose: u8,

    /// Print help.
    #[arg(long = "help", short = '?', action = ArgAction::Help, global = true)]
    pub help: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read a saved EXPLAIN (FORMAT JSON) plan: its figures, tree and findings. With -d, run a
    /// query on a server instead (rolled back) and add what the server knows to the findings.
    Explain(Box<ExplainArgs>),
    /// Diff two saved plans of the same query node by node. No database needed.
    Diff(DiffArgs),
    /// Connect like psql and show what pgplan learned about the server and what it can do there.
    Info(InfoArgs),
    /// Measure a query before and after candidate indexes, each built in a transaction that is
    /// always rolled back.
    Compare(Box<CompareArgs>),
    /// Audit index and table health across a primary and its standbys, read-only.
    Audit(AuditArgs),
    /// Propose the indexes a workload needs and prove each by measurement: every candidate
    /// built once in a rolled-back transaction, the set chosen greedily from what was measured.
    Advise(Box<AdviseArgs>),
    /// Gate CI on a workload's plans: record a baseline (--update), then measure again and
    /// fail (exit 1) when a query touches more pages, reads a table sequentially, spills or
    /// fails where the baseline did not. Everything runs rolled back.
    Check(Box<CheckArgs>),
    /// Export planner statistics from one database (read-only, a standby too) and import them
    /// into another (PostgreSQL 18+), so a CI database plans with production's statistics.
    Stats(StatsArgs),
    /// Start a throwaway server, load a 500,000-row table and run compare and audit on it.
    Demo(DemoArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) to standard output.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to standard output, or write one page per command into a
    /// directory.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write pgplan.1 and one pgplan-COMMAND.1 per command into DIR instead of printing
    /// pgplan.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The plan: a file with EXPLAIN output in any format (TEXT as psql prints it, JSON, YAML,
    /// XML, or an auto_explain log excerpt), or - for standard input. With a connection option
    /// (-d, -h, -p, -U): the query to run, one statement.
    pub plan: String,

    /// Which plan to read when the input holds several (an auto_explain log, a psql session):
    /// 1 for the first (the default).
    #[arg(long = "plan", value_name = "N")]
    pub plan_number: Option<usize>,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Exit with code 1 when a finding is at least this severe.
    #[arg(long, value_enum)]
    pub fail_on: Option<SeverityArg>,

    /// With a connection: a value for the query's parameters $1, $2, ... in order (repeatable).
    #[arg(long = "param", value_name = "VALUE")]
    pub params: Vec<String>,
    /// With a connection: the estimate-only generic plan (plan_cache_mode = force_generic_plan)
    /// instead of running the query.
    #[arg(long)]
    pub generic_plan: bool,
    /// With a connection: allow INSERT, UPDATE, DELETE and MERGE (rolled back; sequences still
    /// advance, and the rolled-back row versions stay behind as dead rows until VACUUM).
    #[arg(long)]
    pub allow_writes: bool,
    /// With a connection: run a query that calls functions whose effects outlive the rollback
    /// or reach outside the session (replication slots, signals, dblink, ...), directly or
    /// through the bodies of the user's functions, refused otherwise.
    #[arg(long)]
    pub allow_lasting_effects: bool,
    /// With a connection: write the plan (JSON, as the server sent it) to FILE.
    #[arg(long, value_name = "FILE")]
    pub save_plan: Option<PathBuf>,

    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub session: SessionArgs,
}

impl ExplainArgs {
    /// Whether a connection option was given: then the argument is a query to run.
    pub fn live(&self) -> bool {
        let c = &self.conn;
        c.dbname.is_some() || c.host.is_some() || c.port.is_some() || c.username.is_some()
    }
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The plan before the change (a file, or - for standard input).
    pub before: String,
    /// The plan after the change (a file, or - for standard input; not both).
    pub after: String,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Exit with code 1 when the after plan touches more than PERCENT% more pages than the before
    /// plan (or, without buffer counts, takes that much longer).
    #[arg(long, value_name = "PERCENT")]
    pub fail_on_regression: Option<f64>,
}

/// Severity thresholds on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SeverityArg {
    Info,
    Warning,
    Critical,
}

impl From<SeverityArg> for Severity {
    fn from(s: SeverityArg) -> Self {
        match s {
            SeverityArg::Info => Severity::Info,
            SeverityArg::Warning => Severity::Warning,
            SeverityArg::Critical => Severity::Critical,
        }
    }
}

/// Where to connect, as psql takes it. Anything not given comes from a service file, the PG*
/// environment variables and libpq's defaults, in libpq's order.
#[derive(Debug, Clone, Args, Default)]
pub struct ConnArgs {
    /// Database name, or a conninfo string (key=value ...), or a postgresql:// URL.
    #[arg(short = 'd', long = "dbname", value_name = "DBNAME|CONNINFO")]
    pub dbname: Option<String>,
    /// Server host name, IP address, or Unix socket directory.
    #[arg(short = 'h', long = "host")]
    pub host: Option<String>,
    /// Server port.
    #[arg(short = 'p', long = "port")]
    pub port: Option<String>,
    /// User name.
    #[arg(short = 'U', long = "username")]
    pub username: Option<String>,
}

/// Limits applied to everything pgplan runs, transaction-locally.
#[derive(Debug, Clone, Args)]
pub struct SessionArgs {
    /// statement_timeout for every statement pgplan runs (a number of ms, or with a unit: 30s,
    /// 5min), from 1ms to 24.8 days (PostgreSQL's largest).
    #[arg(long, value_parser = parse_statement_timeout, value_name = "DURATION")]
    pub statement_timeout: Option<Duration>,
    /// lock_timeout for every statement: how long to wait for a lock before giving up, from 1ms
    /// to 24.8 days.
    #[arg(long, value_parser = parse_lock_timeout, value_name = "DURATION")]
    pub lock_timeout: Option<Duration>,
    /// Connection attempts after the first when the server cannot be reached (full-jitter
    /// exponential backoff, never on authentication errors).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub retries: u32,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub session: SessionArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = InfoFormat::Text)]
    pub format: InfoFormat,
}

/// `info` reports facts for a person or a program, not for a pull request: no Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InfoFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The query: a file holding one statement, or - for standard input. Several files (or
    /// --workload) measure a workload: every query with each candidate.
    #[arg(value_name = "QUERY")]
    pub queries: Vec<String>,

    /// A workload: pg_stat_statements (the database's top queries by total time), a file of
    /// several statements, or a directory of .sql files; `-- calls: N` (per day) and
    /// `-- params: [...]` comments above a query say how often it runs and with what values.
    /// A server log (FILE.log stderr, FILE.csv csvlog, FILE.json jsonlog) of
    /// log_min_duration_statement or auto_explain: calls counted over its span, logged
    /// parameter values as samples.
    #[arg(long, value_name = "pg_stat_statements|FILE|DIR")]
    pub workload: Option<String>,
    /// With --workload pg_stat_statements: how many of the top statements.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: u32,
    /// With --workload pg_stat_statements: leave out statements with fewer calls.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub min_calls: u64,
    /// With a workload: stop measuring candidates once this much time has passed; one being
    /// measured then stops before its next run (the report lists each left out as "not
    /// measured (budget)").
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub budget: Option<Duration>,

    /// A candidate: one CREATE INDEX (or CREATE UNIQUE INDEX) statement. Repeat for several; each is measured
    /// alone, in its own rolled-back transaction.
    #[arg(long = "index", value_name = "SQL")]
    pub indexes: Vec<String>,
    /// A file of candidates, one CREATE INDEX statement each.
    #[arg(long, value_name = "FILE")]
    pub index_file: Option<PathBuf>,
    /// The reverse question: how does the query run without this existing index? Dropped inside
    /// the rolled-back transaction (it takes an ACCESS EXCLUSIVE lock on the table while it runs).
    #[arg(long = "drop-index", value_name = "NAME")]
    pub drop_indexes: Vec<String>,

    /// Measured runs after the first one; the warm figures are their median.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub runs: u32,
    /// A candidate pays when it cuts the median pages touched by at least this percentage.
    #[arg(long, default_value_t = 10.0, value_name = "PERCENT")]
    pub min_gain: f64,
    /// Run ANALYZE on the candidate's table inside its transaction (expression indexes have no
    /// statistics until then).
    #[arg(long)]
    pub analyze: bool,
    /// Allow INSERT, UPDATE, DELETE and MERGE, and functions that write (still rolled back;
    /// sequences still advance). Without it the measured runs are read-only.
    #[arg(long)]
    pub allow_writes: bool,
    /// With --allow-writes: run the representative write on TABLE even though it has user
    /// triggers, rules or publications, which it would fire (their effects may reach outside the
    /// rollback: dblink, another connection); otherwise that table's index entry cost is
    /// estimated. TABLE is read as PostgreSQL reads a table name (search_path applies).
    /// Repeat for several.
    #[arg(long = "allow-probe-triggers", value_name = "TABLE", requires = "allow_writes", value_parser = parse_table_name)]
    pub allow_probe_triggers: Vec<String>,
    /// Run a query that calls functions whose effects outlive the rollback or reach outside the
    /// session (replication slots, signals to other backends, statistics resets, session
    /// advisory locks, dblink, ...), directly or through the bodies of the user's SQL and
    /// PL/pgSQL functions (in an estimate, one marked IMMUTABLE or STABLE that planning runs),
    /// which pgplan refuses otherwise.
    #[arg(long)]
    pub allow_lasting_effects: bool,
    /// A value for the query's parameters $1, $2, ... in order (repeatable).
    #[arg(long = "param", value_name = "VALUE")]
    pub params: Vec<String>,
    /// Show the estimate-only generic plan (plan_cache_mode = force_generic_plan) instead of running.
    #[arg(long)]
    pub generic_plan: bool,
    /// Hypothetical indexes with HypoPG: estimates only, nothing is built; works on a standby.
    #[arg(long)]
    pub hypothetical: bool,
    /// Make each first run truly cold: evict the query's tables and indexes from shared buffers
    /// first (pg_buffercache_evict: PostgreSQL 17+, the pg_buffercache extension, superuser).
    /// This empties those pages from the server's cache for every session.
    #[arg(long)]
    pub cold: bool,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Exit with code 1 when no candidate pays (for a CI check on a proposed index).
    #[arg(long)]
    pub fail_unless_pays: bool,
    #[command(flatten)]
    pub writers: WriterArgs,
    /// Write every captured plan (JSON) into DIR, to replay with pgplan diff.
    #[arg(long, value_name = "DIR")]
    pub save_plans: Option<PathBuf>,

    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub session: SessionArgs,
}

/// How measuring yields to the table's writers: compare's and advise's, so one definition.
#[derive(Debug, Args)]
pub struct WriterArgs {
    /// How long a writer may wait on a lock a candidate's build, runs or drop holds before pgplan
    /// cancels its own statement, rolls back (releasing the lock) and tries the candidate again
    /// later: a duration (200ms, 1s) or off (writers wait for the whole transaction: a copy or
    /// a staging server).
    #[arg(long, value_name = "DURATION|off", default_value = "200ms", value_parser = crate::compare::writers::parse_max_writer_wait_arg)]
    pub max_writer_wait: crate::compare::writers::MaxWriterWait,
    /// Refuse to build a candidate on a table larger than this (heap and TOAST, all partitions):
    /// bytes, or kB, MB, GB, TB.
    #[arg(long, value_name = "SIZE", default_value = "1GB", value_parser = parse_size)]
    pub max_build_size: u64,
}

impl WriterArgs {
    pub fn policy(&self) -> crate::compare::writers::WriterPolicy {
        crate::compare::writers::WriterPolicy {
            max_writer_wait: self.max_writer_wait.0,
            max_build_bytes: self.max_build_size,
        }
    }
}

#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// The workload: pg_stat_statements (the database's top queries by total time), a file of
    /// several statements, or a directory of .sql files (`-- calls: N` and `-- params: [...]`
    /// comments as for compare --workload).
    #[arg(
        long,
        default_value = "pg_stat_statements",
        value_name = "pg_stat_statements|FILE|DIR"
    )]
    pub workload: String,
    /// With --workload pg_stat_statements: how many of the top statements.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: u32,
    /// With --workload pg_stat_statements: leave out statements with fewer calls.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub min_calls: u64,
    /// Recommend at most this many indexes.
    #[arg(long, value_name = "K")]
    pub max_indexes: Option<usize>,
    /// Recommend indexes totalling at most this size (8MB, 1GB...).
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub max_size: Option<u64>,
    /// Bound on the whole run: fewer candidates are measured to stay within it.
    #[arg(long, value_parser = parse_duration, default_value = "5min", value_name = "DURATION")]
    pub budget: Duration,
    /// Measured runs after the first (cold) one; the warm figures are their median.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub runs: u32,
    /// A query counts as served when its median pages touched drop by at least this percentage.
    #[arg(long, default_value_t = 10.0, value_name = "PERCENT")]
    pub min_gain: f64,
    /// Shortlist the candidates with HypoPG's estimates (the extension must be created in the
    /// database): ordered by the planner cost they save, those the planner would not choose
    /// left out. Every recommendation is still measured with the index built.
    #[arg(long)]
    pub hypothetical: bool,
    /// Run the workload's writes (each rolled back) and measure a representative write per table.
    #[arg(long)]
    pub allow_writes: bool,
    /// With --allow-writes: run the representative write on TABLE even though it has user
    /// triggers, rules or publications, which it would fire (their effects may reach outside the
    /// rollback: dblink, another connection); otherwise that table's index entry cost is
    /// estimated. TABLE is read as PostgreSQL reads a table name (search_path applies).
    /// Repeat for several.
    #[arg(long = "allow-probe-triggers", value_name = "TABLE", requires = "allow_writes", value_parser = parse_table_name)]
    pub allow_probe_triggers: Vec<String>,
    /// Run queries calling functions whose effects outlive the rollback (see compare).
    #[arg(long)]
    pub allow_lasting_effects: bool,
    #[command(flatten)]
    pub writers: WriterArgs,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Exit with code 1 when anything is recommended (an index to build, or one to drop).
    #[arg(long)]
    pub fail_if_advice: bool,

    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub session: SessionArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuditFormat {
    Text,
    Json,
    Markdown,
    Prometheus,
    Html,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// A node to audit (conninfo, URL or database name); repeat for a primary and its standbys.
    #[arg(short = 'd', long = "dbname", value_name = "DBNAME|CONNINFO")]
    pub nodes: Vec<String>,
    /// Server host for nodes given without one (as psql's -h).
    #[arg(short = 'h', long = "host")]
    pub host: Option<String>,
    /// Server port for nodes given without one.
    #[arg(short = 'p', long = "port")]
    pub port: Option<String>,
    /// User name for nodes given without one.
    #[arg(short = 'U', long = "username")]
    pub username: Option<String>,

    #[arg(long, value_enum, default_value_t = AuditFormat::Text)]
    pub format: AuditFormat,
    /// Exit with code 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value_t = SeverityArg::Warning)]
    pub fail_on: SeverityArg,
    /// List only findings at least this severe in text and Markdown (the summary by kind and
    /// the counts still cover all; JSON and Prometheus always have every finding).
    #[arg(long, value_enum, default_value_t = SeverityArg::Info)]
    pub min_severity: SeverityArg,
    /// Only these schemas (repeatable).
    #[arg(long = "schema", value_name = "NAME")]
    pub schemas: Vec<String>,
    /// Skip these schemas (repeatable).
    #[arg(long = "exclude-schema", value_name = "NAME")]
    pub exclude_schemas: Vec<String>,
    /// Only these tables (repeatable; schema.table or table).
    #[arg(long = "table", value_name = "NAME")]
    pub tables: Vec<String>,
    /// Skip objects smaller than this (bytes, or with a unit: 8MB, 1GB).
    #[arg(long, value_parser = parse_size, default_value = "0", value_name = "SIZE")]
    pub min_size: u64,
    /// Below this much counting time, unused-index findings are only informational.
    #[arg(long, value_parser = parse_duration, default_value = "7d", value_name = "DURATION")]
    pub min_stats_age: Duration,
    /// A session or prepared transaction holding the xmin horizon this long is a finding of
    /// its own (whatever its age, the oldest holder is named where dead rows cannot be removed).
    #[arg(long, value_parser = parse_duration, default_value = "5min", value_name = "DURATION")]
    pub horizon_min_age: Duration,
    /// A session idle in a transaction this long is a finding (idle_in_transaction).
    #[arg(long, value_parser = parse_duration, default_value = "1min", value_name = "DURATION")]
    pub idle_in_transaction_min_age: Duration,
    /// A statement waiting this long for a lock is a finding with its queue (lock_queue).
    #[arg(long, value_parser = parse_duration, default_value = "5s", value_name = "DURATION")]
    pub lock_wait_min_age: Duration,
    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Connections per node: `auto` reads a large catalog's indexes on a second connection, on
    /// the same snapshot, beside everything else (from about 10,000 indexes); `1` never opens a
    /// second one.
    #[arg(long, value_enum, default_value_t = ConnectionsArg::Auto)]
    pub connections: ConnectionsArg,

    #[command(flatten)]
    pub session: SessionArgs,
}

/// `audit --connections`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConnectionsArg {
    Auto,
    #[value(name = "1")]
    One,
    #[value(name = "2")]
    Two,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Directory of PostgreSQL server binaries (initdb, postgres) to use.
    #[arg(long, value_name = "DIR", env = "PGPLAN_PG_BIN")]
    pub pg_bin: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Parses a duration the way PostgreSQL reads time settings: a bare number is milliseconds;
/// units us, ms, s, min, h, d.
/// A table name for regclass input: not empty and with no NUL (the server reads the rest).
pub fn parse_table_name(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err("a table name is needed (schema.table, or table on the search_path)".into());
    }
    if text.contains('\0') {
        return Err("a table name cannot hold a NUL character".into());
    }
    Ok(text.to_owned())
}

pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (examples: 500ms, 30s, 5min, 1h, 7d)"))?;
    let ms = match unit.trim() {
        "" | "ms" => value,
        "us" => value / 1000.0,
        "s" => value * 1000.0,
        "min" => value * 60_000.0,
        "h" => value * 3_600_000.0,
        "d" => value * 86_400_000.0,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?}; use us, ms, s, min, h or d"
            ));
        }
    };
    if !ms.is_finite() || ms < 0.0 {
        return Err(format!("{text:?} is not a valid duration"));
    }
    Ok(Duration::from_micros((ms * 1000.0).round() as u64))
}

/// PostgreSQL's largest timeout: the settings are a C int of milliseconds (INT_MAX ms, about
/// 24.8 days); `SET statement_timeout = '30d'` fails with "out of range".
const MAX_TIMEOUT_MS: u128 = i32::MAX as u128;

/// A timeout setting, checked before anything connects: in whole milliseconds (the settings'
/// unit), at least 1 ms, since 0 turns the timeout off (PostgreSQL then waits forever), and at
/// most PostgreSQL's maximum.
fn parse_timeout(text: &str, what: &str) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    let ms = duration.as_millis();
    if ms == 0 {
        return Err(format!(
            "{text:?} would turn {what} off: PostgreSQL then waits forever, and pgplan never runs \
             unbounded; give at least 1ms"
        ));
    }
    if ms > MAX_TIMEOUT_MS {
        return Err(format!(
            "{text:?} is above PostgreSQL's largest {what}, {MAX_TIMEOUT_MS}ms (about 24.8 days)"
        ));
    }
    Ok(Duration::from_millis(ms as u64))
}

pub fn parse_statement_timeout(text: &str) -> Result<Duration, String> {
    parse_timeout(text, "statement_timeout")
}

pub fn parse_lock_timeout(text: &str) -> Result<Duration, String> {
    parse_timeout(text, "lock_timeout")
}

/// Parses a size the way PostgreSQL reads memory settings: bytes, or kB, MB, GB, TB (1024-based).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size (examples: 0, 8kB, 10MB, 1GB)"))?;
    let factor = match unit.trim() {
        "" | "B" => 1.0,
        "kB" | "KB" | "k" => 1024.0,
        "MB" | "M" => 1024.0 * 1024.0,
        "GB" | "G" => 1024.0 * 1024.0 * 1024.0,
        "TB" | "T" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?}; use kB, MB, GB or TB"
            ));
        }
    };
    Ok((value * factor).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("5min").unwrap(), Duration::from_secs(300));
        assert_eq!(
            parse_duration("7d").unwrap(),
            Duration::from_secs(7 * 86400)
        );
        assert!(parse_duration("5 fortnights").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn timeouts_are_bounded_as_postgresql_bounds_them() {
        assert_eq!(parse_lock_timeout("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(
            parse_statement_timeout("2147483647").unwrap(),
            Duration::from_millis(2_147_483_647)
        );
        assert_eq!(
            parse_lock_timeout("0").unwrap_err(),
            "\"0\" would turn lock_timeout off: PostgreSQL then waits forever, and pgplan never \
             runs unbounded; give at least 1ms"
        );
        assert!(parse_statement_timeout("0.4ms").is_err());
        assert_eq!(
            parse_statement_timeout("30d").unwrap_err(),
            "\"30d\" is above PostgreSQL's largest statement_timeout, 2147483647ms (about 24.8 days)"
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0").unwrap(), 0);
        assert_eq!(parse_size("8kB").unwrap(), 8192);
        assert_eq!(parse_size("1GB").unwrap(), 1 << 30);
        assert!(parse_size("lots").is_err());
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The workload: .sql files (several statements each) or directories of .sql files (one
    /// query each, named by its file). `-- calls: N` and `-- params: [...]` as for compare.
    #[arg(long = "workload", value_name = "DIR|FILE", required = true, num_args = 1..)]
    pub workload: Vec<String>,
    /// The baseline file (JSON) the workload is compared with, written by --update.
    #[arg(long, value_name = "FILE")]
    pub baseline: PathBuf,
    /// Measure the workload and write the baseline (never written otherwise).
    #[arg(long)]
    pub update: bool,
    /// A query regresses when its pages touched grow by more than this percentage beyond the
    /// measured spread (with --estimated: its planner cost).
    #[arg(long, default_value_t = 10.0, value_name = "PERCENT")]
    pub max_regression: f64,
    /// Compare plan shapes and planner costs instead of measured pages (the queries are planned,
    /// not executed): for a CI database with production's statistics (pgplan stats import).
    #[arg(long)]
    pub estimated: bool,
    /// Measured runs after the first one; pages are their median and spread.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub runs: u32,
    /// Run the workload's INSERT, UPDATE, DELETE and MERGE (each run rolled back).
    #[arg(long)]
    pub allow_writes: bool,
    /// With --allow-writes: run the representative write on TABLE even though it has user
    /// triggers, rules or publications, which it would fire (their effects may reach outside the
    /// rollback: dblink, another connection); otherwise that table's index entry cost is
    /// estimated. TABLE is read as PostgreSQL reads a table name (search_path applies).
    /// Repeat for several.
    #[arg(long = "allow-probe-triggers", value_name = "TABLE", requires = "allow_writes", value_parser = parse_table_name)]
    pub allow_probe_triggers: Vec<String>,
    /// Run queries calling functions whose effects outlive the rollback (see compare).
    #[arg(long)]
    pub allow_lasting_effects: bool,
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub format: CheckFormat,
    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub session: SessionArgs,
}

/// `pgplan check`'s report formats: for a person, a program, a pull request, code scanning, CI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
    Markdown,
    Sarif,
    Junit,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(subcommand)]
    pub command: StatsCommand,
}

#[derive(Debug, Subcommand)]
pub enum StatsCommand {
    /// Write the pg_class figures and pg_stats rows of the workload's tables (or the given
    /// ones) to a file. Read-only.
    Export(Box<StatsExportArgs>),
    /// Apply a file written by export to this database (PostgreSQL 18+: pg_restore_relation_stats
    /// and pg_restore_attribute_stats), saying which tables and columns did not match. The
    /// statistics stay until the next ANALYZE (autovacuum's too) replaces them.
    Import(StatsImportArgs),
}

#[derive(Debug, Args)]
pub struct StatsExportArgs {
    /// A table to export (repeatable; schema-qualified or found through the search_path).
    #[arg(long = "table", value_name = "TABLE")]
    pub tables: Vec<String>,
    /// Every table of this schema (repeatable).
    #[arg(long = "schema", value_name = "SCHEMA")]
    pub schemas: Vec<String>,
    /// The tables a workload's queries read (as planned, never run): files or directories as
    /// for pgplan check.
    #[arg(long = "workload", value_name = "DIR|FILE", num_args = 1..)]
    pub workload: Vec<String>,
    /// Leave the most-common-value lists out (their values and frequencies), for privacy;
    /// histograms are kept.
    #[arg(long)]
    pub no_values: bool,
    /// Write the statistics to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub session: SessionArgs,
}

#[derive(Debug, Args)]
pub struct StatsImportArgs {
    /// The statistics file written by pgplan stats export.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub session: SessionArgs,
}
