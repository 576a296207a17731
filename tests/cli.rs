//! Integration tests of the `spinmutex` command: `run`, `ab`, `bench`, help, bad
//! arguments and the install script.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{bin_path, c_test, lib_path, preloaded, run_bounded, Outcome};

const LIMIT: Duration = Duration::from_secs(180);

/// The command with a clean environment (no SPINMUTEX_*, no LD_PRELOAD).
fn spinmutex(args: &[&str]) -> Command {
    let mut cmd = preloaded(bin_path(), None);
    cmd.args(args);
    cmd
}

fn run(args: &[&str]) -> Outcome {
    run_bounded(spinmutex(args), LIMIT)
}

fn code(o: &Outcome) -> Option<i32> {
    o.status.and_then(|s| s.code())
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinmutex-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

// ---------------------------------------------------------------- help and usage

#[test]
fn help_for_every_subcommand() {
    let o = run(&["--help"]);
    o.assert_success("--help");
    for sub in ["run", "ab", "bench"] {
        assert!(o.stdout.contains(&format!("spinmutex {sub}")), "main help lacks {sub}:\n{}", o.stdout);
        let o = run(&[sub, "--help"]);
        o.assert_success(&format!("{sub} --help"));
        assert!(o.stdout.contains("Usage: spinmutex"), "{sub} --help:\n{}", o.stdout);
        let o = run(&["help", sub]);
        o.assert_success(&format!("help {sub}"));
    }
    run(&["--version"]).assert_success("--version");
}

#[test]
fn bad_arguments_exit_2_with_a_message() {
    let cases: &[&[&str]] = &[
        &[],
        &["frobnicate"],
        &["run"],
        &["run", "--strategy"],
        &["run", "--no-such-option", "--", "true"],
        &["run", "--env", "NOT_A_PAIR", "--", "true"],
        &["ab"],
        &["ab", "-n", "0", "--", "true"],
        &["ab", "-n", "many", "--", "true"],
        &["ab", "-s", "glibc-adaptive", "--", "true"],
        &["ab", "--metric", "a|b", "--", "true"],
        &["bench", "--threads", "0"],
        &["bench", "--threads", "1,,2"],
        &["bench", "--loads", "x"],
        &["bench", "--runs", "0"],
        &["bench", "--duration-ms", "-5"],
        &["bench", "stray"],
        &["bench", "--quick=yes"],
        &["help", "nothing"],
    ];
    for args in cases {
        let o = run(args);
        assert_eq!(code(&o), Some(2), "{args:?} should exit 2: {o:?}");
        assert!(
            o.stderr.starts_with("spinmutex") && o.stderr.len() > 20,
            "{args:?}: unclear message {:?}",
            o.stderr
        );
    }
}

// ---------------------------------------------------------------- run

#[test]
fn run_passes_exit_status_through() {
    for status in [0, 1, 7, 255] {
        let o = run(&["run", "--", "sh", "-c", &format!("exit {status}")]);
        assert_eq!(code(&o), Some(status), "{o:?}");
    }
}

#[test]
fn run_reports_a_signal_and_exits_128_plus_signo() {
    let o = run(&["run", "--", "sh", "-c", "kill -KILL $$"]);
    assert_eq!(code(&o), Some(128 + 9), "{o:?}");
    assert!(o.stderr.contains("signal 9") && o.stderr.contains("SIGKILL"), "{}", o.stderr);
    let o = run(&["run", "--", "sh", "-c", "kill -TERM $$"]);
    assert_eq!(code(&o), Some(128 + 15), "{o:?}");
    assert!(o.stderr.contains("SIGTERM"), "{}", o.stderr);
}

#[test]
fn run_preloads_the_library_and_sets_the_knobs() {
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
        "4",
        "--stats",
        "--env",
        "EXTRA=x=y",
        "--",
        "sh",
        "-c",
        "echo \"$LD_PRELOAD|$SPINMUTEX_STRATEGY|$SPINMUTEX_SPIN_LIMIT|$SPINMUTEX_MAX_SPINNERS|\
         $SPINMUTEX_HANDOFF_AFTER|$SPINMUTEX_HANDOFF_WAIT|$SPINMUTEX_STATS|$EXTRA\"",
    ]);
    o.assert_success("run with knobs");
    let want = format!("{}|spin|7|2|3|4|1|x=y", lib.display());
    assert_eq!(o.stdout.lines().next(), Some(want.as_str()), "stderr: {}", o.stderr);
}

#[test]
fn run_appends_to_an_existing_ld_preload() {
    let lib = lib_path().canonicalize().unwrap();
    // libc.so.6 is already loaded by everything, so preloading it is harmless.
    let mut cmd = spinmutex(&["run", "--", "sh", "-c", "echo \"$LD_PRELOAD\""]);
    cmd.env("LD_PRELOAD", "libc.so.6");
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("run with LD_PRELOAD set");
    assert_eq!(o.stdout.trim(), format!("libc.so.6:{}", lib.display()));
}

#[test]
fn run_strategy_none_does_not_preload() {
    let o = run(&["run", "--strategy", "none", "--", "sh", "-c", "echo \"[$LD_PRELOAD]\""]);
    o.assert_success("run --strategy none");
    assert_eq!(o.stdout.trim(), "[]");
}

#[test]
fn run_missing_command_exits_127() {
    let o = run(&["run", "--", "/nonexistent/program"]);
    assert_eq!(code(&o), Some(127), "{o:?}");
    assert!(o.stderr.contains("/nonexistent/program"));
}

#[test]
fn library_location_comes_from_spinmutex_lib() {
    let mut cmd = spinmutex(&["run", "--", "true"]);
    cmd.env("SPINMUTEX_LIB", "/nonexistent/libspinmutex.so");
    let o = run_bounded(cmd, LIMIT);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("SPINMUTEX_LIB"), "{}", o.stderr);

    let mut cmd = spinmutex(&["run", "--", "sh", "-c", "echo \"$LD_PRELOAD\""]);
    cmd.env("SPINMUTEX_LIB", lib_path());
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("SPINMUTEX_LIB set");
    assert_eq!(o.stdout.trim(), lib_path().canonicalize().unwrap().display().to_string());
}

// ---------------------------------------------------------------- ab

fn ab_tiny() -> PathBuf {
    let p = c_test("ab_tiny");
    assert!(p.exists(), "{} was not built", p.display());
    p
}

#[test]
fn ab_compares_strategies_with_a_metric() {
    let dir = temp_dir("ab");
    let json = dir.join("ab.json");
    let prog = ab_tiny();
    let o = run(&[
        "ab",
        "-n",
        "2",
        "--warmup",
        "1",
        "-s",
        "glibc",
        "-s",
        "spin,none",
        "--metric",
        r"ops/s=([0-9.]+)",
        "--json",
        json.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "20000",
    ]);
    o.assert_success("ab -n 2");
    for want in ["wall time", "CPU time", "metric", "spin / glibc", "none / glibc", "95% CI", "significant"] {
        assert!(o.stdout.contains(want), "ab output lacks {want:?}:\n{}", o.stdout);
    }
    // Progress on stderr: 3 strategies × (1 warm-up + 2 runs).
    assert_eq!(o.stderr.lines().filter(|l| l.starts_with('[')).count(), 9, "{}", o.stderr);
    let text = std::fs::read_to_string(&json).unwrap();
    json_check::validate(&text).unwrap_or_else(|e| panic!("invalid JSON ({e}):\n{text}"));
    assert_eq!(text.matches("\"ok\": true").count(), 6, "{text}");
    assert!(text.contains("\"ratio_to_first\""));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn ab_reports_failed_runs_and_leaves_them_out() {
    let prog = ab_tiny();
    let o = run(&["ab", "-n", "2", "--warmup", "0", "--", prog.to_str().unwrap(), "1000", "3"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stdout.contains("failed run(s)") && o.stdout.contains("exit status 3"), "{}", o.stdout);
    assert!(o.stdout.contains("0/2"), "{}", o.stdout);
    assert!(o.stderr.contains("FAILED"), "{}", o.stderr);

    // A metric that matches nothing is a failed run too.
    let o = run(&[
        "ab",
        "-n",
        "2",
        "--warmup",
        "0",
        "--metric",
        "nomatch=(\\d+)",
        "--",
        prog.to_str().unwrap(),
        "1000",
    ]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stdout.contains("matched nothing"), "{}", o.stdout);
}

// ---------------------------------------------------------------- bench

#[test]
fn bench_reduced_grid_writes_valid_csv_json_svg() {
    let dir = temp_dir("bench");
    let (csv, json, svg) = (dir.join("b.csv"), dir.join("b.json"), dir.join("b.svg"));
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
        "threads",
        "load",
        "glibc",
        "glibc-adaptive",
        "futex",
        "spin",
        "kops/s",
        "bound",
        "fair",
        "wait p99",
        "wait max",
    ] {
        assert!(o.stdout.contains(want), "bench table lacks {want:?}:\n{}", o.stdout);
    }
    // 2 threads × 2 loads × 4 strategies × 2 runs.
    let runs = 2 * 2 * 4 * 2;
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
    for r in &rows[1..] {
        assert_eq!(r[col("ok")], "1", "{r:?}");
        assert_eq!(r[col("counter_ok")], "1", "{r:?}");
        let ops: f64 = r[col("ops_per_s")].parse().unwrap();
        assert!(ops > 0.0, "{r:?}");
        let load: u32 = r[col("load")].parse().unwrap();
        assert_eq!(r[col("bound_ops_per_s")].is_empty(), load == 0, "{r:?}");
    }

    let text = std::fs::read_to_string(&json).unwrap();
    json_check::validate(&text).unwrap_or_else(|e| panic!("invalid JSON ({e}):\n{text}"));
    assert_eq!(text.matches("\"median_ops_per_s\"").count(), 2 * 2 * 4, "one summary per cell and strategy");
    assert_eq!(text.matches("\"wait_max_ns\"").count(), 2 * 2 * 4 * 2 + 2 * 2 * 4, "every run and summary");
    assert!(text.contains("\"nproc\""));

    let text = std::fs::read_to_string(&svg).unwrap();
    xml_check(&text);
    assert!(text.contains("load 0") && text.contains("load 10") && text.contains("bound"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
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

// ---------------------------------------------------------------- install.sh

#[test]
fn install_script_places_bin_and_lib_and_the_command_finds_the_lib() {
    let dir = temp_dir("install");
    let prefix = dir.join("prefix");
    let from = bin_path().parent().unwrap().to_path_buf();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install.sh");
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
    let _ = std::fs::remove_dir_all(dir);
}

// ---------------------------------------------------------------- format checks

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

/// A minimal JSON validator (RFC 8259 grammar, no semantic checks).
mod json_check {
    pub fn validate(text: &str) -> Result<(), String> {
        let b = text.as_bytes();
        let mut p = 0;
        value(b, &mut p)?;
        ws(b, &mut p);
        if p != b.len() {
            return Err(format!("trailing data at byte {p}"));
        }
        Ok(())
    }

    fn ws(b: &[u8], p: &mut usize) {
        while *p < b.len() && matches!(b[*p], b' ' | b'\t' | b'\n' | b'\r') {
            *p += 1;
        }
    }

    fn expect(b: &[u8], p: &mut usize, lit: &str) -> Result<(), String> {
        if b[*p..].starts_with(lit.as_bytes()) {
            *p += lit.len();
            Ok(())
        } else {
            Err(format!("expected {lit} at byte {p}"))
        }
    }

    fn value(b: &[u8], p: &mut usize) -> Result<(), String> {
        ws(b, p);
        match b.get(*p) {
            Some(b'{') => {
                *p += 1;
                ws(b, p);
                if b.get(*p) == Some(&b'}') {
                    *p += 1;
                    return Ok(());
                }
                loop {
                    ws(b, p);
                    string(b, p)?;
                    ws(b, p);
                    expect(b, p, ":")?;
                    value(b, p)?;
                    ws(b, p);
                    match b.get(*p) {
                        Some(b',') => *p += 1,
                        Some(b'}') => {
                            *p += 1;
                            return Ok(());
                        }
                        _ => return Err(format!("expected , or }} at byte {p}")),
                    }
                }
            }
            Some(b'[') => {
                *p += 1;
                ws(b, p);
                if b.get(*p) == Some(&b']') {
                    *p += 1;
                    return Ok(());
                }
                loop {
                    value(b, p)?;
                    ws(b, p);
                    match b.get(*p) {
                        Some(b',') => *p += 1,
                        Some(b']') => {
                            *p += 1;
                            return Ok(());
                        }
                        _ => return Err(format!("expected , or ] at byte {p}")),
                    }
                }
            }
            Some(b'"') => string(b, p),
            Some(b't') => expect(b, p, "true"),
            Some(b'f') => expect(b, p, "false"),
            Some(b'n') => expect(b, p, "null"),
            Some(c) if *c == b'-' || c.is_ascii_digit() => number(b, p),
            _ => Err(format!("unexpected byte at {p}")),
        }
    }

    fn string(b: &[u8], p: &mut usize) -> Result<(), String> {
        expect(b, p, "\"")?;
        while let Some(&c) = b.get(*p) {
            *p += 1;
            match c {
                b'"' => return Ok(()),
                b'\\' => match b.get(*p) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => *p += 1,
                    Some(b'u')
                        if b.len() >= *p + 5 && b[*p + 1..*p + 5].iter().all(u8::is_ascii_hexdigit) =>
                    {
                        *p += 5
                    }
                    _ => return Err(format!("bad escape at byte {p}")),
                },
                c if c < 0x20 => return Err(format!("control character in string at byte {p}")),
                _ => {}
            }
        }
        Err("unterminated string".into())
    }

    fn number(b: &[u8], p: &mut usize) -> Result<(), String> {
        let start = *p;
        if b.get(*p) == Some(&b'-') {
            *p += 1;
        }
        let digits = |p: &mut usize| {
            let s = *p;
            while b.get(*p).is_some_and(u8::is_ascii_digit) {
                *p += 1;
            }
            *p - s
        };
        if b.get(*p) == Some(&b'0') {
            *p += 1;
        } else if digits(p) == 0 {
            return Err(format!("bad number at byte {start}"));
        }
        if b.get(*p) == Some(&b'.') {
            *p += 1;
            if digits(p) == 0 {
                return Err(format!("bad fraction at byte {start}"));
            }
        }
        if matches!(b.get(*p), Some(b'e' | b'E')) {
            *p += 1;
            if matches!(b.get(*p), Some(b'+' | b'-')) {
                *p += 1;
            }
            if digits(p) == 0 {
                return Err(format!("bad exponent at byte {start}"));
            }
        }
        Ok(())
    }

    #[test]
    fn validator_works() {
        assert!(validate(r#"{"a": [1, -2.5e3, true, null, "x\n\u00e9"], "b": {}}"#).is_ok());
        for bad in [r#"{"a": 1,}"#, "[1 2]", "01", r#"{"a" 1}"#, "nan", "[1.]", "\"\u{1}\""] {
            assert!(validate(bad).is_err(), "{bad:?}");
        }
    }
}
