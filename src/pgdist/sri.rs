//! Subresource Integrity (W3C SRI, as npm publishes it in `dist.integrity`): parsing the metadata
//! and checking a download's digest against it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// A hash algorithm SRI names, weakest first (SRI: only the strongest one listed counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Algorithm {
    Sha256,
    Sha384,
    Sha512,
}

impl Algorithm {
    fn from_prefix(name: &str) -> Option<Self> {
        match name {
            "sha256" => Some(Self::Sha256),
            "sha384" => Some(Self::Sha384),
            "sha512" => Some(Self::Sha512),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Sha256 => "sha256",
            Self::Sha384 => "sha384",
            Self::Sha512 => "sha512",
        }
    }

    fn ring(self) -> &'static ring::digest::Algorithm {
        match self {
            Self::Sha256 => &ring::digest::SHA256,
            Self::Sha384 => &ring::digest::SHA384,
            Self::Sha512 => &ring::digest::SHA512,
        }
    }
}

/// The digests an integrity string accepts: those of its strongest algorithm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Integrity {
    pub algorithm: Algorithm,
    digests: Vec<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SriError {
    #[error("{0:?} names no sha256, sha384 or sha512 digest")]
    NoSupportedHash(String),
    #[error("{0:?} is not base64 of a {1} digest")]
    BadDigest(String, &'static str),
}

impl Integrity {
    /// Parses `sha512-<base64>` (several space-separated, options after `?` ignored, unknown
    /// algorithms skipped, as SRI says).
    pub fn parse(text: &str) -> Result<Self, SriError> {
        let mut best: Option<Integrity> = None;
        for token in text.split_ascii_whitespace() {
            let Some((name, rest)) = token.split_once('-') else {
                continue;
            };
            let Some(algorithm) = Algorithm::from_prefix(name) else {
                continue;
            };
            let encoded = rest.split('?').next().unwrap_or_default();
            let digest = STANDARD
                .decode(encoded)
                .ok()
                .filter(|d| d.len() == algorithm.ring().output_len())
                .ok_or_else(|| SriError::BadDigest(token.to_owned(), algorithm.name()))?;
            match &mut best {
                Some(b) if b.algorithm == algorithm => b.digests.push(digest),
                Some(b) if b.algorithm > algorithm => {}
                _ => {
                    best = Some(Integrity {
                        algorithm,
                        digests: vec![digest],
                    })
                }
            }
        }
        best.ok_or_else(|| SriError::NoSupportedHash(text.to_owned()))
    }

    /// A running digest of the bytes to check, fed as they arrive.
    pub fn hasher(&self) -> Hasher {
        Hasher(ring::digest::Context::new(self.algorithm.ring()))
    }

    /// Whether `digest` (from [`Hasher::finish`]) is one the integrity string accepts.
    pub fn accepts(&self, digest: &[u8]) -> bool {
        self.digests.iter().any(|d| d == digest)
    }

    /// The expected digest as SRI writes it, for messages.
    pub fn expected(&self) -> String {
        format!(
            "{}-{}",
            self.algorithm.name(),
            STANDARD.encode(&self.digests[0])
        )
    }
}

/// A digest in progress.
pub struct Hasher(ring::digest::Context);

impl Hasher {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> Vec<u8> {
        self.0.finish().as_ref().to_vec()
    }
}

/// The digest as SRI writes it (`sha512-<base64>`), for messages.
pub fn describe(algorithm: Algorithm, digest: &[u8]) -> String {
    format!("{}-{}", algorithm.name(), STANDARD.encode(digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest_of(integrity: &Integrity, bytes: &[u8]) -> Vec<u8> {
        let mut h = integrity.hasher();
        // Fed in pieces, as a download arrives.
        for chunk in bytes.chunks(3) {
            h.update(chunk);
        }
        h.finish()
    }

    #[test]
    fn checks_the_sha512_of_the_bytes() {
        // printf 'hello' | openssl dgst -sha512 -binary | base64
        let integrity = Integrity::parse(
            "sha512-m3HSJL1i83hdltRq0+o9czGb+8KJDKra4t/3JRlnPKcjI8PZm6XBHXx6zG4UuMXaDEZjR1wuXDre9G9zvN7AQw==",
        )
        .unwrap();
        assert_eq!(integrity.algorithm, Algorithm::Sha512);
        assert!(integrity.accepts(&digest_of(&integrity, b"hello")));
        assert!(!integrity.accepts(&digest_of(&integrity, b"hellO")));
        assert!(!integrity.accepts(&digest_of(&integrity, b"hell")));
        assert_eq!(
            describe(integrity.algorithm, &digest_of(&integrity, b"hello")),
            integrity.expected()
        );
    }

    #[test]
    fn the_strongest_listed_algorithm_decides() {
        // sha256 of "hello" listed beside the sha512 of "other": the sha512 decides.
        let text = "sha256-LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ= \
                    sha512-4lrDhF+MvhKAGi36WonUxV3EeQDztu3Jqe5ZDzwrkxL2ZdADnJOCi3tY8zlQvIF6CVWpxQAKjT4oBWnwh0XKaA==?x";
        let integrity = Integrity::parse(text).unwrap();
        assert_eq!(integrity.algorithm, Algorithm::Sha512);
        assert!(!integrity.accepts(&digest_of(&integrity, b"hello")));
        let sha256 =
            Integrity::parse("md5-abc sha256-LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=")
                .unwrap();
        assert!(sha256.accepts(&digest_of(&sha256, b"hello")));
    }

    #[test]
    fn refuses_what_it_cannot_check() {
        assert!(matches!(
            Integrity::parse("sha1-qvTGHdzF6KLavt4PO0gs2a6pQ00="),
            Err(SriError::NoSupportedHash(_))
        ));
        assert!(matches!(
            Integrity::parse(""),
            Err(SriError::NoSupportedHash(_))
        ));
        assert!(matches!(
            Integrity::parse("sha512-AAAA"),
            Err(SriError::BadDigest(_, "sha512"))
        ));
        assert!(matches!(
            Integrity::parse("sha512-!!!"),
            Err(SriError::BadDigest(..))
        ));
    }
}
