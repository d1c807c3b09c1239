//! `pgplan completions` and `pgplan man`: shell completion scripts and man pages, generated from
//! the same clap definition the binary parses its arguments with, so they never drift from it.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::exit;

pub fn completions(args: CompletionsArgs) -> Result<u8> {
    let mut command = Cli::command();
    // Generated into memory first: clap_complete panics when its writer fails, and a reader
    // that stops early (`| head -1`) closes the pipe; write_all's BrokenPipe error is the quiet
    // exit every other report gets.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "pgplan", &mut script);
    let mut out = io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(exit::SUCCESS)
}

pub fn man(args: ManArgs) -> Result<u8> {
    let command = Cli::command();
    match args.dir {
        None => {
            let mut out = io::stdout().lock();
            clap_mangen::Man::new(command).render(&mut out)?;
            out.flush()?;
        }
        Some(dir) => write_pages(command, &dir)?,
    }
    Ok(exit::SUCCESS)
}

/// pgplan.1 and pgplan-<command>.1 for each command, as `man pgplan-audit` expects them.
fn write_pages(mut command: clap::Command, dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // Built, the subcommands carry the global options (--color, --verbose) and the version.
    command.build();
    let mut pages = vec![("pgplan".to_owned(), command.clone())];
    for sub in command.get_subcommands() {
        let name = format!("pgplan-{}", sub.get_name());
        // The page's NAME and SYNOPSIS say `pgplan-audit`; man's convention for git-style tools.
        let page = sub
            .clone()
            .name(name.clone())
            .version(env!("CARGO_PKG_VERSION"));
        pages.push((name, page));
    }
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut bytes = Vec::new();
        clap_mangen::Man::new(page).render(&mut bytes)?;
        fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("pgplan: wrote {}", path.display());
    }
    Ok(())
}
