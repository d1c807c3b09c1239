//! pgplan: measured answers to "does this index pay for itself?" and "what is wrong with my indexes?".
//!
//! The crate has a pure core ([`plan`], [`audit`], [`compare`], [`check`], [`report`]) that never
//! touches a database or an async runtime, an I/O shell ([`db`]) that talks to PostgreSQL, and
//! one orchestration layer ([`app`]) that joins them for each command.

pub mod advise;
pub mod app;
pub mod audit;
pub mod check;
pub mod cli;
pub mod compare;
pub mod db;
pub mod effects;
pub mod exit;
pub mod explain;
pub mod format;
pub mod lasting_rows;
pub mod lasting_state;
pub mod measure;
pub mod pgdist;
pub mod pgnames;
pub mod plan;
pub mod report;
pub mod server;
pub mod sql;
