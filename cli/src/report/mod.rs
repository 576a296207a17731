//! `spinmutex report`: read what the library wrote and say which lock is hot.
//!
//! Two kinds of input, told apart line by line (both are JSON Lines):
//!
//! * statistics reports (`SPINMUTEX_STATS=json`, one object per process): each
//!   process's report in mutrace's columns with every call site named from the files on
//!   this machine (see [`crate::stats::lockstats`] and [`crate::symbolize`]);
//! * trace events (`SPINMUTEX_TRACE_FORMAT=json`): per process, per strategy and per
//!   mutex, event counts, how contended acquisitions ended, wait-time statistics and
//!   log2 histograms of waits and spins, saying which events the recorded level leaves
//!   out.
//!
//! Several files and globs may be given; for each FILE its `FILE.<pid>` siblings (the
//! traces of forked children) are read too. `--json` writes one JSON document and
//! `--svg` a chart. Unknown events and keys are counted or ignored; lines that are
//! neither are counted as malformed.
//!
//! The parts: reading ([`input`]), aggregating trace events ([`trace`]), and writing
//! the summary as text ([`text`]), JSON ([`json`]) or SVG ([`svg`]). Statistics reports
//! are read and shown by the statistics layer (`crate::stats::lockstats`).

use std::io::{BufReader, Write as _};
use std::path::PathBuf;

use clap::Args;

use crate::stats::lockstats::Sort;
use crate::symbolize::{self, Resolver};
use crate::Failure;

mod input;
mod json;
mod svg;
#[cfg(test)]
mod tests;
mod text;
mod trace;

pub use input::{expand, parse_line, Input, JsonReport, Loaded, Record, Source};
pub use json::{MutexJson, StatsJson, TraceJson, WaitJson};
pub use svg::{render_svg, render_svg_all};
pub use text::{fmt_ns, render_text};
pub use trace::{
    bucket, bucket_range, Hist, MutexKey, Stats, Trace, WaitSummary, BELOW_INFO_EVENTS, BUCKETS,
    TRACE_LEVEL_EVENTS,
};

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
    build-id. A module whose file is another build than the one that ran is not read. \
    Reports of several processes are preceded by a list of the processes, hottest first \
    (by --sort), each with the class that cost it most.\n\n\
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

    /// List the N hottest mutexes of a trace, the N hottest classes of each report and
    /// the N hottest processes before several reports
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub top: u64,

    /// The order of a statistics report's lock classes, of the processes listed before
    /// several reports, and of a trace's mutexes: wait
    /// (total time waited), contended (contended acquisitions), hold (total time held;
    /// a trace has none, and ranks by wait), acquisitions
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
    // A file that holds nothing (a process killed before it wrote its report leaves an
    // empty one) is said, and the others are reported; only when no file holds anything
    // is it an error. A parent's file whose forked children's files (FILE.<pid>) hold
    // what it would have is not said at all.
    let has_children = |i: &Input| {
        let prefix = format!("{}.", i.file);
        loaded.inputs.iter().any(|o| o.file.starts_with(&prefix) && o.nothing().is_none())
    };
    let empty: Vec<(&Input, String)> =
        loaded.inputs.iter().filter(|i| !has_children(i)).filter_map(|i| Some((i, i.nothing()?))).collect();
    if let (Some((input, why)), true) = (empty.first(), empty.len() == loaded.inputs.len()) {
        return Err(Failure::Runtime(format!("{}: nothing to report: {why}", input.file)));
    }
    for (input, why) in &empty {
        eprintln!("spinmutex report: {}: nothing to report, left out: {why}", input.file);
    }
    let mut dirs = vec![PathBuf::from(symbolize::DEFAULT_DEBUG_DIR)];
    dirs.extend(a.debug_dirs.iter().cloned());
    loaded.sort = a.sort;
    loaded.trace.sort = a.sort;
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
