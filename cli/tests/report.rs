//! Integration tests of `spinmutex report`: a synthetic JSON trace with several
//! mutexes and strategies (and a malformed line) is summarised as text and as SVG; the
//! traces of forked children are found and labelled by pid; a debug-level trace says
//! what it does not record; and statistics reports of a stripped position-independent
//! program are named after it exited, from its separate debug file (found by
//! debuglink or by build-id), or told as module+offset without it, or refused for a
//! file that is another build; JSON output round-trips odd module paths; under `auto`,
//! each class's learned waiting policy is shown and kept in the JSON.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::harness::{tests, Need, Suite};
use common::{c_test, preloaded, run_bounded, scratch, Outcome};
use serde_json::Value;

fn bin_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_spinmutex"))
}

const LIMIT: Duration = Duration::from_secs(60);

fn report(args: &[&str]) -> Outcome {
    let mut cmd = Command::new(bin_path());
    cmd.arg("report").args(args).env_remove("LD_PRELOAD");
    run_bounded(cmd, LIMIT)
}

fn code(o: &Outcome) -> Option<i32> {
    o.status.and_then(|s| s.code())
}

const HOT: &str = "0x5581c2a3b040";
const WARM: &str = "0x5581c2a3b080";
const COLD: &str = "0x7f00aa001000";

/// A trace of two processes: pid 100 under `spin` (HOT 30, WARM 10, COLD 2 contended
/// acquisitions), pid 200 under `futex` (WARM 12), plus give-ups, sleeps, wakes, a
/// handoff, a timeout, a forward, an unknown event, a malformed line and a `dropped`
/// trailer.
fn synthetic_trace() -> String {
    let mut t = String::new();
    let mut ts = 1_000_000u64;
    let mut line = |pid: u32, strategy: &str, mutex: &str, event: &str, extra: &str| {
        ts += 250;
        let tid = pid + 1 + (ts / 250 % 3) as u32;
        let _ = writeln!(
            t,
            r#"{{"ts_ns":{ts},"pid":{pid},"tid":{tid},"strategy":"{strategy}","mutex":"{mutex}","event":"{event}"{extra}}}"#
        );
    };
    for i in 0..30u64 {
        let spins = 1 << (i % 8);
        line(
            100,
            "spin",
            HOT,
            "acquired",
            &format!(r#","how":"spin","spins":{spins},"sleeps":0,"wait_ns":{}"#, spins * 30),
        );
    }
    for _ in 0..4 {
        line(100, "spin", HOT, "spin_give_up", r#","reason":"budget","spins":256,"budget":256"#);
        line(100, "spin", HOT, "sleep", "");
        line(100, "spin", HOT, "wake", "");
    }
    line(100, "spin", HOT, "spin_give_up", r#","reason":"too_many_spinners","spins":0,"budget":256"#);
    line(100, "spin", HOT, "handoff_request", "");
    line(100, "spin", HOT, "handoff", r#","to_tid":102"#);
    for _ in 0..10 {
        line(100, "spin", WARM, "acquired", r#","how":"sleep","spins":256,"sleeps":1,"wait_ns":25000"#);
    }
    for _ in 0..2 {
        line(100, "spin", COLD, "acquired", r#","how":"handoff","spins":0,"sleeps":2,"wait_ns":1000000"#);
    }
    line(100, "spin", COLD, "timeout", "");
    for _ in 0..12 {
        line(200, "futex", WARM, "sleep", "");
        line(200, "futex", WARM, "acquired", r#","how":"sleep","spins":0,"sleeps":1,"wait_ns":9000"#);
        line(200, "futex", WARM, "wake", "");
    }
    line(200, "glibc", "0x5581c2a3b0c0", "forward", r#","result":0"#);
    line(200, "futex", WARM, "lock_stolen", r#","new_key":[1,2]"#);
    t.push_str("{\"ts_ns\":1,\"event\":\"acquired\",broken\n");
    t.push('\n');
    t.push_str("{\"event\":\"dropped\",\"count\":5,\"ts_ns\":999999999}\n");
    t
}

fn report_names_the_hottest_mutex_first_with_counts() {
    let dir = scratch();
    let file = dir.path().join("trace.jsonl");
    std::fs::write(&file, synthetic_trace()).unwrap();
    // By time waited (the default): COLD's two 1 ms waits lead, then WARM under spin
    // (10 × 25 µs), WARM under futex (12 × 9 µs), HOT (30 short spins).
    let o = report(&[file.to_str().unwrap()]);
    o.assert_success("report");
    let table = o.stdout.split("== Hottest mutexes").nth(1).expect("a hottest-mutex section");
    assert!(table.lines().next().unwrap_or("").contains("by total time waited)"), "{}", o.stdout);
    let rows: Vec<&str> = table.lines().filter(|l| l.contains("0x")).collect();
    for (row, (mutex, strategy)) in
        rows.iter().zip([(COLD, "spin"), (WARM, "spin"), (WARM, "futex"), (HOT, "spin")])
    {
        assert!(row.contains(mutex) && row.contains(strategy), "{}", o.stdout);
    }

    let o = report(&[file.to_str().unwrap(), "--sort", "contended"]);
    o.assert_success("report --sort contended");
    let out = &o.stdout;

    // The most contended mutex leads the table and the details; WARM under spin beats
    // WARM under futex only by being listed per process: futex's 12 beat spin's 10.
    let table = out.split("== Hottest mutexes").nth(1).expect("a hottest-mutex section");
    let rows: Vec<&str> = table.lines().filter(|l| l.contains("0x")).collect();
    assert!(rows[0].starts_with("1 ") && rows[0].contains(HOT) && rows[0].contains("spin"), "{out}");
    assert!(rows[0].contains(" 30 "), "HOT has 30 contended acquisitions: {}", rows[0]);
    assert!(rows[1].contains(WARM) && rows[1].contains("futex") && rows[1].contains(" 12 "), "{out}");
    assert!(rows[2].contains(WARM) && rows[2].contains("spin") && rows[2].contains(" 10 "), "{out}");
    assert!(rows[3].contains(COLD), "{out}");
    assert!(out.contains(&format!("-- #1 mutex {HOT} (pid 100, spin) --")), "{out}");

    // Per strategy: counts of events, acquisitions by how, give-up reasons.
    assert!(
        out.contains(
            "events: acquired 42, spin_give_up 5, sleep 4, wake 4, handoff 1, handoff_request 1, timeout 1"
        ),
        "{out}"
    );
    assert!(out.contains("spin give-ups: budget 4, too_many_spinners 1"), "{out}");
    assert!(out.contains("events: acquired 12, sleep 12, wake 12, lock_stolen 1"), "{out}");
    let strategies = out.split("== By strategy").nth(1).unwrap();
    let spin_row = strategies.lines().find(|l| l.starts_with("spin ")).expect("a spin row");
    assert!(
        spin_row.contains("30 (71%)") && spin_row.contains("10 (24%)") && spin_row.contains("2 (5%)"),
        "{spin_row}"
    );
    // futex: every wait 9 µs.
    let futex_row = strategies.lines().find(|l| l.starts_with("futex ")).expect("a futex row");
    assert!(futex_row.contains("9.00µs"), "{futex_row}");

    // Histograms with bars, malformed line, dropped events, unknown events.
    assert!(out.contains("wait time per contended acquisition (42):"), "{out}");
    assert!(out.contains("spins per contended acquisition (42):"), "{out}");
    assert!(out.contains('█'), "{out}");
    assert!(out.contains("1 malformed line skipped"), "{out}");
    assert!(out.contains("dropped 5 events"), "{out}");
    assert!(out.contains("lock_stolen 1"), "{out}");
    assert!(out.contains("2 processes"), "{out}");

    // --top and --ascii.
    let o = report(&[file.to_str().unwrap(), "--top", "1", "--ascii", "--sort", "contended"]);
    o.assert_success("report --top 1 --ascii");
    assert!(o.stdout.contains("(1 of 5, by contended acquisitions)"), "{}", o.stdout);
    assert!(!o.stdout.contains('█') && o.stdout.contains("|#"), "{}", o.stdout);
    assert!(!o.stdout.contains("-- #2 mutex"), "{}", o.stdout);
}

fn report_writes_a_well_formed_svg() {
    let dir = scratch();
    let file = dir.path().join("trace.jsonl");
    let svg = dir.path().join("out.svg");
    std::fs::write(&file, synthetic_trace()).unwrap();
    let o = report(&[file.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
    o.assert_success("report --svg");
    let text = std::fs::read_to_string(&svg).expect("the SVG was written");
    assert!(text.starts_with("<svg ") && text.contains("xmlns=\"http://www.w3.org/2000/svg\""), "{text}");
    assert!(text.trim_end().ends_with("</svg>"), "{text}");
    assert_eq!(text.matches("<g>").count(), text.matches("</g>").count());
    assert_eq!(text.matches("<title>").count(), text.matches("</title>").count());
    // Every '&' starts an entity; no stray '<' inside text.
    for (i, _) in text.match_indices('&') {
        let rest = &text[i..];
        assert!(
            ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].iter().any(|e| rest.starts_with(e)),
            "bad & at {i}"
        );
    }
    for tag in text.split('<').skip(1) {
        let name: String = tag.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '/').collect();
        assert!(
            ["svg", "/svg", "rect", "/rect", "text", "/text", "g", "/g", "line", "title", "/title"]
                .contains(&name.as_str()),
            "unexpected tag <{name}"
        );
    }
    for want in
        ["Wait time per contended acquisition", "Spins per contended acquisition", HOT, "spin", "futex"]
    {
        assert!(text.contains(want), "SVG lacks {want}");
    }
    assert!(o.stdout.contains(HOT), "the text report is still printed");
}

fn report_reads_standard_input() {
    let dir = scratch();
    let file = dir.path().join("trace.jsonl");
    std::fs::write(&file, synthetic_trace()).unwrap();
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(r#""$1" report - < "$2""#).arg("sh").arg(bin_path()).arg(&file);
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("report -");
    assert!(o.stdout.contains("spinmutex report: -") && o.stdout.contains(HOT), "{}", o.stdout);
}

fn report_errors() {
    // Bad arguments: exit 2 with a message.
    for args in [&[][..], &["--top"][..], &["a", "--frob"][..], &["a", "--top", "0"][..]] {
        let o = report(args);
        assert_eq!(code(&o), Some(2), "{args:?}: {o:?}");
        assert!(o.stderr.contains("error: "), "{args:?}: {}", o.stderr);
    }
    // Unreadable file: exit 1 with a message.
    let o = report(&["/nonexistent/trace.jsonl"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("cannot read /nonexistent/trace.jsonl"), "{}", o.stderr);
    // A directory cannot be read as a trace either.
    let o = report(&["/"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    // An unwritable SVG: exit 1.
    let dir = scratch();
    let file = dir.path().join("trace.jsonl");
    std::fs::write(&file, synthetic_trace()).unwrap();
    let o = report(&[file.to_str().unwrap(), "--svg", "/nonexistent/dir/out.svg"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    // Help.
    let o = report(&["--help"]);
    o.assert_success("report --help");
    assert!(o.stdout.contains("Usage: spinmutex report"), "{}", o.stdout);
    // Only malformed lines: nothing to report, exit 1 with one line that says so.
    std::fs::write(&file, "garbage\n{\"no_event\":1}\n").unwrap();
    let o = report(&[file.to_str().unwrap()]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("none of its 2 lines"), "{}", o.stderr);
    // An empty file beside one that holds a trace (a process killed before it wrote
    // anything): said on stderr and left out, the other reported, in either order.
    std::fs::write(&file, synthetic_trace()).unwrap();
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    for args in [[&file, &empty], [&empty, &file]] {
        let o = report(&[args[0].to_str().unwrap(), args[1].to_str().unwrap()]);
        o.assert_success("report of a trace and an empty file");
        assert!(o.stdout.contains(HOT), "{}", o.stdout);
        assert!(o.stderr.contains("empty.json: nothing to report, left out: it is empty"), "{}", o.stderr);
    }
    // Only empty files: an error, as for one.
    let o = report(&[empty.to_str().unwrap()]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("nothing to report: it is empty"), "{}", o.stderr);
}

fn forked_children_files_are_read_and_labelled_by_pid() {
    let dir = scratch();
    let parent = dir.path().join("trace.json");
    // The parent wrote nothing; two children wrote their own files.
    std::fs::write(&parent, "").unwrap();
    for pid in [301u32, 302] {
        let mut t = String::new();
        for i in 0..(pid - 298) {
            let _ = writeln!(
                t,
                r#"{{"ts_ns":{i},"pid":{pid},"tid":{pid},"strategy":"spin","level":"TRACE","mutex":"0x10","event":"acquired","how":"spin","spins":4,"sleeps":0,"wait_ns":100}}"#
            );
        }
        std::fs::write(dir.path().join(format!("trace.json.{pid}")), t).unwrap();
    }
    let o = report(&[parent.to_str().unwrap()]);
    o.assert_success("report of a forked program's traces");
    let out = &o.stdout;
    assert!(!out.contains("no events"), "{out}");
    assert!(out.contains("read 3 files") && out.contains("trace.json.301: 3 events, pid 301"), "{out}");
    assert!(out.contains("trace.json.302: 4 events, pid 302"), "{out}");
    let by_process = out.split("== By process ==").nth(1).expect("a by-process table");
    assert!(by_process.lines().any(|l| l.starts_with("301 ") && l.contains(" 3 ")), "{out}");
    assert!(by_process.lines().any(|l| l.starts_with("302 ") && l.contains(" 4 ")), "{out}");
    // A glob names the same files, and --json says the same.
    let glob = format!("{}/trace.json*", dir.path().display());
    let o = report(&[&glob, "--json"]);
    o.assert_success("report --json of a glob");
    let v: Value = serde_json::from_str(&o.stdout).expect("one JSON document");
    assert_eq!(v["inputs"].as_array().unwrap().len(), 3, "{v:#}");
    assert_eq!(v["trace"]["pids"], serde_json::json!([301, 302]));
    assert_eq!(v["trace"]["processes"]["302"]["acquired"], 4);
}

fn a_debug_level_trace_says_what_it_does_not_record() {
    let dir = scratch();
    let file = dir.path().join("t.json");
    let mut t = String::new();
    for _ in 0..5 {
        t.push_str(r#"{"ts_ns":1,"pid":7,"tid":8,"strategy":"spin","level":"DEBUG","mutex":"0x10","event":"acquired","how":"sleep","spins":300,"sleeps":1,"wait_ns":9000}"#);
        t.push('\n');
    }
    std::fs::write(&file, t).unwrap();
    let o = report(&[file.to_str().unwrap()]);
    o.assert_success("report of a debug-level trace");
    assert!(o.stdout.contains("spin give-ups: not recorded at this level"), "{}", o.stdout);
    assert!(!o.stdout.contains("spin give-ups: none"), "{}", o.stdout);
    assert!(o.stdout.contains("spin_give_up, sleep, wake, handoff_request are not recorded"), "{}", o.stdout);
}

// ---------------------------------------------------------------- statistics

/// Runs `program` under the library with JSON statistics appended to `file`.
fn run_with_stats(program: &Path, file: &Path) -> Outcome {
    let mut cmd = preloaded(program, Some("spin"));
    cmd.env("SPINMUTEX_STATS", "json").env("SPINMUTEX_STATS_FILE", file);
    let o = run_bounded(cmd, LIMIT);
    o.assert_success(&format!("{} under the library", program.display()));
    o
}

fn tool(name: &str, args: &[&std::ffi::OsStr]) {
    let o = run_bounded(
        {
            let mut c = Command::new(name);
            c.args(args);
            c
        },
        LIMIT,
    );
    o.assert_success(&format!("{name} {args:?}"));
}

/// The line of stats_sites.c whose comment says `SITE name`.
fn site_line(name: &str) -> u32 {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../c-tests/stats_sites.c");
    let text = std::fs::read_to_string(&src).unwrap();
    let at = text.lines().position(|l| l.contains(&format!("/* SITE {name} */"))).expect("a SITE line");
    at as u32 + 1
}

fn json_report(args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let o = report(&all);
    o.assert_success(&format!("report {all:?}"));
    serde_json::from_str(&o.stdout)
        .unwrap_or_else(|e| panic!("report --json is not JSON ({e}):\n{}", o.stdout))
}

/// The class of `report` whose first frame is in `module` and whose origin is `origin`.
fn class<'a>(report: &'a Value, origin: &str) -> &'a Value {
    report["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["origin"] == origin)
        .unwrap_or_else(|| panic!("no {origin} class in {report:#}"))
}

/// A copy of stats_sites, position-independent, stripped, its debug info in
/// `prog.debug` beside it and named by its .gnu_debuglink. Returns (program, debug file).
fn stripped_program(dir: &Path) -> (PathBuf, PathBuf) {
    let prog = dir.join("prog");
    let debug = dir.join("prog.debug");
    std::fs::copy(c_test("stats_sites"), &prog).unwrap();
    tool("objcopy", &["--only-keep-debug".as_ref(), prog.as_os_str(), debug.as_os_str()]);
    tool("strip", &["--strip-all".as_ref(), prog.as_os_str()]);
    let link = format!("--add-gnu-debuglink={}", debug.display());
    tool("objcopy", &[link.as_ref(), prog.as_os_str()]);
    // It is what the test means: a PIE with neither symbols nor DWARF.
    use object::Object;
    let data = std::fs::read(&prog).unwrap();
    let obj = object::File::parse(&*data).unwrap();
    assert_eq!(obj.kind(), object::ObjectKind::Dynamic, "not position-independent");
    assert!(obj.symbol_table().is_none(), "still has .symtab");
    assert!(obj.section_by_name(".debug_info").is_none(), "still has DWARF");
    assert!(obj.gnu_debuglink().unwrap().is_some(), "no debuglink");
    (prog, debug)
}

fn stripped_pie_call_sites_are_named_after_exit() {
    let dir = scratch();
    let (prog, debug) = stripped_program(dir.path());
    let stats = dir.path().join("stats.json");
    let o = run_with_stats(&prog, &stats);
    assert!(o.stdout.starts_with("total "), "{}", o.stdout);
    let stats_arg = stats.to_str().unwrap();

    // With the debug file beside it: function, file and line of both call sites.
    let v = json_report(&[stats_arg]);
    let r = &v["statistics"][0];
    let hot = &r["classes"][0];
    assert_eq!(hot["origin"], "init", "the hot class comes first: {r:#}");
    assert!(hot["counters"]["contended"].as_u64().unwrap() > 0, "{hot:#}");
    let frame = &hot["frames"][0];
    assert_eq!(frame["module"], prog.to_str().unwrap(), "{frame:#}");
    assert_eq!(frame["function"], "make_hot_lock", "{frame:#}");
    assert!(frame["file"].as_str().unwrap().ends_with("stats_sites.c"), "{frame:#}");
    assert_eq!(frame["line"], site_line("make_hot_lock"), "{frame:#}");
    assert_eq!(frame["named_by"], "dwarf", "{frame:#}");
    assert_eq!(frame["debug_file"], debug.to_str().unwrap(), "{frame:#}");
    let first_lock = &class(r, "first lock")["frames"][0];
    assert_eq!(first_lock["function"], "touch_table", "{first_lock:#}");
    assert_eq!(first_lock["line"], site_line("touch_table"), "{first_lock:#}");
    // The text's first row says where the hot lock was made.
    let o = report(&[stats_arg]);
    o.assert_success("report");
    let first = o.stdout.lines().find(|l| l.starts_with("1 ")).expect("a first row").to_string();
    assert!(first.contains("made at make_hot_lock+0x"), "{}", o.stdout);
    assert!(first.contains(&format!("(stats_sites.c:{})", site_line("make_hot_lock"))), "{}", o.stdout);
    assert!(o.stdout.contains("first locked at touch_table+0x"), "{}", o.stdout);
    assert!(!o.stdout.contains("To get names"), "{}", o.stdout);

    // Found by build-id in a debug directory, with no debuglink target beside it.
    let id = frame["build_id"].as_str().expect("a build-id").to_string();
    let by_id = dir.path().join("debug/.build-id").join(&id[..2]);
    std::fs::create_dir_all(&by_id).unwrap();
    std::fs::rename(&debug, by_id.join(format!("{}.debug", &id[2..]))).unwrap();
    let debug_dir = dir.path().join("debug");
    let v = json_report(&[stats_arg, "--debug-dir", debug_dir.to_str().unwrap()]);
    let frame = &v["statistics"][0]["classes"][0]["frames"][0];
    assert_eq!(frame["function"], "make_hot_lock", "{frame:#}");
    assert_eq!(frame["line"], site_line("make_hot_lock"), "{frame:#}");

    // Without the debug file: module+offset, and how to get names.
    let o = report(&[stats_arg]);
    o.assert_success("report without debug info");
    let first = o.stdout.lines().find(|l| l.starts_with("1 ")).expect("a first row").to_string();
    let offset = frame["offset"].as_str().unwrap();
    assert!(first.contains(&format!("made at prog+{offset}")), "{}", o.stdout);
    assert!(
        o.stdout.contains("is stripped (no .symtab)") && o.stdout.contains("To get names"),
        "{}",
        o.stdout
    );
    let v = json_report(&[stats_arg]);
    let frame = &v["statistics"][0]["classes"][0]["frames"][0];
    assert!(frame.get("function").is_none(), "{frame:#}");
    assert!(v["names_missing"][prog.to_str().unwrap()].is_string(), "{v:#}");

    // Another build in the program's place: not read, and said so.
    std::fs::copy(c_test("ab_tiny"), &prog).unwrap();
    let o = report(&[stats_arg, "--debug-dir", "/nonexistent"]);
    o.assert_success("report against another build");
    assert!(o.stdout.contains("is another build"), "{}", o.stdout);
    // The debug file of the build that ran is still found by its build-id.
    let v = json_report(&[stats_arg, "--debug-dir", debug_dir.to_str().unwrap()]);
    assert_eq!(v["statistics"][0]["classes"][0]["frames"][0]["function"], "make_hot_lock");
}

fn reports_of_several_processes_are_each_labelled_and_add_up() {
    let dir = scratch();
    let stats = dir.path().join("stats.json");
    run_with_stats(&c_test("stats_sites"), &stats);
    run_with_stats(&c_test("stats_sites"), &stats);
    let v = json_report(&[stats.to_str().unwrap()]);
    let reports = v["statistics"].as_array().unwrap();
    assert_eq!(reports.len(), 2, "{v:#}");
    assert_ne!(reports[0]["pid"], reports[1]["pid"]);
    for r in reports {
        common::stats::json_rows_add_up(r).unwrap_or_else(|e| panic!("{e}: {r:#}"));
    }
    let o = report(&[stats.to_str().unwrap()]);
    o.assert_success("report of two processes");
    let exe = c_test("stats_sites").canonicalize().unwrap();
    for r in reports {
        assert_eq!(r["exe"].as_str(), exe.to_str(), "each report names its program: {r:#}");
        let head = format!("Lock statistics of pid {} ({}),", r["pid"], exe.display());
        assert!(o.stdout.contains(&head), "{}", o.stdout);
    }
    // First, the processes, one row each, with the class that cost each most.
    let (list, _) = o.stdout.split_once("== Lock statistics of pid ").unwrap();
    assert!(list.starts_with("== 2 processes, most time waited first =="), "{}", o.stdout);
    let rows: Vec<&str> = list.lines().filter(|l| l.starts_with(['1', '2'])).collect();
    assert_eq!(rows.len(), 2, "{list}");
    for row in rows {
        assert!(row.contains(" stats_sites ") && row.contains("#1 made at make_hot_lock"), "{list}");
    }
    // Each process's text rows add up too.
    for part in o.stdout.split("== Lock statistics of pid ").skip(1) {
        common::stats::text_rows_add_up(part).unwrap();
    }
    assert_eq!(o.stdout.lines().filter(|l| l.starts_with("= ")).count(), 2, "{}", o.stdout);
}

/// A module path with quotes, a backslash, a tab and non-ASCII: the command's JSON
/// parses and gives the path back, and the text shows it.
fn json_output_round_trips_odd_module_paths() {
    let dir = scratch();
    let odd = dir.path().join("d\"ir\\ é\tq");
    std::fs::create_dir_all(&odd).unwrap();
    let prog = odd.join("pr\"og é");
    std::fs::copy(c_test("stats_sites"), &prog).unwrap();
    let stats = dir.path().join("stats.json");
    run_with_stats(&prog, &stats);
    let v = json_report(&[stats.to_str().unwrap()]);
    let frame = &v["statistics"][0]["classes"][0]["frames"][0];
    assert_eq!(frame["module"].as_str(), prog.to_str(), "{frame:#}");
    assert_eq!(frame["function"], "make_hot_lock", "{frame:#}");
    let o = report(&[stats.to_str().unwrap()]);
    o.assert_success("report of an odd path");
    assert!(o.stdout.contains("[pr\"og é+0x"), "{}", o.stdout);
}

fn auto_policies_are_shown_and_kept() {
    let dir = scratch();
    let stats = dir.path().join("stats.json");
    let mut cmd = preloaded(c_test("auto_classes"), Some("auto"));
    cmd.arg("800").env("SPINMUTEX_STATS", "json").env("SPINMUTEX_STATS_FILE", &stats);
    run_bounded(cmd, LIMIT).assert_success("auto_classes under auto");
    let o = report(&[stats.to_str().unwrap()]);
    o.assert_success("report of auto's statistics");
    let line = o
        .stdout
        .lines()
        .find(|l| l.contains("waiting policy under auto: "))
        .unwrap_or_else(|| panic!("no waiting policy in the report:\n{}", o.stdout));
    assert!(line.contains("contended acquisitions served spinning "), "{line}");
    assert!(line.contains(" sleep (") || line.contains(" spin ("), "{line}");
    let json = json_report(&[stats.to_str().unwrap()]).to_string();
    for key in ["\"policy\":{", "\"mode\":", "\"judged\":", "\"served_spinning\":", "\"served_sleeping\":"] {
        assert!(json.contains(key), "report --json dropped {key}: {json}");
    }
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    tests!(
        suite,
        report_names_the_hottest_mutex_first_with_counts,
        report_writes_a_well_formed_svg,
        report_reads_standard_input,
        report_errors,
        forked_children_files_are_read_and_labelled_by_pid,
        a_debug_level_trace_says_what_it_does_not_record,
        reports_of_several_processes_are_each_labelled_and_add_up,
        json_output_round_trips_odd_module_paths,
        auto_policies_are_shown_and_kept,
    );
    suite.needs(
        "stripped_pie_call_sites_are_named_after_exit",
        &[Need::Program("objcopy", "binutils"), Need::Program("strip", "binutils")],
        stripped_pie_call_sites_are_named_after_exit,
    );
    suite.run()
}
