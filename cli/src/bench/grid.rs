//! What both grids (the mutex grid and the rwlock grid) share: checking that a run
//! loaded the library as asked and saying why one failed, the throughput table with a
//! column group per arm and its number formats, the closing warnings, the files written
//! and the exit status.

use std::path::Path;

use crate::output::text::{self, Table};
use crate::process::library::Arm;
use crate::process::settings::Expected;
use crate::process::{child, handshake};
use crate::stats::sample::Versus;
use crate::Failure;

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
pub(crate) fn print_warnings_and_failures(warnings: &[String], failed: &[String]) {
    if !warnings.is_empty() {
        println!("\nwarnings:");
        for w in warnings {
            println!("  {w}");
        }
    }
    if !failed.is_empty() {
        println!("\n{} failed run(s), left out of the statistics:", failed.len());
        for f in failed {
            println!("  {f}");
        }
    }
}

/// Writes one of the files a grid was asked for (--csv, --json, --svg), and says so.
pub(crate) fn write(path: &Path, text: String) -> Result<(), Failure> {
    std::fs::write(path, text)
        .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", path.display())))?;
    eprintln!("spinmutex bench: wrote {}", path.display());
    Ok(())
}

/// Stops the benchmark (Err) when the library did not load in a run of `arm` as asked:
/// every later run would measure the wrong thing too.
pub(crate) fn check_loads(
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
pub(crate) fn failure_message(done: &child::Finished) -> String {
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
