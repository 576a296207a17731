//! `spinmutex report`: read what the library wrote and say which lock is hot.
//!
//! Two kinds of input, told apart line by line (both are JSON Lines):
//!
//! * statistics reports (`SPINMUTEX_STATS=json`, one object per process): each
//!   process's report in mutrace's columns with every call site named from the files on
//!   this machine (see [`crate::lockstats`] and [`crate::symbolize`]);
//! * trace events (`SPINMUTEX_TRACE_FORMAT=json`): per process, per strategy and per
//!   mutex, event counts, how contended acquisitions ended, wait-time statistics and
//!   log2 histograms of waits and spins, saying which events the recorded level leaves
//!   out.
//!
//! Several files and globs may be given; for each FILE its `FILE.<pid>` siblings (the
//! traces of forked children) are read too. `--json` writes one JSON document and
//! `--svg` a chart. Unknown events and keys are counted or ignored; lines that are
//! neither are counted as malformed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::lockstats::{self, ProcessReport, Sort};
use crate::svg::{self, colour, escape, Layout};
use crate::symbolize::{self, Resolver};
use crate::text::{duration_ns, short_count, Table};
use crate::Failure;

/// Summarise what the library recorded: statistics reports and traces
#[derive(Args, Debug, PartialEq)]
#[command(long_about = "Summarise what the library recorded: statistics reports and traces.\n\n\
    Each FILE holds JSON lines written by the library: statistics reports \
    (SPINMUTEX_STATS=json, one per process) and/or trace events \
    (SPINMUTEX_TRACE_FORMAT=json). Globs are expanded (quote them to let this command \
    do it), and for each FILE its FILE.<pid> siblings, the traces of forked children, are \
    read too; `-` reads standard input.\n\n\
    A statistics report is shown per process in mutrace's columns: lock classes first \
    (the locks made, or first locked, at one call stack), hottest first, each with its \
    hottest live locks, then the other classes, locks of unknown class, the overflow and \
    the totals, which the rows add up to. Every call site is named (function+offset, \
    file:line) from the files on this machine: the module's own symbols and DWARF, its \
    .gnu_debuglink, and the debug directories (/usr/lib/debug and --debug-dir) by \
    build-id. A module whose file is another build than the one that ran is not read.\n\n\
    A trace is summarised per process, per strategy and per mutex: event counts, how \
    contended acquisitions ended (spin, sleep, handoff), mean/p50/p99/max wait, spin \
    give-ups (or that the recorded level does not record them) and log2 histograms of \
    wait times and spins.")]
pub struct ReportArgs {
    /// Statistics or trace files (JSON lines); globs are expanded, FILE.<pid> siblings
    /// are read too; `-` reads standard input
    #[arg(value_name = "FILE", required = true, num_args = 1..)]
    pub files: Vec<String>,

    /// Write one JSON document (the reports with their call sites named, and the trace
    /// summary) instead of text
    #[arg(long)]
    pub json: bool,

    /// Also write a chart as SVG to OUT: wait-time and spins histograms per strategy,
    /// the hottest mutexes and the hottest lock classes, by call site
    #[arg(long, value_name = "OUT", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub svg: Option<String>,

    /// List the N hottest mutexes of a trace and the N hottest classes of each report
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub top: u64,

    /// The order of a statistics report's lock classes: wait (total time waited),
    /// contended (contended acquisitions), hold (total time held), acquisitions
    #[arg(long, value_name = "KEY", value_enum, default_value_t = Sort::Wait)]
    pub sort: Sort,

    /// Draw histogram bars with '#' instead of block characters
    #[arg(long)]
    pub ascii: bool,

    /// Also look for debug files under DIR (as /usr/lib/debug: DIR/.build-id/xx/rest.debug
    /// and DIR/<module's directory>/<debuglink>); repeatable
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dirs: Vec<PathBuf>,
}

pub fn main(a: ReportArgs) -> Result<u8, Failure> {
    let inputs = expand(&a.files).map_err(Failure::Runtime)?;
    let mut loaded = Loaded::default();
    for input in &inputs {
        match input {
            Source::Stdin => loaded.read("-", std::io::stdin().lock()),
            Source::File(path) => {
                let f = std::fs::File::open(path)
                    .map_err(|e| Failure::Runtime(format!("cannot read {}: {e}", path.display())))?;
                loaded.read(&path.display().to_string(), BufReader::new(f))
            }
        }
        .map_err(|e| Failure::Runtime(format!("cannot read {input}: {e}")))?;
    }
    // A file that holds nothing is an error, unless its forked children's files
    // (FILE.<pid>) hold what it would have.
    let has_children = |i: &Input| {
        let prefix = format!("{}.", i.file);
        loaded.inputs.iter().any(|o| o.file.starts_with(&prefix) && o.nothing().is_none())
    };
    let empty = loaded.inputs.iter().filter(|i| !has_children(i)).find_map(|i| Some((i, i.nothing()?)));
    if let Some((input, why)) = empty {
        return Err(Failure::Runtime(format!("{}: nothing to report: {why}", input.file)));
    }
    let mut dirs = vec![PathBuf::from(symbolize::DEFAULT_DEBUG_DIR)];
    dirs.extend(a.debug_dirs.iter().cloned());
    loaded.sort = a.sort;
    loaded.resolve(&mut Resolver::new(dirs), a.top as usize);
    let out = if a.json {
        let mut s = serde_json::to_string_pretty(&loaded.json())
            .map_err(|e| Failure::Runtime(format!("cannot write JSON: {e}")))?;
        s.push('\n');
        s
    } else {
        loaded.render_text(a.top as usize, a.ascii)
    };
    if let Some(path) = &a.svg {
        std::fs::write(path, loaded.render_svg())
            .map_err(|e| Failure::Runtime(format!("cannot write {path}: {e}")))?;
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => {}
        // `spinmutex report t.json | head` is fine.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => return Err(Failure::Runtime(format!("cannot write the report: {e}"))),
    }
    if let Some(out) = &a.svg {
        eprintln!("spinmutex report: wrote {out}");
    }
    Ok(0)
}

// ---------------------------------------------------------------- inputs

/// Where lines come from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Stdin,
    File(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Stdin => f.write_str("standard input"),
            Source::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The files named on the command line: globs expanded, each file followed by its
/// `FILE.<pid>` siblings (in pid order), nothing twice.
pub fn expand(args: &[String]) -> Result<Vec<Source>, String> {
    let mut out: Vec<Source> = Vec::new();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut push = |p: PathBuf, out: &mut Vec<Source>| {
        let key = p.canonicalize().unwrap_or_else(|_| p.clone());
        if seen.insert(key) {
            out.push(Source::File(p));
        }
    };
    for arg in args {
        if arg == "-" {
            if !out.contains(&Source::Stdin) {
                out.push(Source::Stdin);
            }
            continue;
        }
        let path = PathBuf::from(arg);
        let mut files = Vec::new();
        if path.exists() {
            files.push(path.clone());
        } else if arg.contains(['*', '?', '[']) {
            let matches = glob::glob(arg).map_err(|e| format!("bad pattern {arg}: {e}"))?;
            files.extend(matches.filter_map(Result::ok).filter(|p| p.is_file()));
            if files.is_empty() {
                return Err(format!("no file matches {arg}"));
            }
        }
        let mut any = !files.is_empty();
        for f in files {
            let kids = siblings(&f);
            push(f, &mut out);
            for k in kids {
                push(k, &mut out);
            }
        }
        if !path.exists() && !arg.contains(['*', '?', '[']) {
            // The parent may never have written its own file: its children's still count.
            for k in siblings(&path) {
                any = true;
                push(k, &mut out);
            }
        }
        if !any {
            return Err(format!("cannot read {arg}: no such file"));
        }
    }
    Ok(out)
}

/// `FILE.<pid>` beside `file`, in pid order.
fn siblings(file: &Path) -> Vec<PathBuf> {
    let Some(name) = file.file_name().and_then(|n| n.to_str()) else { return Vec::new() };
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let prefix = format!("{name}.");
    let mut kids: Vec<(u64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            let pid = n.strip_prefix(&prefix)?;
            if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((pid.parse().ok()?, file.with_file_name(&n)))
        })
        .collect();
    kids.sort();
    kids.into_iter().map(|(_, p)| p).collect()
}

/// What one input held.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Input {
    pub file: String,
    pub lines: u64,
    pub events: u64,
    pub reports: usize,
    pub malformed: u64,
    /// The processes whose events or reports it holds.
    pub pids: BTreeSet<u64>,
    /// It holds the library's text report (which only the JSON one replaces here).
    #[serde(skip)]
    pub text_report: bool,
}

impl Input {
    /// Why an input gives nothing to report, if it does not.
    fn nothing(&self) -> Option<String> {
        if self.events > 0 || self.reports > 0 {
            return None;
        }
        Some(if self.text_report {
            "it holds the library's text report, which is read as it is; for `spinmutex report` have \
             the library write JSON (SPINMUTEX_STATS=json SPINMUTEX_STATS_FILE=FILE), or use \
             `spinmutex run --stats`"
                .to_string()
        } else if self.lines == 0 {
            "it is empty".to_string()
        } else {
            format!(
                "none of its {} lines is a statistics report (SPINMUTEX_STATS=json) or a trace event \
                 (SPINMUTEX_TRACE_FORMAT=json)",
                self.lines
            )
        })
    }
}

/// The first line of the library's text report.
const TEXT_REPORT_HEAD: &str = "spinmutex: lock statistics for pid ";

/// Everything read: statistics reports and a trace.
#[derive(Debug, Default)]
pub struct Loaded {
    pub inputs: Vec<Input>,
    pub reports: Vec<ProcessReport>,
    pub trace: Trace,
    /// The order of each report's classes.
    pub sort: Sort,
}

impl Loaded {
    /// Reads every line of one input; only an I/O error fails.
    pub fn read(&mut self, name: &str, mut r: impl BufRead) -> std::io::Result<()> {
        let mut input = Input { file: name.to_string(), ..Input::default() };
        self.trace.begin_file(name);
        let malformed_before = self.trace.malformed;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if r.read_until(b'\n', &mut buf)? == 0 {
                break;
            }
            input.lines += 1;
            let Ok(line) = std::str::from_utf8(&buf) else {
                self.trace.skip_line("not UTF-8".to_string());
                continue;
            };
            input.text_report |= line.starts_with(TEXT_REPORT_HEAD);
            if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line.trim()) {
                if lockstats::is_report(&map) {
                    self.trace.lines += 1;
                    self.trace.file_lines += 1;
                    match ProcessReport::from_map(map) {
                        Ok(mut report) => {
                            report.file = Some(name.to_string());
                            input.pids.insert(report.pid);
                            input.reports += 1;
                            self.reports.push(report);
                        }
                        Err(why) => {
                            let lineno = self.trace.file_lines;
                            self.trace.malformed(lineno, why);
                        }
                    }
                    continue;
                }
            }
            let before = self.trace.events;
            if let Some(pid) = self.trace.add_line(line) {
                input.pids.insert(pid);
            }
            input.events += self.trace.events - before;
        }
        input.malformed = self.trace.malformed - malformed_before;
        self.inputs.push(input);
        Ok(())
    }

    /// Names the call sites of every report, keeps its `top` classes, and lets the
    /// trace label mutexes by the classes the reports list them under.
    pub fn resolve(&mut self, resolver: &mut Resolver, top: usize) {
        for r in &mut self.reports {
            r.sort(self.sort);
            r.keep_top(top);
            r.resolve(resolver);
            for c in &r.classes {
                for i in &c.instances {
                    if let Some(m) = &i.mutex {
                        self.trace.sites.insert((r.pid, m.clone()), c.site());
                    }
                }
            }
        }
    }

    pub fn render_text(&self, top: usize, ascii: bool) -> String {
        let mut out = String::new();
        if self.inputs.len() > 1 || (self.reports.is_empty() && self.trace.events == 0) {
            let _ = writeln!(
                out,
                "read {} file{}:",
                self.inputs.len(),
                if self.inputs.len() == 1 { "" } else { "s" }
            );
            for i in &self.inputs {
                let mut what = Vec::new();
                if i.reports > 0 {
                    what.push(format!(
                        "{} statistics report{}",
                        i.reports,
                        if i.reports == 1 { "" } else { "s" }
                    ));
                }
                if i.events > 0 || i.reports == 0 {
                    what.push(format!("{} event{}", i.events, if i.events == 1 { "" } else { "s" }));
                }
                if i.malformed > 0 {
                    what.push(format!(
                        "{} malformed line{}",
                        i.malformed,
                        if i.malformed == 1 { "" } else { "s" }
                    ));
                }
                let pids: Vec<String> = i.pids.iter().map(u64::to_string).collect();
                if !pids.is_empty() {
                    what.push(format!("pid {}", pids.join(", ")));
                }
                let _ = writeln!(out, "  {}: {}", i.file, what.join(", "));
            }
            out.push('\n');
        }
        for (i, r) in self.reports.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&lockstats::render_text(r));
        }
        out.push_str(&lockstats::render_names_note(&self.reports));
        if self.trace.events > 0 || self.reports.is_empty() {
            if !self.reports.is_empty() {
                out.push('\n');
            }
            let files: Vec<&str> = self.inputs.iter().map(|i| i.file.as_str()).collect();
            out.push_str(&render_text(&self.trace, &files.join(", "), top, ascii));
        }
        out
    }

    pub fn json(&self) -> JsonReport<'_> {
        let missing = lockstats::unnamed_modules(&self.reports);
        JsonReport {
            inputs: &self.inputs,
            how_to_get_names: (!missing.is_empty()).then(symbolize::how_to_get_names),
            names_missing: missing,
            statistics: &self.reports,
            trace: (self.trace.events > 0 || self.trace.malformed > 0).then(|| TraceJson::of(&self.trace)),
        }
    }

    pub fn render_svg(&self) -> String {
        let files: Vec<&str> = self.inputs.iter().map(|i| i.file.as_str()).collect();
        render_svg_all(&self.trace, &self.reports, self.sort, &files.join(", "))
    }
}

/// `report --json`: the inputs, the statistics reports with their call sites named,
/// the modules that gave no names, and the trace summary.
#[derive(Serialize)]
pub struct JsonReport<'a> {
    pub inputs: &'a [Input],
    pub statistics: &'a [ProcessReport],
    /// Module → why some of its frames are not named.
    pub names_missing: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub how_to_get_names: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceJson>,
}

// ---------------------------------------------------------------- one JSON line

/// One trace line: a JSON object.
#[derive(Debug, Default, PartialEq)]
pub struct Record(pub Map<String, Value>);

impl Record {
    /// The value of `key` (the last one, should a key repeat).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key)?.as_str()
    }

    /// A non-negative whole number (written as an integer, or as a float that is one).
    pub fn u64(&self, key: &str) -> Option<u64> {
        let v = self.get(key)?;
        v.as_u64().or_else(|| {
            let f = v.as_f64()?;
            (f >= 0.0 && f.fract() == 0.0 && f < 1.8e19).then_some(f as u64)
        })
    }

    pub fn i64(&self, key: &str) -> Option<i64> {
        let v = self.get(key)?;
        v.as_i64().or_else(|| {
            let f = v.as_f64()?;
            (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64)
        })
    }
}

/// Parses one line holding one JSON object.
pub fn parse_line(line: &str) -> Result<Record, String> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => Ok(Record(map)),
        Ok(_) => Err("not a JSON object".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

// ---------------------------------------------------------------- histograms

/// Log2 buckets: bucket 0 holds 0, bucket k ≥ 1 holds [2^(k-1), 2^k).
pub const BUCKETS: usize = 65;

pub fn bucket(v: u64) -> usize {
    (u64::BITS - v.leading_zeros()) as usize
}

/// The values bucket `k` holds, inclusive.
pub fn bucket_range(k: usize) -> (u64, u64) {
    match k {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        _ => (1 << (k - 1), (1 << k) - 1),
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Hist(pub [u64; BUCKETS]);

impl Default for Hist {
    fn default() -> Self {
        Hist([0; BUCKETS])
    }
}

impl Hist {
    pub fn add(&mut self, v: u64) {
        self.0[bucket(v)] += 1;
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The first and last non-empty buckets.
    pub fn span(&self) -> Option<(usize, usize)> {
        let lo = self.0.iter().position(|&c| c > 0)?;
        let hi = self.0.iter().rposition(|&c| c > 0)?;
        Some((lo, hi))
    }
}

// ---------------------------------------------------------------- statistics

/// Everything counted for one strategy or one mutex.
#[derive(Default, Debug)]
pub struct Stats {
    /// Events by name, including unknown ones.
    pub events: BTreeMap<String, u64>,
    /// Contended acquisitions by how they ended.
    pub how: BTreeMap<String, u64>,
    /// wait_ns of every contended acquisition.
    pub waits: Vec<u64>,
    pub wait_hist: Hist,
    pub spin_hist: Hist,
    pub spins: u64,
    pub sleeps: u64,
    /// Spin give-ups by reason.
    pub give_ups: BTreeMap<String, u64>,
    /// Spins spent before giving up.
    pub give_up_spins: u64,
    /// Forwarded calls that returned an error.
    pub forward_errors: u64,
    pub threads: BTreeSet<(u64, u64)>,
}

impl Stats {
    fn add(&mut self, event: &str, r: &Record) {
        *self.events.entry(event.to_string()).or_default() += 1;
        if let (Some(pid), Some(tid)) = (r.u64("pid"), r.u64("tid")) {
            self.threads.insert((pid, tid));
        }
        match event {
            "acquired" => {
                *self.how.entry(r.str("how").unwrap_or("?").to_string()).or_default() += 1;
                let spins = r.u64("spins").unwrap_or(0);
                self.spins += spins;
                self.spin_hist.add(spins);
                self.sleeps += r.u64("sleeps").unwrap_or(0);
                if let Some(w) = r.u64("wait_ns") {
                    self.waits.push(w);
                    self.wait_hist.add(w);
                }
            }
            "spin_give_up" => {
                *self.give_ups.entry(r.str("reason").unwrap_or("?").to_string()).or_default() += 1;
                self.give_up_spins += r.u64("spins").unwrap_or(0);
            }
            "forward" if r.i64("result").is_some_and(|v| v != 0) => self.forward_errors += 1,
            _ => {}
        }
    }

    pub fn count(&self, event: &str) -> u64 {
        self.events.get(event).copied().unwrap_or(0)
    }

    pub fn acquired(&self) -> u64 {
        self.count("acquired")
    }

    pub fn total_wait(&self) -> u128 {
        self.waits.iter().map(|&w| u128::from(w)).sum()
    }

    /// Mean, p50, p99 and max of the waits (nearest-rank percentiles).
    pub fn wait_summary(&self) -> Option<WaitSummary> {
        if self.waits.is_empty() {
            return None;
        }
        let mut w = self.waits.clone();
        w.sort_unstable();
        let pct = |q: f64| w[((q * w.len() as f64).ceil() as usize).clamp(1, w.len()) - 1];
        Some(WaitSummary {
            mean: self.total_wait() as f64 / w.len() as f64,
            p50: pct(0.50),
            p99: pct(0.99),
            max: w[w.len() - 1],
        })
    }
}

#[derive(Debug, PartialEq)]
pub struct WaitSummary {
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// A mutex as the trace names it: one address in one process under one strategy.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MutexKey {
    pub mutex: String,
    pub pid: u64,
    pub strategy: String,
}

/// The events the library writes; others are counted as unknown.
const KNOWN_EVENTS: &[&str] = &[
    "acquired",
    "spin_give_up",
    "sleep",
    "wake",
    "handoff",
    "handoff_request",
    "timeout",
    "forward",
    "dropped",
];

/// A whole trace, summarised.
#[derive(Default, Debug)]
pub struct Trace {
    pub lines: u64,
    pub events: u64,
    pub malformed: u64,
    /// File, line number and reason of the first few malformed lines.
    pub malformed_examples: Vec<(String, u64, String)>,
    pub unknown_events: BTreeMap<String, u64>,
    /// Events the writer says it dropped.
    pub dropped: u64,
    pub first_ts: Option<u64>,
    pub last_ts: Option<u64>,
    pub pids: BTreeSet<u64>,
    pub by_strategy: BTreeMap<String, Stats>,
    pub by_mutex: HashMap<MutexKey, Stats>,
    pub by_pid: BTreeMap<u64, Stats>,
    /// Events by their `level` (TRACE, DEBUG, WARN).
    pub levels: BTreeMap<String, u64>,
    /// The call site of a mutex (pid, address), from the statistics reports read with
    /// the trace.
    pub sites: HashMap<(u64, String), String>,
    /// The file being read, and lines read from it so far.
    pub file: String,
    pub file_lines: u64,
}

const MALFORMED_EXAMPLES: usize = 5;

/// The events the library records only at `trace` level.
pub const TRACE_LEVEL_EVENTS: &[&str] = &["spin_give_up", "sleep", "wake", "handoff_request"];

impl Trace {
    /// Reads a whole trace; only an I/O error fails.
    pub fn read(&mut self, mut r: impl BufRead) -> std::io::Result<()> {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if r.read_until(b'\n', &mut buf)? == 0 {
                return Ok(());
            }
            match std::str::from_utf8(&buf) {
                Ok(line) => {
                    self.add_line(line);
                }
                Err(_) => self.skip_line("not UTF-8".to_string()),
            }
        }
    }

    /// Lines from now on come from `file`.
    pub fn begin_file(&mut self, file: &str) {
        self.file = file.to_string();
        self.file_lines = 0;
    }

    /// Counts a line that cannot be read as malformed.
    pub fn skip_line(&mut self, why: String) {
        self.lines += 1;
        self.file_lines += 1;
        self.malformed(self.file_lines, why);
    }

    pub fn malformed(&mut self, lineno: u64, why: String) {
        self.malformed += 1;
        if self.malformed_examples.len() < MALFORMED_EXAMPLES {
            self.malformed_examples.push((self.file.clone(), lineno, why));
        }
    }

    /// Adds one line of the trace; returns the event's pid. Blank lines are skipped.
    pub fn add_line(&mut self, line: &str) -> Option<u64> {
        self.lines += 1;
        self.file_lines += 1;
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        let r = match parse_line(line) {
            Ok(r) => r,
            Err(why) => {
                self.malformed(self.file_lines, why);
                return None;
            }
        };
        let Some(event) = r.str("event").map(str::to_string) else {
            self.malformed(self.file_lines, "no \"event\" string".to_string());
            return None;
        };
        self.events += 1;
        if let Some(ts) = r.u64("ts_ns") {
            self.first_ts = Some(self.first_ts.map_or(ts, |f| f.min(ts)));
            self.last_ts = Some(self.last_ts.map_or(ts, |l| l.max(ts)));
        }
        let pid = r.u64("pid");
        if let Some(pid) = pid {
            self.pids.insert(pid);
        }
        if let Some(level) = r.str("level") {
            *self.levels.entry(level.to_ascii_uppercase()).or_default() += 1;
        }
        if !KNOWN_EVENTS.contains(&event.as_str()) {
            *self.unknown_events.entry(event.clone()).or_default() += 1;
        }
        if event == "dropped" {
            self.dropped += r.u64("count").unwrap_or(0);
            return pid;
        }
        let strategy = r.str("strategy").unwrap_or("?").to_string();
        let key = MutexKey {
            mutex: r.str("mutex").unwrap_or("?").to_string(),
            pid: pid.unwrap_or(0),
            strategy: strategy.clone(),
        };
        self.by_strategy.entry(strategy).or_default().add(&event, &r);
        self.by_mutex.entry(key).or_default().add(&event, &r);
        self.by_pid.entry(pid.unwrap_or(0)).or_default().add(&event, &r);
        pid
    }

    /// The events the recorded level leaves out: the `trace`-level ones when the trace
    /// has events with a level and none at TRACE (it was recorded at `debug`). None when
    /// nothing is left out, or the trace does not say its levels.
    pub fn omitted(&self) -> Option<&'static [&'static str]> {
        (!self.levels.is_empty() && !self.levels.contains_key("TRACE")).then_some(TRACE_LEVEL_EVENTS)
    }

    /// The call site of a mutex, when a statistics report names it.
    pub fn site(&self, k: &MutexKey) -> Option<&str> {
        self.sites.get(&(k.pid, k.mutex.clone())).map(String::as_str)
    }

    /// Mutexes, hottest first: most contended acquisitions, then most time waited.
    pub fn hottest(&self) -> Vec<(&MutexKey, &Stats)> {
        let mut v: Vec<(&MutexKey, &Stats)> = self.by_mutex.iter().collect();
        v.sort_by(|a, b| {
            b.1.acquired()
                .cmp(&a.1.acquired())
                .then(b.1.total_wait().cmp(&a.1.total_wait()))
                .then(b.1.events.values().sum::<u64>().cmp(&a.1.events.values().sum::<u64>()))
                .then(a.0.cmp(b.0))
        });
        v
    }
}

// ---------------------------------------------------------------- text

/// Nanoseconds in the unit that suits them: `850ns`, `12.3µs`, `4.10ms`, `1.20s`.
pub fn fmt_ns(ns: f64) -> String {
    duration_ns(ns, false)
}

/// A bucket's lower bound, short: `0`, `512ns`, `1.0µs`, `16µs`.
fn short_ns(v: u64) -> String {
    duration_ns(v as f64, true)
}

/// The label of a wait-time bucket: `0`, `1ns`, `512ns-1.0µs`.
fn wait_label(k: usize) -> String {
    let (lo, hi) = bucket_range(k);
    match k {
        0 => "0".to_string(),
        1 => "1ns".to_string(),
        64 => format!("≥{}", short_ns(lo)),
        _ => format!("{}-{}", short_ns(lo), short_ns(hi + 1)),
    }
}

/// The label of a spins bucket: `0`, `1`, `2-3`, `1024-2047`.
fn spin_label(k: usize) -> String {
    let (lo, hi) = bucket_range(k);
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    }
}

const BAR_WIDTH: usize = 40;

/// A bar of `frac` × [`BAR_WIDTH`] cells; anything non-zero shows.
fn bar(frac: f64, ascii: bool) -> String {
    let eighths = (frac.clamp(0.0, 1.0) * (BAR_WIDTH * 8) as f64).round() as usize;
    let nonzero = frac > 0.0;
    if ascii {
        let n = eighths.div_ceil(8).max(usize::from(nonzero));
        return "#".repeat(n);
    }
    const PARTS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
    let eighths = eighths.max(usize::from(nonzero));
    let mut s = "█".repeat(eighths / 8);
    s.push_str(PARTS[eighths % 8]);
    s
}

/// A histogram as rows of bars, from the first to the last non-empty bucket.
fn render_hist(out: &mut String, title: &str, h: &Hist, label: fn(usize) -> String, ascii: bool) {
    let Some((lo, hi)) = h.span() else {
        let _ = writeln!(out, "  {title}: none");
        return;
    };
    let total = h.total();
    let max = h.0[lo..=hi].iter().copied().max().unwrap_or(1).max(1);
    let _ = writeln!(out, "  {title} ({total}):");
    let labels: Vec<String> = (lo..=hi).map(label).collect();
    let lw = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let cw = h.0[lo..=hi].iter().map(|c| c.to_string().len()).max().unwrap_or(1);
    for (k, l) in (lo..=hi).zip(&labels) {
        let c = h.0[k];
        let b = bar(c as f64 / max as f64, ascii);
        let pad_l = lw - l.chars().count();
        let pad_b = BAR_WIDTH - b.chars().count();
        let _ = writeln!(
            out,
            "    {}{l} |{b}{} {c:>cw$} {:>5.1}%",
            " ".repeat(pad_l),
            " ".repeat(pad_b),
            100.0 * c as f64 / total as f64
        );
    }
}

fn list(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "none".to_string();
    }
    m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

/// Event counts with the library's events first, in a fixed order, then unknown ones;
/// then the events the recorded level leaves out.
fn event_list(t: &Trace, s: &Stats) -> String {
    let mut parts: Vec<String> =
        KNOWN_EVENTS.iter().filter_map(|e| s.events.get(*e).map(|c| format!("{e} {c}"))).collect();
    parts.extend(
        s.events.iter().filter(|(e, _)| !KNOWN_EVENTS.contains(&e.as_str())).map(|(e, c)| format!("{e} {c}")),
    );
    if let Some(omitted) = t.omitted() {
        parts.push(format!("{}: not recorded at this level", omitted.join(", ")));
    }
    parts.join(", ")
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.0}%", 100.0 * part as f64 / whole as f64)
    }
}

/// Columns shared by the strategy and mutex tables.
fn acquisition_cells(s: &Stats) -> Vec<String> {
    let n = s.acquired();
    let how = |h: &str| s.how.get(h).copied().unwrap_or(0);
    let w = s.wait_summary();
    let ns = |f: fn(&WaitSummary) -> f64| w.as_ref().map_or("-".to_string(), |w| fmt_ns(f(w)));
    vec![
        n.to_string(),
        format!("{} ({})", how("spin"), pct(how("spin"), n)),
        format!("{} ({})", how("sleep"), pct(how("sleep"), n)),
        format!("{} ({})", how("handoff"), pct(how("handoff"), n)),
        ns(|w| w.mean),
        ns(|w| w.p50 as f64),
        ns(|w| w.p99 as f64),
        ns(|w| w.max as f64),
        if n == 0 { "-".to_string() } else { format!("{:.1}", s.spins as f64 / n as f64) },
    ]
}

const ACQ_HEADER: [&str; 9] =
    ["acquired", "by spin", "by sleep", "by handoff", "mean wait", "p50", "p99", "max", "spins/acq"];

/// What the trace says of `event`s at its level: "not recorded at this level" when the
/// level leaves them out.
fn not_recorded(t: &Trace, events: &[&str]) -> bool {
    t.omitted().is_some_and(|o| events.iter().all(|e| o.contains(e)))
}

const NOT_RECORDED: &str = "not recorded at this level (SPINMUTEX_TRACE=trace records them)";

pub fn render_text(t: &Trace, file: &str, top: usize, ascii: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "spinmutex report: {file}");
    let span = match (t.first_ts, t.last_ts) {
        (Some(a), Some(b)) => format!(", over {}", fmt_ns(b.saturating_sub(a) as f64)),
        _ => String::new(),
    };
    let threads: BTreeSet<&(u64, u64)> = t.by_strategy.values().flat_map(|s| &s.threads).collect();
    let _ = writeln!(
        out,
        "{} events in {} lines, {} process{}, {} thread{}, {} mutex{}{span}",
        t.events,
        t.lines,
        t.pids.len(),
        if t.pids.len() == 1 { "" } else { "es" },
        threads.len(),
        if threads.len() == 1 { "" } else { "s" },
        t.by_mutex.len(),
        if t.by_mutex.len() == 1 { "" } else { "es" },
    );
    if t.malformed > 0 {
        let _ = writeln!(
            out,
            "{} malformed line{} skipped:",
            t.malformed,
            if t.malformed == 1 { "" } else { "s" }
        );
        for (f, n, why) in &t.malformed_examples {
            let _ = writeln!(out, "  {f} line {n}: {why}");
        }
        if t.malformed > t.malformed_examples.len() as u64 {
            let _ = writeln!(out, "  ...");
        }
    }
    if t.dropped > 0 {
        let _ = writeln!(
            out,
            "warning: the trace writer dropped {} events; counts below are lower bounds",
            t.dropped
        );
    }
    if !t.unknown_events.is_empty() {
        let _ = writeln!(out, "unknown events (counted, not interpreted): {}", list(&t.unknown_events));
    }
    if let Some(omitted) = t.omitted() {
        let _ = writeln!(
            out,
            "recorded at level {}: {} are not recorded at this level (SPINMUTEX_TRACE=trace records them)",
            t.levels.keys().map(|l| l.to_ascii_lowercase()).collect::<Vec<_>>().join("/"),
            omitted.join(", ")
        );
    }
    if t.events == 0 {
        let _ = writeln!(out, "\nno events");
        return out;
    }

    // Per process.
    let _ = writeln!(out, "\n== By process ==\n");
    let mut table = Table::new(1);
    let mut h = vec!["pid".to_string(), "strategy".to_string(), "events".to_string(), "mutexes".to_string()];
    h.extend(ACQ_HEADER.iter().map(|s| s.to_string()));
    table.header.push(h);
    for (pid, s) in &t.by_pid {
        let strategies: BTreeSet<&str> =
            t.by_mutex.keys().filter(|k| k.pid == *pid).map(|k| k.strategy.as_str()).collect();
        let mutexes = t.by_mutex.keys().filter(|k| k.pid == *pid).count();
        let mut row = vec![
            pid.to_string(),
            strategies.into_iter().collect::<Vec<_>>().join(","),
            s.events.values().sum::<u64>().to_string(),
            mutexes.to_string(),
        ];
        row.extend(acquisition_cells(s));
        table.rows.push(row);
    }
    out.push_str(&table.render());

    // Per strategy.
    let _ = writeln!(out, "\n== By strategy (contended acquisitions) ==\n");
    let mut table = Table::new(1);
    let mut h = vec!["strategy".to_string()];
    h.extend(ACQ_HEADER.iter().map(|s| s.to_string()));
    table.header.push(h);
    for (name, s) in &t.by_strategy {
        let mut row = vec![name.clone()];
        row.extend(acquisition_cells(s));
        table.rows.push(row);
    }
    out.push_str(&table.render());

    for (name, s) in &t.by_strategy {
        let _ = writeln!(out, "\n-- strategy {name} --");
        let _ = writeln!(out, "  events: {}", event_list(t, s));
        let _ = writeln!(
            out,
            "  handoffs {}, handoff requests {}, timeouts {}, forwarded {} ({} errors), threads {}",
            s.count("handoff"),
            if not_recorded(t, &["handoff_request"]) {
                "not recorded".to_string()
            } else {
                s.count("handoff_request").to_string()
            },
            s.count("timeout"),
            s.count("forward"),
            s.forward_errors,
            s.threads.len()
        );
        if not_recorded(t, &["spin_give_up"]) {
            let _ = writeln!(out, "  spin give-ups: {NOT_RECORDED}");
        } else {
            let _ = writeln!(out, "  spin give-ups: {}", list(&s.give_ups));
        }
        if s.acquired() > 0 {
            render_hist(&mut out, "wait time per contended acquisition", &s.wait_hist, wait_label, ascii);
            render_hist(&mut out, "spins per contended acquisition", &s.spin_hist, spin_label, ascii);
        }
    }

    // Per mutex.
    let hot = t.hottest();
    let shown = hot.len().min(top);
    let with_sites = hot.iter().take(top).any(|(k, _)| t.site(k).is_some());
    let _ = writeln!(out, "\n== Hottest mutexes ({shown} of {}, by contended acquisitions) ==\n", hot.len());
    let mut table = Table::new(4);
    let mut h: Vec<String> = ["#", "mutex", "pid", "strategy"].iter().map(|s| s.to_string()).collect();
    h.extend(ACQ_HEADER.iter().map(|s| s.to_string()));
    h.extend(["give-ups", "timeouts", "threads"].iter().map(|s| s.to_string()));
    if with_sites {
        h.push("call site".to_string());
        table.left_last = 1;
    }
    table.header.push(h);
    let give_ups_recorded = !not_recorded(t, &["spin_give_up"]);
    for (i, (k, s)) in hot.iter().take(top).enumerate() {
        let mut row = vec![format!("{}", i + 1), k.mutex.clone(), k.pid.to_string(), k.strategy.clone()];
        row.extend(acquisition_cells(s));
        row.push(if give_ups_recorded { s.count("spin_give_up").to_string() } else { "-".to_string() });
        row.push(s.count("timeout").to_string());
        row.push(s.threads.len().to_string());
        if with_sites {
            row.push(t.site(k).unwrap_or("-").to_string());
        }
        table.rows.push(row);
    }
    out.push_str(&table.render());
    if !give_ups_recorded {
        let _ = writeln!(out, "(give-ups: {NOT_RECORDED})");
    }

    for (i, (k, s)) in hot.iter().take(top).enumerate() {
        let site = t.site(k).map(|c| format!(", made at {c}")).unwrap_or_default();
        let _ = writeln!(out, "\n-- #{} mutex {} (pid {}, {}{site}) --", i + 1, k.mutex, k.pid, k.strategy);
        let _ = writeln!(out, "  events: {}", event_list(t, s));
        if !give_ups_recorded {
            let _ = writeln!(out, "  spin give-ups: {NOT_RECORDED}");
        } else if !s.give_ups.is_empty() {
            let _ = writeln!(out, "  spin give-ups: {}", list(&s.give_ups));
        }
        if s.acquired() > 0 {
            render_hist(&mut out, "wait time", &s.wait_hist, wait_label, ascii);
            render_hist(&mut out, "spins", &s.spin_hist, spin_label, ascii);
        }
    }
    out
}

// ---------------------------------------------------------------- JSON

/// The trace's summary as `report --json` writes it.
#[derive(Serialize)]
pub struct TraceJson {
    pub events: u64,
    pub lines: u64,
    pub malformed: u64,
    pub dropped: u64,
    pub pids: Vec<u64>,
    /// Events by level.
    pub levels: BTreeMap<String, u64>,
    /// Events the recorded level does not record (so their counts say nothing).
    pub not_recorded: Vec<&'static str>,
    pub unknown_events: BTreeMap<String, u64>,
    pub strategies: BTreeMap<String, StatsJson>,
    pub processes: BTreeMap<u64, StatsJson>,
    /// Hottest first.
    pub mutexes: Vec<MutexJson>,
}

#[derive(Serialize)]
pub struct StatsJson {
    pub events: BTreeMap<String, u64>,
    /// Contended acquisitions, and how they ended.
    pub acquired: u64,
    pub how: BTreeMap<String, u64>,
    pub spins: u64,
    pub sleeps: u64,
    /// Null when the recorded level does not record give-ups.
    pub give_ups: Option<BTreeMap<String, u64>>,
    pub wait_ns: Option<WaitJson>,
    /// (lower bound, count) of each non-empty log2 bucket.
    pub wait_histogram: Vec<[u64; 2]>,
    pub spin_histogram: Vec<[u64; 2]>,
    pub threads: usize,
}

#[derive(Serialize)]
pub struct WaitJson {
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

#[derive(Serialize)]
pub struct MutexJson {
    pub mutex: String,
    pub pid: u64,
    pub strategy: String,
    /// Where the mutex's class was made, when a statistics report lists it.
    pub call_site: Option<String>,
    #[serde(flatten)]
    pub stats: StatsJson,
}

fn buckets(h: &Hist) -> Vec<[u64; 2]> {
    h.0.iter().enumerate().filter(|(_, c)| **c > 0).map(|(k, c)| [bucket_range(k).0, *c]).collect()
}

impl StatsJson {
    fn of(t: &Trace, s: &Stats) -> StatsJson {
        StatsJson {
            events: s.events.clone(),
            acquired: s.acquired(),
            how: s.how.clone(),
            spins: s.spins,
            sleeps: s.sleeps,
            give_ups: (!not_recorded(t, &["spin_give_up"])).then(|| s.give_ups.clone()),
            wait_ns: s.wait_summary().map(|w| WaitJson { mean: w.mean, p50: w.p50, p99: w.p99, max: w.max }),
            wait_histogram: buckets(&s.wait_hist),
            spin_histogram: buckets(&s.spin_hist),
            threads: s.threads.len(),
        }
    }
}

impl TraceJson {
    pub fn of(t: &Trace) -> TraceJson {
        TraceJson {
            events: t.events,
            lines: t.lines,
            malformed: t.malformed,
            dropped: t.dropped,
            pids: t.pids.iter().copied().collect(),
            levels: t.levels.clone(),
            not_recorded: t.omitted().map(<[_]>::to_vec).unwrap_or_default(),
            unknown_events: t.unknown_events.clone(),
            strategies: t.by_strategy.iter().map(|(k, s)| (k.clone(), StatsJson::of(t, s))).collect(),
            processes: t.by_pid.iter().map(|(k, s)| (*k, StatsJson::of(t, s))).collect(),
            mutexes: t
                .hottest()
                .into_iter()
                .map(|(k, s)| MutexJson {
                    mutex: k.mutex.clone(),
                    pid: k.pid,
                    strategy: k.strategy.clone(),
                    call_site: t.site(k).map(str::to_string),
                    stats: StatsJson::of(t, s),
                })
                .collect(),
        }
    }
}

// ---------------------------------------------------------------- SVG

const LAYOUT: Layout =
    Layout { panel_w: 520.0, panel_h: 300.0, left: 64.0, right: 16.0, top: 30.0, bottom: 58.0 };
const PANEL_W: f64 = LAYOUT.panel_w;
const PANEL_H: f64 = LAYOUT.panel_h;
const TOP_MUTEXES_IN_SVG: usize = 10;
/// Width of the labels left of horizontal bars.
const LABEL_W: f64 = 480.0;
/// Longest label (in characters) left of a bar; longer ones are cut, whole in the tooltip.
const LABEL_CHARS: usize = 76;

/// One histogram panel: bucket groups on x, one bar per strategy in each group. Each
/// strategy's bars are its share of its own contended acquisitions, so a strategy with
/// 3 shows beside one with 379.
fn svg_hist_panel(
    s: &mut String,
    ox: f64,
    oy: f64,
    title: &str,
    x_label: &str,
    series: &[(&str, &Hist)],
    label: fn(u64) -> String,
) {
    let mut plot = LAYOUT.plot(ox, oy, 1.0, 1.0);
    let (px, py, pw, ph) = (plot.x, plot.y, plot.w, plot.h);
    let _ = writeln!(s, "<g>");
    plot.title(s, oy + 18.0, title);
    let span =
        series.iter().filter_map(|(_, h)| h.span()).fold(None, |acc: Option<(usize, usize)>, (lo, hi)| {
            Some(acc.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))))
        });
    plot.border(s);
    let Some((lo, hi)) = span else {
        plot.note(s, "no data");
        let _ = writeln!(s, "</g>");
        return;
    };
    let share = |h: &Hist, k: usize| -> f64 {
        let total = h.total();
        if total == 0 {
            0.0
        } else {
            100.0 * h.0[k] as f64 / total as f64
        }
    };
    let max =
        series.iter().flat_map(|(_, h)| (lo..=hi).map(move |k| share(h, k))).fold(0.0f64, f64::max).max(1.0);
    let ticks = svg::ticks(max);
    plot.top = ticks.last().copied().unwrap_or(100.0).max(1.0);
    plot.y_grid(s, &ticks);
    let groups = hi - lo + 1;
    let gw = pw / groups as f64;
    let n = series.len().max(1) as f64;
    let bw = (gw * 0.8 / n).max(0.5);
    // Label every group when they fit, else every other one.
    let every = if gw >= 34.0 { 1 } else { (34.0 / gw).ceil() as usize };
    for (g, k) in (lo..=hi).enumerate() {
        let gx = px + g as f64 * gw;
        if g % every == 0 {
            let (cx, cy) = (gx + gw / 2.0, py + ph + 12.0);
            let _ = writeln!(
                s,
                r#"<text x="{cx:.1}" y="{cy:.1}" text-anchor="end" transform="rotate(-35 {cx:.1} {cy:.1})">{}</text>"#,
                escape(&label(bucket_range(k).0))
            );
        }
        for (i, (name, h)) in series.iter().enumerate() {
            let c = h.0[k];
            if c == 0 {
                continue;
            }
            let pct = share(h, k);
            let x = gx + gw * 0.1 + i as f64 * bw;
            let y = plot.sy(pct);
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="{:.1}" fill="{}"><title>{} {}: {c} of {} ({pct:.1}%)</title></rect>"#,
                (py + ph - y).max(0.5),
                colour(name, i),
                escape(name),
                escape(&label(bucket_range(k).0)),
                h.total()
            );
        }
    }
    plot.axis_labels(s, x_label, oy + PANEL_H - 6.0, "% of the strategy's contended acquisitions", ox + 14.0);
    let _ = writeln!(s, "</g>");
}

/// A label cut to [`LABEL_CHARS`] characters.
fn cut(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        return label.to_string();
    }
    let mut s: String = label.chars().take(LABEL_CHARS - 1).collect();
    s.push('…');
    s
}

/// One bar of a horizontal bar panel.
struct Bar {
    label: String,
    value: f64,
    colour: &'static str,
    /// Written after the bar.
    text: String,
    tooltip: String,
}

/// Horizontal bars, two panels wide, labels on the left.
fn svg_bar_panel(s: &mut String, ox: f64, oy: f64, title: &str, x_label: &str, bars: &[Bar], empty: &str) {
    let mut plot = LAYOUT.plot(ox + LABEL_W - LAYOUT.left, oy, 2.0, 1.0);
    plot.w -= LABEL_W - LAYOUT.left + 170.0;
    let (px, py, pw, ph) = (plot.x, plot.y, plot.w, plot.h);
    let _ = writeln!(s, "<g>");
    plot.title(s, oy + 18.0, title);
    if bars.is_empty() {
        plot.note(s, empty);
        let _ = writeln!(s, "</g>");
        return;
    }
    let max = bars.iter().map(|b| b.value).fold(0.0f64, f64::max).max(1.0);
    let ticks = svg::ticks(max);
    plot.top = ticks.last().copied().unwrap_or(1.0).max(1.0);
    let sx = |v: f64| px + v / plot.top * pw;
    for tk in &ticks {
        let x = sx(*tk);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{py:.1}" x2="{x:.1}" y2="{:.1}" stroke="#e6e6e6"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            py + ph,
            py + ph + 14.0,
            svg::tick_label(*tk)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        px + pw / 2.0,
        py + ph + 32.0,
        escape(x_label)
    );
    let rh = ph / TOP_MUTEXES_IN_SVG as f64;
    for (i, b) in bars.iter().take(TOP_MUTEXES_IN_SVG).enumerate() {
        let y = py + i as f64 * rh;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}<title>{}</title></text>"#,
            px - 6.0,
            y + rh * 0.65,
            escape(&cut(&b.label)),
            escape(&b.label)
        );
        let _ = writeln!(
            s,
            r#"<rect x="{px:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}</title></rect><text x="{:.1}" y="{:.1}">{}</text>"#,
            y + rh * 0.15,
            (sx(b.value) - px).max(0.5),
            rh * 0.7,
            b.colour,
            escape(&b.tooltip),
            sx(b.value) + 4.0,
            y + rh * 0.65,
            escape(&b.text)
        );
    }
    plot.border(s);
    let _ = writeln!(s, "</g>");
}

/// The trace's hottest mutexes, labelled by the call site of their class when a
/// statistics report names it, else by address.
fn mutex_bars(t: &Trace, strategies: &[&str]) -> Vec<Bar> {
    let several = t.pids.len() > 1;
    t.hottest()
        .into_iter()
        .filter(|(_, st)| st.acquired() > 0)
        .take(TOP_MUTEXES_IN_SVG)
        .map(|(k, st)| {
            let idx = strategies.iter().position(|n| *n == k.strategy).unwrap_or(0);
            let n = st.acquired();
            let mean = st.wait_summary().map_or("-".to_string(), |w| fmt_ns(w.mean));
            let label = t.site(k).map_or_else(|| format!("mutex {}", k.mutex), str::to_string);
            let text = if several {
                format!("{n} ({}, pid {})", k.strategy, k.pid)
            } else {
                format!("{n} ({})", k.strategy)
            };
            Bar {
                label,
                value: n as f64,
                colour: colour(&k.strategy, idx),
                text,
                tooltip: format!(
                    "mutex {} (pid {}): {n} contended acquisitions, mean wait {mean}",
                    k.mutex, k.pid
                ),
            }
        })
        .collect()
}

/// The statistics reports' hottest classes in the order `sort` gives, labelled by
/// call site; a bar's length is the figure they are sorted by.
fn class_bars(reports: &[ProcessReport], sort: Sort) -> Vec<Bar> {
    let several = reports.len() > 1;
    let mut all: Vec<(&ProcessReport, &lockstats::Class)> =
        reports.iter().flat_map(|r| r.classes.iter().map(move |c| (r, c))).collect();
    all.sort_by_key(|(_, c)| std::cmp::Reverse(sort.key(&c.counters)));
    all.into_iter()
        .take(TOP_MUTEXES_IN_SVG)
        .map(|(r, c)| {
            let k = &c.counters;
            // Times are drawn in milliseconds.
            let (value, figure) = match sort {
                Sort::Wait => {
                    (k.wait_ns_total as f64 / 1e6, format!("wait {}", fmt_ns(k.wait_ns_total as f64)))
                }
                Sort::Contended => (k.contended as f64, format!("{} contended", k.contended)),
                Sort::Hold => {
                    (k.hold_ns_total as f64 / 1e6, format!("hold {}", fmt_ns(k.hold_ns_total as f64)))
                }
                Sort::Acquisitions => (k.locked as f64, format!("{} acquisitions", k.locked)),
            };
            let text = if several {
                format!("{figure} ({} contended; {}, pid {})", k.contended, r.strategy, r.pid)
            } else {
                format!("{figure} ({} contended)", k.contended)
            };
            Bar {
                label: c.site(),
                value,
                colour: colour(&r.strategy, 0),
                text,
                tooltip: format!(
                    "pid {} class #{} ({} {}): {} of {} acquisitions contended, wait {} in all; {}",
                    r.pid,
                    c.rank,
                    c.mutexes,
                    c.kind,
                    k.contended,
                    k.locked,
                    fmt_ns(k.wait_ns_total as f64),
                    c.made_at()
                ),
            }
        })
        .collect()
}

/// The chart: for a trace, wait-time and spins histograms per strategy and the hottest
/// mutexes; for statistics reports, the hottest lock classes.
pub fn render_svg_all(t: &Trace, reports: &[ProcessReport], sort: Sort, file: &str) -> String {
    let width = 2.0 * PANEL_W + 20.0;
    let header = 70.0;
    let trace_rows = if t.events > 0 || reports.is_empty() { 2.0 } else { 0.0 };
    let report_rows = if reports.is_empty() { 0.0 } else { 1.0 };
    let height = header + (trace_rows + report_rows) * PANEL_H + 10.0;
    let strategies: Vec<&str> = t.by_strategy.keys().map(String::as_str).collect();
    let acquired: u64 = t.by_strategy.values().map(Stats::acquired).sum();
    let mut sub = String::new();
    if trace_rows > 0.0 {
        let _ = write!(
            sub,
            "{} events, {} contended acquisitions, {} mutexes",
            t.events,
            acquired,
            t.by_mutex.len()
        );
    }
    if !reports.is_empty() {
        let contended: u64 = reports.iter().map(|r| r.totals.counters.contended).sum();
        if !sub.is_empty() {
            sub.push_str("; ");
        }
        let _ = write!(
            sub,
            "statistics of {} process{}: {contended} contended acquisitions",
            reports.len(),
            if reports.len() == 1 { "" } else { "es" }
        );
    }
    if t.malformed > 0 {
        let _ = write!(sub, ", {} malformed lines skipped", t.malformed);
    }
    if t.dropped > 0 {
        let _ = write!(sub, ", {} events dropped by the writer", t.dropped);
    }
    let mut s = svg::document_start(width, height, &format!("spinmutex report: {file}"), &sub);
    let mut lx = 10.0;
    for (i, name) in strategies.iter().enumerate() {
        let n = t.by_strategy[*name].acquired();
        let text = format!("{name} ({n} contended)");
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="49" width="12" height="12" fill="{}"/><text x="{:.1}" y="59">{}</text>"#,
            colour(name, i),
            lx + 17.0,
            escape(&text)
        );
        lx += 30.0 + 6.5 * text.chars().count() as f64;
    }
    let mut y = header;
    if trace_rows > 0.0 {
        let waits: Vec<(&str, &Hist)> =
            t.by_strategy.iter().map(|(n, st)| (n.as_str(), &st.wait_hist)).collect();
        let spins: Vec<(&str, &Hist)> =
            t.by_strategy.iter().map(|(n, st)| (n.as_str(), &st.spin_hist)).collect();
        svg_hist_panel(
            &mut s,
            10.0,
            y,
            "Wait time per contended acquisition",
            "wait (log2 buckets)",
            &waits,
            |v| {
                if v == 0 {
                    "0".to_string()
                } else {
                    short_ns(v)
                }
            },
        );
        svg_hist_panel(
            &mut s,
            10.0 + PANEL_W,
            y,
            "Spins per contended acquisition",
            "pause iterations (log2 buckets)",
            &spins,
            short_count,
        );
        y += PANEL_H;
        svg_bar_panel(
            &mut s,
            10.0,
            y,
            "Hottest mutexes: contended acquisitions (by call site where a statistics report names it)",
            "contended acquisitions",
            &mutex_bars(t, &strategies),
            "no contended acquisitions",
        );
        y += PANEL_H;
    }
    if !reports.is_empty() {
        svg_bar_panel(
            &mut s,
            10.0,
            y,
            &format!("Hottest lock classes: {}, by call site", sort.describe()),
            &match sort {
                Sort::Wait | Sort::Hold => format!("{} (ms)", sort.describe()),
                _ => sort.describe().to_string(),
            },
            &class_bars(reports, sort),
            "no lock class was contended",
        );
    }
    s.push_str("</svg>\n");
    s
}

/// The trace's chart alone.
pub fn render_svg(t: &Trace, file: &str) -> String {
    render_svg_all(t, &[], Sort::Wait, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flat_objects() {
        let r = parse_line(
            r#" {"ts_ns":123456789,"pid":4242,"strategy":"spin","mutex":"0x5581c2a3b040","event":"acquired","how":"spin","spins":120,"wait_ns":3.4e3,"result":-1,"ok":true,"x":null} "#,
        )
        .unwrap();
        assert_eq!(r.u64("ts_ns"), Some(123456789));
        assert_eq!(r.str("mutex"), Some("0x5581c2a3b040"));
        assert_eq!(r.u64("wait_ns"), Some(3400));
        assert_eq!(r.i64("result"), Some(-1));
        assert_eq!(r.u64("result"), None);
        assert_eq!(r.get("ok"), Some(&Value::Bool(true)));
        assert_eq!(r.get("x"), Some(&Value::Null));
        assert_eq!(r.str("spins"), None, "a number is not a string");
        assert_eq!(parse_line("{}").unwrap(), Record::default());
    }

    #[test]
    fn parses_escapes_and_skips_nested_values() {
        let r =
            parse_line(r#"{"s":"a\"b\\c\/d\n\u00e9\ud83d\ude00","n":{"a":[1,{"b":"}"}],"c":[]},"e":"x"}"#)
                .unwrap();
        assert_eq!(r.str("s"), Some("a\"b\\c/d\né😀"));
        assert!(r.get("n").is_some_and(Value::is_object));
        assert_eq!(r.str("e"), Some("x"));
    }

    #[test]
    fn rejects_malformed_lines() {
        for bad in [
            "",
            "[1,2]",
            "{",
            r#"{"a":1"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{a:1}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":tru}"#,
            r#"{"a":"x}"#,
            r#"{"a":"\q"}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":1} trailing"#,
            r#"{"a":1}{"b":2}"#,
            r#"{"a":[1,2}"#,
        ] {
            assert!(parse_line(bad).is_err(), "accepted {bad:?}");
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(200), "]".repeat(200));
        assert!(parse_line(&deep).is_err());
    }

    #[test]
    fn buckets_are_log2() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 1);
        assert_eq!(bucket(2), 2);
        assert_eq!(bucket(3), 2);
        assert_eq!(bucket(4), 3);
        assert_eq!(bucket(1023), 10);
        assert_eq!(bucket(1024), 11);
        assert_eq!(bucket(u64::MAX), 64);
        for k in 0..BUCKETS {
            let (lo, hi) = bucket_range(k);
            assert_eq!(bucket(lo), k);
            assert_eq!(bucket(hi), k);
        }
        let mut h = Hist::default();
        for v in [0, 5, 6, 7, 100] {
            h.add(v);
        }
        assert_eq!(h.span(), Some((0, 7)));
        assert_eq!(h.0[3], 3);
        assert_eq!(h.total(), 5);
        assert_eq!(spin_label(3), "4-7");
        assert_eq!(spin_label(1), "1");
        assert_eq!(wait_label(11), "1.0µs-2.0µs");
        assert_eq!(wait_label(0), "0");
    }

    #[test]
    fn bars_scale_and_show_small_counts() {
        assert_eq!(bar(1.0, false).chars().count(), BAR_WIDTH);
        assert_eq!(bar(1.0, true), "#".repeat(BAR_WIDTH));
        assert_eq!(bar(0.0, false), "");
        assert_eq!(bar(0.001, false), "▏");
        assert_eq!(bar(0.001, true), "#");
        assert_eq!(bar(0.5, false), "█".repeat(BAR_WIDTH / 2));
    }

    #[test]
    fn summarises_a_trace() {
        let mut t = Trace::default();
        let line = |m: &str, s: &str, ev: &str, extra: &str| {
            format!(
                r#"{{"ts_ns":1000,"pid":1,"tid":2,"strategy":"{s}","mutex":"{m}","event":"{ev}"{extra}}}"#
            )
        };
        for w in [100, 200, 300, 400] {
            t.add_line(&line(
                "0xa",
                "spin",
                "acquired",
                &format!(r#","how":"spin","spins":3,"sleeps":0,"wait_ns":{w}"#),
            ));
        }
        t.add_line(&line("0xb", "spin", "acquired", r#","how":"sleep","spins":0,"sleeps":1,"wait_ns":9000"#));
        t.add_line(&line("0xb", "spin", "spin_give_up", r#","reason":"budget","spins":50,"budget":50"#));
        t.add_line(&line("0xb", "spin", "teleport", ""));
        t.add_line("not json");
        t.add_line("");
        t.add_line(r#"{"event":"dropped","count":7}"#);
        assert_eq!(t.lines, 10);
        assert_eq!(t.events, 8);
        assert_eq!(t.malformed, 1);
        assert_eq!(t.malformed_examples[0].1, 8);
        assert_eq!(t.dropped, 7);
        assert_eq!(t.unknown_events.get("teleport"), Some(&1));
        let spin = &t.by_strategy["spin"];
        assert_eq!(spin.acquired(), 5);
        assert_eq!(spin.how["spin"], 4);
        assert_eq!(spin.give_ups["budget"], 1);
        let w = spin.wait_summary().unwrap();
        assert_eq!((w.p50, w.p99, w.max), (300, 9000, 9000));
        assert!((w.mean - 2000.0).abs() < 1e-9);
        let hot = t.hottest();
        assert_eq!(hot[0].0.mutex, "0xa");
        assert_eq!(hot[1].0.mutex, "0xb");
        let text = render_text(&t, "t.json", 20, false);
        assert!(text.contains("1 malformed line skipped"), "{text}");
        assert!(text.contains("dropped 7 events"), "{text}");
        assert!(text.contains("-- #1 mutex 0xa"), "{text}");
        let svg = render_svg(&t, "t.json");
        assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<g>").count(), svg.matches("</g>").count());
    }

    #[test]
    fn charts_normalise_per_strategy_and_label_by_call_site() {
        let mut l = Loaded::default();
        let mut text = String::new();
        for i in 0..379 {
            let _ = writeln!(
                text,
                r#"{{"pid":5,"tid":{},"strategy":"spin","level":"TRACE","mutex":"0xbeef","event":"acquired","how":"spin","spins":8,"sleeps":0,"wait_ns":100}}"#,
                i % 4
            );
        }
        for _ in 0..3 {
            text.push_str(r#"{"pid":6,"tid":1,"strategy":"futex","level":"TRACE","mutex":"0xf00d","event":"acquired","how":"sleep","spins":0,"sleeps":1,"wait_ns":9000}"#);
            text.push('\n');
        }
        text.push_str(
            r#"{"pid":5,"strategy":"spin","classes":[{"rank":1,"origin":"init","type":"normal","mutexes":1,"live":1,"counters":{"locked":400,"contended":379},"frames":[{"module":"/nonexistent/app","offset":"0x10","symbol":"make_queue","symbol_offset":"0x4"}],"instances":[{"mutex":"0xbeef","type":"normal","counters":{"locked":400,"contended":379}}]}],"totals":{"mutexes":1,"live":1,"counters":{"locked":400,"contended":379}}}"#,
        );
        text.push('\n');
        l.read("t.json", text.as_bytes()).unwrap();
        assert_eq!((l.trace.events, l.reports.len()), (382, 1));
        l.resolve(&mut Resolver::new(vec![]), 20);
        let svg = l.render_svg();
        // Each strategy's bars are shares of its own acquisitions: 3 of 3 is 100%.
        assert!(svg.contains("futex 8.2µs: 3 of 3 (100.0%)"), "{svg}");
        assert!(svg.contains("spin 64ns: 379 of 379 (100.0%)"), "{svg}");
        // The hot mutex and the class are labelled by call site, not address.
        assert!(svg.contains(">make_queue+0x4 [dladdr]<title>"), "{svg}");
        assert!(svg.contains("Hottest lock classes"), "{svg}");
        assert!(svg.contains(">mutex 0xf00d<title>"), "an unnamed mutex keeps its address: {svg}");
        let text = l.render_text(20, false);
        assert!(text.contains("made at make_queue+0x4 [dladdr]"), "{text}");
    }

    #[test]
    fn empty_trace_says_so() {
        let t = Trace::default();
        assert!(render_text(&t, "e.json", 20, false).contains("no events"));
        let svg = render_svg(&t, "e.json");
        assert!(svg.contains("no data"));
    }

    fn parse(args: &[&str]) -> Result<ReportArgs, clap::Error> {
        crate::parse_args(args)
    }

    #[test]
    fn arguments() {
        let a = parse(&["t.json", "--svg", "o.svg", "--top=3", "--ascii", "--json", "--debug-dir", "/d"])
            .unwrap();
        assert_eq!(
            a,
            ReportArgs {
                files: vec!["t.json".into()],
                svg: Some("o.svg".into()),
                top: 3,
                sort: Sort::Wait,
                ascii: true,
                json: true,
                debug_dirs: vec![PathBuf::from("/d")],
            }
        );
        assert_eq!(parse(&["--", "-"]).unwrap().files, ["-"]);
        assert_eq!(parse(&["-"]).unwrap().files, ["-"]);
        assert_eq!(parse(&["a", "b", "c*"]).unwrap().files, ["a", "b", "c*"]);
        assert!(parse(&[]).is_err());
        assert!(parse(&["a", "--svg"]).is_err());
        assert!(parse(&["a", "--svg", ""]).is_err());
        assert!(parse(&["a", "--top", "0"]).is_err());
        assert!(parse(&["a", "--bogus"]).is_err());
    }

    #[test]
    fn expands_globs_and_finds_children_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        for n in ["t.json", "t.json.12", "t.json.3", "t.json.x", "t.json.12.bak", "u.json"] {
            std::fs::write(p(n), "").unwrap();
        }
        let files = |v: Vec<Source>| -> Vec<String> {
            v.into_iter()
                .map(|s| match s {
                    Source::File(f) => f.file_name().unwrap().to_string_lossy().into_owned(),
                    Source::Stdin => "-".into(),
                })
                .collect()
        };
        let t = p("t.json").display().to_string();
        assert_eq!(files(expand(std::slice::from_ref(&t)).unwrap()), ["t.json", "t.json.3", "t.json.12"]);
        // Named twice, or by a glob as well: each file once.
        let glob = p("*.json").display().to_string();
        assert_eq!(
            files(expand(&[glob, t.clone(), "-".into()]).unwrap()),
            ["t.json", "t.json.3", "t.json.12", "u.json", "-"]
        );
        // The parent's own file is missing: its children still count.
        std::fs::remove_file(p("t.json")).unwrap();
        assert_eq!(files(expand(&[t]).unwrap()), ["t.json.3", "t.json.12"]);
        assert!(expand(&[p("none.json").display().to_string()]).is_err());
        assert!(expand(&[p("none*.json").display().to_string()]).is_err());
    }

    #[test]
    fn a_debug_level_trace_says_what_it_does_not_record() {
        let mut t = Trace::default();
        t.add_line(r#"{"pid":1,"tid":2,"strategy":"spin","level":"DEBUG","mutex":"0xa","event":"acquired","how":"sleep","spins":9,"sleeps":1,"wait_ns":100}"#);
        assert_eq!(t.omitted(), Some(TRACE_LEVEL_EVENTS));
        let text = render_text(&t, "t.json", 20, false);
        assert!(text.contains("spin give-ups: not recorded at this level"), "{text}");
        assert!(!text.contains("spin give-ups: none"), "{text}");
        assert!(text.contains("recorded at level debug"), "{text}");
        let json = serde_json::to_value(TraceJson::of(&t)).unwrap();
        assert_eq!(json["not_recorded"][0], "spin_give_up");
        assert!(json["strategies"]["spin"]["give_ups"].is_null());
        // One TRACE-level event: give-ups are recorded, and none happened.
        t.add_line(r#"{"pid":1,"tid":2,"strategy":"spin","level":"TRACE","mutex":"0xa","event":"wake"}"#);
        assert_eq!(t.omitted(), None);
        assert!(render_text(&t, "t.json", 20, false).contains("spin give-ups: none"));
    }

    #[test]
    fn reads_non_utf8_lines_as_malformed() {
        let mut t = Trace::default();
        let data: &[u8] = b"{\"event\":\"wake\",\"strategy\":\"futex\",\"mutex\":\"0x1\"}\n\xff\xfe\n";
        t.read(data).unwrap();
        assert_eq!((t.events, t.malformed), (1, 1));
        assert_eq!(t.by_strategy["futex"].count("wake"), 1);
    }
}
