//! The password of each host: the explicit one, else the password file's match for it, found
//! as libpq's `passwordFromFile` finds it.

use super::*;

/// The hostname a password-file line must match for this slot: the host (else the hostaddr),
/// with `localhost` standing for an empty host or the default socket directory (libpq compares
/// against its one compiled-in directory; any of pgplan's candidates counts here).
pub(super) fn password_file_host(slot: &HostSlot, env: &Environment) -> String {
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

pub(super) fn lookup_passwords(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::testing::*;

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
}
