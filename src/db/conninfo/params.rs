//! The resolved connection parameters, each value with its source: what `resolve` returns and
//! `connect` uses.

use super::*;

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
    pub(super) fn new(value: T, source: Source) -> Self {
        Self { value, source }
    }
}

/// A password. `Debug` and `Display` print `********`; only [`Secret::expose`] gives the text.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub(super) String);

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
