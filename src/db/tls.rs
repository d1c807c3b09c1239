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
//! - A server certificate that is itself one of the trusted roots (the documentation's
//!   self-signed recipe, the same file given as `sslrootcert`) is trusted as OpenSSL trusts it;
//!   its validity dates and, for `verify-full`, its name are still checked.
//! - An X.509 version 1 server certificate (OpenSSL 3.0's output for the documentation's
//!   `openssl x509 -req -CA` recipe), which WebPKI cannot parse, is verified in `super::x509` as
//!   OpenSSL verifies a chain of one; handshake signatures are checked there for every certificate.
//! - `verify-full` matches the host against the subjectAltNames of the host's kind (DNS name or
//!   IP address) and, when the certificate has none of that kind, against the Common Name.
//! - `ssl_min_protocol_version` / `ssl_max_protocol_version` bound the TLS versions offered.
//! - ALPN `postgresql` is offered, as libpq 17 does; `sslnegotiation=direct` needs it.
//! - SCRAM channel binding (`tls-server-end-point`) hashes the server certificate with the hash of
//!   its signature algorithm (RFC 5929), which the connector here computes itself.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, DigitallySignedStruct, Error as RustlsError, RootCertStore, SignatureScheme,
};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use x509_cert::Certificate;
use x509_cert::der::{Decode, Tag, Tagged, asn1::ObjectIdentifier};
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;

use super::conninfo::{SslMode, TlsVersion};
use super::x509::{HANDSHAKE_SCHEMES, is_v3, verify_handshake_signature, verify_v1_leaf};

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
    /// `ssl_min_protocol_version` / `ssl_max_protocol_version`; `None` is no bound.
    pub min_version: Option<TlsVersion>,
    pub max_version: Option<TlsVersion>,
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
         or less, or u=rw,g=r (0640) or less if owned by root (chmod 0600 {path})"
    )]
    KeyPermissions { path: PathBuf },
    #[error(
        "no TLS version pgplan speaks (TLSv1.2, TLSv1.3) lies within ssl_min_protocol_version={min} \
         and ssl_max_protocol_version={max}"
    )]
    NoProtocolVersion { min: String, max: String },
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

/// The trusted roots as a store, and each root's DER for recognising a server certificate that
/// is itself a trusted root.
fn load_roots(root: &RootCerts) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), TlsError> {
    let mut store = RootCertStore::empty();
    let mut ders = Vec::new();
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
                store
                    .add(cert.clone())
                    .map_err(|e| TlsError::RootCertFile {
                        path: path.clone(),
                        detail: e.to_string(),
                    })?;
                ders.push(cert);
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
            ders.clone_from(&loaded.certs);
            let (_added, _ignored) = store.add_parsable_certificates(loaded.certs);
        }
    }
    Ok((store, ders))
}

/// The protocol versions within libpq's bounds that rustls speaks, newest first.
fn protocol_versions(
    request: &TlsRequest,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, TlsError> {
    let within = |version: TlsVersion| {
        request.min_version.is_none_or(|min| version >= min)
            && request.max_version.is_none_or(|max| version <= max)
    };
    let versions: Vec<_> = [
        (TlsVersion::Tls1_3, &rustls::version::TLS13),
        (TlsVersion::Tls1_2, &rustls::version::TLS12),
    ]
    .into_iter()
    .filter(|(version, _)| within(*version))
    .map(|(_, supported)| supported)
    .collect();
    if versions.is_empty() {
        let bound = |v: Option<TlsVersion>| v.map(|v| v.to_string()).unwrap_or_default();
        return Err(TlsError::NoProtocolVersion {
            min: bound(request.min_version),
            max: bound(request.max_version),
        });
    }
    Ok(versions)
}

fn check_key_permissions(path: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // reading it reports the real problem
    };
    // libpq (fe-secure-openssl.c) forbids group and world bits only: no group or world access
    // at all for a key not owned by root, and for a root-owned key (shared through a group) no
    // group write or execute and no world access. The owner's own bits are the owner's affair,
    // so 0700 is accepted as libpq accepts it.
    let forbidden = if meta.uid() == 0 { 0o037 } else { 0o077 };
    if meta.mode() & forbidden != 0 {
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
        .with_protocol_versions(&protocol_versions(request)?)?;
    let verifier: Arc<dyn ServerCertVerifier> = match (&request.root_certs, verification) {
        (Some(root), Verification::Chain | Verification::ChainAndHostName) => {
            let (roots, root_ders) = load_roots(root)?;
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| TlsError::Rustls(RustlsError::General(e.to_string())))?;
            Arc::new(LibpqVerifier {
                inner: Some(webpki),
                roots: parse_roots(&root_ders),
                root_ders,
                check_name: verification == Verification::ChainAndHostName,
            })
        }
        _ => Arc::new(LibpqVerifier {
            inner: None,
            root_ders: Vec::new(),
            roots: Vec::new(),
            check_name: false,
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
    let mut config = config;
    // libpq 17 offers ALPN "postgresql" on every TLS connection; a server of 17 or later
    // refuses a direct TLS connection (sslnegotiation=direct) without it.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Some(config))
}

/// Verifies as libpq does for the mode: the full WebPKI check, the chain without the name
/// (verify-ca: a private CA's certificates often name something else), or nothing at all
/// (encryption only). Handshake signatures are always checked, so the session is bound to the
/// certificate the server presented.
#[derive(Debug)]
struct LibpqVerifier {
    inner: Option<Arc<WebPkiServerVerifier>>,
    /// The trusted roots as given, to recognise a server certificate that is one of them.
    root_ders: Vec<CertificateDer<'static>>,
    /// The same roots parsed, to verify a version 1 server certificate WebPKI cannot read.
    roots: Vec<Certificate>,
    check_name: bool,
}

/// The roots x509-cert can parse; one it cannot is still in WebPKI's store.
fn parse_roots(ders: &[CertificateDer<'_>]) -> Vec<Certificate> {
    ders.iter()
        .filter_map(|der| Certificate::from_der(der.as_ref()).ok())
        .collect()
}

fn bad_certificate(error: CertificateError) -> RustlsError {
    RustlsError::InvalidCertificate(error)
}

/// Checks the validity dates of a certificate trusted as-is (WebPKI checks them for a chain).
fn check_validity(cert: &Certificate, now: UnixTime) -> Result<(), RustlsError> {
    let validity = &cert.tbs_certificate.validity;
    let now = now.as_secs();
    if now < validity.not_before.to_unix_duration().as_secs() {
        return Err(bad_certificate(CertificateError::NotValidYet));
    }
    if now > validity.not_after.to_unix_duration().as_secs() {
        return Err(bad_certificate(CertificateError::Expired));
    }
    Ok(())
}

const OID_COMMON_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.3");
const OID_SUBJECT_ALT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");

/// libpq's host name match for a Common Name: case-insensitive, and a leading `*.` stands for
/// exactly one label (never an IP address).
fn common_name_matches(pattern: &str, host: &str, host_is_ip: bool) -> bool {
    if pattern.eq_ignore_ascii_case(host) {
        return true;
    }
    match pattern.strip_prefix('*') {
        Some(suffix) if suffix.starts_with('.') && !host_is_ip => {
            host.len() > suffix.len()
                && host[host.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
                && !host[..host.len() - suffix.len()].contains('.')
        }
        _ => false,
    }
}

/// Whether the certificate names the host, as libpq's verify-full decides: the
/// subjectAltNames (checked by WebPKI), and the Common Name only when the certificate has no
/// subjectAltName of the host's kind (dNSName for a name, iPAddress for an address).
fn check_host_name(
    der: &CertificateDer<'_>,
    cert: &Certificate,
    server_name: &ServerName<'_>,
) -> Result<(), RustlsError> {
    // A version 1 certificate has no extensions, so no subjectAltName: only its Common Name
    // can name the host (and WebPKI cannot parse it to look).
    let san_error = if is_v3(cert) {
        let parsed = rustls::server::ParsedCertificate::try_from(der)?;
        match rustls::client::verify_server_name(&parsed, server_name) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        }
    } else {
        bad_certificate(CertificateError::NotValidForName)
    };
    let (host, host_is_ip) = match server_name {
        ServerName::DnsName(name) => (name.as_ref().to_owned(), false),
        ServerName::IpAddress(addr) => (std::net::IpAddr::from(*addr).to_string(), true),
        _ => return Err(san_error),
    };
    let tbs = &cert.tbs_certificate;
    let has_san_of_host_kind = tbs
        .extensions
        .iter()
        .flatten()
        .filter(|ext| ext.extn_id == OID_SUBJECT_ALT_NAME)
        .filter_map(|ext| SubjectAltName::from_der(ext.extn_value.as_bytes()).ok())
        .flat_map(|san| san.0)
        .any(|name| match name {
            GeneralName::DnsName(_) => !host_is_ip,
            GeneralName::IpAddress(_) => host_is_ip,
            _ => false,
        });
    if has_san_of_host_kind {
        return Err(san_error);
    }
    let common_names = tbs
        .subject
        .0
        .iter()
        .flat_map(|rdn| rdn.0.iter())
        .filter(|attr| attr.oid == OID_COMMON_NAME)
        .filter(|attr| {
            matches!(
                attr.value.tag(),
                Tag::Utf8String | Tag::PrintableString | Tag::Ia5String
            )
        })
        .filter_map(|attr| std::str::from_utf8(attr.value.value()).ok());
    for common_name in common_names {
        if common_name_matches(common_name, &host, host_is_ip) {
            return Ok(());
        }
    }
    Err(san_error)
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
        let parse = || {
            Certificate::from_der(end_entity.as_ref())
                .map_err(|_| bad_certificate(CertificateError::BadEncoding))
        };
        // OpenSSL, and so libpq, trusts a certificate found among the roots as it is; WebPKI
        // refuses it as an end entity (CaUsedAsEndEntity for the usual CA:TRUE self-signed one).
        if self.root_ders.iter().any(|root| root == end_entity) {
            let cert = parse()?;
            check_validity(&cert, now)?;
            if self.check_name {
                check_host_name(end_entity, &cert, server_name)?;
            }
            return Ok(ServerCertVerified::assertion());
        }
        // WebPKI reads only version 3 certificates; OpenSSL 3.0 writes version 1 for the
        // documentation's `openssl x509 -req -CA root.crt` recipe, and libpq accepts it.
        let cert = parse()?;
        if !is_v3(&cert) {
            verify_v1_leaf(
                end_entity.as_ref(),
                &cert,
                &self.roots,
                !intermediates.is_empty(),
                now,
                check_validity,
            )?;
            if self.check_name {
                check_host_name(end_entity, &cert, server_name)?;
            }
            return Ok(ServerCertVerified::assertion());
        }
        match inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Ok(ok) => Ok(ok),
            Err(RustlsError::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            // The chain is good but no subjectAltName matched: libpq falls back to the Common
            // Name when the certificate has no subjectAltName of the host's kind.
            Err(
                e @ RustlsError::InvalidCertificate(
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. },
                ),
            ) => match check_host_name(end_entity, &cert, server_name) {
                Ok(()) => Ok(ServerCertVerified::assertion()),
                Err(_) => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        // Checked with ring against the key x509-cert reads, not through WebPKI, which refuses
        // to parse a version 1 certificate even when nothing else about it is verified.
        verify_handshake_signature(message, cert.as_ref(), dss.scheme, dss.signature(), false)?;
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        verify_handshake_signature(message, cert.as_ref(), dss.scheme, dss.signature(), true)?;
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        HANDSHAKE_SCHEMES.to_vec()
    }
}

/// A rustls failure in plain words, as libpq words OpenSSL's ("certificate verify failed:
/// ..."), instead of rustls's debug text (`Other(OtherError(CaUsedAsEndEntity))`).
pub fn describe_tls_error(error: &RustlsError) -> String {
    match error {
        RustlsError::InvalidCertificate(cert) => {
            format!(
                "certificate verify failed: {}",
                describe_certificate_error(cert)
            )
        }
        RustlsError::AlertReceived(alert) => {
            format!("the server ended the TLS handshake with alert {alert:?}")
        }
        RustlsError::PeerIncompatible(why) => {
            format!("the server and pgplan have no TLS version or algorithm in common ({why:?})")
        }
        RustlsError::General(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Whether the error is the server's certificate failing verification.
pub fn is_certificate_error(error: &RustlsError) -> bool {
    matches!(error, RustlsError::InvalidCertificate(_))
}

/// Whether the certificate failed only for not naming the host.
pub fn is_name_mismatch(error: &RustlsError) -> bool {
    matches!(
        error,
        RustlsError::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
        )
    )
}

fn describe_certificate_error(error: &CertificateError) -> String {
    match error {
        CertificateError::UnknownIssuer => {
            "the server's certificate was not issued by the trusted root certificate".into()
        }
        CertificateError::BadSignature => "the certificate's signature does not verify".into(),
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            "the server's certificate has expired".into()
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "the server's certificate is not valid yet".into()
        }
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            "the server's certificate does not name the host connected to".into()
        }
        CertificateError::BadEncoding => "the server's certificate could not be parsed".into(),
        CertificateError::UnhandledCriticalExtension => {
            "the certificate has a critical extension pgplan does not know".into()
        }
        CertificateError::Revoked => "the server's certificate has been revoked".into(),
        CertificateError::Other(other) => {
            // WebPKI's own errors arrive here under their variant names.
            let text = other.0.to_string();
            match text.as_str() {
                "CaUsedAsEndEntity" => "the server's certificate is a CA certificate (CA:TRUE), \
                     which OpenSSL accepts as the server's only when it is itself the trusted \
                     root; give it as sslrootcert, or issue the server a certificate signed by it"
                    .into(),
                "EndEntityUsedAsCa" => {
                    "a certificate in the chain is not a CA certificate, yet issued another".into()
                }
                "UnsupportedCertVersion" => {
                    "the certificate is not X.509 version 3; reissue it as version 3".into()
                }
                "RequiredEkuNotFound" => {
                    "the server's certificate is not for TLS servers (extendedKeyUsage)".into()
                }
                _ => text,
            }
        }
        other => format!("{other:?}"),
    }
}

/// tokio-postgres's TLS hooks on rustls, with SCRAM channel binding that works: the
/// `tls-server-end-point` hash must be taken with the hash of the certificate's signature
/// algorithm (RFC 5929 §4.1; MD5 and SHA-1 become SHA-256), as the server computes it.
#[derive(Clone)]
pub struct MakeTls {
    config: Arc<rustls::ClientConfig>,
}

impl MakeTls {
    pub fn new(config: Arc<rustls::ClientConfig>) -> Self {
        Self { config }
    }
}

impl<S> tokio_postgres::tls::MakeTlsConnect<S> for MakeTls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type TlsConnect = TlsConnect;
    type Error = rustls::pki_types::InvalidDnsNameError;

    fn make_tls_connect(&mut self, hostname: &str) -> Result<TlsConnect, Self::Error> {
        Ok(TlsConnect {
            server_name: ServerName::try_from(hostname)?.to_owned(),
            connector: tokio_rustls::TlsConnector::from(self.config.clone()),
        })
    }
}

pub struct TlsConnect {
    server_name: ServerName<'static>,
    connector: tokio_rustls::TlsConnector,
}

type ConnectFuture<S> = Pin<Box<dyn Future<Output = io::Result<TlsStream<S>>> + Send>>;

impl<S> tokio_postgres::tls::TlsConnect<S> for TlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type Error = io::Error;
    type Future = ConnectFuture<S>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let stream = self.connector.connect(self.server_name, stream).await?;
            Ok(TlsStream(stream))
        })
    }
}

pub struct TlsStream<S>(tokio_rustls::client::TlsStream<S>);

/// The `tls-server-end-point` channel binding data of a server certificate: its hash with the
/// signature algorithm's hash. `None` for algorithms the server cannot bind with either
/// (Ed25519, RSASSA-PSS without a known hash).
pub fn tls_server_end_point(cert_der: &[u8]) -> Option<Vec<u8>> {
    let cert = Certificate::from_der(cert_der).ok()?;
    let oid = cert.signature_algorithm.oid.to_string();
    let algorithm = match oid.as_str() {
        // md5WithRSAEncryption, sha1WithRSAEncryption, sha256WithRSAEncryption,
        // ecdsa-with-SHA1, ecdsa-with-SHA256
        "1.2.840.113549.1.1.4"
        | "1.2.840.113549.1.1.5"
        | "1.2.840.113549.1.1.11"
        | "1.2.840.10045.4.1"
        | "1.2.840.10045.4.3.2" => &ring::digest::SHA256,
        // sha384WithRSAEncryption, ecdsa-with-SHA384
        "1.2.840.113549.1.1.12" | "1.2.840.10045.4.3.3" => &ring::digest::SHA384,
        // sha512WithRSAEncryption, ecdsa-with-SHA512
        "1.2.840.113549.1.1.13" | "1.2.840.10045.4.3.4" => &ring::digest::SHA512,
        _ => return None,
    };
    Some(ring::digest::digest(algorithm, cert_der).as_ref().to_vec())
}

impl<S> tokio_postgres::tls::TlsStream for TlsStream<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    fn channel_binding(&self) -> tokio_postgres::tls::ChannelBinding {
        let (_, session) = self.0.get_ref();
        session
            .peer_certificates()
            .and_then(|certs| certs.first())
            .and_then(|cert| tls_server_end_point(cert.as_ref()))
            .map_or_else(
                tokio_postgres::tls::ChannelBinding::none,
                tokio_postgres::tls::ChannelBinding::tls_server_end_point,
            )
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
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
            min_version: Some(TlsVersion::Tls1_2),
            max_version: None,
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

    /// A verifier trusting `root` (PEM), as client_config builds it.
    fn verifier_for(root_pem: &str, check_name: bool) -> LibpqVerifier {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("root.crt");
        std::fs::write(&path, root_pem).unwrap();
        let (roots, root_ders) = load_roots(&RootCerts::File(path)).unwrap();
        LibpqVerifier {
            inner: Some(
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
                    .build()
                    .unwrap(),
            ),
            roots: parse_roots(&root_ders),
            root_ders,
            check_name,
        }
    }

    fn self_signed(
        names: &[&str],
        common_name: &str,
        dates: Option<(i32, i32)>,
    ) -> rcgen::Certificate {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, common_name);
        if let Some((from, to)) = dates {
            params.not_before = rcgen::date_time_ymd(from, 1, 1);
            params.not_after = rcgen::date_time_ymd(to, 1, 1);
        }
        params.self_signed(&key).unwrap()
    }

    fn verify(verifier: &LibpqVerifier, cert: &rcgen::Certificate, host: &str) -> bool {
        verifier
            .verify_server_cert(
                cert.der(),
                &[],
                &ServerName::try_from(host).unwrap().to_owned(),
                &[],
                UnixTime::now(),
            )
            .is_ok()
    }

    #[test]
    fn a_trusted_self_signed_certificate_still_has_dates_and_a_name() {
        let good = self_signed(&[], "db.example.com", None);
        assert!(verify(
            &verifier_for(&good.pem(), true),
            &good,
            "db.example.com"
        ));
        assert!(verify(
            &verifier_for(&good.pem(), true),
            &good,
            "DB.example.COM"
        ));
        assert!(!verify(
            &verifier_for(&good.pem(), true),
            &good,
            "other.example.com"
        ));
        assert!(verify(
            &verifier_for(&good.pem(), false),
            &good,
            "other.example.com"
        ));
        let expired = self_signed(&[], "db.example.com", Some((2001, 2002)));
        assert!(!verify(
            &verifier_for(&expired.pem(), false),
            &expired,
            "db.example.com"
        ));
        let future = self_signed(&[], "db.example.com", Some((2990, 2999)));
        assert!(!verify(
            &verifier_for(&future.pem(), false),
            &future,
            "db.example.com"
        ));
        // Another self-signed certificate is not trusted because it looks alike.
        let other = self_signed(&[], "db.example.com", None);
        assert!(!verify(
            &verifier_for(&good.pem(), false),
            &other,
            "db.example.com"
        ));
    }

    #[test]
    fn the_common_name_counts_only_without_a_subject_alt_name_of_the_hosts_kind() {
        // A DNS name in the subjectAltName: the Common Name is not looked at for a name...
        let with_dns = self_signed(&["db.example.com"], "cn.example.com", None);
        let v = verifier_for(&with_dns.pem(), true);
        assert!(verify(&v, &with_dns, "db.example.com"));
        assert!(!verify(&v, &with_dns, "cn.example.com"));
        // ...but is for an IP address, which has no iPAddress SAN to match (libpq).
        let cn_ip = self_signed(&["db.example.com"], "127.0.0.1", None);
        assert!(verify(
            &verifier_for(&cn_ip.pem(), true),
            &cn_ip,
            "127.0.0.1"
        ));
        // A wildcard Common Name stands for one label.
        let wildcard = self_signed(&[], "*.example.com", None);
        let v = verifier_for(&wildcard.pem(), true);
        assert!(verify(&v, &wildcard, "db.example.com"));
        assert!(!verify(&v, &wildcard, "a.db.example.com"));
        assert!(!verify(&v, &wildcard, "example.com"));
    }

    #[test]
    fn key_permissions_follow_libpqs_rule() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("client.key");
        std::fs::write(&key, "key").unwrap();
        let with_mode = |mode: u32| {
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
            check_key_permissions(&key)
        };
        // The owner's bits are never the problem.
        for mode in [0o600, 0o400, 0o700] {
            assert!(with_mode(mode).is_ok(), "{mode:o}");
        }
        // World access, or group write, is refused whoever owns the key.
        for mode in [0o604, 0o660, 0o601, 0o610] {
            assert!(
                matches!(with_mode(mode), Err(TlsError::KeyPermissions { .. })),
                "{mode:o}"
            );
        }
    }

    #[test]
    fn protocol_bounds_pick_the_versions_offered() {
        let mut r = request(SslMode::Require, None);
        assert_eq!(protocol_versions(&r).unwrap().len(), 2);
        r.max_version = Some(TlsVersion::Tls1_2);
        assert_eq!(
            protocol_versions(&r).unwrap(),
            vec![&rustls::version::TLS12]
        );
        r.min_version = Some(TlsVersion::Tls1_3);
        assert!(matches!(
            protocol_versions(&r),
            Err(TlsError::NoProtocolVersion { .. })
        ));
    }

    #[test]
    fn channel_binding_hashes_with_the_signature_hash() {
        // rcgen signs with ECDSA P-256 and SHA-256 by default.
        let cert = self_signed(&["localhost"], "localhost", None);
        let expected = ring::digest::digest(&ring::digest::SHA256, cert.der());
        assert_eq!(
            tls_server_end_point(cert.der()).unwrap(),
            expected.as_ref().to_vec()
        );
        assert!(tls_server_end_point(b"not a certificate").is_none());
    }
}
