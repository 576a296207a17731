//! Reading the library's JSON statistics report (`SPINMUTEX_STATS=json`) in tests: the
//! report itself, and the sums every report must keep.
#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;

/// The counters that add up across rows (and modes).
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

/// The counters whose combination is the largest.
pub const MAXIMA: &[&str] = &["wait_ns_max", "hold_ns_max"];

/// The one JSON report in `path`.
pub fn json_report(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not one JSON report ({e}):\n{text}", path.display()))
}

/// `whole` is `parts` combined, counter by counter (maxima: the largest).
fn assert_combined(parts: &[&Value], whole: &Value, what: &str, context: &Value) {
    for key in ADDED {
        let sum: u64 = parts.iter().map(|p| p[key].as_u64().unwrap()).sum();
        assert_eq!(sum, whole[key].as_u64().unwrap(), "{key}: {what}:\n{context:#}");
    }
    for key in MAXIMA {
        let max = parts.iter().map(|p| p[key].as_u64().unwrap()).max().unwrap();
        assert_eq!(max, whole[key].as_u64().unwrap(), "{key}: {what}:\n{context:#}");
    }
}

/// The listed classes, the other classes, the locks of unknown class and the overflow
/// add up to the totals, counter by counter (maxima: the largest); and every rwlock
/// class and instance has a read and a write set that add up to its counters.
pub fn assert_rows_add_up(report: &Value) {
    let classes = report["classes"].as_array().unwrap();
    let mut parts: Vec<&Value> = classes.iter().map(|c| &c["counters"]).collect();
    parts.extend(["others", "unknown_class", "overflow"].map(|k| &report[k]["counters"]));
    assert_combined(&parts, &report["totals"]["counters"], "rows do not add up to the totals", report);
    for object in classes.iter().chain(classes.iter().flat_map(|c| c["instances"].as_array().unwrap())) {
        assert_modes_add_up(object);
    }
}

/// A class or instance says which lock it is; an rwlock's `counters` are its `read` and
/// `write` sets combined, and a mutex has neither.
pub fn assert_modes_add_up(object: &Value) {
    match object["lock"].as_str() {
        Some("rwlock") => assert_combined(
            &[&object["read"], &object["write"]],
            &object["counters"],
            "an rwlock's read and write counters do not add up to its counters",
            object,
        ),
        Some("mutex") => assert!(object.get("read").is_none() && object.get("write").is_none(), "{object:#}"),
        _ => panic!("no \"lock\" in {object:#}"),
    }
}

/// The listed classes of one lock type, hottest first.
pub fn classes_of<'a>(report: &'a Value, lock: &str) -> Vec<&'a Value> {
    report["classes"].as_array().unwrap().iter().filter(|c| c["lock"] == lock).collect()
}
