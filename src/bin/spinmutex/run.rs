//! `spinmutex run`: run a command with the library preloaded.

use std::process::Command;

use crate::args::{self, Arg, Parser, UsageError};
use crate::child;
use crate::library::{self, Setup};
use crate::Failure;

pub const HELP: &str = "\
spinmutex run: run a command with libspinmutex.so preloaded

Usage: spinmutex run [OPTIONS] [--] CMD [ARGS...]

The library is appended to any LD_PRELOAD already set. CMD's exit status is passed
through; a CMD killed by a signal is reported on stderr and gives 128 + the signal
number. While CMD runs, SIGINT and SIGQUIT are left to it and SIGTERM and SIGHUP are
forwarded to it. A CMD that cannot be started gives 127 (not found) or 126.

Options:
  --strategy S         SPINMUTEX_STRATEGY (glibc, futex, spin, ...; `none`: no preload)
  -h, --help           this help
";

/// What `run` was asked to do.
#[derive(Debug, PartialEq)]
pub struct RunArgs {
    pub strategy: Option<String>,
    pub env: Vec<(String, String)>,
    pub command: Vec<String>,
}

/// Parses `run`'s arguments; Ok(None) means help was printed.
pub fn parse(argv: &[String]) -> Result<Option<RunArgs>, UsageError> {
    let mut p = Parser::new(argv);
    let mut strategy = None;
    let mut env = Vec::new();
    let mut command = Vec::new();
    while let Some(arg) = p.next_arg()? {
        match arg {
            Arg::Opt(o) => match o.as_str() {
                "-h" | "--help" => {
                    print!("{HELP}\n{}", args::KNOBS_HELP);
                    return Ok(None);
                }
                "--strategy" => {
                    let s = p.value(&o)?;
                    if s.is_empty() {
                        return Err(UsageError::new("--strategy: the value must not be empty"));
                    }
                    strategy = Some(s);
                }
                _ => {
                    if !args::knob(&o, &mut p, &mut env)? {
                        return Err(UsageError::new(format!("unknown option '{o}'")));
                    }
                }
            },
            Arg::Positional(first) => {
                command.push(first);
                command.extend(p.remaining());
            }
            Arg::Rest(rest) => command.extend(rest),
        }
    }
    if command.is_empty() {
        return Err(UsageError::new("no command given (spinmutex run [OPTIONS] -- CMD [ARGS...])"));
    }
    Ok(Some(RunArgs { strategy, env, command }))
}

pub fn main(argv: &[String]) -> Result<u8, Failure> {
    let Some(a) = parse(argv)? else { return Ok(0) };
    let setup = match &a.strategy {
        Some(s) => Setup::for_strategy(s),
        None => Setup { preload: true, strategy: None },
    };
    let lib = if setup.preload { library::find().map_err(Failure::Runtime)? } else { Default::default() };
    let mut cmd = Command::new(&a.command[0]);
    cmd.args(&a.command[1..]);
    setup.apply(&mut cmd, &lib, &a.env);
    match child::run(&mut cmd, false, true) {
        Ok(done) => {
            if let child::Termination::Signaled { .. } = done.termination {
                eprintln!("spinmutex: {} {}", a.command[0], done.termination.describe());
            }
            Ok(done.termination.shell_status())
        }
        Err(e) => {
            eprintln!("spinmutex: cannot run {}: {e}", a.command[0]);
            Ok(if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::words;

    #[test]
    fn parses_knobs_and_command() {
        let a = parse(&words(&["--strategy", "spin", "--spin-limit=20", "--", "prog", "--strategy", "x"]))
            .unwrap()
            .unwrap();
        assert_eq!(a.strategy.as_deref(), Some("spin"));
        assert_eq!(a.env, vec![("SPINMUTEX_SPIN_LIMIT".to_string(), "20".to_string())]);
        assert_eq!(a.command, words(&["prog", "--strategy", "x"]));
        // Without `--`, the first word starts the command.
        let a = parse(&words(&["--stats", "prog", "-x"])).unwrap().unwrap();
        assert_eq!(a.command, words(&["prog", "-x"]));
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(parse(&words(&[])).is_err());
        assert!(parse(&words(&["--strategy"])).is_err());
        assert!(parse(&words(&["--bogus", "--", "x"])).is_err());
        assert!(parse(&words(&["--env", "NOPE", "--", "x"])).is_err());
        assert!(parse(&words(&["--strategy", "spin", "--"])).is_err());
    }
}
