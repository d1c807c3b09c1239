//! Where a report goes (`-o/--output FILE`, or standard output), chosen and checked before any
//! work starts, and written the way a careful Unix tool writes: a regular file is replaced
//! atomically through an unpredictable temporary created exclusively beside it; anything else
//! (a device, a FIFO, `/dev/stdout`) is written through, never replaced.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::report::TextOptions;
use crate::report::guard::Guarded;

/// Where a report goes: `--output FILE`, or standard output, buffered either way (stdout flushes
/// at every newline otherwise, a system call per line of a long report). Text for a file is
/// never coloured or wrapped. Call it before connecting: a destination pgplan cannot write is
/// an error before anything is measured, not after.
///
/// A regular file (or a new one) is written under a temporary name in its directory and renamed
/// into place by `flush`, so a reader (node_exporter's textfile collector scrapes `*.prom` at
/// any moment) sees the previous report or the new one, never half of one; a run that fails
/// before the flush leaves the previous report where it was.
pub fn report_destination(
    output: Option<&Path>,
    options: &TextOptions,
) -> Result<(Box<dyn Write>, TextOptions)> {
    let (out, options) = match output {
        Some(path) if is_standard_output(path) => (stdout(), *options),
        Some(path) => (open(path)?, TextOptions::default()),
        None => (stdout(), *options),
    };
    // Every report passes the guard, whatever its format: a renderer that forgets to escape a
    // name still cannot write a raw control character.
    Ok((Box::new(Guarded::new(out, options.color)), options))
}

fn stdout() -> Box<dyn Write> {
    // A buffer of its own: a report is written in pieces of a line or less, and a large plan's
    // JSON is a million of them.
    Box::new(BufWriter::with_capacity(1 << 16, io::stdout().lock()))
}

/// Refuses, before any work, a file pgplan could not write once the work is done (`--save-plan`):
/// a directory, a file in a directory that does not exist, or one the user may not write.
pub fn check_file_destination(flag: &str, path: &Path) -> Result<()> {
    let shown = path.display();
    if path.as_os_str().is_empty() {
        bail!("{flag}: the file name is empty");
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => bail!("{flag} {shown}: is a directory"),
        Ok(_) => writable(path).with_context(|| format!("{flag} {shown}")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => writable(dir).with_context(|| {
                    format!("{flag} {shown}: cannot create a file in {}", dir.display())
                }),
                Ok(_) => bail!("{flag} {shown}: {} is not a directory", dir.display()),
                Err(e) => Err(e).with_context(|| format!("{flag} {shown}: {}", dir.display())),
            }
        }
        Err(e) => Err(e).with_context(|| format!("{flag} {shown}")),
    }
}

/// `/dev/stdout` and its aliases name pgplan's own standard output, whatever it is (a pipe, a
/// terminal, a file opened for appending by the shell): written to directly, as if no `-o`.
fn is_standard_output(path: &Path) -> bool {
    ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]
        .iter()
        .any(|alias| path == Path::new(alias))
}

fn open(path: &Path) -> Result<Box<dyn Write>> {
    if path.as_os_str().is_empty() {
        bail!("--output: the file name is empty");
    }
    // Follow a symbolic link to what it points at: the report goes through the link, and the
    // link itself stays.
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => link_target(path)
            .with_context(|| format!("--output {}: following the symbolic link", path.display()))?,
        _ => path.to_owned(),
    };
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => bail!("--output {}: is a directory", path.display()),
        Ok(m) if m.is_file() => Ok(Box::new(Replacement::create(&target, Some(&m))?)),
        Ok(m) => {
            let kind = if m.file_type().is_fifo() {
                "FIFO"
            } else if m.file_type().is_char_device() || m.file_type().is_block_device() {
                "device"
            } else {
                "special file"
            };
            writable(&target).with_context(|| format!("--output {}", path.display()))?;
            Ok(Box::new(WriteThrough {
                target,
                shown: path.to_owned(),
                kind,
                file: None,
            }))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Ok(Box::new(Replacement::create(&target, None)?))
        }
        Err(e) => Err(e).with_context(|| format!("--output {}", path.display())),
    }
}

/// What a symbolic link points at, to write there: the file it resolves to, or for a link to a
/// file not created yet, that file (in a directory that must exist).
fn link_target(link: &Path) -> io::Result<PathBuf> {
    match std::fs::canonicalize(link) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let target = std::fs::read_link(link)?;
            Ok(match link.parent() {
                Some(dir) if target.is_relative() => dir.join(target),
                _ => target,
            })
        }
        other => other,
    }
}

/// Whether this process may write `path` (access(2) answers for the real user, as a shell's
/// `test -w` does).
fn writable(path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path holds a NUL byte"))?;
    // SAFETY: access reads a NUL-terminated path and has no other preconditions.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A regular file, replaced on `flush` by a temporary written beside it (rename is atomic only
/// within one file system). The temporary has a random name, is created with `O_EXCL` (so a
/// link planted at a guessed name is never followed), starts with a dot and ends in `.tmp`
/// (no `*.prom` pattern matches it), and gets the replaced file's permission bits, or for a new
/// file the umask's, as any file the shell creates. It is created when the report is written,
/// not when the destination is checked: a run killed (`kill -9`) while it measures leaves no
/// empty temporary behind.
struct Replacement {
    file: Option<tempfile::NamedTempFile>,
    writer: Option<BufWriter<File>>,
    destination: PathBuf,
    dir: PathBuf,
    /// The replaced file's permission bits and owner, or `None` for a new file.
    existing: Option<(u32, u32, u32)>,
    written: bool,
}

impl Replacement {
    fn create(destination: &Path, existing: Option<&std::fs::Metadata>) -> Result<Self> {
        let shown = destination.display();
        destination
            .file_name()
            .with_context(|| format!("--output {shown}: names no file"))?;
        if existing.is_some() {
            // Replacing by rename needs only the directory's permission; a file the user may
            // not write must stay as it is.
            writable(destination).with_context(|| format!("--output {shown}"))?;
        }
        let dir = match destination.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => PathBuf::from("."),
        };
        // What creating the temporary needs, checked now, before any work.
        let usable = match std::fs::metadata(&dir) {
            Ok(m) if !m.is_dir() => Err(io::Error::from(io::ErrorKind::NotADirectory)),
            Ok(_) => writable(&dir),
            Err(e) => Err(e),
        };
        usable.with_context(|| {
            format!(
                "--output {shown}: cannot create a file in {}",
                dir.display()
            )
        })?;
        Ok(Self {
            file: None,
            writer: None,
            destination: destination.to_owned(),
            dir,
            existing: existing.map(|m| (m.mode() & 0o7777, m.uid(), m.gid())),
            written: false,
        })
    }

    /// The temporary, created at the first write.
    fn writer(&mut self) -> io::Result<&mut BufWriter<File>> {
        if self.written {
            return Err(io::Error::other("the report was already written"));
        }
        if self.writer.is_none() {
            let name = self
                .destination
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mode = self.existing.map_or(0o666, |(mode, _, _)| mode);
            let creating = |e: io::Error| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "--output {}: cannot create a file in {}: {}",
                        self.destination.display(),
                        self.dir.display(),
                        without_path(e)
                    ),
                )
            };
            let file = tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .suffix(".tmp")
                .permissions(Permissions::from_mode(mode))
                .tempfile_in(&self.dir)
                .map_err(creating)?;
            if let Some((mode, uid, gid)) = self.existing {
                // Exactly the old bits (the umask applied at creation), and the old owner when
                // pgplan may give it (root replacing another user's file).
                let handle = file.as_file();
                handle.set_permissions(Permissions::from_mode(mode))?;
                // SAFETY: geteuid has no preconditions.
                if uid != unsafe { libc::geteuid() } || gid != unsafe { libc::getegid() } {
                    let _ = std::os::unix::fs::fchown(handle, Some(uid), Some(gid));
                }
            }
            self.writer = Some(BufWriter::new(file.reopen()?));
            self.file = Some(file);
        }
        Ok(self.writer.as_mut().expect("created above"))
    }
}

impl Write for Replacement {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer()?.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.written {
            return Ok(());
        }
        // A report with nothing in it still replaces the previous one.
        self.writer()?;
        self.written = true;
        let Some(mut writer) = self.writer.take() else {
            return Ok(());
        };
        writer.flush()?;
        let file = writer.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        if let Some(temporary) = self.file.take() {
            temporary.persist(&self.destination).map_err(|e| {
                io::Error::new(
                    e.error.kind(),
                    format!(
                        "renaming the report to {}: {}",
                        self.destination.display(),
                        e.error
                    ),
                )
            })?;
        }
        Ok(())
    }
}

/// The operating system's error without the random name tempfile appends (" at path ...";
/// its wrapper type is private, and hides the original error from `source`).
fn without_path(e: io::Error) -> io::Error {
    let text = e.to_string();
    let message = text.split(" at path ").next().unwrap_or(&text);
    io::Error::new(e.kind(), message.to_owned())
}

/// A device, a FIFO or another special file: opened at the first write (a FIFO's open waits for
/// its reader, which must not hold up the measurement) and written through.
struct WriteThrough {
    target: PathBuf,
    shown: PathBuf,
    kind: &'static str,
    file: Option<BufWriter<File>>,
}

impl WriteThrough {
    fn file(&mut self) -> io::Result<&mut BufWriter<File>> {
        if self.file.is_none() {
            let file = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOCTTY)
                .open(&self.target)
                .map_err(|e| self.error(e))?;
            self.file = Some(BufWriter::new(file));
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    fn error(&self, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!("writing to {} ({}): {e}", self.shown.display(), self.kind),
        )
    }
}

impl Write for WriteThrough {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file()?.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = self.file()?.flush();
        result.map_err(|e| self.error(e))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

    use super::report_destination;
    use crate::report::TextOptions;

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_temporary_is_created_only_when_the_report_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.txt");
        let (mut out, _) = report_destination(Some(&path), &TextOptions::default()).unwrap();
        // Checked, not yet created: a run killed while it measures leaves nothing.
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
        write!(out, "x").unwrap();
        assert_eq!(names(dir.path()).len(), 1);
        out.flush().unwrap();
        assert_eq!(names(dir.path()), vec!["report.txt".to_owned()]);
        // An empty report replaces the previous one too.
        let (mut out, _) = report_destination(Some(&path), &TextOptions::default()).unwrap();
        out.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    }

    #[test]
    fn an_output_file_appears_whole_on_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgplan.prom");
        std::fs::write(&path, "previous\n").unwrap();
        let (mut out, _) = report_destination(Some(&path), &TextOptions::default()).unwrap();
        writeln!(out, "new report").unwrap();
        // Half written: the reader still sees the previous report, and no other *.prom.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "previous\n");
        let all = names(dir.path());
        assert_eq!(
            all.iter().filter(|n| n.ends_with(".prom")).count(),
            1,
            "{all:?}"
        );
        let temporary = all.iter().find(|n| n.ends_with(".tmp")).unwrap();
        assert!(temporary.starts_with(".pgplan.prom."), "{temporary}");
        // Unpredictable: not the process id, which an attacker knows.
        assert!(
            !temporary.contains(&std::process::id().to_string()),
            "{temporary}"
        );
        out.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new report\n");
        drop(out);
        assert_eq!(names(dir.path()), vec!["pgplan.prom".to_owned()]);
    }

    #[test]
    fn a_report_never_flushed_leaves_the_previous_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.txt");
        std::fs::write(&path, "previous\n").unwrap();
        let (mut out, _) = report_destination(Some(&path), &TextOptions::default()).unwrap();
        write!(out, "half of a repo").unwrap();
        drop(out);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "previous\n");
        assert_eq!(names(dir.path()), vec!["report.txt".to_owned()]);
    }

    #[test]
    fn a_replaced_file_keeps_its_permissions_and_a_symlink_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        std::fs::write(&real, "old\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let (mut out, _) = report_destination(Some(&link), &TextOptions::default()).unwrap();
        writeln!(out, "new").unwrap();
        out.flush().unwrap();
        drop(out);
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new\n");
        assert_eq!(std::fs::metadata(&real).unwrap().mode() & 0o7777, 0o640);
    }

    #[test]
    fn a_device_is_written_through_and_its_errors_reported() {
        let (mut out, _) =
            report_destination(Some("/dev/full".as_ref()), &TextOptions::default()).unwrap();
        writeln!(out, "report").unwrap();
        let error = out.flush().unwrap_err();
        assert_eq!(
            error.to_string(),
            "writing to /dev/full (device): No space left on device (os error 28)"
        );
        // Still the device, not a regular file put in its place.
        assert!(
            std::fs::metadata("/dev/full")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }

    #[test]
    fn a_directory_or_a_missing_directory_is_refused_before_any_work() {
        let dir = tempfile::tempdir().unwrap();
        let error = report_destination(Some(dir.path()), &TextOptions::default())
            .err()
            .unwrap();
        assert_eq!(
            error.to_string(),
            format!("--output {}: is a directory", dir.path().display())
        );
        let missing = dir.path().join("no/such/dir/report.txt");
        let error = report_destination(Some(&missing), &TextOptions::default())
            .err()
            .unwrap();
        assert_eq!(
            crate::app::render_error(&error),
            format!(
                "--output {}: cannot create a file in {}: No such file or directory (os error 2)",
                missing.display(),
                dir.path().join("no/such/dir").display(),
            )
        );
    }
}
