//! `spinmutex ab`: run a command under several arms (strategies, and `none` without
//! the library), interleaved, and say in words what differs and how surely.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::output::progress::Progress;
use crate::output::text::{self, finite};
use crate::process::child;
use crate::process::library::{self, parse_arm, Arm};
use crate::process::machine::Machine;
use crate::process::settings::{self, Effective, LibSettings};
use crate::stats::metric::{self, Direction, Metric};
use crate::stats::{self};
use crate::Failure;

mod compare;
mod runs;

use compare::*;
use runs::*;

/// A/B test lock strategies on a command, with statistics
#[derive(Args, Debug)]
#[command(long_about = "A/B test lock strategies on a command, with statistics.\n\n\
    Runs CMD under each arm, interleaved (A B C A B C ...), after warm-up rounds, and reports \
    per arm the mean, median and stddev of the wall time, the CPU time (user + system, of CMD \
    and its children) and, with --metric, a number from CMD's output. Then each arm is \
    compared with the baselines, glibc (every call forwarded through the library) and none \
    (no library), in words: which is faster or better and by how much, with the 95% \
    confidence interval of the ratio of means (Fieller's method) and Welch's t-test; or, \
    when the difference is lost in the noise, how many runs would resolve 5%.\n\n\
    Before the first run every setting is checked. Every run must prove that the library \
    loaded with the settings asked for (and that `none` ran without it); a run that cannot \
    stops ab with the likely cause. CMD's stdin is /dev/null; its stdout is discarded (unless \
    --metric reads it, line by line, keeping only the first line that matches) and of its \
    stderr only the last line is kept, for failure messages; --show-output passes both on. \
    A run in which CMD fails is \
    reported and left out; a run whose --metric finds no number keeps its wall and CPU \
    times. ab stops when every warm-up run of every arm fails.\n\n\
    SIGINT, SIGTERM or SIGHUP stop the running CMD (its whole process group: SIGTERM, then \
    SIGKILL 2 s later), and ab reports (and writes to --json) the runs finished so far, \
    marked as interrupted. SIGKILL, which ab cannot catch, kills the running CMD too (CMD \
    itself, not the processes it started). Exit status: 0; 1 when a run failed; 128 + the signal number \
    when interrupted.")]
pub struct AbArgs {
    /// An arm to compare (repeatable, or a comma list): glibc, futex, spin, auto, kernel,
    /// or none (CMD without the library) [default: none,glibc,spin]
    #[arg(short = 's', long = "strategy", value_name = "S", value_delimiter = ',', value_parser = parse_arm)]
    pub strategies: Vec<Arm>,

    /// Do not add the `none` arm that otherwise runs whenever glibc is compared
    #[arg(long)]
    pub without_none: bool,

    /// Measured runs per arm
    #[arg(short = 'n', long, value_name = "N", default_value_t = 10, value_parser = parse_runs)]
    pub runs: u64,

    /// Unmeasured rounds first
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub warmup: u64,

    /// Also compare a number from CMD's output (stdout, then stderr, line by line): the
    /// first capture group of REGEX, or the whole match. Example: 'ops/s=([0-9.]+)'
    #[arg(long, value_name = "REGEX", value_parser = Metric::compile)]
    pub metric: Option<Metric>,

    /// The metric is better when higher (default: inferred from its unit; ops/s, MB/s,
    /// tps, events... are)
    #[arg(long, requires = "metric", conflicts_with = "lower_is_better")]
    pub higher_is_better: bool,

    /// The metric is better when lower (default: inferred from its unit; s, ms, us,
    /// ns, latency... are)
    #[arg(long, requires = "metric")]
    pub lower_is_better: bool,

    /// Write every run, the settings of each arm and the summary as JSON to FILE (`-`:
    /// standard output, and the text report goes to standard error)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Pass CMD's standard output and error through (on this command's stdout and
    /// stderr) instead of discarding them
    #[arg(long)]
    pub show_output: bool,

    #[command(flatten)]
    pub settings: LibSettings,

    /// The command and its arguments
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Runs shorter than this are too short to time well.
const SHORTEST_TIMED_S: f64 = 0.005;

/// `-n`: 2 to 1,000,000; the statistics need 2 runs of each arm.
fn parse_runs(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if (2..=1_000_000).contains(&n) => Ok(n),
        Ok(n) if n < 2 => Err(format!(
            "{n} run(s) per arm: the statistics (a mean's interval, a comparison) need at least 2"
        )),
        _ => Err("a number of runs per arm, 2 to 1000000".into()),
    }
}

/// The JSON `ab --json` writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AbReport {
    /// "spinmutex ab"
    pub tool: String,
    pub version: String,
    pub command: Vec<String>,
    /// The arms, in the order they ran in each round.
    pub strategies: Vec<String>,
    pub runs_per_strategy: u64,
    pub warmup_rounds: u64,
    /// The --metric pattern.
    pub metric: Option<String>,
    /// higher-is-better, lower-is-better or unknown.
    pub metric_direction: Option<Direction>,
    /// Why the direction is what it is.
    pub metric_direction_reason: Option<String>,
    /// The library settings given on the command line.
    pub env: BTreeMap<String, String>,
    pub machine: Machine,
    /// Everything that makes the comparison less trustworthy.
    pub warnings: Vec<String>,
    pub arms: Vec<ArmInfo>,
    /// The signal that interrupted ab (`SIGINT`, ...): the runs are those that finished
    /// before it. Null when every run was made.
    #[serde(default)]
    pub interrupted: Option<String>,
    pub runs: Vec<RunRecord>,
    /// Per quantity (`wall_s`, `cpu_s`, `metric`): each arm's statistics.
    pub summary: BTreeMap<String, Vec<ArmSummary>>,
    /// Per quantity: each arm against each baseline.
    pub comparisons: BTreeMap<String, Vec<ComparisonRecord>>,
}

/// How an arm ran: with the library (and what it reported), or without.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArmInfo {
    pub name: String,
    pub preload: bool,
    /// The settings the library reported at load, in the first measured process.
    pub effective: Option<Effective>,
    /// The executables the library loaded in (a wrapper script's shell, the program).
    pub loaded_in: Vec<String>,
}

/// One measured run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    pub strategy: String,
    pub run: u64,
    /// CMD exited with status 0.
    pub ok: bool,
    pub error: Option<String>,
    pub wall_s: f64,
    pub cpu_s: f64,
    pub metric: Option<f64>,
    /// Why the metric is missing from a run that exited 0.
    pub metric_error: Option<String>,
}

/// One arm's statistics of one quantity.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArmSummary {
    pub strategy: String,
    /// Runs that count.
    pub n: usize,
    pub mean: Option<f64>,
    pub median: Option<f64>,
    pub stddev: Option<f64>,
    pub stddev_pct: Option<f64>,
    /// 95% interval of the mean.
    pub ci95: Option<[f64; 2]>,
}

/// An arm against a baseline, for one quantity.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComparisonRecord {
    pub strategy: String,
    pub baseline: String,
    /// mean(strategy) / mean(baseline).
    pub ratio: Option<f64>,
    /// 95% interval of the ratio (Fieller); null when unbounded or not computed.
    pub ratio_ci95: Option<[f64; 2]>,
    /// Welch's two-sided p-value.
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
    /// True when the strategy is better than the baseline, false when worse, null when
    /// not significant or the direction is unknown.
    pub better: Option<bool>,
    /// Runs per arm that would detect a 5% difference at this noise.
    pub runs_for_5pct: Option<u64>,
    /// The comparison in words.
    pub verdict: String,
}

/// One run as measured.
#[derive(Debug, Clone)]
struct Run {
    arm: usize,
    index: u64,
    wall_s: f64,
    cpu_s: f64,
    error: Option<String>,
    metric: Option<metric::Found>,
    metric_error: Option<String>,
    loads: Vec<Effective>,
}

/// What is compared, and how to speak of it.
struct Quantity {
    key: &'static str,
    label: &'static str,
    direction: Direction,
    get: fn(&Run) -> Option<f64>,
    time: bool,
}

pub fn main(a: AbArgs) -> Result<u8, Failure> {
    let arms = arms(&a)?;
    library::note_arm_limits(&arms);
    if let Some(path) = &a.json {
        crate::output::check_file("--json", path).map_err(|e| Failure::Usage("ab", e))?;
    }
    let json_to_stdout = a.json.as_deref() == Some(Path::new("-"));
    if json_to_stdout && a.show_output {
        return Err(Failure::Usage(
            "ab",
            "--show-output cannot share standard output with --json -: give --json a file".into(),
        ));
    }
    let env = a.settings.env();
    settings::check_inherited(&env, true).map_err(|m| Failure::Usage("ab", m))?;
    settings::refuse_statistics(&env).map_err(|m| Failure::Usage("ab", m))?;
    let lib = if arms.iter().any(|arm| arm.strategy().is_some()) {
        library::find().map_err(Failure::Runtime)?
    } else {
        PathBuf::new()
    };
    let machine = Machine::probe();
    let mut warnings: Vec<String> = machine.busy_warning().into_iter().collect();
    let names: Vec<String> = arms.iter().map(Arm::to_string).collect();
    eprintln!(
        "spinmutex ab: {} runs per arm ({}), interleaved, after {} warm-up round(s)",
        a.runs,
        names.join(", "),
        a.warmup
    );
    for w in &warnings {
        eprintln!("spinmutex ab: warning: {w}");
    }

    child::catch_interrupts();
    let mut progress = Progress::new((a.warmup + a.runs) * arms.len() as u64);
    let mut runs: Vec<Run> = Vec::new();
    let mut warm_errors: Vec<String> = Vec::new();
    let mut info: Vec<ArmInfo> = arms
        .iter()
        .map(|arm| ArmInfo {
            name: arm.to_string(),
            preload: arm.strategy().is_some(),
            effective: None,
            loaded_in: Vec::new(),
        })
        .collect();
    'rounds: for round in 0..a.warmup + a.runs {
        let warm = round < a.warmup;
        for (ai, arm) in arms.iter().enumerate() {
            let index = if warm { 0 } else { round - a.warmup + 1 };
            let Some(r) = one_run(&a, &lib, &env, ai, *arm, index)? else {
                break 'rounds;
            };
            let what = if warm { "warm-up".to_string() } else { format!("run {index}/{}", a.runs) };
            let line = match (&r.error, &r.metric, &r.metric_error) {
                (Some(e), _, _) => format!("{arm} {what}: FAILED: {e}"),
                (None, m, me) => {
                    let metric = match (m, me) {
                        (Some(f), _) => format!(", metric {}", text::fixed(f.value)),
                        (None, Some(e)) => format!(", NO METRIC: {e}"),
                        _ => String::new(),
                    };
                    format!(
                        "{arm} {what}: wall {}, cpu {}{metric}",
                        text::seconds(r.wall_s),
                        text::seconds(r.cpu_s)
                    )
                }
            };
            progress.step(&line, r.error.is_some() || r.metric_error.is_some());
            let info = &mut info[ai];
            for e in &r.loads {
                let exe =
                    Path::new(&e.exe).file_name().map_or(e.exe.clone(), |f| f.to_string_lossy().into_owned());
                if !info.loaded_in.contains(&exe) {
                    info.loaded_in.push(exe);
                }
            }
            if warm {
                if let Some(e) = &r.error {
                    warm_errors.push(format!("{arm}: {e}"));
                }
            } else {
                if info.effective.is_none() {
                    info.effective = r.loads.last().cloned();
                }
                runs.push(r);
            }
        }
        if a.warmup > 0 && round + 1 == a.warmup && warm_errors.len() as u64 == a.warmup * arms.len() as u64 {
            drop(progress);
            return Err(Failure::Runtime(format!(
                "every warm-up run failed, under every arm; stopping. First failure: {}",
                warm_errors[0]
            )));
        }
    }
    drop(progress);
    let interrupted = child::say_if_interrupted("ab", runs.len(), "measured runs");

    let shortest = runs.iter().filter(|r| r.error.is_none()).map(|r| r.wall_s).fold(f64::INFINITY, f64::min);
    if shortest < SHORTEST_TIMED_S {
        warnings.push(format!(
            "a run lasted {}: too short to time (start-up and the scheduler dominate under {}); \
             lengthen the workload",
            text::seconds(shortest),
            text::seconds(SHORTEST_TIMED_S)
        ));
    }

    let (direction, reason) = metric_direction(&a, &runs);
    let quantities = quantities(&a, direction);
    let refs = baselines(&arms);
    let mut summary = BTreeMap::new();
    let mut comparisons = BTreeMap::new();
    for q in &quantities {
        let per: Vec<ArmSummary> = (0..arms.len())
            .map(|ai| {
                let xs = samples(&runs, ai, q.get);
                ArmSummary {
                    strategy: names[ai].clone(),
                    n: xs.len(),
                    mean: finite(stats::mean(&xs)),
                    median: finite(stats::median(&xs)),
                    stddev: (xs.len() >= 2).then(|| stats::stddev(&xs)),
                    stddev_pct: finite(stats::stddev_pct(&xs)),
                    ci95: stats::ci95_mean(&xs).map(|(l, h)| [l, h]),
                }
            })
            .collect();
        let noisy: Vec<String> = per
            .iter()
            .filter_map(|s| s.stddev_pct.filter(|cv| *cv > 10.0).map(|cv| format!("{} {cv:.1}%", s.strategy)))
            .collect();
        if !noisy.is_empty() {
            warnings.push(format!(
                "the {} varies by more than 10% of its mean (stddev: {}): noise this large can hide or fake \
                 a difference; quiet the machine or add runs",
                q.label,
                noisy.join(", ")
            ));
        }
        let cmp: Vec<ComparisonRecord> = pairs(&arms, &refs)
            .into_iter()
            .map(|(x, b)| {
                let c = stats::compare(&samples(&runs, b, q.get), &samples(&runs, x, q.get));
                record(&names[x], &names[b], q, c.as_ref())
            })
            .collect();
        summary.insert(q.key.to_string(), per);
        comparisons.insert(q.key.to_string(), cmp);
    }
    let failed: Vec<&Run> = runs.iter().filter(|r| r.error.is_some()).collect();
    let no_metric: Vec<&Run> = runs.iter().filter(|r| r.metric_error.is_some()).collect();

    let report = AbReport {
        tool: "spinmutex ab".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command: a.command.clone(),
        strategies: names.clone(),
        runs_per_strategy: a.runs,
        warmup_rounds: a.warmup,
        metric: a.metric.as_ref().map(|m| m.source().to_string()),
        metric_direction: a.metric.as_ref().map(|_| direction),
        metric_direction_reason: a.metric.as_ref().map(|_| reason.clone()),
        env: env.iter().cloned().collect(),
        machine,
        warnings,
        arms: info,
        interrupted: interrupted.map(|sig| child::signal_name(sig).to_string()),
        runs: runs
            .iter()
            .map(|r| RunRecord {
                strategy: names[r.arm].clone(),
                run: r.index,
                ok: r.error.is_none(),
                error: r.error.clone(),
                wall_s: r.wall_s,
                cpu_s: r.cpu_s,
                metric: r.metric.as_ref().map(|f| f.value),
                metric_error: r.metric_error.clone(),
            })
            .collect(),
        summary,
        comparisons,
    };
    let text = render(&report, &quantities, &lib, &failed, &no_metric);
    // With --json -, standard output carries the JSON alone, for a pipe into jq.
    let files: Vec<_> = a
        .json
        .as_deref()
        .map(|path| (path, serde_json::to_string_pretty(&report).expect("the report serialises") + "\n"))
        .into_iter()
        .collect();
    child::stop_catching_interrupts();
    crate::output::files_then_text("ab", files, &text).map_err(Failure::Runtime)?;
    Ok(match interrupted {
        Some(sig) => child::interrupted_status(sig),
        None => u8::from(!(failed.is_empty() && no_metric.is_empty())),
    })
}

#[cfg(test)]
mod tests;
