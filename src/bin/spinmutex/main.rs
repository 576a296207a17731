//! `spinmutex`: run programs with `libspinmutex.so` preloaded, A/B test lock strategies
//! with statistics, and run the contention benchmark grid.
//!
//! This command never links the interposer: the library is a `cdylib` that the command
//! only ever puts into a child's `LD_PRELOAD`.

mod ab;
mod args;
mod bench;
mod child;
mod json;
mod library;
mod metric;
mod report;
mod run;
mod stats;
mod svg;
mod table;
mod workload;

use std::process::ExitCode;

use args::UsageError;

const MAIN_HELP: &str = "\
spinmutex: run programs with libspinmutex.so preloaded, compare lock strategies

Usage:
  spinmutex run [OPTIONS] -- CMD [ARGS...]     run CMD with the library preloaded
  spinmutex ab [OPTIONS] -- CMD [ARGS...]      A/B test strategies on CMD, with statistics
  spinmutex bench [OPTIONS]                    run the contention benchmark grid
  spinmutex report [OPTIONS] FILE              summarise a JSON trace of the library
  spinmutex help [SUBCOMMAND]                  this text, or a subcommand's help

Options:
  -h, --help       print help (also after a subcommand: `spinmutex ab --help`)
  -V, --version    print the version

The library is found in SPINMUTEX_LIB when that is set, else beside this command,
else in ../lib relative to it. Bad arguments exit with status 2.
";

/// What a subcommand failed with.
#[derive(Debug)]
pub enum Failure {
    /// Bad arguments: message, exit status 2.
    Usage(UsageError),
    /// Anything else: message, exit status 1.
    Runtime(String),
}

impl From<UsageError> for Failure {
    fn from(e: UsageError) -> Self {
        Failure::Usage(e)
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = match std::env::args_os().skip(1).map(|a| a.into_string()).collect() {
        Ok(v) => v,
        Err(bad) => {
            eprintln!("spinmutex: argument is not valid UTF-8: {bad:?}");
            return ExitCode::from(2);
        }
    };
    let Some(sub) = argv.first() else {
        eprint!("{MAIN_HELP}");
        return ExitCode::from(2);
    };
    let rest = &argv[1..];
    let result: Result<u8, Failure> = match sub.as_str() {
        "run" => run::main(rest),
        "ab" => ab::main(rest),
        "bench" => bench::main(rest),
        "report" => report::main(rest),
        "help" => help(rest),
        "-h" | "--help" => {
            print!("{MAIN_HELP}");
            Ok(0)
        }
        "-V" | "--version" => {
            println!("spinmutex {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        // Hidden: the benchmark's child processes.
        "__workload" => Ok(workload::main(rest)),
        "__hog" => workload::hog(rest),
        other => Err(Failure::Usage(UsageError::new(format!("unknown subcommand '{other}'")))),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Failure::Usage(e)) => {
            eprintln!("spinmutex: {e}");
            let hint = match sub.as_str() {
                "run" | "ab" | "bench" | "report" => format!("spinmutex {sub} --help"),
                _ => "spinmutex --help".to_string(),
            };
            eprintln!("Try '{hint}' for more information.");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(msg)) => {
            eprintln!("spinmutex: {msg}");
            ExitCode::from(1)
        }
    }
}

fn help(rest: &[String]) -> Result<u8, Failure> {
    match rest.first().map(String::as_str) {
        None => print!("{MAIN_HELP}"),
        Some("run") => print!("{}", run::HELP),
        Some("ab") => print!("{}", ab::HELP),
        Some("bench") => print!("{}", bench::HELP),
        Some("report") => print!("{}", report::HELP),
        Some(other) => {
            return Err(UsageError::new(format!("no help for unknown subcommand '{other}'")).into())
        }
    }
    Ok(0)
}
