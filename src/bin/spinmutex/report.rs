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

use crate::args::{self, Arg, Parser, UsageError};
use crate::svg::{colour, escape};
use crate::table::Table;
use crate::Failure;

pub const HELP: &str = "\
spinmutex report: summarise a JSON trace of the library

Usage: spinmutex report [OPTIONS] FILE

FILE is a trace written with SPINMUTEX_TRACE=trace SPINMUTEX_TRACE_FORMAT=json (one JSON
object per line; `-` reads standard input). The report gives, per strategy and for the
mutexes with the most contended acquisitions: event counts, how acquisitions ended
(spin, sleep, handoff), mean/p50/p99/max wait, spin give-up reasons, and log2
histograms of wait times and of spins per contended acquisition.
Malformed lines are counted and reported; unknown events are counted.

Options:
  --svg OUT     also write a chart (wait-time and spins histograms per strategy,
                hottest mutexes) as SVG to OUT
  --top N       list the N mutexes with most contended acquisitions (default 20)
  --ascii       draw histogram bars with '#' instead of block characters
  -h, --help    this help
";

/// What `report` was asked to do.
#[derive(Debug, PartialEq)]
pub struct ReportArgs {
    pub file: String,
    pub svg: Option<PathBuf>,
    pub top: usize,
    pub ascii: bool,
}

/// Parses `report`'s arguments; Ok(None) means help was printed.
pub fn parse(argv: &[String]) -> Result<Option<ReportArgs>, UsageError> {
    let mut p = Parser::new(argv);
    let mut file: Option<String> = None;
    let mut svg = None;
    let mut top = 20;
    let mut ascii = false;
    let positional = |f: String, file: &mut Option<String>| {
        if let Some(first) = file {
            return Err(UsageError::new(format!("one trace file only ('{first}' and '{f}' given)")));
        }
        *file = Some(f);
        Ok(())
    };
    while let Some(arg) = p.next_arg()? {
        match arg {
            Arg::Opt(o) => match o.as_str() {
                "-h" | "--help" => {
                    print!("{HELP}");
                    return Ok(None);
                }
                "--svg" => {
                    let v = p.value(&o)?;
                    if v.is_empty() {
                        return Err(UsageError::new("--svg: the value must not be empty"));
                    }
                    svg = Some(PathBuf::from(v));
                }
                "--top" => top = args::parse_u64(&o, &p.value(&o)?, 1, 100_000)? as usize,
                "--ascii" => ascii = true,
                _ => return Err(UsageError::new(format!("unknown option '{o}'"))),
            },
            Arg::Positional(f) => positional(f, &mut file)?,
            Arg::Rest(rest) => {
                for f in rest {
                    positional(f, &mut file)?;
                }
            }
        }
    }
    let Some(file) = file else {
        return Err(UsageError::new("no trace file given (spinmutex report [OPTIONS] FILE)"));
    };
    Ok(Some(ReportArgs { file, svg, top, ascii }))
}

pub fn main(argv: &[String]) -> Result<u8, Failure> {
    let Some(a) = parse(argv)? else { return Ok(0) };
    let mut trace = Trace::default();
    let read = if a.file == "-" {
        trace.read(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(&a.file)
            .map_err(|e| Failure::Runtime(format!("cannot read {}: {e}", a.file)))?;
        trace.read(BufReader::new(f))
    };
    read.map_err(|e| Failure::Runtime(format!("cannot read {}: {e}", a.file)))?;
    let text = render_text(&trace, &a.file, a.top, a.ascii);
    if let Some(out) = &a.svg {
        let svg = render_svg(&trace, &a.file);
        std::fs::write(out, svg)
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
        eprintln!("spinmutex: wrote {}", out.display());
    }
    Ok(0)
}

// ---------------------------------------------------------------- one JSON line

/// A value of a trace record. Nested arrays and objects are accepted and skipped.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Str(String),
    /// The number as written (validated JSON number syntax).
    Num(String),
    Bool(bool),
    Null,
    Nested,
}

/// One trace line: its keys and values in order.
#[derive(Debug, Default, PartialEq)]
pub struct Record(pub Vec<(String, Val)>);

impl Record {
    /// The value of `key` (the last one, should a key repeat).
    pub fn get(&self, key: &str) -> Option<&Val> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        match self.get(key)? {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A non-negative whole number (written as an integer, or as a float that is one).
    pub fn u64(&self, key: &str) -> Option<u64> {
        match self.get(key)? {
            Val::Num(n) => n.parse::<u64>().ok().or_else(|| {
                let f: f64 = n.parse().ok()?;
                (f >= 0.0 && f.fract() == 0.0 && f < 1.8e19).then_some(f as u64)
            }),
            _ => None,
        }
    }

    pub fn i64(&self, key: &str) -> Option<i64> {
        match self.get(key)? {
            Val::Num(n) => n.parse::<i64>().ok().or_else(|| {
                let f: f64 = n.parse().ok()?;
                (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64)
            }),
            _ => None,
        }
    }
}

/// Parses one line holding one JSON object.
pub fn parse_line(line: &str) -> Result<Record, String> {
    let mut p = JsonParser { s: line.as_bytes(), i: 0 };
    p.ws();
    let fields = p.object_fields()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("unexpected text after the object at byte {}", p.i));
    }
    Ok(Record(fields))
}

struct JsonParser<'a> {
    s: &'a [u8],
    i: usize,
}

const MAX_DEPTH: usize = 64;

impl JsonParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", c as char, self.i))
        }
    }

    /// `{ "k": v, ... }`, keeping the values that are not nested.
    fn object_fields(&mut self) -> Result<Vec<(String, Val)>, String> {
        self.expect(b'{')?;
        let mut fields = Vec::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(fields);
        }
        loop {
            self.ws();
            let key = self.string()?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            let v = self.value(1)?;
            fields.push((key, v));
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(fields);
                }
                _ => return Err(format!("expected ',' or '}}' at byte {}", self.i)),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Val, String> {
        match self.peek() {
            Some(b'"') => Ok(Val::Str(self.string()?)),
            Some(b'{' | b'[') => {
                self.skip_nested(depth)?;
                Ok(Val::Nested)
            }
            Some(b't') => self.word("true", Val::Bool(true)),
            Some(b'f') => self.word("false", Val::Bool(false)),
            Some(b'n') => self.word("null", Val::Null),
            Some(b'-' | b'0'..=b'9') => Ok(Val::Num(self.number()?)),
            _ => Err(format!("expected a value at byte {}", self.i)),
        }
    }

    fn word(&mut self, w: &str, v: Val) -> Result<Val, String> {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(v)
        } else {
            Err(format!("expected a value at byte {}", self.i))
        }
    }

    fn skip_nested(&mut self, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("nested too deeply".to_string());
        }
        let close = if self.peek() == Some(b'{') { b'}' } else { b']' };
        self.i += 1;
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            if close == b'}' {
                self.string()?;
                self.ws();
                self.expect(b':')?;
                self.ws();
            }
            self.value(depth + 1)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(c) if c == close => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(format!("unterminated array or object at byte {}", self.i)),
            }
        }
    }

    fn number(&mut self) -> Result<String, String> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let d0 = p.i;
            while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                p.i += 1;
            }
            p.i - d0
        };
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let int_start = self.i;
        let n = digits(self);
        if n == 0 || (n > 1 && self.s[int_start] == b'0') {
            return Err(format!("bad number at byte {start}"));
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if digits(self) == 0 {
                return Err(format!("bad number at byte {start}"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return Err(format!("bad number at byte {start}"));
            }
        }
        // The slice is ASCII by construction.
        Ok(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.peek() else { return Err("unterminated string".to_string()) };
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(e) = self.peek() else { return Err("unterminated string".to_string()) };
                    self.i += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xd800..0xdc00).contains(&cp) && self.s[self.i..].starts_with(b"\\u") {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xdc00..0xe000).contains(&lo) {
                                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                } else {
                                    self.i = save;
                                }
                            }
                            let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(format!("bad escape at byte {}", self.i - 1)),
                    }
                }
                c if c < 0x20 => return Err(format!("control character in a string at byte {}", self.i - 1)),
                c => out.push(c),
            }
        }
        // The input is a &str and escapes are encoded as UTF-8: always valid.
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.s.get(self.i..self.i + 4).ok_or("short \\u escape")?;
        let h = std::str::from_utf8(h).map_err(|_| "bad \\u escape")?;
        let v = u32::from_str_radix(h, 16).map_err(|_| format!("bad \\u escape at byte {}", self.i))?;
        self.i += 4;
        Ok(v)
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
    if !ns.is_finite() {
        return "-".to_string();
    }
    let (v, unit) = if ns < 1e3 {
        return format!("{ns:.0}ns");
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    if v < 10.0 {
        format!("{v:.2}{unit}")
    } else if v < 100.0 {
        format!("{v:.1}{unit}")
    } else {
        format!("{v:.0}{unit}")
    }
}

/// A bucket's lower bound, short: `0`, `512ns`, `1.0µs`, `16µs`.
fn short_ns(v: u64) -> String {
    let f = v as f64;
    let (x, unit) = if f < 1e3 {
        return format!("{v}ns");
    } else if f < 1e6 {
        (f / 1e3, "µs")
    } else if f < 1e9 {
        (f / 1e6, "ms")
    } else {
        (f / 1e9, "s")
    };
    if x < 10.0 {
        format!("{x:.1}{unit}")
    } else {
        format!("{x:.0}{unit}")
    }
}

fn short_count(v: u64) -> String {
    match v {
        0..=9_999 => v.to_string(),
        10_000..=9_999_999 => format!("{}k", v / 1000),
        _ => format!("{}M", v / 1_000_000),
    }
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

const PANEL_W: f64 = 520.0;
const PANEL_H: f64 = 300.0;
const PAD_L: f64 = 64.0;
const PAD_R: f64 = 16.0;
const PAD_T: f64 = 30.0;
const PAD_B: f64 = 58.0;
const TOP_MUTEXES_IN_SVG: usize = 10;

/// Axis ticks 0, step, ..., ≥ max with a 1-2-5 step.
fn ticks(max: f64) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let p = 10f64.powi(raw.log10().floor() as i32);
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * p).find(|s| *s >= raw).unwrap_or(10.0 * p);
    let step = step.max(1.0);
    let n = (max / step).ceil().max(1.0) as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

fn tick_label(v: f64) -> String {
    short_count(v.round() as u64)
}

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
    let (pw, ph) = (PANEL_W - PAD_L - PAD_R, PANEL_H - PAD_T - PAD_B);
    let (px, py) = (ox + PAD_L, oy + PAD_T);
    let _ = writeln!(s, "<g>");
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="13" font-weight="bold">{}</text>"#,
        px + pw / 2.0,
        oy + 18.0,
        escape(title)
    );
    let span =
        series.iter().filter_map(|(_, h)| h.span()).fold(None, |acc: Option<(usize, usize)>, (lo, hi)| {
            Some(acc.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))))
        });
    let _ = writeln!(
        s,
        r##"<rect x="{px:.1}" y="{py:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#888"/>"##
    );
    let Some((lo, hi)) = span else {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#666">no data</text>"##,
            px + pw / 2.0,
            py + ph / 2.0
        );
        let _ = writeln!(s, "</g>");
        return;
    };
    let max = series.iter().flat_map(|(_, h)| h.0[lo..=hi].iter().copied()).max().unwrap_or(1) as f64;
    let ticks = ticks(max);
    let top = ticks.last().copied().unwrap_or(1.0).max(1.0);
    let sy = |v: f64| py + ph - v / top * ph;
    for t in &ticks {
        let y = sy(*t);
        let _ = writeln!(
            s,
            r##"<line x1="{px:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e6e6e6"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            px + pw,
            px - 5.0,
            y + 4.0,
            tick_label(*t)
        );
    }
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
            let y = sy(c as f64);
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
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        px + pw / 2.0,
        oy + PANEL_H - 6.0,
        escape(x_label)
    );
    let (lx, ly) = (ox + 14.0, py + ph / 2.0);
    let _ = writeln!(
        s,
        r#"<text x="{lx:.1}" y="{ly:.1}" text-anchor="middle" transform="rotate(-90 {lx:.1} {ly:.1})">contended acquisitions</text>"#
    );
    let _ = writeln!(s, "</g>");
}

/// Horizontal bars: contended acquisitions of the hottest mutexes.
fn svg_mutex_panel(s: &mut String, ox: f64, oy: f64, t: &Trace, strategies: &[&str]) {
    let hot: Vec<(&MutexKey, &Stats)> =
        t.hottest().into_iter().filter(|(_, st)| st.acquired() > 0).take(TOP_MUTEXES_IN_SVG).collect();
    let label_w = 250.0;
    let (px, py) = (ox + label_w, oy + PAD_T);
    let (pw, ph) = (2.0 * PANEL_W - label_w - PAD_R - 60.0, PANEL_H - PAD_T - PAD_B);
    let _ = writeln!(s, "<g>");
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="13" font-weight="bold">Hottest mutexes: contended acquisitions</text>"#,
        ox + PANEL_W,
        oy + 18.0
    );
    if hot.is_empty() {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#666">no contended acquisitions</text>"##,
            ox + PANEL_W,
            py + ph / 2.0
        );
        let _ = writeln!(s, "</g>");
        return;
    }
    let max = hot.iter().map(|(_, st)| st.acquired()).max().unwrap_or(1) as f64;
    let ticks = ticks(max);
    let top = ticks.last().copied().unwrap_or(1.0).max(1.0);
    let sx = |v: f64| px + v / top * pw;
    for tk in &ticks {
        let x = sx(*tk);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{py:.1}" x2="{x:.1}" y2="{:.1}" stroke="#e6e6e6"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            py + ph,
            py + ph + 14.0,
            tick_label(*tk)
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
    let _ = writeln!(
        s,
        r##"<rect x="{px:.1}" y="{py:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#888"/>"##
    );
    let _ = writeln!(s, "</g>");
}

/// The chart: wait-time and spins histograms per strategy, and the hottest mutexes.
pub fn render_svg(t: &Trace, file: &str) -> String {
    let width = 2.0 * PANEL_W + 20.0;
    let header = 70.0;
    let height = header + 2.0 * PANEL_H + 10.0;
    let strategies: Vec<&str> = t.by_strategy.keys().map(String::as_str).collect();
    let mut s = crate::svg::document_start(width, height, &format!("spinmutex report: {file}"));
    let acquired: u64 = t.by_strategy.values().map(Stats::acquired).sum();
    let mut sub =
        format!("{} events, {} contended acquisitions, {} mutexes", t.events, acquired, t.by_mutex.len());
    if t.malformed > 0 {
        let _ = write!(sub, ", {} malformed lines skipped", t.malformed);
    }
    if t.dropped > 0 {
        let _ = write!(sub, ", {} events dropped by the writer", t.dropped);
    }
    let _ = writeln!(s, r##"<text x="10" y="38" fill="#444">{}</text>"##, escape(&sub));
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
    use crate::args::words as sv;

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
        assert_eq!(r.get("ok"), Some(&Val::Bool(true)));
        assert_eq!(r.get("x"), Some(&Val::Null));
        assert_eq!(r.str("spins"), None, "a number is not a string");
        assert_eq!(parse_line("{}").unwrap(), Record::default());
    }

    #[test]
    fn parses_escapes_and_skips_nested_values() {
        let r =
            parse_line(r#"{"s":"a\"b\\c\/d\n\u00e9\ud83d\ude00","n":{"a":[1,{"b":"}"}],"c":[]},"e":"x"}"#)
                .unwrap();
        assert_eq!(r.str("s"), Some("a\"b\\c/d\né😀"));
        assert_eq!(r.get("n"), Some(&Val::Nested));
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
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(100), "]".repeat(100));
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

    #[test]
    fn arguments() {
        let a = parse(&sv(&["t.json", "--svg", "o.svg", "--top=3", "--ascii"])).unwrap().unwrap();
        assert_eq!(
            a,
            ReportArgs { file: "t.json".into(), svg: Some(PathBuf::from("o.svg")), top: 3, ascii: true }
        );
        assert_eq!(parse(&sv(&["--", "-"])).unwrap().unwrap().file, "-");
        assert!(parse(&sv(&[])).is_err());
        assert!(parse(&sv(&["a", "b"])).is_err());
        assert!(parse(&sv(&["a", "--svg"])).is_err());
        assert!(parse(&sv(&["a", "--top", "0"])).is_err());
        assert!(parse(&sv(&["a", "--bogus"])).is_err());
    }

    #[test]
    fn formats_durations() {
        assert_eq!(fmt_ns(850.0), "850ns");
        assert_eq!(fmt_ns(12_340.0), "12.3µs");
        assert_eq!(fmt_ns(4_100_000.0), "4.10ms");
        assert_eq!(fmt_ns(1.2e9), "1.20s");
        assert_eq!(short_ns(1024), "1.0µs");
        assert_eq!(short_ns(512), "512ns");
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
