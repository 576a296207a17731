//! `spinmutex run`: the exit status passed through, the library preloaded with the
//! settings asked for, and the statistics report named after the program exited.

use super::*;

pub(crate) fn run_passes_exit_status_through() {
    for status in [0, 1, 7, 255] {
        let o = run(&["run", "--", "sh", "-c", &format!("exit {status}")]);
        assert_eq!(code(&o), Some(status), "{o:?}");
    }
}

pub(crate) fn run_reports_a_signal_and_exits_128_plus_signo() {
    let o = run(&["run", "--", "sh", "-c", "kill -KILL $$"]);
    assert_eq!(code(&o), Some(128 + 9), "{o:?}");
    assert!(o.stderr.contains("signal 9") && o.stderr.contains("SIGKILL"), "{}", o.stderr);
    let o = run(&["run", "--", "sh", "-c", "kill -TERM $$"]);
    assert_eq!(code(&o), Some(128 + 15), "{o:?}");
    assert!(o.stderr.contains("SIGTERM"), "{}", o.stderr);
}

pub(crate) fn run_preloads_the_library_and_sets_the_settings() {
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
pub(crate) fn run_stats_prints_the_named_report_after_exit() {
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

    // A relative --stats-file is the command's, from its own directory, wherever the
    // program runs: the program changes directory first.
    let mut cmd = spinmutex(&[
        "run",
        "--stats",
        "--stats-file",
        "relative.json",
        "--",
        "sh",
        "-c",
        "cd / && exec \"$0\"",
        program.to_str().unwrap(),
    ]);
    cmd.current_dir(tmp.path());
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("run --stats --stats-file relative.json");
    assert_eq!(o.stderr.matches("== Lock statistics of pid ").count(), 1, "{}", o.stderr);
    assert!(tmp.path().join("relative.json").exists(), "{}", o.stderr);
}

/// A report cut short (its process killed while writing it) is not silently left out:
/// run says how many lines were not whole reports, counting only this run's part of a
/// kept file.
pub(crate) fn run_stats_says_when_a_report_was_cut() {
    let program = c_test("stats_sites");
    let tmp = scratch();
    let kept = tmp.path().join("kept.json");
    std::fs::write(&kept, "{\"pid\": 1, \"cut by an earlier run\n").unwrap();
    let cut_one = "printf '{\"pid\": 2, \"cut\\n' >> \"$SPINMUTEX_STATS_FILE\" && exec \"$0\"";
    let o = run(&[
        "run",
        "--stats",
        "--stats-file",
        kept.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        cut_one,
        program.to_str().unwrap(),
    ]);
    o.assert_success("run --stats with a cut line");
    assert_eq!(o.stderr.matches("== Lock statistics of pid ").count(), 1, "{}", o.stderr);
    let want = format!("1 line of {} is not a whole statistics report", kept.display());
    assert!(o.stderr.contains(&want), "no {want:?} in:\n{}", o.stderr);

    // The only report cut: no "locked no mutex", which would be wrong.
    let cut_all = "\"$0\" && f=\"$SPINMUTEX_STATS_FILE\" && head -c 200 \"$f\" > \"$f.cut\" && \
                   echo >> \"$f.cut\" && mv \"$f.cut\" \"$f\"";
    let mut cmd = spinmutex(&["run", "--stats", "--", "sh", "-c", cut_all, program.to_str().unwrap()]);
    cmd.env("TMPDIR", tmp.path());
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("run --stats, its report cut");
    assert!(!o.stderr.contains("no statistics"), "{}", o.stderr);
    assert!(
        o.stderr.contains("1 line of the statistics file is not a whole statistics report"),
        "{}",
        o.stderr
    );
}

pub(crate) fn run_appends_to_an_existing_ld_preload() {
    let lib = lib_path().canonicalize().unwrap();
    // libc.so.6 is already loaded by everything, so preloading it is harmless.
    let mut cmd = spinmutex(&["run", "--", "sh", "-c", "echo \"$LD_PRELOAD\""]);
    cmd.env("LD_PRELOAD", "libc.so.6");
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("run with LD_PRELOAD set");
    assert_eq!(o.stdout.trim(), format!("libc.so.6:{}", lib.display()));
}

pub(crate) fn run_strategy_none_does_not_preload() {
    let o = run(&["run", "--strategy", "none", "--", "sh", "-c", "echo \"[$LD_PRELOAD]\""]);
    o.assert_success("run --strategy none");
    assert_eq!(o.stdout.trim(), "[]");
}

pub(crate) fn run_missing_command_exits_127() {
    let o = run(&["run", "--", "/nonexistent/program"]);
    assert_eq!(code(&o), Some(127), "{o:?}");
    assert!(o.stderr.contains("/nonexistent/program"));
}

pub(crate) fn library_location_comes_from_spinmutex_lib() {
    let mut cmd = spinmutex(&["run", "--", "true"]);
    cmd.env("SPINMUTEX_LIB", "/nonexistent/libspinmutex.so");
    let o = run_bounded(cmd, LIMIT);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("SPINMUTEX_LIB"), "{}", o.stderr);
}

/// A static program cannot load the library: `run` says so and fails.
pub(crate) fn run_of_a_static_program_fails_with_the_causes() {
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
pub(crate) fn the_hot_lock_is_ranked_by_time_waited() {
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
pub(crate) fn classes_are_labelled_by_their_real_maker_and_caller() {
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
pub(crate) fn run_stats_file_dash_pipes_the_report_alone() {
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

/// `--stats-file` naming a FIFO: the library writes the report into it for its reader,
/// and run, which cannot read it back (it would wait for a writer forever), says so and
/// exits. The FIFO's read end is opened first, without blocking, as a reader would be.
pub(crate) fn run_stats_file_that_is_a_fifo_is_not_read_back() {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("stats.fifo");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0, "mkfifo");
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .expect("open the FIFO");
    let program = c_test("stats_sites");
    let o = run(&["run", "--stats", "--stats-file", fifo.to_str().unwrap(), "--", program.to_str().unwrap()]);
    o.assert_success("run --stats --stats-file FIFO");
    assert!(o.stderr.contains("is not a regular file, so the statistics"), "{}", o.stderr);
    let mut report = String::new();
    let _ = reader.read_to_string(&mut report);
    assert!(report.contains("\"classes\""), "the FIFO's reader got no report: {report:?}");
}

/// `run --stats` of a static program says only that the library did not load.
pub(crate) fn run_stats_of_a_static_program_names_only_the_cause() {
    let o = run(&["run", "--stats", "--", ab_tiny_static().to_str().unwrap(), "1000"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("statically linked"), "{}", o.stderr);
    assert!(!o.stderr.contains("no statistics"), "{}", o.stderr);
}
