//! Integration tests of the `spinmutex` command: help, usage errors before anything
//! runs, `run`, `ab` (verdicts, JSON, a static binary, failed runs and metrics),
//! `bench`, completions and the man page, and the install script.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::harness::{tests, Need, Suite};
use common::{c_test, lib_path, preloaded, run_bounded, scratch, Outcome};
use spinmutex_cli::ab::AbReport;
use spinmutex_cli::bench::BenchReport;
use spinmutex_cli::bench_rwlock::RwBenchReport;
use spinmutex_cli::Direction;

const LIMIT: Duration = Duration::from_secs(180);

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_spinmutex"))
}

/// The command with a clean environment (no SPINMUTEX_*, no LD_PRELOAD) and the
/// library of this build.
fn spinmutex(args: &[&str]) -> Command {
    let mut cmd = preloaded(bin(), None);
    cmd.env("SPINMUTEX_LIB", lib_path()).args(args);
    cmd
}

fn run(args: &[&str]) -> Outcome {
    run_bounded(spinmutex(args), LIMIT)
}

fn code(o: &Outcome) -> Option<i32> {
    o.status.and_then(|s| s.code())
}

fn ab_tiny() -> PathBuf {
    c_test("ab_tiny")
}

fn ab_tiny_static() -> PathBuf {
    c_test("ab_tiny_static")
}

// ---------------------------------------------------------------- help and usage

const SHARED_OPTIONS: &[&str] = &[
    "--spin-limit",
    "--max-spinners",
    "--handoff-after",
    "--handoff-wait",
    "--fair",
    "--trace",
    "--stats",
    "--env",
];

fn help_lists_every_subcommand_and_the_shared_settings() {
    let o = assert_cmd::Command::new(bin()).arg("--help").assert().success();
    let top = String::from_utf8_lossy(&o.get_output().stdout).into_owned();
    for sub in ["run", "ab", "bench", "report", "completions", "man"] {
        assert!(top.contains(sub), "main help lacks {sub}:\n{top}");
    }
    for sub in ["run", "ab", "bench"] {
        for how in [vec!["help", sub], vec![sub, "--help"]] {
            let o = assert_cmd::Command::new(bin()).args(&how).assert().success();
            let text = String::from_utf8_lossy(&o.get_output().stdout).into_owned();
            assert!(text.contains("Usage: spinmutex"), "{how:?}:\n{text}");
            for opt in SHARED_OPTIONS {
                assert!(text.contains(opt), "{how:?} does not list {opt}:\n{text}");
            }
        }
    }
    assert_cmd::Command::new(bin()).arg("--version").assert().success();
}

fn bad_arguments_exit_2_with_a_message() {
    let cases: &[&[&str]] = &[
        &[],
        &["frobnicate"],
        &["run"],
        &["run", "--strategy"],
        &["run", "--no-such-option", "--", "true"],
        &["run", "--env", "NOT_A_PAIR", "--", "true"],
        &["run", "--fair", "2", "--", "true"],
        &["run", "--stats", "yes", "--", "true"],
        &["run", "--env", "SPINMUTEX_HANDOFF_WAIT=5parsecs", "--", "true"],
        &["ab"],
        &["ab", "-n", "0", "--", "true"],
        &["ab", "-n", "many", "--", "true"],
        &["ab", "-s", "glibc-adaptive", "--", "true"],
        &["ab", "-s", "spin,spin", "--", "true"],
        &["ab", "--metric", "(", "--", "true"],
        &["ab", "--higher-is-better", "--", "true"],
        &["bench", "--threads", "0"],
        &["bench", "--threads", "1,,2"],
        &["bench", "--loads", "x"],
        &["bench", "--runs", "0"],
        &["bench", "--duration-ms", "-5"],
        &["bench", "stray"],
        &["bench", "--quick=yes"],
        &["bench", "--strategies", "spinn"],
        &["bench", "--writes", "10"],
        &["bench", "--kind", "reader"],
        &["bench", "--rwlock", "--writes", "101"],
        &["bench", "--rwlock", "--writes", "x"],
        &["bench", "--rwlock", "--kind", "fair"],
        &["bench", "--rwlock", "-s", "glibc-adaptive"],
        &["bench", "--rwlock", "--svg", "out.svg"],
        &["help", "nothing"],
        &["completions", "tcsh"],
        &["man", "nothing"],
    ];
    for args in cases {
        let o = run(args);
        assert_eq!(code(&o), Some(2), "{args:?} should exit 2: {o:?}");
        assert!(o.stderr.len() > 20, "{args:?}: unclear message {:?}", o.stderr);
    }
}

/// A misspelled strategy or a bad setting is refused before the first run: the command
/// would create the marker file.
fn bad_settings_exit_2_before_anything_runs() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", marker.display());
    for (args, says) in [
        (vec!["ab", "-s", "glibc", "-s", "spinn"], "accepted: none (no preload), glibc, futex, spin"),
        (vec!["ab", "--spin-limit", "10x"], "an iteration count 0..1000000, or a duration up to 1s"),
        (vec!["run", "--spin-limit", "10x"], "an iteration count 0..1000000"),
        (vec!["run", "--strategy", "spinn"], "glibc, futex, spin"),
        (vec!["bench", "--spin-limit", "10x"], "an iteration count"),
    ] {
        let mut full = args.clone();
        if args[0] != "bench" {
            full.extend(["--", "sh", "-c", &touch]);
        }
        let o = run(&full);
        assert_eq!(code(&o), Some(2), "{full:?}: {o:?}");
        assert!(o.stderr.contains(says), "{full:?}: {}", o.stderr);
        assert!(!o.stderr.contains("[  1/"), "{full:?} ran something: {}", o.stderr);
        assert!(!marker.exists(), "{full:?} ran the command");
    }
    // A bad setting inherited from the environment is refused the same way.
    let mut cmd = spinmutex(&["ab", "--", "sh", "-c", &touch]);
    cmd.env("SPINMUTEX_SPIN_LIMIT", "10x");
    let o = run_bounded(cmd, LIMIT);
    assert_eq!(code(&o), Some(2), "{o:?}");
    assert!(o.stderr.contains("SPINMUTEX_SPIN_LIMIT=\"10x\" in this command's environment"), "{}", o.stderr);
    assert!(!marker.exists());
}

/// `--fair 1` is the option's value, not the command `1`.
fn fair_takes_its_value() {
    let o = run(&["run", "--fair", "1", "-v", "--", "sh", "-c", "echo \"$SPINMUTEX_FAIR\""]);
    o.assert_success("run --fair 1");
    assert_eq!(o.stdout.trim(), "1");
    assert!(o.stderr.contains("fair=1"), "{}", o.stderr);
}

// ---------------------------------------------------------------- run

fn run_passes_exit_status_through() {
    for status in [0, 1, 7, 255] {
        let o = run(&["run", "--", "sh", "-c", &format!("exit {status}")]);
        assert_eq!(code(&o), Some(status), "{o:?}");
    }
}

fn run_reports_a_signal_and_exits_128_plus_signo() {
    let o = run(&["run", "--", "sh", "-c", "kill -KILL $$"]);
    assert_eq!(code(&o), Some(128 + 9), "{o:?}");
    assert!(o.stderr.contains("signal 9") && o.stderr.contains("SIGKILL"), "{}", o.stderr);
    let o = run(&["run", "--", "sh", "-c", "kill -TERM $$"]);
    assert_eq!(code(&o), Some(128 + 15), "{o:?}");
    assert!(o.stderr.contains("SIGTERM"), "{}", o.stderr);
}

fn run_preloads_the_library_and_sets_the_settings() {
    let lib = lib_path().canonicalize().unwrap();
    let o = run(&[
        "run",
        "--strategy",
        "spin",
        "--spin-limit",
        "7",
        "--max-spinners=2",
        "--handoff-after",
        "3",
        "--handoff-wait",
        "4us",
        "--stats",
        "--env",
        "EXTRA=x=y",
        "-v",
        "--",
        "sh",
        "-c",
        "echo \"$LD_PRELOAD|$SPINMUTEX_STRATEGY|$SPINMUTEX_SPIN_LIMIT|$SPINMUTEX_MAX_SPINNERS|\
         $SPINMUTEX_HANDOFF_AFTER|$SPINMUTEX_HANDOFF_WAIT|$SPINMUTEX_STATS|$EXTRA\"",
    ]);
    o.assert_success("run with settings");
    // --stats: the library writes JSON to the command's file, which run reports.
    let want = format!("{}|spin|7|2|3|4us|json|x=y", lib.display());
    assert_eq!(o.stdout.lines().next(), Some(want.as_str()), "stderr: {}", o.stderr);
    // The library reports what it runs with.
    for want in ["strategy=spin", "max_spinners=2", "handoff_after=3", "handoff_wait=4us", "stats=json"] {
        assert!(o.stderr.contains(want), "no {want} in:\n{}", o.stderr);
    }
}

/// `run --stats`: the named report of every process that locked a mutex, printed on
/// standard error after the command exits; the library's JSON file is the command's own
/// and is removed, unless --stats-file names one to keep.
fn run_stats_prints_the_named_report_after_exit() {
    let program = c_test("stats_sites");
    let tmp = scratch();
    let mut cmd = spinmutex(&["run", "--stats", "--", "sh", "-c", "\"$0\"", program.to_str().unwrap()]);
    cmd.env("TMPDIR", tmp.path());
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("run --stats");
    assert!(o.stdout.starts_with("total "), "the program's output is its own: {}", o.stdout);
    // One report: the shell that ran the program locked nothing.
    assert_eq!(o.stderr.matches("== Lock statistics of pid ").count(), 1, "{}", o.stderr);
    assert!(o.stderr.contains(&format!("({})", program.display())), "{}", o.stderr);
    let first = o.stderr.lines().find(|l| l.starts_with("1 ")).expect("a first row");
    assert!(first.contains("made at make_hot_lock+0x") && first.contains("(stats_sites.c:"), "{}", o.stderr);
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "run --stats left files behind: {left:?}");

    // --stats=json: the same as `report --json`, names added.
    let o = run(&["run", "--stats=json", "--", program.to_str().unwrap()]);
    o.assert_success("run --stats=json");
    let v: serde_json::Value =
        serde_json::from_str(&o.stderr).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", o.stderr));
    let r = &v["statistics"][0];
    assert_eq!(r["exe"].as_str(), program.to_str(), "{v:#}");
    assert_eq!(r["classes"][0]["frames"][0]["function"], "make_hot_lock", "{v:#}");

    // --stats-file: kept, and only this run's reports are shown.
    let kept = tmp.path().join("kept.json");
    for round in 1..=2 {
        let o =
            run(&["run", "--stats", "--stats-file", kept.to_str().unwrap(), "--", program.to_str().unwrap()]);
        o.assert_success("run --stats --stats-file");
        assert_eq!(o.stderr.matches("== Lock statistics of pid ").count(), 1, "{}", o.stderr);
        let lines = std::fs::read_to_string(&kept).unwrap().lines().count();
        assert_eq!(lines, round, "one raw report per run in {}", kept.display());
    }
}

fn run_appends_to_an_existing_ld_preload() {
    let lib = lib_path().canonicalize().unwrap();
    // libc.so.6 is already loaded by everything, so preloading it is harmless.
    let mut cmd = spinmutex(&["run", "--", "sh", "-c", "echo \"$LD_PRELOAD\""]);
    cmd.env("LD_PRELOAD", "libc.so.6");
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("run with LD_PRELOAD set");
    assert_eq!(o.stdout.trim(), format!("libc.so.6:{}", lib.display()));
}

fn run_strategy_none_does_not_preload() {
    let o = run(&["run", "--strategy", "none", "--", "sh", "-c", "echo \"[$LD_PRELOAD]\""]);
    o.assert_success("run --strategy none");
    assert_eq!(o.stdout.trim(), "[]");
}

fn run_missing_command_exits_127() {
    let o = run(&["run", "--", "/nonexistent/program"]);
    assert_eq!(code(&o), Some(127), "{o:?}");
    assert!(o.stderr.contains("/nonexistent/program"));
}

fn library_location_comes_from_spinmutex_lib() {
    let mut cmd = spinmutex(&["run", "--", "true"]);
    cmd.env("SPINMUTEX_LIB", "/nonexistent/libspinmutex.so");
    let o = run_bounded(cmd, LIMIT);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("SPINMUTEX_LIB"), "{}", o.stderr);
}

/// A static program cannot load the library: `run` says so and fails.
fn run_of_a_static_program_fails_with_the_causes() {
    let o = run(&["run", "--", ab_tiny_static().to_str().unwrap(), "1000"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("did not load") && o.stderr.contains("statically linked"), "{}", o.stderr);
}

/// The line of `c-tests/NAME` marked `SITE tag`.
fn site_line(name: &str, tag: &str) -> usize {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../c-tests").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mark = format!("/* SITE {tag} */");
    text.lines().position(|l| l.contains(&mark)).unwrap_or_else(|| panic!("no {mark} in {name}")) + 1
}

/// The hot lock is the one its threads waited for longest: a lock held around slow
/// work (2 contended acquisitions, ~600 ms waited) comes before a busy one (thousands
/// of short waits), in `run --stats`, in `report` and its SVG, and in the library's own
/// report (whose SPINMUTEX_STATS_TOP keeps the top by wait); `--sort` gives the other
/// orders. The rows show spins, sleeps and handoffs, and still add up.
fn the_hot_lock_is_ranked_by_time_waited() {
    let program = c_test("wait_ranking");
    let prog = program.to_str().unwrap();
    let first_row = |text: &str| text.lines().find(|l| l.starts_with("1 ")).unwrap_or("").to_string();
    let o = run(&["run", "--stats", "--", prog]);
    o.assert_success("run --stats");
    let header = o.stderr.lines().find(|l| l.starts_with("#")).expect("a header");
    for column in ["spins", "sleeps", "handoffs"] {
        assert!(header.contains(column), "no {column} column: {header}");
    }
    assert!(first_row(&o.stderr).contains("make_io_lock"), "{}", o.stderr);
    common::stats::text_rows_add_up(&o.stderr).unwrap();
    let o = run(&["run", "--stats", "--sort", "contended", "--", prog]);
    o.assert_success("run --stats --sort contended");
    assert!(first_row(&o.stderr).contains("make_busy_lock"), "{}", o.stderr);

    // The library's own report: its order, and the one class SPINMUTEX_STATS_TOP=1 keeps.
    let dir = scratch();
    let json = dir.path().join("stats.json");
    let env = format!("SPINMUTEX_STATS_FILE={}", json.display());
    let o =
        run(&["run", "-e", "SPINMUTEX_STATS=json", "-e", &env, "-e", "SPINMUTEX_STATS_TOP=1", "--", prog]);
    o.assert_success("run with the library's JSON report");
    let report = common::stats::json_report(&json);
    common::stats::assert_rows_add_up(&report);
    assert_eq!(report["classes"][0]["counters"]["locked"], 3, "the lock held around slow work:\n{report:#}");
    let o = run(&["run", "-e", "SPINMUTEX_STATS=1", "-e", "SPINMUTEX_STATS_TOP=1", "--", prog]);
    o.assert_success("run with the library's text report");
    let rows = common::stats::text_rows_add_up(&o.stderr).unwrap();
    assert_eq!(rows[0].1, 3, "the first row is the lock held around slow work:\n{}", o.stderr);
    let header = o.stderr.lines().find(|l| l.trim_start().starts_with("#")).expect("a header");
    assert!(header.contains("spins") && header.contains("handoffs"), "{header}");

    // report: the same order in text and in the SVG; --sort in both.
    let full = dir.path().join("full.json");
    let env = format!("SPINMUTEX_STATS_FILE={}", full.display());
    run(&["run", "-e", "SPINMUTEX_STATS=json", "-e", &env, "--", prog]).assert_success("run");
    let svg = dir.path().join("chart.svg");
    for (sort, hot, cold) in
        [("wait", "make_io_lock", "make_busy_lock"), ("contended", "make_busy_lock", "make_io_lock")]
    {
        let o = run(&["report", full.to_str().unwrap(), "--sort", sort, "--svg", svg.to_str().unwrap()]);
        o.assert_success("report --sort");
        assert!(first_row(&o.stdout).contains(hot), "--sort {sort}:\n{}", o.stdout);
        let chart = std::fs::read_to_string(&svg).unwrap();
        let classes = &chart[chart.find("Hottest lock classes").expect("a class panel")..];
        let (h, c) = (classes.find(hot).unwrap(), classes.find(cold).unwrap());
        assert!(h < c, "--sort {sort}: {hot} is not drawn first");
    }
    let o = run(&["report", full.to_str().unwrap()]);
    assert!(first_row(&o.stdout).contains("make_io_lock"), "the default is by wait:\n{}", o.stdout);
}

/// An rwlock's class says it was made by pthread_rwlock_init; a class made in a function
/// inlined into main is told as made there, called from main.
fn classes_are_labelled_by_their_real_maker_and_caller() {
    let program = c_test("wait_ranking");
    let o = run(&["run", "--stats", "--", program.to_str().unwrap()]);
    o.assert_success("run --stats");
    let stacks = &o.stderr[o.stderr.find("Call stacks").expect("call stacks")..];
    let rw = stacks
        .lines()
        .find(|l| l.contains("rwlock") && l.trim_start().starts_with('#'))
        .expect("an rwlock class");
    assert!(rw.contains("made by pthread_rwlock_init"), "{rw}");
    assert!(!o.stderr.contains("rwlock, 1 rwlock, 1 live, made by pthread_mutex_init"), "{}", o.stderr);
    let want = format!(
        "made at queue_new (wait_ranking.c:{}), called from main (wait_ranking.c:{})",
        site_line("wait_ranking.c", "queue_new"),
        site_line("wait_ranking.c", "main")
    );
    assert!(o.stderr.contains(&want), "no {want:?} in:\n{}", o.stderr);
}

/// `--stats-file -` puts the report on standard output, alone: the program's own output
/// goes to standard error, so that the report pipes into jq.
fn run_stats_file_dash_pipes_the_report_alone() {
    let program = c_test("stats_sites");
    let prog = program.to_str().unwrap();
    let o = run(&["run", "--stats=json", "--stats-file", "-", "--", prog]);
    o.assert_success("run --stats=json --stats-file -");
    let v: serde_json::Value =
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", o.stdout));
    assert_eq!(v["statistics"][0]["classes"][0]["frames"][0]["function"], "make_hot_lock", "{v:#}");
    assert!(o.stderr.contains("total "), "the program's output goes to stderr:\n{}", o.stderr);
    let o = run(&["run", "--stats", "--stats-file", "-", "--", prog]);
    o.assert_success("run --stats --stats-file -");
    assert!(o.stdout.starts_with("== Lock statistics of pid "), "{}", o.stdout);
    assert!(!o.stdout.contains("total ") && o.stderr.contains("total "), "{o:?}");
    let o = run(&["run", "--stats-file", "-", "--", prog]);
    assert_eq!(code(&o), Some(2), "--stats-file - without --stats: {o:?}");
}

/// `ab --json -` writes the JSON alone on standard output; the text report goes to
/// standard error.
fn ab_json_dash_writes_json_alone_on_stdout() {
    let dir = scratch();
    let o = run_in(
        dir.path(),
        &["ab", "-n", "2", "--warmup", "0", "-s", "glibc", "--without-none", "--json", "-", "--", "true"],
    );
    o.assert_success("ab --json -");
    let report: AbReport =
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", o.stdout));
    assert_eq!(report.runs.len(), 2);
    assert!(o.stderr.contains("wall time"), "the text report goes to stderr:\n{}", o.stderr);
    assert!(!dir.path().join("-").exists(), "ab created a file named '-'");
    let o = run(&["ab", "--json", "-", "--show-output", "--", "true"]);
    assert_eq!(code(&o), Some(2), "{o:?}");
}

fn run_in(dir: &Path, args: &[&str]) -> Outcome {
    let mut cmd = spinmutex(args);
    cmd.current_dir(dir);
    run_bounded(cmd, LIMIT)
}

/// `report` on a file with nothing it reads fails with one line that says why: the
/// library's text report (naming the JSON to write instead), an empty file, a file of
/// something else.
fn report_fails_loudly_on_a_file_without_reports_or_events() {
    let dir = scratch();
    let text = dir.path().join("stats.txt");
    let env = format!("SPINMUTEX_STATS_FILE={}", text.display());
    run(&["run", "-e", "SPINMUTEX_STATS=1", "-e", &env, "--", c_test("stats_sites").to_str().unwrap()])
        .assert_success("run with the library's text report");
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    for (file, says) in [
        (text.to_str().unwrap(), "SPINMUTEX_STATS=json"),
        (empty.to_str().unwrap(), "it is empty"),
        ("/etc/passwd", "is a statistics report"),
    ] {
        let o = run(&["report", file]);
        assert_eq!(code(&o), Some(1), "report {file}: {o:?}");
        assert_eq!(o.stderr.lines().count(), 1, "one line: {}", o.stderr);
        assert!(o.stderr.contains(file) && o.stderr.contains(says), "{}", o.stderr);
        assert!(o.stdout.is_empty(), "{}", o.stdout);
    }
}

/// Errors name the real cause before anything runs: SPINMUTEX_LIB naming another
/// library or a directory, statistics asked of `--strategy none` or of `ab` (where
/// they would make the arms incomparable), and for a static program only that the
/// library did not load.
fn errors_name_the_real_cause() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let libm = ["/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("libm");
    let with_lib = |lib: &str, args: &[&str]| {
        let mut cmd = spinmutex(args);
        cmd.env("SPINMUTEX_LIB", lib);
        run_bounded(cmd, LIMIT)
    };
    let o = with_lib(libm, &["run", "--", "sh", "-c", &touch]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("not the spinmutex library") && o.stderr.contains(libm), "{}", o.stderr);
    assert!(!o.stderr.contains("statically linked"), "{}", o.stderr);
    let lib_dir = lib_path().parent().unwrap().to_str().unwrap().to_string();
    let o = with_lib(&lib_dir, &["ab", "--", "sh", "-c", &touch]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("is a directory"), "{}", o.stderr);
    assert!(!o.stderr.contains("no such file"), "{}", o.stderr);

    let o = run(&["run", "--strategy", "none", "--stats", "--", "sh", "-c", &touch]);
    assert_eq!(code(&o), Some(2), "{o:?}");
    assert!(o.stderr.contains("--strategy none"), "{}", o.stderr);
    let o = run(&["ab", "--stats", "--", "sh", "-c", &touch]);
    assert_eq!(code(&o), Some(2), "{o:?}");
    assert!(o.stderr.contains("not be comparable"), "{}", o.stderr);
    let mut cmd = spinmutex(&["ab", "--", "sh", "-c", &touch]);
    cmd.env("SPINMUTEX_STATS", "1");
    let o = run_bounded(cmd, LIMIT);
    assert_eq!(code(&o), Some(2), "{o:?}");
    assert!(o.stderr.contains("inherited"), "{}", o.stderr);
    assert!(!marker.exists(), "a refused command ran");
}

/// `run --stats` of a static program says only that the library did not load.
fn run_stats_of_a_static_program_names_only_the_cause() {
    let o = run(&["run", "--stats", "--", ab_tiny_static().to_str().unwrap(), "1000"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("statically linked"), "{}", o.stderr);
    assert!(!o.stderr.contains("no statistics"), "{}", o.stderr);
}

/// Help and messages speak of what applies: every strategy in the help, `-n` below
/// what the statistics need refused with how many, usage lines that name the command,
/// and each strategy's settings line without the settings it does not use.
fn help_and_messages_speak_of_what_applies() {
    for sub in ["run", "ab"] {
        let o = run(&[sub, "--help"]);
        assert!(o.stdout.contains("kernel"), "{sub} --help omits kernel:\n{}", o.stdout);
    }
    // (On a busy machine even `true` may take over 5 ms: the warning follows the times.)
    let o = run(&[
        "ab",
        "-n",
        "3",
        "--warmup",
        "0",
        "-s",
        "glibc",
        "--without-none",
        "--json",
        "-",
        "--",
        "true",
    ]);
    o.assert_success("ab of a very short command");
    let report: AbReport = serde_json::from_str(&o.stdout).unwrap();
    let shortest = report.runs.iter().map(|r| r.wall_s).fold(f64::INFINITY, f64::min);
    let warned = report.warnings.iter().filter(|w| w.contains("too short to time")).count();
    assert_eq!(warned, usize::from(shortest < 0.005), "shortest {shortest}: {:?}", report.warnings);
    let o = run(&["ab", "-n", "1", "--", "true"]);
    assert_eq!(code(&o), Some(2), "{o:?}");
    assert!(o.stderr.contains("at least 2"), "{}", o.stderr);
    let o = run(&["bench", "--rwlock", "--svg", "x.svg"]);
    assert!(o.stderr.contains("Usage: spinmutex bench"), "{}", o.stderr);
    let o = run(&["run", "--strategy", "spin", "--stats", "--strategy", "none", "--", "true"]);
    assert!(o.stderr.contains("Usage: spinmutex run"), "{}", o.stderr);
    for (strategy, absent) in
        [("futex", &["spin_limit", "max_spinners", "fair="][..]), ("kernel", &["spin_limit", "handoff"][..])]
    {
        let o = run(&["run", "-v", "--strategy", strategy, "--", "true"]);
        o.assert_success(strategy);
        let line = o.stderr.lines().find(|l| l.contains("loaded in pid")).expect("a load line");
        for word in absent {
            assert!(!line.contains(word), "{strategy} does not use {word}: {line}");
        }
    }
}

// ---------------------------------------------------------------- ab

fn ab_compares_in_words_and_writes_json() {
    let dir = scratch();
    let json = dir.path().join("ab.json");
    let prog = ab_tiny();
    let o = run(&[
        "ab",
        "-n",
        "3",
        "--warmup",
        "1",
        "-s",
        "glibc",
        "-s",
        "spin",
        "--metric",
        r"ops/s=([0-9.]+)",
        "--json",
        json.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "20000",
    ]);
    o.assert_success("ab");
    for want in
        ["wall time", "CPU time", "metric", "strategy=spin spin_limit=8us", "strategy=glibc", "no preload"]
    {
        assert!(o.stdout.contains(want), "ab output lacks {want:?}:\n{}", o.stdout);
    }
    // A verdict for every pair and quantity: spin and glibc against each baseline.
    let verdicts: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("  spin") || l.starts_with("  glibc"))
        .filter(|l| l.contains(" vs ") || l.contains(" than "))
        .collect();
    assert_eq!(verdicts.len(), 3 * 3, "{}", o.stdout);
    for v in &verdicts {
        assert!(
            v.contains("significant") || v.contains("no difference detectable at this noise"),
            "a verdict says neither: {v}"
        );
    }
    assert!(o.stdout.contains("higher is better"), "{}", o.stdout);
    // Progress on stderr: 3 arms (none added beside glibc) × (1 warm-up + 3 runs).
    assert_eq!(o.stderr.lines().filter(|l| l.starts_with('[')).count(), 12, "{}", o.stderr);

    let report: AbReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.tool, "spinmutex ab");
    assert_eq!(report.strategies, ["none", "glibc", "spin"]);
    assert_eq!(report.runs.len(), 9);
    assert!(report.runs.iter().all(|r| r.ok && r.metric.is_some()), "{:?}", report.runs);
    assert_eq!(report.metric_direction, Some(Direction::HigherIsBetter));
    let arm = |name: &str| report.arms.iter().find(|a| a.name == name).unwrap();
    assert!(arm("none").effective.is_none() && !arm("none").preload);
    assert_eq!(arm("spin").effective.as_ref().unwrap().strategy, "spin");
    assert_eq!(arm("glibc").effective.as_ref().unwrap().strategy, "glibc");
    assert_eq!(arm("spin").loaded_in, ["ab_tiny"]);
    for key in ["wall_s", "cpu_s", "metric"] {
        assert_eq!(report.summary[key].len(), 3, "{key}");
        let pairs: Vec<(String, String)> =
            report.comparisons[key].iter().map(|c| (c.strategy.clone(), c.baseline.clone())).collect();
        let want = [("spin", "glibc"), ("spin", "none"), ("glibc", "none")];
        assert_eq!(pairs, want.map(|(a, b)| (a.to_string(), b.to_string())), "{key}");
        for c in &report.comparisons[key] {
            if let Some([lo, hi]) = c.ratio_ci95 {
                assert!(lo >= 0.0 && lo <= hi, "{key}: {lo}..{hi}");
            }
        }
    }
}

fn ab_reports_failed_runs_and_keeps_times_without_a_metric() {
    let prog = ab_tiny();
    let o = run(&["ab", "-n", "2", "--warmup", "0", "--", prog.to_str().unwrap(), "1000", "3"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stdout.contains("failed run(s)") && o.stdout.contains("exit status 3"), "{}", o.stdout);
    assert!(o.stdout.contains("0/2"), "{}", o.stdout);
    assert!(o.stderr.contains("FAILED"), "{}", o.stderr);

    // A metric that matches nothing loses the metric, not the wall and CPU times.
    let o = run(&[
        "ab",
        "-n",
        "2",
        "--warmup",
        "0",
        "--metric",
        r"nomatch=(\d+)",
        "--",
        prog.to_str().unwrap(),
        "1000",
    ]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stdout.contains("matched nothing"), "{}", o.stdout);
    let wall = o.stdout.split("wall time").nth(1).expect("a wall time table");
    let wall = wall.split("CPU time").next().unwrap_or(wall);
    assert!(
        wall.lines().filter(|l| l.contains("2/2")).count() == 3,
        "wall times were dropped:\n{}",
        o.stdout
    );
}

fn ab_stops_when_every_warmup_fails() {
    let o = run(&["ab", "-n", "5", "--warmup", "1", "--", "sh", "-c", "exit 4"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("every warm-up run failed"), "{}", o.stderr);
    assert!(!o.stderr.contains("run 1/5"), "ab went on after the warm-up:\n{}", o.stderr);
}

/// The library cannot load into a static binary: ab stops at the first run that
/// should have loaded it, naming the likely causes.
fn ab_of_a_static_program_fails_with_the_causes() {
    let o = run(&["ab", "-n", "2", "--warmup", "0", "--", ab_tiny_static().to_str().unwrap(), "1000"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    for want in ["did not load", "statically linked", "setuid", "clears LD_PRELOAD"] {
        assert!(o.stderr.contains(want), "no {want:?} in:\n{}", o.stderr);
    }
    assert!(!o.stdout.contains("wall time"), "a comparison was printed:\n{}", o.stdout);
}

/// Which way a metric is better: from the flags, else from its unit, else unknown.
fn metric_direction_from_flags_units_or_unknown() {
    let prog = ab_tiny();
    let dir = scratch();
    let json = dir.path().join("ab.json");
    let ab = |extra: &[&str], pattern: &str| -> AbReport {
        let mut args = vec!["ab", "-n", "2", "--warmup", "0", "-s", "spin,futex", "--metric", pattern];
        args.extend(extra);
        args.extend(["--json", json.to_str().unwrap(), "--", prog.to_str().unwrap(), "2000"]);
        let o = run(&args);
        o.assert_success(&format!("ab {extra:?} --metric {pattern}"));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    };
    assert_eq!(ab(&[], r"ops/s=([0-9.]+)").metric_direction, Some(Direction::HigherIsBetter));
    assert_eq!(
        ab(&["--lower-is-better"], r"ops/s=([0-9.]+)").metric_direction,
        Some(Direction::LowerIsBetter)
    );
    let r = ab(&[], r"counter=(\d+)");
    assert_eq!(r.metric_direction, Some(Direction::Unknown));
    assert!(r.metric_direction_reason.unwrap().contains("--higher-is-better"));
    // Without a direction, no verdict calls a side better.
    assert!(r.comparisons["metric"].iter().all(|c| c.better.is_none()));
}

// ---------------------------------------------------------------- bench

fn bench_reduced_grid_writes_csv_json_svg() {
    let dir = scratch();
    let (csv, json, svg) = (dir.path().join("b.csv"), dir.path().join("b.json"), dir.path().join("b.svg"));
    let o = run(&[
        "bench",
        "--quick",
        "--threads",
        "1,2",
        "--loads",
        "0,10",
        "--runs",
        "2",
        "--duration-ms",
        "50",
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    o.assert_success("bench --quick (reduced)");
    for want in [
        "none",
        "glibc",
        "glibc-adaptive",
        "futex",
        "spin",
        "kernel",
        "lock-free",
        "kops/s",
        "vs none",
        "paired",
        "bound",
        "fair",
        "fair/ctl",
        "wait p99",
        "strategy=spin",
        "layout alone: the mutex on a cache line of its own",
        "layout shared: the mutex on one cache line with the counter it protects",
    ] {
        assert!(o.stdout.contains(want), "bench table lacks {want:?}:\n{}", o.stdout);
    }
    // 2 layouts × 2 threads × 2 loads × (6 arms and the control) × 2 runs.
    let cells = 2 * 2 * 2;
    let runs = cells * 7 * 2;
    assert_eq!(o.stderr.lines().filter(|l| l.starts_with('[')).count(), runs, "{}", o.stderr);

    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<String>> = csv_rows(&text);
    assert_eq!(rows.len(), runs + 1, "{text}");
    let header = &rows[0];
    for r in &rows {
        assert_eq!(r.len(), header.len(), "ragged CSV row {r:?}");
    }
    let col =
        |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    for layout in ["alone", "shared"] {
        assert_eq!(rows.iter().filter(|r| r[col("layout")] == layout).count(), runs / 2, "{text}");
    }
    for r in &rows[1..] {
        assert_eq!(r[col("scenario")], "", "{r:?}");
        assert_eq!(r[col("ok")], "1", "{r:?}");
        assert_eq!(r[col("counter_ok")], "1", "{r:?}");
        let ops: f64 = r[col("ops_per_s")].parse().unwrap();
        assert!(ops > 0.0, "{r:?}");
        let load: u32 = r[col("load")].parse().unwrap();
        assert_eq!(r[col("bound_ops_per_s")].is_empty(), load == 0, "{r:?}");
    }

    let report: BenchReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.config.strategies, ["none", "glibc", "glibc-adaptive", "futex", "spin", "kernel"]);
    assert_eq!(report.config.reference, "glibc");
    assert_eq!(report.runs.len(), runs);
    assert_eq!(report.cells.len(), cells * 7, "one summary per cell and arm, the control's too");
    assert!(report
        .runs
        .iter()
        .all(|r| r.ok && r.workload.as_ref().is_some_and(|w| w.contains_key("wait_max_ns"))));
    assert!(report.machine.nproc >= 1);
    assert!(report.effective["none"].is_none());
    assert_eq!(report.effective["glibc-adaptive"].as_ref().unwrap().strategy, "glibc");
    for c in &report.cells {
        let control = c.strategy == "lock-free";
        assert_eq!(c.versus.ratio_to_reference.is_none(), c.strategy == "glibc" || control, "{c:?}");
        assert_eq!(c.versus.paired_ratio.is_none(), c.strategy == "glibc" || control, "{c:?}");
        assert_eq!(c.versus.ratio_to_none.is_none(), c.strategy == "none" || control, "{c:?}");
        assert_eq!(c.bound_ops_per_s.is_none(), c.cell.load == 0, "{c:?}");
        assert_eq!(c.fairness_vs_control.is_none(), control, "{c:?}");
        assert!(c.cell.scenario.is_none());
    }

    let text = std::fs::read_to_string(&svg).unwrap();
    xml_check(&text);
    for want in ["load 0 pauses, mutex alone", "load 10 pauses, mutex shared", "bound"] {
        assert!(text.contains(want), "the chart lacks {want:?}");
    }
}

/// Every `spinmutex-bench-*` cgroup there is.
fn bench_cgroups() -> Vec<std::path::PathBuf> {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| d.flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with("spinmutex-bench-"))
        .map(|e| e.path())
        .collect()
}

fn bench_scenarios_run_and_clean_up() {
    let dir = scratch();
    let json = dir.path().join("s.json");
    let before = bench_cgroups();
    let o = run(&[
        "bench",
        "--no-grid",
        "--scenarios",
        "idle-owner,cpu-quota",
        "-s",
        "glibc,spin",
        "--runs",
        "1",
        "--duration-ms",
        "100",
        "--json",
        json.to_str().unwrap(),
    ]);
    o.assert_success("bench --no-grid --scenarios idle-owner,cpu-quota");
    for want in ["scenario idle-owner: thread 0 at SCHED_IDLE on CPU", "scenario cpu-quota: "] {
        assert!(o.stdout.contains(want), "bench output lacks {want:?}:\n{}", o.stdout);
    }
    assert!(!o.stdout.contains("layout alone"), "--no-grid ran the grid:\n{}", o.stdout);
    let report: BenchReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 2 scenarios × (none, glibc, spin and the control) × 1 run.
    assert_eq!(report.runs.len(), 2 * 4);
    assert!(report.runs.iter().all(|r| r.ok), "{:?}", report.runs);
    let threads: Vec<(String, u64)> = report
        .cells
        .iter()
        .filter(|c| c.strategy == "spin")
        .map(|c| (c.cell.scenario.unwrap().to_string(), c.cell.threads))
        .collect();
    assert_eq!(threads, [("idle-owner".to_string(), 4), ("cpu-quota".to_string(), 16)]);
    let quota = &report.scenario_setup["cpu-quota"];
    assert!(quota.starts_with("in cgroup ") || quota.starts_with("pinned to CPU"), "{quota}");
    assert_eq!(bench_cgroups(), before, "the scenario's cgroup outlived the bench");
}

/// `bench --rwlock`: threads × writes × loads, every arm interleaved; the tables carry
/// the per-mode columns, and the CSV and JSON every run and every cell.
fn bench_rwlock_grid_writes_csv_and_json() {
    let dir = scratch();
    let (csv, json) = (dir.path().join("rw.csv"), dir.path().join("rw.json"));
    let o = run(&[
        "bench",
        "--rwlock",
        "--threads",
        "1,2",
        "--writes",
        "0,50",
        "--loads",
        "0,10",
        "--runs",
        "2",
        "--duration-ms",
        "50",
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    o.assert_success("bench --rwlock (reduced)");
    for want in [
        "none", "glibc", "futex", "spin", "kops/s", "vs none", "vs glibc", "paired", "bound", "fair r",
        "fair w", "p99 w", "50%",
    ] {
        assert!(o.stdout.contains(want), "bench --rwlock table lacks {want:?}:\n{}", o.stdout);
    }
    assert!(!o.stdout.contains("glibc-adaptive"), "{}", o.stdout);
    // 2 threads × 2 write fractions × 2 loads × 4 arms × 2 runs.
    let runs = 2 * 2 * 2 * 4 * 2;
    assert_eq!(o.stderr.lines().filter(|l| l.starts_with('[')).count(), runs, "{}", o.stderr);

    let text = std::fs::read_to_string(&csv).unwrap();
    let rows = csv_rows(&text);
    assert_eq!(rows.len(), runs + 1, "{text}");
    let header = &rows[0];
    let col =
        |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    for r in &rows[1..] {
        assert_eq!(r.len(), header.len(), "ragged CSV row {r:?}");
        assert_eq!((r[col("ok")].as_str(), r[col("data_ok")].as_str()), ("1", "1"), "{r:?}");
        let writes: f64 = r[col("writes_pct")].parse().unwrap();
        let done: u64 = r[col("writes")].parse().unwrap();
        assert_eq!(done == 0, writes == 0.0, "{r:?}");
        assert_eq!(r[col("bound_ops_per_s")].is_empty(), r[col("load")] == "0", "{r:?}");
    }

    let report: RwBenchReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.tool, "spinmutex bench --rwlock");
    assert_eq!(report.config.strategies, ["none", "glibc", "futex", "spin"]);
    assert_eq!(
        (report.config.writes_pct.as_slice(), report.config.kind.as_str()),
        (&[0.0, 50.0][..], "reader")
    );
    assert_eq!(report.runs.len(), runs);
    assert_eq!(report.cells.len(), 2 * 2 * 2 * 4, "one summary per cell and arm");
    for r in &report.runs {
        let w = r.workload.as_ref().expect("a workload line");
        for key in
            ["ops_per_s", "reads", "writes", "read_wait_p99_ns", "write_wait_p99_ns", "fairness", "pause_ns"]
        {
            assert!(w.contains_key(key), "run without {key}: {r:?}");
        }
    }
    for c in &report.cells {
        assert_eq!(c.versus.ratio_to_reference.is_none(), c.strategy == "glibc", "{c:?}");
        assert_eq!(c.versus.paired_ratio.is_none(), c.strategy == "glibc", "{c:?}");
        assert_eq!(c.versus.ratio_to_none.is_none(), c.strategy == "none", "{c:?}");
        assert_eq!(c.bound_ops_per_s.is_none(), c.load == 0, "{c:?}");
        assert_eq!(c.write_share.is_none(), c.writes_pct == 0.0, "{c:?}");
        assert_eq!(c.write_wait_p99_ns.is_none(), c.writes_pct == 0.0, "{c:?}");
        assert!(c.median_ops_per_s.is_some_and(|v| v > 0.0) && c.read_wait_p99_ns.is_some(), "{c:?}");
    }
}

fn bench_with_a_hog_cleans_up() {
    // The hogs inherit the environment: a marker finds them in /proc afterwards.
    let marker = format!("SPINMUTEX_CLI_TEST_HOG_MARKER=hog-{}", std::process::id());
    let mut cmd = spinmutex(&[
        "bench",
        "--threads",
        "2",
        "--loads",
        "1",
        "--strategies",
        "glibc,spin",
        "--runs",
        "1",
        "--duration-ms",
        "30",
        "--hogs",
        "1",
    ]);
    let (k, v) = marker.split_once('=').unwrap();
    cmd.env(k, v);
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("bench --hogs 1");
    assert!(o.stdout.contains("1 hog(s)"), "{}", o.stdout);
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(env) = std::fs::read(entry.path().join("environ")) {
            if env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()) {
                left.push(entry.file_name());
            }
        }
    }
    assert!(left.is_empty(), "processes of the bench still running: {left:?}");
}

// ---------------------------------------------------------------- completions, man page

fn completions_and_man_pages_generate() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = assert_cmd::Command::new(bin()).args(["completions", shell]).assert().success();
        let text = String::from_utf8_lossy(&o.get_output().stdout).into_owned();
        assert!(text.contains("spinmutex") && text.contains("spin-limit"), "{shell}:\n{text}");
    }
    let o = assert_cmd::Command::new(bin()).arg("man").assert().success();
    let page = String::from_utf8_lossy(&o.get_output().stdout).into_owned();
    assert!(page.contains(".TH spinmutex 1") && page.contains("bench"), "{page}");
    for sub in ["run", "ab", "bench", "report"] {
        let o = assert_cmd::Command::new(bin()).args(["man", sub]).assert().success();
        let page = String::from_utf8_lossy(&o.get_output().stdout).into_owned();
        assert!(page.contains(&format!(".TH spinmutex-{sub} 1")), "{sub}: {page}");
    }
    let o = assert_cmd::Command::new(bin()).args(["man", "ab"]).assert().success();
    assert!(String::from_utf8_lossy(&o.get_output().stdout).contains("spin\\-limit"));
}

// ---------------------------------------------------------------- install.sh

fn install_script_places_bin_and_lib_and_the_command_finds_the_lib() {
    let dir = scratch();
    let prefix = dir.path().join("prefix");
    let from = bin().parent().unwrap().to_path_buf();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/install.sh");
    let mut cmd = preloaded("sh", None);
    cmd.arg(&script).arg("--prefix").arg(&prefix).arg("--from").arg(&from);
    run_bounded(cmd, LIMIT).assert_success("install.sh");
    let bin = prefix.join("bin/spinmutex");
    let lib = prefix.join("lib/libspinmutex.so");
    assert!(bin.is_file() && lib.is_file());
    let mut cmd = preloaded(&bin, None);
    cmd.args(["run", "--", "sh", "-c", "echo \"$LD_PRELOAD\""]);
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("installed spinmutex run");
    assert_eq!(o.stdout.trim(), lib.canonicalize().unwrap().display().to_string());
}

// ---------------------------------------------------------------- format checks

// ---------------------------------------------------------------- interruption

/// What became of a command interrupted by a signal.
struct Interrupted {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// From the signal to the command's exit.
    exit_after: Duration,
    /// Processes the command started that were still alive once it had exited.
    left: Vec<String>,
}

/// The processes (other than zombies) whose environment holds `tag`.
fn processes_tagged(tag: &str) -> Vec<String> {
    let needle = format!("CLI_TEST_TAG={tag}\0");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let path = entry.path();
        let Ok(environ) = std::fs::read(path.join("environ")) else { continue };
        if !environ.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        let state = stat.rsplit(") ").next().and_then(|rest| rest.split(' ').next()).unwrap_or("");
        if state != "Z" && state != "X" {
            found.push(stat);
        }
    }
    found
}

/// Runs the command with `args`, waits until its stderr satisfies `ready`, sends it
/// `signal` and waits for it to exit. Every process it starts inherits a tag in its
/// environment, by which any left alive afterwards is found.
fn interrupt(args: &[&str], ready: impl Fn(&str) -> bool, signal: libc_signal::Signal) -> Interrupted {
    use std::process::Stdio;
    let dir = scratch();
    let tag = format!("{}-{:?}", std::process::id(), std::time::Instant::now());
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut cmd = spinmutex(args);
    cmd.env("CLI_TEST_TAG", &tag)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = cmd.spawn().unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let start = std::time::Instant::now();
    while !ready(&read(&err)) {
        assert!(start.elapsed() < LIMIT, "never ready:\n{}", read(&err));
        assert!(child.try_wait().unwrap().is_none(), "exited before the signal:\n{}", read(&err));
        std::thread::sleep(Duration::from_millis(20));
    }
    libc_signal::send(child.id(), signal);
    let sent = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if sent.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("still running 30 s after the signal:\n{}", read(&err));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let exit_after = sent.elapsed();
    // SIGKILL'ed processes vanish a moment after the signal: allow them that moment.
    let mut left = processes_tagged(&tag);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        left = processes_tagged(&tag);
    }
    Interrupted { code: status.code(), stdout: read(&out), stderr: read(&err), exit_after, left }
}

/// Signals sent to the command under test.
mod libc_signal {
    #[derive(Clone, Copy)]
    pub enum Signal {
        Hup = libc::SIGHUP as isize,
        Int = libc::SIGINT as isize,
        Term = libc::SIGTERM as isize,
    }

    pub fn send(pid: u32, sig: Signal) {
        // SAFETY: kill(2) only sends a signal to our own child.
        assert_eq!(unsafe { libc::kill(pid as i32, sig as i32) }, 0);
    }
}

/// `ab` interrupted: the running program and its whole process group stop (here a
/// shell and its background child), the runs finished so far are reported and saved,
/// marked, and ab exits with 128 + the signal number.
fn ab_interrupted_stops_the_program_and_keeps_the_finished_runs() {
    let dir = scratch();
    let (json, count) = (dir.path().join("ab.json"), dir.path().join("count"));
    // The first two runs are quick; the third hangs, with a grandchild.
    let script = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n + 1)) > {c}; \
         if [ $n -ge 2 ]; then sleep 60 & sleep 60; fi",
        c = count.display()
    );
    for (signal, status, name) in
        [(libc_signal::Signal::Int, 130, "SIGINT"), (libc_signal::Signal::Term, 143, "SIGTERM")]
    {
        let _ = std::fs::remove_file(&count);
        let args = [
            "ab",
            "-n",
            "3",
            "--warmup",
            "0",
            "-s",
            "glibc,spin",
            "--without-none",
            "--json",
            json.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ];
        let o = interrupt(&args, |err| err.contains("spin run 1/3"), signal);
        assert_eq!(o.code, Some(status), "{}", o.stderr);
        assert!(o.left.is_empty(), "processes outlived ab: {:?}", o.left);
        assert!(o.exit_after < Duration::from_secs(10), "took {:?} to stop", o.exit_after);
        assert!(o.stderr.contains(&format!("interrupted by {name}")), "{}", o.stderr);
        assert!(o.stdout.contains("wall time"), "no report of the finished runs:\n{}", o.stdout);
        let report: AbReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(report.interrupted.as_deref(), Some(name));
        assert_eq!(report.runs.len(), 2, "{:?}", report.runs);
        assert!(report.runs.iter().all(|r| r.ok));
    }
}

/// `run` interrupted stops the program's whole group, SIGKILL when it ignores SIGTERM.
fn run_interrupted_stops_the_program_and_its_group() {
    let o = interrupt(
        &["run", "--", "sh", "-c", "trap '' TERM; echo started >&2; sleep 60 & sleep 60"],
        |err| err.contains("started"),
        libc_signal::Signal::Term,
    );
    assert_eq!(o.code, Some(143), "{}", o.stderr);
    assert!(o.left.is_empty(), "processes outlived run: {:?}", o.left);
    assert!(o.stderr.contains("interrupted by SIGTERM"), "{}", o.stderr);
    assert!(o.exit_after < Duration::from_secs(10), "took {:?} to stop", o.exit_after);
}

/// `bench --rwlock` and `bench` interrupted: the workload stops at once, the finished
/// runs are reported and saved, marked, and the exit status is 128 + the signal.
fn bench_interrupted_reports_the_finished_runs() {
    let dir = scratch();
    let json = dir.path().join("b.json");
    let common = ["--threads", "1", "--loads", "0", "--runs", "4", "--duration-ms", "3000", "-s", "spin"];
    let mut rw = vec!["bench", "--rwlock", "--writes", "10", "--json", json.to_str().unwrap()];
    rw.extend(common);
    let o = interrupt(&rw, |err| err.contains("run 1/4"), libc_signal::Signal::Hup);
    assert_eq!(o.code, Some(129), "{}", o.stderr);
    assert!(o.left.is_empty(), "processes outlived bench: {:?}", o.left);
    assert!(o.exit_after < Duration::from_secs(2), "took {:?}: the workload ran on", o.exit_after);
    assert!(o.stderr.contains("interrupted by SIGHUP"), "{}", o.stderr);
    let report: RwBenchReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.interrupted.as_deref(), Some("SIGHUP"));
    assert_eq!(report.runs.len(), 1);

    let mut grid = vec!["bench", "--layout", "alone", "--without-control", "--scenarios", "none", "--json"];
    grid.push(json.to_str().unwrap());
    grid.extend(common);
    let o = interrupt(&grid, |err| err.contains("run 1/4"), libc_signal::Signal::Int);
    assert_eq!(o.code, Some(130), "{}", o.stderr);
    assert!(o.left.is_empty(), "processes outlived bench: {:?}", o.left);
    assert!(o.exit_after < Duration::from_secs(2), "took {:?}: the workload ran on", o.exit_after);
    let report: BenchReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.interrupted.as_deref(), Some("SIGINT"));
}

// ---------------------------------------------------------------- memory

/// Runs the command with `args` to its end; its exit status and the peak resident set
/// of it and its descendants (the largest one), in bytes, from wait4(2).
fn run_measuring_rss(args: &[&str]) -> (Option<i32>, u64, String) {
    use std::process::Stdio;
    let dir = scratch();
    let err = dir.path().join("err");
    let mut cmd = spinmutex(args);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(std::fs::File::create(&err).unwrap());
    // Waited for below with wait4(2), which std's Child does not offer.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().unwrap();
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 waits for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, usage.ru_maxrss as u64 * 1024, std::fs::read_to_string(&err).unwrap_or_default())
}

/// A program that writes 1 GiB leaves ab's memory flat: its stdout is discarded, or
/// read through the metric one bounded line at a time; its stderr is kept to its last
/// line.
fn ab_memory_stays_flat_however_much_the_program_writes() {
    let limit = 50 << 20;
    let plain = ["ab", "-n", "2", "--warmup", "0", "-s", "glibc", "--without-none", "--", "sh", "-c"];
    let (code, rss, err) = run_measuring_rss(&[&plain[..], &["head -c 1G /dev/zero"]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(rss < limit, "ab reached {} MB for a program writing 1 GiB", rss >> 20);
    let script = "echo ops=5; head -c 512M /dev/zero; head -c 512M /dev/zero >&2";
    let (code, rss, err) =
        run_measuring_rss(&[&plain[..8], &["--metric", r"ops=(\d+)", "--", "sh", "-c", script]].concat());
    assert_eq!(code, Some(0), "the metric is still found: {err}");
    assert!(rss < limit, "ab reached {} MB reading 1 GiB through --metric", rss >> 20);
}

/// --show-output passes the program's output through; without it ab prints none of it.
fn ab_show_output_passes_the_output_through() {
    let base = ["ab", "-n", "2", "--warmup", "0", "-s", "glibc", "--without-none"];
    // (The words printed are not in the command line, which the report repeats.)
    let script = "x=said; echo $x-on-stdout; echo $x-on-stderr >&2";
    let o = run(&[&base[..], &["--", "sh", "-c", script]].concat());
    o.assert_success("ab");
    assert!(!o.stdout.contains("said-on") && !o.stderr.contains("said-on"), "{o:?}");
    let o = run(&[&base[..], &["--show-output", "--", "sh", "-c", script]].concat());
    o.assert_success("ab --show-output");
    assert_eq!(o.stdout.matches("said-on-stdout").count(), 2, "{}", o.stdout);
    assert_eq!(o.stderr.matches("said-on-stderr").count(), 2, "{}", o.stderr);
}

/// RFC 4180 CSV rows (quoted fields may hold commas, quotes and newlines).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(!quoted, "unterminated quoted CSV field");
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// Well-formed-ish XML: one root `<svg ...>` ... `</svg>`, and every element closed
/// in order.
fn xml_check(text: &str) {
    let t = text.trim();
    assert!(t.starts_with("<svg") && t.ends_with("</svg>"), "not an SVG document");
    let mut stack: Vec<String> = Vec::new();
    let mut rest = t;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').expect("unterminated tag") + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let top = stack.pop().unwrap_or_else(|| panic!("stray </{name}>"));
            assert_eq!(top, name.trim(), "mismatched closing tag");
        } else if !tag.ends_with('/') && !tag.starts_with('?') && !tag.starts_with('!') {
            let name = tag.split_whitespace().next().expect("tag name").to_string();
            stack.push(name);
        }
        assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
    }
    assert!(stack.is_empty(), "unclosed elements {stack:?}");
    assert!(!t.contains("NaN") && !t.contains("inf"), "non-finite number in the SVG");
}

/// `spinmutex ab ... 2>&1 | head -1`: the command ends quietly when its reader leaves,
/// as other command-line tools do (killed by SIGPIPE), never with a panic or an abort.
fn output_into_a_reader_that_leaves_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = std::io::pipe().expect("make a pipe");
    let mut cmd = spinmutex(&["ab", "-s", "glibc", "-s", "spin", "-n", "3", "--", "true"]);
    cmd.stdout(writer.try_clone().expect("dup the pipe")).stderr(writer);
    let mut child = cmd.spawn().expect("start spinmutex ab");
    drop(cmd); // the parent's copies of the write end
    let mut first = String::new();
    BufReader::new(reader).read_line(&mut first).expect("read a line");
    // The read end is closed now, as `head -1` closes it.
    let status = child.wait().expect("wait for ab");
    assert!(
        status.success() || status.signal() == Some(libc::SIGPIPE),
        "ab ended with {status} (first line {first:?}) when its reader left; 134 is an abort after a panic"
    );
}

fn main() -> std::process::ExitCode {
    let static_prog = || Need::Built(ab_tiny_static(), "glibc's static libraries (libc6-dev)");
    let mut suite = Suite::new();
    tests!(
        suite,
        output_into_a_reader_that_leaves_ends_quietly,
        help_lists_every_subcommand_and_the_shared_settings,
        bad_arguments_exit_2_with_a_message,
        bad_settings_exit_2_before_anything_runs,
        fair_takes_its_value,
        run_passes_exit_status_through,
        run_reports_a_signal_and_exits_128_plus_signo,
        run_preloads_the_library_and_sets_the_settings,
        run_stats_prints_the_named_report_after_exit,
        run_appends_to_an_existing_ld_preload,
        run_strategy_none_does_not_preload,
        run_missing_command_exits_127,
        library_location_comes_from_spinmutex_lib,
        ab_compares_in_words_and_writes_json,
        ab_reports_failed_runs_and_keeps_times_without_a_metric,
        ab_stops_when_every_warmup_fails,
        metric_direction_from_flags_units_or_unknown,
        bench_reduced_grid_writes_csv_json_svg,
        bench_scenarios_run_and_clean_up,
        bench_rwlock_grid_writes_csv_and_json,
        bench_with_a_hog_cleans_up,
        completions_and_man_pages_generate,
        ab_interrupted_stops_the_program_and_keeps_the_finished_runs,
        the_hot_lock_is_ranked_by_time_waited,
        help_and_messages_speak_of_what_applies,
        errors_name_the_real_cause,
        report_fails_loudly_on_a_file_without_reports_or_events,
        run_stats_file_dash_pipes_the_report_alone,
        ab_json_dash_writes_json_alone_on_stdout,
        classes_are_labelled_by_their_real_maker_and_caller,
        run_interrupted_stops_the_program_and_its_group,
        bench_interrupted_reports_the_finished_runs,
        ab_memory_stays_flat_however_much_the_program_writes,
        ab_show_output_passes_the_output_through,
        install_script_places_bin_and_lib_and_the_command_finds_the_lib,
    );
    suite.needs(
        "run_of_a_static_program_fails_with_the_causes",
        &[static_prog()],
        run_of_a_static_program_fails_with_the_causes,
    );
    suite.needs(
        "run_stats_of_a_static_program_names_only_the_cause",
        &[static_prog()],
        run_stats_of_a_static_program_names_only_the_cause,
    );
    suite.needs(
        "ab_of_a_static_program_fails_with_the_causes",
        &[static_prog()],
        ab_of_a_static_program_fails_with_the_causes,
    );
    suite.run()
}
