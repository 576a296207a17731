//! `spinmutex ab`: run a command under several arms (strategies, and `none` without
//! the library), interleaved, and say in words what differs and how surely.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use serde::{Deserialize, Serialize};
use spinmutex_names::Strategy;

use crate::library::{self, parse_arm, Arm};
use crate::machine::Machine;
use crate::metric::{self, Direction, Metric};
use crate::progress::Progress;
use crate::settings::{self, Effective, Expected, LibSettings};
use crate::stats::{self, Comparison};
use crate::text::{self, finite, Table};
use crate::{child, handshake, Failure};

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
    marked as interrupted. Exit status: 0; 1 when a run failed; 128 + the signal number \
    when interrupted.")]
pub struct AbArgs {
    /// An arm to compare (repeatable, or a comma list): glibc, futex, spin, kernel, or none
    /// (CMD without the library) [default: none,glibc,spin]
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
    if json_to_stdout {
        // Standard output carries the JSON alone, for a pipe into jq.
        eprint!("{text}");
        let json = serde_json::to_string_pretty(&report).expect("the report serialises");
        println!("{json}");
    } else {
        print!("{text}");
    }
    if let Some(path) = a.json.as_ref().filter(|_| !json_to_stdout) {
        let text = serde_json::to_string_pretty(&report).expect("the report serialises");
        std::fs::write(path, text + "\n")
            .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("spinmutex ab: wrote {}", path.display());
    }
    Ok(match interrupted {
        Some(sig) => child::interrupted_status(sig),
        None => u8::from(!(failed.is_empty() && no_metric.is_empty())),
    })
}

/// The arms to run: as given (no repeats), else none, glibc, spin; `none` added beside
/// glibc unless --without-none.
fn arms(a: &AbArgs) -> Result<Vec<Arm>, Failure> {
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
fn baselines(arms: &[Arm]) -> Vec<usize> {
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
fn pairs(arms: &[Arm], refs: &[usize]) -> Vec<(usize, usize)> {
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
fn one_run(
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
fn verify(arm: Arm, env: &[(String, String)], program: &str, loads: &[Effective]) -> Result<(), Failure> {
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

fn metric_direction(a: &AbArgs, runs: &[Run]) -> (Direction, String) {
    if a.higher_is_better {
        return (Direction::HigherIsBetter, "--higher-is-better".into());
    }
    if a.lower_is_better {
        return (Direction::LowerIsBetter, "--lower-is-better".into());
    }
    match (&a.metric, runs.iter().find_map(|r| r.metric.as_ref())) {
        (Some(m), Some(found)) => metric::infer(m.source(), found),
        _ => (Direction::Unknown, "no run produced the metric".into()),
    }
}

fn quantities(a: &AbArgs, direction: Direction) -> Vec<Quantity> {
    let mut q = vec![
        Quantity {
            key: "wall_s",
            label: "wall time",
            direction: Direction::LowerIsBetter,
            get: |r| r.error.is_none().then_some(r.wall_s),
            time: true,
        },
        Quantity {
            key: "cpu_s",
            label: "CPU time",
            direction: Direction::LowerIsBetter,
            get: |r| r.error.is_none().then_some(r.cpu_s),
            time: true,
        },
    ];
    if a.metric.is_some() {
        q.push(Quantity {
            key: "metric",
            label: "metric",
            direction,
            get: |r| r.metric.as_ref().map(|f| f.value),
            time: false,
        });
    }
    q
}

fn samples(runs: &[Run], arm: usize, get: fn(&Run) -> Option<f64>) -> Vec<f64> {
    runs.iter().filter(|r| r.arm == arm).filter_map(get).collect()
}

/// A p-value as people read it: `p = 0.012`, `p < 0.001`.
fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// A percentage range `8.1–16.5%`.
fn range(lo: f64, hi: f64) -> String {
    format!("{:.1}–{:.1}%", lo.min(hi), lo.max(hi))
}

/// The comparison of `arm` with `base` for quantity `q`, in words and numbers.
fn record(arm: &str, base: &str, q: &Quantity, c: Option<&Comparison>) -> ComparisonRecord {
    let Some(c) = c else {
        return ComparisonRecord {
            strategy: arm.into(),
            baseline: base.into(),
            ratio: None,
            ratio_ci95: None,
            p_value: None,
            significant: None,
            better: None,
            runs_for_5pct: None,
            verdict: format!("{arm} vs {base}: not enough successful runs to compare (2 of each needed)"),
        };
    };
    let r = c.ratio();
    let p = c.p;
    let significant = c.significant();
    // The change in the quantity's good direction (for an unknown direction: upwards).
    let (good, label_up, label_down) = match q.direction {
        Direction::LowerIsBetter => (-1.0, "", ""),
        Direction::HigherIsBetter => (1.0, "", ""),
        Direction::Unknown => (1.0, "higher", "lower"),
    };
    let gain = |ratio: f64| good * (ratio - 1.0) * 100.0;
    let pct = gain(r).abs();
    let ci_pct = c.ratio_ci.map(|(lo, hi)| (gain(lo), gain(hi)));
    let better = (significant && q.direction != Direction::Unknown).then(|| gain(r) > 0.0);
    let runs_for_5pct = c.runs_for_5pct();
    let verdict = if significant {
        let ci = match ci_pct {
            Some((a, b)) => format!("95% CI {}", range(a.abs(), b.abs())),
            None => "95% CI unbounded".into(),
        };
        let sentence = match (q.direction, q.time, q.label, gain(r) > 0.0) {
            (Direction::Unknown, _, _, up) => format!(
                "{arm}'s {} is {pct:.1}% {} than {base}'s ({ci}), significant (Welch {}); which is \
                 better is unknown: pass --higher-is-better or --lower-is-better",
                q.label,
                if up { label_up } else { label_down },
                fmt_p(p)
            ),
            (_, true, "CPU time", b) => format!(
                "{arm} uses {pct:.1}% {} CPU than {base} ({ci}), significant (Welch {})",
                if b { "less" } else { "more" },
                fmt_p(p)
            ),
            (_, true, _, b) => format!(
                "{arm} is {pct:.1}% {} than {base} ({ci}), significant (Welch {})",
                if b { "faster" } else { "slower" },
                fmt_p(p)
            ),
            (d, false, _, b) => format!(
                "{arm} is {pct:.1}% {} than {base} ({} {}, {ci}), significant (Welch {})",
                if b { "better" } else { "worse" },
                q.label,
                if (d == Direction::HigherIsBetter) == b { "higher" } else { "lower" },
                fmt_p(p)
            ),
        };
        sentence
    } else {
        let change = match c.ratio_ci {
            Some((lo, hi)) => {
                format!(
                    "95% CI of the change in {}: {:+.1}% to {:+.1}%",
                    q.label,
                    (lo - 1.0) * 100.0,
                    (hi - 1.0) * 100.0
                )
            }
            None => "the 95% interval is unbounded".into(),
        };
        let wide = c.ratio_ci.is_none_or(|(lo, hi)| (hi - lo) / 2.0 > 0.05);
        let more = match (wide, runs_for_5pct) {
            (true, Some(n)) => format!("; about {n} runs per arm would resolve a 5% difference"),
            _ => String::new(),
        };
        format!(
            "{arm} vs {base}: no difference detectable at this noise ({change}, Welch {}){more}",
            fmt_p(p)
        )
    };
    ComparisonRecord {
        strategy: arm.into(),
        baseline: base.into(),
        ratio: finite(r),
        ratio_ci95: c.ratio_ci.map(|(l, h)| [l, h]),
        p_value: finite(p),
        significant: Some(significant),
        better,
        runs_for_5pct,
        verdict,
    }
}

fn render(r: &AbReport, quantities: &[Quantity], lib: &Path, failed: &[&Run], no_metric: &[&Run]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\ncommand: {}", r.command.join(" "));
    if let (Some(m), Some(d), Some(why)) = (&r.metric, r.metric_direction, &r.metric_direction_reason) {
        let _ = writeln!(out, "metric: {m} ({}: {why})", d.describe());
    }
    let _ = writeln!(out, "arms (the settings each reported when it loaded):");
    let width = r.arms.iter().map(|a| a.name.len()).max().unwrap_or(0);
    for arm in &r.arms {
        let what = match (&arm.effective, arm.preload) {
            (_, false) => "no preload: the program alone".to_string(),
            (Some(e), true) => format!("{} {}: {}", lib.display(), e.version, e.describe()),
            (None, true) => "no measured run".to_string(),
        };
        let _ = writeln!(out, "  {:width$}  {what}", arm.name);
    }
    let loaded: Vec<&str> = r.arms.iter().flat_map(|a| a.loaded_in.iter().map(String::as_str)).collect();
    if !loaded.is_empty() {
        let mut unique: Vec<&str> = Vec::new();
        for l in loaded {
            if !unique.contains(&l) {
                unique.push(l);
            }
        }
        let _ = writeln!(out, "  (the library loaded in: {})", unique.join(", "));
    }
    for q in quantities {
        let mut t = Table::new(1);
        t.header.push(vec![
            q.label.to_string(),
            "ok".into(),
            "mean".into(),
            "median".into(),
            "stddev".into(),
        ]);
        let fmt = |v: Option<f64>| match v {
            Some(v) if q.time => text::seconds(v),
            Some(v) => text::fixed(v),
            None => "-".into(),
        };
        for s in &r.summary[q.key] {
            let attempted = r.runs.iter().filter(|run| run.strategy == s.strategy).count();
            t.rows.push(vec![
                s.strategy.clone(),
                format!("{}/{attempted}", s.n),
                fmt(s.mean),
                fmt(s.median),
                s.stddev_pct.map_or("-".into(), |p| format!("{p:.1}%")),
            ]);
        }
        out.push('\n');
        out.push_str(&t.render());
        for c in &r.comparisons[q.key] {
            let _ = writeln!(out, "  {}", c.verdict);
        }
    }
    if r.arms.iter().any(|a| a.name == "none") && r.arms.iter().any(|a| a.name == "glibc") {
        let _ = writeln!(
            out,
            "\nglibc against none is the preload's own cost: under glibc every call goes through \
             libspinmutex.so to glibc's mutex."
        );
    }
    let _ = writeln!(
        out,
        "For times, \"X% faster\" means X% less time. Intervals are 95% intervals of the ratio of \
         means (Fieller); \"significant\" means Welch's t-test gives p < 0.05."
    );
    if !r.warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for w in &r.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    if !failed.is_empty() {
        let _ = writeln!(out, "\n{} failed run(s), left out of the statistics:", failed.len());
        for run in failed {
            let _ = writeln!(
                out,
                "  {} run {}: {}",
                r.strategies[run.arm],
                run.index,
                run.error.as_deref().unwrap_or("")
            );
        }
    }
    if !no_metric.is_empty() {
        let _ = writeln!(
            out,
            "\n{} run(s) without the metric (their wall and CPU times count):",
            no_metric.len()
        );
        for run in no_metric {
            let _ = writeln!(
                out,
                "  {} run {}: {}",
                r.strategies[run.arm],
                run.index,
                run.metric_error.as_deref().unwrap_or("")
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<AbArgs, clap::Error> {
        crate::parse_args(args)
    }

    fn names(a: &AbArgs) -> Vec<String> {
        arms(a).unwrap().iter().map(Arm::to_string).collect()
    }

    #[test]
    fn parses_arms_and_the_command() {
        let a = parse(&[
            "-s",
            "glibc",
            "-s",
            "futex,spin",
            "-n3",
            "--warmup",
            "0",
            "--metric",
            r"x=(\d+)",
            "--",
            "p",
        ])
        .unwrap();
        assert_eq!(names(&a), ["none", "glibc", "futex", "spin"]);
        assert_eq!((a.runs, a.warmup), (3, 0));
        let a = parse(&["p", "-n", "2"]).unwrap();
        assert_eq!(names(&a), ["none", "glibc", "spin"]);
        assert_eq!(a.command, ["p", "-n", "2"]);
        let a = parse(&["-s", "glibc,spin", "--without-none", "p"]).unwrap();
        assert_eq!(names(&a), ["glibc", "spin"]);
        let a = parse(&["--fair", "1", "p"]).unwrap();
        assert_eq!(a.command, ["p"]);
        assert!(a.settings.fair.unwrap().value);
        assert!(arms(&parse(&["-s", "spin", "-s", "spin", "p"]).unwrap()).is_err());
    }

    #[test]
    fn rejects_bad_arguments() {
        for bad in [
            &["--"][..],
            &["-n", "0", "--", "p"],
            &["-s", "spinn", "--", "p"],
            &["-s", "glibc-adaptive", "--", "p"],
            &["--metric", "(", "--", "p"],
            &["--spin-limit", "10x", "--", "p"],
            &["--higher-is-better", "--", "p"],
            &["--frob", "--", "p"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pairs_compare_with_glibc_and_none() {
        let arms = [Arm::None, Arm::Strategy(Strategy::Glibc), Arm::Strategy(Strategy::Spin)];
        let refs = baselines(&arms);
        assert_eq!(refs, [1, 0]);
        assert_eq!(pairs(&arms, &refs), [(2, 1), (2, 0), (1, 0)]);
        let arms = [Arm::Strategy(Strategy::Spin), Arm::Strategy(Strategy::Futex)];
        assert_eq!(pairs(&arms, &baselines(&arms)), [(1, 0)]);
    }

    fn quantity(direction: Direction, time: bool, label: &'static str) -> Quantity {
        Quantity { key: "k", label, direction, get: |r| Some(r.wall_s), time }
    }

    #[test]
    fn verdicts_say_which_way_and_how_surely() {
        let base = [10.0, 10.2, 9.8, 10.1, 9.9];
        let faster = [8.8, 8.9, 8.7, 8.8, 8.6];
        let c = stats::compare(&base, &faster).unwrap();
        let v = record("spin", "glibc", &quantity(Direction::LowerIsBetter, true, "wall time"), Some(&c));
        assert!(v.verdict.starts_with("spin is 12.4% faster than glibc (95% CI "), "{}", v.verdict);
        assert!(v.verdict.contains("significant"), "{}", v.verdict);
        assert_eq!(v.better, Some(true));
        let v = record("spin", "glibc", &quantity(Direction::LowerIsBetter, true, "CPU time"), Some(&c));
        assert!(v.verdict.starts_with("spin uses 12.4% less CPU than glibc"), "{}", v.verdict);
        let v = record("spin", "glibc", &quantity(Direction::HigherIsBetter, false, "metric"), Some(&c));
        assert!(v.verdict.starts_with("spin is 12.4% worse than glibc (metric lower"), "{}", v.verdict);
        assert_eq!(v.better, Some(false));
        let v = record("spin", "glibc", &quantity(Direction::Unknown, false, "metric"), Some(&c));
        assert!(v.verdict.contains("spin's metric is 12.4% lower than glibc's"), "{}", v.verdict);
        assert!(v.verdict.contains("--higher-is-better"), "{}", v.verdict);
        assert_eq!(v.better, None);

        let noisy = [9.0, 11.5, 10.0, 8.5, 11.0];
        let c = stats::compare(&base, &noisy).unwrap();
        let v = record("spin", "glibc", &quantity(Direction::LowerIsBetter, true, "wall time"), Some(&c));
        assert!(
            v.verdict.starts_with("spin vs glibc: no difference detectable at this noise"),
            "{}",
            v.verdict
        );
        assert!(v.verdict.contains("runs per arm would resolve a 5% difference"), "{}", v.verdict);
        assert_eq!(v.better, None);
        let v = record("spin", "glibc", &quantity(Direction::LowerIsBetter, true, "wall time"), None);
        assert!(v.verdict.contains("not enough successful runs"));
    }
}
