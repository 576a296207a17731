//! Integration tests of `spinmutex report`: a synthetic JSON trace with several
//! mutexes and strategies (and a malformed line) is summarised as text and as SVG.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::harness::{tests, Suite};
use common::{run_bounded, scratch, Outcome};

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
    let o = report(&[file.to_str().unwrap()]);
    o.assert_success("report");
    let out = &o.stdout;

    // The hottest mutex leads the table and the details; WARM under spin beats WARM
    // under futex only by being listed per process: futex's 12 beat spin's 10.
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
    let o = report(&[file.to_str().unwrap(), "--top", "1", "--ascii"]);
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
    // Only malformed lines: still a report, saying so.
    std::fs::write(&file, "garbage\n{\"no_event\":1}\n").unwrap();
    let o = report(&[file.to_str().unwrap()]);
    o.assert_success("report of garbage");
    assert!(o.stdout.contains("2 malformed lines skipped") && o.stdout.contains("no events"), "{}", o.stdout);
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    tests!(
        suite,
        report_names_the_hottest_mutex_first_with_counts,
        report_writes_a_well_formed_svg,
        report_reads_standard_input,
        report_errors,
    );
    suite.run()
}
