//! The command as a whole: help that lists what applies, usage errors that exit 2 before
//! anything runs, messages that name the real cause, completions and man pages, the
//! install script, and output into a reader that leaves.

use super::*;

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

pub(crate) fn help_lists_every_subcommand_and_the_shared_settings() {
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

pub(crate) fn bad_arguments_exit_2_with_a_message() {
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
pub(crate) fn bad_settings_exit_2_before_anything_runs() {
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
pub(crate) fn fair_takes_its_value() {
    let o = run(&["run", "--fair", "1", "-v", "--", "sh", "-c", "echo \"$SPINMUTEX_FAIR\""]);
    o.assert_success("run --fair 1");
    assert_eq!(o.stdout.trim(), "1");
    assert!(o.stderr.contains("fair=1"), "{}", o.stderr);
}

/// `report` on a file with nothing it reads fails with one line that says why: the
/// library's text report (naming the JSON to write instead), an empty file, a file of
/// something else.
pub(crate) fn report_fails_loudly_on_a_file_without_reports_or_events() {
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
pub(crate) fn errors_name_the_real_cause() {
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

/// Help and messages speak of what applies: every strategy in the help, `-n` below
/// what the statistics need refused with how many, usage lines that name the command,
/// and each strategy's settings line without the settings it does not use.
pub(crate) fn help_and_messages_speak_of_what_applies() {
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
    // `-s`, as in `ab` and `bench`.
    let o = run(&["run", "-v", "-s", "auto", "--", "true"]);
    o.assert_success("run -s auto");
    assert!(o.stderr.contains("loaded in pid") && o.stderr.contains("strategy=auto "), "{}", o.stderr);
}

pub(crate) fn completions_and_man_pages_generate() {
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

pub(crate) fn install_script_places_bin_and_lib_and_the_command_finds_the_lib() {
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

/// `spinmutex ab ... 2>&1 | head -1`: the command ends quietly when its reader leaves,
/// as other command-line tools do (killed by SIGPIPE), never with a panic or an abort.
pub(crate) fn output_into_a_reader_that_leaves_ends_quietly() {
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
