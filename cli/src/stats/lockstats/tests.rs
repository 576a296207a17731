//! Unit tests of the statistics reports: reading, naming, ranking and the text.

use super::*;

fn counters(locked: u64, contended: u64, wait: u64) -> Value {
    serde_json::json!({"locked": locked, "owner_changes": locked / 2, "contended": contended,
        "spins": 3 * contended, "sleeps": contended, "handoffs": 0, "timeouts": 0, "wait_ns_total": wait,
        "wait_ns_max": wait, "hold_ns_total": 1000 * locked, "hold_ns_max": if locked > 0 { 5000 } else { 0 }})
}

fn sample() -> Value {
    serde_json::json!({
        "pid": 42, "strategy": "spin", "slots": 4096, "classes_used": 3, "new_key": [1, 2],
        "classes": [
            {"rank": 1, "origin": "init", "type": "normal", "mutexes": 2, "live": 1,
             "counters": counters(100, 10, 5_000_000),
             "frames": [{"address": "0x55e0", "module": "/nonexistent/d\"ir\\ é\tq/prog", "offset": "0x1234",
                         "build_id": "abcdef"},
                        {"address": "0x55f0", "module": "/nonexistent/prog", "offset": "0x2000",
                         "symbol": "main", "symbol_offset": "0x40"}],
             "instances": [{"mutex": "0x7f00", "type": "normal", "counters": counters(60, 6, 3_000_000)}]},
            {"rank": 2, "origin": "first lock", "type": "recursive", "lock": "rwlock", "mutexes": 1, "live": 1,
             "counters": counters(10, 2, 1_000_000),
             "read": counters(6, 1, 500_000), "write": counters(4, 1, 500_000),
             "frames": [], "instances": []}
        ],
        "others": {"classes": 1, "counters": counters(5, 0, 0)},
        "unknown_class": {"counters": counters(0, 0, 0)},
        "overflow": {"instances": 0, "classes": 0, "holds_unmeasured": 0, "counters": counters(0, 0, 0)},
        "totals": {"mutexes": 4, "live": 2, "counters": {"locked": 115, "owner_changes": 57, "contended": 12,
            "spins": 36, "sleeps": 12, "handoffs": 0, "timeouts": 0, "wait_ns_total": 6_000_000,
            "wait_ns_max": 5_000_000, "hold_ns_total": 115_000, "hold_ns_max": 5000}}
    })
}

fn report() -> ProcessReport {
    let Value::Object(map) = sample() else { unreachable!() };
    assert!(is_report(&map));
    ProcessReport::from_map(map).unwrap()
}

#[test]
fn reads_adds_up_and_keeps_unknown_keys() {
    let mut r = report();
    assert_eq!(r.pid, 42);
    assert_eq!(r.classes[1].lock.as_deref(), Some("rwlock"));
    assert_eq!(r.classes[1].read.as_ref().unwrap().locked, 6);
    assert!(r.mismatches().is_empty(), "{:?}", r.mismatches());
    assert_eq!(r.extra.get("new_key"), Some(&serde_json::json!([1, 2])));
    r.keep_top(1);
    assert_eq!((r.classes.len(), r.others.classes), (1, 2));
    assert!(r.mismatches().is_empty());
    r.totals.counters.locked += 1;
    assert_eq!(r.mismatches(), vec!["locked"]);
}

#[test]
fn text_has_the_rows_and_unnamed_frames_as_module_offset() {
    let mut r = report();
    r.resolve(&mut Resolver::new(vec![]));
    let text = render_text(&r);
    assert!(text.contains("pid 42"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().find(|l| l.starts_with("1 ")).expect("a first row");
    assert!(first.contains("made at prog+0x1234, called from main+0x40 [dladdr]"), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("2 ") && l.contains("rwlock recursive")), "{text}");
    assert!(lines.iter().any(|l| l.contains("read side")) && text.contains("write side"), "{text}");
    assert!(lines.iter().any(|l| l.contains("mutex 0x7f00")), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("+ ") && l.contains("1 other class")), "{text}");
    let totals = lines.iter().find(|l| l.starts_with("= ")).expect("totals");
    assert!(totals.contains(" 115 ") && totals.ends_with("totals"), "{totals}");
    assert!(!text.contains("warning"), "{text}");
    let note = render_names_note(std::slice::from_ref(&r));
    assert!(note.contains("cannot be read") && note.contains("To get names"), "{note}");
    // A report without `rwlocks` (an older library) says nothing of them; one whose
    // rwlocks went to glibc under a serving strategy says so.
    assert!(text.contains("strategy spin: "), "{text}");
    r.rwlocks = Some("forwarded".into());
    assert!(render_text(&r).contains("strategy spin (rwlocks forwarded to glibc): "));
    r.strategy = "glibc".into();
    assert!(render_text(&r).contains("strategy glibc: "));
}

#[test]
fn json_round_trips_odd_strings_and_added_names() {
    let mut r = report();
    r.resolve(&mut Resolver::new(vec![]));
    let text = serde_json::to_string(&r).unwrap();
    let back: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(back["classes"][0]["frames"][0]["module"], "/nonexistent/d\"ir\\ é\tq/prog");
    assert_eq!(back["classes"][0]["frames"][1]["function"], "main");
    assert_eq!(back["classes"][0]["frames"][1]["named_by"], "dladdr");
    assert_eq!(back["new_key"], serde_json::json!([1, 2]));
    assert!(back["classes"][0]["made_at"].as_str().unwrap().starts_with("made at prog+0x1234"));
    // Read back, it is the same report.
    let Value::Object(map) = back else { unreachable!() };
    let again = ProcessReport::from_map(map).unwrap();
    assert_eq!(again.classes[0].frames[1].resolved.function.as_deref(), Some("main"));
    assert_eq!(again.extra.get("new_key"), r.extra.get("new_key"));
}

#[test]
fn auto_policy_lines_say_what_chose_the_mode() {
    let policy = |measured: bool, judged: Option<bool>| {
        let mut p = serde_json::json!({"mode": "spin", "measured": measured, "served_spinning": 7, "served_sleeping": 0});
        if let Some(j) = judged {
            p["judged"] = j.into();
        }
        p
    };
    let mut v = sample();
    v["classes"][0]["policy"] = policy(true, Some(true));
    v["classes"][0]["instances"][0]["policy"] = policy(false, Some(false));
    v["classes"][1]["policy"] = policy(false, None);
    let Value::Object(map) = v else { unreachable!() };
    let mut r = ProcessReport::from_map(map).unwrap();
    r.resolve(&mut Resolver::new(vec![]));
    let text = render_text(&r);
    let line = |needle: &str| text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{text}"));
    assert!(line("auto: spin (chosen by measuring").contains("served spinning 7, sleeping 0"), "{text}");
    line("auto (mutex 0x7f00): spin (where every class starts: too few contended acquisitions to judge yet)");
    // A report written before `judged` existed keeps the old wording.
    line("auto: spin (chosen by whether its spins repay their CPU)");
}

/// Classes of the statistics that are one class under `auto` (the same `policy.class`;
/// in a report without it, the same first frame): the report says so instead of
/// repeating one policy as if each had its own.
#[test]
fn classes_that_share_an_auto_class_are_shown_as_one() {
    let render = |classes: [Option<u64>; 2]| {
        let mut v = sample();
        let mut other = v["classes"][0].clone();
        other["rank"] = 3.into();
        other["frames"][1]["offset"] = "0x2100".into(); // another caller of the same init call
        v["classes"].as_array_mut().unwrap().push(other);
        for (i, class) in [(0, classes[0]), (2, classes[1])] {
            let mut policy = serde_json::json!({"mode": "sleep", "measured": false, "judged": true,
                "served_spinning": 3, "served_sleeping": 9});
            if let Some(index) = class {
                policy["class"] = index.into();
            }
            v["classes"][i]["policy"] = policy;
        }
        let Value::Object(map) = v else { unreachable!() };
        let mut r = ProcessReport::from_map(map).unwrap();
        r.resolve(&mut Resolver::new(vec![]));
        render_text(&r)
    };
    for classes in [[None, None], [Some(5), Some(5)]] {
        let text = render(classes);
        let lines: Vec<&str> = text.lines().filter(|l| l.contains("waiting policy under auto:")).collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].contains("sleeping 9; one auto class with #3 (auto classes a mutex by"), "{text}");
        assert!(lines[1].ends_with("auto: #1's, one auto class with it"), "{text}");
    }
    // Two auto classes (a wrapper's callers told apart), whatever the first frame.
    let text = render([Some(5), Some(6)]);
    assert!(!text.contains("one auto class"), "{text}");
}

#[test]
fn processes_are_listed_hottest_first_with_their_hottest_class() {
    let mut quiet = report();
    quiet.pid = 7;
    quiet.totals.counters.wait_ns_total = 1_000;
    let mut hot = report();
    hot.pid = 8;
    hot.exe = Some("/usr/bin/hot".into());
    hot.totals.counters.wait_ns_total = 9_000_000;
    let mut idle = report();
    idle.pid = 9;
    idle.totals.counters = Counters::default();
    for r in [&mut quiet, &mut hot, &mut idle] {
        r.resolve(&mut Resolver::new(vec![]));
    }
    idle.classes.iter_mut().for_each(|c| c.counters = Counters::default());
    let reports = [quiet, hot, idle];
    let text = render_processes(&reports, Sort::Wait, 10);
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())).collect();
    assert_eq!(rows.len(), 3, "{text}");
    let first: Vec<&str> = rows[0].split_whitespace().collect();
    assert_eq!(first[..3], ["1", "8", "hot"], "the hottest first, its program by name:\n{text}");
    assert!(rows[0].contains(" 9.000 ") && rows[0].contains("#1 made at "), "{text}");
    let second: Vec<&str> = rows[1].split_whitespace().collect();
    assert_eq!(second[..3], ["2", "7", "?"], "a process of unknown program:\n{text}");
    assert!(rows[2].trim_end().ends_with(" -"), "an idle process has no hottest class:\n{text}");
    let text = render_processes(&reports, Sort::Wait, 1);
    assert!(text.contains("+ 2 more processes"), "{text}");
}
