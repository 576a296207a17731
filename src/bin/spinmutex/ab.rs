//! `spinmutex ab`: run a command under several strategies, interleaved, and compare.

use std::path::PathBuf;
use std::process::Command;

use crate::args::{self, Arg, Parser, UsageError};
use crate::child;
use crate::json::{obj, Json};
use crate::library::{self, Setup};
use crate::metric::Pattern;
use crate::stats;
use crate::table::{self, Table};
use crate::Failure;

pub const HELP: &str = "\
spinmutex ab: A/B test lock strategies on a command

Usage: spinmutex ab [OPTIONS] [--] CMD [ARGS...]

Runs CMD under each strategy, interleaved (A B A B ...), and reports per strategy the
mean, median and standard deviation (in % of the mean) of wall time, CPU time (user +
system, of CMD and its children) and, with --metric, a number taken from CMD's output;
then each strategy's ratio of means to the first strategy with a 95% confidence
interval, and whether the difference is significant (Welch's t-test, p < 0.05).
CMD's output is captured (not shown). A run in which CMD fails (non-zero exit, signal,
or --metric finds no number) is reported and left out of the statistics; the exit
status is then 1.

Options:
  -s, --strategy S     a strategy to compare (repeatable, or a comma list; default
                       glibc,spin). Values go to SPINMUTEX_STRATEGY (glibc, futex,
                       spin, ...); `none` runs CMD without the library
  -n, --runs N         measured runs per strategy (default 10)
  --warmup N           unmeasured rounds first (default 1)
  --metric REGEX       also compare a number from CMD's output: the first capture
                       group of REGEX, or the whole match (see below)
  --json FILE          write every run and the summary as JSON
  -h, --help           this help

--metric syntax (a small subset of regular expressions): literal characters; `\\`
before punctuation makes it literal; `.`; `\\d \\D \\s \\S \\w \\W`; classes `[0-9.]`,
`[^ ]`; `*`, `+`, `?` after a single-character item; `( )` capture groups (not
repeated); `^` and `$` as line anchors. Not supported: `|`, `{m,n}`, `(?...)`.
Each line of stdout, then of stderr, is searched; the first match wins.
Example: --metric 'ops/s=([0-9.]+)'
";

#[derive(Debug)]
pub struct AbArgs {
    pub strategies: Vec<String>,
    pub runs: u64,
    pub warmup: u64,
    pub metric: Option<Pattern>,
    pub json: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    pub command: Vec<String>,
}

pub fn parse(argv: &[String]) -> Result<Option<AbArgs>, UsageError> {
    let mut p = Parser::new(argv);
    let mut a = AbArgs {
        strategies: Vec::new(),
        runs: 10,
        warmup: 1,
        metric: None,
        json: None,
        env: Vec::new(),
        command: Vec::new(),
    };
    while let Some(arg) = p.next_arg()? {
        match arg {
            Arg::Opt(o) => match o.as_str() {
                "-h" | "--help" => {
                    print!("{HELP}\n{}", args::KNOBS_HELP);
                    return Ok(None);
                }
                "-s" | "--strategy" => {
                    for s in args::parse_name_list(&o, &p.value(&o)?)? {
                        if s == "glibc-adaptive" {
                            return Err(UsageError::new(
                                "glibc-adaptive exists only for `bench` (it is a mutex type the benchmark's workload \
                                 creates, not a library strategy)",
                            ));
                        }
                        if a.strategies.contains(&s) {
                            return Err(UsageError::new(format!("{o}: '{s}' is given twice")));
                        }
                        a.strategies.push(s);
                    }
                }
                "-n" | "--runs" => a.runs = args::parse_u64(&o, &p.value(&o)?, 1, 1_000_000)?,
                "--warmup" => a.warmup = args::parse_u64(&o, &p.value(&o)?, 0, 1_000_000)?,
                "--metric" => {
                    let src = p.value(&o)?;
                    a.metric =
                        Some(Pattern::compile(&src).map_err(|e| UsageError::new(format!("--metric: {e}")))?);
                }
                "--json" => a.json = Some(PathBuf::from(p.value(&o)?)),
                _ => {
                    if !args::knob(&o, &mut p, &mut a.env)? {
                        return Err(UsageError::new(format!("unknown option '{o}'")));
                    }
                }
            },
            Arg::Positional(first) => {
                a.command.push(first);
                a.command.extend(p.remaining());
            }
            Arg::Rest(rest) => a.command.extend(rest),
        }
    }
    if a.command.is_empty() {
        return Err(UsageError::new("no command given (spinmutex ab [OPTIONS] -- CMD [ARGS...])"));
    }
    if a.strategies.is_empty() {
        a.strategies = vec!["glibc".to_string(), "spin".to_string()];
    }
    Ok(Some(a))
}

/// One measured run.
#[derive(Debug, Clone)]
struct RunResult {
    strategy: usize,
    index: u64,
    wall_s: f64,
    cpu_s: f64,
    metric: Option<f64>,
    /// Why the run does not count, if it does not.
    error: Option<String>,
}

pub fn main(argv: &[String]) -> Result<u8, Failure> {
    let Some(a) = parse(argv)? else { return Ok(0) };
    let needs_lib = a.strategies.iter().any(|s| s != "none");
    let lib = if needs_lib { library::find().map_err(Failure::Runtime)? } else { PathBuf::new() };
    let ns = a.strategies.len();
    let total = (a.warmup + a.runs) * ns as u64;
    eprintln!(
        "spinmutex ab: {} runs per strategy ({}), interleaved, after {} warm-up round(s)",
        a.runs,
        a.strategies.join(", "),
        a.warmup
    );
    let mut results: Vec<RunResult> = Vec::new();
    let mut done = 0u64;
    for round in 0..a.warmup + a.runs {
        let warm = round < a.warmup;
        for (si, name) in a.strategies.iter().enumerate() {
            done += 1;
            let r = one_run(&a, &lib, si, name, if warm { 0 } else { round - a.warmup + 1 })?;
            let what = if warm { "warm-up".to_string() } else { format!("run {}/{}", r.index, a.runs) };
            match &r.error {
                None => {
                    let metric =
                        r.metric.map(|m| format!(", metric {}", table::fixed(m))).unwrap_or_default();
                    eprintln!(
                        "[{done:>3}/{total}] {name} {what}: wall {}, cpu {}{metric}",
                        table::duration(r.wall_s),
                        table::duration(r.cpu_s)
                    );
                }
                Some(e) => eprintln!("[{done:>3}/{total}] {name} {what}: FAILED: {e}"),
            }
            if !warm {
                results.push(r);
            }
        }
    }
    let report = summarise(&a, &results);
    print!("{report}");
    if let Some(path) = &a.json {
        std::fs::write(path, to_json(&a, &results).to_pretty())
            .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("spinmutex ab: wrote {}", path.display());
    }
    Ok(if results.iter().any(|r| r.error.is_some()) { 1 } else { 0 })
}

fn one_run(
    a: &AbArgs,
    lib: &std::path::Path,
    si: usize,
    name: &str,
    index: u64,
) -> Result<RunResult, Failure> {
    let mut cmd = Command::new(&a.command[0]);
    cmd.args(&a.command[1..]);
    Setup::for_strategy(name).apply(&mut cmd, lib, &a.env);
    let done = child::run(&mut cmd, true, false)
        .map_err(|e| Failure::Runtime(format!("cannot run {}: {e}", a.command[0])))?;
    let mut r = RunResult {
        strategy: si,
        index,
        wall_s: done.wall.as_secs_f64(),
        cpu_s: done.cpu_s(),
        metric: None,
        error: None,
    };
    if !done.termination.success() {
        let err = String::from_utf8_lossy(&done.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        let tail = if last.is_empty() { String::new() } else { format!(" (stderr: {last})") };
        r.error = Some(format!("{}{tail}", done.termination.describe()));
        return Ok(r);
    }
    if let Some(p) = &a.metric {
        match p.extract(&String::from_utf8_lossy(&done.stdout), &String::from_utf8_lossy(&done.stderr)) {
            Ok(v) => r.metric = Some(v),
            Err(e) => r.error = Some(e),
        }
    }
    Ok(r)
}

/// The quantities compared: name, unit, and how to read each from a run.
type Quantity = (&'static str, fn(&RunResult) -> Option<f64>);

fn quantities(a: &AbArgs) -> Vec<Quantity> {
    let mut q: Vec<Quantity> =
        vec![("wall time (s)", |r| Some(r.wall_s)), ("CPU time, user+sys (s)", |r| Some(r.cpu_s))];
    if a.metric.is_some() {
        q.push(("metric", |r| r.metric));
    }
    q
}

fn samples(results: &[RunResult], strategy: usize, get: fn(&RunResult) -> Option<f64>) -> Vec<f64> {
    results.iter().filter(|r| r.strategy == strategy && r.error.is_none()).filter_map(get).collect()
}

fn summarise(a: &AbArgs, results: &[RunResult]) -> String {
    let mut out = String::new();
    out.push_str(&format!("\ncommand: {}\n", a.command.join(" ")));
    if let Some(p) = &a.metric {
        out.push_str(&format!("metric: {}\n", p.source()));
    }
    let failures: Vec<&RunResult> = results.iter().filter(|r| r.error.is_some()).collect();
    for (label, get) in quantities(a) {
        let mut t = Table::new(1);
        t.header.push(vec![label.to_string(), "ok".into(), "mean".into(), "median".into(), "stddev".into()]);
        for (si, name) in a.strategies.iter().enumerate() {
            let xs = samples(results, si, get);
            let attempted = results.iter().filter(|r| r.strategy == si).count();
            t.rows.push(vec![
                name.clone(),
                format!("{}/{attempted}", xs.len()),
                table::fixed(stats::mean(&xs)),
                table::fixed(stats::median(&xs)),
                if xs.len() >= 2 { format!("{:.1}%", stats::stddev_pct(&xs)) } else { "-".into() },
            ]);
        }
        out.push('\n');
        out.push_str(&t.render());
        let base = samples(results, 0, get);
        for (si, name) in a.strategies.iter().enumerate().skip(1) {
            let xs = samples(results, si, get);
            out.push_str(&format!("  {name} / {}: {}\n", a.strategies[0], comparison(&base, &xs)));
        }
    }
    if !failures.is_empty() {
        out.push_str(&format!("\n{} failed run(s), left out of the statistics:\n", failures.len()));
        for r in failures {
            out.push_str(&format!(
                "  {} run {}: {}\n",
                a.strategies[r.strategy],
                r.index,
                r.error.as_deref().unwrap_or("")
            ));
        }
    }
    out
}

/// "0.912 (95% CI 0.880 to 0.944), -8.8%, significant (Welch p = 0.0012)".
fn comparison(base: &[f64], xs: &[f64]) -> String {
    match stats::welch(base, xs) {
        Some(w) if w.mean_a != 0.0 => {
            let (lo, hi) = w.ratio_ci();
            format!(
                "{:.3} (95% CI {:.3} to {:.3}), {}, {} (Welch p = {:.4})",
                w.ratio(),
                lo,
                hi,
                table::change(w.ratio()),
                if w.significant() { "significant" } else { "not significant" },
                w.p
            )
        }
        _ => "n/a (needs at least 2 successful runs of each, and a non-zero mean)".to_string(),
    }
}

fn to_json(a: &AbArgs, results: &[RunResult]) -> Json {
    let runs: Vec<Json> = results
        .iter()
        .map(|r| {
            obj(vec![
                ("strategy", a.strategies[r.strategy].as_str().into()),
                ("run", r.index.into()),
                ("ok", r.error.is_none().into()),
                ("error", r.error.clone().into()),
                ("wall_s", r.wall_s.into()),
                ("cpu_s", r.cpu_s.into()),
                ("metric", r.metric.into()),
            ])
        })
        .collect();
    let mut summary = Vec::new();
    for (label, get) in quantities(a) {
        let key = match label {
            "metric" => "metric",
            l if l.starts_with("wall") => "wall_s",
            _ => "cpu_s",
        };
        let base = samples(results, 0, get);
        let per: Vec<Json> = a
            .strategies
            .iter()
            .enumerate()
            .map(|(si, name)| {
                let xs = samples(results, si, get);
                let w = if si == 0 { None } else { stats::welch(&base, &xs) };
                obj(vec![
                    ("strategy", name.as_str().into()),
                    ("n", xs.len().into()),
                    ("mean", stats::mean(&xs).into()),
                    ("median", stats::median(&xs).into()),
                    ("stddev", stats::stddev(&xs).into()),
                    ("stddev_pct", stats::stddev_pct(&xs).into()),
                    ("ci95", stats::ci95_mean(&xs).map(|(l, h)| vec![l, h]).into()),
                    ("ratio_to_first", w.as_ref().map(|w| w.ratio()).into()),
                    ("ratio_ci95", w.as_ref().map(|w| vec![w.ratio_ci().0, w.ratio_ci().1]).into()),
                    ("p_value", w.as_ref().map(|w| w.p).into()),
                    ("significant", w.as_ref().map(|w| w.significant()).into()),
                ])
            })
            .collect();
        summary.push((key, Json::Arr(per)));
    }
    obj(vec![
        ("tool", "spinmutex ab".into()),
        ("command", a.command.clone().into()),
        ("strategies", a.strategies.clone().into()),
        ("runs_per_strategy", a.runs.into()),
        ("warmup_rounds", a.warmup.into()),
        ("metric", a.metric.as_ref().map(|p| p.source().to_string()).into()),
        ("env", Json::Obj(a.env.iter().map(|(k, v)| (k.clone(), v.as_str().into())).collect())),
        ("runs", Json::Arr(runs)),
        ("summary", obj(summary)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::words;

    #[test]
    fn parses() {
        let a = parse(&words(&[
            "-s",
            "glibc",
            "-s",
            "futex,spin",
            "-n3",
            "--warmup",
            "0",
            "--metric",
            "x=(\\d+)",
            "--",
            "p",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(a.strategies, words(&["glibc", "futex", "spin"]));
        assert_eq!(a.runs, 3);
        assert_eq!(a.warmup, 0);
        assert!(a.metric.is_some());
        let a = parse(&words(&["p", "-n", "2"])).unwrap().unwrap();
        assert_eq!(a.strategies, words(&["glibc", "spin"]));
        assert_eq!(a.command, words(&["p", "-n", "2"]));
    }

    #[test]
    fn rejects() {
        for bad in [
            vec!["--"],
            vec!["-n", "0", "--", "p"],
            vec!["-s", "glibc-adaptive", "--", "p"],
            vec!["-s", "spin", "-s", "spin", "--", "p"],
            vec!["--metric", "a|b", "--", "p"],
            vec!["--frob", "--", "p"],
        ] {
            assert!(parse(&words(&bad)).is_err(), "{bad:?}");
        }
    }
}
