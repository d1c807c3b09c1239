//! Whether a server build in the cache is whole: its completion marker read from disk and
//! checked by the pure rules of `pgdist::cache`. Both finding server binaries (`cluster`) and
//! fetching a build (`fetch`) ask this, so it sits apart from both.

use std::fs;
use std::path::Path;

use crate::pgdist::cache::{self, CacheProblem, Whole};

/// Whether `dir` holds a whole build, by its completion marker and the sizes it lists.
pub fn inspect(dir: &Path) -> Result<Whole, CacheProblem> {
    let read = |name: &str| fs::read_to_string(dir.join(name)).ok();
    cache::check(
        read(cache::MARKER).as_deref(),
        read(cache::VERSION_FILE).as_deref(),
        |path| {
            fs::symlink_metadata(dir.join(path))
                .ok()
                .filter(fs::Metadata::is_file)
                .map(|m| m.len())
        },
    )
}
