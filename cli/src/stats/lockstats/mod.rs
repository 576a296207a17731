//! The library's statistics reports (`SPINMUTEX_STATS=json`: one JSON object per
//! process and line) read back, their call sites named from the files on this machine
//! ([`crate::symbolize`]), and shown: as text in mutrace's columns, classes first (each
//! with its hottest live instances), then the other classes, the mutexes of unknown
//! class, the overflow and the totals, rows that add up to the totals exactly; and as
//! JSON, the library's own objects with the names added. Both come from one data model,
//! [`ProcessReport`].
//!
//! Keys this reader does not know are kept (and written back by `--json`), so a report
//! that gains keys still reads. Reader-writer locks carry `"lock": "rwlock"` and `read`
//! and `write` counters beside `counters` (their sum); they are shown when present.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::symbolize::{Resolved, Resolver};

mod text;

pub use text::{render_names_note, render_processes, render_text, unnamed_modules};

/// The order of a report's classes (and of the instances under each), and of the
/// processes listed before several reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Sort {
    /// Longest total wait first: what the lock cost its threads
    #[default]
    Wait,
    /// Most contended acquisitions first
    Contended,
    /// Longest total hold first
    Hold,
    /// Most acquisitions first
    Acquisitions,
}

impl Sort {
    /// The figures compared, most significant first (larger is hotter).
    pub fn key(self, c: &Counters) -> (u64, u64, u64) {
        match self {
            Sort::Wait => (c.wait_ns_total, c.contended, c.locked),
            Sort::Contended => (c.contended, c.wait_ns_total, c.locked),
            Sort::Hold => (c.hold_ns_total, c.locked, c.contended),
            Sort::Acquisitions => (c.locked, c.contended, c.wait_ns_total),
        }
    }

    /// What the first figure of [`Sort::key`] is, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Sort::Wait => "time waited",
            Sort::Contended => "contended acquisitions",
            Sort::Hold => "time held",
            Sort::Acquisitions => "acquisitions",
        }
    }
}

/// The counters of a row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    pub locked: u64,
    pub owner_changes: u64,
    pub contended: u64,
    pub spins: u64,
    pub sleeps: u64,
    pub handoffs: u64,
    pub timeouts: u64,
    pub wait_ns_total: u64,
    pub wait_ns_max: u64,
    pub hold_ns_total: u64,
    pub hold_ns_max: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Counters {
    /// The counters that add up across rows (the others are maxima).
    pub const ADDED: [&'static str; 9] = [
        "locked",
        "owner_changes",
        "contended",
        "spins",
        "sleeps",
        "handoffs",
        "timeouts",
        "wait_ns_total",
        "hold_ns_total",
    ];

    fn added(&self) -> [u64; 9] {
        [
            self.locked,
            self.owner_changes,
            self.contended,
            self.spins,
            self.sleeps,
            self.handoffs,
            self.timeouts,
            self.wait_ns_total,
            self.hold_ns_total,
        ]
    }

    /// Adds `o` in: sums, and the larger of the maxima.
    pub fn merge(&mut self, o: &Counters) {
        let f = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        f(&mut self.locked, o.locked);
        f(&mut self.owner_changes, o.owner_changes);
        f(&mut self.contended, o.contended);
        f(&mut self.spins, o.spins);
        f(&mut self.sleeps, o.sleeps);
        f(&mut self.handoffs, o.handoffs);
        f(&mut self.timeouts, o.timeouts);
        f(&mut self.wait_ns_total, o.wait_ns_total);
        f(&mut self.hold_ns_total, o.hold_ns_total);
        self.wait_ns_max = self.wait_ns_max.max(o.wait_ns_max);
        self.hold_ns_max = self.hold_ns_max.max(o.hold_ns_max);
    }

    fn is_zero(&self) -> bool {
        self.added().iter().all(|&v| v == 0) && self.wait_ns_max == 0 && self.hold_ns_max == 0
    }
}

/// One recorded frame: the library's keys, and what this command found out about it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Frame {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
    /// What `dladdr` said at exit (the nearest exported symbol).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol_offset: Option<String>,
    #[serde(flatten)]
    pub resolved: Resolved,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn parse_hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl Frame {
    /// `module+0xOFF` (the module's file name), or the address, or `?`.
    pub fn place(&self) -> String {
        match (&self.module, &self.offset) {
            (Some(m), Some(o)) if !m.is_empty() => format!("{}+{o}", file_name(m)),
            _ => self.address.clone().unwrap_or_else(|| "?".into()),
        }
    }

    /// Fills in `resolved` from the files on this machine.
    pub fn resolve(&mut self, resolver: &mut Resolver) {
        let (Some(module), Some(offset)) = (&self.module, self.offset.as_deref().and_then(parse_hex)) else {
            return;
        };
        if module.is_empty() {
            return;
        }
        let dladdr = match (&self.symbol, &self.symbol_offset) {
            (Some(s), Some(o)) => Some((s.as_str(), o.as_str())),
            (Some(s), None) => Some((s.as_str(), "0x0")),
            _ => None,
        };
        self.resolved = resolver.resolve(module, offset, self.build_id.as_deref(), dladdr);
    }

    /// Whether something names the function.
    pub fn named(&self) -> bool {
        self.resolved.function.is_some() || self.symbol.is_some()
    }

    /// `function+0xOFF (file:line)` (no offset for an inlined function), marked
    /// `[dladdr]` when only the library's `dladdr` record names it; None when nothing
    /// does. `short`: the file's name only.
    pub fn describe(&self, short: bool) -> Option<String> {
        let r = &self.resolved;
        let (mut s, offset, by_dladdr) = match (&r.function, &self.symbol) {
            (Some(f), _) => (f.clone(), r.function_offset.clone(), r.named_by.as_deref() == Some("dladdr")),
            (None, Some(sym)) => (sym.clone(), self.symbol_offset.clone(), true),
            (None, None) => return None,
        };
        if let (Some(off), true) = (offset, r.inlined_into.is_empty()) {
            let _ = write!(s, "+{off}");
        }
        if let (Some(file), Some(line)) = (&r.file, r.line) {
            let _ = write!(s, " ({}:{line})", if short { file_name(file) } else { file });
        }
        if by_dladdr {
            s.push_str(" [dladdr]");
        }
        Some(s)
    }
}

/// A live mutex (or rwlock) listed under its class.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Instance {
    #[serde(alias = "rwlock", alias = "address", skip_serializing_if = "Option::is_none")]
    pub mutex: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
    pub counters: Counters,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<Counters>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<Counters>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A lock class: the locks made (or first locked) at one call stack.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Class {
    pub rank: u64,
    /// "init", "first lock" or "unknown".
    pub origin: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
    pub mutexes: u64,
    pub live: u64,
    pub counters: Counters,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<Counters>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<Counters>,
    pub frames: Vec<Frame>,
    pub instances: Vec<Instance>,
    /// Where the class was made, in words (added by this command).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub made_at: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Class {
    /// `made at F (file:line)` or `first locked at F (file:line)`; see [`Class::site`].
    pub fn made_at(&self) -> String {
        let how = match self.origin.as_str() {
            "init" => "made at",
            "first lock" => "first locked at",
            _ => return "where it was made is not known".into(),
        };
        format!("{how} {}", self.site())
    }

    /// The call site of the class: its first frame (`F+0xOFF (file:line)`, or
    /// module+offset when nothing names it) and the caller of that (many locks are made
    /// by one wrapper function: its caller tells them apart), which for a function
    /// inlined at the first frame is the function it was inlined into; when neither has
    /// a name, the first frame further up that has one.
    pub fn site(&self) -> String {
        let Some(first) = self.frames.first() else { return "-".into() };
        let told = |f: &Frame| f.describe(true).unwrap_or_else(|| f.place());
        let mut s = told(first);
        let inlined_into = first.resolved.inlined_into.first().and_then(|outer| {
            let name = outer.function.clone()?;
            Some(match (&outer.file, outer.line) {
                (Some(file), Some(line)) => format!("{name} ({}:{line})", file_name(file)),
                _ => name,
            })
        });
        if let Some(caller) = inlined_into.or_else(|| self.frames.get(1).map(told)) {
            let _ = write!(s, ", called from {caller}");
        }
        if self.frames.iter().take(2).all(|f| f.describe(true).is_none()) {
            let named =
                self.frames.iter().enumerate().skip(2).find_map(|(i, f)| Some((i, f.describe(true)?)));
            if let Some((i, d)) = named {
                let _ = write!(s, ", {i} frames below {d}");
            }
        }
        s
    }

    fn is_rwlock(&self) -> bool {
        self.lock.as_deref() == Some("rwlock")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Others {
    pub classes: u64,
    pub counters: Counters,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Unknown {
    pub counters: Counters,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Overflow {
    pub instances: u64,
    pub classes: u64,
    pub holds_unmeasured: u64,
    pub counters: Counters,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Totals {
    pub mutexes: u64,
    pub live: u64,
    pub counters: Counters,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One process's report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessReport {
    pub pid: u64,
    pub strategy: String,
    /// `served` or `forwarded` (to glibc: the `glibc` strategy, or SPINMUTEX_RWLOCKS=0);
    /// absent from reports of libraries older than the setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rwlocks: Option<String>,
    pub slots: u64,
    pub classes_used: u64,
    pub classes: Vec<Class>,
    pub others: Others,
    pub unknown_class: Unknown,
    pub overflow: Overflow,
    pub totals: Totals,
    /// The program, when the command that ran it knows (`run --stats`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// The file the report was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// True when a JSON object is a statistics report rather than a trace event.
pub fn is_report(map: &Map<String, Value>) -> bool {
    map.get("classes").is_some_and(Value::is_array) && map.get("totals").is_some_and(Value::is_object)
}

impl ProcessReport {
    pub fn from_map(map: Map<String, Value>) -> Result<ProcessReport, String> {
        serde_json::from_value(Value::Object(map)).map_err(|e| format!("not a statistics report: {e}"))
    }

    /// Orders the classes, and the instances under each, by `by` (hottest first; ties
    /// keep the report's order) and numbers the classes anew.
    pub fn sort(&mut self, by: Sort) {
        self.classes.sort_by_key(|c| std::cmp::Reverse(by.key(&c.counters)));
        for (n, c) in self.classes.iter_mut().enumerate() {
            c.rank = n as u64 + 1;
            c.instances.sort_by_key(|i| std::cmp::Reverse(by.key(&i.counters)));
        }
    }

    /// Keeps the first `top` classes and folds the rest into the "others" row, so that
    /// the rows still add up.
    pub fn keep_top(&mut self, top: usize) {
        if self.classes.len() <= top {
            return;
        }
        for c in self.classes.drain(top..) {
            self.others.classes += 1;
            self.others.counters.merge(&c.counters);
        }
    }

    /// Names every frame, and each class's place of birth.
    pub fn resolve(&mut self, resolver: &mut Resolver) {
        for c in &mut self.classes {
            for f in &mut c.frames {
                f.resolve(resolver);
            }
            c.made_at = Some(c.made_at());
        }
    }

    /// The rows (listed classes, others, unknown class, overflow) summed.
    pub fn rows_sum(&self) -> Counters {
        let mut sum = Counters::default();
        for c in &self.classes {
            sum.merge(&c.counters);
        }
        sum.merge(&self.others.counters);
        sum.merge(&self.unknown_class.counters);
        sum.merge(&self.overflow.counters);
        sum
    }

    /// The counters whose rows do not add up to the totals (none in a sound report).
    pub fn mismatches(&self) -> Vec<&'static str> {
        let sum = self.rows_sum();
        let t = &self.totals.counters;
        let mut bad: Vec<&'static str> = Counters::ADDED
            .iter()
            .zip(sum.added().iter().zip(t.added()))
            .filter(|(_, (a, b))| **a != *b)
            .map(|(k, _)| *k)
            .collect();
        if sum.wait_ns_max != t.wait_ns_max {
            bad.push("wait_ns_max");
        }
        if sum.hold_ns_max != t.hold_ns_max {
            bad.push("hold_ns_max");
        }
        bad
    }
}

/// Reads one report per line from `path` (lines that are not reports are skipped).
pub fn read_file(path: &Path) -> std::io::Result<Vec<ProcessReport>> {
    let text = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&text);
    let mut out = Vec::new();
    for line in text.lines() {
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line.trim()) {
            if is_report(&map) {
                if let Ok(mut r) = ProcessReport::from_map(map) {
                    r.file = Some(path.display().to_string());
                    out.push(r);
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
