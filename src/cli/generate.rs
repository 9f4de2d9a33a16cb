//! `heapconv generate` (hidden): the man pages and shell completions, made from the clap
//! definitions of [`super::Cli`] so that they never fall behind the flags.
//!
//! `heapconv generate man` prints `heapconv.1`; with `-o DIR` it writes `heapconv.1` and one
//! page per command (`heapconv-convert.1`, …). `heapconv generate bash|zsh|fish|powershell|elvish`
//! prints that shell's completion script, or writes it into `-o DIR` under the name the shell
//! looks for (`heapconv.bash`, `_heapconv`, `heapconv.fish`, `_heapconv.ps1`, `heapconv.elv`).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory, ValueEnum};
use clap_complete::Shell;
use heapconv::Error;

use super::Cli;

/// What `heapconv generate` writes.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Artifact {
    /// Man pages (roff): `heapconv.1`, and one per command with `-o DIR`.
    Man,
    /// Completions for bash.
    Bash,
    /// Completions for zsh.
    Zsh,
    /// Completions for fish.
    Fish,
    /// Completions for PowerShell.
    Powershell,
    /// Completions for elvish.
    Elvish,
}

impl Artifact {
    /// The shell of a completion script; `None` for the man pages.
    fn shell(self) -> Option<Shell> {
        match self {
            Artifact::Man => None,
            Artifact::Bash => Some(Shell::Bash),
            Artifact::Zsh => Some(Shell::Zsh),
            Artifact::Fish => Some(Shell::Fish),
            Artifact::Powershell => Some(Shell::PowerShell),
            Artifact::Elvish => Some(Shell::Elvish),
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct GenerateArgs {
    /// The man pages, or the completion script of a shell.
    #[arg(value_enum)]
    what: Artifact,
    /// Write into this directory (created if missing) instead of standard output; for `man`,
    /// one page per command as well.
    #[arg(short, long, value_name = "DIR")]
    output: Option<PathBuf>,
}

/// The command tree the pages and scripts describe (clap_mangen leaves this hidden command out).
/// The man pages leave out clap's `help` command too, which would get a page of its own and one
/// more per command (`heapconv-help-convert.1`, …) repeating the others.
fn command(what: Artifact) -> clap::Command {
    let mut cmd = Cli::command();
    if what == Artifact::Man {
        cmd = cmd.disable_help_subcommand(true);
    }
    cmd.build();
    cmd
}

/// Writes `what` to `out` (standard output when `None`).
pub(crate) fn run(a: GenerateArgs) -> Result<u8, Error> {
    let bytes_or_dir = |e: std::io::Error| Error::io(describe(a.what, a.output.as_deref()), e);
    match a.output {
        None => {
            let bytes = render(a.what).map_err(bytes_or_dir)?;
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(&bytes).and_then(|()| stdout.flush()).map_err(bytes_or_dir)?;
        }
        Some(ref dir) => {
            std::fs::create_dir_all(dir).map_err(bytes_or_dir)?;
            write_to(a.what, dir).map_err(bytes_or_dir)?;
        }
    }
    Ok(0)
}

/// What a failure was doing, for its message.
fn describe(what: Artifact, dir: Option<&Path>) -> String {
    let name = what.to_possible_value().map_or_else(String::new, |v| v.get_name().to_string());
    match dir {
        None => format!("writing the {name} output"),
        Some(d) => format!("writing the {name} output into {}", d.display()),
    }
}

/// The man page of `heapconv` itself, or one shell's completion script.
fn render(what: Artifact) -> std::io::Result<Vec<u8>> {
    let mut cmd = command(what);
    let mut bytes = Vec::new();
    match what.shell() {
        None => clap_mangen::Man::new(cmd).render(&mut bytes)?,
        Some(shell) => clap_complete::generate(shell, &mut cmd, "heapconv", &mut bytes),
    }
    Ok(bytes)
}

/// Writes the man pages (the program's and each command's) or a completion script into `dir`.
fn write_to(what: Artifact, dir: &Path) -> std::io::Result<()> {
    let mut cmd = command(what);
    match what.shell() {
        None => clap_mangen::generate_to(cmd, dir),
        Some(shell) => clap_complete::generate_to(shell, &mut cmd, "heapconv", dir).map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The visible commands, as `heapconv --help` lists them.
    fn commands() -> Vec<String> {
        let names: Vec<String> = command(Artifact::Man)
            .get_subcommands()
            .filter(|c| !c.is_hide_set() && c.get_name() != "help")
            .map(|c| c.get_name().to_string())
            .collect();
        assert!(names.len() >= 12, "{names:?}");
        names
    }

    #[test]
    fn every_generator_runs_and_names_every_command() {
        let names = commands();
        for what in Artifact::value_variants() {
            let text = String::from_utf8(render(*what).unwrap()).unwrap();
            for name in &names {
                // roff escapes `-` as `\-`.
                let in_roff = name.replace('-', "\\-");
                assert!(text.contains(name.as_str()) || text.contains(&in_roff), "{what:?} does not name `{name}`");
            }
            if what.shell().is_none() {
                // clap_mangen leaves hidden commands out (bash's script still completes it).
                assert!(!text.contains("generate"), "the man page names the hidden command");
            }
        }
    }

    #[test]
    fn man_into_a_directory_writes_a_page_per_command() {
        let dir = std::env::temp_dir().join(format!("heapconv-generate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        write_to(Artifact::Man, &dir).unwrap();
        assert!(dir.join("heapconv.1").is_file());
        assert!(!dir.join("heapconv-help.1").exists(), "a page for clap's help command");
        for name in commands() {
            let page = dir.join(format!("heapconv-{name}.1"));
            assert!(page.is_file(), "no {}", page.display());
        }
        for what in Artifact::value_variants().iter().filter(|w| w.shell().is_some()) {
            write_to(*what, &dir).unwrap();
        }
        let files = std::fs::read_dir(&dir).unwrap().count();
        assert!(files >= commands().len() + 1 + 5, "{files} files");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
