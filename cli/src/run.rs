//! `spinmutex run`: run a command with the library preloaded.

use std::path::PathBuf;
use std::process::Command;

use clap::Args;
use spinmutex_names::{self as names, Strategy};

use crate::library::{self, parse_arm, Arm};
use crate::settings::{self, Expected, LibSettings};
use crate::{child, handshake, Failure};

/// Run a command with libspinmutex.so preloaded
#[derive(Args, Debug)]
#[command(long_about = "Run a command with libspinmutex.so preloaded.\n\n\
    The library is appended to any LD_PRELOAD already set. CMD's exit status is passed \
    through; a CMD killed by a signal is reported on stderr and gives 128 + the signal \
    number. While CMD runs, SIGINT and SIGQUIT are left to it and SIGTERM and SIGHUP are \
    forwarded to it. A CMD that cannot be started gives 127 (not found) or 126.\n\n\
    Every process of CMD that loads the library reports it; when none does (a static or \
    setuid program, or one that clears LD_PRELOAD), or the settings it reports are not the \
    ones asked for, run says so and exits with 1 (or CMD's own non-zero status).")]
pub struct RunArgs {
    /// The strategy: glibc, futex, spin; `none` runs CMD without the library
    /// [SPINMUTEX_STRATEGY; default: the environment's, else spin]
    #[arg(long, value_name = "S", value_parser = parse_arm)]
    pub strategy: Option<Arm>,

    /// Print the settings the library reports from each process it loaded in
    #[arg(short, long)]
    pub verbose: bool,

    #[command(flatten)]
    pub settings: LibSettings,

    /// The command and its arguments
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

pub fn main(a: RunArgs) -> Result<u8, Failure> {
    let env = a.settings.env();
    settings::check_inherited(&env, a.strategy.is_some()).map_err(|m| Failure::Usage("run", m))?;
    let arm = match a.strategy {
        Some(arm) => arm,
        None => {
            let inherited = std::env::var(names::STRATEGY.name).ok();
            let strategy =
                inherited.and_then(|s| Strategy::from_name(s.as_bytes())).unwrap_or(names::DEFAULT_STRATEGY);
            Arm::Strategy(strategy)
        }
    };
    let lib =
        if arm.strategy().is_some() { library::find().map_err(Failure::Runtime)? } else { PathBuf::new() };
    let mut cmd = Command::new(&a.command[0]);
    cmd.args(&a.command[1..]);
    library::apply(arm, &mut cmd, &lib, &env);
    let done = match child::run(&mut cmd, false, true) {
        Ok(done) => done,
        Err(e) => {
            eprintln!("spinmutex run: cannot run {}: {e}", a.command[0]);
            return Ok(if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 });
        }
    };
    if let child::Termination::Signaled { .. } = done.termination {
        eprintln!("spinmutex run: {} {}", a.command[0], done.termination.describe());
    }
    let status = done.termination.shell_status();
    let failed = |msg: String| {
        eprintln!("spinmutex run: {msg}");
        Ok(if status == 0 { 1 } else { status })
    };
    if a.verbose {
        for e in &done.loads {
            eprintln!("spinmutex run: loaded in pid {} ({}): {}", e.pid, e.exe, e.describe());
        }
    }
    match arm.strategy() {
        None if !done.loads.is_empty() => {
            return failed(format!(
            "--strategy none, yet the library loaded in {} (inherited LD_PRELOAD, or /etc/ld.so.preload?)",
            done.loads[0].exe
        ))
        }
        None => {}
        Some(_) if done.loads.is_empty() => return failed(handshake::not_loaded(&a.command[0])),
        Some(strategy) => {
            let expected = Expected::new(strategy, &env);
            for e in &done.loads {
                let wrong = expected.mismatches(e);
                if !wrong.is_empty() {
                    return failed(format!(
                        "the library in pid {} ({}) runs other settings: {}",
                        e.pid,
                        e.exe,
                        wrong.join("; ")
                    ));
                }
            }
        }
    }
    Ok(status)
}
