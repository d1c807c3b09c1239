//! Why connection parameters could not be resolved, each message naming the value, where it
//! came from, and what to write instead.

use super::*;

/// A "did you mean" tail for an error message; empty when nothing is close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion(pub(super) Option<&'static str>);

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
