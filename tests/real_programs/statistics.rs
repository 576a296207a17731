//! Statistics: each real program's hot lock, named after the program exited.
//!
//! Every program runs under SPINMUTEX_STATS=json and =1. Both reports' rows add up to
//! their totals exactly, and the top class by contended acquisitions has some whenever
//! the totals do. Then `spinmutex report` names the top class's call sites from the
//! files on this machine. How far it can is a property of the files, and asserted as
//! such: Debian's pigz, zstd, xz, sysbench and python3 are stripped (pigz and zstd, PIEs
//! that export no function, cannot name a frame of their own without their -dbgsym
//! package, which is not installed), but liblzma's, libsqlite3's, python3's and
//! sysbench's exported functions have names, the test tree's programs have DWARF, and
//! glibc's frames are named by libc6-dbg's files under /usr/lib/debug/.build-id when it
//! is installed. Whatever has a debug file there must be named from it; a frame with no
//! name must be told as module+offset with the reason and the hint to get names, and the
//! row must name the first caller that has one.

use super::*;

/// The `spinmutex` command of this build.
pub(crate) fn spinmutex_command() -> PathBuf {
    common::target_dir().join("spinmutex")
}

/// What the statistics tests need besides their program.
pub(crate) fn command_need() -> Need {
    Need::Built(spinmutex_command(), "the spinmutex command (cargo build -p spinmutex-cli)")
}

/// How far the files of a stock Debian 12 machine name a program's hot lock.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Naming {
    /// Some frame of the top class is named by a function.
    SomeFrame,
    /// Maybe none: every frame of the program's own is in a stripped executable that
    /// exports no function.
    MaybeNone,
}

struct StatsCase {
    what: &'static str,
    program: PathBuf,
    args: Vec<String>,
    /// Run through `sh -c` (output to /dev/null): the shell, which locks nothing, must
    /// print no report.
    shell: bool,
    naming: Naming,
}

/// The debug file of build-id `id` that libc6-dbg and -dbgsym packages install.
fn installed_debug_file(id: &str) -> Option<PathBuf> {
    let p = PathBuf::from(format!("/usr/lib/debug/.build-id/{}/{}.debug", id.get(..2)?, id.get(2..)?));
    p.is_file().then_some(p)
}

/// Runs the case with SPINMUTEX_STATS=`format` into a fresh `file`; returns the file's text.
fn stats_run(case: &StatsCase, format: &str, file: &Path) -> String {
    let _ = fs::remove_file(file);
    let mut cmd = if case.shell {
        let mut c = preloaded("sh", Some("spin"));
        c.arg("-c").arg("\"$0\" \"$@\" > /dev/null").arg(&case.program).args(&case.args);
        c
    } else {
        let mut c = preloaded(&case.program, Some("spin"));
        c.args(&case.args);
        c
    };
    cmd.env("SPINMUTEX_STATS", format).env("SPINMUTEX_STATS_FILE", file);
    let what = format!("{} under SPINMUTEX_STATS={format}", case.what);
    let start = Instant::now();
    run_bounded(cmd, HANG_GUARD).assert_success(&what);
    eprintln!("{what}: {:.2} s", start.elapsed().as_secs_f64());
    fs::read_to_string(file).unwrap_or_else(|e| panic!("{what}: no report in {}: {e}", file.display()))
}

pub(crate) fn spinmutex_report(args: &[&str]) -> String {
    let mut cmd = Command::new(spinmutex_command());
    cmd.arg("report").args(args).env_remove("LD_PRELOAD");
    let o = run_bounded(cmd, HANG_GUARD);
    o.assert_success(&format!("spinmutex report {args:?}"));
    o.stdout
}

fn check_statistics(case: &StatsCase) {
    let scratch = Scratch::new("stats");
    let file = scratch.join("stats.json");
    let what = case.what;

    // The library's own text report: its rows add up, and the top row is contended if
    // anything is.
    let text = stats_run(case, "1", &file);
    let rows = common::stats::text_rows_add_up(&text).unwrap_or_else(|e| panic!("{what}: {e}"));
    let totals = rows.iter().find(|r| r.0 == "=").unwrap();
    assert_eq!(
        text.matches("lock statistics for pid").count(),
        1,
        "{what}: one report, from the program:\n{text}"
    );
    if totals.3 > 0 {
        assert!(rows[0].0 == "1" && rows[0].3 > 0, "{what}: the top class is not contended:\n{text}");
    }

    // The JSON report: the same, and named by `spinmutex report`.
    let json = stats_run(case, "json", &file);
    let reports: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {l}")))
        .collect();
    assert_eq!(reports.len(), 1, "{what}: one report, from the program:\n{json}");
    let raw = &reports[0];
    common::stats::json_rows_add_up(raw).unwrap_or_else(|e| panic!("{what}: {e}:\n{raw:#}"));
    let contended = |v: &serde_json::Value| v["counters"]["contended"].as_u64().unwrap();
    if contended(&raw["totals"]) > 0 {
        assert!(contended(&raw["classes"][0]) > 0, "{what}: the top class is not contended:\n{raw:#}");
    }

    let named: serde_json::Value =
        serde_json::from_str(&spinmutex_report(&["--json", file.to_str().unwrap()])).expect("report --json");
    let text = spinmutex_report(&[file.to_str().unwrap()]);
    let class = &named["statistics"][0]["classes"][0];
    let frames = class["frames"].as_array().unwrap();
    assert!(!frames.is_empty(), "{what}: no frames:\n{class:#}");
    let row = text.lines().find(|l| l.starts_with("1 ")).unwrap_or_else(|| panic!("{what}: no row:\n{text}"));
    let name = |f: &serde_json::Value| f["function"].as_str().map(str::to_string);
    // Whatever has a debug file installed is named from it.
    for f in frames {
        if let Some(debug) = f["build_id"].as_str().and_then(installed_debug_file) {
            assert_eq!(
                f["named_by"],
                "dwarf",
                "{what}: {} has {} yet is not named by it: {f:#}",
                f["module"],
                debug.display()
            );
        }
    }
    let first = &frames[0];
    match name(first) {
        Some(function) => assert!(
            row.contains(&format!(" at {function}")),
            "{what}: the row does not name {function}:\n{text}"
        ),
        None => {
            let module = first["module"].as_str().unwrap();
            let base = module.rsplit('/').next().unwrap();
            assert!(
                row.contains(&format!(" at {base}+{}", first["offset"].as_str().unwrap())),
                "{what}: the row does not give module+offset:\n{text}"
            );
            let problem = first["problem"].as_str().unwrap_or_else(|| panic!("{what}: no reason: {first:#}"));
            assert!(problem.contains(module), "{what}: {problem}");
            assert!(text.contains("To get names: "), "{what}: no hint:\n{text}");
            // The row names the first caller that has a name.
            if let Some(caller) = frames.iter().find_map(name) {
                assert!(row.contains(&caller), "{what}: the row does not walk up to {caller}:\n{text}");
            }
            // Nothing was missed: the module's debug file is not installed.
            if let Some(id) = first["build_id"].as_str() {
                assert!(
                    installed_debug_file(id).is_none(),
                    "{what}: {module}'s debug file is installed: {first:#}"
                );
            }
        }
    }
    if case.naming == Naming::SomeFrame {
        assert!(
            frames.iter().any(|f| name(f).is_some()),
            "{what}: no frame of the top class is named:\n{class:#}"
        );
    }
    eprintln!("{what}: {row}");
}

/// The compressors on a generated input, with their threads at full width.
pub(crate) fn compressor_statistics() {
    let scratch = Scratch::new("stats-input");
    let input = scratch.join("input.txt");
    write_input(&input, 8 << 20);
    let input = input.display().to_string();
    let case = |what, name: &str, args: &[&str], naming| StatsCase {
        what,
        program: tool(name),
        args: args.iter().map(|s| s.to_string()).chain([input.clone()]).collect(),
        shell: true,
        naming,
    };
    for c in [
        case("pigz -p 8", "pigz", &["-p", "8", "-c"], Naming::MaybeNone),
        case("zstd -T0", "zstd", &["-q", "-T0", "-B1048576", "-c"], Naming::MaybeNone),
        case("xz -T0", "xz", &["-q", "-T0", "-0", "-c"], Naming::SomeFrame),
    ] {
        check_statistics(&c);
    }
}

pub(crate) fn sysbench_statistics() {
    for (what, args) in [
        (
            "sysbench threads",
            "threads --threads=4 --thread-locks=2 --thread-yields=10 --events=4000 --time=0 run",
        ),
        ("sysbench mutex", "mutex --threads=4 --mutex-num=4 --mutex-locks=200000 --mutex-loops=50 run"),
    ] {
        check_statistics(&StatsCase {
            what,
            program: tool("sysbench"),
            args: args.split(' ').map(str::to_string).collect(),
            shell: false,
            naming: Naming::SomeFrame,
        });
    }
}

pub(crate) fn sqlite_statistics() {
    let scratch = Scratch::new("stats-sqlite");
    let db = scratch.subdir("db");
    check_statistics(&StatsCase {
        what: "real_sqlite",
        program: c_test("real_sqlite"),
        args: vec![db.display().to_string()],
        shell: false,
        naming: Naming::SomeFrame,
    });
}

pub(crate) fn python_statistics() {
    check_statistics(&StatsCase {
        what: "python3",
        program: PathBuf::from(PYTHON),
        args: vec!["-I".into(), "-c".into(), PYTHON_SCRIPT.into()],
        shell: false,
        naming: Naming::SomeFrame,
    });
}

pub(crate) fn java_statistics() {
    let scratch = Scratch::new("stats-java");
    let classes = compiled_hammer(&scratch);
    check_statistics(&StatsCase {
        what: "java",
        program: tool("java"),
        args: hammer_args(&classes, 100_000),
        shell: false,
        naming: Naming::SomeFrame,
    });
}
