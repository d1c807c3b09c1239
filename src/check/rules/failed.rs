//! A query that ran when the baseline was recorded and fails now (a dropped column, a renamed
//! table, a statement_timeout it now exceeds).

use super::{Regression, RegressionClass};
use crate::check::baseline::BaselineSample;

pub fn check(before: &BaselineSample, after: &BaselineSample) -> Option<Regression> {
    let error = after.error.as_ref()?;
    if before.error.is_some() {
        // It failed then too: nothing got worse.
        return None;
    }
    Some(Regression {
        class: RegressionClass::QueryFailed,
        sample: after.label.clone(),
        message: format!("no longer runs: {error}"),
        node: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::empty;
    use super::*;

    #[test]
    fn only_a_new_failure_counts() {
        let ok = empty();
        let failed = BaselineSample {
            error: Some("ERROR: column \"a\" does not exist (42703)".into()),
            ..empty()
        };
        let r = check(&ok, &failed).unwrap();
        assert_eq!(r.class, RegressionClass::QueryFailed);
        assert!(r.message.contains("42703"), "{}", r.message);
        assert_eq!(check(&failed, &failed), None);
        assert_eq!(check(&failed, &ok), None);
        assert_eq!(check(&ok, &ok), None);
    }
}
