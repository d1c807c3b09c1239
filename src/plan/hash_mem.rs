//! The memory a hash table may use before it splits into batches: `work_mem ×
//! hash_mem_multiplier` (PostgreSQL 13+, `get_hash_memory_limit()`), with the multiplier taken
//! from the plan's `Settings` when it is there, else the server version's default (2.0 from 15
//! on, 1.0 on 13 and 14), and where it came from said.

use super::model::Plan;

/// `hash_mem_multiplier`'s built-in default on a major version.
pub fn default_multiplier(major: u32) -> f64 {
    if major >= 15 { 2.0 } else { 1.0 }
}

/// Where the multiplier a finding uses came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Multiplier {
    /// Listed in the plan's `Settings` (set away from the default when the plan was made).
    FromSettings(f64),
    /// Not in the plan's `Settings`: the server version's default. `settings_listed` says
    /// whether the plan lists any settings at all (EXPLAIN's SETTINGS option shows only those
    /// that differ from the default, so with others listed its absence means the default).
    VersionDefault {
        major: u32,
        value: f64,
        settings_listed: bool,
    },
    /// Neither in the plan nor a known server version: 2.0 or 1.0, depending on the version.
    Unknown,
}

impl Multiplier {
    /// The multiplier for `plan`, made on a server of `major` when known.
    pub fn of(plan: &Plan, major: Option<u32>) -> Self {
        if let Some(value) = plan
            .settings
            .iter()
            .find(|(name, _)| name == "hash_mem_multiplier")
            .and_then(|(_, v)| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 0.0)
        {
            return Multiplier::FromSettings(value);
        }
        match major {
            Some(major) => Multiplier::VersionDefault {
                major,
                value: default_multiplier(major),
                settings_listed: !plan.settings.is_empty(),
            },
            None => Multiplier::Unknown,
        }
    }

    /// The value, when it is known.
    pub fn value(self) -> Option<f64> {
        match self {
            Multiplier::FromSettings(v) | Multiplier::VersionDefault { value: v, .. } => Some(v),
            Multiplier::Unknown => None,
        }
    }
}

/// `work_mem` as the plan's `Settings` list it ("64kB"), when they do.
pub fn work_mem_setting(plan: &Plan) -> Option<&str> {
    plan.settings
        .iter()
        .find(|(name, _)| name == "work_mem")
        .map(|(_, v)| v.as_str())
}

/// A multiplier as PostgreSQL shows it: "2", "1.5".
pub fn show(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(settings: &[(&str, &str)]) -> Plan {
        Plan {
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Plan::default()
        }
    }

    #[test]
    fn the_plan_s_settings_win_over_the_version_default() {
        assert_eq!(
            Multiplier::of(&plan(&[("hash_mem_multiplier", "4")]), Some(16)),
            Multiplier::FromSettings(4.0)
        );
        assert_eq!(
            Multiplier::of(&plan(&[("hash_mem_multiplier", "1.5")]), None),
            Multiplier::FromSettings(1.5)
        );
    }

    #[test]
    fn the_default_follows_the_version() {
        assert_eq!(default_multiplier(13), 1.0);
        assert_eq!(default_multiplier(14), 1.0);
        assert_eq!(default_multiplier(15), 2.0);
        assert_eq!(default_multiplier(18), 2.0);
        assert_eq!(
            Multiplier::of(&plan(&[("work_mem", "64kB")]), Some(14)),
            Multiplier::VersionDefault {
                major: 14,
                value: 1.0,
                settings_listed: true
            }
        );
        assert_eq!(
            Multiplier::of(&plan(&[]), Some(15)),
            Multiplier::VersionDefault {
                major: 15,
                value: 2.0,
                settings_listed: false
            }
        );
        assert_eq!(Multiplier::of(&plan(&[]), None), Multiplier::Unknown);
        assert_eq!(Multiplier::of(&plan(&[]), None).value(), None);
    }

    #[test]
    fn multipliers_read_as_postgres_shows_them() {
        assert_eq!(show(2.0), "2");
        assert_eq!(show(1.5), "1.5");
        assert_eq!(
            work_mem_setting(&plan(&[("work_mem", "64kB")])),
            Some("64kB")
        );
    }
}
