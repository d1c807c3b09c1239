//! `pgplan info`: what pgplan learned about a server and what it can do there, as text or JSON.

use std::io::{self, Write};

use serde::Serialize;

use crate::server::{Feature, ServerFacts, TableOwnership, features};

use super::{Paint, TextOptions};

/// Everything `info` reports.
#[derive(Debug, Clone)]
pub struct InfoReport {
    /// "host:port (database d)", never a password.
    pub target: String,
    pub facts: ServerFacts,
    pub encrypted: bool,
    /// How many of the database's tables the role owns (what building an index needs).
    pub ownership: Option<TableOwnership>,
    /// With -v: (parameter, value, source) for every connection parameter, password redacted.
    pub sources: Vec<(String, String, String)>,
}

/// `pgplan info --format json`.
#[derive(Debug, Serialize)]
pub struct InfoDoc {
    pub schema_version: u32,
    pub target: String,
    pub server_version: String,
    pub server_version_num: u32,
    /// "primary" or "standby".
    pub role: &'static str,
    pub read_only: bool,
    pub user: String,
    pub database: String,
    pub superuser: bool,
    pub pg_monitor: bool,
    pub pg_read_all_stats: bool,
    pub extensions: Vec<ExtensionDoc>,
    pub tls: TlsDoc,
    pub system_identifier: Option<String>,
    pub started_at: Option<String>,
    pub uptime_seconds: Option<f64>,
    /// The database's tables and how many of them the role owns; null when not read.
    pub table_ownership: Option<OwnershipDoc>,
    pub features: Vec<Feature>,
    /// Where each connection parameter came from (only with -v).
    pub connection_sources: Vec<SourceDoc>,
}

#[derive(Debug, Serialize)]
pub struct OwnershipDoc {
    pub tables: u64,
    pub owned: u64,
    /// The roles owning the others, most tables first (at most three).
    pub other_owners: Vec<OwnerDoc>,
}

#[derive(Debug, Serialize)]
pub struct OwnerDoc {
    pub role: String,
    pub tables: u64,
}

#[derive(Debug, Serialize)]
pub struct ExtensionDoc {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Serialize)]
pub struct TlsDoc {
    pub encrypted: bool,
    pub version: Option<String>,
    pub cipher: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct SourceDoc {
    pub parameter: String,
    pub value: String,
    pub source: String,
}

fn role(facts: &ServerFacts) -> &'static str {
    if facts.in_recovery {
        "standby"
    } else {
        "primary"
    }
}

impl InfoDoc {
    pub fn new(report: &InfoReport) -> Self {
        let f = &report.facts;
        InfoDoc {
            schema_version: super::wire::SCHEMA_VERSION,
            target: report.target.clone(),
            server_version: f.version.clone(),
            server_version_num: f.version_num,
            role: role(f),
            read_only: f.read_only,
            user: f.user.clone(),
            database: f.database.clone(),
            superuser: f.superuser,
            pg_monitor: f.pg_monitor || f.superuser,
            pg_read_all_stats: f.pg_read_all_stats || f.superuser,
            extensions: f
                .extensions
                .iter()
                .map(|(name, version)| ExtensionDoc {
                    name: name.clone(),
                    version: version.clone(),
                })
                .collect(),
            tls: TlsDoc {
                encrypted: report.encrypted,
                version: f.tls_version.clone(),
                cipher: f.tls_cipher.clone(),
            },
            system_identifier: f.system_identifier.clone(),
            started_at: f.started_at.clone(),
            uptime_seconds: f.uptime_seconds,
            table_ownership: report.ownership.as_ref().map(|o| OwnershipDoc {
                tables: o.tables,
                owned: o.owned,
                other_owners: o
                    .other_owners
                    .iter()
                    .map(|(role, tables)| OwnerDoc {
                        role: role.clone(),
                        tables: *tables,
                    })
                    .collect(),
            }),
            features: features(f, report.ownership.as_ref()),
            connection_sources: report
                .sources
                .iter()
                .map(|(parameter, value, source)| SourceDoc {
                    parameter: parameter.clone(),
                    value: value.clone(),
                    source: source.clone(),
                })
                .collect(),
        }
    }
}

fn uptime(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    let (d, h, m) = (s / 86400, (s % 86400) / 3600, (s % 3600) / 60);
    if d > 0 {
        format!("{d} d {h} h")
    } else if h > 0 {
        format!("{h} h {m} min")
    } else {
        format!("{m} min {} s", s % 60)
    }
}

fn yes_no(v: bool) -> &'static str {
    if v { "yes" } else { "no" }
}

/// `pgplan info` as text.
pub fn write_text(
    out: &mut dyn Write,
    report: &InfoReport,
    options: &TextOptions,
) -> io::Result<()> {
    let paint = Paint::new(options.color);
    let f = &report.facts;
    let label = |s: &str| paint.bold(&format!("{s:<11}"));
    writeln!(out, "{}{}", label("Server"), report.target)?;
    writeln!(
        out,
        "{}PostgreSQL {} · {} · {}",
        label("Version"),
        f.version,
        role(f),
        if f.read_only {
            "read-only"
        } else {
            "read-write"
        }
    )?;
    writeln!(
        out,
        "{}{} (superuser: {}, pg_monitor: {}, pg_read_all_stats: {})",
        label("User"),
        f.user,
        yes_no(f.superuser),
        yes_no(f.pg_monitor || f.superuser),
        yes_no(f.pg_read_all_stats || f.superuser)
    )?;
    writeln!(out, "{}{}", label("Database"), f.database)?;
    let tls = match (&f.tls_version, &f.tls_cipher) {
        (Some(v), Some(c)) => format!("encrypted, {v} ({c})"),
        (Some(v), None) => format!("encrypted, {v}"),
        _ => "not encrypted".to_owned(),
    };
    writeln!(out, "{}{tls}", label("TLS"))?;
    let extensions: Vec<String> = f
        .extensions
        .iter()
        .map(|(n, v)| format!("{n} {v}"))
        .collect();
    writeln!(out, "{}{}", label("Extensions"), extensions.join(", "))?;
    if let (Some(started), Some(up)) = (&f.started_at, f.uptime_seconds) {
        writeln!(out, "{}{started} (up {})", label("Started"), uptime(up))?;
    }
    if let Some(id) = &f.system_identifier {
        writeln!(out, "{}{id}", label("System id"))?;
    }
    if let Some(o) = &report.ownership {
        let others: Vec<String> = o
            .other_owners
            .iter()
            .map(|(role, n)| format!("{role} {n}"))
            .collect();
        let rest = if others.is_empty() {
            String::new()
        } else {
            format!(" (others owned by {})", others.join(", "))
        };
        writeln!(
            out,
            "{}{} owns {} of {}{rest}",
            label("Tables"),
            f.user,
            o.owned,
            o.tables
        )?;
    }
    writeln!(out)?;
    writeln!(out, "{}", paint.bold("What pgplan can do here"))?;
    let list = features(f, report.ownership.as_ref());
    let width = list.iter().map(|x| x.name.len()).max().unwrap_or(0);
    for feature in list {
        let mark = if feature.available {
            paint.good("yes")
        } else {
            paint.bad("no ")
        };
        let note = feature
            .note
            .map(|n| format!("  {}", paint.dim(&n)))
            .unwrap_or_default();
        writeln!(out, "  {:width$}  {mark}{note}", feature.name)?;
    }
    if !report.sources.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", paint.bold("Connection parameters"))?;
        let width = report
            .sources
            .iter()
            .map(|(n, _, _)| n.len())
            .max()
            .unwrap_or(0);
        for (name, value, source) in &report.sources {
            writeln!(
                out,
                "  {name:width$}  {value}  {}",
                paint.dim(&format!("({source})"))
            )?;
        }
    }
    Ok(())
}
