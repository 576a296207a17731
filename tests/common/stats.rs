//! Checks of the library's statistics reports shared by the library's and the command's
//! tests: the JSON report's rows add up to its totals, and so do the text report's.

use serde_json::Value;

/// Counters that add up across rows.
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

/// The listed classes, the other classes, the locks of unknown class and the overflow
/// add up to the totals of a JSON report, counter by counter (maxima: the largest).
pub fn json_rows_add_up(report: &Value) -> Result<(), String> {
    let mut rows: Vec<&Value> = report["classes"].as_array().ok_or("no classes")?.iter().collect();
    rows.extend(["others", "unknown_class", "overflow"].map(|k| &report[k]));
    let totals = &report["totals"]["counters"];
    let get = |v: &Value, key: &str| v["counters"][key].as_u64().ok_or(format!("no counter {key} in {v}"));
    for key in ADDED {
        let sum: u64 = rows.iter().map(|r| get(r, key)).sum::<Result<u64, String>>()?;
        if Some(sum) != totals[key].as_u64() {
            return Err(format!("{key}: rows add up to {sum}, totals say {}", totals[key]));
        }
    }
    for key in MAXIMA {
        let max = rows.iter().map(|r| get(r, key)).collect::<Result<Vec<u64>, String>>()?.into_iter().max();
        if max != totals[key].as_u64() {
            return Err(format!("{key}: the rows' largest is {max:?}, totals say {}", totals[key]));
        }
    }
    Ok(())
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
