//! `spinmutex report`: summarise a JSON trace written by the library
//! (`SPINMUTEX_TRACE_FORMAT=json`): per strategy and per mutex, event counts, how
//! contended acquisitions ended, wait-time statistics and log2 histograms of waits and
//! spins, as text and optionally as an SVG chart.
//!
//! The trace is JSON Lines, one flat object per event. Unknown events and keys are
//! counted or ignored; lines that are not JSON objects are counted as malformed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::PathBuf;

use clap::Args;
use serde_json::{Map, Value};

use crate::svg::{self, colour, escape, Layout};
use crate::text::{duration_ns, short_count, Table};
use crate::Failure;

/// Summarise a JSON trace of the library
#[derive(Args, Debug, PartialEq)]
#[command(long_about = "Summarise a JSON trace of the library.\n\n\
    FILE is a trace written with SPINMUTEX_TRACE=trace SPINMUTEX_TRACE_FORMAT=json (one JSON \
    object per line; `-` reads standard input). The report gives, per strategy and for the \
    mutexes with the most contended acquisitions: event counts, how acquisitions ended \
    (spin, sleep, handoff), mean/p50/p99/max wait, spin give-up reasons, and log2 \
    histograms of wait times and of spins per contended acquisition. Malformed lines are \
    counted and reported; unknown events are counted.")]
pub struct ReportArgs {
    /// The trace file; `-` reads standard input
    #[arg(value_name = "FILE")]
    pub file: String,

    /// Also write a chart (wait-time and spins histograms per strategy, hottest
    /// mutexes) as SVG to OUT
    #[arg(long, value_name = "OUT", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub svg: Option<String>,

    /// List the N mutexes with most contended acquisitions
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub top: u64,

    /// Draw histogram bars with '#' instead of block characters
    #[arg(long)]
    pub ascii: bool,
}

pub fn main(a: ReportArgs) -> Result<u8, Failure> {
    let mut trace = Trace::default();
    let read = if a.file == "-" {
        trace.read(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(&a.file)
            .map_err(|e| Failure::Runtime(format!("cannot read {}: {e}", a.file)))?;
        trace.read(BufReader::new(f))
    };
    read.map_err(|e| Failure::Runtime(format!("cannot read {}: {e}", a.file)))?;
    let text = render_text(&trace, &a.file, a.top as usize, a.ascii);
    if let Some(out) = &a.svg {
        let out = PathBuf::from(out);
        std::fs::write(&out, render_svg(&trace, &a.file))
            .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", out.display())))?;
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
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
    /// Line numbers and reasons of the first few malformed lines.
    pub malformed_examples: Vec<(u64, String)>,
    pub unknown_events: BTreeMap<String, u64>,
    /// Events the writer says it dropped.
    pub dropped: u64,
    pub first_ts: Option<u64>,
    pub last_ts: Option<u64>,
    pub pids: BTreeSet<u64>,
    pub by_strategy: BTreeMap<String, Stats>,
    pub by_mutex: HashMap<MutexKey, Stats>,
}

const MALFORMED_EXAMPLES: usize = 5;

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
                Ok(line) => self.add_line(line),
                Err(_) => {
                    self.lines += 1;
                    self.malformed(self.lines, "not UTF-8".to_string());
                }
            }
        }
    }

    fn malformed(&mut self, lineno: u64, why: String) {
        self.malformed += 1;
        if self.malformed_examples.len() < MALFORMED_EXAMPLES {
            self.malformed_examples.push((lineno, why));
        }
    }

    /// Adds one line of the trace. Blank lines are skipped.
    pub fn add_line(&mut self, line: &str) {
        self.lines += 1;
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        let r = match parse_line(line) {
            Ok(r) => r,
            Err(why) => return self.malformed(self.lines, why),
        };
        let Some(event) = r.str("event").map(str::to_string) else {
            return self.malformed(self.lines, "no \"event\" string".to_string());
        };
        self.events += 1;
        if let Some(ts) = r.u64("ts_ns") {
            self.first_ts = Some(self.first_ts.map_or(ts, |f| f.min(ts)));
            self.last_ts = Some(self.last_ts.map_or(ts, |l| l.max(ts)));
        }
        if let Some(pid) = r.u64("pid") {
            self.pids.insert(pid);
        }
        if !KNOWN_EVENTS.contains(&event.as_str()) {
            *self.unknown_events.entry(event.clone()).or_default() += 1;
        }
        if event == "dropped" {
            self.dropped += r.u64("count").unwrap_or(0);
            return;
        }
        let strategy = r.str("strategy").unwrap_or("?").to_string();
        let key = MutexKey {
            mutex: r.str("mutex").unwrap_or("?").to_string(),
            pid: r.u64("pid").unwrap_or(0),
            strategy: strategy.clone(),
        };
        self.by_strategy.entry(strategy).or_default().add(&event, &r);
        self.by_mutex.entry(key).or_default().add(&event, &r);
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

/// Event counts with the library's events first, in a fixed order, then unknown ones.
fn event_list(s: &Stats) -> String {
    let mut parts: Vec<String> =
        KNOWN_EVENTS.iter().filter_map(|e| s.events.get(*e).map(|c| format!("{e} {c}"))).collect();
    parts.extend(
        s.events.iter().filter(|(e, _)| !KNOWN_EVENTS.contains(&e.as_str())).map(|(e, c)| format!("{e} {c}")),
    );
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
        for (n, why) in &t.malformed_examples {
            let _ = writeln!(out, "  line {n}: {why}");
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
    if t.events == 0 {
        let _ = writeln!(out, "\nno events");
        return out;
    }

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
        let _ = writeln!(out, "  events: {}", event_list(s));
        let _ = writeln!(
            out,
            "  handoffs {}, handoff requests {}, timeouts {}, forwarded {} ({} errors), threads {}",
            s.count("handoff"),
            s.count("handoff_request"),
            s.count("timeout"),
            s.count("forward"),
            s.forward_errors,
            s.threads.len()
        );
        let _ = writeln!(out, "  spin give-ups: {}", list(&s.give_ups));
        if s.acquired() > 0 {
            render_hist(&mut out, "wait time per contended acquisition", &s.wait_hist, wait_label, ascii);
            render_hist(&mut out, "spins per contended acquisition", &s.spin_hist, spin_label, ascii);
        }
    }

    // Per mutex.
    let hot = t.hottest();
    let shown = hot.len().min(top);
    let _ = writeln!(out, "\n== Hottest mutexes ({shown} of {}, by contended acquisitions) ==\n", hot.len());
    let mut table = Table::new(4);
    let mut h: Vec<String> = ["#", "mutex", "pid", "strategy"].iter().map(|s| s.to_string()).collect();
    h.extend(ACQ_HEADER.iter().map(|s| s.to_string()));
    h.extend(["give-ups", "timeouts", "threads"].iter().map(|s| s.to_string()));
    table.header.push(h);
    for (i, (k, s)) in hot.iter().take(top).enumerate() {
        let mut row = vec![format!("{}", i + 1), k.mutex.clone(), k.pid.to_string(), k.strategy.clone()];
        row.extend(acquisition_cells(s));
        row.push(s.count("spin_give_up").to_string());
        row.push(s.count("timeout").to_string());
        row.push(s.threads.len().to_string());
        table.rows.push(row);
    }
    out.push_str(&table.render());

    for (i, (k, s)) in hot.iter().take(top).enumerate() {
        let _ = writeln!(out, "\n-- #{} mutex {} (pid {}, {}) --", i + 1, k.mutex, k.pid, k.strategy);
        let _ = writeln!(out, "  events: {}", event_list(s));
        if !s.give_ups.is_empty() {
            let _ = writeln!(out, "  spin give-ups: {}", list(&s.give_ups));
        }
        if s.acquired() > 0 {
            render_hist(&mut out, "wait time", &s.wait_hist, wait_label, ascii);
            render_hist(&mut out, "spins", &s.spin_hist, spin_label, ascii);
        }
    }
    out
}

// ---------------------------------------------------------------- SVG

const LAYOUT: Layout =
    Layout { panel_w: 520.0, panel_h: 300.0, left: 64.0, right: 16.0, top: 30.0, bottom: 58.0 };
const PANEL_W: f64 = LAYOUT.panel_w;
const PANEL_H: f64 = LAYOUT.panel_h;
const TOP_MUTEXES_IN_SVG: usize = 10;

/// One histogram panel: bucket groups on x, one bar per strategy in each group.
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
    let max = series.iter().flat_map(|(_, h)| h.0[lo..=hi].iter().copied()).max().unwrap_or(1) as f64;
    let ticks = svg::ticks(max);
    plot.top = ticks.last().copied().unwrap_or(1.0).max(1.0);
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
            let x = gx + gw * 0.1 + i as f64 * bw;
            let y = plot.sy(c as f64);
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="{:.1}" fill="{}"><title>{} {}: {c}</title></rect>"#,
                (py + ph - y).max(0.5),
                colour(name, i),
                escape(name),
                escape(&label(bucket_range(k).0))
            );
        }
    }
    plot.axis_labels(s, x_label, oy + PANEL_H - 6.0, "contended acquisitions", ox + 14.0);
    let _ = writeln!(s, "</g>");
}

/// Horizontal bars: contended acquisitions of the hottest mutexes.
fn svg_mutex_panel(s: &mut String, ox: f64, oy: f64, t: &Trace, strategies: &[&str]) {
    let hot: Vec<(&MutexKey, &Stats)> =
        t.hottest().into_iter().filter(|(_, st)| st.acquired() > 0).take(TOP_MUTEXES_IN_SVG).collect();
    let label_w = 250.0;
    // Two panels wide, the mutexes' names on the left.
    let mut plot = LAYOUT.plot(ox + label_w - LAYOUT.left, oy, 2.0, 1.0);
    plot.w -= label_w - LAYOUT.left + 60.0;
    let (px, py, pw, ph) = (plot.x, plot.y, plot.w, plot.h);
    let _ = writeln!(s, "<g>");
    plot.title(s, oy + 18.0, "Hottest mutexes: contended acquisitions");
    if hot.is_empty() {
        plot.note(s, "no contended acquisitions");
        let _ = writeln!(s, "</g>");
        return;
    }
    let max = hot.iter().map(|(_, st)| st.acquired()).max().unwrap_or(1) as f64;
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
    let rh = ph / TOP_MUTEXES_IN_SVG as f64;
    for (i, (k, st)) in hot.iter().enumerate() {
        let y = py + i as f64 * rh;
        let idx = strategies.iter().position(|n| *n == k.strategy).unwrap_or(0);
        let n = st.acquired();
        let mean = st.wait_summary().map_or("-".to_string(), |w| fmt_ns(w.mean));
        let who = if t.pids.len() > 1 {
            format!("{} ({}, pid {})", k.mutex, k.strategy, k.pid)
        } else {
            format!("{} ({})", k.mutex, k.strategy)
        };
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            px - 6.0,
            y + rh * 0.65,
            escape(&who)
        );
        let _ = writeln!(
            s,
            r#"<rect x="{px:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {n} contended acquisitions, mean wait {mean}</title></rect><text x="{:.1}" y="{:.1}">{n}</text>"#,
            y + rh * 0.15,
            (sx(n as f64) - px).max(0.5),
            rh * 0.7,
            colour(&k.strategy, idx),
            escape(&k.mutex),
            sx(n as f64) + 4.0,
            y + rh * 0.65
        );
    }
    plot.border(s);
    let _ = writeln!(s, "</g>");
}

/// The chart: wait-time and spins histograms per strategy, and the hottest mutexes.
pub fn render_svg(t: &Trace, file: &str) -> String {
    let width = 2.0 * PANEL_W + 20.0;
    let header = 70.0;
    let height = header + 2.0 * PANEL_H + 10.0;
    let strategies: Vec<&str> = t.by_strategy.keys().map(String::as_str).collect();
    let acquired: u64 = t.by_strategy.values().map(Stats::acquired).sum();
    let mut sub =
        format!("{} events, {} contended acquisitions, {} mutexes", t.events, acquired, t.by_mutex.len());
    if t.malformed > 0 {
        let _ = write!(sub, ", {} malformed lines skipped", t.malformed);
    }
    if t.dropped > 0 {
        let _ = write!(sub, ", {} events dropped by the writer", t.dropped);
    }
    let mut s = svg::document_start(width, height, &format!("spinmutex report: {file}"), &sub);
    let mut lx = 10.0;
    for (i, name) in strategies.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="49" width="12" height="12" fill="{}"/><text x="{:.1}" y="59">{}</text>"#,
            colour(name, i),
            lx + 17.0,
            escape(name)
        );
        lx += 40.0 + 7.0 * name.chars().count() as f64;
    }
    let waits: Vec<(&str, &Hist)> = t.by_strategy.iter().map(|(n, st)| (n.as_str(), &st.wait_hist)).collect();
    let spins: Vec<(&str, &Hist)> = t.by_strategy.iter().map(|(n, st)| (n.as_str(), &st.spin_hist)).collect();
    svg_hist_panel(
        &mut s,
        10.0,
        header,
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
        header,
        "Spins per contended acquisition",
        "pause iterations (log2 buckets)",
        &spins,
        short_count,
    );
    svg_mutex_panel(&mut s, 10.0, header + PANEL_H, t, &strategies);
    s.push_str("</svg>\n");
    s
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
        assert_eq!(t.malformed_examples[0].0, 8);
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
        let a = parse(&["t.json", "--svg", "o.svg", "--top=3", "--ascii"]).unwrap();
        assert_eq!(a, ReportArgs { file: "t.json".into(), svg: Some("o.svg".into()), top: 3, ascii: true });
        assert_eq!(parse(&["--", "-"]).unwrap().file, "-");
        assert_eq!(parse(&["-"]).unwrap().file, "-");
        assert!(parse(&[]).is_err());
        assert!(parse(&["a", "b"]).is_err());
        assert!(parse(&["a", "--svg"]).is_err());
        assert!(parse(&["a", "--svg", ""]).is_err());
        assert!(parse(&["a", "--top", "0"]).is_err());
        assert!(parse(&["a", "--bogus"]).is_err());
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
