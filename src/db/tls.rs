//! TLS with libpq's `sslmode` semantics, on rustls.
//!
//! libpq's rules, which pgplan follows:
//! - `disable` never encrypts; `allow` tries plain text first and TLS if the server insists;
//!   `prefer` tries TLS first and falls back to plain text; `require` insists on TLS.
//! - `allow`, `prefer` and `require` verify the server's certificate chain only when a root
//!   certificate is available (an explicit `sslrootcert`, or `~/.postgresql/root.crt`): then they
//!   behave like `verify-ca`. Without one they accept any certificate (encryption without
//!   authentication, as libpq does).
//! - `verify-ca` verifies the chain; `verify-full` also checks that the certificate names the
//!   host connected to. Both fail when no root certificate is available.
//! - `sslrootcert=system` uses the operating system's trusted roots and, as in libpq 16+, only
//!   with `verify-full` (a public CA vouches for anyone's name, so checking the name is the point).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, DigitallySignedStruct, Error as RustlsError, RootCertStore, SignatureScheme,
};

use super::conninfo::SslMode;

/// Where trusted root certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCerts {
    /// A PEM file (`sslrootcert=FILE`, or `~/.postgresql/root.crt` when it exists).
    File(PathBuf),
    /// The operating system's trust store (`sslrootcert=system`).
    System,
}

/// What the TLS layer must do, derived from the connection parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsRequest {
    pub mode: SslMode,
    pub root_certs: Option<RootCerts>,
    /// Client certificate and key (PEM files), when both are available.
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Encryption without authentication: any certificate is accepted.
    None,
    /// The chain must lead to a trusted root (libpq's verify-ca).
    Chain,
    /// The chain, and the certificate must name the host (libpq's verify-full).
    ChainAndHostName,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(
        "sslmode={mode} verifies the server's certificate, but no root certificate is available \
         ({detail}); set sslrootcert=FILE (PGSSLROOTCERT), use sslrootcert=system for the \
         operating system's trusted roots, or choose sslmode=require to encrypt without verifying"
    )]
    NoRootCert { mode: &'static str, detail: String },
    #[error(
        "sslrootcert=system needs sslmode=verify-full (got {mode}): a public certificate \
         authority vouches for anyone's name, so the name is what must be checked"
    )]
    SystemRootsNeedVerifyFull { mode: &'static str },
    #[error("root certificate file {path}: {detail}")]
    RootCertFile { path: PathBuf, detail: String },
    #[error("the operating system's trusted roots could not be loaded: {0}")]
    SystemRoots(String),
    #[error("client certificate {path}: {detail}")]
    ClientCert { path: PathBuf, detail: String },
    #[error(
        "private key file {path} has group or world access; permissions should be u=rw (0600) \
         or less (chmod 0600 {path})"
    )]
    KeyPermissions { path: PathBuf },
    #[error("TLS setup: {0}")]
    Rustls(#[from] RustlsError),
}

pub fn mode_name(mode: SslMode) -> &'static str {
    match mode {
        SslMode::Disable => "disable",
        SslMode::Allow => "allow",
        SslMode::Prefer => "prefer",
        SslMode::Require => "require",
        SslMode::VerifyCa => "verify-ca",
        SslMode::VerifyFull => "verify-full",
    }
}

impl TlsRequest {
    /// What will be verified, or why the request cannot work.
    pub fn verification(&self) -> Result<Verification, TlsError> {
        let mode = mode_name(self.mode);
        if self.root_certs == Some(RootCerts::System) && self.mode != SslMode::VerifyFull {
            return Err(TlsError::SystemRootsNeedVerifyFull { mode });
        }
        Ok(match (self.mode, &self.root_certs) {
            (SslMode::VerifyFull, Some(_)) => Verification::ChainAndHostName,
            (SslMode::VerifyCa, Some(_)) => Verification::Chain,
            (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
                return Err(TlsError::NoRootCert {
                    mode,
                    detail: "no sslrootcert given and ~/.postgresql/root.crt does not exist".into(),
                });
            }
            (_, Some(_)) => Verification::Chain,
            (_, None) => Verification::None,
        })
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn load_roots(root: &RootCerts) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    match root {
        RootCerts::File(path) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| TlsError::RootCertFile {
                    path: path.clone(),
                    detail: e.to_string(),
                })?
                .collect::<Result<_, _>>()
                .map_err(|e| TlsError::RootCertFile {
                    path: path.clone(),
                    detail: e.to_string(),
                })?;
            if certs.is_empty() {
                return Err(TlsError::RootCertFile {
                    path: path.clone(),
                    detail: "holds no PEM certificate".into(),
                });
            }
            for cert in certs {
                store.add(cert).map_err(|e| TlsError::RootCertFile {
                    path: path.clone(),
                    detail: e.to_string(),
                })?;
            }
        }
        RootCerts::System => {
            let loaded = rustls_native_certs::load_native_certs();
            if loaded.certs.is_empty() {
                let detail = loaded
                    .errors
                    .iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(TlsError::SystemRoots(if detail.is_empty() {
                    "no certificates found".into()
                } else {
                    detail
                }));
            }
            let (_added, _ignored) = store.add_parsable_certificates(loaded.certs);
        }
    }
    Ok(store)
}

fn check_key_permissions(path: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // reading it reports the real problem
    };
    // libpq: 0600 or less, or 0640 or less when owned by root (a key shared through a group).
    let mode = meta.mode() & 0o777;
    let allowed = if meta.uid() == 0 { 0o640 } else { 0o600 };
    if mode & !allowed != 0 {
        return Err(TlsError::KeyPermissions {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// Builds the rustls configuration for a request. `None` for `sslmode=disable`.
pub fn client_config(request: &TlsRequest) -> Result<Option<rustls::ClientConfig>, TlsError> {
    if request.mode == SslMode::Disable {
        return Ok(None);
    }
    let verification = request.verification()?;
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let verifier: Arc<dyn ServerCertVerifier> = match (&request.root_certs, verification) {
        (Some(root), Verification::Chain | Verification::ChainAndHostName) => {
            let roots = Arc::new(load_roots(root)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| TlsError::Rustls(RustlsError::General(e.to_string())))?;
            Arc::new(LibpqVerifier {
                inner: Some(webpki),
                check_name: verification == Verification::ChainAndHostName,
                provider: provider.clone(),
            })
        }
        _ => Arc::new(LibpqVerifier {
            inner: None,
            check_name: false,
            provider: provider.clone(),
        }),
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match &request.client_cert {
        Some((cert_path, key_path)) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
                .and_then(|iter| iter.collect::<Result<_, _>>())
                .map_err(|e| TlsError::ClientCert {
                    path: cert_path.clone(),
                    detail: e.to_string(),
                })?;
            check_key_permissions(key_path)?;
            let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| TlsError::ClientCert {
                path: key_path.clone(),
                detail: e.to_string(),
            })?;
            builder.with_client_auth_cert(certs, key)?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Some(config))
}

/// Verifies as libpq does for the mode: the full WebPKI check, the chain without the name
/// (verify-ca: a private CA's certificates often name something else), or nothing at all
/// (encryption only). Handshake signatures are always checked, so the session is bound to the
/// certificate the server presented.
#[derive(Debug)]
struct LibpqVerifier {
    inner: Option<Arc<WebPkiServerVerifier>>,
    check_name: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for LibpqVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, RustlsError> {
        let Some(inner) = &self.inner else {
            return Ok(ServerCertVerified::assertion());
        };
        match inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Ok(ok) => Ok(ok),
            Err(RustlsError::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(mode: SslMode, root: Option<RootCerts>) -> TlsRequest {
        TlsRequest {
            mode,
            root_certs: root,
            client_cert: None,
        }
    }

    #[test]
    fn verification_follows_libpq() {
        let file = Some(RootCerts::File("root.crt".into()));
        assert_eq!(
            request(SslMode::Require, None).verification().unwrap(),
            Verification::None
        );
        assert_eq!(
            request(SslMode::Require, file.clone())
                .verification()
                .unwrap(),
            Verification::Chain
        );
        assert_eq!(
            request(SslMode::Prefer, file.clone())
                .verification()
                .unwrap(),
            Verification::Chain
        );
        assert_eq!(
            request(SslMode::VerifyCa, file.clone())
                .verification()
                .unwrap(),
            Verification::Chain
        );
        assert_eq!(
            request(SslMode::VerifyFull, file).verification().unwrap(),
            Verification::ChainAndHostName
        );
        assert!(matches!(
            request(SslMode::VerifyCa, None).verification(),
            Err(TlsError::NoRootCert { .. })
        ));
        assert!(matches!(
            request(SslMode::Require, Some(RootCerts::System)).verification(),
            Err(TlsError::SystemRootsNeedVerifyFull { .. })
        ));
        assert_eq!(
            request(SslMode::VerifyFull, Some(RootCerts::System))
                .verification()
                .unwrap(),
            Verification::ChainAndHostName
        );
    }

    #[test]
    fn disable_builds_nothing() {
        assert!(
            client_config(&request(SslMode::Disable, None))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_missing_root_file_is_named() {
        let err = client_config(&request(
            SslMode::VerifyCa,
            Some(RootCerts::File("/nonexistent/root.crt".into())),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/root.crt"), "{err}");
    }
}
