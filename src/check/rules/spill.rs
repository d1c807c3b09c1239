//! A sort, hash or hash aggregate now spills to disk: temp blocks where the baseline had none.
//! A spill depends on work_mem and the rows, not on the machine's load, so one is never noise.

use super::{Regression, RegressionClass, node_label};
use crate::check::baseline::BaselineSample;

fn spilled(sample: &BaselineSample) -> bool {
    sample.temp_blocks.is_some_and(|t| t > 0.0) || sample.plan.iter().any(|n| n.spills)
}

pub fn check(before: &BaselineSample, after: &BaselineSample) -> Option<Regression> {
    if spilled(before) || !spilled(after) || before.plan.is_empty() {
        return None;
    }
    let node = after.plan.iter().find(|n| n.spills).map(node_label);
    let temp = after
        .temp_blocks
        .filter(|t| *t > 0.0)
        .map(|t| format!(" ({t} temp blocks)"))
        .unwrap_or_default();
    Some(Regression {
        class: RegressionClass::NewSpill,
        sample: after.label.clone(),
        message: match &node {
            Some(n) => format!("{n} now spills to disk{temp}; the baseline used no temp blocks"),
            None => format!("the plan now writes temporary files{temp}; the baseline used none"),
        },
        node,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{node, sample};
    use super::*;

    #[test]
    fn a_new_spill_fails_an_old_one_does_not() {
        let before = sample(None, vec![node(None, "Sort", None)]);
        let mut sort = node(None, "Sort", None);
        sort.spills = true;
        let mut after = sample(None, vec![sort]);
        after.temp_blocks = Some(120.0);
        let r = check(&before, &after).unwrap();
        assert_eq!(r.class, RegressionClass::NewSpill);
        assert_eq!(r.node.as_deref(), Some("Sort"));
        assert!(r.message.contains("120 temp blocks"), "{}", r.message);
        assert_eq!(check(&after, &after), None);
        assert_eq!(check(&after, &before), None);
        assert_eq!(check(&before, &before), None);
    }
}
