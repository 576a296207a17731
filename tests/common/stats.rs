//! Checks of the library's statistics reports shared by the library's and the command's
//! tests: reading a JSON report (`SPINMUTEX_STATS=json`), and the sums every report must
//! keep, in JSON and in text.
#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;

/// Counters that add up across rows (and an rwlock's modes).
pub const ADDED: &[&str] = &[
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
/// Counters whose total is the largest row's.
pub const MAXIMA: &[&str] = &["wait_ns_max", "hold_ns_max"];

/// The one JSON report in `path`.
pub fn json_report(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not one JSON report ({e}):\n{text}", path.display()))
}

/// `whole` is `parts` combined, counter by counter (maxima: the largest).
fn combined(parts: &[&Value], whole: &Value) -> Result<(), String> {
    let get = |v: &Value, key: &str| v[key].as_u64().ok_or(format!("no counter {key} in {v}"));
    for key in ADDED {
        let sum: u64 = parts.iter().map(|p| get(p, key)).sum::<Result<u64, String>>()?;
        if sum != get(whole, key)? {
            return Err(format!("{key}: the parts add up to {sum}, the whole says {}", whole[key]));
        }
    }
    for key in MAXIMA {
        let max = parts.iter().map(|p| get(p, key)).collect::<Result<Vec<u64>, String>>()?.into_iter().max();
        if max != whole[key].as_u64() {
            return Err(format!("{key}: the parts' largest is {max:?}, the whole says {}", whole[key]));
        }
    }
    Ok(())
}

/// The listed classes, the other classes, the locks of unknown class and the overflow
/// add up to the totals of a JSON report, counter by counter (maxima: the largest); and
/// every rwlock class and instance has a read and a write set that add up to its
/// counters.
pub fn json_rows_add_up(report: &Value) -> Result<(), String> {
    let classes = report["classes"].as_array().ok_or("no classes")?;
    let mut rows: Vec<&Value> = classes.iter().map(|c| &c["counters"]).collect();
    rows.extend(["others", "unknown_class", "overflow"].map(|k| &report[k]["counters"]));
    combined(&rows, &report["totals"]["counters"]).map_err(|e| format!("rows and totals: {e}"))?;
    let instances = classes.iter().filter_map(|c| c["instances"].as_array()).flatten();
    for object in classes.iter().chain(instances) {
        modes_add_up(object)?;
    }
    Ok(())
}

/// As `json_rows_add_up`, panicking with the report.
pub fn assert_rows_add_up(report: &Value) {
    if let Err(e) = json_rows_add_up(report) {
        panic!("{e}:\n{report:#}");
    }
}

/// A class or instance says which lock it is; an rwlock's `counters` are its `read` and
/// `write` sets combined, and a mutex has neither.
pub fn modes_add_up(object: &Value) -> Result<(), String> {
    match object["lock"].as_str() {
        Some("rwlock") => combined(&[&object["read"], &object["write"]], &object["counters"])
            .map_err(|e| format!("an rwlock's read and write counters: {e}: {object}")),
        Some("mutex") if object.get("read").is_none() && object.get("write").is_none() => Ok(()),
        Some("mutex") => Err(format!("a mutex with read or write counters: {object}")),
        _ => Err(format!("no \"lock\" in {object}")),
    }
}

/// The listed classes of one lock type, hottest first.
pub fn classes_of<'a>(report: &'a Value, lock: &str) -> Vec<&'a Value> {
    report["classes"].as_array().unwrap().iter().filter(|c| c["lock"] == lock).collect()
}

/// The rows of the library's text report: (mark, locked, changed, contended), marks
/// being a class's rank, `+` (other classes), `?` (unknown class), `!` (overflow) and
/// `=` (totals); instance rows, and what follows the table in the command's report
/// (the call stacks), are left out.
pub fn text_rows(text: &str) -> Vec<(String, u64, u64, u64)> {
    text.lines()
        .take_while(|l| !l.starts_with("Call stacks"))
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let mark = *t.first()?;
            let is_row = mark.bytes().all(|b| b.is_ascii_digit()) || ["+", "?", "!", "="].contains(&mark);
            if !is_row || t.len() < 6 {
                return None;
            }
            Some((mark.to_string(), t[3].parse().ok()?, t[4].parse().ok()?, t[5].parse().ok()?))
        })
        .collect()
}

/// The text report's rows add up to its totals row in the locked, changed and
/// contended columns; returns the rows.
pub fn text_rows_add_up(text: &str) -> Result<Vec<(String, u64, u64, u64)>, String> {
    let rows = text_rows(text);
    let totals = rows.iter().find(|r| r.0 == "=").ok_or(format!("no totals row in\n{text}"))?;
    let parts = rows.iter().filter(|r| r.0 != "=");
    let sum = parts.fold((0, 0, 0), |(a, b, c), r| (a + r.1, b + r.2, c + r.3));
    if sum != (totals.1, totals.2, totals.3) {
        return Err(format!(
            "rows add up to {sum:?}, totals say {:?}:\n{text}",
            (totals.1, totals.2, totals.3)
        ));
    }
    Ok(rows)
}
