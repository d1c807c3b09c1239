//! The rules for trusting a build in the cache: a completion marker written last, listing every
//! file with its size, so a partial unpack or a file damaged later is told from a whole build.

use std::path::Path;

/// pgplan's completion marker, written into a build's directory after everything else.
pub const MARKER: &str = ".pgplan-complete";

/// The marker `scripts/fetch-postgres.sh` writes (the package version), which pgplan writes too.
pub const VERSION_FILE: &str = ".version";

const MARKER_HEADER: &str = "pgplan build";

/// The marker's text: the package version, then one `size<TAB>path` line per regular file.
pub fn marker(package_version: &str, files: &[(String, u64)]) -> String {
    let mut text = format!("{MARKER_HEADER} {package_version}\n");
    for (path, size) in files {
        text.push_str(&format!("{size}\t{path}\n"));
    }
    text
}

/// A build that can be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Whole {
    pub package_version: String,
    /// Files checked against the marker; `None` for a build `scripts/fetch-postgres.sh` made
    /// (its `.version`, written just before its atomic rename, is its only marker).
    pub files_checked: Option<usize>,
}

/// Why a cached build cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheProblem {
    #[error("no completion marker ({MARKER} or {VERSION_FILE}): an unpack that did not finish")]
    Incomplete,
    #[error("its completion marker is unreadable")]
    BadMarker,
    #[error("{path} is missing")]
    Missing { path: String },
    #[error("{path} is {found} bytes, not the {expected} unpacked")]
    WrongSize {
        path: String,
        expected: u64,
        found: u64,
    },
}

/// Decides whether a build directory is whole. `size_of` returns a regular file's size (and
/// `None` for anything else, or nothing at all); `marker` and `version_file` are the two marker
/// files' contents when present.
pub fn check(
    marker: Option<&str>,
    version_file: Option<&str>,
    size_of: impl Fn(&Path) -> Option<u64>,
) -> Result<Whole, CacheProblem> {
    let Some(marker) = marker else {
        return match version_file.map(str::trim).filter(|v| !v.is_empty()) {
            Some(version) => Ok(Whole {
                package_version: version.to_owned(),
                files_checked: None,
            }),
            None => Err(CacheProblem::Incomplete),
        };
    };
    let mut lines = marker.lines();
    let package_version = lines
        .next()
        .and_then(|l| l.strip_prefix(MARKER_HEADER))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or(CacheProblem::BadMarker)?
        .to_owned();
    let mut files_checked = 0;
    for line in lines {
        let (size, path) = line.split_once('\t').ok_or(CacheProblem::BadMarker)?;
        let expected: u64 = size.parse().map_err(|_| CacheProblem::BadMarker)?;
        match size_of(Path::new(path)) {
            None => {
                return Err(CacheProblem::Missing {
                    path: path.to_owned(),
                });
            }
            Some(found) if found != expected => {
                return Err(CacheProblem::WrongSize {
                    path: path.to_owned(),
                    expected,
                    found,
                });
            }
            Some(_) => files_checked += 1,
        }
    }
    if files_checked == 0 {
        return Err(CacheProblem::BadMarker);
    }
    Ok(Whole {
        package_version,
        files_checked: Some(files_checked),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<(String, u64)> {
        vec![
            ("bin/postgres".into(), 9_000_000),
            ("share/postgresql/timezone/America/New York".into(), 3_552),
        ]
    }

    fn sizes(path: &Path) -> Option<u64> {
        files()
            .into_iter()
            .find(|(p, _)| Path::new(p) == path)
            .map(|(_, s)| s)
    }

    #[test]
    fn a_whole_build_is_checked_file_by_file() {
        let text = marker("18.4.0-beta.17", &files());
        assert_eq!(
            check(Some(&text), Some("18.4.0-beta.17\n"), sizes),
            Ok(Whole {
                package_version: "18.4.0-beta.17".into(),
                files_checked: Some(2)
            })
        );
    }

    #[test]
    fn a_damaged_build_names_the_file() {
        let text = marker("18.4.0-beta.17", &files());
        let truncated = |p: &Path| sizes(p).map(|s| if s > 10_000 { 4096 } else { s });
        assert_eq!(
            check(Some(&text), None, truncated),
            Err(CacheProblem::WrongSize {
                path: "bin/postgres".into(),
                expected: 9_000_000,
                found: 4096
            })
        );
        let gone = |p: &Path| sizes(p).filter(|_| !p.ends_with("New York"));
        assert_eq!(
            check(Some(&text), None, gone),
            Err(CacheProblem::Missing {
                path: "share/postgresql/timezone/America/New York".into()
            })
        );
    }

    #[test]
    fn an_unfinished_unpack_has_no_marker() {
        assert_eq!(check(None, None, sizes), Err(CacheProblem::Incomplete));
        assert_eq!(
            check(None, Some(" \n"), sizes),
            Err(CacheProblem::Incomplete)
        );
        assert_eq!(check(Some(""), None, sizes), Err(CacheProblem::BadMarker));
        assert_eq!(
            check(Some("pgplan build 18.4.0-beta.17\n"), None, sizes),
            Err(CacheProblem::BadMarker),
            "a marker listing no file proves nothing"
        );
        assert_eq!(
            check(Some("pgplan build 18\nlots\tbin/postgres\n"), None, sizes),
            Err(CacheProblem::BadMarker)
        );
    }

    #[test]
    fn the_fetch_script_s_builds_are_trusted_on_their_version_file() {
        assert_eq!(
            check(None, Some("17.10.0-beta.17\n"), sizes),
            Ok(Whole {
                package_version: "17.10.0-beta.17".into(),
                files_checked: None
            })
        );
    }
}
