//! Gathering every source's values in libpq's order (`conninfo_array_parse`,
//! `conninfo_add_defaults`): explicit flags and `-d`, then the service, then the environment;
//! each value remembers where it came from.

use super::*;

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

/// A raw value and its source, before interpretation. Deliberately not `Debug`: it may hold a
/// password.
pub(super) struct Given {
    pub(super) value: String,
    pub(super) source: Source,
}

impl Given {
    pub(super) fn origin(&self, keyword: &str) -> String {
        self.source.describe(keyword)
    }
}

/// The option array libpq builds before `pqConnectOptions2` interprets it: at most one raw value
/// per keyword. An empty value is still a value: it blocks the service file and the environment,
/// exactly as in libpq.
#[derive(Default)]
pub(super) struct Gathered {
    pub(super) values: HashMap<&'static str, Given>,
}

impl Gathered {
    /// Sets a value, overriding any earlier one.
    pub(super) fn set(&mut self, keyword: &'static str, value: String, source: Source) {
        self.values.insert(keyword, Given { value, source });
    }

    /// Sets a value only when nothing set one before.
    pub(super) fn fill(&mut self, keyword: &'static str, value: String, source: Source) {
        self.values
            .entry(keyword)
            .or_insert(Given { value, source });
    }

    pub(super) fn get(&self, keyword: &str) -> Option<&Given> {
        self.values.get(keyword)
    }

    /// The value unless it is missing or empty; libpq treats an empty host, port, user, ... as
    /// not given at all.
    pub(super) fn nonempty(&self, keyword: &str) -> Option<&Given> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::testing::*;
    use std::fs;

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
}
