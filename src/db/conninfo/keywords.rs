//! The connection keywords libpq knows, their environment variables, and the nearest keyword
//! for a misspelt one.

use super::*;

/// Every keyword libpq 17 accepts, in libpq's order, with the environment variable that supplies
/// it when neither the connection string nor the service file did.
pub(super) const KEYWORDS: &[(&str, Option<&str>)] = &[
    ("service", Some("PGSERVICE")),
    ("user", Some("PGUSER")),
    ("password", Some("PGPASSWORD")),
    ("passfile", Some("PGPASSFILE")),
    ("channel_binding", Some("PGCHANNELBINDING")),
    ("connect_timeout", Some("PGCONNECT_TIMEOUT")),
    ("dbname", Some("PGDATABASE")),
    ("host", Some("PGHOST")),
    ("hostaddr", Some("PGHOSTADDR")),
    ("port", Some("PGPORT")),
    ("client_encoding", Some("PGCLIENTENCODING")),
    ("options", Some("PGOPTIONS")),
    ("application_name", Some("PGAPPNAME")),
    ("fallback_application_name", None),
    ("keepalives", None),
    ("keepalives_idle", None),
    ("keepalives_interval", None),
    ("keepalives_count", None),
    ("tcp_user_timeout", None),
    ("sslmode", Some("PGSSLMODE")),
    ("sslnegotiation", Some("PGSSLNEGOTIATION")),
    ("sslcompression", Some("PGSSLCOMPRESSION")),
    ("sslcert", Some("PGSSLCERT")),
    ("sslkey", Some("PGSSLKEY")),
    ("sslcertmode", Some("PGSSLCERTMODE")),
    ("sslpassword", None),
    ("sslrootcert", Some("PGSSLROOTCERT")),
    ("sslcrl", Some("PGSSLCRL")),
    ("sslcrldir", Some("PGSSLCRLDIR")),
    ("sslsni", Some("PGSSLSNI")),
    ("requirepeer", Some("PGREQUIREPEER")),
    ("require_auth", Some("PGREQUIREAUTH")),
    ("ssl_min_protocol_version", Some("PGSSLMINPROTOCOLVERSION")),
    ("ssl_max_protocol_version", Some("PGSSLMAXPROTOCOLVERSION")),
    ("gssencmode", Some("PGGSSENCMODE")),
    ("krbsrvname", Some("PGKRBSRVNAME")),
    ("gsslib", Some("PGGSSLIB")),
    ("gssdelegation", Some("PGGSSDELEGATION")),
    ("replication", None),
    ("target_session_attrs", Some("PGTARGETSESSIONATTRS")),
    ("load_balance_hosts", Some("PGLOADBALANCEHOSTS")),
];

/// Environment variables libpq turns into startup-packet settings (its `EnvironmentOptions`).
pub(super) const STARTUP_SETTING_VARS: &[(&str, &str)] = &[
    ("PGDATESTYLE", "datestyle"),
    ("PGTZ", "timezone"),
    ("PGGEQO", "geqo"),
];

pub(super) fn canonical_keyword(word: &str) -> Option<&'static str> {
    KEYWORDS
        .iter()
        .find(|(keyword, _)| *keyword == word)
        .map(|(keyword, _)| *keyword)
}

/// Names whose values are secrets, judged generously: redaction also runs on malformed input and
/// on misspelt keywords.
pub(super) fn is_secret_name(name: &str) -> bool {
    name.to_ascii_lowercase().contains("password")
}

/// The closest of `candidates` to `word`, if it is plausibly a typo of it.
pub(super) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let word_lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|candidate| {
            (
                edit_distance(&word_lower, &candidate.to_ascii_lowercase()),
                candidate,
            )
        })
        .filter(|(distance, candidate)| {
            *distance <= 2.max(candidate.len() / 4) && *distance < candidate.len()
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = Vec::with_capacity(b.len() + 1);
        current.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            let deletion = previous[j + 1] + 1;
            let insertion = current[j] + 1;
            current.push(substitution.min(deletion).min(insertion));
        }
        previous = current;
    }
    previous[b.len()]
}

pub(super) fn keyword_suggestion(word: &str) -> Suggestion {
    Suggestion(closest(word, KEYWORDS.iter().map(|(keyword, _)| *keyword)))
}
