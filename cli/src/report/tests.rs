//! Unit tests of `report`: reading both formats, aggregation, text, JSON and SVG.

use std::fmt::Write as _;

use serde_json::Value;

use super::input::*;
use super::json::*;
use super::svg::*;
use super::text::*;
use super::trace::*;
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
    let r = parse_line(r#"{"s":"a\"b\\c\/d\n\u00e9\ud83d\ude00","n":{"a":[1,{"b":"}"}],"c":[]},"e":"x"}"#)
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
        format!(r#"{{"ts_ns":1000,"pid":1,"tid":2,"strategy":"{s}","mutex":"{m}","event":"{ev}"{extra}}}"#)
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
    assert_eq!(t.malformed_examples[0].1, 8);
    assert_eq!(t.dropped, 7);
    assert_eq!(t.unknown_events.get("teleport"), Some(&1));
    let spin = &t.by_strategy["spin"];
    assert_eq!(spin.acquired(), 5);
    assert_eq!(spin.how["spin"], 4);
    assert_eq!(spin.give_ups["budget"], 1);
    let w = spin.wait_summary().unwrap();
    assert_eq!((w.p50, w.p99, w.max), (300, 9000, 9000));
    assert!((w.mean - 2000.0).abs() < 1e-9);
    // By time waited (the default): 0xb's one 9 µs wait beats 0xa's four (1 µs in all).
    let hot = t.hottest();
    assert_eq!(hot[0].0.mutex, "0xb");
    assert_eq!(hot[1].0.mutex, "0xa");
    t.sort = Sort::Contended;
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
fn charts_normalise_per_strategy_and_label_by_call_site() {
    let mut l = Loaded::default();
    let mut text = String::new();
    for i in 0..379 {
        let _ = writeln!(
            text,
            r#"{{"pid":5,"tid":{},"strategy":"spin","level":"TRACE","mutex":"0xbeef","event":"acquired","how":"spin","spins":8,"sleeps":0,"wait_ns":100}}"#,
            i % 4
        );
    }
    for _ in 0..3 {
        text.push_str(r#"{"pid":6,"tid":1,"strategy":"futex","level":"TRACE","mutex":"0xf00d","event":"acquired","how":"sleep","spins":0,"sleeps":1,"wait_ns":9000}"#);
        text.push('\n');
    }
    text.push_str(
        r#"{"pid":5,"strategy":"spin","classes":[{"rank":1,"origin":"init","type":"normal","mutexes":1,"live":1,"counters":{"locked":400,"contended":379},"frames":[{"module":"/nonexistent/app","offset":"0x10","symbol":"make_queue","symbol_offset":"0x4"}],"instances":[{"mutex":"0xbeef","type":"normal","counters":{"locked":400,"contended":379}}]}],"totals":{"mutexes":1,"live":1,"counters":{"locked":400,"contended":379}}}"#,
    );
    text.push('\n');
    l.read("t.json", text.as_bytes()).unwrap();
    assert_eq!((l.trace.events, l.reports.len()), (382, 1));
    l.resolve(&mut Resolver::new(vec![]), 20);
    let svg = l.render_svg();
    // Each strategy's bars are shares of its own acquisitions: 3 of 3 is 100%.
    assert!(svg.contains("futex 8.2µs: 3 of 3 (100.0%)"), "{svg}");
    assert!(svg.contains("spin 64ns: 379 of 379 (100.0%)"), "{svg}");
    // The hot mutex and the class are labelled by call site, not address.
    assert!(svg.contains(">make_queue+0x4 [dladdr]<title>"), "{svg}");
    assert!(svg.contains("Hottest lock classes"), "{svg}");
    assert!(svg.contains(">mutex 0xf00d<title>"), "an unnamed mutex keeps its address: {svg}");
    let text = l.render_text(20, false);
    assert!(text.contains("made at make_queue+0x4 [dladdr]"), "{text}");
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
    let a =
        parse(&["t.json", "--svg", "o.svg", "--top=3", "--ascii", "--json", "--debug-dir", "/d"]).unwrap();
    assert_eq!(
        a,
        ReportArgs {
            files: vec!["t.json".into()],
            svg: Some("o.svg".into()),
            top: 3,
            sort: Sort::Wait,
            ascii: true,
            json: true,
            debug_dirs: vec![PathBuf::from("/d")],
        }
    );
    assert_eq!(parse(&["--", "-"]).unwrap().files, ["-"]);
    assert_eq!(parse(&["-"]).unwrap().files, ["-"]);
    assert_eq!(parse(&["a", "b", "c*"]).unwrap().files, ["a", "b", "c*"]);
    assert!(parse(&[]).is_err());
    assert!(parse(&["a", "--svg"]).is_err());
    assert!(parse(&["a", "--svg", ""]).is_err());
    assert!(parse(&["a", "--top", "0"]).is_err());
    assert!(parse(&["a", "--bogus"]).is_err());
}

#[test]
fn expands_globs_and_finds_children_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    for n in ["t.json", "t.json.12", "t.json.3", "t.json.x", "t.json.12.bak", "u.json"] {
        std::fs::write(p(n), "").unwrap();
    }
    let files = |v: Vec<Source>| -> Vec<String> {
        v.into_iter()
            .map(|s| match s {
                Source::File(f) => f.file_name().unwrap().to_string_lossy().into_owned(),
                Source::Stdin => "-".into(),
            })
            .collect()
    };
    let t = p("t.json").display().to_string();
    assert_eq!(files(expand(std::slice::from_ref(&t)).unwrap()), ["t.json", "t.json.3", "t.json.12"]);
    // Named twice, or by a glob as well: each file once.
    let glob = p("*.json").display().to_string();
    assert_eq!(
        files(expand(&[glob, t.clone(), "-".into()]).unwrap()),
        ["t.json", "t.json.3", "t.json.12", "u.json", "-"]
    );
    // The parent's own file is missing: its children still count.
    std::fs::remove_file(p("t.json")).unwrap();
    assert_eq!(files(expand(&[t]).unwrap()), ["t.json.3", "t.json.12"]);
    assert!(expand(&[p("none.json").display().to_string()]).is_err());
    assert!(expand(&[p("none*.json").display().to_string()]).is_err());
}

#[test]
fn an_info_level_trace_says_it_holds_no_acquisitions_rather_than_none() {
    let mut t = Trace::default();
    t.add_line(r#"{"pid":1,"tid":2,"strategy":"auto","level":"INFO","event":"policy","class":"prog+0x10","from":"spin","to":"sleep","because":"measured","spin_per_s":100,"sleep_per_s":300,"spin_cpu_ns":5,"sleep_cpu_ns":2,"spin_contended_permille":90,"sleep_contended_permille":0,"classes":1}"#);
    assert_eq!(t.omitted(), Some(BELOW_INFO_EVENTS));
    let text = render_text(&t, "t.json", 20, false);
    assert!(text.contains("contended acquisitions: not recorded at this level"), "{text}");
    assert!(!text.contains("By strategy (contended acquisitions)"), "{text}");
    assert!(text.contains("timeouts not recorded, forwarded not recorded"), "{text}");
    assert!(!text.contains("timeouts 0"), "{text}");
    assert!(text.contains("(phases: not recorded;"), "{text}");
    let json = serde_json::to_value(TraceJson::of(&t)).unwrap();
    assert_eq!(json["not_recorded"][0], "acquired");
    // `info,spinmutex::auto=debug`: auto's phases at DEBUG, still no acquisitions.
    t.add_line(r#"{"pid":1,"tid":2,"strategy":"auto","level":"DEBUG","event":"phase","class":"prog+0x10","phase":0,"mode":"spin","per_s":100,"contended_permille":90,"cpu_ns_per_acq":5,"busy_cpus_permille":1000,"counted":true}"#);
    assert_eq!(t.omitted(), Some(BELOW_INFO_EVENTS));
    assert!(!render_text(&t, "t.json", 20, false).contains("(phases: not recorded;"));
    // A DEBUG-level acquisition: acquisitions are recorded, trace-level events still are not.
    t.add_line(r#"{"pid":1,"tid":2,"strategy":"auto","level":"DEBUG","mutex":"0xa","event":"acquired","how":"sleep","spins":0,"sleeps":1,"wait_ns":100}"#);
    assert_eq!(t.omitted(), Some(TRACE_LEVEL_EVENTS));
    assert!(render_text(&t, "t.json", 20, false).contains("By strategy (contended acquisitions)"));
}

#[test]
fn a_debug_level_trace_says_what_it_does_not_record() {
    let mut t = Trace::default();
    t.add_line(r#"{"pid":1,"tid":2,"strategy":"spin","level":"DEBUG","mutex":"0xa","event":"acquired","how":"sleep","spins":9,"sleeps":1,"wait_ns":100}"#);
    assert_eq!(t.omitted(), Some(TRACE_LEVEL_EVENTS));
    let text = render_text(&t, "t.json", 20, false);
    assert!(text.contains("spin give-ups: not recorded at this level"), "{text}");
    assert!(!text.contains("spin give-ups: none"), "{text}");
    assert!(text.contains("recorded at level debug"), "{text}");
    let json = serde_json::to_value(TraceJson::of(&t)).unwrap();
    assert_eq!(json["not_recorded"][0], "spin_give_up");
    assert!(json["strategies"]["spin"]["give_ups"].is_null());
    // One TRACE-level event: give-ups are recorded, and none happened.
    t.add_line(r#"{"pid":1,"tid":2,"strategy":"spin","level":"TRACE","mutex":"0xa","event":"wake"}"#);
    assert_eq!(t.omitted(), None);
    assert!(render_text(&t, "t.json", 20, false).contains("spin give-ups: none"));
}

#[test]
fn reads_non_utf8_lines_as_malformed() {
    let mut t = Trace::default();
    let data: &[u8] = b"{\"event\":\"wake\",\"strategy\":\"futex\",\"mutex\":\"0x1\"}\n\xff\xfe\n";
    t.read(data).unwrap();
    assert_eq!((t.events, t.malformed), (1, 1));
    assert_eq!(t.by_strategy["futex"].count("wake"), 1);
}

#[test]
fn auto_s_policy_events_are_a_history_per_lock_class_not_a_mutex() {
    let mut t = Trace::default();
    let class = r#""pid":7,"tid":8,"strategy":"auto","class":"app+0x1234""#;
    t.add_line(&format!(
        r#"{{"ts_ns":1000,{class},"level":"DEBUG","event":"phase","phase":0,"mode":"spin","per_s":5}}"#
    ));
    t.add_line(&format!(
        r#"{{"ts_ns":2000000,{class},"level":"INFO","event":"policy","from":"spin","to":"sleep","because":"measured","spin_per_s":2700000,"sleep_per_s":6600000,"spin_cpu_ns":792,"sleep_cpu_ns":217,"spin_contended_permille":814,"sleep_contended_permille":100,"classes":4}}"#
    ));
    t.add_line(&format!(
        r#"{{"ts_ns":3000000,{class},"level":"INFO","event":"policy","from":"sleep","to":"sleep","because":"uncontended","spin_per_s":9000,"sleep_per_s":0,"spin_cpu_ns":80,"sleep_cpu_ns":0,"spin_contended_permille":3,"sleep_contended_permille":0}}"#
    ));
    t.add_line(&format!(
        r#"{{"ts_ns":33000000,{class},"level":"INFO","event":"policy","from":"sleep","to":"spin","because":"checked","per_s":1900000,"to_beat_per_s":2700000}}"#
    ));
    t.add_line(&format!(
        r#"{{"ts_ns":900000000,{class},"level":"INFO","event":"policy","from":"spin","to":"spin","because":"watched","per_s":420000,"pace_per_s":5300000}}"#
    ));
    t.add_line(r#"{"pid":7,"tid":8,"strategy":"auto","level":"INFO","event":"policy","class":"lib+0x10","from":"spin","to":"sleep","because":"spins_lose","wins":2,"spins":64,"spent_ns":90000,"saved_ns":16000}"#);
    assert!(t.unknown_events.is_empty(), "{:?}", t.unknown_events);
    assert!(t.by_mutex.is_empty(), "a class's events name no mutex: {:?}", t.by_mutex.keys());
    let p = &t.policies[&(7, "app+0x1234".to_string())];
    assert_eq!((p.mode(), p.experiments(), p.changes(), p.phases), ("spin", 3, 2, 1));
    assert_eq!(p.events[0].figures["sleep_per_s"], 6600000);
    let text = render_text(&t, "t.json", 20, false);
    assert!(text.contains("== auto: lock class policies =="), "{text}");
    assert!(
        text.contains("spin -> sleep  measured: spin 2.7M/s (792ns CPU, 814‰ contended); sleep 6.6M/s"),
        "{text}"
    );
    assert!(text.contains("100‰ contended); 4 lock classes measured together\n"), "{text}");
    assert!(
        text.contains("uncontended: spin 9.0k/s (80ns CPU, 3‰ contended)\n"),
        "an event without `classes`: {text}"
    );
    assert!(
        text.contains("sleep -> spin  checked: sleep ran at 1.9M/s when checked; spin had kept 2.7M/s in the experiment\n"),
        "{text}"
    );
    assert!(
        text.contains("spin -> spin  watched: spin ran at 420.0k/s when watched, 5.3M/s before: the lock is used differently now, and the class experiments again\n"),
        "a watch is not an experiment: {text}"
    );
    assert!(text.contains("2 of 64 spins won: they cost 90.0µs and saved 16.0µs"), "{text}");
    assert!(!text.contains("Hottest mutexes"), "no lock events, no table of locks: {text}");
    let json = serde_json::to_value(TraceJson::of(&t)).unwrap();
    assert_eq!(json["policies"][0]["class"], "app+0x1234");
    assert_eq!(json["policies"][0]["events"][0]["figures"]["spin_cpu_ns"], 792);
}

#[test]
fn reader_writer_lock_events_are_named_by_their_lock() {
    let mut t = Trace::default();
    t.add_line(r#"{"pid":1,"tid":2,"strategy":"spin","rwlock":"0xb0","mode":"read","event":"acquired","how":"sleep","spins":0,"sleeps":1,"wait_ns":50}"#);
    assert_eq!(t.by_mutex.keys().map(|k| k.mutex.as_str()).collect::<Vec<_>>(), ["0xb0"]);
}

#[test]
fn a_class_keeps_its_latest_policy_events_and_counts_the_rest() {
    let mut t = Trace::default();
    let n = KEPT_POLICY_EVENTS + 5;
    for i in 0..n {
        t.add_line(&format!(
            r#"{{"ts_ns":{i},"pid":7,"strategy":"auto","event":"policy","class":"c","from":"spin","to":"sleep","because":"measured","spin_per_s":{i},"sleep_per_s":1}}"#
        ));
    }
    let p = &t.policies[&(7, "c".to_string())];
    assert_eq!((p.events.len(), p.earlier, p.experiments(), p.changes()), (KEPT_POLICY_EVENTS, 5, n, n));
    assert_eq!(p.events[0].figures["spin_per_s"], 5, "the oldest kept is the sixth");
    let text = render_text(&t, "t.json", 20, false);
    assert!(text.contains(&format!("({} earlier events)", n - 8)), "{text}");
    let json = serde_json::to_value(TraceJson::of(&t)).unwrap();
    assert_eq!(json["policies"][0]["earlier_events"], 5);
    assert_eq!(json["policies"][0]["events"].as_array().unwrap().len(), KEPT_POLICY_EVENTS);
}
