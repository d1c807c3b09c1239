//! Where the package's files go: which tarball entries are the server build, and the symlinks its
//! `scripts/hydrate-symlinks.js` restores from `native/pg-symlinks.json` (npm tarballs carry no
//! symlinks, so the package lists them instead).

use std::path::{Component, Path, PathBuf};

/// The tarball's directory holding the build (`bin/`, `lib/`, `share/`).
const NATIVE: &str = "package/native";

/// The path under the install directory for a tarball entry, or `None` for entries outside the
/// build (`package/package.json`, its scripts). An entry that would climb out (`..`, an absolute
/// path) is never installed.
pub fn install_path(entry: &Path) -> Option<PathBuf> {
    let rest = entry.strip_prefix(NATIVE).ok()?;
    normal(rest)
}

/// Only plain names: no `..`, no root, no `.` tricks.
fn normal(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// A symlink to create: `at` (relative to the install directory) pointing to `target`, a path
/// relative to the link's own directory so the build can be moved as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub at: PathBuf,
    pub target: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("pg-symlinks.json is not a list of {{source, target}}: {0}")]
    Format(String),
    #[error("pg-symlinks.json names {0:?}, outside the package's native/ directory")]
    Outside(String),
}

#[derive(serde::Deserialize)]
struct Entry {
    /// The existing file, e.g. `native/lib/libpq.so.5.17`.
    source: String,
    /// The link to make, e.g. `native/lib/libpq.so.5`.
    target: String,
}

/// The links `pg-symlinks.json` lists. The package's script creates each link beside its source
/// pointing to the source's file name; this computes the same relative target, and refuses any
/// path outside `native/` (the list comes from the download, so it is checked like the tarball).
pub fn links(json: &[u8]) -> Result<Vec<Link>, LinkError> {
    let entries: Vec<Entry> =
        serde_json::from_slice(json).map_err(|e| LinkError::Format(e.to_string()))?;
    let inside = |p: &str| {
        Path::new(p)
            .strip_prefix("native")
            .ok()
            .and_then(normal)
            .ok_or_else(|| LinkError::Outside(p.to_owned()))
    };
    entries
        .iter()
        .map(|e| {
            let source = inside(&e.source)?;
            let at = inside(&e.target)?;
            Ok(Link {
                target: relative(at.parent().unwrap_or(Path::new("")), &source),
                at,
            })
        })
        .collect()
}

/// `to` as seen from directory `from`, both relative to the same root and made of plain names.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for c in &to[common..] {
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_build_is_installed() {
        assert_eq!(
            install_path(Path::new("package/native/bin/postgres")),
            Some(PathBuf::from("bin/postgres"))
        );
        assert_eq!(install_path(Path::new("package/package.json")), None);
        assert_eq!(install_path(Path::new("package/native")), None);
        assert_eq!(
            install_path(Path::new("package/native/../../etc/passwd")),
            None
        );
        assert_eq!(install_path(Path::new("/package/native/bin/x")), None);
    }

    #[test]
    fn links_point_beside_them_as_the_package_script_makes_them() {
        let json = br#"[{"source":"native/lib/libpq.so.5.17","target":"native/lib/libpq.so.5"},
                        {"source":"native/lib/libicuuc.so.60.2","target":"native/bin/libicuuc.so"}]"#;
        assert_eq!(
            links(json).unwrap(),
            vec![
                Link {
                    at: "lib/libpq.so.5".into(),
                    target: "libpq.so.5.17".into()
                },
                // Across directories the target climbs, so the link resolves from where it is.
                Link {
                    at: "bin/libicuuc.so".into(),
                    target: "../lib/libicuuc.so.60.2".into()
                },
            ]
        );
    }

    #[test]
    fn links_outside_the_build_are_refused() {
        for json in [
            r#"[{"source":"/etc/passwd","target":"native/lib/x"}]"#,
            r#"[{"source":"native/lib/a","target":"native/../../x"}]"#,
            r#"[{"source":"native/lib/a","target":"package.json"}]"#,
        ] {
            assert!(
                matches!(links(json.as_bytes()), Err(LinkError::Outside(_))),
                "{json}"
            );
        }
        assert!(matches!(links(b"{}"), Err(LinkError::Format(_))));
    }
}
