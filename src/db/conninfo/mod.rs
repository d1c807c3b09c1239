//! Connection parameters resolved exactly the way libpq (and so psql) resolves them: flags, a
//! `-d` connection string or URL, the service file, `PG*` environment variables, defaults, and the
//! password file — with every value remembering where it came from. tokio-postgres reads none of
//! these, so this module is what makes `pgplan -d mydb` connect where `psql -d mydb` does.
//!
//! Pure logic plus file reads: no network, no async. The order of everything below follows libpq's
//! `fe-connect.c` (`conninfo_array_parse`, `conninfo_add_defaults`, `pqConnectOptions2`), and the
//! comments say which libpq rule each step mirrors.
//!
//! One file per concern: the inputs (`environment`, `precedence`), the two syntaxes of a `-d`
//! value (`keyword_value`, `url`), what each value means (`interpret`, `hosts`, `passwords`,
//! `tls_files`), the result (`params`, `error`) and how it is shown (`display`). Every public
//! item is re-exported here, so `db::conninfo::X` names it wherever it lives.

mod display;
mod environment;
mod error;
mod hosts;
mod interpret;
mod keyword_value;
mod keywords;
mod params;
mod passwords;
mod precedence;
#[cfg(test)]
mod testing;
mod tls_files;
mod url;

pub use display::*;
pub use environment::*;
pub use error::*;
use hosts::*;
use interpret::*;
use keyword_value::*;
use keywords::*;
pub use params::*;
use passwords::*;
pub use precedence::*;
use tls_files::*;
use url::*;

use std::collections::HashMap;
use std::ffi::{CStr, OsStr};
use std::fmt;
use std::net::IpAddr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::pgpass::{self, LookupKey, PasswordFile};
use super::service::{self, ServiceError, UserServiceFile};

/// libpq's `DEF_PGPORT`.
pub const DEFAULT_PORT: u16 = 5432;

/// Where the default Unix socket is looked for, in order. libpq has one compiled-in directory
/// (`DEFAULT_PGSOCKET_DIR`: `/var/run/postgresql` in Debian's and Red Hat's builds, `/tmp` in
/// upstream's); pgplan is not built against either, so it tries each and takes the first that
/// holds the server's socket.
pub const DEFAULT_SOCKET_DIRS: [&str; 3] = ["/var/run/postgresql", "/run/postgresql", "/tmp"];

/// Where the system-wide `pg_service.conf` lives when `PGSYSCONFDIR` is unset: Debian's libpq is
/// built with `--sysconfdir=/etc/postgresql-common`, and that is the libpq most pgplan users share
/// a machine with.
pub const DEFAULT_SYSCONFDIR: &str = "/etc/postgresql-common";

/// The `fallback_application_name` pgplan passes, as psql passes "psql".
pub const FALLBACK_APPLICATION_NAME: &str = "pgplan";

/// What every secret is displayed as.
pub const REDACTED: &str = "********";

// ---------------------------------------------------------------------------------------------
// Parsing a -d value: which of the two syntaxes it is
// ---------------------------------------------------------------------------------------------

pub(super) const URI_PREFIXES: [&str; 2] = ["postgresql://", "postgres://"];

pub(super) fn uri_prefix_len(text: &str) -> usize {
    URI_PREFIXES
        .iter()
        .find(|prefix| text.starts_with(*prefix))
        .map_or(0, |prefix| prefix.len())
}

/// libpq's `recognized_connection_string`: a URL, or anything with an `=` in it. Everything else
/// given to `-d` is a database name.
pub fn is_connection_string(text: &str) -> bool {
    uri_prefix_len(text) > 0 || text.contains('=')
}

/// The scheme of text shaped like a URL (`scheme://...`, RFC 3986's scheme characters), when it
/// is not one libpq knows: a mistyped `postgresql://` that libpq would take for a database name.
pub(super) fn url_like_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let shaped = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (shaped && uri_prefix_len(text) == 0).then_some(scheme)
}

/// One keyword (validated) and its value, in the order written.
pub(super) type Pairs = Vec<(&'static str, String)>;

/// Parses a connection string or URL into the options it sets, without defaults.
pub fn parse_connection_string(text: &str) -> Result<Vec<(&'static str, String)>, ConnInfoError> {
    if uri_prefix_len(text) > 0 {
        parse_uri(text)
    } else {
        parse_keyword_value(text)
    }
}

/// C's isspace() in the "C" locale, which is what libpq's parser uses.
pub(super) fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r')
}

/// Stores one option as libpq's `conninfo_storeval` does, including its old translation of
/// `requiressl=1` to `sslmode=require` (and anything else to `prefer`).
pub(super) fn store(
    pairs: &mut Pairs,
    word: &str,
    value: String,
    unknown: impl FnOnce() -> ConnInfoError,
) -> Result<(), ConnInfoError> {
    if word == "requiressl" {
        let mode = if value.starts_with('1') {
            "require"
        } else {
            "prefer"
        };
        pairs.push(("sslmode", mode.to_string()));
        return Ok(());
    }
    let keyword = canonical_keyword(word).ok_or_else(unknown)?;
    pairs.push((keyword, value));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::testing::*;

    // --- robustness ----------------------------------------------------------------------

    #[test]
    fn process_environment_is_read_without_panicking() {
        let env = Environment::from_process();
        assert!(env.vars.keys().all(|name| name.starts_with("PG")));
        assert_eq!(env.socket_dirs.len(), DEFAULT_SOCKET_DIRS.len());
        assert_eq!(env.sysconfdir, PathBuf::from(DEFAULT_SYSCONFDIR));
    }

    /// A tiny deterministic generator, so the fuzz test needs no seed management.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }

        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            let index = usize::try_from(self.next()).unwrap_or_default() % items.len();
            items[index]
        }
    }

    #[test]
    fn malformed_input_never_panics() {
        let fx = Fixture::new();
        fx.write("home/.pgpass", "*:*:*:*:x\n\\\n:::\n*\n", 0o600);
        fx.write("home/.pg_service.conf", "[s]\nhost=\n[\n]\n=\n", 0o600);
        let env = fx.env();
        let atoms = [
            "postgresql://",
            "postgres://",
            "host",
            "port",
            "=",
            "'",
            "\\",
            " ",
            ",",
            ":",
            "@",
            "/",
            "?",
            "&",
            "[",
            "]",
            "%",
            "%2",
            "%zz",
            "%00",
            "%ff",
            "%2F",
            "::1",
            "é",
            "😀",
            "password",
            "dbname",
            "service=s",
            "sslmode",
            "verify-full",
            "0",
            "65536",
            "-1",
            "hostaddr",
            "x",
            "\t",
            "\n",
            "ssl=true",
            "requiressl",
            "connect_timeout",
            "keepalives",
            "sslrootcert=system",
            "user",
            "\u{0}",
        ];
        let mut rng = Lcg(0x5eed);
        for _ in 0..4000 {
            let length = 1 + usize::try_from(rng.next() % 12).unwrap_or_default();
            let input: String = (0..length).map(|_| rng.pick(&atoms)).collect();
            let _ = parse_connection_string(&input);
            let _ = redact(&input);
            let request = ConnRequest {
                dbname: Some(input.clone()),
                host: Some(rng.pick(&atoms).to_string()),
                port: Some(rng.pick(&atoms).to_string()),
                user: Some(rng.pick(&atoms).to_string()),
            };
            if let Ok(params) = resolve(&request, &env) {
                let _ = params.redacted();
                let _ = params.explain_sources();
            }
        }
    }
}
