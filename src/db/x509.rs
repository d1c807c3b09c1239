//! Certificate checks made with ring on certificates parsed by x509-cert, where WebPKI refuses
//! what OpenSSL (and so libpq) accepts: the TLS handshake signature against any certificate's key,
//! and an X.509 version 1 server certificate signed directly by a trusted root.
//!
//! WebPKI parses only version 3 certificates. OpenSSL 3.0's `openssl x509 -req -CA ...` (the
//! PostgreSQL documentation's recipe for a server certificate signed by a local root) writes
//! version 1 unless given `-extfile`, and psql connects to such a server in every sslmode.

use rustls::pki_types::UnixTime;
use rustls::{CertificateError, Error as RustlsError, SignatureScheme};
use x509_cert::Certificate;
use x509_cert::certificate::Version;
use x509_cert::der::asn1::{AnyRef, ObjectIdentifier};
use x509_cert::der::{Decode, Encode, Reader, SliceReader};
use x509_cert::ext::pkix::BasicConstraints;

use ring::signature::{self as sig, VerificationAlgorithm};

const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const CURVE_P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const CURVE_P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const SHA256_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const SHA384_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.12");
const SHA512_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.13");
const ECDSA_WITH_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const ECDSA_WITH_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");
const BASIC_CONSTRAINTS: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.19");

/// The handshake signature schemes verified here, strongest first: those rustls's ring provider
/// offers.
pub const HANDSHAKE_SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::ECDSA_NISTP384_SHA384,
    SignatureScheme::ECDSA_NISTP256_SHA256,
    SignatureScheme::ED25519,
    SignatureScheme::RSA_PSS_SHA512,
    SignatureScheme::RSA_PSS_SHA384,
    SignatureScheme::RSA_PSS_SHA256,
    SignatureScheme::RSA_PKCS1_SHA512,
    SignatureScheme::RSA_PKCS1_SHA384,
    SignatureScheme::RSA_PKCS1_SHA256,
];

/// Why a certificate was not accepted by the checks made here. Carried inside rustls's
/// `CertificateError::Other`, so its text reaches the user.
#[derive(Debug, thiserror::Error)]
pub enum V1Error {
    #[error(
        "the server certificate is X.509 version 1 and is not signed directly by a trusted root \
         certificate, which is all pgplan can verify for a version 1 certificate; reissue it as \
         version 3 (openssl x509 -req ... -extfile FILE, where FILE holds \
         subjectAltName=DNS:the-host-name)"
    )]
    NotIssuedByARoot,
    #[error(
        "the server certificate is X.509 version 1 and signed with an algorithm pgplan cannot \
         check ({0}); reissue it as version 3 with an RSA, ECDSA P-256/P-384 or Ed25519 key \
         (openssl x509 -req ... -extfile FILE, where FILE holds subjectAltName=DNS:the-host-name)"
    )]
    UnsupportedAlgorithm(String),
    #[error(
        "the certificate's key is of a kind pgplan cannot check ({0}); pgplan checks RSA, \
         ECDSA P-256/P-384 and Ed25519 keys"
    )]
    UnsupportedKey(String),
}

/// The kind of key in a SubjectPublicKeyInfo, as far as handshakes and certificate signatures
/// made with ring go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Rsa,
    EcP256,
    EcP384,
    Ed25519,
}

/// A certificate's public key: its kind and the bytes ring takes (the subjectPublicKey BIT
/// STRING's contents: an RSAPublicKey, an uncompressed EC point, or the Ed25519 key).
struct PublicKey<'a> {
    kind: KeyKind,
    bytes: &'a [u8],
}

fn bad_encoding() -> RustlsError {
    RustlsError::InvalidCertificate(CertificateError::BadEncoding)
}

fn describe_key(cert: &Certificate) -> String {
    let algorithm = &cert.tbs_certificate.subject_public_key_info.algorithm;
    match algorithm
        .parameters
        .as_ref()
        .and_then(|p| p.decode_as::<ObjectIdentifier>().ok())
    {
        Some(curve) => format!("{} on curve {curve}", algorithm.oid),
        None => algorithm.oid.to_string(),
    }
}

fn public_key(cert: &Certificate) -> Result<PublicKey<'_>, RustlsError> {
    let spki = &cert.tbs_certificate.subject_public_key_info;
    let bytes = spki
        .subject_public_key
        .as_bytes()
        .ok_or_else(bad_encoding)?;
    let kind = match spki.algorithm.oid {
        RSA_ENCRYPTION => KeyKind::Rsa,
        ED25519 => KeyKind::Ed25519,
        EC_PUBLIC_KEY => {
            let curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
            match curve {
                Some(CURVE_P256) => KeyKind::EcP256,
                Some(CURVE_P384) => KeyKind::EcP384,
                _ => return Err(other(V1Error::UnsupportedKey(describe_key(cert)))),
            }
        }
        _ => return Err(other(V1Error::UnsupportedKey(describe_key(cert)))),
    };
    Ok(PublicKey { kind, bytes })
}

/// The ring algorithm for a handshake signature scheme and the certificate's key. TLS 1.3 ties
/// an ECDSA scheme to its curve and forbids PKCS#1 v1.5 (RFC 8446 §4.2.3); TLS 1.2 names only the
/// hash, so a P-384 key may sign with SHA-256 (as WebPKI allows).
fn handshake_algorithm(
    scheme: SignatureScheme,
    key: KeyKind,
    tls13: bool,
) -> Option<&'static dyn VerificationAlgorithm> {
    use KeyKind::*;
    use SignatureScheme as S;
    Some(match (scheme, key) {
        (S::RSA_PKCS1_SHA256, Rsa) if !tls13 => &sig::RSA_PKCS1_2048_8192_SHA256,
        (S::RSA_PKCS1_SHA384, Rsa) if !tls13 => &sig::RSA_PKCS1_2048_8192_SHA384,
        (S::RSA_PKCS1_SHA512, Rsa) if !tls13 => &sig::RSA_PKCS1_2048_8192_SHA512,
        (S::RSA_PSS_SHA256, Rsa) => &sig::RSA_PSS_2048_8192_SHA256,
        (S::RSA_PSS_SHA384, Rsa) => &sig::RSA_PSS_2048_8192_SHA384,
        (S::RSA_PSS_SHA512, Rsa) => &sig::RSA_PSS_2048_8192_SHA512,
        (S::ECDSA_NISTP256_SHA256, EcP256) => &sig::ECDSA_P256_SHA256_ASN1,
        (S::ECDSA_NISTP256_SHA256, EcP384) if !tls13 => &sig::ECDSA_P384_SHA256_ASN1,
        (S::ECDSA_NISTP384_SHA384, EcP384) => &sig::ECDSA_P384_SHA384_ASN1,
        (S::ECDSA_NISTP384_SHA384, EcP256) if !tls13 => &sig::ECDSA_P256_SHA384_ASN1,
        (S::ED25519, Ed25519) => &sig::ED25519,
        _ => return None,
    })
}

/// Checks the server's handshake signature with the key of the certificate it presented, whatever
/// the certificate's version: the session stays bound to that certificate even when nothing else
/// about it is verified (sslmode=require without a root certificate).
pub fn verify_handshake_signature(
    message: &[u8],
    cert_der: &[u8],
    scheme: SignatureScheme,
    signature: &[u8],
    tls13: bool,
) -> Result<(), RustlsError> {
    let cert = Certificate::from_der(cert_der).map_err(|_| bad_encoding())?;
    let key = public_key(&cert)?;
    let algorithm = handshake_algorithm(scheme, key.kind, tls13).ok_or_else(|| {
        RustlsError::PeerMisbehaved(
            rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
        )
    })?;
    algorithm
        .verify(key.bytes.into(), message.into(), signature.into())
        .map_err(|_| RustlsError::InvalidCertificate(CertificateError::BadSignature))
}

/// Whether WebPKI can read the certificate (version 3); the rest go through [`verify_v1_leaf`].
pub fn is_v3(cert: &Certificate) -> bool {
    cert.tbs_certificate.version == Version::V3
}

/// The to-be-signed part of a certificate exactly as it was signed: the first element of the
/// outer SEQUENCE, taken from the received bytes rather than re-encoded.
fn tbs_bytes(cert_der: &[u8]) -> Result<Vec<u8>, RustlsError> {
    let outer = AnyRef::from_der(cert_der).map_err(|_| bad_encoding())?;
    let mut reader = SliceReader::new(outer.value()).map_err(|_| bad_encoding())?;
    let tbs: AnyRef<'_> = reader.decode().map_err(|_| bad_encoding())?;
    tbs.to_der().map_err(|_| bad_encoding())
}

/// The ring algorithm for a certificate's signature, given the issuer's key.
fn certificate_algorithm(
    oid: ObjectIdentifier,
    issuer_key: KeyKind,
) -> Option<&'static dyn VerificationAlgorithm> {
    use KeyKind::*;
    Some(match (oid, issuer_key) {
        (SHA256_WITH_RSA, Rsa) => &sig::RSA_PKCS1_2048_8192_SHA256,
        (SHA384_WITH_RSA, Rsa) => &sig::RSA_PKCS1_2048_8192_SHA384,
        (SHA512_WITH_RSA, Rsa) => &sig::RSA_PKCS1_2048_8192_SHA512,
        (ECDSA_WITH_SHA256, EcP256) => &sig::ECDSA_P256_SHA256_ASN1,
        (ECDSA_WITH_SHA256, EcP384) => &sig::ECDSA_P384_SHA256_ASN1,
        (ECDSA_WITH_SHA384, EcP384) => &sig::ECDSA_P384_SHA384_ASN1,
        (ECDSA_WITH_SHA384, EcP256) => &sig::ECDSA_P256_SHA384_ASN1,
        (ED25519, Ed25519) => &sig::ED25519,
        _ => return None,
    })
}

/// Whether a trusted root may issue certificates: OpenSSL treats a version 1 root as a CA, and a
/// version 3 one only with basicConstraints CA:TRUE.
fn may_issue(root: &Certificate) -> bool {
    if root.tbs_certificate.version != Version::V3 {
        return true;
    }
    root.tbs_certificate
        .extensions
        .iter()
        .flatten()
        .filter(|ext| ext.extn_id == BASIC_CONSTRAINTS)
        .filter_map(|ext| BasicConstraints::from_der(ext.extn_value.as_bytes()).ok())
        .any(|bc| bc.ca)
}

fn other(error: V1Error) -> RustlsError {
    RustlsError::InvalidCertificate(CertificateError::Other(rustls::OtherError(
        std::sync::Arc::new(error),
    )))
}

/// Verifies a server certificate WebPKI cannot read (X.509 version 1) as OpenSSL does for a
/// chain of one: signed by a trusted root whose subject is its issuer, that root able to issue
/// certificates, and both within their validity dates. Host names are checked by the caller.
/// `intermediates_sent`: the server sent a chain, which pgplan cannot follow from a version 1
/// certificate, so an unknown issuer is then that limit rather than an untrusted server.
pub fn verify_v1_leaf(
    leaf_der: &[u8],
    leaf: &Certificate,
    roots: &[Certificate],
    intermediates_sent: bool,
    now: UnixTime,
    check_validity: impl Fn(&Certificate, UnixTime) -> Result<(), RustlsError>,
) -> Result<(), RustlsError> {
    let issuer = leaf
        .tbs_certificate
        .issuer
        .to_der()
        .map_err(|_| bad_encoding())?;
    let tbs = tbs_bytes(leaf_der)?;
    let signature = leaf.signature.as_bytes().ok_or_else(bad_encoding)?;
    let mut unsupported_algorithm = None;
    let mut bad_signature = false;
    for root in roots {
        if root.tbs_certificate.subject.to_der().ok().as_deref() != Some(issuer.as_slice())
            || !may_issue(root)
        {
            continue;
        }
        let Ok(key) = public_key(root) else {
            unsupported_algorithm =
                Some(root.tbs_certificate.subject_public_key_info.algorithm.oid);
            continue;
        };
        let Some(algorithm) = certificate_algorithm(leaf.signature_algorithm.oid, key.kind) else {
            unsupported_algorithm = Some(leaf.signature_algorithm.oid);
            continue;
        };
        if algorithm
            .verify(key.bytes.into(), tbs.as_slice().into(), signature.into())
            .is_err()
        {
            bad_signature = true;
            continue;
        }
        // OpenSSL checks the dates of every certificate in the chain, the root's included.
        check_validity(leaf, now)?;
        check_validity(root, now)?;
        return Ok(());
    }
    if bad_signature {
        return Err(RustlsError::InvalidCertificate(
            CertificateError::BadSignature,
        ));
    }
    if let Some(oid) = unsupported_algorithm {
        return Err(other(V1Error::UnsupportedAlgorithm(oid.to_string())));
    }
    if intermediates_sent {
        return Err(other(V1Error::NotIssuedByARoot));
    }
    Err(RustlsError::InvalidCertificate(
        CertificateError::UnknownIssuer,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};

    /// A self-signed certificate (rcgen) for the PKCS#8 key.
    fn certificate_for(pkcs8: &[u8]) -> Vec<u8> {
        let key = rcgen::KeyPair::try_from(pkcs8).unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn handshake_signatures_are_checked_with_the_certificates_key() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let cert = certificate_for(pkcs8.as_ref());
        let message = b"handshake transcript";
        let signature = key.sign(&rng, message).unwrap();
        let p256 = SignatureScheme::ECDSA_NISTP256_SHA256;
        for tls13 in [false, true] {
            verify_handshake_signature(message, &cert, p256, signature.as_ref(), tls13).unwrap();
            assert!(
                verify_handshake_signature(b"tampered", &cert, p256, signature.as_ref(), tls13)
                    .is_err()
            );
        }
        // TLS 1.3 ties the curve to the scheme; a P-256 key cannot sign ECDSA_NISTP384_SHA384.
        assert!(
            verify_handshake_signature(
                message,
                &cert,
                SignatureScheme::ECDSA_NISTP384_SHA384,
                signature.as_ref(),
                true
            )
            .is_err()
        );
        // Another key's certificate does not verify the signature.
        let other = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let other_cert = certificate_for(other.as_ref());
        assert!(
            verify_handshake_signature(message, &other_cert, p256, signature.as_ref(), true)
                .is_err()
        );
        assert!(
            verify_handshake_signature(message, b"junk", p256, signature.as_ref(), true).is_err()
        );
    }

    #[test]
    fn ed25519_handshake_signatures_are_checked() {
        let rng = SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let key = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        assert_eq!(key.public_key().as_ref().len(), 32);
        let cert = certificate_for(pkcs8.as_ref());
        let signature = key.sign(b"transcript");
        let ed = SignatureScheme::ED25519;
        verify_handshake_signature(b"transcript", &cert, ed, signature.as_ref(), true).unwrap();
        assert!(verify_handshake_signature(b"other", &cert, ed, signature.as_ref(), true).is_err());
        // An RSA scheme with an Ed25519 key is the server misbehaving.
        assert!(
            verify_handshake_signature(
                b"transcript",
                &cert,
                SignatureScheme::RSA_PSS_SHA256,
                signature.as_ref(),
                true
            )
            .is_err()
        );
    }
}
