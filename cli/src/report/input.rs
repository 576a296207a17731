//! Reading `report`'s inputs: the files and globs given (with the `FILE.<pid>` files of
//! forked children), and their lines, told apart into statistics reports and trace
//! events ([`Loaded`]), which then names call sites and renders every part.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::stats::lockstats::{self, ProcessReport, Sort};
use crate::symbolize::{self, Resolver};

use super::json::*;
use super::svg::*;
use super::text::*;
use super::trace::*;

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
pub(super) fn siblings(file: &Path) -> Vec<PathBuf> {
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
    pub(super) fn nothing(&self) -> Option<String> {
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
pub(super) const TEXT_REPORT_HEAD: &str = "spinmutex: lock statistics for pid ";

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
        if self.reports.len() > 1 {
            out.push_str(&lockstats::render_processes(&self.reports, self.sort, top));
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
