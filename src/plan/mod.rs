//! The plan core: a typed model of PostgreSQL's EXPLAIN output, the figures an expert reads off
//! it, findings, and a node-matched diff of two plans. Pure: no database, no async.

pub mod diff;
pub mod extra;
pub mod finding;
pub mod findings;
pub mod hash_mem;
pub mod input;
pub mod jit;
mod lines;
pub mod metrics;
pub mod model;
pub mod parse;
mod parse_text;
mod parse_xml;
mod parse_yaml;
pub mod side_effects;
mod text_object;

pub use diff::{Change, ChangeKind, Pair, PlanDiff, diff};
pub use extra::{Extra, Extras};
pub use findings::{Finding, FindingKind, Severity};
pub use input::{PlanFormat, ReadPlan, parse_plan, read_plan, read_server_json};
pub use metrics::{PlanMetrics, measure};
pub use model::{Actual, Buffers, IoTimes, Node, NodeId, Plan, Trigger, Wal};
pub use parse::PlanError;

/// A plan with its figures and findings: what every command shows about one plan.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub plan: Plan,
    pub metrics: PlanMetrics,
    pub findings: Vec<Finding>,
}

impl Analysis {
    /// A plan whose server is not known (a saved plan).
    pub fn of(plan: Plan) -> Self {
        Self::analyse(plan, None)
    }

    /// A plan made by a server of major version `server_major` just now: defaults that changed
    /// between versions (`hash_mem_multiplier`) are that version's.
    pub fn from_server(plan: Plan, server_major: u32) -> Self {
        Self::analyse(plan, Some(server_major))
    }

    fn analyse(plan: Plan, server_major: Option<u32>) -> Self {
        let metrics = measure(&plan);
        let findings = findings::find(&plan, &metrics, server_major);
        Self {
            plan,
            metrics,
            findings,
        }
    }
}

/// Two analysed plans of the same query and their diff.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub before: Analysis,
    pub after: Analysis,
    pub diff: PlanDiff,
}

impl Comparison {
    pub fn of(before: Analysis, after: Analysis) -> Self {
        let diff = diff(&before.plan, &before.metrics, &after.plan, &after.metrics);
        Self {
            before,
            after,
            diff,
        }
    }
}
