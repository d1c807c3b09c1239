//! The `jit_overhead` finding: JIT compilation that cost a large share of the query's run.
//!
//! PostgreSQL compiles a plan with LLVM when its estimated cost passes `jit_above_cost`
//! (default 100,000), and inlines and optimizes past `jit_inline_above_cost` and
//! `jit_optimize_above_cost` (500,000 each). The cost is an estimate, so a query the planner
//! overestimates, or one that is short but touches many rows cheaply, can spend more time
//! compiling than running. EXPLAIN ANALYZE reports it in the top-level `JIT` block: its
//! `Timing.Total` sums the leader's and every parallel worker's compilation (a worker's own
//! block is in its `Workers` entry). Before 17 `Timing.Generation` is a number, from 17 on an
//! object with `Deform` and `Total`; `Timing.Total` is a number in every version.

use serde_json::Value;

use super::finding::{Finding, FindingKind, Severity};
use super::model::Plan;
use crate::format::{count, ms};

/// JIT time worth a finding: at least this many milliseconds...
pub const JIT_MIN_MS: f64 = 10.0;
/// ...and at least this share of the execution time...
pub const JIT_SHARE: f64 = 0.2;
/// ...and a warning from this share on.
pub const JIT_WARNING_SHARE: f64 = 0.5;

/// The finding, when the plan's JIT compilation took at least [`JIT_MIN_MS`] and
/// [`JIT_SHARE`] of its execution time. Plans without ANALYZE have no JIT timing.
pub fn jit_overhead(plan: &Plan) -> Option<Finding> {
    let jit = plan.extra.get("JIT")?;
    let total_ms = jit.get("Timing")?.get("Total").and_then(Value::as_f64)?;
    let execution_ms = plan.execution_ms?;
    if total_ms < JIT_MIN_MS || execution_ms <= 0.0 || total_ms < JIT_SHARE * execution_ms {
        return None;
    }
    let functions = jit.get("Functions").and_then(Value::as_f64);
    let option = |name: &str| {
        jit.get("Options")
            .and_then(|o| o.get(name))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let steps: Vec<&str> = [("Inlining", "inlining"), ("Optimization", "optimization")]
        .into_iter()
        .filter(|(key, _)| option(key))
        .map(|(_, word)| word)
        .collect();
    let cost = plan.root().total_cost;
    let share = total_ms / execution_ms;
    let with_steps = if steps.is_empty() {
        String::new()
    } else {
        format!(", with {}", steps.join(" and "))
    };
    let workers = if has_worker_jit(plan) {
        " (the leader's and its parallel workers' together)"
    } else {
        ""
    };
    let message = format!(
        "JIT compilation took {}{workers} against {} of execution ({}%){with_steps}",
        ms(total_ms),
        ms(execution_ms),
        (share * 100.0).round()
    );
    let hint = format!(
        "{}. For a query this short, run it with JIT off (SET LOCAL jit = off in its \
         transaction, or ALTER ROLE ... SET jit = off for the role that runs it), or raise those \
         thresholds above its cost; when the cost is an overestimate, fixing the estimate fixes \
         this too",
        why_it_ran(plan, cost),
    );
    let mut evidence = vec![("jit_total_ms", total_ms), ("execution_ms", execution_ms)];
    if let Some(f) = functions {
        evidence.push(("jit_functions", f));
    }
    if let Some(c) = cost {
        evidence.push(("total_cost", c));
    }
    Some(Finding {
        kind: FindingKind::JitOverhead,
        severity: if share >= JIT_WARNING_SHARE {
            Severity::Warning
        } else {
            Severity::Info
        },
        node: None,
        message,
        hint,
        evidence,
    })
}

/// A planner setting as the plan's `Settings` report it (SETTINGS lists those that differ from
/// the built-in default), else the default, said so.
fn setting(plan: &Plan, name: &str) -> Option<String> {
    plan.settings
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
}

fn setting_or_default(plan: &Plan, name: &str, default: f64) -> String {
    setting(plan, name).unwrap_or_else(|| format!("default {}", count(default)))
}

/// Why JIT compiled this plan: its cost against the thresholds, as far as the plan tells. A plan
/// recorded without SETTINGS that is cheaper than the default threshold ran with lower ones.
fn why_it_ran(plan: &Plan, cost: Option<f64>) -> String {
    let cost_text = cost
        .map(|c| format!("the plan's estimated cost ({})", count(c)))
        .unwrap_or_else(|| "the plan's estimated cost".to_owned());
    match (setting(plan, "jit_above_cost"), cost) {
        (None, Some(c)) if c < 100_000.0 => format!(
            "JIT ran although {cost_text} is below the default jit_above_cost (100,000): the \
             server ran it with lower JIT thresholds (the defaults: jit_above_cost 100,000, \
             jit_inline_above_cost and jit_optimize_above_cost 500,000; inlining and \
             optimization are the costly steps)"
        ),
        (above, _) => format!(
            "JIT ran because {cost_text} is above jit_above_cost ({}); inlining and \
             optimization, the costly steps, run above jit_inline_above_cost ({}) and \
             jit_optimize_above_cost ({})",
            above.unwrap_or_else(|| "default 100,000".to_owned()),
            setting_or_default(plan, "jit_inline_above_cost", 500_000.0),
            setting_or_default(plan, "jit_optimize_above_cost", 500_000.0),
        ),
    }
}

/// Whether a node's `Workers` entries carry JIT blocks of their own (VERBOSE, parallel plans).
fn has_worker_jit(plan: &Plan) -> bool {
    plan.nodes.iter().any(|n| {
        n.extra
            .get("Workers")
            .and_then(super::Extra::as_array)
            .is_some_and(|ws| ws.iter().any(|w| w.get("JIT").is_some()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;

    fn plan(jit: &str, execution_ms: f64, settings: &str) -> Plan {
        parse_plan(&format!(
            r#"[{{"Plan": {{"Node Type": "Seq Scan", "Relation Name": "t", "Total Cost": 250000.5,
                "Plan Rows": 10, "Actual Startup Time": 1, "Actual Total Time": 2,
                "Actual Rows": 10, "Actual Loops": 1}},
              "Settings": {{{settings}}},
              "JIT": {jit}, "Execution Time": {execution_ms}}}]"#
        ))
        .unwrap()
    }

    const JIT_120: &str = r#"{"Functions": 4, "Options": {"Inlining": false, "Optimization": true,
        "Expressions": true, "Deforming": true}, "Timing": {"Generation": 1.5, "Inlining": 0.0,
        "Optimization": 80.0, "Emission": 38.5, "Total": 120.0}}"#;

    #[test]
    fn compilation_longer_than_the_run_is_a_warning_with_the_thresholds() {
        let f = jit_overhead(&plan(JIT_120, 100.0, "")).unwrap();
        assert_eq!(f.kind, FindingKind::JitOverhead);
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.node, None);
        assert!(f.message.contains("took 120"), "{}", f.message);
        assert!(f.message.contains("(120%)"), "{}", f.message);
        assert!(f.message.contains("with optimization"), "{}", f.message);
        assert!(!f.message.contains("inlining"), "{}", f.message);
        assert!(f.hint.contains("estimated cost (250,000.5)"), "{}", f.hint);
        assert!(
            f.hint.contains("above jit_above_cost (default 100,000)"),
            "{}",
            f.hint
        );
        assert!(f.hint.contains("SET LOCAL jit = off"), "{}", f.hint);
        assert_eq!(
            f.evidence,
            vec![
                ("jit_total_ms", 120.0),
                ("execution_ms", 100.0),
                ("jit_functions", 4.0),
                ("total_cost", 250000.5)
            ]
        );
    }

    #[test]
    fn a_modest_share_is_info_and_a_small_one_nothing() {
        let f = jit_overhead(&plan(JIT_120, 400.0, "")).unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(jit_overhead(&plan(JIT_120, 1000.0, "")).is_none());
    }

    #[test]
    fn a_few_milliseconds_are_never_a_finding_even_on_a_fast_query() {
        let jit = r#"{"Functions": 2, "Timing": {"Total": 5.0}}"#;
        assert!(jit_overhead(&plan(jit, 1.0, "")).is_none());
    }

    #[test]
    fn the_plans_own_settings_are_the_thresholds_named() {
        let f = jit_overhead(&plan(
            JIT_120,
            100.0,
            r#""jit_above_cost": "1000", "jit_optimize_above_cost": "2000""#,
        ))
        .unwrap();
        assert!(f.hint.contains("jit_above_cost (1000)"), "{}", f.hint);
        assert!(
            f.hint.contains("jit_optimize_above_cost (2000)"),
            "{}",
            f.hint
        );
        assert!(
            f.hint.contains("jit_inline_above_cost (default 500,000)"),
            "{}",
            f.hint
        );
    }

    #[test]
    fn a_plan_cheaper_than_the_default_threshold_ran_with_a_lower_one() {
        let json = r#"[{"Plan": {"Node Type": "Result", "Total Cost": 4089.5, "Plan Rows": 1,
            "Actual Startup Time": 1, "Actual Total Time": 2, "Actual Rows": 1, "Actual Loops": 1},
            "JIT": {"Functions": 3, "Timing": {"Total": 90.0}}, "Execution Time": 100.0}]"#;
        let f = jit_overhead(&parse_plan(json).unwrap()).unwrap();
        assert!(
            f.hint
                .contains("(4,089.5) is below the default jit_above_cost (100,000)"),
            "{}",
            f.hint
        );
    }

    #[test]
    fn without_timing_there_is_nothing_to_judge() {
        // EXPLAIN without ANALYZE reports the functions and options only.
        let jit = r#"{"Functions": 4, "Options": {"Inlining": true}}"#;
        assert!(jit_overhead(&plan(jit, 100.0, "")).is_none());
    }

    #[test]
    fn postgres_17s_generation_object_reads_the_same() {
        let jit = r#"{"Functions": 4, "Timing": {"Generation": {"Deform": 0.1, "Total": 1.0},
            "Inlining": 0.0, "Optimization": 30.0, "Emission": 19.0, "Total": 50.0}}"#;
        let f = jit_overhead(&plan(jit, 60.0, "")).unwrap();
        assert_eq!(f.evidence[0], ("jit_total_ms", 50.0));
    }
}
