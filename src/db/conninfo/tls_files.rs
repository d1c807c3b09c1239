//! The TLS files: `sslrootcert`, `sslcert` and `sslkey`, explicit or libpq's defaults under
//! `~/.postgresql/`, found and checked the way libpq's SSL setup finds them.

use super::*;

/// Whether a certificate or key file is there, as libpq's stat() checks it (following symlinks).
pub(super) fn existing_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok()
}

pub(super) struct TlsFiles {
    pub(super) sslrootcert: Option<Setting<String>>,
    pub(super) sslcert: Option<Setting<PathBuf>>,
    pub(super) sslkey: Option<Setting<PathBuf>>,
}

/// Resolves the certificate and key files as libpq's `initialize_SSL` does, failing the same
/// way it would when the connection starts.
pub(super) fn resolve_tls_files(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::testing::*;
    use std::fs;

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
}
