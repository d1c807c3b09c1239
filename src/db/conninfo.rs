//! Connection parameters resolved exactly the way libpq (and so psql) resolves them: flags, a
//! `-d` connection string or URL, the service file, `PG*` environment variables, defaults, and the
//! password file — with every value remembering where it came from. tokio-postgres reads none of
//! these, so this module is what makes `pgplan -d mydb` connect where `psql -d mydb` does.
//!
//! Pure logic plus file reads: no network, no async. The order of everything below follows libpq's
//! `fe-connect.c` (`conninfo_array_parse`, `conninfo_add_defaults`, `pqConnectOptions2`), and the
//! comments say which libpq rule each step mirrors.

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
// Inputs
// ---------------------------------------------------------------------------------------------

/// The process environment, as a value so tests can build their own.
#[derive(Clone)]
pub struct Environment {
    /// Environment variables (only the `PG*` ones matter).
    pub vars: HashMap<String, String>,
    /// The home directory: `$HOME`, else the password database (libpq's `pqGetHomeDirectory`).
    pub home: Option<PathBuf>,
    /// The effective user's name from the password database (libpq's `pg_fe_getauthname`); empty
    /// when there is none.
    pub os_user: String,
    /// Candidate directories for the default Unix socket, in order of preference.
    pub socket_dirs: Vec<PathBuf>,
    /// The directory holding the system-wide `pg_service.conf` when `PGSYSCONFDIR` is unset.
    pub sysconfdir: PathBuf,
}

impl Environment {
    /// An environment with the given variables, home and user, and the default socket directories
    /// and sysconfdir.
    pub fn new(
        vars: HashMap<String, String>,
        home: Option<PathBuf>,
        os_user: impl Into<String>,
    ) -> Self {
        Self {
            vars,
            home,
            os_user: os_user.into(),
            socket_dirs: DEFAULT_SOCKET_DIRS.iter().map(PathBuf::from).collect(),
            sysconfdir: PathBuf::from(DEFAULT_SYSCONFDIR),
        }
    }

    /// The environment of this process.
    pub fn from_process() -> Self {
        let vars = std::env::vars_os()
            .filter_map(|(name, value)| {
                let name = name.into_string().ok()?;
                name.starts_with("PG")
                    .then(|| (name, value.to_string_lossy().into_owned()))
            })
            .collect();
        let account = current_account();
        // libpq prefers $HOME and falls back to the password database only when it is unset or
        // empty.
        let home = std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from)
            .or_else(|| account.as_ref().map(|(_, home)| home.clone()));
        let os_user = account.map(|(name, _)| name).unwrap_or_default();
        Self::new(vars, home, os_user)
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }
}

impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<_> = self.vars.keys().collect();
        names.sort();
        let vars: Vec<String> = names
            .into_iter()
            .map(|name| {
                let value = self.vars.get(name).map(String::as_str).unwrap_or_default();
                if is_secret_name(name) {
                    format!("{name}={REDACTED}")
                } else {
                    format!("{name}={value}")
                }
            })
            .collect();
        f.debug_struct("Environment")
            .field("vars", &vars)
            .field("home", &self.home)
            .field("os_user", &self.os_user)
            .field("socket_dirs", &self.socket_dirs)
            .field("sysconfdir", &self.sysconfdir)
            .finish()
    }
}

/// The effective user's name and home directory from the password database.
fn current_account() -> Option<(String, PathBuf)> {
    // SAFETY: geteuid() has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let mut buffer_len = 1024usize;
    loop {
        let mut buffer: Vec<libc::c_char> = vec![0; buffer_len];
        // SAFETY: an all-zero passwd is a valid value (null pointers and zero ids); it is only
        // read after getpwuid_r() filled it in.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the duration of the call and the buffer length is
        // the buffer's real length.
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &mut entry,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut result,
            )
        };
        if rc == libc::ERANGE && buffer_len < (1 << 20) {
            buffer_len *= 4;
            continue;
        }
        if rc != 0 || result.is_null() || entry.pw_name.is_null() || entry.pw_dir.is_null() {
            return None;
        }
        // SAFETY: on success pw_name and pw_dir point to NUL-terminated strings inside `buffer`,
        // which is still alive here.
        let (name, dir) = unsafe { (CStr::from_ptr(entry.pw_name), CStr::from_ptr(entry.pw_dir)) };
        return Some((
            name.to_string_lossy().into_owned(),
            PathBuf::from(OsStr::from_bytes(dir.to_bytes())),
        ));
    }
}

/// What the user typed, psql-style.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnRequest {
    /// `-d/--dbname`: a database name, a `key=value` connection string, or a `postgresql://` URL.
    pub dbname: Option<String>,
    /// `-h/--host`.
    pub host: Option<String>,
    /// `-p/--port`.
    pub port: Option<String>,
    /// `-U/--username`.
    pub user: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Outputs
// ---------------------------------------------------------------------------------------------

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A command-line flag (`-h`, `-p`, `-U`, or `-d` holding a plain database name).
    Flag,
    /// The connection string or URL given with `-d`.
    ConnString,
    /// A section of a service file.
    Service { name: String, file: PathBuf },
    /// An environment variable.
    Environment(&'static str),
    /// A line of the password file.
    PasswordFile(PathBuf),
    /// libpq's (or pgplan's) default.
    Default,
}

impl Source {
    /// "from -p/--port", "from PGSSLMODE", ... for error messages about `keyword`.
    pub fn describe(&self, keyword: &str) -> String {
        match self {
            Self::Flag => match keyword {
                "host" => "from -h/--host".to_string(),
                "port" => "from -p/--port".to_string(),
                "user" => "from -U/--username".to_string(),
                "dbname" => "from -d/--dbname".to_string(),
                _ => "from the command line".to_string(),
            },
            Self::ConnString => "from the -d connection string".to_string(),
            Self::Service { name, file } => {
                format!("from service \"{name}\" in {}", file.display())
            }
            Self::Environment(var) => format!("from {var}"),
            Self::PasswordFile(path) => format!("from password file {}", path.display()),
            Self::Default => "the default".to_string(),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Flag => f.write_str("command-line flag"),
            Self::ConnString => f.write_str("-d connection string"),
            Self::Service { name, file } => write!(f, "service \"{name}\" ({})", file.display()),
            Self::Environment(var) => write!(f, "environment {var}"),
            Self::PasswordFile(path) => write!(f, "password file {}", path.display()),
            Self::Default => f.write_str("default"),
        }
    }
}

/// A resolved value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting<T> {
    pub value: T,
    pub source: Source,
}

impl<T> Setting<T> {
    fn new(value: T, source: Source) -> Self {
        Self { value, source }
    }
}

/// A password. `Debug` and `Display` print `********`; only [`Secret::expose`] gives the text.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret text, for handing to the driver and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// One host to try, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// A host name, an IP address, or a Unix socket directory (also set alongside `hostaddr`:
    /// libpq then uses it for certificate checks and the password file, not for connecting).
    pub host: Option<String>,
    /// A numeric address to connect to, skipping name resolution.
    pub hostaddr: Option<IpAddr>,
    pub port: u16,
    /// True when `host` is a Unix socket directory (starts with `/`, or `@` for Linux's abstract
    /// namespace) and no `hostaddr` overrides it.
    pub is_socket: bool,
    /// The password for this host: the explicit one, else the password file's match for it.
    pub password: Option<Setting<Secret>>,
    /// Where `host` came from (or `hostaddr`, when there is no `host`).
    pub host_source: Source,
    pub port_source: Source,
}

macro_rules! keyword_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$variant_meta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$variant_meta])* $variant),+
        }

        impl $name {
            /// Every value libpq accepts, spelled as in a connection string, in libpq's order.
            pub const CHOICES: &'static [(&'static str, $name)] = &[$(($text, $name::$variant)),+];

            /// The value as written in a connection string.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

keyword_enum! {
    /// `sslmode`.
    SslMode {
        Disable => "disable",
        Allow => "allow",
        Prefer => "prefer",
        Require => "require",
        VerifyCa => "verify-ca",
        VerifyFull => "verify-full",
    }
}

keyword_enum! {
    /// `sslnegotiation` (libpq 17): the classic SSLRequest exchange, or TLS from the first byte.
    SslNegotiation {
        Postgres => "postgres",
        Direct => "direct",
    }
}

keyword_enum! {
    /// `target_session_attrs`.
    TargetSessionAttrs {
        Any => "any",
        ReadWrite => "read-write",
        ReadOnly => "read-only",
        Primary => "primary",
        Standby => "standby",
        PreferStandby => "prefer-standby",
    }
}

keyword_enum! {
    /// `channel_binding`.
    ChannelBinding {
        Disable => "disable",
        Prefer => "prefer",
        Require => "require",
    }
}

keyword_enum! {
    /// `load_balance_hosts`.
    LoadBalanceHosts {
        Disable => "disable",
        Random => "random",
    }
}

keyword_enum! {
    /// `ssl_min_protocol_version` / `ssl_max_protocol_version`. libpq compares these
    /// case-insensitively.
    TlsVersion {
        Tls1_0 => "TLSv1",
        Tls1_1 => "TLSv1.1",
        Tls1_2 => "TLSv1.2",
        Tls1_3 => "TLSv1.3",
    }
}

keyword_enum! {
    /// `gssencmode`, validated only: pgplan has no GSSAPI, so anything but `require` means "no".
    GssEncMode {
        Disable => "disable",
        Prefer => "prefer",
        Require => "require",
    }
}

keyword_enum! {
    /// `sslcertmode`, validated and applied while resolving the client certificate.
    SslCertMode {
        Disable => "disable",
        Allow => "allow",
        Require => "require",
    }
}

/// TCP keepalive and user-timeout settings. A zero duration means "leave the system default".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keepalives {
    /// `keepalives`: on unless set to 0.
    pub enabled: Setting<bool>,
    /// `keepalives_idle`, seconds.
    pub idle: Option<Setting<Duration>>,
    /// `keepalives_interval`, seconds.
    pub interval: Option<Setting<Duration>>,
    /// `keepalives_count`.
    pub count: Option<Setting<u32>>,
    /// `tcp_user_timeout`, milliseconds.
    pub tcp_user_timeout: Option<Setting<Duration>>,
}

/// Everything needed to connect, each value with its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnParams {
    /// Hosts to try in order (libpq tries each until one accepts).
    pub hosts: Vec<HostSpec>,
    /// Every Unix socket path looked at while choosing a default socket directory, so a
    /// connection error can name them all.
    pub socket_paths_tried: Vec<PathBuf>,
    pub user: Setting<String>,
    pub dbname: Setting<String>,
    /// The service whose section filled in values, if any.
    pub service: Option<Setting<String>>,
    /// The password file consulted (only when no password was given), for "password retrieved
    /// from file" messages.
    pub passfile: Option<Setting<PathBuf>>,
    pub application_name: Setting<String>,
    /// `options`: command-line options sent to the server (`-c name=value ...`).
    pub options: Option<Setting<String>>,
    /// Per-host connect timeout; `None` means wait forever (libpq: unset, zero or negative).
    pub connect_timeout: Option<Setting<Duration>>,
    pub sslmode: Setting<SslMode>,
    pub sslnegotiation: Setting<SslNegotiation>,
    /// A root certificate file that exists, or `"system"` for the system's trust store. With
    /// `sslmode=require` and a root certificate present, libpq verifies the chain (as verify-ca).
    pub sslrootcert: Option<Setting<String>>,
    /// The client certificate, when one exists and `sslcertmode` allows sending it.
    pub sslcert: Option<Setting<PathBuf>>,
    /// The client key; set exactly when `sslcert` is, and already checked to exist with
    /// permissions libpq accepts.
    pub sslkey: Option<Setting<PathBuf>>,
    /// The passphrase of an encrypted client key.
    pub sslpassword: Option<Setting<Secret>>,
    pub ssl_min_protocol_version: Option<Setting<TlsVersion>>,
    pub ssl_max_protocol_version: Option<Setting<TlsVersion>>,
    pub target_session_attrs: Setting<TargetSessionAttrs>,
    pub channel_binding: Setting<ChannelBinding>,
    pub load_balance_hosts: Setting<LoadBalanceHosts>,
    pub keepalives: Keepalives,
    /// Server settings libpq sends at startup from `PGDATESTYLE`, `PGTZ` and `PGGEQO` (unless
    /// set to `default`), as (server parameter, value).
    pub startup_settings: Vec<(&'static str, Setting<String>)>,
    /// Things worth telling the user that did not stop resolution (an ignored password file, ...).
    pub warnings: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// A "did you mean" tail for an error message; empty when nothing is close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion(Option<&'static str>);

impl fmt::Display for Suggestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(word) => write!(f, "; did you mean \"{word}\"?"),
            None => Ok(()),
        }
    }
}

/// Which part of a URL a percent-decoding problem is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UriPart {
    User,
    Password,
    Hosts,
    Ports,
    Database,
    ParameterName,
    ParameterValue,
}

impl fmt::Display for UriPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::User => "user name",
            Self::Password => "password",
            Self::Hosts => "host list",
            Self::Ports => "port list",
            Self::Database => "database name",
            Self::ParameterName => "name of a query parameter",
            Self::ParameterValue => "value of a query parameter",
        })
    }
}

/// Why connection parameters could not be resolved. No message ever contains a password: values
/// are quoted only for keywords that are not secret, and URLs are quoted only after [`redact`].
#[derive(Debug, thiserror::Error)]
pub enum ConnInfoError {
    #[error(
        "missing \"=\" after \"{word}\" in connection info string (character {position} of the -d value)\n\
         hint: write keyword=value pairs separated by spaces, and quote a value that contains spaces: keyword='a value'"
    )]
    MissingEquals { word: String, position: usize },
    #[error(
        "unterminated quoted string in connection info string: the quote opened at character {position} \
         (value of \"{keyword}\") is never closed\n\
         hint: end the value with ', and write a quote inside it as \\'"
    )]
    UnterminatedQuote { keyword: String, position: usize },
    #[error(
        "invalid connection option \"{keyword}\" (character {position} of the -d value){suggestion}\n\
         hint: the libpq documentation, \"Parameter Key Words\", lists the options a connection string may set"
    )]
    InvalidOption {
        keyword: String,
        position: usize,
        suggestion: Suggestion,
    },
    #[error(
        "invalid URI query parameter \"{keyword}\" (character {position} of the -d URL){suggestion}\n\
         hint: query parameters are libpq connection options: ?sslmode=require&application_name=x"
    )]
    InvalidUriParameter {
        keyword: String,
        position: usize,
        suggestion: Suggestion,
    },
    #[error(
        "missing key/value separator \"=\" in URI query parameter \"{parameter}\" (character {position} of the -d URL)\n\
         hint: write ?keyword=value&keyword=value"
    )]
    UriParameterMissingEquals { parameter: String, position: usize },
    #[error(
        "extra key/value separator \"=\" in URI query parameter \"{keyword}\" (character {position} of the -d URL)\n\
         hint: write an \"=\" inside a value as %3D"
    )]
    UriParameterExtraEquals { keyword: String, position: usize },
    #[error(
        "invalid percent-encoded token in the {part} of the -d URL (character {position}): \"%\" must be \
         followed by two hexadecimal digits\nhint: write a literal \"%\" as %25"
    )]
    InvalidPercentEncoding { part: UriPart, position: usize },
    #[error(
        "forbidden value %00 in the {part} of the -d URL (character {position}): a connection \
         parameter cannot contain a NUL byte"
    )]
    PercentEncodedNul { part: UriPart, position: usize },
    #[error(
        "the {part} of the -d URL (from character {position}) percent-decodes to bytes that are not UTF-8\n\
         hint: percent-encode text as UTF-8"
    )]
    PercentEncodedNotUtf8 { part: UriPart, position: usize },
    #[error(
        "end of string reached when looking for matching \"]\" in IPv6 host address in URI \"{uri}\"\n\
         hint: close the address: postgresql://[::1]:5432/db"
    )]
    UriUnterminatedIpv6 { uri: String },
    #[error(
        "IPv6 host address may not be empty in URI \"{uri}\"\nhint: write an address between the brackets: postgresql://[::1]/db"
    )]
    UriEmptyIpv6 { uri: String },
    #[error(
        "the -d URL \"{uri}\" has more than one \"@\" before its host: libpq splits it at the first one and \
         would take the rest of the user info for a host name\n\
         hint: percent-encode an \"@\" inside a user name or password as %40"
    )]
    UriRawAtSign { uri: String },
    #[error(
        "-d \"{text}\" looks like a URL, but \"{scheme}://\" is not a scheme libpq knows, so it would be taken \
         for a database name\nhint: start a connection URL with postgresql:// or postgres://"
    )]
    UnknownUriScheme { scheme: String, text: String },
    #[error(
        "unexpected character \"{found}\" at position {position} in URI \"{uri}\" (expected \":\", \"/\", \"?\" or \",\" after an IPv6 address)"
    )]
    UriUnexpectedCharacter {
        found: char,
        position: usize,
        uri: String,
    },
    #[error(
        "invalid {keyword} value \"{value}\" ({origin}); expected one of {expected}{suggestion}"
    )]
    InvalidValue {
        keyword: &'static str,
        value: String,
        origin: String,
        expected: String,
        suggestion: Suggestion,
    },
    #[error(
        "invalid integer value \"{value}\" for connection option \"{keyword}\" ({origin}); expected a whole number{unit}"
    )]
    InvalidInteger {
        keyword: &'static str,
        value: String,
        origin: String,
        unit: &'static str,
    },
    #[error("invalid port number \"{value}\" ({origin}); a port is a whole number from 1 to 65535")]
    InvalidPort { value: String, origin: String },
    #[error(
        "could not parse network address \"{value}\" in hostaddr ({origin}): {reason}\n\
         hint: hostaddr takes numeric IPv4 or IPv6 addresses; put host names in host"
    )]
    InvalidHostaddr {
        value: String,
        origin: String,
        reason: String,
    },
    #[error(
        "could not match {hosts} host names to {hostaddrs} hostaddr values\n\
         hint: give host and hostaddr the same number of comma-separated entries"
    )]
    HostCountMismatch { hosts: usize, hostaddrs: usize },
    #[error(
        "could not match {ports} port numbers to {hosts} hosts\n\
         hint: give one port for every host, or exactly one per host: host=a,b port=5432,5433"
    )]
    PortCountMismatch { ports: usize, hosts: usize },
    #[error(
        "could not determine the local user name (this user ID has no entry in the password database)\n\
         hint: name the database user with -U/--username, PGUSER or user="
    )]
    NoUserName,
    #[error(transparent)]
    Service(#[from] ServiceError),
    #[error(
        "weak sslmode \"{sslmode}\" ({origin}) may not be used with sslrootcert=system\n\
         hint: use sslmode=verify-full, or name a root certificate file instead of \"system\""
    )]
    WeakSslModeForSystemRoots { sslmode: SslMode, origin: String },
    #[error(
        "weak sslmode \"{sslmode}\" ({origin}) may not be used with sslnegotiation=direct\n\
         hint: use sslmode=require, verify-ca or verify-full, or sslnegotiation=postgres"
    )]
    WeakSslModeForDirect { sslmode: SslMode, origin: String },
    #[error(
        "invalid SSL protocol version range: ssl_min_protocol_version={min} is above ssl_max_protocol_version={max}"
    )]
    InvalidSslProtocolRange { min: TlsVersion, max: TlsVersion },
    #[error(
        "root certificate file \"{}\" ({origin}) does not exist, and sslmode={sslmode} needs it to verify the server\n\
         hint: provide the file, use the system's trusted roots with sslrootcert=system, or use sslmode=require, \
         which does not verify the server certificate",
        path.display()
    )]
    RootCertificateMissing {
        path: PathBuf,
        origin: String,
        sslmode: SslMode,
    },
    #[error(
        "could not get home directory to locate root certificate file, and sslmode={sslmode} needs one\n\
         hint: name the file with sslrootcert= or PGSSLROOTCERT, use sslrootcert=system, or use sslmode=require"
    )]
    NoHomeForRootCertificate { sslmode: SslMode },
    #[error(
        "certificate present, but not private key file \"{}\"\n\
         hint: put the client key there, or name it with sslkey= or PGSSLKEY",
        path.display()
    )]
    PrivateKeyMissing { path: PathBuf },
    #[error("private key file \"{}\" is not a regular file", path.display())]
    PrivateKeyNotRegular { path: PathBuf },
    #[error(
        "private key file \"{}\" has group or world access (mode {mode:04o}); file must have permissions \
         u=rw (0600) or less if owned by the current user, or permissions u=rw,g=r (0640) or less if owned by root\n\
         hint: chmod 0600 {}",
        path.display(),
        path.display()
    )]
    PrivateKeyPermissions { path: PathBuf, mode: u32 },
    #[error("{keyword}={value} ({origin}) cannot be honoured by pgplan: {reason}\nhint: {hint}")]
    Unsupported {
        keyword: &'static str,
        value: String,
        origin: String,
        reason: &'static str,
        hint: &'static str,
    },
}

// ---------------------------------------------------------------------------------------------
// Keywords
// ---------------------------------------------------------------------------------------------

/// Every keyword libpq 17 accepts, in libpq's order, with the environment variable that supplies
/// it when neither the connection string nor the service file did.
const KEYWORDS: &[(&str, Option<&str>)] = &[
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
const STARTUP_SETTING_VARS: &[(&str, &str)] = &[
    ("PGDATESTYLE", "datestyle"),
    ("PGTZ", "timezone"),
    ("PGGEQO", "geqo"),
];

fn canonical_keyword(word: &str) -> Option<&'static str> {
    KEYWORDS
        .iter()
        .find(|(keyword, _)| *keyword == word)
        .map(|(keyword, _)| *keyword)
}

/// Names whose values are secrets, judged generously: redaction also runs on malformed input and
/// on misspelt keywords.
fn is_secret_name(name: &str) -> bool {
    name.to_ascii_lowercase().contains("password")
}

/// The closest of `candidates` to `word`, if it is plausibly a typo of it.
fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
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

fn edit_distance(a: &str, b: &str) -> usize {
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

fn keyword_suggestion(word: &str) -> Suggestion {
    Suggestion(closest(word, KEYWORDS.iter().map(|(keyword, _)| *keyword)))
}

// ---------------------------------------------------------------------------------------------
// Parsing a -d value
// ---------------------------------------------------------------------------------------------

const URI_PREFIXES: [&str; 2] = ["postgresql://", "postgres://"];

fn uri_prefix_len(text: &str) -> usize {
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
fn url_like_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let shaped = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (shaped && uri_prefix_len(text) == 0).then_some(scheme)
}

/// One keyword (validated) and its value, in the order written.
type Pairs = Vec<(&'static str, String)>;

/// Parses a connection string or URL into the options it sets, without defaults.
pub fn parse_connection_string(text: &str) -> Result<Vec<(&'static str, String)>, ConnInfoError> {
    if uri_prefix_len(text) > 0 {
        parse_uri(text)
    } else {
        parse_keyword_value(text)
    }
}

/// C's isspace() in the "C" locale, which is what libpq's parser uses.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r')
}

/// Stores one option as libpq's `conninfo_storeval` does, including its old translation of
/// `requiressl=1` to `sslmode=require` (and anything else to `prefer`).
fn store(
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

/// `keyword = value` pairs as libpq's `conninfo_parse` reads them: whitespace around `=` allowed;
/// a value is single-quoted (`\'` and `\\` escapes inside) or runs to the next whitespace (with
/// backslash escapes too); a later duplicate overrides an earlier one.
fn parse_keyword_value(text: &str) -> Result<Pairs, ConnInfoError> {
    let chars: Vec<char> = text.chars().collect();
    let len = chars.len();
    let mut pairs = Pairs::new();
    let mut i = 0;
    while i < len {
        if is_c_space(chars[i]) {
            i += 1;
            continue;
        }
        let word_start = i;
        while i < len && chars[i] != '=' && !is_c_space(chars[i]) {
            i += 1;
        }
        let word: String = chars[word_start..i].iter().collect();
        while i < len && is_c_space(chars[i]) {
            i += 1;
        }
        if i >= len || chars[i] != '=' {
            // A word with no "=" right after a password is most likely the rest of a password
            // that contains a space; never echo it.
            let follows_secret = pairs
                .last()
                .is_some_and(|(keyword, _)| is_secret_name(keyword));
            return Err(ConnInfoError::MissingEquals {
                word: if follows_secret {
                    REDACTED.to_string()
                } else {
                    word
                },
                position: word_start + 1,
            });
        }
        i += 1;
        while i < len && is_c_space(chars[i]) {
            i += 1;
        }
        let mut value = String::new();
        if i < len && chars[i] == '\'' {
            let quote_at = i;
            i += 1;
            loop {
                match chars.get(i) {
                    None => {
                        return Err(ConnInfoError::UnterminatedQuote {
                            keyword: word,
                            position: quote_at + 1,
                        });
                    }
                    Some('\\') => {
                        // An escaped character is taken literally; a backslash at the very end
                        // leaves the quote open.
                        if let Some(&escaped) = chars.get(i + 1) {
                            value.push(escaped);
                        }
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        value.push(c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < len {
                let c = chars[i];
                if is_c_space(c) {
                    i += 1;
                    break;
                }
                if c == '\\' {
                    if let Some(&escaped) = chars.get(i + 1) {
                        value.push(escaped);
                    }
                    i += 2;
                } else {
                    value.push(c);
                    i += 1;
                }
            }
        }
        let position = word_start + 1;
        store(&mut pairs, &word, value, || ConnInfoError::InvalidOption {
            suggestion: keyword_suggestion(&word),
            keyword: word.clone(),
            position,
        })?;
    }
    Ok(pairs)
}

/// 1-based character position of a byte offset (always at a character boundary here: every
/// offset used is the start of the text or of an ASCII delimiter).
fn char_position(text: &str, byte_offset: usize) -> usize {
    text.get(..byte_offset)
        .map_or(byte_offset, |head| head.chars().count())
        + 1
}

enum DecodeError {
    BadEscape(usize),
    Nul(usize),
    NotUtf8,
}

/// libpq's `conninfo_uri_decode`: `%XY` with two hex digits, `%00` forbidden, `+` left alone.
fn percent_decode(raw: &str) -> Result<String, DecodeError> {
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            decoded.push(bytes[i]);
            i += 1;
            continue;
        }
        let hex = |offset: usize| {
            bytes
                .get(i + offset)
                .and_then(|b| (*b as char).to_digit(16))
        };
        let (Some(high), Some(low)) = (hex(1), hex(2)) else {
            return Err(DecodeError::BadEscape(i));
        };
        let byte = (high * 16 + low) as u8;
        if byte == 0 {
            return Err(DecodeError::Nul(i));
        }
        decoded.push(byte);
        i += 3;
    }
    String::from_utf8(decoded).map_err(|_| DecodeError::NotUtf8)
}

/// Decodes one part of `uri`; `position` maps an offset inside `raw` to a character position in
/// the whole URL.
fn decode_part(
    uri: &str,
    raw: &str,
    part: UriPart,
    position: impl Fn(usize) -> usize,
) -> Result<String, ConnInfoError> {
    percent_decode(raw).map_err(|error| match error {
        DecodeError::BadEscape(at) => ConnInfoError::InvalidPercentEncoding {
            part,
            position: char_position(uri, position(at)),
        },
        DecodeError::Nul(at) => ConnInfoError::PercentEncodedNul {
            part,
            position: char_position(uri, position(at)),
        },
        DecodeError::NotUtf8 => ConnInfoError::PercentEncodedNotUtf8 {
            part,
            position: char_position(uri, position(0)),
        },
    })
}

/// A URL as libpq's `conninfo_uri_parse_options` reads it:
/// `postgresql://[user[:password]@][host][:port][,...][/dbname][?param=value&...]`.
fn parse_uri(uri: &str) -> Result<Pairs, ConnInfoError> {
    let bytes = uri.as_bytes();
    let len = bytes.len();
    let start = uri_prefix_len(uri);
    let mut pairs = Pairs::new();

    // User credentials end at the first "@" before any "/" (libpq looks no further, so an "@"
    // in the query string after a "/" is not taken for one).
    let mut p = start;
    while p < len && bytes[p] != b'@' && bytes[p] != b'/' {
        p += 1;
    }
    if p < len && bytes[p] == b'@' {
        let at = p;
        let user_end = uri[start..at].find(':').map_or(at, |colon| start + colon);
        let user = &uri[start..user_end];
        if !user.is_empty() {
            let value = decode_part(uri, user, UriPart::User, |offset| start + offset)?;
            pairs.push(("user", value));
        }
        if user_end < at {
            let password_start = user_end + 1;
            let password = &uri[password_start..at];
            if !password.is_empty() {
                let value = decode_part(uri, password, UriPart::Password, |offset| {
                    password_start + offset
                })?;
                pairs.push(("password", value));
            }
        }
        p = at + 1;
    } else {
        p = start;
    }

    // host[:port] pairs separated by commas; hosts and ports are each collected into one
    // comma-separated list and decoded afterwards, as libpq does (so %2C in a host splits it).
    let netloc_start = p;
    let mut hosts = String::new();
    let mut ports = String::new();
    let mut terminator: Option<u8>;
    loop {
        let host_text;
        if p < len && bytes[p] == b'[' {
            let address_start = p + 1;
            let mut q = address_start;
            while q < len && bytes[q] != b']' {
                q += 1;
            }
            if q >= len {
                return Err(ConnInfoError::UriUnterminatedIpv6 {
                    uri: redact_user_info(uri),
                });
            }
            if q == address_start {
                return Err(ConnInfoError::UriEmptyIpv6 {
                    uri: redact_user_info(uri),
                });
            }
            host_text = &uri[address_start..q];
            p = q + 1;
            if p < len && !matches!(bytes[p], b':' | b'/' | b'?' | b',') {
                return Err(ConnInfoError::UriUnexpectedCharacter {
                    found: uri[p..].chars().next().unwrap_or('?'),
                    position: char_position(uri, p),
                    uri: redact_user_info(uri),
                });
            }
        } else {
            let host_start = p;
            while p < len && !matches!(bytes[p], b':' | b'/' | b'?' | b',') {
                p += 1;
            }
            host_text = &uri[host_start..p];
        }
        hosts.push_str(host_text);
        terminator = bytes.get(p).copied();
        if terminator == Some(b':') {
            p += 1;
            let port_start = p;
            while p < len && !matches!(bytes[p], b'/' | b'?' | b',') {
                p += 1;
            }
            ports.push_str(&uri[port_start..p]);
            terminator = bytes.get(p).copied();
        }
        if terminator != Some(b',') {
            break;
        }
        p += 1;
        hosts.push(',');
        ports.push(',');
    }
    // A raw "@" left in the host list is the rest of a user name or password that held one
    // (postgresql://u:p@ss@host): refused, so no part of it is echoed as a host name.
    if hosts.contains('@') {
        return Err(ConnInfoError::UriRawAtSign {
            uri: redact_user_info(uri),
        });
    }
    if !hosts.is_empty() {
        pairs.push((
            "host",
            decode_part(uri, &hosts, UriPart::Hosts, |_| netloc_start)?,
        ));
    }
    if !ports.is_empty() {
        pairs.push((
            "port",
            decode_part(uri, &ports, UriPart::Ports, |_| netloc_start)?,
        ));
    }

    if terminator == Some(b'/') {
        p += 1;
        let database_start = p;
        while p < len && bytes[p] != b'?' {
            p += 1;
        }
        terminator = bytes.get(p).copied();
        // An empty path sets nothing (so PGDATABASE still applies), as in libpq.
        let database = &uri[database_start..p];
        if !database.is_empty() {
            let value = decode_part(uri, database, UriPart::Database, |offset| {
                database_start + offset
            })?;
            pairs.push(("dbname", value));
        }
    }

    if terminator == Some(b'?') {
        parse_uri_parameters(uri, p + 1, &mut pairs)?;
    }
    Ok(pairs)
}

/// The `?keyword=value&...` part of a URL (libpq's `conninfo_uri_parse_params`), starting at byte
/// `start` of `uri`.
fn parse_uri_parameters(uri: &str, start: usize, pairs: &mut Pairs) -> Result<(), ConnInfoError> {
    let mut offset = start;
    while offset < uri.len() {
        let rest = &uri[offset..];
        let piece_len = rest.find('&').unwrap_or(rest.len());
        let piece = &rest[..piece_len];
        let piece_start = offset;
        offset += piece_len + 1;

        let Some(equals) = piece.find('=') else {
            return Err(ConnInfoError::UriParameterMissingEquals {
                parameter: if is_secret_name(piece) {
                    REDACTED.to_string()
                } else {
                    piece.to_string()
                },
                position: char_position(uri, piece_start),
            });
        };
        let (raw_keyword, raw_value) = (&piece[..equals], &piece[equals + 1..]);
        if raw_value.contains('=') {
            return Err(ConnInfoError::UriParameterExtraEquals {
                keyword: raw_keyword.to_string(),
                position: char_position(uri, piece_start),
            });
        }
        let keyword = decode_part(uri, raw_keyword, UriPart::ParameterName, |at| {
            piece_start + at
        })?;
        let value_start = piece_start + equals + 1;
        let value = decode_part(uri, raw_value, UriPart::ParameterValue, |at| {
            value_start + at
        })?;

        // libpq accepts JDBC's ssl=true as sslmode=require (and nothing else for "ssl").
        if keyword == "ssl" && value == "true" {
            pairs.push(("sslmode", "require".to_string()));
            continue;
        }
        let position = char_position(uri, piece_start);
        store(pairs, &keyword, value, || {
            ConnInfoError::InvalidUriParameter {
                suggestion: keyword_suggestion(&keyword),
                keyword: keyword.clone(),
                position,
            }
        })?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Gathering values from every source
// ---------------------------------------------------------------------------------------------

/// A raw value and its source, before interpretation. Deliberately not `Debug`: it may hold a
/// password.
struct Given {
    value: String,
    source: Source,
}

impl Given {
    fn origin(&self, keyword: &str) -> String {
        self.source.describe(keyword)
    }
}

/// The option array libpq builds before `pqConnectOptions2` interprets it: at most one raw value
/// per keyword. An empty value is still a value: it blocks the service file and the environment,
/// exactly as in libpq.
#[derive(Default)]
struct Gathered {
    values: HashMap<&'static str, Given>,
}

impl Gathered {
    /// Sets a value, overriding any earlier one.
    fn set(&mut self, keyword: &'static str, value: String, source: Source) {
        self.values.insert(keyword, Given { value, source });
    }

    /// Sets a value only when nothing set one before.
    fn fill(&mut self, keyword: &'static str, value: String, source: Source) {
        self.values
            .entry(keyword)
            .or_insert(Given { value, source });
    }

    fn get(&self, keyword: &str) -> Option<&Given> {
        self.values.get(keyword)
    }

    /// The value unless it is missing or empty; libpq treats an empty host, port, user, ... as
    /// not given at all.
    fn nonempty(&self, keyword: &str) -> Option<&Given> {
        self.get(keyword).filter(|given| !given.value.is_empty())
    }
}

/// Resolves the connection parameters for `request` in `env`, as psql would.
pub fn resolve(request: &ConnRequest, env: &Environment) -> Result<ConnParams, ConnInfoError> {
    let mut gathered = Gathered::default();
    let mut warnings = Vec::new();

    // psql hands PQconnectdbParams host, port, user, dbname and then fallback_application_name,
    // with expand_dbname on. Empty values are skipped; a later entry overrides an earlier one, so
    // whatever a -d connection string sets beats -h/-p/-U.
    let flags = [
        ("host", &request.host),
        ("port", &request.port),
        ("user", &request.user),
    ];
    for (keyword, value) in flags {
        if let Some(value) = value.as_deref().filter(|value| !value.is_empty()) {
            gathered.set(keyword, value.to_string(), Source::Flag);
        }
    }
    if let Some(dbname) = request.dbname.as_deref().filter(|value| !value.is_empty()) {
        if is_connection_string(dbname) {
            for (keyword, value) in parse_connection_string(dbname)? {
                if keyword == "fallback_application_name" {
                    warnings.push(format!(
                        "fallback_application_name={value} in -d is overridden by pgplan's own \
                         fallback name, as psql overrides it with \"psql\"; set application_name instead"
                    ));
                }
                gathered.set(keyword, value, Source::ConnString);
            }
        } else if let Some(scheme) = url_like_scheme(dbname) {
            return Err(ConnInfoError::UnknownUriScheme {
                scheme: scheme.to_owned(),
                text: redact(dbname),
            });
        } else {
            gathered.set("dbname", dbname.to_string(), Source::Flag);
        }
    }
    gathered.set(
        "fallback_application_name",
        FALLBACK_APPLICATION_NAME.to_string(),
        Source::Default,
    );

    // libpq's conninfo_add_defaults: the service file first, then the environment, each filling
    // only what is still unset.
    let service = apply_service(&mut gathered, env)?;
    apply_environment(&mut gathered, env);
    interpret(&gathered, service, env, warnings)
}

fn apply_service(
    gathered: &mut Gathered,
    env: &Environment,
) -> Result<Option<Setting<String>>, ConnInfoError> {
    // PGSERVICE is consulted here, before any other variable, because the service's values must
    // beat the environment's.
    let service = match gathered.get("service") {
        Some(given) => Setting::new(given.value.clone(), given.source.clone()),
        None => match env.var("PGSERVICE") {
            Some(name) => Setting::new(name.to_string(), Source::Environment("PGSERVICE")),
            None => return Ok(None),
        },
    };
    let user_file = match env.var("PGSERVICEFILE") {
        Some(path) => Some(UserServiceFile::Named(PathBuf::from(path))),
        None => env
            .home
            .as_ref()
            .map(|home| UserServiceFile::Home(home.join(".pg_service.conf"))),
    };
    let system_file = match env.var("PGSYSCONFDIR") {
        Some(dir) => PathBuf::from(format!("{dir}/pg_service.conf")),
        None => env.sysconfdir.join("pg_service.conf"),
    };
    let definition = service::find(&service.value, user_file.as_ref(), &system_file, |key| {
        canonical_keyword(key).is_some()
    })?;
    for entry in definition.entries {
        if let Some(keyword) = canonical_keyword(&entry.key) {
            let source = Source::Service {
                name: definition.name.clone(),
                file: definition.file.clone(),
            };
            gathered.fill(keyword, entry.value, source);
        }
    }
    Ok(Some(service))
}

fn apply_environment(gathered: &mut Gathered, env: &Environment) {
    for (keyword, var) in KEYWORDS {
        let Some(var) = var else { continue };
        // PGSERVICE was handled with the service file; a set-but-empty variable still counts,
        // as getenv() returns it.
        if *keyword == "service" || gathered.get(keyword).is_some() {
            continue;
        }
        if let Some(value) = env.var(var) {
            gathered.set(keyword, value.to_string(), Source::Environment(var));
        }
    }
    // The deprecated PGREQUIRESSL=1 still means sslmode=require when nothing else set sslmode.
    if gathered.get("sslmode").is_none()
        && env.var("PGREQUIRESSL").is_some_and(|v| v.starts_with('1'))
    {
        gathered.set(
            "sslmode",
            "require".to_string(),
            Source::Environment("PGREQUIRESSL"),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Interpreting the gathered values (libpq's pqConnectOptions2 and the SSL setup)
// ---------------------------------------------------------------------------------------------

/// A chosen value among `choices`, or the default when unset. An empty value is invalid, as in
/// libpq (which validates these keywords whenever they are non-NULL).
fn choice<T: Copy>(
    gathered: &Gathered,
    keyword: &'static str,
    choices: &'static [(&'static str, T)],
    default: T,
) -> Result<Setting<T>, ConnInfoError> {
    let Some(given) = gathered.get(keyword) else {
        return Ok(Setting::new(default, Source::Default));
    };
    match choices.iter().find(|(text, _)| *text == given.value) {
        Some((_, value)) => Ok(Setting::new(*value, given.source.clone())),
        None => Err(invalid_value(
            keyword,
            given,
            choices.iter().map(|(text, _)| *text),
        )),
    }
}

fn invalid_value(
    keyword: &'static str,
    given: &Given,
    choices: impl Iterator<Item = &'static str> + Clone,
) -> ConnInfoError {
    ConnInfoError::InvalidValue {
        keyword,
        value: given.value.clone(),
        origin: given.origin(keyword),
        expected: choices.clone().collect::<Vec<_>>().join(", "),
        suggestion: Suggestion(closest(&given.value, choices)),
    }
}

/// libpq's `pqParseIntParam`: optional whitespace, an optional sign, digits, optional whitespace,
/// and the result must fit a C `int`.
fn parse_c_int(text: &str) -> Option<i32> {
    let trimmed = text.trim_start_matches(is_c_space);
    let (negative, unsigned) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let digits = unsigned.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !unsigned[digits..].chars().all(is_c_space) {
        return None;
    }
    let magnitude: i64 = unsigned[..digits].parse().ok()?;
    i32::try_from(if negative { -magnitude } else { magnitude }).ok()
}

fn int_setting(
    gathered: &Gathered,
    keyword: &'static str,
    unit: &'static str,
) -> Result<Option<Setting<i32>>, ConnInfoError> {
    let Some(given) = gathered.get(keyword) else {
        return Ok(None);
    };
    match parse_c_int(&given.value) {
        Some(number) => Ok(Some(Setting::new(number, given.source.clone()))),
        None => Err(ConnInfoError::InvalidInteger {
            keyword,
            value: given.value.clone(),
            origin: given.origin(keyword),
            unit,
        }),
    }
}

/// libpq's `useKeepalives`: strtol() with nothing allowed after the number. An empty string parses
/// as 0, which turns keepalives off, odd as that is.
fn parse_keepalives(text: &str) -> Option<bool> {
    if text.is_empty() {
        return Some(false);
    }
    let trimmed = text.trim_start_matches(is_c_space);
    let unsigned = trimmed.strip_prefix(['-', '+']).unwrap_or(trimmed);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(unsigned.bytes().any(|b| b != b'0'))
}

/// libpq's `is_unixsock_path`: an absolute path, or `@` for Linux's abstract socket namespace.
fn is_unix_socket_path(host: &str) -> bool {
    host.starts_with('/') || host.starts_with('@')
}

/// The default socket directory for `port`: the first candidate holding `.s.PGSQL.<port>`, else the
/// first that exists, else the first candidate. Every socket path looked at is recorded.
fn default_socket_dir(port: u16, env: &Environment, tried: &mut Vec<PathBuf>) -> PathBuf {
    let socket_name = format!(".s.PGSQL.{port}");
    for dir in &env.socket_dirs {
        let socket = dir.join(&socket_name);
        if !tried.contains(&socket) {
            tried.push(socket);
        }
    }
    env.socket_dirs
        .iter()
        .find(|dir| std::fs::symlink_metadata(dir.join(&socket_name)).is_ok())
        .or_else(|| env.socket_dirs.iter().find(|dir| dir.is_dir()))
        .or_else(|| env.socket_dirs.first())
        .cloned()
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// A host slot before passwords are looked up, with the raw text the password file is matched
/// against.
struct HostSlot {
    spec: HostSpec,
    hostaddr_text: String,
    port_text: String,
    host_defaulted: bool,
}

fn split_list(text: &str) -> Vec<&str> {
    text.split(',').collect()
}

/// Splits host, hostaddr and port into host slots (libpq's pqConnectOptions2): the number of
/// hostaddr entries, else of host entries, decides the count; one port applies to every host.
fn build_hosts(
    gathered: &Gathered,
    env: &Environment,
    tried: &mut Vec<PathBuf>,
) -> Result<Vec<HostSlot>, ConnInfoError> {
    let hostaddr_given = gathered.nonempty("hostaddr");
    let host_given = gathered.nonempty("host");
    let port_given = gathered.nonempty("port");

    let hostaddrs: Vec<&str> = hostaddr_given
        .map(|g| split_list(&g.value))
        .unwrap_or_default();
    let hosts: Vec<&str> = host_given.map(|g| split_list(&g.value)).unwrap_or_default();
    let count = if !hostaddrs.is_empty() {
        hostaddrs.len()
    } else if !hosts.is_empty() {
        hosts.len()
    } else {
        1
    };
    if !hostaddrs.is_empty() && !hosts.is_empty() && hosts.len() != count {
        return Err(ConnInfoError::HostCountMismatch {
            hosts: hosts.len(),
            hostaddrs: count,
        });
    }
    let ports: Vec<&str> = match port_given {
        None => vec![""; count],
        Some(given) => {
            let ports = split_list(&given.value);
            if ports.len() == 1 {
                vec![ports[0]; count]
            } else if ports.len() == count {
                ports
            } else {
                return Err(ConnInfoError::PortCountMismatch {
                    ports: ports.len(),
                    hosts: count,
                });
            }
        }
    };

    let mut slots = Vec::with_capacity(count);
    for index in 0..count {
        let port_text = ports.get(index).copied().unwrap_or_default();
        let (port, port_source) = match (port_text.is_empty(), port_given) {
            (false, Some(given)) => {
                let port = parse_c_int(port_text)
                    .and_then(|number| u16::try_from(number).ok())
                    .filter(|number| *number >= 1)
                    .ok_or_else(|| ConnInfoError::InvalidPort {
                        value: port_text.to_string(),
                        origin: given.origin("port"),
                    })?;
                (port, given.source.clone())
            }
            _ => (DEFAULT_PORT, Source::Default),
        };

        let hostaddr_text = hostaddrs.get(index).copied().unwrap_or_default();
        let hostaddr = match (hostaddr_text.is_empty(), hostaddr_given) {
            (false, Some(given)) => Some(hostaddr_text.parse::<IpAddr>().map_err(|error| {
                ConnInfoError::InvalidHostaddr {
                    value: hostaddr_text.to_string(),
                    origin: given.origin("hostaddr"),
                    reason: error.to_string(),
                }
            })?),
            _ => None,
        };

        let host_text = hosts.get(index).copied().unwrap_or_default();
        let (host, is_socket, host_source, host_defaulted) =
            match (host_text.is_empty(), host_given) {
                (false, Some(given)) => (
                    Some(host_text.to_string()),
                    hostaddr.is_none() && is_unix_socket_path(host_text),
                    given.source.clone(),
                    false,
                ),
                _ => match (hostaddr, hostaddr_given) {
                    (Some(_), Some(given)) => (None, false, given.source.clone(), false),
                    _ => {
                        let dir = default_socket_dir(port, env, tried);
                        (
                            Some(dir.to_string_lossy().into_owned()),
                            true,
                            Source::Default,
                            true,
                        )
                    }
                },
            };
        slots.push(HostSlot {
            spec: HostSpec {
                host,
                hostaddr,
                port,
                is_socket,
                password: None,
                host_source,
                port_source,
            },
            hostaddr_text: hostaddr_text.to_string(),
            port_text: port_text.to_string(),
            host_defaulted,
        });
    }
    Ok(slots)
}

/// The hostname a password-file line must match for this slot: the host (else the hostaddr),
/// with `localhost` standing for an empty host or the default socket directory (libpq compares
/// against its one compiled-in directory; any of pgplan's candidates counts here).
fn password_file_host(slot: &HostSlot, env: &Environment) -> String {
    if slot.host_defaulted {
        return "localhost".to_string();
    }
    let host = slot
        .spec
        .host
        .as_deref()
        .filter(|host| !host.is_empty())
        .unwrap_or(&slot.hostaddr_text);
    if host.is_empty()
        || (is_unix_socket_path(host) && env.socket_dirs.iter().any(|dir| dir.as_os_str() == host))
    {
        "localhost".to_string()
    } else {
        host.to_string()
    }
}

fn lookup_passwords(
    gathered: &Gathered,
    env: &Environment,
    slots: &mut [HostSlot],
    user: &str,
    dbname: &str,
    warnings: &mut Vec<String>,
) -> Option<Setting<PathBuf>> {
    if let Some(given) = gathered.nonempty("password") {
        for slot in slots.iter_mut() {
            slot.spec.password = Some(Setting::new(
                Secret::new(given.value.clone()),
                given.source.clone(),
            ));
        }
        return None;
    }
    let passfile = match gathered.nonempty("passfile") {
        Some(given) => Setting::new(PathBuf::from(&given.value), given.source.clone()),
        None => Setting::new(env.home.as_ref()?.join(".pgpass"), Source::Default),
    };
    match pgpass::load(&passfile.value) {
        PasswordFile::Missing => {}
        PasswordFile::Ignored { warning } => warnings.push(warning),
        loaded @ PasswordFile::Loaded { .. } => {
            for slot in slots.iter_mut() {
                let host = password_file_host(slot, env);
                let port = if slot.port_text.is_empty() {
                    DEFAULT_PORT.to_string()
                } else {
                    slot.port_text.clone()
                };
                let key = LookupKey {
                    host: &host,
                    port: &port,
                    database: dbname,
                    user,
                };
                let Some(found) = loaded.find(key) else {
                    continue;
                };
                if found.password.is_empty() {
                    // libpq stops at this line and then treats the empty password as none.
                    warnings.push(format!(
                        "password file \"{}\" line {} matches {host}:{port}:{dbname}:{user} but holds an \
                         empty password, which counts as no password",
                        passfile.value.display(),
                        found.line
                    ));
                } else {
                    slot.spec.password = Some(Setting::new(
                        Secret::new(found.password),
                        Source::PasswordFile(passfile.value.clone()),
                    ));
                }
            }
        }
    }
    Some(passfile)
}

fn unsupported(
    keyword: &'static str,
    given: &Given,
    reason: &'static str,
    hint: &'static str,
) -> ConnInfoError {
    ConnInfoError::Unsupported {
        keyword,
        value: given.value.clone(),
        origin: given.origin(keyword),
        reason,
        hint,
    }
}

/// Rejects keywords pgplan's driver cannot honour, so nothing the user asked for is silently
/// dropped. Keywords that only tune things (sslcompression, sslsni, GSSAPI details) are accepted.
fn reject_unsupported(gathered: &Gathered, sslmode: SslMode) -> Result<(), ConnInfoError> {
    if let Some(given) = gathered.nonempty("client_encoding") {
        let normalized: String = given
            .value
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        if !matches!(normalized.as_str(), "utf8" | "unicode" | "auto") {
            return Err(unsupported(
                "client_encoding",
                given,
                "pgplan always talks to the server in UTF8",
                "drop client_encoding (or set it to UTF8); the server converts for you",
            ));
        }
    }
    if let Some(given) = gathered.nonempty("replication") {
        let value = given.value.to_ascii_lowercase();
        if !matches!(value.as_str(), "0" | "off" | "false" | "no" | "f" | "n") {
            return Err(unsupported(
                "replication",
                given,
                "pgplan opens ordinary sessions, not replication connections",
                "drop the replication option",
            ));
        }
    }
    if let Some(given) = gathered.nonempty("require_auth") {
        return Err(unsupported(
            "require_auth",
            given,
            "pgplan's driver cannot restrict which authentication methods the server may ask for",
            "drop require_auth; use channel_binding=require to insist on SCRAM with channel binding",
        ));
    }
    if let Some(given) = gathered.nonempty("requirepeer") {
        return Err(unsupported(
            "requirepeer",
            given,
            "pgplan's driver cannot check the operating-system user of the server process",
            "drop requirepeer, or connect over TCP with sslmode=verify-full",
        ));
    }
    if sslmode != SslMode::Disable {
        for keyword in ["sslcrl", "sslcrldir"] {
            if let Some(given) = gathered.nonempty(keyword) {
                return Err(unsupported(
                    keyword,
                    given,
                    "pgplan does not check certificate revocation lists",
                    "drop the revocation list setting only if you accept connecting without it",
                ));
            }
        }
    }
    Ok(())
}

/// Whether a certificate or key file is there, as libpq's stat() checks it (following symlinks).
fn existing_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok()
}

struct TlsFiles {
    sslrootcert: Option<Setting<String>>,
    sslcert: Option<Setting<PathBuf>>,
    sslkey: Option<Setting<PathBuf>>,
}

/// Resolves the certificate and key files as libpq's `initialize_SSL` does, failing the same
/// way it would when the connection starts.
fn resolve_tls_files(
    gathered: &Gathered,
    env: &Environment,
    sslmode: &Setting<SslMode>,
    certmode: SslCertMode,
    warnings: &mut Vec<String>,
) -> Result<TlsFiles, ConnInfoError> {
    let home_file = |name: &str| {
        env.home
            .as_ref()
            .map(|home| home.join(".postgresql").join(name))
    };
    let verifies = matches!(sslmode.value, SslMode::VerifyCa | SslMode::VerifyFull);

    let sslrootcert = match gathered.nonempty("sslrootcert") {
        Some(given) if given.value == "system" => {
            Some(Setting::new("system".to_string(), given.source.clone()))
        }
        Some(given) => {
            if existing_file(Path::new(&given.value)) {
                Some(Setting::new(given.value.clone(), given.source.clone()))
            } else if verifies {
                return Err(ConnInfoError::RootCertificateMissing {
                    path: PathBuf::from(&given.value),
                    origin: given.origin("sslrootcert"),
                    sslmode: sslmode.value,
                });
            } else {
                warnings.push(format!(
                    "root certificate file \"{}\" ({}) does not exist, so the server certificate is not \
                     verified (as libpq does with sslmode={})",
                    given.value,
                    given.origin("sslrootcert"),
                    sslmode.value
                ));
                None
            }
        }
        None => match home_file("root.crt") {
            Some(path) if existing_file(&path) => Some(Setting::new(
                path.to_string_lossy().into_owned(),
                Source::Default,
            )),
            Some(path) if verifies => {
                return Err(ConnInfoError::RootCertificateMissing {
                    path,
                    origin: "the default".to_string(),
                    sslmode: sslmode.value,
                });
            }
            None if verifies => {
                return Err(ConnInfoError::NoHomeForRootCertificate {
                    sslmode: sslmode.value,
                });
            }
            _ => None,
        },
    };

    if certmode == SslCertMode::Disable {
        return Ok(TlsFiles {
            sslrootcert,
            sslcert: None,
            sslkey: None,
        });
    }
    let sslcert = match gathered.nonempty("sslcert") {
        Some(given) => {
            let path = PathBuf::from(&given.value);
            if existing_file(&path) {
                Some(Setting::new(path, given.source.clone()))
            } else {
                warnings.push(format!(
                    "client certificate file \"{}\" ({}) does not exist, so no client certificate is sent \
                     (as libpq does)",
                    given.value,
                    given.origin("sslcert")
                ));
                None
            }
        }
        None => home_file("postgresql.crt")
            .filter(|path| existing_file(path))
            .map(|path| Setting::new(path, Source::Default)),
    };
    // The key matters only when there is a certificate to go with it.
    if sslcert.is_none() {
        return Ok(TlsFiles {
            sslrootcert,
            sslcert,
            sslkey: None,
        });
    }
    let key = match gathered.nonempty("sslkey") {
        Some(given) => Setting::new(PathBuf::from(&given.value), given.source.clone()),
        None => match home_file("postgresql.key") {
            Some(path) => Setting::new(path, Source::Default),
            None => {
                return Err(ConnInfoError::PrivateKeyMissing {
                    // No sslkey and no home directory to find the default key in.
                    path: PathBuf::from("~/.postgresql/postgresql.key"),
                });
            }
        },
    };
    let metadata = std::fs::metadata(&key.value).map_err(|_| ConnInfoError::PrivateKeyMissing {
        path: key.value.clone(),
    })?;
    if !metadata.is_file() {
        return Err(ConnInfoError::PrivateKeyNotRegular { path: key.value });
    }
    // Root-owned keys may be group-readable (0640), so system-wide keys work for members of the
    // owning group; anyone else's key must be 0600 or less.
    let mode = metadata.permissions().mode() & 0o777;
    let forbidden = if metadata.uid() == 0 { 0o037 } else { 0o077 };
    if mode & forbidden != 0 {
        return Err(ConnInfoError::PrivateKeyPermissions {
            path: key.value,
            mode,
        });
    }
    Ok(TlsFiles {
        sslrootcert,
        sslcert,
        sslkey: Some(key),
    })
}

fn tls_version(
    gathered: &Gathered,
    keyword: &'static str,
    default: Option<TlsVersion>,
) -> Result<Option<Setting<TlsVersion>>, ConnInfoError> {
    let Some(given) = gathered.get(keyword) else {
        return Ok(default.map(|version| Setting::new(version, Source::Default)));
    };
    // An empty value means "no bound" in libpq.
    if given.value.is_empty() {
        return Ok(None);
    }
    TlsVersion::CHOICES
        .iter()
        .find(|(text, _)| text.eq_ignore_ascii_case(&given.value))
        .map(|(_, version)| Some(Setting::new(*version, given.source.clone())))
        .ok_or_else(|| {
            invalid_value(
                keyword,
                given,
                TlsVersion::CHOICES.iter().map(|(text, _)| *text),
            )
        })
}

fn duration_setting(
    gathered: &Gathered,
    keyword: &'static str,
    unit: &'static str,
    to_duration: fn(u64) -> Duration,
) -> Result<Option<Setting<Duration>>, ConnInfoError> {
    // libpq clamps negative values to zero.
    Ok(int_setting(gathered, keyword, unit)?.map(|setting| {
        let amount = u64::try_from(setting.value.max(0)).unwrap_or_default();
        Setting::new(to_duration(amount), setting.source)
    }))
}

fn interpret(
    gathered: &Gathered,
    service: Option<Setting<String>>,
    env: &Environment,
    mut warnings: Vec<String>,
) -> Result<ConnParams, ConnInfoError> {
    let user = match gathered.nonempty("user") {
        Some(given) => Setting::new(given.value.clone(), given.source.clone()),
        None if !env.os_user.is_empty() => Setting::new(env.os_user.clone(), Source::Default),
        None => return Err(ConnInfoError::NoUserName),
    };
    // The database defaults to the user name.
    let dbname = match gathered.nonempty("dbname") {
        Some(given) => Setting::new(given.value.clone(), given.source.clone()),
        None => Setting::new(user.value.clone(), Source::Default),
    };

    let mut socket_paths_tried = Vec::new();
    let mut slots = build_hosts(gathered, env, &mut socket_paths_tried)?;
    let passfile = lookup_passwords(
        gathered,
        env,
        &mut slots,
        &user.value,
        &dbname.value,
        &mut warnings,
    );

    let channel_binding = choice(
        gathered,
        "channel_binding",
        ChannelBinding::CHOICES,
        ChannelBinding::Prefer,
    )?;

    // sslrootcert=system makes verify-full the default sslmode and forbids anything weaker.
    let system_roots = gathered
        .get("sslrootcert")
        .is_some_and(|given| given.value == "system");
    let sslmode_default = if system_roots {
        SslMode::VerifyFull
    } else {
        SslMode::Prefer
    };
    let sslmode = choice(gathered, "sslmode", SslMode::CHOICES, sslmode_default)?;
    if system_roots && sslmode.value != SslMode::VerifyFull {
        return Err(ConnInfoError::WeakSslModeForSystemRoots {
            sslmode: sslmode.value,
            origin: sslmode.source.describe("sslmode"),
        });
    }
    let sslnegotiation = choice(
        gathered,
        "sslnegotiation",
        SslNegotiation::CHOICES,
        SslNegotiation::Postgres,
    )?;
    if sslnegotiation.value == SslNegotiation::Direct
        && !matches!(
            sslmode.value,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        )
    {
        return Err(ConnInfoError::WeakSslModeForDirect {
            sslmode: sslmode.value,
            origin: sslmode.source.describe("sslmode"),
        });
    }

    let ssl_min_protocol_version = tls_version(
        gathered,
        "ssl_min_protocol_version",
        Some(TlsVersion::Tls1_2),
    )?;
    let ssl_max_protocol_version = tls_version(gathered, "ssl_max_protocol_version", None)?;
    if let (Some(min), Some(max)) = (&ssl_min_protocol_version, &ssl_max_protocol_version)
        && min.value > max.value
    {
        return Err(ConnInfoError::InvalidSslProtocolRange {
            min: min.value,
            max: max.value,
        });
    }
    if let Some(max) = &ssl_max_protocol_version
        && max.value < TlsVersion::Tls1_2
        && sslmode.value != SslMode::Disable
        && let Some(given) = gathered.get("ssl_max_protocol_version")
    {
        return Err(unsupported(
            "ssl_max_protocol_version",
            given,
            "pgplan's TLS library speaks only TLSv1.2 and TLSv1.3",
            "allow TLSv1.2 or later, or use sslmode=disable",
        ));
    }
    if let Some(min) = &ssl_min_protocol_version
        && min.value < TlsVersion::Tls1_2
        && sslmode.value != SslMode::Disable
    {
        warnings.push(format!(
            "ssl_min_protocol_version={} ({}) is below what pgplan's TLS library speaks; TLSv1.2 \
                 is the effective minimum",
            min.value,
            min.source.describe("ssl_min_protocol_version")
        ));
    }

    let certmode = choice(
        gathered,
        "sslcertmode",
        SslCertMode::CHOICES,
        SslCertMode::Allow,
    )?;
    if certmode.value == SslCertMode::Require
        && let Some(given) = gathered.get("sslcertmode")
    {
        return Err(unsupported(
            "sslcertmode",
            given,
            "pgplan's driver cannot tell whether the server asked for a client certificate",
            "use sslcertmode=allow (the default)",
        ));
    }
    let gssencmode = choice(
        gathered,
        "gssencmode",
        GssEncMode::CHOICES,
        GssEncMode::Disable,
    )?;
    if gssencmode.value == GssEncMode::Require
        && let Some(given) = gathered.get("gssencmode")
    {
        return Err(unsupported(
            "gssencmode",
            given,
            "pgplan has no GSSAPI support, so it cannot encrypt with GSSAPI",
            "use sslmode=require (or stronger) for an encrypted connection, or gssencmode=prefer",
        ));
    }
    let target_session_attrs = choice(
        gathered,
        "target_session_attrs",
        TargetSessionAttrs::CHOICES,
        TargetSessionAttrs::Any,
    )?;
    let load_balance_hosts = choice(
        gathered,
        "load_balance_hosts",
        LoadBalanceHosts::CHOICES,
        LoadBalanceHosts::Disable,
    )?;
    reject_unsupported(gathered, sslmode.value)?;

    // libpq insists on at least two seconds, because its timer has one-second resolution; zero or
    // negative means wait forever.
    let connect_timeout = int_setting(gathered, "connect_timeout", " of seconds")?
        .filter(|setting| setting.value > 0)
        .map(|setting| {
            let seconds = u64::try_from(setting.value.max(2)).unwrap_or(2);
            Setting::new(Duration::from_secs(seconds), setting.source)
        });

    let keepalives = Keepalives {
        enabled: match gathered.get("keepalives") {
            None => Setting::new(true, Source::Default),
            Some(given) => match parse_keepalives(&given.value) {
                Some(enabled) => Setting::new(enabled, given.source.clone()),
                None => {
                    return Err(ConnInfoError::InvalidInteger {
                        keyword: "keepalives",
                        value: given.value.clone(),
                        origin: given.origin("keepalives"),
                        unit: " (0 turns keepalives off)",
                    });
                }
            },
        },
        idle: duration_setting(
            gathered,
            "keepalives_idle",
            " of seconds",
            Duration::from_secs,
        )?,
        interval: duration_setting(
            gathered,
            "keepalives_interval",
            " of seconds",
            Duration::from_secs,
        )?,
        count: int_setting(gathered, "keepalives_count", "")?.map(|setting| {
            Setting::new(
                u32::try_from(setting.value.max(0)).unwrap_or_default(),
                setting.source,
            )
        }),
        tcp_user_timeout: duration_setting(
            gathered,
            "tcp_user_timeout",
            " of milliseconds",
            Duration::from_millis,
        )?,
    };

    // libpq ignores sslmode and the certificate files for Unix-socket hosts: only a list with a
    // TCP host needs them found and checked.
    let tcp_host = slots.iter().any(|slot| !slot.spec.is_socket);
    let tls = if sslmode.value == SslMode::Disable || !tcp_host {
        TlsFiles {
            sslrootcert: None,
            sslcert: None,
            sslkey: None,
        }
    } else {
        resolve_tls_files(gathered, env, &sslmode, certmode.value, &mut warnings)?
    };

    let application_name = match gathered.nonempty("application_name") {
        Some(given) => Setting::new(given.value.clone(), given.source.clone()),
        None => Setting::new(FALLBACK_APPLICATION_NAME.to_string(), Source::Default),
    };
    let options = gathered
        .nonempty("options")
        .map(|given| Setting::new(given.value.clone(), given.source.clone()));
    let sslpassword = gathered
        .nonempty("sslpassword")
        .map(|given| Setting::new(Secret::new(given.value.clone()), given.source.clone()));
    let startup_settings = STARTUP_SETTING_VARS
        .iter()
        .filter_map(|(var, parameter)| {
            let value = env.var(var)?;
            (!value.eq_ignore_ascii_case("default")).then(|| {
                (
                    *parameter,
                    Setting::new(value.to_string(), Source::Environment(var)),
                )
            })
        })
        .collect();

    Ok(ConnParams {
        hosts: slots.into_iter().map(|slot| slot.spec).collect(),
        socket_paths_tried,
        user,
        dbname,
        service,
        passfile,
        application_name,
        options,
        connect_timeout,
        sslmode,
        sslnegotiation,
        sslrootcert: tls.sslrootcert,
        sslcert: tls.sslcert,
        sslkey: tls.sslkey,
        sslpassword,
        ssl_min_protocol_version,
        ssl_max_protocol_version,
        target_session_attrs,
        channel_binding,
        load_balance_hosts,
        keepalives,
        startup_settings,
        warnings,
    })
}

// ---------------------------------------------------------------------------------------------
// Display and redaction
// ---------------------------------------------------------------------------------------------

/// Quotes a value for a `key=value` connection string when it needs it.
fn quote_value(value: &str) -> String {
    if !value.is_empty()
        && !value
            .chars()
            .any(|c| is_c_space(c) || c == '\'' || c == '\\')
    {
        return value.to_string();
    }
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('\'');
    for c in value.chars() {
        if c == '\'' || c == '\\' {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('\'');
    quoted
}

fn seconds_text(duration: Duration) -> String {
    duration.as_secs().to_string()
}

impl ConnParams {
    /// The hosts' `host` values joined as libpq's `host=` list (empty entries for hostaddr-only
    /// hosts).
    fn host_list(&self) -> String {
        self.hosts
            .iter()
            .map(|host| host.host.clone().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    }

    fn hostaddr_list(&self) -> Option<String> {
        self.hosts
            .iter()
            .any(|host| host.hostaddr.is_some())
            .then(|| {
                self.hosts
                    .iter()
                    .map(|host| {
                        host.hostaddr
                            .map(|addr| addr.to_string())
                            .unwrap_or_default()
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
    }

    fn port_list(&self) -> String {
        self.hosts
            .iter()
            .map(|host| host.port.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every effective (keyword, value) pair; secrets appear as `********`.
    fn effective_pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![("host", self.host_list())];
        if let Some(hostaddrs) = self.hostaddr_list() {
            pairs.push(("hostaddr", hostaddrs));
        }
        pairs.push(("port", self.port_list()));
        pairs.push(("user", self.user.value.clone()));
        pairs.push(("dbname", self.dbname.value.clone()));
        if self.hosts.iter().any(|host| host.password.is_some()) {
            pairs.push(("password", REDACTED.to_string()));
        }
        pairs.push(("application_name", self.application_name.value.clone()));
        if let Some(options) = &self.options {
            pairs.push(("options", options.value.clone()));
        }
        if let Some(timeout) = &self.connect_timeout {
            pairs.push(("connect_timeout", seconds_text(timeout.value)));
        }
        pairs.push(("sslmode", self.sslmode.value.to_string()));
        if self.sslnegotiation.value != SslNegotiation::Postgres {
            pairs.push(("sslnegotiation", self.sslnegotiation.value.to_string()));
        }
        if let Some(root) = &self.sslrootcert {
            pairs.push(("sslrootcert", root.value.clone()));
        }
        if let Some(cert) = &self.sslcert {
            pairs.push(("sslcert", cert.value.to_string_lossy().into_owned()));
        }
        if let Some(key) = &self.sslkey {
            pairs.push(("sslkey", key.value.to_string_lossy().into_owned()));
        }
        if self.sslpassword.is_some() {
            pairs.push(("sslpassword", REDACTED.to_string()));
        }
        if let Some(min) = &self.ssl_min_protocol_version {
            pairs.push(("ssl_min_protocol_version", min.value.to_string()));
        }
        if let Some(max) = &self.ssl_max_protocol_version {
            pairs.push(("ssl_max_protocol_version", max.value.to_string()));
        }
        pairs.push((
            "target_session_attrs",
            self.target_session_attrs.value.to_string(),
        ));
        pairs.push(("channel_binding", self.channel_binding.value.to_string()));
        pairs.push((
            "load_balance_hosts",
            self.load_balance_hosts.value.to_string(),
        ));
        if !self.keepalives.enabled.value {
            pairs.push(("keepalives", "0".to_string()));
        }
        if let Some(idle) = &self.keepalives.idle {
            pairs.push(("keepalives_idle", seconds_text(idle.value)));
        }
        if let Some(interval) = &self.keepalives.interval {
            pairs.push(("keepalives_interval", seconds_text(interval.value)));
        }
        if let Some(count) = &self.keepalives.count {
            pairs.push(("keepalives_count", count.value.to_string()));
        }
        if let Some(timeout) = &self.keepalives.tcp_user_timeout {
            pairs.push(("tcp_user_timeout", timeout.value.as_millis().to_string()));
        }
        pairs
    }

    /// A connection string for display: every effective value, each password replaced by
    /// `********` — never the password itself.
    pub fn redacted(&self) -> String {
        self.effective_pairs()
            .into_iter()
            .map(|(keyword, value)| format!("{keyword}={}", quote_value(&value)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Per parameter: name, displayed value (passwords always `********`), and where it came from,
    /// for `pgplan info -v`.
    pub fn explain_sources(&self) -> Vec<(String, String, String)> {
        let mut rows = Vec::new();
        let mut row = |name: String, value: String, source: &Source| {
            rows.push((name, value, source.to_string()));
        };
        let numbered = self.hosts.len() > 1;
        for (index, host) in self.hosts.iter().enumerate() {
            let name = |base: &str| {
                if numbered {
                    format!("{base}[{}]", index + 1)
                } else {
                    base.to_string()
                }
            };
            if let Some(text) = &host.host {
                let kind = if host.is_socket {
                    " (Unix socket directory)"
                } else {
                    ""
                };
                row(name("host"), format!("{text}{kind}"), &host.host_source);
            }
            if let Some(addr) = host.hostaddr {
                row(name("hostaddr"), addr.to_string(), &host.host_source);
            }
            row(name("port"), host.port.to_string(), &host.port_source);
            if let Some(password) = &host.password {
                row(name("password"), REDACTED.to_string(), &password.source);
            }
        }
        row("user".into(), self.user.value.clone(), &self.user.source);
        let dbname_value = if self.dbname.source == Source::Default {
            format!("{} (same as user)", self.dbname.value)
        } else {
            self.dbname.value.clone()
        };
        row("dbname".into(), dbname_value, &self.dbname.source);
        if let Some(service) = &self.service {
            row("service".into(), service.value.clone(), &service.source);
        }
        if let Some(passfile) = &self.passfile {
            row(
                "passfile".into(),
                passfile.value.display().to_string(),
                &passfile.source,
            );
        }
        row(
            "application_name".into(),
            self.application_name.value.clone(),
            &self.application_name.source,
        );
        if let Some(options) = &self.options {
            row("options".into(), options.value.clone(), &options.source);
        }
        match &self.connect_timeout {
            Some(timeout) => row(
                "connect_timeout".into(),
                format!("{} s", timeout.value.as_secs()),
                &timeout.source,
            ),
            None => row(
                "connect_timeout".into(),
                "none (wait forever)".into(),
                &Source::Default,
            ),
        }
        row(
            "sslmode".into(),
            self.sslmode.value.to_string(),
            &self.sslmode.source,
        );
        row(
            "sslnegotiation".into(),
            self.sslnegotiation.value.to_string(),
            &self.sslnegotiation.source,
        );
        if let Some(root) = &self.sslrootcert {
            row("sslrootcert".into(), root.value.clone(), &root.source);
        }
        if let Some(cert) = &self.sslcert {
            row(
                "sslcert".into(),
                cert.value.display().to_string(),
                &cert.source,
            );
        }
        if let Some(key) = &self.sslkey {
            row(
                "sslkey".into(),
                key.value.display().to_string(),
                &key.source,
            );
        }
        if let Some(password) = &self.sslpassword {
            row("sslpassword".into(), REDACTED.to_string(), &password.source);
        }
        if let Some(min) = &self.ssl_min_protocol_version {
            row(
                "ssl_min_protocol_version".into(),
                min.value.to_string(),
                &min.source,
            );
        }
        if let Some(max) = &self.ssl_max_protocol_version {
            row(
                "ssl_max_protocol_version".into(),
                max.value.to_string(),
                &max.source,
            );
        }
        row(
            "target_session_attrs".into(),
            self.target_session_attrs.value.to_string(),
            &self.target_session_attrs.source,
        );
        row(
            "channel_binding".into(),
            self.channel_binding.value.to_string(),
            &self.channel_binding.source,
        );
        row(
            "load_balance_hosts".into(),
            self.load_balance_hosts.value.to_string(),
            &self.load_balance_hosts.source,
        );
        row(
            "keepalives".into(),
            if self.keepalives.enabled.value {
                "1"
            } else {
                "0"
            }
            .into(),
            &self.keepalives.enabled.source,
        );
        if let Some(idle) = &self.keepalives.idle {
            row(
                "keepalives_idle".into(),
                format!("{} s", idle.value.as_secs()),
                &idle.source,
            );
        }
        if let Some(interval) = &self.keepalives.interval {
            row(
                "keepalives_interval".into(),
                format!("{} s", interval.value.as_secs()),
                &interval.source,
            );
        }
        if let Some(count) = &self.keepalives.count {
            row(
                "keepalives_count".into(),
                count.value.to_string(),
                &count.source,
            );
        }
        if let Some(timeout) = &self.keepalives.tcp_user_timeout {
            row(
                "tcp_user_timeout".into(),
                format!("{} ms", timeout.value.as_millis()),
                &timeout.source,
            );
        }
        for (parameter, setting) in &self.startup_settings {
            row(
                format!("startup {parameter}"),
                setting.value.clone(),
                &setting.source,
            );
        }
        rows
    }
}

/// Replaces each byte range in `spans` (merged where they overlap) with `********`.
fn replace_spans(text: &str, mut spans: Vec<(usize, usize)>) -> String {
    spans.retain(|(start, end)| start < end && *end <= text.len());
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    for (start, end) in spans {
        if end <= cursor {
            continue;
        }
        let start = start.max(cursor);
        out.push_str(text.get(cursor..start).unwrap_or_default());
        out.push_str(REDACTED);
        cursor = end;
    }
    out.push_str(text.get(cursor..).unwrap_or_default());
    out
}

/// Redacts the password in any connection string or URL the user typed, well-formed or not, for
/// echoing `-d` values back in reports and errors. A plain database name comes back unchanged.
pub fn redact(conninfo: &str) -> String {
    if url_like_scheme(conninfo).is_some()
        || (uri_prefix_len(conninfo) > 0 && parse_uri(conninfo).is_err())
    {
        redact_user_info(conninfo)
    } else if uri_prefix_len(conninfo) > 0 {
        redact_uri(conninfo)
    } else if conninfo.contains('=') {
        redact_keyword_value(conninfo)
    } else {
        conninfo.to_string()
    }
}

/// A URL that does not parse (or has a scheme libpq does not know): nothing of its user info
/// is shown, from after `scheme://` up to the last `@` (a user name, a password, or a password
/// with a raw `@` in it), and password-like query parameters are hidden as in [`redact_uri`].
fn redact_user_info(text: &str) -> String {
    let Some(scheme_end) = text.find("://").map(|i| i + 3) else {
        return redact_uri(text);
    };
    let masked = match text[scheme_end..].rfind('@') {
        Some(offset) => format!(
            "{}{REDACTED}{}",
            &text[..scheme_end],
            &text[scheme_end + offset..]
        ),
        None => text.to_owned(),
    };
    if uri_prefix_len(&masked) > 0 {
        redact_uri(&masked)
    } else {
        masked
    }
}

fn redact_uri(uri: &str) -> String {
    let bytes = uri.as_bytes();
    let start = uri_prefix_len(uri);
    let mut spans = Vec::new();
    // The password of user:password@, found the way libpq finds it (the first "@" before any
    // "/")...
    let libpq_at = bytes[start..]
        .iter()
        .position(|b| *b == b'@' || *b == b'/')
        .map(|offset| start + offset)
        .filter(|index| bytes[*index] == b'@');
    if let Some(at) = libpq_at
        && let Some(colon) = uri[start..at].find(':')
    {
        spans.push((start + colon + 1, at));
    }
    // ...and, since a user may have typed a raw "@" or "/" inside the password (which libpq then
    // splits elsewhere), also up to the last "@" before the query string. This can hide a little
    // more than the password when a database name contains "@", never less.
    let query_from = libpq_at.unwrap_or(start);
    let query_start = uri[query_from..]
        .find('?')
        .map_or(uri.len(), |offset| query_from + offset);
    if let Some(last_at) = uri[start..query_start]
        .rfind('@')
        .map(|offset| start + offset)
        && let Some(colon) = uri[start..last_at].find(':')
    {
        spans.push((start + colon + 1, last_at));
    }
    // Any query parameter whose name looks like a password, wherever the query starts.
    if let Some(question) = uri[start..].find('?') {
        let mut offset = start + question + 1;
        for piece in uri[offset..].split('&') {
            let decoded = |raw: &str| percent_decode(raw).unwrap_or_else(|_| raw.to_string());
            let name_end = piece.find('=');
            if is_secret_name(&decoded(&piece[..name_end.unwrap_or(piece.len())])) {
                // With no "=", the password may be glued to its name: hide the whole piece.
                let hidden_from = name_end.map_or(0, |equals| equals + 1);
                spans.push((offset + hidden_from, offset + piece.len()));
            }
            offset += piece.len() + 1;
        }
    }
    replace_spans(uri, spans)
}

fn redact_keyword_value(text: &str) -> String {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let len = chars.len();
    let byte_at = |index: usize| chars.get(index).map_or(text.len(), |(offset, _)| *offset);
    let is_space = |index: usize| chars.get(index).is_some_and(|(_, c)| is_c_space(*c));
    let char_at = |index: usize| chars.get(index).map(|(_, c)| *c);
    let mut spans = Vec::new();
    let mut after_secret = false;
    let mut i = 0;
    while i < len {
        if is_space(i) {
            i += 1;
            continue;
        }
        let word_start = i;
        while i < len && char_at(i) != Some('=') && !is_space(i) {
            i += 1;
        }
        let word_end = i;
        let mut j = i;
        while is_space(j) {
            j += 1;
        }
        if char_at(j) != Some('=') {
            // A stray word after a password value is probably the rest of a password that
            // contains a space.
            if after_secret {
                spans.push((byte_at(word_start), byte_at(word_end)));
            }
            i = j.max(word_end + 1);
            continue;
        }
        i = j + 1;
        while is_space(i) {
            i += 1;
        }
        let value_start = i;
        if char_at(i) == Some('\'') {
            i += 1;
            while i < len {
                match char_at(i) {
                    Some('\\') => i += 2,
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    _ => i += 1,
                }
            }
        } else {
            while i < len && !is_space(i) {
                i += if char_at(i) == Some('\\') { 2 } else { 1 };
            }
        }
        let value_end = i.min(len);
        let word = text
            .get(byte_at(word_start)..byte_at(word_end))
            .unwrap_or_default();
        after_secret = is_secret_name(word);
        if after_secret && value_start < value_end {
            spans.push((byte_at(value_start), byte_at(value_end)));
        }
    }
    replace_spans(text, spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A hermetic environment rooted in a temp dir: home, socket candidates and sysconfdir all
    /// live inside it.
    struct Fixture {
        dir: tempfile::TempDir,
        vars: HashMap<String, String>,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().expect("tempdir");
            for sub in ["home", "etc"] {
                fs::create_dir(dir.path().join(sub)).expect("mkdir");
            }
            Self {
                dir,
                vars: HashMap::new(),
            }
        }

        fn path(&self, relative: &str) -> PathBuf {
            self.dir.path().join(relative)
        }

        fn home(&self) -> PathBuf {
            self.path("home")
        }

        fn var(mut self, name: &str, value: &str) -> Self {
            self.vars.insert(name.to_string(), value.to_string());
            self
        }

        fn env(&self) -> Environment {
            Environment {
                vars: self.vars.clone(),
                home: Some(self.home()),
                os_user: "alice".to_string(),
                socket_dirs: vec![
                    self.path("sock-a"),
                    self.path("sock-b"),
                    self.path("sock-c"),
                ],
                sysconfdir: self.path("etc"),
            }
        }

        fn write(&self, relative: &str, text: &str, mode: u32) -> PathBuf {
            let path = self.path(relative);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).expect("mkdir -p");
            }
            fs::write(&path, text).expect("write");
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
            path
        }

        fn resolve(&self, request: &ConnRequest) -> Result<ConnParams, ConnInfoError> {
            resolve(request, &self.env())
        }

        fn resolve_d(&self, dbname: &str) -> Result<ConnParams, ConnInfoError> {
            self.resolve(&ConnRequest {
                dbname: Some(dbname.to_string()),
                ..ConnRequest::default()
            })
        }
    }

    fn ok(result: Result<ConnParams, ConnInfoError>) -> ConnParams {
        match result {
            Ok(params) => params,
            Err(error) => panic!("expected success, got: {error}"),
        }
    }

    fn err(result: Result<ConnParams, ConnInfoError>) -> ConnInfoError {
        match result {
            Ok(params) => panic!("expected an error, got {}", params.redacted()),
            Err(error) => error,
        }
    }

    fn flags(
        host: Option<&str>,
        port: Option<&str>,
        user: Option<&str>,
        dbname: Option<&str>,
    ) -> ConnRequest {
        ConnRequest {
            dbname: dbname.map(str::to_string),
            host: host.map(str::to_string),
            port: port.map(str::to_string),
            user: user.map(str::to_string),
        }
    }

    fn pairs(text: &str) -> Vec<(&'static str, String)> {
        match parse_connection_string(text) {
            Ok(pairs) => pairs,
            Err(error) => panic!("{text:?} should parse: {error}"),
        }
    }

    fn p(keyword: &'static str, value: &str) -> (&'static str, String) {
        (keyword, value.to_string())
    }

    // --- defaults ---------------------------------------------------------------------------

    #[test]
    fn defaults_when_nothing_is_given() {
        let fx = Fixture::new();
        let params = ok(fx.resolve(&ConnRequest::default()));
        assert_eq!(params.hosts.len(), 1);
        let host = &params.hosts[0];
        // No candidate exists: the first candidate is used, and all were tried.
        assert_eq!(
            host.host.as_deref(),
            Some(fx.path("sock-a").to_str().expect("utf8"))
        );
        assert!(host.is_socket);
        assert_eq!((host.port, &host.port_source), (5432, &Source::Default));
        assert_eq!(params.socket_paths_tried.len(), 3);
        assert!(params.socket_paths_tried[1].ends_with("sock-b/.s.PGSQL.5432"));
        assert_eq!(
            params.user,
            Setting::new("alice".to_string(), Source::Default)
        );
        assert_eq!(
            params.dbname,
            Setting::new("alice".to_string(), Source::Default)
        );
        assert_eq!(params.application_name.value, "pgplan");
        assert_eq!(
            params.sslmode,
            Setting::new(SslMode::Prefer, Source::Default)
        );
        assert_eq!(params.target_session_attrs.value, TargetSessionAttrs::Any);
        assert_eq!(params.channel_binding.value, ChannelBinding::Prefer);
        assert_eq!(params.load_balance_hosts.value, LoadBalanceHosts::Disable);
        assert_eq!(
            params.ssl_min_protocol_version.as_ref().map(|s| s.value),
            Some(TlsVersion::Tls1_2)
        );
        assert!(params.keepalives.enabled.value);
        assert_eq!(params.connect_timeout, None);
        assert_eq!(params.sslrootcert, None);
        assert_eq!(params.sslcert, None);
        assert!(params.hosts[0].password.is_none());
        assert!(params.warnings.is_empty(), "{:?}", params.warnings);
    }

    #[test]
    fn default_socket_dir_prefers_one_holding_the_socket_then_one_that_exists() {
        let fx = Fixture::new();
        fs::create_dir(fx.path("sock-b")).expect("mkdir");
        let params = ok(fx.resolve(&ConnRequest::default()));
        assert_eq!(params.hosts[0].host.as_deref(), fx.path("sock-b").to_str());

        fs::create_dir(fx.path("sock-c")).expect("mkdir");
        fx.write("sock-c/.s.PGSQL.5433", "", 0o600);
        let params = ok(fx.resolve(&flags(None, Some("5433"), None, None)));
        assert_eq!(params.hosts[0].host.as_deref(), fx.path("sock-c").to_str());
        assert!(
            params
                .socket_paths_tried
                .iter()
                .all(|p| p.ends_with(".s.PGSQL.5433"))
        );
    }

    #[test]
    fn user_defaults_error_when_the_os_user_is_unknown() {
        let fx = Fixture::new();
        let mut env = fx.env();
        env.os_user.clear();
        let error = resolve(&ConnRequest::default(), &env).expect_err("no user");
        assert!(error.to_string().contains("-U/--username"), "{error}");
        let params = resolve(&flags(None, None, Some("bob"), None), &env).expect("explicit user");
        assert_eq!(params.dbname.value, "bob");
    }

    // --- precedence ---------------------------------------------------------------------------

    #[test]
    fn flags_are_used_and_marked_as_flags() {
        let fx = Fixture::new();
        let params = ok(fx.resolve(&flags(
            Some("db.example"),
            Some("6543"),
            Some("bob"),
            Some("app"),
        )));
        let host = &params.hosts[0];
        assert_eq!(host.host.as_deref(), Some("db.example"));
        assert!(!host.is_socket);
        assert_eq!(
            (host.port, &host.host_source, &host.port_source),
            (6543, &Source::Flag, &Source::Flag)
        );
        assert_eq!(params.user, Setting::new("bob".to_string(), Source::Flag));
        assert_eq!(params.dbname, Setting::new("app".to_string(), Source::Flag));
        assert!(params.socket_paths_tried.is_empty());
    }

    #[test]
    fn values_inside_d_override_flags_as_in_psql() {
        let fx = Fixture::new();
        let request = flags(
            Some("flaghost"),
            Some("1111"),
            Some("flaguser"),
            Some("host=cihost dbname=db"),
        );
        let params = ok(fx.resolve(&request));
        assert_eq!(params.hosts[0].host.as_deref(), Some("cihost"));
        assert_eq!(params.hosts[0].host_source, Source::ConnString);
        // Not mentioned in -d: the flags stand.
        assert_eq!(
            (params.hosts[0].port, &params.hosts[0].port_source),
            (1111, &Source::Flag)
        );
        assert_eq!(params.user.source, Source::Flag);
        assert_eq!(
            params.dbname,
            Setting::new("db".to_string(), Source::ConnString)
        );
    }

    #[test]
    fn empty_value_in_d_blocks_flags_and_environment() {
        let fx = Fixture::new().var("PGHOST", "envhost");
        let params = ok(fx.resolve(&flags(
            Some("flaghost"),
            None,
            None,
            Some("host='' dbname=x"),
        )));
        // host= is a value: it overrides -h and keeps PGHOST out, and empty means the default.
        assert!(params.hosts[0].is_socket);
        assert_eq!(params.hosts[0].host_source, Source::Default);
    }

    #[test]
    fn empty_flags_and_empty_d_are_ignored() {
        let fx = Fixture::new()
            .var("PGHOST", "envhost")
            .var("PGDATABASE", "envdb");
        let params = ok(fx.resolve(&flags(Some(""), Some(""), Some(""), Some(""))));
        assert_eq!(params.hosts[0].host.as_deref(), Some("envhost"));
        assert_eq!(
            params.dbname,
            Setting::new("envdb".to_string(), Source::Environment("PGDATABASE"))
        );
    }

    #[test]
    fn plain_d_value_is_a_database_name() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d("my db; with:odd chars"));
        assert_eq!(
            params.dbname,
            Setting::new("my db; with:odd chars".to_string(), Source::Flag)
        );
    }

    #[test]
    fn environment_fills_what_nothing_else_set() {
        let fx = Fixture::new()
            .var("PGHOST", "envhost")
            .var("PGPORT", "5555")
            .var("PGUSER", "envuser")
            .var("PGDATABASE", "envdb")
            .var("PGAPPNAME", "envapp")
            .var("PGOPTIONS", "-c work_mem=64MB")
            .var("PGCONNECT_TIMEOUT", "7")
            .var("PGSSLMODE", "require")
            .var("PGTARGETSESSIONATTRS", "read-write")
            .var("PGCHANNELBINDING", "require");
        let params = ok(fx.resolve(&flags(None, None, Some("flaguser"), None)));
        assert_eq!(params.hosts[0].host.as_deref(), Some("envhost"));
        assert_eq!(params.hosts[0].host_source, Source::Environment("PGHOST"));
        assert_eq!(params.hosts[0].port, 5555);
        assert_eq!(params.user.source, Source::Flag);
        assert_eq!(params.dbname.value, "envdb");
        assert_eq!(
            params.application_name,
            Setting::new("envapp".to_string(), Source::Environment("PGAPPNAME"))
        );
        assert_eq!(
            params.options.as_ref().map(|o| o.value.as_str()),
            Some("-c work_mem=64MB")
        );
        assert_eq!(
            params.connect_timeout.as_ref().map(|t| t.value),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            params.sslmode,
            Setting::new(SslMode::Require, Source::Environment("PGSSLMODE"))
        );
        assert_eq!(
            params.target_session_attrs.value,
            TargetSessionAttrs::ReadWrite
        );
        assert_eq!(params.channel_binding.value, ChannelBinding::Require);
    }

    #[test]
    fn empty_environment_values_mean_default_for_host_port_user() {
        let fx = Fixture::new()
            .var("PGHOST", "")
            .var("PGPORT", "")
            .var("PGUSER", "");
        let params = ok(fx.resolve(&ConnRequest::default()));
        assert!(params.hosts[0].is_socket);
        assert_eq!(params.hosts[0].port, 5432);
        assert_eq!(params.user.value, "alice");
    }

    #[test]
    fn pgrequiressl_means_require_unless_sslmode_is_set() {
        let fx = Fixture::new().var("PGREQUIRESSL", "1");
        let params = ok(fx.resolve(&ConnRequest::default()));
        assert_eq!(
            params.sslmode,
            Setting::new(SslMode::Require, Source::Environment("PGREQUIRESSL"))
        );
        let fx = fx.var("PGSSLMODE", "disable");
        assert_eq!(
            ok(fx.resolve(&ConnRequest::default())).sslmode.value,
            SslMode::Disable
        );
    }

    #[test]
    fn application_name_precedence() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d("application_name=mine"));
        assert_eq!(
            params.application_name,
            Setting::new("mine".to_string(), Source::ConnString)
        );
        // A fallback name in -d loses to pgplan's own, as psql's wins over it; say so.
        let params = ok(fx.resolve_d("fallback_application_name=theirs"));
        assert_eq!(
            params.application_name,
            Setting::new("pgplan".to_string(), Source::Default)
        );
        assert!(
            params
                .warnings
                .iter()
                .any(|w| w.contains("fallback_application_name"))
        );
    }

    #[test]
    fn startup_settings_come_from_pgdatestyle_pgtz_pggeqo() {
        let fx = Fixture::new()
            .var("PGGEQO", "off")
            .var("PGTZ", "UTC")
            .var("PGDATESTYLE", "default");
        let params = ok(fx.resolve(&ConnRequest::default()));
        let got: Vec<_> = params
            .startup_settings
            .iter()
            .map(|(k, s)| (*k, s.value.as_str()))
            .collect();
        assert_eq!(got, vec![("timezone", "UTC"), ("geqo", "off")]);
    }

    // --- service files ----------------------------------------------------------------------

    #[test]
    fn service_fills_only_unset_values_and_beats_the_environment() {
        let fx = Fixture::new()
            .var("PGSERVICE", "prod")
            .var("PGPORT", "1111")
            .var("PGUSER", "envuser");
        let file = fx.write(
            "home/.pg_service.conf",
            "[prod]\nhost=svc-host\nport=6000\ndbname=svcdb\nsslmode=verify-nope\n",
            0o644,
        );
        // sslmode from the service is invalid: the message names the service and file.
        let error = err(fx.resolve(&ConnRequest::default()));
        let text = error.to_string();
        assert!(
            text.contains("invalid sslmode value \"verify-nope\""),
            "{text}"
        );
        assert!(text.contains("from service \"prod\""), "{text}");

        fx.write(
            "home/.pg_service.conf",
            "[prod]\nhost=svc-host\nport=6000\ndbname=svcdb\n",
            0o644,
        );
        let params = ok(fx.resolve(&flags(Some("flaghost"), None, None, None)));
        let service_source = Source::Service {
            name: "prod".to_string(),
            file,
        };
        // The flag beats the service; the service beats PGPORT; PGUSER fills what the service left.
        assert_eq!(params.hosts[0].host.as_deref(), Some("flaghost"));
        assert_eq!(
            (params.hosts[0].port, &params.hosts[0].port_source),
            (6000, &service_source)
        );
        assert_eq!(
            params.dbname,
            Setting::new("svcdb".to_string(), service_source)
        );
        assert_eq!(params.user.source, Source::Environment("PGUSER"));
        assert_eq!(
            params.service,
            Some(Setting::new(
                "prod".to_string(),
                Source::Environment("PGSERVICE")
            ))
        );
    }

    #[test]
    fn service_named_in_d_and_system_file_fallback() {
        let fx = Fixture::new();
        fx.write("home/.pg_service.conf", "[other]\nhost=x\n", 0o600);
        let system = fx.write("etc/pg_service.conf", "[sys]\nhost=sys-host\n", 0o644);
        let params = ok(fx.resolve_d("service=sys"));
        assert_eq!(params.hosts[0].host.as_deref(), Some("sys-host"));
        assert_eq!(
            params.hosts[0].host_source,
            Source::Service {
                name: "sys".to_string(),
                file: system
            }
        );
        // PGSYSCONFDIR moves the system file.
        let fx2 = Fixture::new().var("PGSYSCONFDIR", fx.path("etc").to_str().expect("utf8"));
        assert_eq!(
            ok(fx2.resolve_d("service=sys")).hosts[0].host.as_deref(),
            Some("sys-host")
        );
    }

    #[test]
    fn pgservicefile_replaces_the_home_file_and_must_exist() {
        let fx = Fixture::new();
        fx.write("home/.pg_service.conf", "[a]\nhost=home-host\n", 0o600);
        let named = fx.write("custom.conf", "[a]\nhost=custom-host\n", 0o600);
        let fx = fx.var("PGSERVICEFILE", named.to_str().expect("utf8"));
        assert_eq!(
            ok(fx.resolve_d("service=a")).hosts[0].host.as_deref(),
            Some("custom-host")
        );
        let absent = fx.path("absent.conf");
        let fx = fx.var("PGSERVICEFILE", absent.to_str().expect("utf8"));
        let text = err(fx.resolve_d("service=a")).to_string();
        assert!(text.contains("PGSERVICEFILE"), "{text}");
    }

    #[test]
    fn unknown_service_and_nested_service_are_errors() {
        let fx = Fixture::new();
        fx.write("home/.pg_service.conf", "[a]\nservice=b\n", 0o600);
        let text = err(fx.resolve_d("service=x")).to_string();
        assert!(
            text.starts_with("definition of service \"x\" not found"),
            "{text}"
        );
        let text = err(fx.resolve_d("service=a")).to_string();
        assert!(text.contains("nested service"), "{text}");
    }

    // --- connection strings ---------------------------------------------------------------

    #[test]
    fn keyword_value_syntax() {
        assert_eq!(
            pairs("host = db   port=5433\tdbname='my db' user=o\\'brien"),
            vec![
                p("host", "db"),
                p("port", "5433"),
                p("dbname", "my db"),
                p("user", "o'brien")
            ]
        );
        assert_eq!(
            pairs(r"password='it\'s \\ here' options='-c a=b'"),
            vec![p("password", r"it's \ here"), p("options", "-c a=b")]
        );
        // A quoted value may be followed directly by the next keyword, as in libpq.
        assert_eq!(
            pairs("host='a'port=1"),
            vec![p("host", "a"), p("port", "1")]
        );
        // Blanks after "=" are skipped, so an empty value must be quoted.
        assert_eq!(pairs("host= dbname=x"), vec![p("host", "dbname=x")]);
        assert_eq!(
            pairs("host='' dbname=x"),
            vec![p("host", ""), p("dbname", "x")]
        );
        assert_eq!(pairs("host="), vec![p("host", "")]);
        assert_eq!(pairs("host=a\\ b"), vec![p("host", "a b")]);
        assert_eq!(pairs("host=''"), vec![p("host", "")]);
        assert_eq!(pairs("requiressl=1 "), vec![p("sslmode", "require")]);
        assert_eq!(pairs("requiressl=0"), vec![p("sslmode", "prefer")]);
    }

    #[test]
    fn later_duplicates_override_earlier_ones() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d("dbname=a dbname=b"));
        assert_eq!(params.dbname.value, "b");
    }

    #[test]
    fn keyword_value_errors_say_where() {
        let error = parse_connection_string("host=a port").expect_err("missing =");
        assert_eq!(
            error.to_string().lines().next(),
            Some(
                "missing \"=\" after \"port\" in connection info string (character 8 of the -d value)"
            )
        );
        let error = parse_connection_string("host=a dbname='oops").expect_err("unterminated");
        let text = error.to_string();
        assert!(
            text.contains("character 15") && text.contains("\"dbname\""),
            "{text}"
        );
        let error = parse_connection_string("host=a sslmod=require").expect_err("bad keyword");
        let text = error.to_string();
        assert!(
            text.starts_with("invalid connection option \"sslmod\" (character 8"),
            "{text}"
        );
        assert!(text.contains("did you mean \"sslmode\""), "{text}");
        let error = parse_connection_string("=x").expect_err("empty keyword");
        assert!(
            error
                .to_string()
                .starts_with("invalid connection option \"\""),
            "{error}"
        );
        // A trailing backslash inside quotes leaves them open.
        assert!(parse_connection_string("host='a\\").is_err());
    }

    // --- URLs -------------------------------------------------------------------------------

    #[test]
    fn full_url() {
        assert_eq!(
            pairs(
                "postgresql://us%40er:p%3Ass@db.example:6432/my%20db?sslmode=require&application_name=x%26y"
            ),
            vec![
                p("user", "us@er"),
                p("password", "p:ss"),
                p("host", "db.example"),
                p("port", "6432"),
                p("dbname", "my db"),
                p("sslmode", "require"),
                p("application_name", "x&y"),
            ]
        );
        assert_eq!(
            pairs("postgres://h/d"),
            vec![p("host", "h"), p("dbname", "d")]
        );
        assert_eq!(pairs("postgresql://"), vec![]);
        assert_eq!(pairs("postgresql:///"), vec![]);
        assert_eq!(pairs("postgresql:///db"), vec![p("dbname", "db")]);
        assert_eq!(pairs("postgresql://user@"), vec![p("user", "user")]);
        assert_eq!(pairs("postgresql://:5433"), vec![p("port", "5433")]);
        assert_eq!(pairs("postgresql://h?"), vec![p("host", "h")]);
        assert_eq!(
            pairs("postgresql://h/db?a%70plication_name=x&"),
            vec![
                p("host", "h"),
                p("dbname", "db"),
                p("application_name", "x")
            ]
        );
        // "+" is not a space in libpq's decoding.
        assert_eq!(pairs("postgresql:///a+b"), vec![p("dbname", "a+b")]);
    }

    #[test]
    fn url_ipv6_socket_dir_and_multiple_hosts() {
        assert_eq!(
            pairs("postgresql://[::1]:5433/db"),
            vec![p("host", "::1"), p("port", "5433"), p("dbname", "db")]
        );
        assert_eq!(
            pairs("postgresql://[fe80::1%25eth0]"),
            vec![p("host", "fe80::1%eth0")]
        );
        assert_eq!(
            pairs("postgresql://%2Fvar%2Frun%2Fpostgresql/db"),
            vec![p("host", "/var/run/postgresql"), p("dbname", "db")]
        );
        assert_eq!(
            pairs("postgresql://a:1,[::2]:2,c/db"),
            vec![p("host", "a,::2,c"), p("port", "1,2,"), p("dbname", "db")]
        );

        let fx = Fixture::new();
        let params = ok(fx.resolve_d("postgresql://a:5433,b/db"));
        let hosts: Vec<_> = params
            .hosts
            .iter()
            .map(|h| (h.host.as_deref(), h.port))
            .collect();
        // An empty port in the list means the default for that host.
        assert_eq!(hosts, vec![(Some("a"), 5433), (Some("b"), 5432)]);
        assert_eq!(params.hosts[1].port_source, Source::Default);

        let params = ok(fx.resolve_d("postgresql://%2Ftmp%2Fpg:5499/db"));
        assert!(params.hosts[0].is_socket);
        assert_eq!(params.hosts[0].host.as_deref(), Some("/tmp/pg"));
        assert_eq!(params.hosts[0].port, 5499);
    }

    #[test]
    fn url_query_parameters() {
        assert_eq!(
            pairs("postgresql://h?ssl=true"),
            vec![p("host", "h"), p("sslmode", "require")]
        );
        // Only ssl=true is JDBC-compatible; anything else for "ssl" is unknown.
        let text = parse_connection_string("postgresql://h?ssl=false")
            .expect_err("ssl=false")
            .to_string();
        assert!(
            text.starts_with("invalid URI query parameter \"ssl\""),
            "{text}"
        );
        // Query parameters override the path.
        assert_eq!(
            pairs("postgresql:///a?dbname=b&host=h"),
            vec![p("dbname", "a"), p("dbname", "b"), p("host", "h")]
        );
        let fx = Fixture::new();
        assert_eq!(
            ok(fx.resolve_d("postgresql:///a?dbname=b")).dbname.value,
            "b"
        );
    }

    #[test]
    fn url_errors() {
        let cases: &[(&str, &str)] = &[
            (
                "postgresql://[::1/db",
                "end of string reached when looking for matching \"]\"",
            ),
            ("postgresql://[]/db", "IPv6 host address may not be empty"),
            (
                "postgresql://[::1]x/db",
                "unexpected character \"x\" at position 19",
            ),
            (
                "postgresql://h/db?sslmode",
                "missing key/value separator \"=\" in URI query parameter \"sslmode\"",
            ),
            (
                "postgresql://h/db?a=b=c",
                "extra key/value separator \"=\" in URI query parameter \"a\"",
            ),
            (
                "postgresql://h/db?&a=b",
                "missing key/value separator \"=\" in URI query parameter \"\"",
            ),
            (
                "postgresql://h/db?bogus=1",
                "invalid URI query parameter \"bogus\" (character 19",
            ),
            (
                "postgresql://h/d%zz",
                "invalid percent-encoded token in the database name of the -d URL (character 17)",
            ),
            ("postgresql://h/d%4", "invalid percent-encoded token"),
            (
                "postgresql://h/d%00",
                "forbidden value %00 in the database name",
            ),
            ("postgresql://h/d%ff", "not UTF-8"),
        ];
        for (input, expected) in cases {
            let text = match parse_connection_string(input) {
                Ok(parsed) => panic!("{input} should fail, parsed {} pairs", parsed.len()),
                Err(error) => error.to_string(),
            };
            assert!(text.contains(expected), "{input}: {text}");
        }
    }

    // --- multiple hosts -----------------------------------------------------------------------

    #[test]
    fn multiple_hosts_and_ports() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d("host=a,b,c port=6000"));
        assert!(params.hosts.iter().all(|h| h.port == 6000));
        assert_eq!(params.hosts.len(), 3);

        let params = ok(fx.resolve_d("host=a,,/sock port=1,2,3"));
        assert_eq!(params.hosts[0].host.as_deref(), Some("a"));
        // An empty entry is the default socket directory; a path is a socket.
        assert!(params.hosts[1].is_socket && params.hosts[1].host_source == Source::Default);
        assert!(params.hosts[2].is_socket && params.hosts[2].host.as_deref() == Some("/sock"));
        assert_eq!(
            params.hosts.iter().map(|h| h.port).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );

        let text = err(fx.resolve_d("host=a,b port=1,2,3")).to_string();
        assert!(
            text.starts_with("could not match 3 port numbers to 2 hosts"),
            "{text}"
        );
    }

    #[test]
    fn hostaddr_lists_and_errors() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d("host=db.example,other hostaddr=10.0.0.1,::1"));
        assert_eq!(params.hosts[0].hostaddr, "10.0.0.1".parse().ok());
        assert_eq!(params.hosts[1].hostaddr, "::1".parse().ok());
        assert_eq!(params.hosts[0].host.as_deref(), Some("db.example"));
        let params = ok(fx.resolve_d("hostaddr=127.0.0.1 host=/tmp"));
        // A hostaddr means TCP even when host looks like a socket directory.
        assert!(!params.hosts[0].is_socket);
        let params = ok(fx.resolve_d("hostaddr=127.0.0.1"));
        assert_eq!(
            (params.hosts[0].host.as_deref(), params.hosts[0].is_socket),
            (None, false)
        );

        let text = err(fx.resolve_d("host=a,b,c hostaddr=10.0.0.1,10.0.0.2")).to_string();
        assert!(
            text.starts_with("could not match 3 host names to 2 hostaddr values"),
            "{text}"
        );
        let text = err(fx.resolve_d("hostaddr=db.example")).to_string();
        assert!(
            text.starts_with("could not parse network address \"db.example\" in hostaddr"),
            "{text}"
        );
    }

    // --- validation -----------------------------------------------------------------------

    #[test]
    fn invalid_sslmode_message_names_source_and_choices() {
        let fx = Fixture::new().var("PGSSLMODE", "verify_full");
        let text = err(fx.resolve(&ConnRequest::default())).to_string();
        assert_eq!(
            text,
            "invalid sslmode value \"verify_full\" (from PGSSLMODE); expected one of disable, allow, prefer, \
             require, verify-ca, verify-full; did you mean \"verify-full\"?"
        );
        // Empty is not a valid sslmode either (libpq validates any value that is set).
        let fx = Fixture::new().var("PGSSLMODE", "");
        assert!(
            err(fx.resolve(&ConnRequest::default()))
                .to_string()
                .contains("invalid sslmode value \"\"")
        );
    }

    #[test]
    fn enumerated_values_are_validated() {
        let fx = Fixture::new();
        for (input, keyword) in [
            ("target_session_attrs=readwrite", "target_session_attrs"),
            ("channel_binding=maybe", "channel_binding"),
            ("load_balance_hosts=yes", "load_balance_hosts"),
            ("gssencmode=sometimes", "gssencmode"),
            ("sslcertmode=never", "sslcertmode"),
            ("sslnegotiation=fast", "sslnegotiation"),
            ("ssl_min_protocol_version=TLSv2", "ssl_min_protocol_version"),
        ] {
            let text = err(fx.resolve_d(input)).to_string();
            assert!(
                text.starts_with(&format!("invalid {keyword} value")),
                "{input}: {text}"
            );
            assert!(text.contains("(from the -d connection string)"), "{text}");
        }
        for value in [
            "any",
            "read-write",
            "read-only",
            "primary",
            "standby",
            "prefer-standby",
        ] {
            let params = ok(fx.resolve_d(&format!("target_session_attrs={value}")));
            assert_eq!(params.target_session_attrs.value.as_str(), value);
        }
        let params =
            ok(fx.resolve_d("ssl_min_protocol_version=tlsv1.3 ssl_max_protocol_version=TLSV1.3"));
        assert_eq!(
            params.ssl_min_protocol_version.map(|s| s.value),
            Some(TlsVersion::Tls1_3)
        );
        let text =
            err(fx.resolve_d("ssl_min_protocol_version=TLSv1.3 ssl_max_protocol_version=TLSv1.2"))
                .to_string();
        assert!(
            text.starts_with("invalid SSL protocol version range"),
            "{text}"
        );
    }

    #[test]
    fn ports_are_validated() {
        let fx = Fixture::new();
        for bad in ["0", "65536", "-1", "abc", "54 32", "5432x"] {
            let text = err(fx.resolve(&flags(None, Some(bad), None, None))).to_string();
            assert!(
                text.starts_with(&format!("invalid port number \"{bad}\" (from -p/--port)")),
                "{text}"
            );
        }
        // strtol-style leniency: surrounding whitespace and a sign are fine.
        assert_eq!(
            ok(fx.resolve(&flags(None, Some(" +5433 "), None, None))).hosts[0].port,
            5433
        );
        let text = err(fx.resolve_d("host=a,b port=1,x")).to_string();
        assert!(text.contains("\"x\""), "{text}");
    }

    #[test]
    fn connect_timeout_follows_libpq() {
        let fx = Fixture::new();
        let timeout = |value: &str| {
            ok(fx.resolve_d(&format!("connect_timeout='{value}'")))
                .connect_timeout
                .map(|t| t.value)
        };
        assert_eq!(timeout("1"), Some(Duration::from_secs(2)));
        assert_eq!(timeout("2"), Some(Duration::from_secs(2)));
        assert_eq!(timeout(" 30 "), Some(Duration::from_secs(30)));
        assert_eq!(timeout("0"), None);
        assert_eq!(timeout("-5"), None);
        let text = err(fx.resolve_d("connect_timeout=10s")).to_string();
        assert!(
            text.starts_with(
                "invalid integer value \"10s\" for connection option \"connect_timeout\""
            ),
            "{text}"
        );
        assert!(
            err(fx.resolve_d("connect_timeout=99999999999"))
                .to_string()
                .contains("invalid integer")
        );
    }

    #[test]
    fn keepalive_settings() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d(
            "keepalives=0 keepalives_idle=30 keepalives_interval=-3 keepalives_count=4 tcp_user_timeout=1500",
        ));
        assert!(!params.keepalives.enabled.value);
        assert_eq!(
            params.keepalives.idle.map(|s| s.value),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            params.keepalives.interval.map(|s| s.value),
            Some(Duration::ZERO)
        );
        assert_eq!(params.keepalives.count.map(|s| s.value), Some(4));
        assert_eq!(
            params.keepalives.tcp_user_timeout.map(|s| s.value),
            Some(Duration::from_millis(1500))
        );
        assert!(ok(fx.resolve_d("keepalives=1")).keepalives.enabled.value);
        assert!(
            err(fx.resolve_d("keepalives=yes"))
                .to_string()
                .contains("\"keepalives\"")
        );
        assert!(
            err(fx.resolve_d("keepalives_idle=soon"))
                .to_string()
                .contains("\"keepalives_idle\"")
        );
    }

    #[test]
    fn unsupported_keywords_are_errors_that_say_so() {
        let fx = Fixture::new();
        for input in [
            "gssencmode=require",
            "client_encoding=LATIN1",
            "replication=database",
            "replication=true",
            "require_auth=scram-sha-256",
            "requirepeer=postgres",
            "sslcrl=/etc/crl.pem",
            "sslcrldir=/etc/crls",
            "sslcertmode=require",
            "ssl_min_protocol_version=TLSv1 ssl_max_protocol_version=TLSv1.1",
        ] {
            let text = err(fx.resolve_d(input)).to_string();
            assert!(
                text.contains("cannot be honoured by pgplan"),
                "{input}: {text}"
            );
            assert!(text.contains("hint:"), "{input}: {text}");
        }
        for input in [
            "gssencmode=prefer",
            "gssencmode=disable",
            "client_encoding=UTF8",
            "client_encoding=utf-8",
            "client_encoding=auto",
            "replication=false",
            "sslcompression=1",
            "sslsni=0",
            "krbsrvname=postgres gsslib=gssapi gssdelegation=1",
            "sslmode=disable sslcrl=/etc/crl.pem",
            "sslmode=disable ssl_min_protocol_version=TLSv1 ssl_max_protocol_version=TLSv1",
        ] {
            ok(fx.resolve_d(input));
        }
        let params = ok(fx.resolve_d("ssl_min_protocol_version=TLSv1"));
        assert!(
            params
                .warnings
                .iter()
                .any(|w| w.contains("effective minimum")),
            "{:?}",
            params.warnings
        );
    }

    /// A request for a TCP host: sslmode and the certificate files apply only to those.
    fn tcp_request() -> ConnRequest {
        ConnRequest {
            host: Some("db.example.com".into()),
            ..ConnRequest::default()
        }
    }

    #[test]
    fn unix_sockets_ignore_sslmode_and_certificate_files() {
        let fx = Fixture::new();
        // No root certificate anywhere, missing client files: nothing matters for a socket.
        let params = ok(fx.resolve_d(
            "host=/tmp sslmode=verify-full sslrootcert=/nonexistent/ca.pem \
             sslcert=/nonexistent/client.crt sslkey=/nonexistent/client.key",
        ));
        assert_eq!((params.sslrootcert, params.sslcert), (None, None));
        assert!(params.warnings.is_empty(), "{:?}", params.warnings);
        // A TCP host in the list brings the checks back.
        let text = err(fx.resolve_d("host=/tmp,db.example.com sslmode=verify-full")).to_string();
        assert!(text.starts_with("root certificate file"), "{text}");
    }

    #[test]
    fn system_roots_and_direct_negotiation() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d("host=db.example.com sslrootcert=system"));
        assert_eq!(
            params.sslmode,
            Setting::new(SslMode::VerifyFull, Source::Default)
        );
        assert_eq!(
            params.sslrootcert.map(|s| s.value).as_deref(),
            Some("system")
        );
        let text =
            err(fx.resolve_d("host=db.example.com sslrootcert=system sslmode=require")).to_string();
        assert!(text.starts_with("weak sslmode \"require\""), "{text}");
        let text = err(fx.resolve_d("host=db.example.com sslnegotiation=direct")).to_string();
        assert!(text.contains("sslnegotiation=direct"), "{text}");
        let params = ok(fx.resolve_d("host=db.example.com sslnegotiation=direct sslmode=require"));
        assert_eq!(params.sslnegotiation.value, SslNegotiation::Direct);
    }

    // --- certificate files ------------------------------------------------------------------

    #[test]
    fn default_certificate_files_are_used_only_when_present() {
        let fx = Fixture::new();
        let root = fx.write("home/.postgresql/root.crt", "ca", 0o644);
        let params = ok(fx.resolve(&tcp_request()));
        assert_eq!(
            params.sslrootcert,
            Some(Setting::new(
                root.to_string_lossy().into_owned(),
                Source::Default
            ))
        );
        assert_eq!(params.sslcert, None);

        let cert = fx.write("home/.postgresql/postgresql.crt", "cert", 0o644);
        let text = err(fx.resolve(&tcp_request())).to_string();
        assert!(
            text.starts_with("certificate present, but not private key file"),
            "{text}"
        );

        let key = fx.write("home/.postgresql/postgresql.key", "key", 0o644);
        let text = err(fx.resolve(&tcp_request())).to_string();
        assert!(text.contains("has group or world access"), "{text}");

        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).expect("chmod");
        let params = ok(fx.resolve(&tcp_request()));
        assert_eq!(params.sslcert.map(|s| s.value), Some(cert));
        assert_eq!(params.sslkey.map(|s| s.value), Some(key));

        // sslcertmode=disable never sends one; sslmode=disable looks at no file at all.
        assert_eq!(
            ok(fx.resolve_d("host=db.example.com sslcertmode=disable")).sslcert,
            None
        );
        let params = ok(fx.resolve_d("host=db.example.com sslmode=disable"));
        assert_eq!((params.sslrootcert, params.sslcert), (None, None));
    }

    #[test]
    fn verify_modes_need_a_root_certificate() {
        let fx = Fixture::new();
        let text = err(fx.resolve_d("host=db.example.com sslmode=verify-ca")).to_string();
        assert!(text.starts_with("root certificate file"), "{text}");
        assert!(text.contains("sslrootcert=system"), "{text}");
        let text = err(
            fx.resolve_d("host=db.example.com sslmode=verify-full sslrootcert=/nonexistent/ca.pem")
        )
        .to_string();
        assert!(text.contains("/nonexistent/ca.pem"), "{text}");
        // Below verify-ca a missing explicit root is only a warning (libpq carries on).
        let params =
            ok(fx.resolve_d("host=db.example.com sslmode=require sslrootcert=/nonexistent/ca.pem"));
        assert_eq!(params.sslrootcert, None);
        assert!(
            params
                .warnings
                .iter()
                .any(|w| w.contains("/nonexistent/ca.pem"))
        );
        let mut env = fx.env();
        env.home = None;
        let request = ConnRequest {
            dbname: Some("host=db.example.com sslmode=verify-full".into()),
            ..ConnRequest::default()
        };
        let text = resolve(&request, &env).expect_err("no home").to_string();
        assert!(text.starts_with("could not get home directory"), "{text}");
    }

    #[test]
    fn explicit_certificate_files_and_missing_cert_warning() {
        let fx = Fixture::new();
        let cert = fx.write("c/client.crt", "cert", 0o644);
        let key = fx.write("c/client.key", "key", 0o600);
        let input = format!("sslcert={} sslkey={}", cert.display(), key.display());
        let params = ok(fx.resolve_d(&format!("host=db.example.com {input}")));
        assert_eq!(params.sslcert, Some(Setting::new(cert, Source::ConnString)));
        assert_eq!(params.sslkey, Some(Setting::new(key, Source::ConnString)));
        let params = ok(fx.resolve_d("host=db.example.com sslcert=/nonexistent/client.crt"));
        assert_eq!(params.sslcert, None);
        assert!(
            params
                .warnings
                .iter()
                .any(|w| w.contains("no client certificate"))
        );
        let dir_key = fx.path("c");
        let cert = fx.path("c/client.crt");
        let text = err(fx.resolve_d(&format!(
            "host=db.example.com sslcert={} sslkey={}",
            cert.display(),
            dir_key.display()
        )))
        .to_string();
        assert!(text.contains("is not a regular file"), "{text}");
    }

    // --- password file ------------------------------------------------------------------------

    #[test]
    fn password_file_default_location_and_localhost_for_the_default_socket() {
        let fx = Fixture::new();
        let pgpass = fx.write(
            "home/.pgpass",
            "localhost:5432:alice:alice:sock-pw\n",
            0o600,
        );
        let params = ok(fx.resolve(&ConnRequest::default()));
        let password = params.hosts[0].password.as_ref().expect("password");
        assert_eq!(password.value.expose(), "sock-pw");
        assert_eq!(password.source, Source::PasswordFile(pgpass.clone()));
        assert_eq!(params.passfile, Some(Setting::new(pgpass, Source::Default)));
        // An explicit localhost matches the same line.
        let params = ok(fx.resolve(&flags(Some("localhost"), None, None, None)));
        assert!(params.hosts[0].password.is_some());
    }

    #[test]
    fn password_file_matches_socket_dirs_literally_unless_default() {
        let fx = Fixture::new();
        fx.write(
            "home/.pgpass",
            "/custom/sock:5432:*:*:custom-pw\nlocalhost:*:*:*:local-pw\n",
            0o600,
        );
        let params = ok(fx.resolve(&flags(Some("/custom/sock"), None, None, None)));
        assert_eq!(
            params.hosts[0].password.as_ref().map(|p| p.value.expose()),
            Some("custom-pw")
        );
        // A default candidate directory named explicitly still counts as localhost.
        let default_dir = fx.path("sock-b");
        let params = ok(fx.resolve(&flags(default_dir.to_str(), None, None, None)));
        assert_eq!(
            params.hosts[0].password.as_ref().map(|p| p.value.expose()),
            Some("local-pw")
        );
    }

    #[test]
    fn password_file_per_host_with_port_database_and_user() {
        let fx = Fixture::new();
        fx.write(
            "home/.pgpass",
            "# comment\na:5432:app:bob:a-pw\nb:6000:app:bob:b-pw\n*:*:other:bob:other-pw\n",
            0o600,
        );
        let params = ok(fx.resolve_d("host=a,b,c port=5432,6000,5432 dbname=app user=bob"));
        let found: Vec<_> = params
            .hosts
            .iter()
            .map(|h| h.password.as_ref().map(|p| p.value.expose().to_string()))
            .collect();
        assert_eq!(
            found,
            vec![Some("a-pw".to_string()), Some("b-pw".to_string()), None]
        );
        let params = ok(fx.resolve_d("host=zzz dbname=other user=bob"));
        assert_eq!(
            params.hosts[0].password.as_ref().map(|p| p.value.expose()),
            Some("other-pw")
        );
        // hostaddr is the key when there is no host.
        fx.write("home/.pgpass", "10.1.2.3:5432:*:*:addr-pw\n", 0o600);
        let params = ok(fx.resolve_d("hostaddr=10.1.2.3"));
        assert_eq!(
            params.hosts[0].password.as_ref().map(|p| p.value.expose()),
            Some("addr-pw")
        );
    }

    #[test]
    fn password_file_location_from_pgpassfile_or_passfile() {
        let fx = Fixture::new();
        fx.write("home/.pgpass", "*:*:*:*:home-pw\n", 0o600);
        let env_file = fx.write("env.pgpass", "*:*:*:*:env-pw\n", 0o600);
        let kw_file = fx.write("kw.pgpass", "*:*:*:*:kw-pw\n", 0o600);
        let fx = fx.var("PGPASSFILE", env_file.to_str().expect("utf8"));
        let params = ok(fx.resolve(&ConnRequest::default()));
        assert_eq!(
            params.hosts[0].password.as_ref().map(|p| p.value.expose()),
            Some("env-pw")
        );
        assert_eq!(
            params.passfile.map(|p| p.source),
            Some(Source::Environment("PGPASSFILE"))
        );
        let params = ok(fx.resolve_d(&format!("passfile={}", kw_file.display())));
        assert_eq!(
            params.hosts[0].password.as_ref().map(|p| p.value.expose()),
            Some("kw-pw")
        );
    }

    #[test]
    fn explicit_password_beats_the_password_file() {
        let fx = Fixture::new().var("PGPASSWORD", "env-secret");
        fx.write("home/.pgpass", "*:*:*:*:file-pw\n", 0o600);
        let params = ok(fx.resolve(&ConnRequest::default()));
        let password = params.hosts[0].password.as_ref().expect("password");
        assert_eq!(
            (password.value.expose(), &password.source),
            ("env-secret", &Source::Environment("PGPASSWORD"))
        );
        assert_eq!(params.passfile, None);
        let params = ok(fx.resolve_d("password=typed"));
        assert_eq!(
            params.hosts[0].password.as_ref().map(|p| p.value.expose()),
            Some("typed")
        );
    }

    #[test]
    fn insecure_password_file_is_ignored_with_a_warning() {
        let fx = Fixture::new();
        fx.write("home/.pgpass", "*:*:*:*:file-pw\n", 0o644);
        let params = ok(fx.resolve(&ConnRequest::default()));
        assert!(params.hosts[0].password.is_none());
        assert!(
            params
                .warnings
                .iter()
                .any(|w| w.contains("group or world access")),
            "{:?}",
            params.warnings
        );
    }

    #[test]
    fn empty_password_in_file_counts_as_none_with_a_warning() {
        let fx = Fixture::new();
        fx.write("home/.pgpass", "*:*:*:*:\n*:*:*:*:later\n", 0o600);
        let params = ok(fx.resolve(&ConnRequest::default()));
        assert!(params.hosts[0].password.is_none());
        assert!(params.warnings.iter().any(|w| w.contains("empty password")));
    }

    // --- display and redaction ------------------------------------------------------------

    const SECRET: &str = "S3cr3t-pw";

    fn assert_hidden(text: &str) {
        assert!(!text.contains(SECRET), "secret leaked: {text}");
        assert!(
            !text.contains("S3cr3t"),
            "part of the secret leaked: {text}"
        );
    }

    #[test]
    fn secret_never_prints() {
        let secret = Secret::new(SECRET);
        assert_eq!(format!("{secret}"), REDACTED);
        assert_eq!(format!("{secret:?}"), REDACTED);
        assert_eq!(secret.expose(), SECRET);
    }

    #[test]
    fn passwords_never_appear_in_redacted_debug_or_explain() {
        let fx = Fixture::new().var("PGPASSWORD", SECRET);
        let key = fx.write("k.key", "key", 0o600);
        let cert = fx.write("k.crt", "cert", 0o600);
        let inputs = [
            format!("postgresql://alice:{SECRET}@db.example/app?sslpassword={SECRET}"),
            format!(
                "host=db.example password='{SECRET}' sslpassword={SECRET} sslcert={} sslkey={}",
                cert.display(),
                key.display()
            ),
            "host=db.example".to_string(),
        ];
        for input in &inputs {
            let params = ok(fx.resolve_d(input));
            assert!(params.hosts[0].password.is_some());
            let redacted = params.redacted();
            assert!(redacted.contains("password=********"), "{redacted}");
            assert_hidden(&redacted);
            assert_hidden(&format!("{params:?}"));
            assert_hidden(&format!("{params:#?}"));
            for (name, value, source) in params.explain_sources() {
                assert_hidden(&format!("{name} {value} {source}"));
            }
            assert_hidden(&redact(input));
        }
        assert_hidden(&format!("{:?}", fx.env()));
    }

    #[test]
    fn passwords_from_files_never_appear() {
        let fx = Fixture::new();
        fx.write("home/.pgpass", &format!("*:*:*:*:{SECRET}\n"), 0o600);
        fx.write(
            "home/.pg_service.conf",
            &format!("[s]\npassword={SECRET}\nhost=h\n"),
            0o600,
        );
        for params in [
            ok(fx.resolve(&ConnRequest::default())),
            ok(fx.resolve_d("service=s")),
        ] {
            assert!(params.hosts[0].password.is_some());
            assert_hidden(&params.redacted());
            assert_hidden(&format!("{params:?}"));
            assert_hidden(&format!("{:?}", params.explain_sources()));
        }
    }

    #[test]
    fn passwords_never_appear_in_error_messages() {
        let fx = Fixture::new();
        let bad_inputs = [
            format!("password={SECRET} sslmode=bogus"),
            format!("password={SECRET} port=0"),
            format!("password={SECRET} oops"),
            "password=S3cr3t -pw".to_string(),
            format!("password='{SECRET}"),
            format!("sslpassword={SECRET} bogus=1"),
            format!("postgresql://u:{SECRET}@[::1/db"),
            format!("postgresql://u:{SECRET}@[]/db"),
            format!("postgresql://u:{SECRET}@[::1]x/db"),
            format!("postgresql://u:{SECRET}%zz@h/db"),
            format!("postgresql://u:{SECRET}%00@h/db"),
            format!("postgresql://u:{SECRET}%ff@h/db"),
            format!("postgresql://h/db?password={SECRET}=x"),
            format!("postgresql://h/db?password={SECRET}%zz"),
            format!("postgresql://h/db?password={SECRET}&bogus=1"),
            format!("postgresql://u:{SECRET}@h:99999/db"),
            format!("postgresql://h/db?password{SECRET}"),
        ];
        for input in &bad_inputs {
            let error = err(fx.resolve_d(input));
            assert_hidden(&error.to_string());
            assert_hidden(&format!("{error:?}"));
            assert_hidden(&redact(input));
        }
        let fx = Fixture::new()
            .var("PGPASSWORD", SECRET)
            .var("PGSSLMODE", "nope");
        let error = err(fx.resolve(&ConnRequest::default()));
        assert_hidden(&format!("{error} {error:?}"));
    }

    #[test]
    fn redact_keeps_everything_but_the_password() {
        assert_eq!(
            redact("host=h password=pw user=u"),
            "host=h password=******** user=u"
        );
        assert_eq!(
            redact("host=h password = 'p w' user=u"),
            "host=h password = ******** user=u"
        );
        assert_eq!(redact("password=p w"), "password=******** ********");
        assert_eq!(redact("password="), "password=");
        assert_eq!(redact("passfile=/x/pgpass"), "passfile=/x/pgpass");
        assert_eq!(
            redact("postgresql://u:pw@h/db"),
            "postgresql://u:********@h/db"
        );
        assert_eq!(
            redact("postgresql://u@h/db?password=x&sslmode=require"),
            "postgresql://u@h/db?password=********&sslmode=require"
        );
        // libpq's parameter names are case-sensitive: this one does not parse, so the user
        // info goes too.
        assert_eq!(
            redact("postgresql://u@h/db?Password=x&sslmode=require"),
            "postgresql://********@h/db?Password=********&sslmode=require"
        );
        assert_eq!(
            redact("postgresql://u@h/db?pass%77ord=x"),
            "postgresql://u@h/db?pass%77ord=********"
        );
        assert_eq!(
            redact("postgresql://h/db?passwordx&a=b"),
            "postgresql://h/db?********&a=b"
        );
        assert_eq!(redact("mydb"), "mydb");
        assert_eq!(redact(""), "");
        // Not parseable, or a scheme libpq does not know: no part of the user info is shown.
        assert_eq!(
            redact("postgresql://u:Sup@Sekr3t@host/db"),
            "postgresql://********@host/db"
        );
        assert_eq!(
            redact("postgressql://u:Sup@Sekr3t@host/db?password=x"),
            "postgressql://********@host/db?password=x"
        );
        assert_eq!(
            redact("postgresql://u:pw@[::1/db"),
            "postgresql://********@[::1/db"
        );
    }

    #[test]
    fn a_raw_at_sign_in_the_user_info_is_refused_without_echoing_it() {
        let fx = Fixture::new();
        let error = err(fx.resolve_d("postgresql://u:Sup@Sekr3t@host/db")).to_string();
        assert_eq!(
            error,
            "the -d URL \"postgresql://********@host/db\" has more than one \"@\" before its host: \
             libpq splits it at the first one and would take the rest of the user info for a host \
             name\nhint: percent-encode an \"@\" inside a user name or password as %40"
        );
        // Encoded, it is a password like any other.
        let params = ok(fx.resolve_d("postgresql://u:Sup%40Sekr3t@host/db"));
        assert_eq!(
            params.hosts[0].password.as_ref().unwrap().value.expose(),
            "Sup@Sekr3t"
        );
    }

    #[test]
    fn a_mistyped_scheme_is_refused_without_echoing_the_user_info() {
        let fx = Fixture::new();
        let error = err(fx.resolve_d("postgresq://u:Sup@Sekr3t@host/db")).to_string();
        assert_eq!(
            error,
            "-d \"postgresq://********@host/db\" looks like a URL, but \"postgresq://\" is not a scheme \
             libpq knows, so it would be taken for a database name\nhint: start a connection URL with \
             postgresql:// or postgres://"
        );
        assert!(
            !error.contains("Sekr3t") && !error.contains("Sup"),
            "{error}"
        );
        // A database name with "://" but no scheme before it is still a database name.
        assert_eq!(ok(fx.resolve_d("1a://x")).dbname.value, "1a://x");
    }

    #[test]
    fn redacted_round_trips_through_the_parser() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d("host='a b,c' port=1,2 user=o\\'neil dbname=x options='-c geqo=off' application_name=\\\\"));
        let text = params.redacted();
        let reparsed = pairs(&text);
        assert!(reparsed.contains(&p("host", "a b,c")), "{text}");
        assert!(reparsed.contains(&p("user", "o'neil")), "{text}");
        assert!(reparsed.contains(&p("options", "-c geqo=off")), "{text}");
        assert!(reparsed.contains(&p("application_name", "\\")), "{text}");
    }

    #[test]
    fn explain_sources_names_every_source() {
        let fx = Fixture::new()
            .var("PGSSLMODE", "require")
            .var("PGSERVICE", "s");
        let file = fx.write("home/.pg_service.conf", "[s]\ndbname=svcdb\n", 0o600);
        let params = ok(fx.resolve(&flags(
            Some("h"),
            None,
            None,
            Some("user=u application_name=a"),
        )));
        let rows = params.explain_sources();
        let find = |name: &str| {
            rows.iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, value, source)| (value.clone(), source.clone()))
                .unwrap_or_else(|| panic!("no row {name} in {rows:?}"))
        };
        assert_eq!(
            find("host"),
            ("h".to_string(), "command-line flag".to_string())
        );
        assert_eq!(find("port"), ("5432".to_string(), "default".to_string()));
        assert_eq!(
            find("user"),
            ("u".to_string(), "-d connection string".to_string())
        );
        assert_eq!(
            find("dbname"),
            (
                "svcdb".to_string(),
                format!("service \"s\" ({})", file.display())
            )
        );
        assert_eq!(
            find("sslmode"),
            ("require".to_string(), "environment PGSSLMODE".to_string())
        );
        assert_eq!(find("service").1, "environment PGSERVICE");
        let params = ok(fx.resolve_d("host=a,b"));
        assert!(
            params
                .explain_sources()
                .iter()
                .any(|(n, _, _)| n == "host[2]")
        );
    }

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
