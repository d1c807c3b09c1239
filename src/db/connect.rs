//! Connecting as libpq does: each host in turn with its own password and TLS, libpq's sslmode
//! fallbacks, `target_session_attrs` checked against the server's own answer, retries for
//! failures that may pass, and errors that say what failed and what to try.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use tokio_postgres::config::{ChannelBinding as PgChannelBinding, SslMode as PgSslMode};
use tokio_postgres::tls::NoTls;

use super::cancel::CancelTarget;
use super::conninfo::{
    ChannelBinding, ConnParams, HostSpec, LoadBalanceHosts, SslMode, SslNegotiation,
    TargetSessionAttrs,
};
use super::error::describe;
use super::facts::{ServerFacts, read_facts};
use super::pgpass::{self, PasswordFile};
use super::retry::RetryPolicy;
use super::settings::{Limits, set_local_statements};
use super::tls::{
    MakeTls, RootCerts, TlsRequest, client_config, describe_tls_error, is_certificate_error,
    is_name_mismatch, mode_name,
};

/// Why a connection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("could not connect to {target}: {cause}{hint}", hint = reach_hint(tried))]
    Unreachable {
        target: String,
        cause: String,
        /// Every host, port or socket path tried.
        tried: Vec<String>,
    },
    #[error("authentication failed for user \"{user}\" on {target}: {cause}\nhint: {hint}")]
    Authentication {
        target: String,
        user: String,
        cause: String,
        /// Where the password came from, or why there was none; or what else to change.
        hint: String,
    },
    #[error(
        "database \"{database}\" does not exist on {target}\nhint: list databases with psql -l, or name another with -d"
    )]
    NoDatabase { target: String, database: String },
    #[error("TLS with sslmode={sslmode} failed for {target}: {cause}\nhint: {hint}")]
    Tls {
        target: String,
        sslmode: &'static str,
        cause: String,
        hint: String,
    },
    #[error("connected to {target}, but {what}: {cause}")]
    Facts {
        target: String,
        /// "reading the server's facts timed out or was cancelled", or "... failed".
        what: &'static str,
        cause: String,
    },
    #[error("the server at {target} refused the connection: {cause}")]
    Server {
        target: String,
        cause: String,
        /// Whether trying again later may help (the server is starting up, or full).
        transient: bool,
    },
    #[error("{target} is not a suitable server: {reason}")]
    WrongRole { target: String, reason: String },
    #[error("{0}")]
    Setup(String),
}

fn reach_hint(tried: &[String]) -> String {
    if tried.is_empty() {
        return String::new();
    }
    format!(
        "\nhint: tried {}; check that the server runs and accepts connections there (pg_isready), \
         or give another place with -h/-p or PGHOST/PGPORT",
        tried.join(", ")
    )
}

impl ConnectError {
    /// Whether another attempt may succeed. Never for authentication, TLS, a missing database
    /// or a usage error: repeating those only adds load (and locks accounts).
    pub fn is_transient(&self) -> bool {
        match self {
            ConnectError::Unreachable { .. } => true,
            ConnectError::Server { transient, .. } => *transient,
            _ => false,
        }
    }
}

/// TLS as used by a connection, kept for sending cancel requests the same way.
#[derive(Clone)]
enum Tls {
    None,
    Rustls(MakeTls),
}

/// An open connection with the facts read from it.
pub struct Connection {
    pub client: tokio_postgres::Client,
    pub facts: ServerFacts,
    /// Where it is connected: "host:port/database", no password.
    pub target: String,
    /// Whether the connection is encrypted.
    pub encrypted: bool,
    /// Set again in every transaction (`SET LOCAL`), so it shows through a transaction-mode
    /// pooler whose server connection was started by someone else.
    pub application_name: String,
    /// libpq's startup settings from PGDATESTYLE, PGTZ and PGGEQO (`datestyle`, `timezone`,
    /// `geqo`), set in every transaction (`SET LOCAL`) for the same reason.
    pub session_settings: Vec<(&'static str, String)>,
    cancel: tokio_postgres::CancelToken,
    cancel_target: CancelTarget,
    tls: Tls,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("target", &self.target)
            .field("encrypted", &self.encrypted)
            .finish_non_exhaustive()
    }
}

/// Sends a cancel request for whatever the connection is running (Ctrl-C).
#[derive(Clone)]
pub struct CancelHandle {
    token: tokio_postgres::CancelToken,
    tls: Tls,
    target: CancelTarget,
}

impl CancelHandle {
    /// Asks the server to cancel the running statement. Errors are ignored: if the request cannot
    /// be delivered, closing the connection still makes the server roll back.
    pub async fn cancel(&self) {
        let tls = match &self.tls {
            Tls::None => None,
            Tls::Rustls(tls) => Some(tls),
        };
        let _ = super::cancel::send(&self.token, tls, &self.target).await;
    }
}

impl Connection {
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle {
            token: self.cancel.clone(),
            tls: self.tls.clone(),
            target: self.cancel_target.clone(),
        }
    }

    /// Whether the connection task has ended (the server closed it, or the network dropped).
    pub fn is_closed(&self) -> bool {
        self.client.is_closed() || self.task.is_finished()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Cancel handles of every connection made with it, so an interrupt can reach server work
/// started by a connection that is still being set up (its facts query can wait on a lock).
#[derive(Clone, Default)]
pub struct CancelRegistry {
    handles: Arc<std::sync::Mutex<Vec<CancelHandle>>>,
}

impl std::fmt::Debug for CancelRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CancelRegistry")
    }
}

impl CancelRegistry {
    pub fn register(&self, handle: CancelHandle) {
        self.handles
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(handle);
    }

    /// Whether any connection has been registered (a server accepted one).
    pub fn is_empty(&self) -> bool {
        self.handles
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// Sends a cancel request on every registered connection.
    pub async fn cancel_all(&self) {
        let handles: Vec<CancelHandle> = self
            .handles
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for handle in &handles {
            handle.cancel().await;
        }
    }
}

/// How the connection will retry, where its cancel handle goes, and the limits on the facts
/// query it runs.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub retry: RetryPolicy,
    /// Registered as soon as the server accepted the connection, before any query runs.
    pub cancel: Option<CancelRegistry>,
    /// statement_timeout and lock_timeout for reading the server's facts.
    pub limits: Limits,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            cancel: None,
            limits: Limits::read_only_defaults(),
        }
    }
}

/// Reads the facts inside a read-only transaction with pgplan's limits set locally, so even this
/// first query cannot wait forever behind a lock. (Whether a fresh transaction would be
/// read-only is read from `default_transaction_read_only` and recovery, not from this one.)
async fn facts_within_limits(
    client: &tokio_postgres::Client,
    limits: &Limits,
    application_name: &str,
    session_settings: &[(&'static str, String)],
) -> Result<ServerFacts, String> {
    let setup = format!(
        "BEGIN READ ONLY; {}",
        set_local_statements(limits, 0, false, application_name, session_settings)
    );
    client
        .batch_execute(&setup)
        .await
        .map_err(|e| format!("starting a transaction: {}", describe(&e)))?;
    let facts = read_facts(client).await;
    let rollback = client.batch_execute("ROLLBACK").await;
    let facts = facts?;
    rollback.map_err(|e| format!("rolling back: {}", describe(&e)))?;
    Ok(facts)
}

fn host_display(host: &HostSpec) -> String {
    let name = host
        .host
        .clone()
        .or_else(|| host.hostaddr.map(|a| a.to_string()))
        .unwrap_or_else(|| "localhost".into());
    if host.is_socket {
        format!(
            "socket {}/.s.PGSQL.{}",
            name.trim_end_matches('/'),
            host.port
        )
    } else if name.contains(':') {
        // An IPv6 address: brackets keep the port apart, as in URLs and libpq's messages.
        format!("[{name}]:{}", host.port)
    } else {
        format!("{name}:{}", host.port)
    }
}

fn target_display(host: &HostSpec, params: &ConnParams) -> String {
    format!("{} (database {})", host_display(host), params.dbname.value)
}

fn tls_request(params: &ConnParams) -> TlsRequest {
    TlsRequest {
        mode: params.sslmode.value,
        root_certs: params.sslrootcert.as_ref().map(|r| {
            if r.value == "system" {
                RootCerts::System
            } else {
                RootCerts::File(PathBuf::from(&r.value))
            }
        }),
        client_cert: match (&params.sslcert, &params.sslkey) {
            (Some(cert), Some(key)) => Some((cert.value.clone(), key.value.clone())),
            _ => None,
        },
        min_version: params.ssl_min_protocol_version.as_ref().map(|v| v.value),
        max_version: params.ssl_max_protocol_version.as_ref().map(|v| v.value),
    }
}

fn base_config(params: &ConnParams, host: &HostSpec) -> tokio_postgres::Config {
    let mut config = tokio_postgres::Config::new();
    if host.is_socket {
        config.host_path(host.host.as_deref().unwrap_or("/tmp"));
    } else {
        if let Some(name) = &host.host {
            config.host(name);
        }
        if let Some(addr) = host.hostaddr {
            config.hostaddr(addr);
            if host.host.is_none() {
                config.host(addr.to_string());
            }
        }
    }
    config
        .port(host.port)
        .user(&params.user.value)
        .dbname(&params.dbname.value)
        .application_name(&params.application_name.value);
    if let Some(password) = &host.password {
        config.password(password.value.expose());
    }
    // PGDATESTYLE, PGTZ and PGGEQO are not sent here: libpq sends them as startup parameters,
    // which tokio-postgres cannot, and as `options=-c ...` PgBouncer refuses the connection
    // ("unsupported startup parameter: options") where psql gets through. They are set in
    // every transaction instead (settings::set_local_statements).
    if let Some(options) = &params.options {
        config.options(&options.value);
    }
    if let Some(timeout) = &params.connect_timeout {
        config.connect_timeout(timeout.value);
    }
    config.keepalives(params.keepalives.enabled.value);
    if let Some(idle) = &params.keepalives.idle {
        config.keepalives_idle(idle.value);
    }
    if let Some(interval) = &params.keepalives.interval {
        config.keepalives_interval(interval.value);
    }
    if let Some(count) = &params.keepalives.count {
        config.keepalives_retries(count.value);
    }
    if let Some(timeout) = &params.keepalives.tcp_user_timeout {
        config.tcp_user_timeout(timeout.value);
    }
    config.channel_binding(match params.channel_binding.value {
        ChannelBinding::Disable => PgChannelBinding::Disable,
        ChannelBinding::Prefer => PgChannelBinding::Prefer,
        ChannelBinding::Require => PgChannelBinding::Require,
    });
    if params.sslnegotiation.value == SslNegotiation::Direct {
        config.ssl_negotiation(tokio_postgres::config::SslNegotiation::Direct);
    }
    config
}

/// Where the password came from, or why there was none: the password file missing, ignored
/// (libpq's permission rule) or without a matching line are three different fixes.
fn password_hint(params: &ConnParams, host: &HostSpec) -> String {
    if let Some(p) = &host.password {
        return format!("the password came {}", p.source.describe("password"));
    }
    let Some(file) = &params.passfile else {
        return "no password was sent: none was given (-d, PGPASSWORD, ~/.pgpass)".into();
    };
    let path = file.value.display();
    let why = match pgpass::load(&file.value) {
        PasswordFile::Missing => format!("password file {path} does not exist"),
        PasswordFile::Ignored { warning } => warning,
        PasswordFile::Loaded { .. } => format!(
            "password file {path} has no line for this host, port, database and user ({}:{}:{}:{})",
            host.host
                .clone()
                .or_else(|| host.hostaddr.map(|a| a.to_string()))
                .unwrap_or_else(|| "localhost".into()),
            host.port,
            params.dbname.value,
            params.user.value
        ),
    };
    format!("no password was sent: none was given (-d, PGPASSWORD) and {why}")
}

/// What to do about SQLSTATE 28000, from the server's message: a pg_hba.conf line that is missing
/// or rejects (its hostssl/hostnossl kind ties it to TLS or plain text), a role that does not
/// exist, or a client certificate the matching line asks for.
fn authorization_hint(message: &str, params: &ConnParams, host: &HostSpec) -> String {
    let user = &params.user.value;
    let database = &params.dbname.value;
    if message.contains("pg_hba.conf") {
        let host_name = host
            .host
            .clone()
            .or_else(|| host.hostaddr.map(|a| a.to_string()))
            .unwrap_or_else(|| "localhost".into());
        let tls = match params.sslmode.value {
            SslMode::Disable => {
                "pgplan connected without TLS (sslmode=disable): if the line for this user is \
                 hostssl, it requires TLS, so try sslmode=require"
            }
            SslMode::Allow | SslMode::Prefer if !host.is_socket => {
                "pgplan tried both with and without TLS"
            }
            SslMode::Allow | SslMode::Prefer => "pgplan connected over the Unix socket",
            _ => {
                "pgplan connected with TLS: if the line for this user is hostnossl, it forbids \
                 TLS, so try sslmode=prefer or sslmode=disable"
            }
        };
        return format!(
            "the server's pg_hba.conf has no line that lets user \"{user}\" connect to database \
             \"{database}\" from where pgplan connects ({host_name}), or a line there rejects it; \
             {tls}. Otherwise ask its administrator to add a line (host, hostssl or hostnossl) \
             for this client address, user and database, and reload the server"
        );
    }
    if message.contains("does not exist") {
        return format!(
            "user \"{user}\" ({}) is not a role on this server: give another with -U, or create \
             it (CREATE ROLE ... LOGIN)",
            params.user.source.describe("user")
        );
    }
    if message.contains("certificate") {
        return "the server's pg_hba.conf asks for a client certificate (cert, or clientcert=) on \
                this line: give one with sslcert and sslkey (PGSSLCERT, PGSSLKEY), over TLS"
            .into();
    }
    password_hint(params, host)
}

/// What kind of TLS failure an error is, for the hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TlsFailureKind {
    /// The server answered the TLS request with "no" (ssl=off).
    NotSupported,
    /// The server's certificate did not verify; `name` when only the host name did not match.
    Certificate {
        name: bool,
    },
    Other,
}

/// Walks an error's sources looking for a TLS failure: its plain-words cause and its kind.
fn tls_failure(error: &tokio_postgres::Error) -> Option<(String, TlsFailureKind)> {
    let rustls_error = |cause: &(dyn std::error::Error + 'static)| {
        cause.downcast_ref::<rustls::Error>().map(|tls| {
            let kind = if is_certificate_error(tls) {
                TlsFailureKind::Certificate {
                    name: is_name_mismatch(tls),
                }
            } else {
                TlsFailureKind::Other
            };
            (describe_tls_error(tls), kind)
        })
    };
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(found) = rustls_error(inner)
        {
            return Some(found);
        }
        if let Some(found) = rustls_error(cause) {
            return Some(found);
        }
        source = cause.source();
    }
    let text = error.to_string();
    // tokio-postgres's words when the server answers the TLS request with "N".
    if describe(error).contains("server does not support TLS") {
        return Some((
            "the server does not support TLS (its ssl setting is off)".into(),
            TlsFailureKind::NotSupported,
        ));
    }
    (text.contains("TLS") || text.contains("SSL")).then(|| (describe(error), TlsFailureKind::Other))
}

fn tls_cause(error: &tokio_postgres::Error) -> Option<String> {
    tls_failure(error).map(|(cause, _)| cause)
}

/// What to try after a TLS failure, for the sslmode and root certificate used.
fn tls_hint(kind: TlsFailureKind, params: &ConnParams, host: &HostSpec) -> String {
    let mode = params.sslmode.value;
    let mode_name = mode_name(mode);
    let root = params.sslrootcert.as_ref().map(|r| {
        format!(
            "root certificate {} ({})",
            r.value,
            r.source.describe("sslrootcert")
        )
    });
    let host_name = host
        .host
        .clone()
        .or_else(|| host.hostaddr.map(|a| a.to_string()))
        .unwrap_or_else(|| "localhost".into());
    match kind {
        TlsFailureKind::NotSupported => format!(
            "sslmode={mode_name} ({}) insists on TLS: turn ssl on in the server's configuration, \
             or use sslmode=prefer (TLS when offered) or sslmode=disable",
            params.sslmode.source.describe("sslmode")
        ),
        TlsFailureKind::Certificate { name: true } => format!(
            "sslmode=verify-full needs the certificate to name the host connected to ({host_name}) \
             in a subjectAltName, or in its Common Name when it has no subjectAltName of that kind: \
             connect by the name the certificate carries, or use sslmode=verify-ca to check the \
             chain only"
        ),
        TlsFailureKind::Certificate { name: false } => match (mode, root) {
            (SslMode::Allow | SslMode::Prefer | SslMode::Require, Some(root)) => format!(
                "sslmode={mode_name} verifies the certificate because a root certificate is \
                 available ({root}): fix it (it must be the root that issued the server's \
                 certificate), or drop sslrootcert (and ~/.postgresql/root.crt) to encrypt \
                 without verifying"
            ),
            (_, Some(root)) => format!(
                "checked against {root}: it must be the root that issued the server's certificate \
                 (or that certificate itself, when self-signed)"
            ),
            // Without a root only the certificate's key is used, to check the handshake.
            (_, None) => "no root certificate was given, so only the key in the server's \
                          certificate was used, and the server's handshake did not match it"
                .into(),
        },
        TlsFailureKind::Other => format!(
            "the TLS handshake failed; check ssl_min_protocol_version and \
             ssl_max_protocol_version against the server's, and the server's log{}",
            root.map(|r| format!(" (checked against {r})"))
                .unwrap_or_default()
        ),
    }
}

/// Classifies a failed host, adding the earlier attempt's failure (allow, prefer) to the cause, as
/// libpq reports each attempt.
fn classify_failure(
    failure: HostFailure,
    params: &ConnParams,
    host: &HostSpec,
    tried: &[String],
) -> ConnectError {
    let mut error = classify(failure.error, params, host, tried);
    if let Some((how, earlier)) = failure.earlier {
        let earlier = tls_cause(&earlier).unwrap_or_else(|| describe(&earlier));
        let note = format!("\n(the attempt {how} before it failed too: {earlier})");
        match &mut error {
            ConnectError::Unreachable { cause, .. }
            | ConnectError::Authentication { cause, .. }
            | ConnectError::Tls { cause, .. }
            | ConnectError::Server { cause, .. } => cause.push_str(&note),
            _ => {}
        }
    }
    error
}

fn classify(
    error: tokio_postgres::Error,
    params: &ConnParams,
    host: &HostSpec,
    tried: &[String],
) -> ConnectError {
    let target = target_display(host, params);
    if let Some(db) = error.as_db_error() {
        let cause = describe(&error);
        return match db.code().code() {
            "28P01" => ConnectError::Authentication {
                target,
                user: params.user.value.clone(),
                cause,
                hint: password_hint(params, host),
            },
            // invalid_authorization_specification: no password was checked, so where it came
            // from is beside the point. The server says why: pg_hba.conf, a role that does not
            // exist, or a client certificate it wanted.
            "28000" => ConnectError::Authentication {
                target,
                user: params.user.value.clone(),
                hint: authorization_hint(db.message(), params, host),
                cause,
            },
            "3D000" => ConnectError::NoDatabase {
                target,
                database: params.dbname.value.clone(),
            },
            // cannot_connect_now (starting up, shutting down, recovering), too_many_connections,
            // admin_shutdown/crash_shutdown.
            "57P03" | "53300" | "57P01" | "57P02" => ConnectError::Server {
                target,
                cause,
                transient: true,
            },
            _ => ConnectError::Server {
                target,
                cause,
                transient: false,
            },
        };
    }
    let text = describe(&error);
    if text.contains("password missing") {
        return ConnectError::Authentication {
            target,
            user: params.user.value.clone(),
            cause: "the server asked for a password".into(),
            hint: password_hint(params, host),
        };
    }
    // Failures the client itself decides during authentication (tokio-postgres's
    // Kind::Authentication): the server answered, so trying again cannot help.
    if let Some(cause) = text.strip_prefix("authentication error: ") {
        let hint = if cause.contains("channel binding") {
            format!(
                "channel_binding=require ({}) needs SCRAM authentication over TLS: use \
                 sslmode=require or stronger, and a scram-sha-256 password on the server",
                params.channel_binding.source.describe("channel_binding")
            )
        } else {
            password_hint(params, host)
        };
        return ConnectError::Authentication {
            target,
            user: params.user.value.clone(),
            cause: cause.to_owned(),
            hint,
        };
    }
    // A server before 17 reads a TLS hello as a broken startup packet and hangs up.
    if params.sslnegotiation.value == SslNegotiation::Direct
        && (tls_cause(&error).is_some() || text.contains("connection closed"))
    {
        return ConnectError::Tls {
            target,
            sslmode: mode_name(params.sslmode.value),
            cause: tls_cause(&error).unwrap_or(text),
            hint: format!(
                "sslnegotiation=direct ({}) needs PostgreSQL 17 or later on the server; \
                 use sslnegotiation=postgres for older servers",
                params.sslnegotiation.source.describe("sslnegotiation")
            ),
        };
    }
    if let Some((cause, kind)) = tls_failure(&error) {
        return ConnectError::Tls {
            target,
            sslmode: mode_name(params.sslmode.value),
            hint: tls_hint(kind, params, host),
            cause,
        };
    }
    ConnectError::Unreachable {
        target,
        cause: text,
        tried: tried.to_vec(),
    }
}

/// One attempt at one host with one TLS choice.
async fn attempt(
    config: &tokio_postgres::Config,
    tls: &Tls,
) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>, bool), tokio_postgres::Error> {
    match tls {
        Tls::None => {
            let (client, connection) = config.connect(NoTls).await?;
            Ok((
                client,
                tokio::spawn(async move {
                    let _ = connection.await;
                }),
                false,
            ))
        }
        Tls::Rustls(make) => {
            let (client, connection) = config.connect(make.clone()).await?;
            // With sslmode=prefer the server may have declined TLS; the facts query tells.
            Ok((
                client,
                tokio::spawn(async move {
                    let _ = connection.await;
                }),
                true,
            ))
        }
    }
}

/// A failed attempt at one host, with the failure of the attempt before it when the sslmode made
/// two (allow: plain text then TLS; prefer: TLS then plain text). libpq reports both, and the
/// first is often the one that explains the second.
struct HostFailure {
    error: tokio_postgres::Error,
    /// How the earlier attempt connected ("with TLS", "without TLS"), and how it failed.
    earlier: Option<(&'static str, tokio_postgres::Error)>,
}

impl From<tokio_postgres::Error> for HostFailure {
    fn from(error: tokio_postgres::Error) -> Self {
        HostFailure {
            error,
            earlier: None,
        }
    }
}

/// Connects to one host, applying libpq's sslmode fallbacks.
async fn connect_host(
    params: &ConnParams,
    host: &HostSpec,
    tls_config: &Option<Arc<rustls::ClientConfig>>,
) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>, Tls), HostFailure> {
    let mut config = base_config(params, host);
    // libpq never negotiates TLS over a Unix socket: the kernel already authenticates both ends.
    let rustls = match (host.is_socket, tls_config) {
        (false, Some(cfg)) => Some(Tls::Rustls(MakeTls::new(cfg.clone()))),
        _ => None,
    };
    match (params.sslmode.value, rustls) {
        (_, None) => {
            config.ssl_mode(PgSslMode::Disable);
            let (c, t, _) = attempt(&config, &Tls::None).await?;
            Ok((c, t, Tls::None))
        }
        (SslMode::Allow, Some(tls)) => {
            // Plain text first; TLS only when the server turns plain text away.
            config.ssl_mode(PgSslMode::Disable);
            match attempt(&config, &Tls::None).await {
                Ok((c, t, _)) => Ok((c, t, Tls::None)),
                Err(first) if first.code().map(|c| c.code()) == Some("28000") => {
                    config.ssl_mode(PgSslMode::Require);
                    let (c, t, _) = attempt(&config, &tls).await.map_err(|error| HostFailure {
                        error,
                        earlier: Some(("without TLS", first)),
                    })?;
                    Ok((c, t, tls))
                }
                Err(e) => Err(e.into()),
            }
        }
        (SslMode::Prefer, Some(tls)) => {
            // TLS when the server offers it. libpq also falls back to plain text when the TLS
            // handshake itself fails, and when pg_hba.conf turns the encrypted connection away
            // (a hostnossl-only entry).
            config.ssl_mode(PgSslMode::Prefer);
            match attempt(&config, &tls).await {
                Ok((c, t, _)) => Ok((c, t, tls)),
                Err(first)
                    if (first.as_db_error().is_none() && tls_cause(&first).is_some())
                        || first.code().map(|c| c.code()) == Some("28000") =>
                {
                    config.ssl_mode(PgSslMode::Disable);
                    let (c, t, _) =
                        attempt(&config, &Tls::None)
                            .await
                            .map_err(|error| HostFailure {
                                error,
                                earlier: Some(("with TLS", first)),
                            })?;
                    Ok((c, t, Tls::None))
                }
                Err(e) => Err(e.into()),
            }
        }
        (_, Some(tls)) => {
            config.ssl_mode(PgSslMode::Require);
            let (c, t, _) = attempt(&config, &tls).await?;
            Ok((c, t, tls))
        }
    }
}

/// Whether the server's facts satisfy `target_session_attrs`; `Err` says why not.
fn check_role(wanted: TargetSessionAttrs, facts: &ServerFacts) -> Result<(), String> {
    match wanted {
        TargetSessionAttrs::Any | TargetSessionAttrs::PreferStandby => Ok(()),
        TargetSessionAttrs::ReadWrite if facts.read_only => {
            Err("target_session_attrs=read-write, but the session is read-only".into())
        }
        TargetSessionAttrs::ReadOnly if !facts.read_only => {
            Err("target_session_attrs=read-only, but the session is read-write".into())
        }
        TargetSessionAttrs::Primary if facts.in_recovery => {
            Err("target_session_attrs=primary, but the server is a standby".into())
        }
        TargetSessionAttrs::Standby if !facts.in_recovery => {
            Err("target_session_attrs=standby, but the server is a primary".into())
        }
        _ => Ok(()),
    }
}

/// Tries each host in order (shuffled with load_balance_hosts=random) once.
async fn connect_once(
    params: &ConnParams,
    cancel: Option<&CancelRegistry>,
    limits: &Limits,
) -> Result<Connection, ConnectError> {
    let tls_config = tls_config_of(params)?;
    let mut hosts: Vec<&HostSpec> = params.hosts.iter().collect();
    if params.load_balance_hosts.value == LoadBalanceHosts::Random {
        hosts.shuffle(&mut rand::rng());
    }
    let wanted = params.target_session_attrs.value;
    // prefer-standby: a first pass for standbys only, then any server (libpq's order).
    let passes: &[bool] = if wanted == TargetSessionAttrs::PreferStandby {
        &[true, false]
    } else {
        &[false]
    };
    let session_settings: Vec<(&'static str, String)> = params
        .startup_settings
        .iter()
        .map(|(name, setting)| (*name, setting.value.clone()))
        .collect();
    let mut tried: Vec<String> = Vec::new();
    let mut last_error = None;
    for &standby_only in passes {
        for host in &hosts {
            let display = host_display(host);
            if !tried.contains(&display) {
                tried.push(display);
            }
            let (client, task, tls) = match timed_attempt(params, host, &tls_config, &tried).await {
                Ok(ok) => ok,
                Err(error) => {
                    // Only unreachable hosts move on to the next one; a server that answered
                    // and refused has said something the user must see.
                    if !matches!(error, ConnectError::Unreachable { .. }) {
                        return Err(error);
                    }
                    last_error = Some(error);
                    continue;
                }
            };
            if let Some(registry) = cancel {
                registry.register(CancelHandle {
                    token: client.cancel_token(),
                    tls: tls.clone(),
                    target: CancelTarget::of(host),
                });
            }
            let facts = match facts_within_limits(
                &client,
                limits,
                &params.application_name.value,
                &session_settings,
            )
            .await
            {
                Ok(facts) => facts,
                Err(e) => {
                    task.abort();
                    return Err(facts_failed(params, host, e));
                }
            };
            let role_check = if standby_only && !facts.in_recovery {
                Err("prefer-standby: looking for a standby first".to_owned())
            } else {
                check_role(wanted, &facts)
            };
            if let Err(reason) = role_check {
                task.abort();
                last_error = Some(ConnectError::WrongRole {
                    target: target_display(host, params),
                    reason,
                });
                continue;
            }
            let encrypted = facts.tls_version.is_some();
            return Ok(Connection {
                cancel: client.cancel_token(),
                cancel_target: CancelTarget::of(host),
                client,
                target: target_display(host, params),
                encrypted,
                application_name: params.application_name.value.clone(),
                session_settings,
                facts,
                tls,
                task,
            });
        }
    }
    Err(no_host_connected(params, last_error, tried))
}

/// The TLS configuration for the hosts, or why there can be none.
fn tls_config_of(params: &ConnParams) -> Result<Option<Arc<rustls::ClientConfig>>, ConnectError> {
    if params.sslpassword.is_some() {
        return Err(ConnectError::Setup(
            "sslpassword is set, but pgplan cannot decrypt an encrypted client key; \
             decrypt it (openssl pkey -in key.pem -out plain.pem) and point sslkey at the result"
                .into(),
        ));
    }
    // libpq ignores sslmode and the certificate files for Unix sockets, so a global
    // PGSSLMODE=verify-full must not stop local connections for want of a root certificate.
    if !params.hosts.iter().any(|host| !host.is_socket) {
        return Ok(None);
    }
    Ok(client_config(&tls_request(params))
        .map_err(|e| ConnectError::Setup(e.to_string()))?
        .map(Arc::new))
}

/// One host's attempt, within connect_timeout: libpq's connect_timeout bounds each host's
/// whole attempt (TCP, TLS, startup and authentication); unset or 0 waits as long as it takes.
async fn timed_attempt(
    params: &ConnParams,
    host: &HostSpec,
    tls_config: &Option<Arc<rustls::ClientConfig>>,
    tried: &[String],
) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>, Tls), ConnectError> {
    let attempt = connect_host(params, host, tls_config);
    let outcome = match &params.connect_timeout {
        Some(timeout) => tokio::time::timeout(timeout.value, attempt)
            .await
            .map_err(|_| timeout.value),
        None => Ok(attempt.await),
    };
    match outcome {
        Ok(result) => result.map_err(|e| classify_failure(e, params, host, tried)),
        Err(limit) => Err(ConnectError::Unreachable {
            target: target_display(host, params),
            cause: format!(
                "timeout expired (connect_timeout={} s, {})",
                limit.as_secs(),
                params
                    .connect_timeout
                    .as_ref()
                    .map(|t| t.source.describe("connect_timeout"))
                    .unwrap_or_default()
            ),
            tried: tried.to_vec(),
        }),
    }
}

/// The server accepted the connection; only the first query failed, most often waiting behind
/// a lock (lock_timeout, 55P03), running past statement_timeout or cancelled by Ctrl-C (57014).
fn facts_failed(params: &ConnParams, host: &HostSpec, cause: String) -> ConnectError {
    let timed_out = ["SQLSTATE 57014", "SQLSTATE 55P03"]
        .iter()
        .any(|code| cause.contains(code));
    ConnectError::Facts {
        target: target_display(host, params),
        what: if timed_out {
            "reading the server's facts timed out or was cancelled"
        } else {
            "reading the server's facts failed"
        },
        cause,
    }
}

/// The error when no host gave a connection: the last host's, and for an unreachable local
/// server every socket path looked at, not only the one chosen.
fn no_host_connected(
    params: &ConnParams,
    last_error: Option<ConnectError>,
    tried: Vec<String>,
) -> ConnectError {
    let mut error =
        last_error.unwrap_or_else(|| ConnectError::Setup("no host to connect to".into()));
    if let ConnectError::Unreachable { tried: t, .. } = &mut error {
        *t = tried;
        for path in &params.socket_paths_tried {
            let path = path.display().to_string();
            if !t
                .iter()
                .any(|x| path.starts_with(x.trim_start_matches("socket ")))
            {
                t.push(format!("socket {path}"));
            }
        }
    }
    error
}

/// Connects, retrying transient failures with full-jitter backoff (`options.retry`).
/// `on_retry` is told about each retry (for a warning on stderr).
pub async fn connect(
    params: &ConnParams,
    options: &ConnectOptions,
    mut on_retry: impl FnMut(&ConnectError, u32, Duration),
) -> Result<Connection, ConnectError> {
    let started = Instant::now();
    let mut attempt_number = 0;
    loop {
        let once = connect_once(params, options.cancel.as_ref(), &options.limits);
        // With retries, the total time bound also holds for an attempt that never gets an
        // answer (no connect_timeout): it ends when the budget is spent.
        let result = if options.retry.retries > 0 {
            let left = options.retry.budget.saturating_sub(started.elapsed());
            match tokio::time::timeout(left, once).await {
                Ok(result) => result,
                Err(_) => {
                    return Err(ConnectError::Unreachable {
                        target: params
                            .hosts
                            .first()
                            .map(|host| target_display(host, params))
                            .unwrap_or_default(),
                        cause: format!(
                            "timeout expired: no answer within the {} s that --retries allows \
                             in all (set connect_timeout to bound each attempt)",
                            options.retry.budget.as_secs()
                        ),
                        tried: params.hosts.iter().map(host_display).collect(),
                    });
                }
            }
        } else {
            once.await
        };
        match result {
            Ok(connection) => return Ok(connection),
            Err(error) if error.is_transient() => {
                attempt_number += 1;
                let delay = options.retry.delay(attempt_number, &mut rand::rng());
                if !options
                    .retry
                    .allows(attempt_number, started.elapsed(), delay)
                {
                    return Err(error);
                }
                on_retry(&error, attempt_number, delay);
                tokio::time::sleep(delay).await;
            }
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::Source;

    fn tcp_host(host: Option<&str>, hostaddr: Option<&str>) -> HostSpec {
        HostSpec {
            host: host.map(str::to_owned),
            hostaddr: hostaddr.map(|a| a.parse().unwrap()),
            port: 5432,
            is_socket: false,
            password: None,
            host_source: Source::Default,
            port_source: Source::Default,
        }
    }

    #[test]
    fn ipv6_targets_are_bracketed() {
        assert_eq!(host_display(&tcp_host(Some("::1"), None)), "[::1]:5432");
        assert_eq!(
            host_display(&tcp_host(None, Some("fe80::1"))),
            "[fe80::1]:5432"
        );
        assert_eq!(
            host_display(&tcp_host(Some("db.example.com"), None)),
            "db.example.com:5432"
        );
        assert_eq!(
            host_display(&tcp_host(None, Some("127.0.0.1"))),
            "127.0.0.1:5432"
        );
    }
}
