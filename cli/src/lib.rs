//! `spinmutex`: run programs with `libspinmutex.so` preloaded, A/B test lock strategies
//! with statistics, run the contention benchmark grid, and summarise traces.
//!
//! This crate never links the interposer: the library is a `cdylib` that the command
//! only ever puts into a child's `LD_PRELOAD`. The crate is a library too so that the
//! integration tests can read the JSON reports into the types that wrote them.

// The subcommands: each uses the shared layers below and none of them is used by a layer.
pub mod ab;
pub mod bench;
pub mod man;
pub mod report;
mod run;

// The shared layers: child processes, the library and the load handshake; samples and
// statistics; text, tables and charts; call-site names. A test (tests/layout.rs) keeps
// them free of any subcommand.
mod output;
mod process;
pub mod stats;
mod symbolize;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

pub use process::machine::Machine;
pub use process::settings::Effective;
pub use stats::metric::Direction;

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "spinmutex",
    version,
    about = "Run programs with libspinmutex.so preloaded and compare pthread mutex strategies",
    long_about = "Run programs with libspinmutex.so preloaded and compare pthread mutex strategies.\n\n\
                  The library is found in SPINMUTEX_LIB when that is set, else beside this command, \
                  else in ../lib relative to it. Every run proves that the library loaded with the \
                  settings asked for. Bad arguments exit with status 2.",
    arg_required_else_help = true,
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    Run(run::RunArgs),
    Ab(ab::AbArgs),
    Bench(bench::BenchArgs),
    Report(report::ReportArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) of spinmutex, or of one of its subcommands
    Man {
        /// run, ab, bench, report, completions or man
        subcommand: Option<String>,
        /// Write every page (spinmutex.1, spinmutex-run.1, ...) into DIR instead
        #[arg(long, value_name = "DIR")]
        out: Option<std::path::PathBuf>,
    },
    /// The contention workload of `bench`, run in a child process
    #[command(name = "__workload", hide = true, disable_help_flag = true)]
    Workload {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// The reader-writer workload of `bench --rwlock`, run in a child process
    #[command(name = "__rwlock_workload", hide = true, disable_help_flag = true)]
    RwlockWorkload {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// A busy loop beside `bench --hogs`
    #[command(name = "__hog", hide = true)]
    Hog,
}

/// What a subcommand failed with.
#[derive(Debug)]
pub enum Failure {
    /// Bad arguments found after parsing: exit status 2 with the subcommand's usage.
    Usage(&'static str, String),
    /// Anything else: message, exit status 1.
    Runtime(String),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let (sub, result) = match cli.command {
        Cmd::Run(a) => ("run", run::main(a)),
        Cmd::Ab(a) => ("ab", ab::main(a)),
        Cmd::Bench(a) => ("bench", bench::main(a)),
        Cmd::Report(a) => ("report", report::main(a)),
        Cmd::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "spinmutex", &mut script);
            if let Err(e) = output::stdout(&String::from_utf8_lossy(&script)) {
                output::stderr(&format!("spinmutex completions: {e}\n"));
                return ExitCode::from(1);
            }
            ("completions", Ok(0))
        }
        Cmd::Man { subcommand, out } => ("man", man::main(subcommand.as_deref(), out.as_deref())),
        Cmd::Workload { args } => ("__workload", Ok(bench::workload::main(&args))),
        Cmd::RwlockWorkload { args } => ("__rwlock_workload", Ok(bench::workload::rwlock_main(&args))),
        Cmd::Hog => ("__hog", Ok(bench::workload::hog())),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Failure::Usage(sub, msg)) => {
            let mut cmd = Cli::command();
            // Built, the subcommand's usage line reads `spinmutex SUB ...`.
            cmd.build();
            let cmd = cmd.find_subcommand_mut(sub).expect("a known subcommand");
            cmd.error(clap::error::ErrorKind::ValueValidation, msg).exit()
        }
        Err(Failure::Runtime(msg)) => {
            eprintln!("spinmutex {sub}: {msg}");
            ExitCode::from(1)
        }
    }
}

/// Test helper: parses `args` into the options of one subcommand, `A`.
#[cfg(test)]
pub(crate) fn parse_args<A: clap::Args + clap::FromArgMatches>(args: &[&str]) -> Result<A, clap::Error> {
    let cmd = A::augment_args(clap::Command::new("test"));
    let matches = cmd.try_get_matches_from(std::iter::once("test").chain(args.iter().copied()))?;
    A::from_arg_matches(&matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
