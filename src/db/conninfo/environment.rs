//! The libpq environment and the service file: `PG*` variables, the account's home, the socket
//! directories, and `conninfo_add_defaults`'s filling of what nothing explicit set.

use super::*;

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

    pub(super) fn var(&self, name: &str) -> Option<&str> {
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
pub(super) fn current_account() -> Option<(String, PathBuf)> {
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

pub(super) fn apply_service(
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

pub(super) fn apply_environment(gathered: &mut Gathered, env: &Environment) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::testing::*;

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
}
