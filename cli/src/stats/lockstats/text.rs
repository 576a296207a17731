//! A statistics report as text: mutrace's columns, classes first (each with its
//! instances), then every class's call stack; and the note on modules left unnamed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::output::text::Table;
use crate::symbolize::{self};

use super::*;

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub(super) fn ms(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000_000, ns / 1000 % 1000)
}

pub(super) fn avg(total: u64, n: u64) -> u64 {
    total.checked_div(n).unwrap_or(0)
}

/// One table row: its mark, the class counts (or none), the counters, type and text.
pub(super) fn row(mark: &str, made: Option<(u64, u64)>, c: &Counters, kind: &str, what: &str) -> Vec<String> {
    let (mutexes, live) =
        made.map_or(("-".to_string(), "-".to_string()), |(m, l)| (m.to_string(), l.to_string()));
    vec![
        mark.to_string(),
        mutexes,
        live,
        c.locked.to_string(),
        c.owner_changes.to_string(),
        c.contended.to_string(),
        c.spins.to_string(),
        c.sleeps.to_string(),
        c.handoffs.to_string(),
        ms(c.wait_ns_total),
        ms(avg(c.wait_ns_total, c.contended)),
        ms(c.wait_ns_max),
        ms(c.hold_ns_total),
        ms(avg(c.hold_ns_total, c.locked)),
        ms(c.hold_ns_max),
        kind.to_string(),
        what.to_string(),
    ]
}

pub(super) fn kind_of(lock: Option<&str>, kind: &str) -> String {
    match lock {
        // The library's own name for an rwlock's kind already starts with the word.
        Some("rwlock") if !kind.starts_with("rwlock") => format!("rwlock {kind}"),
        _ => kind.to_string(),
    }
}

/// Where a class's locks were made: as named (`resolve`), else as the report gave it.
fn made_by(c: &Class) -> String {
    c.made_at.clone().unwrap_or_else(|| c.made_at())
}

/// Where several processes reported (a build, a test suite, a server's workers): one
/// row each, hottest first by `sort`, at most `top`, with the class that cost it most,
/// so that the process worth reading is found before its report.
pub fn render_processes(reports: &[ProcessReport], sort: Sort, top: usize) -> String {
    let mut out = String::new();
    let mut ranked: Vec<&ProcessReport> = reports.iter().collect();
    ranked.sort_by_key(|r| std::cmp::Reverse(sort.key(&r.totals.counters)));
    let _ = writeln!(out, "== {} processes, most {} first ==\n", reports.len(), sort.describe());
    let mut table = Table::new(4);
    table.left_last = 1;
    let head =
        ["#", "pid", "program", "strategy", "locked", "cont.", "wait tot ms", "hold tot ms", "hottest class"];
    table.header.push(head.iter().map(|s| s.to_string()).collect());
    for (n, r) in ranked.iter().take(top).enumerate() {
        let c = &r.totals.counters;
        // The report's classes are in `sort`'s order already: the first is the hottest.
        let hottest = r
            .classes
            .first()
            .filter(|k| sort.key(&k.counters) > (0, 0, 0))
            .map_or("-".to_string(), |k| format!("#{} {}", k.rank, made_by(k)));
        let program = r.exe.as_deref().map_or("?", |e| e.rsplit('/').next().unwrap_or(e));
        table.rows.push(vec![
            (n + 1).to_string(),
            r.pid.to_string(),
            program.to_string(),
            r.strategy.clone(),
            c.locked.to_string(),
            c.contended.to_string(),
            ms(c.wait_ns_total),
            ms(c.hold_ns_total),
            hottest,
        ]);
    }
    out.push_str(&table.render());
    if ranked.len() > top {
        let _ = writeln!(out, "+ {} more processes", ranked.len() - top);
    }
    out.push_str("\nEach process's report follows, in the order they were read.\n\n");
    out
}

/// A process's report as text.
pub fn render_text(r: &ProcessReport) -> String {
    let mut out = String::new();
    let who = match &r.exe {
        Some(exe) => format!("pid {} ({exe})", r.pid),
        None => format!("pid {}", r.pid),
    };
    let t = &r.totals;
    let strategy = match r.rwlocks.as_deref() {
        Some("forwarded") if r.strategy != "glibc" => format!("{} (rwlocks forwarded to glibc)", r.strategy),
        _ => r.strategy.clone(),
    };
    let _ = writeln!(
        out,
        "== Lock statistics of {who}, strategy {strategy}: {} class{}, {} lock{} made ({} live); {} acquisitions, {} contended ==",
        r.classes_used,
        if r.classes_used == 1 { "" } else { "es" },
        t.mutexes,
        plural(t.mutexes as usize),
        t.live,
        t.counters.locked,
        t.counters.contended
    );
    if let Some(f) = &r.file {
        let _ = writeln!(out, "(from {f})");
    }
    out.push('\n');
    let mut table = Table::new(1);
    table.left_last = 2;
    let columns = spinmutex_names::STATS_COLUMNS.iter();
    table
        .header
        .push(["#"].iter().chain(columns).chain(&["type", "made by"]).map(|s| s.to_string()).collect());
    for c in &r.classes {
        let made = made_by(c);
        table.rows.push(row(
            &c.rank.to_string(),
            Some((c.mutexes, c.live)),
            &c.counters,
            &kind_of(c.lock.as_deref(), &c.kind),
            &made,
        ));
        for (side, counters) in [("read", &c.read), ("write", &c.write)] {
            if let Some(counters) = counters {
                table.rows.push(row("", None, counters, &format!("  {side}"), &format!("{side} side")));
            }
        }
        for i in &c.instances {
            let what =
                format!("{} {}", i.lock.as_deref().unwrap_or("mutex"), i.mutex.as_deref().unwrap_or("?"));
            table.rows.push(row("", None, &i.counters, &kind_of(i.lock.as_deref(), &i.kind), &what));
        }
    }
    if r.others.classes > 0 || !r.others.counters.is_zero() {
        let what =
            format!("{} other class{}", r.others.classes, if r.others.classes == 1 { "" } else { "es" });
        table.rows.push(row("+", None, &r.others.counters, "", &what));
    }
    if !r.unknown_class.counters.is_zero() {
        table.rows.push(row(
            "?",
            None,
            &r.unknown_class.counters,
            "",
            "class table full: locks of unknown class",
        ));
    }
    if r.overflow.instances > 0 || !r.overflow.counters.is_zero() {
        let what = format!("side table full: {} times a lock found no slot", r.overflow.instances);
        table.rows.push(row("!", None, &r.overflow.counters, "", &what));
    }
    table.rows.push(row("=", Some((t.mutexes, t.live)), &t.counters, "", "totals"));
    out.push_str(&table.render());
    let bad = r.mismatches();
    if !bad.is_empty() {
        let _ = writeln!(
            out,
            "warning: the rows do not add up to the totals in {} (a damaged report?)",
            bad.join(", ")
        );
    }
    if r.overflow.instances + r.overflow.classes > 0 {
        let _ = writeln!(
            out,
            "the side table was full ({} slots): raise SPINMUTEX_STATS_SLOTS{}",
            r.slots,
            if r.overflow.holds_unmeasured > 0 {
                format!("; hold times of {} releases could not be measured", r.overflow.holds_unmeasured)
            } else {
                String::new()
            }
        );
    }
    if !r.classes.is_empty() {
        let _ = writeln!(out, "\nCall stacks of the classes (innermost first):");
        let auto_classes = auto_classes(&r.classes);
        for c in &r.classes {
            let how = match (c.origin.as_str(), c.is_rwlock()) {
                ("init", false) => "made by pthread_mutex_init",
                ("init", true) => "made by pthread_rwlock_init",
                ("first lock", _) => "statically initialised, first locked",
                _ => "of unknown origin",
            };
            let _ = writeln!(
                out,
                "  #{} {}, {} {}{}, {} live, {how}:",
                c.rank,
                kind_of(c.lock.as_deref(), &c.kind),
                c.mutexes,
                if c.is_rwlock() { "rwlock" } else { "mutex" },
                if c.mutexes == 1 {
                    ""
                } else if c.is_rwlock() {
                    "s"
                } else {
                    "es"
                },
                c.live
            );
            let policies = std::iter::once((None, &c.extra))
                .chain(c.instances.iter().map(|i| (i.mutex.as_deref(), &i.extra)));
            for (mutex, extra) in policies {
                if let Some(line) = policy_line(extra) {
                    let whose = mutex.map_or(String::new(), |m| format!(" (mutex {m})"));
                    let line = match (mutex, auto_classes.get(&c.rank)) {
                        (None, Some((first, _))) if *first != c.rank => {
                            format!("#{first}'s, one auto class with it")
                        }
                        (None, Some((_, shared))) => format!("{line}{shared}"),
                        _ => line,
                    };
                    let _ = writeln!(out, "      waiting policy under auto{whose}: {line}");
                }
            }
            if c.frames.is_empty() {
                let _ = writeln!(out, "      (no frames recorded)");
            }
            for (i, f) in c.frames.iter().enumerate() {
                let place = f.place();
                match f.describe(false) {
                    Some(d) => {
                        let _ = writeln!(out, "    {i}  {d}  [{place}]");
                    }
                    None => {
                        let _ = writeln!(out, "    {i}  {place}");
                    }
                }
                for outer in &f.resolved.inlined_into {
                    let name = outer.function.as_deref().unwrap_or("?");
                    let at = match (&outer.file, outer.line) {
                        (Some(file), Some(line)) => format!(" ({file}:{line})"),
                        _ => String::new(),
                    };
                    let _ = writeln!(out, "         inlined into {name}{at}");
                }
            }
        }
    }
    out
}

/// Modules whose frames could not all be named, and why: one line each, then how to
/// get names.
pub fn unnamed_modules(reports: &[ProcessReport]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for f in reports.iter().flat_map(|r| &r.classes).flat_map(|c| &c.frames) {
        if let (Some(m), Some(p)) = (&f.module, &f.resolved.problem) {
            if !m.is_empty() && f.resolved.named_by.as_deref() != Some("dwarf") {
                out.entry(m.clone()).or_insert_with(|| p.clone());
            }
        }
    }
    out
}

/// The lines that say which modules gave no names and how to get them.
pub fn render_names_note(reports: &[ProcessReport]) -> String {
    let missing = unnamed_modules(reports);
    let mut out = String::new();
    if missing.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\nFrames not named by debug info or a symbol table:");
    for problem in missing.values() {
        let _ = writeln!(out, "  {problem}");
    }
    let _ = writeln!(out, "To get names: {}.", symbolize::how_to_get_names());
    out
}

/// `auto` classes an initialised mutex by less than the statistics' four frames: by its
/// `pthread_mutex_init` call, or, where a function of the program's own makes mutexes
/// for several callers, by the call of that function. Classes listed here that share
/// one `auto` class (the `policy` object's `class`; in a report without it, the first
/// frame) share its policy. For each of them, by rank: the first of them (whose line
/// gives the policy) and what to add to its line.
fn auto_classes(classes: &[Class]) -> BTreeMap<u64, (u64, String)> {
    let mut by_class: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for c in classes.iter().filter(|c| c.origin == "init") {
        let Some(policy) = c.extra.get("policy") else { continue };
        let key = match (policy.get("class").and_then(|v| v.as_u64()), c.frames.first()) {
            (Some(index), _) => format!("class {index}"),
            (None, Some(call)) => call.place(),
            (None, None) => continue,
        };
        by_class.entry(key).or_default().push(c.rank);
    }
    let mut shared = BTreeMap::new();
    for ranks in by_class.into_values().filter(|ranks| ranks.len() > 1) {
        let others: Vec<String> = ranks[1..].iter().map(|r| format!("#{r}")).collect();
        let first = format!(
            "; one auto class with {} (auto classes a mutex by its pthread_mutex_init call, or by \
             the call of the program's function that makes it, where several places call that)",
            others.join(", ")
        );
        shared.insert(ranks[0], (ranks[0], first));
        for &rank in &ranks[1..] {
            shared.insert(rank, (ranks[0], String::new()));
        }
    }
    shared
}

/// The `policy` object `auto` adds to a class or a statically initialised mutex, told in
/// a line: the mode it learned and the contended acquisitions each mode served.
fn policy_line(extra: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let p = extra.get("policy")?;
    let mode = p.get("mode")?.as_str()?;
    let flag = |k: &str| p.get(k).and_then(|v| v.as_bool());
    // A report without `judged` (a library older than the field) says nothing of it.
    let how = match (flag("measured"), flag("judged")) {
        (Some(true), _) => "chosen by measuring the class's throughput both ways",
        (_, Some(false)) => "where every class starts: too few contended acquisitions to judge yet",
        _ => "chosen by whether its spins repay their CPU",
    };
    let count = |k: &str| p.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    Some(format!(
        "{mode} ({how}); contended acquisitions served spinning {}, sleeping {}",
        count("served_spinning"),
        count("served_sleeping")
    ))
}
