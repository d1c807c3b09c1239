//! Interpreting the gathered values as libpq's `pqConnectOptions2` and its SSL setup do: each
//! keyword's value checked against what libpq accepts, and the keywords pgplan cannot honour
//! refused with why.

use super::*;

/// A chosen value among `choices`, or the default when unset. An empty value is invalid, as in
/// libpq (which validates these keywords whenever they are non-NULL).
pub(super) fn choice<T: Copy>(
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

pub(super) fn invalid_value(
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
pub(super) fn parse_c_int(text: &str) -> Option<i32> {
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

pub(super) fn int_setting(
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
pub(super) fn parse_keepalives(text: &str) -> Option<bool> {
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

pub(super) fn unsupported(
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
pub(super) fn reject_unsupported(
    gathered: &Gathered,
    sslmode: SslMode,
) -> Result<(), ConnInfoError> {
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

pub(super) fn tls_version(
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

pub(super) fn duration_setting(
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

pub(super) fn interpret(
    gathered: &Gathered,
    service: Option<Setting<String>>,
    env: &Environment,
    mut warnings: Vec<String>,
) -> Result<ConnParams, ConnInfoError> {
    // The steps keep this order on purpose: of two bad values, the one checked first is the
    // one reported.
    let (user, dbname) = identity(gathered, env)?;

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
    let TlsModes {
        sslmode,
        sslnegotiation,
        ssl_min_protocol_version,
        ssl_max_protocol_version,
    } = tls_modes(gathered, &mut warnings)?;
    let certmode = certificate_and_gss_modes(gathered)?;
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

    let connect_timeout = connect_timeout(gathered)?;
    let keepalives = keepalives(gathered)?;

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
    let startup_settings = startup_settings(env);

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

/// The user (the operating-system account's name by default) and the database (the user's name
/// by default), as libpq defaults them.
fn identity(
    gathered: &Gathered,
    env: &Environment,
) -> Result<(Setting<String>, Setting<String>), ConnInfoError> {
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
    Ok((user, dbname))
}

/// What the TLS handshake may be: `sslmode`, `sslnegotiation` and the protocol versions.
struct TlsModes {
    sslmode: Setting<SslMode>,
    sslnegotiation: Setting<SslNegotiation>,
    ssl_min_protocol_version: Option<Setting<TlsVersion>>,
    ssl_max_protocol_version: Option<Setting<TlsVersion>>,
}

fn tls_modes(gathered: &Gathered, warnings: &mut Vec<String>) -> Result<TlsModes, ConnInfoError> {
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

    Ok(TlsModes {
        sslmode,
        sslnegotiation,
        ssl_min_protocol_version,
        ssl_max_protocol_version,
    })
}

/// `sslcertmode` and `gssencmode`, refused where pgplan cannot do what they require.
fn certificate_and_gss_modes(gathered: &Gathered) -> Result<Setting<SslCertMode>, ConnInfoError> {
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
    Ok(certmode)
}

fn connect_timeout(gathered: &Gathered) -> Result<Option<Setting<Duration>>, ConnInfoError> {
    // libpq insists on at least two seconds, because its timer has one-second resolution; zero or
    // negative means wait forever.
    Ok(int_setting(gathered, "connect_timeout", " of seconds")?
        .filter(|setting| setting.value > 0)
        .map(|setting| {
            let seconds = u64::try_from(setting.value.max(2)).unwrap_or(2);
            Setting::new(Duration::from_secs(seconds), setting.source)
        }))
}

fn keepalives(gathered: &Gathered) -> Result<Keepalives, ConnInfoError> {
    Ok(Keepalives {
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
    })
}

/// `PGDATESTYLE`, `PGTZ` and `PGGEQO`: libpq sends them at startup, pgplan sets them in each of
/// its transactions. `default` means the server's own.
fn startup_settings(env: &Environment) -> Vec<(&'static str, Setting<String>)> {
    STARTUP_SETTING_VARS
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
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::testing::*;

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
}
