//! What both grids (the mutex grid and the rwlock grid) share. A grid plugs its
//! workload in as a [`Workload`] (the child's subcommand, the keys its output line must
//! hold, the key that says its shared data stayed consistent); [`run`] runs it once
//! under an arm, checks that the library loaded as asked and reads the line, and
//! [`interleave`] runs a grid's cells, every arm once per round. The rest is the
//! throughput table with a column group per arm and its number formats, the closing
//! warnings, the files written and the exit status.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::bench::BenchArgs;
use crate::output::progress::Progress;
use crate::output::text::{self, Table};
use crate::process::library::{self, Arm};
use crate::process::settings::Effective;
use crate::process::settings::Expected;
use crate::process::{child, handshake};
use crate::stats::sample::{Sample, Versus};
use crate::Failure;

/// A grid's workload, as a run needs it.
pub(super) struct Workload {
    /// The hidden subcommand that runs it in a child of this command.
    pub subcommand: &'static str,
    /// The keys its output line must hold, and those whose values are words.
    pub required: &'static [&'static str],
    pub words: &'static [&'static str],
    /// The key that is 1 when the workload's shared data stayed consistent, and what a
    /// run in which it did not is told as.
    pub consistent: (&'static str, &'static str),
}

/// One run of a workload under one arm.
pub(super) struct Run {
    pub wall_s: f64,
    /// The output line, also that of a run that failed when it printed one.
    pub sample: Option<Sample>,
    pub error: Option<String>,
    /// What the library said when it loaded in the run's processes.
    pub loads: Vec<Effective>,
}

/// Runs `workload` once under `arm`, with the arguments `args` adds to the child's
/// command line. Stops the grid (Err) when the library did not load as asked, since
/// every later run would measure the wrong thing too. None when the command was
/// interrupted: the run is not finished.
pub(super) fn run(
    workload: &Workload,
    exe: &Path,
    lib: &Path,
    env: &[(String, String)],
    arm: Arm,
    args: impl FnOnce(&mut Command),
) -> Result<Option<Run>, Failure> {
    let mut cmd = Command::new(exe);
    cmd.arg(workload.subcommand);
    args(&mut cmd);
    library::apply(arm, &mut cmd, lib, env);
    let mut rec = Run { wall_s: f64::NAN, sample: None, error: None, loads: Vec::new() };
    let done = match child::run(&mut cmd, child::Output::Keep) {
        _ if child::interrupted().is_some() => return Ok(None),
        Err(e) => {
            rec.error = Some(format!("cannot start the workload: {e}"));
            return Ok(Some(rec));
        }
        Ok(done) => done,
    };
    check_loads(arm, exe, env, &done)?;
    rec.wall_s = done.wall.as_secs_f64();
    let parsed = Sample::parse(&String::from_utf8_lossy(&done.stdout), workload.required, workload.words);
    if !done.termination.success() {
        rec.error = Some(failure_message(&done));
        rec.sample = parsed.ok();
    } else {
        let (key, inconsistent) = workload.consistent;
        match parsed {
            Ok(s) if s.get(key) != 1.0 => {
                rec.error = Some(inconsistent.into());
                rec.sample = Some(s);
            }
            Ok(s) => rec.sample = Some(s),
            Err(e) => rec.error = Some(e),
        }
    }
    rec.loads = done.loads;
    Ok(Some(rec))
}

/// What a grid keeps of a run: the figures it read, or why it failed.
pub(super) trait Record {
    fn sample(&self) -> Option<&Sample>;
    fn error(&self) -> Option<&str>;
}

/// The runs of a grid that finished, in the order run, and per arm the settings the
/// library reported when it loaded (None for `none`).
pub(super) struct Ran<R> {
    pub records: Vec<R>,
    pub effective: BTreeMap<String, Option<Effective>>,
}

/// Runs a grid's cells in order: in each, `runs_of(cell)` rounds of every arm once, so
/// that the arms of a round see the same machine, with a progress line per run that
/// `head` names. `run_one(index, cell, arm, run)` runs one; None once the command is
/// interrupted, which ends the grid with the runs that finished.
pub(super) fn interleave<C, R: Record>(
    cells: &[C],
    arms: &[Arm],
    progress: &mut Progress,
    runs_of: impl Fn(&C) -> u64,
    head: impl Fn(&C, Arm, u64, u64) -> String,
    mut run_one: impl FnMut(usize, &C, Arm, u64) -> Result<Option<(R, Vec<Effective>)>, Failure>,
) -> Result<Ran<R>, Failure> {
    let mut ran = Ran { records: Vec::new(), effective: BTreeMap::new() };
    'cells: for (index, cell) in cells.iter().enumerate() {
        let runs = runs_of(cell);
        for run in 1..=runs {
            for &arm in arms {
                let Some((rec, loads)) = run_one(index, cell, arm, run)? else {
                    break 'cells;
                };
                if arm.strategy().is_some() {
                    ran.effective.entry(arm.to_string()).or_insert_with(|| loads.last().cloned());
                } else if arm == Arm::None {
                    ran.effective.entry(arm.to_string()).or_insert(None);
                }
                let head = head(cell, arm, run, runs);
                match (rec.sample(), rec.error()) {
                    (Some(s), None) => progress.step(
                        &format!(
                            "{head}: {:>10.1} kops/s, fairness {:.2}",
                            s.ops_per_s() / 1e3,
                            s.fairness_of("ops")
                        ),
                        false,
                    ),
                    (_, e) => progress.step(&format!("{head}: FAILED: {}", e.unwrap_or("?")), true),
                }
                ran.records.push(rec);
            }
        }
    }
    Ok(ran)
}

/// A grid's exit status: 128 + the signal that interrupted it, else 1 when a run
/// failed, else 0.
pub(crate) fn exit_status(interrupted: Option<i32>, all_ok: bool) -> u8 {
    match interrupted {
        Some(sig) => child::interrupted_status(sig),
        None => u8::from(!all_ok),
    }
}

/// What closes a grid's text report: the warnings, and the runs that failed (one line
/// each), which the statistics leave out.
pub(crate) fn warnings_and_failures(warnings: &[String], failed: &[String]) -> String {
    let mut out = String::new();
    if !warnings.is_empty() {
        out.push_str("\nwarnings:\n");
        for w in warnings {
            out += &format!("  {w}\n");
        }
    }
    if !failed.is_empty() {
        out += &format!("\n{} failed run(s), left out of the statistics:\n", failed.len());
        for f in failed {
            out += &format!("  {f}\n");
        }
    }
    out
}

/// `-` as the file of --csv, --json or --svg: standard output, for a pipe into jq or
/// another tool.
fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// How many of --csv, --json and --svg go to standard output.
fn to_stdout(a: &BenchArgs) -> usize {
    [&a.csv, &a.json, &a.svg].iter().filter(|f| f.as_deref().is_some_and(is_stdout)).count()
}

/// Refuses more than one of --csv, --json and --svg on standard output, and a file
/// that cannot be made, before any measurement.
pub(crate) fn check_outputs(a: &BenchArgs) -> Result<(), Failure> {
    if to_stdout(a) > 1 {
        return Err(Failure::Usage(
            "bench",
            "only one of --csv, --json and --svg can be - (standard output)".into(),
        ));
    }
    for (option, path) in [("--csv", &a.csv), ("--json", &a.json), ("--svg", &a.svg)] {
        if let Some(path) = path {
            crate::output::check_file(option, path).map_err(|e| Failure::Usage("bench", e))?;
        }
    }
    Ok(())
}

/// Writes the files a grid was asked for (--csv, --json, --svg; `-` is standard
/// output), then the text report (see `output::files_then_text`), with the default
/// action of SIGINT and SIGTERM back: the measurement is over, and a file that blocks
/// (a FIFO nobody reads) must not make the command unstoppable.
pub(crate) fn finish(files: Vec<(&Path, String)>, text: &str) -> Result<(), Failure> {
    child::stop_catching_interrupts();
    crate::output::files_then_text("bench", files, text).map_err(Failure::Runtime)
}

/// Stops the benchmark (Err) when the library did not load in a run of `arm` as asked:
/// every later run would measure the wrong thing too.
fn check_loads(
    arm: Arm,
    exe: &Path,
    env: &[(String, String)],
    done: &child::Finished,
) -> Result<(), Failure> {
    match arm.strategy() {
        None if !done.loads.is_empty() => {
            return Err(Failure::Runtime(format!(
                "the `{arm}` arm loaded libspinmutex.so anyway (in {}): it comes from somewhere else than \
                 LD_PRELOAD (/etc/ld.so.preload?)",
                done.loads[0].exe
            )))
        }
        None => {}
        Some(_) if done.loads.is_empty() => {
            return Err(Failure::Runtime(handshake::not_loaded(&exe.display().to_string())))
        }
        Some(strategy) => {
            let expected = Expected::new(strategy, env);
            for e in &done.loads {
                let wrong = expected.mismatches(e);
                if !wrong.is_empty() {
                    return Err(Failure::Runtime(format!(
                        "arm {arm}: the library does not run the settings asked for: {}",
                        wrong.join("; ")
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Why a workload run failed: how it ended and the last line it wrote on stderr.
fn failure_message(done: &child::Finished) -> String {
    let err = String::from_utf8_lossy(&done.stderr);
    let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut msg = done.termination.describe();
    if matches!(done.termination, child::Termination::Signaled { signo: libc::SIGALRM, .. }) {
        msg.push_str(" (the workload's timeout: a hang?)");
    }
    if !last.is_empty() {
        msg = format!("{msg}: {last}");
    }
    msg
}

pub(crate) fn kops(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.0}", v / 1e3))
}

pub(crate) fn ns(v: Option<f64>) -> String {
    text::duration_ns(v.unwrap_or(f64::NAN), true)
}

/// A change against a baseline, with `*` when Welch's test says significant.
pub(crate) fn change_cell(ratio: Option<f64>, significant: Option<bool>) -> String {
    let mark = if significant == Some(true) { "*" } else { "" };
    format!("{}{mark}", text::change(ratio.unwrap_or(f64::NAN)))
}

/// What a throughput table shows of one arm in one cell (both grids' summaries give it).
pub(crate) struct ArmFigures<'a> {
    pub median: Option<f64>,
    pub stddev_pct: Option<f64>,
    pub versus: &'a Versus,
    pub bound: Option<f64>,
}

/// A throughput table: per row the cell's `keys`, then per arm (in `strategies`' order)
/// its kops/s, sd% and change against `reference` (for the reference itself: against
/// none, when none ran), then the cell's bound.
pub(crate) fn arm_columns_table<'a>(
    keys: &[&str],
    strategies: &[String],
    reference: &str,
    rows: impl IntoIterator<Item = (Vec<String>, Vec<Option<ArmFigures<'a>>>)>,
) -> String {
    let has_none = strategies.iter().any(|s| s == "none");
    let mut t = Table::new(0);
    let mut h1 = vec![String::new(); keys.len()];
    let mut h2: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    for s in strategies {
        h1.extend([s.clone(), String::new()]);
        h2.extend(["kops/s".to_string(), "sd%".to_string()]);
        if s != reference && s != "none" {
            h1.push(String::new());
            h2.push(format!("vs {reference}"));
        }
        if s == reference && has_none {
            h1.push(String::new());
            h2.push("vs none".into());
        }
    }
    h1.push(String::new());
    h2.push("bound".into());
    t.header = vec![h1, h2];
    for (mut row, arms) in rows {
        let mut bound = None;
        for (s, sum) in strategies.iter().zip(arms) {
            row.push(kops(sum.as_ref().and_then(|c| c.median)));
            row.push(text::pct(sum.as_ref().and_then(|c| c.stddev_pct).unwrap_or(f64::NAN)));
            if s != reference && s != "none" {
                row.push(
                    sum.as_ref().map_or("-".into(), |c| {
                        change_cell(c.versus.ratio_to_reference, c.versus.significant)
                    }),
                );
            }
            if s == reference && has_none {
                row.push(sum.as_ref().map_or("-".into(), |c| {
                    change_cell(c.versus.ratio_to_none, c.versus.significant_to_none)
                }));
            }
            bound = bound.or(sum.and_then(|c| c.bound));
        }
        row.push(kops(bound));
        t.rows.push(row);
    }
    t.render()
}
