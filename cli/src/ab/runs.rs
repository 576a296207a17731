//! Running the arms of `ab`: which arms and baselines, one run of the command under an
//! arm, and the proof that the library loaded as asked.

use std::path::Path;
use std::process::Command;

use spinmutex_names::Strategy;

use crate::process::library::{self, Arm};
use crate::process::settings::{Effective, Expected};
use crate::process::{child, handshake};
use crate::Failure;

use super::*;

/// The arms to run: as given (no repeats), else none, glibc, spin; `none` added beside
/// glibc unless --without-none.
pub(super) fn arms(a: &AbArgs) -> Result<Vec<Arm>, Failure> {
    let mut arms: Vec<Arm> = Vec::new();
    for arm in &a.strategies {
        if arms.contains(arm) {
            return Err(Failure::Usage("ab", format!("--strategy: '{arm}' is given twice")));
        }
        arms.push(*arm);
    }
    if arms.is_empty() {
        arms = vec![Arm::Strategy(Strategy::Glibc), Arm::Strategy(Strategy::Spin)];
    }
    if !a.without_none {
        library::with_none_baseline(&mut arms);
    }
    Ok(arms)
}

/// The arms others are compared with: glibc and none when they run, else the first.
pub(super) fn baselines(arms: &[Arm]) -> Vec<usize> {
    let found: Vec<usize> = [Arm::Strategy(Strategy::Glibc), Arm::None]
        .iter()
        .filter_map(|b| arms.iter().position(|a| a == b))
        .collect();
    if found.is_empty() {
        vec![0]
    } else {
        found
    }
}

/// (arm, baseline) pairs: every other arm against each baseline, then the first
/// baseline against the second (glibc against none: the preload's own cost).
pub(super) fn pairs(arms: &[Arm], refs: &[usize]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for x in 0..arms.len() {
        if !refs.contains(&x) {
            out.extend(refs.iter().map(|&b| (x, b)));
        }
    }
    if let [first, second] = refs {
        out.push((*first, *second));
    }
    out
}

/// One run of CMD under `arm`; None when ab was interrupted (the run did not finish).
pub(super) fn one_run(
    a: &AbArgs,
    lib: &Path,
    env: &[(String, String)],
    ai: usize,
    arm: Arm,
    index: u64,
) -> Result<Option<Run>, Failure> {
    let mut cmd = Command::new(&a.command[0]);
    cmd.args(&a.command[1..]);
    library::apply(arm, &mut cmd, lib, env);
    let output = child::Output::Condense { metric: a.metric.clone(), show: a.show_output };
    let done = child::run(&mut cmd, output);
    if child::interrupted().is_some() {
        return Ok(None);
    }
    let done = done.map_err(|e| Failure::Runtime(format!("cannot run {}: {e}", a.command[0])))?;
    verify(arm, env, &a.command[0], &done.loads)?;
    let mut r = Run {
        arm: ai,
        index,
        wall_s: done.wall.as_secs_f64(),
        cpu_s: done.cpu_s(),
        error: None,
        metric: None,
        metric_error: None,
        loads: done.loads,
    };
    if !done.termination.success() {
        let err = String::from_utf8_lossy(&done.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        let tail = if last.is_empty() { String::new() } else { format!(" (stderr: {last})") };
        r.error = Some(format!("{}{tail}", done.termination.describe()));
        return Ok(Some(r));
    }
    if let Some(m) = &a.metric {
        match m.extract(&String::from_utf8_lossy(&done.stdout), &String::from_utf8_lossy(&done.stderr)) {
            Ok(found) => r.metric = Some(found),
            Err(e) => r.metric_error = Some(e),
        }
    }
    Ok(Some(r))
}

/// A run proves the library loaded with the settings asked for (or, for `none`, that
/// it did not load); anything else stops the comparison.
pub(super) fn verify(
    arm: Arm,
    env: &[(String, String)],
    program: &str,
    loads: &[Effective],
) -> Result<(), Failure> {
    match arm.strategy() {
        None => match loads.first() {
            Some(e) => Err(Failure::Runtime(format!(
                "the `none` arm loaded libspinmutex.so anyway (in {}): it comes from somewhere else than \
                 LD_PRELOAD (/etc/ld.so.preload?), so `none` would not measure the program without it",
                e.exe
            ))),
            None => Ok(()),
        },
        Some(_) if loads.is_empty() => Err(Failure::Runtime(handshake::not_loaded(program))),
        Some(strategy) => {
            let expected = Expected::new(strategy, env);
            for e in loads {
                let wrong = expected.mismatches(e);
                if !wrong.is_empty() {
                    return Err(Failure::Runtime(format!(
                        "arm {arm}: the library in pid {} ({}) does not run the settings asked for: {}",
                        e.pid,
                        e.exe,
                        wrong.join("; ")
                    )));
                }
            }
            Ok(())
        }
    }
}
