//! The measurement engine: given a connection, the queries with their samples, the candidate
//! indexes and the options, it runs the always-rolled-back experiments (the baseline, each
//! candidate built once with every query measured inside it, the baseline again when a build
//! changed the planner's estimates) and returns plain figures with the side effects it detected.
//! `compare`, `compare --workload`, `advise` and `check` are thin users of it. Nothing here
//! prints: progress goes through an [`Observer`], and what a user must be told comes back as
//! notes in the figures.

pub mod build;
pub mod estimates;
pub mod guard;
pub mod hypothetical;
pub mod lock_wait;
pub mod one_query;
pub mod prepare;
pub mod workload;
pub mod writers;

/// Where the engine says what it is doing while it works: the command's progress line, or
/// nowhere.
pub trait Observer {
    /// What the engine is doing now, replacing what it said before.
    fn update(&self, message: &str);
    /// Nothing is being done any more (before an error or the report is written).
    fn clear(&self);
}
