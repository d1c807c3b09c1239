//! `pgplan check`: a workload's plans as snapshot tests. The pure side: the baseline file
//! ([`baseline`]), one regression rule per file ([`rules`]), and the comparison of a new
//! recording with the baseline, query by query and sample by sample ([`compare`]).

pub mod baseline;
pub mod compare;
pub mod rules;
pub mod settle;
pub mod sql_diff;
pub mod stats;

pub use baseline::{Baseline, BaselineNode, BaselineQuery, BaselineSample, CheckMode, PagesFigure};
pub use compare::{
    CheckOptions, CheckReport, FigurePair, Location, QueryCheck, QueryStatus, SettingChange, check,
};
pub use rules::{Regression, RegressionClass};
