//! The test harness of every integration test binary (`harness = false`): libtest-mimic
//! runs the tests, and a test whose external program is missing is skipped, visibly.
//!
//! A test declares what it needs ([`Need`]). When something is missing the test is
//! listed as ignored, and after libtest's own summary a line counts the skipped tests
//! by reason, such as
//! `skipped 3: sysbench not installed (2), libjemalloc2 not installed (1)`.
//! `cargo test` runs each test binary on its own, so each also leaves its skips in
//! `target/<profile>/spinmutex-skips/<binary>.txt`, marked with the run (the `cargo`
//! process that started it), and closes with the total over the binaries of the same
//! run so far and the `apt-get install` line that would run them: the last binary's
//! line is the total of the whole `cargo test`.
//! With `SPINMUTEX_TESTS_REQUIRE_ALL=1` (set by `.ci/run`, which installs everything)
//! a missing program fails its test instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use libtest_mimic::{Arguments, Failed, Trial};

/// Adds test functions with no outside needs, each under its own name:
/// `tests!(suite, first_test, second_test)`.
#[allow(unused_macros)] // not every test binary has tests without needs
macro_rules! tests {
    ($suite:expr, $($f:ident),+ $(,)?) => {
        $($suite.test(stringify!($f), $f);)+
    };
}
#[allow(unused_imports)]
pub(crate) use tests;

/// Something outside the repository a test needs.
pub enum Need {
    /// A program on PATH (or in /usr/bin, /usr/sbin), and the Debian package with it.
    Program(&'static str, &'static str),
    /// A file, and the Debian package with it.
    File(&'static str, &'static str),
    /// A program the build script compiles from c-tests/ only when what it needs is
    /// installed, and what that is, ending with the Debian package that brings it in
    /// parentheses when there is one: `sqlite3.h (libsqlite3-dev)`, `the ThreadSanitizer
    /// runtime (package libtsan2)`.
    Built(PathBuf, &'static str),
}

impl Need {
    /// Why the need is not met, as a skip reason; None when it is.
    fn missing(&self) -> Option<String> {
        match self {
            Need::Program(name, package) => {
                program(name).is_none().then(|| format!("{name} not installed (package {package})"))
            }
            Need::File(path, package) => {
                (!Path::new(path).exists()).then(|| format!("{package} not installed ({path} is missing)"))
            }
            Need::Built(path, what) => (!path.exists())
                .then(|| format!("{what} not installed, so {} was not built", file_name(path))),
        }
    }
}

impl Need {
    /// The Debian package that meets the need, if one does.
    fn package(&self) -> Option<&'static str> {
        match self {
            Need::Program(_, package) | Need::File(_, package) => Some(package),
            Need::Built(_, what) => package_in(what),
        }
    }
}

/// The package named in the last parentheses of `what` (`... (libc6-dev)`, `...
/// (package libtsan2)`); None when they hold anything else, such as a command.
pub fn package_in(what: &'static str) -> Option<&'static str> {
    let inner = what.strip_suffix(')')?.rsplit_once('(')?.1;
    let name = inner.strip_prefix("package ").unwrap_or(inner);
    let debian = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c);
    (!name.is_empty() && name.chars().all(debian)).then_some(name)
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// A program found on PATH, in /usr/bin or in /usr/sbin.
pub fn program(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// True when `SPINMUTEX_TESTS_REQUIRE_ALL` is set (to anything but "", "0" or "false").
pub fn require_all() -> bool {
    std::env::var("SPINMUTEX_TESTS_REQUIRE_ALL").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// The tests of one binary.
#[derive(Default)]
pub struct Suite {
    trials: Vec<Trial>,
    /// (test, reason, packages that would run it) of every test skipped.
    skipped: Vec<(String, String, Vec<&'static str>)>,
}

impl Suite {
    pub fn new() -> Suite {
        Suite::default()
    }

    /// A test with no outside needs. It fails by panicking.
    pub fn test(&mut self, name: &str, f: fn()) -> &mut Self {
        self.needs(name, &[], f)
    }

    /// A test that runs only when every need is met.
    pub fn needs(&mut self, name: &str, needs: &[Need], f: fn()) -> &mut Self {
        let missing: Vec<String> = needs.iter().filter_map(Need::missing).collect();
        if missing.is_empty() {
            self.trials.push(Trial::test(name, move || {
                f();
                Ok(())
            }));
            return self;
        }
        let reason = missing.join("; ");
        let packages = needs.iter().filter(|n| n.missing().is_some()).filter_map(Need::package).collect();
        if require_all() {
            let msg = format!("{reason}, and SPINMUTEX_TESTS_REQUIRE_ALL is set");
            self.trials.push(Trial::test(name, move || Err(Failed::from(msg))));
        } else {
            let msg = format!("skipped: {reason}");
            self.trials.push(Trial::test(name, move || Err(Failed::from(msg))).with_ignored_flag(true));
            self.skipped.push((name.to_string(), reason, packages));
        }
        self
    }

    /// A test that does not apply to this run, for `reason`: listed as ignored and
    /// counted with the skips.
    pub fn skip(&mut self, name: &str, reason: &str) -> &mut Self {
        let msg = format!("skipped: {reason}");
        self.trials.push(Trial::test(name, move || Err(Failed::from(msg))).with_ignored_flag(true));
        self.skipped.push((name.to_string(), reason.to_string(), Vec::new()));
        self
    }

    /// Runs the selected tests, then prints the closing line of skips.
    pub fn run(self) -> ExitCode {
        let args = Arguments::from_args();
        let conclusion = libtest_mimic::run(&args, self.trials);
        if !args.list && !args.ignored && !args.include_ignored {
            let matches =
                |name: &str, pattern: &str| if args.exact { name == pattern } else { name.contains(pattern) };
            let mut by_reason: BTreeMap<&str, usize> = BTreeMap::new();
            let mut skips = Vec::new();
            for (name, reason, packages) in &self.skipped {
                let selected = args.filter.as_deref().is_none_or(|f| matches(name, f))
                    && !args.skip.iter().any(|s| matches(name, s));
                if selected {
                    *by_reason.entry(reason).or_default() += 1;
                    skips.push(packages.clone());
                }
            }
            let total: usize = by_reason.values().sum();
            if total == 0 {
                println!("skipped 0: every program the tests use is installed");
            } else {
                let reasons: Vec<String> = by_reason.iter().map(|(r, n)| format!("{r} ({n})")).collect();
                println!("skipped {total}: {}", reasons.join(", "));
            }
            // The total needs every binary's file; a failure to keep it costs only the line.
            if let Some(line) = record_and_total(&skips) {
                println!("{line}");
            }
        }
        conclusion.exit_code()
    }
}

/// Which `cargo test` (or shell) ran this binary: its parent's pid and start time,
/// which together never name another process.
fn run_id() -> Option<String> {
    let fields = |stat: &str| -> Vec<String> {
        // After the command name in parentheses (which may hold spaces): field 3 on.
        stat.rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().map(String::from).collect())
            .unwrap_or_default()
    };
    let own = fields(&std::fs::read_to_string("/proc/self/stat").ok()?);
    let ppid = own.get(1)?.clone();
    let parent = fields(&std::fs::read_to_string(format!("/proc/{ppid}/stat")).ok()?);
    Some(format!("{ppid}:{}", parent.get(19)?))
}

/// Writes this binary's skips (`skips`: the packages that would run each, none when
/// none would) to its file, then reads the files of the same run: the closing line,
/// `skipped 7 in all test binaries so far: run `apt-get install ...` to run them`.
fn record_and_total(skips: &[Vec<&str>]) -> Option<String> {
    let dir = super::target_dir().join("spinmutex-skips");
    std::fs::create_dir_all(&dir).ok()?;
    let exe = std::env::current_exe().ok()?;
    // `core-0123abcd`: the test's name without cargo's hash.
    let stem = exe.file_name()?.to_str()?;
    let binary = stem.rsplit_once('-').map_or(stem, |(name, _)| name);
    let run = run_id()?;
    let mut text = format!("run {run}\n");
    for packages in skips {
        text.push_str(&format!("skip {}\n", packages.join(" ")));
    }
    std::fs::write(dir.join(format!("{binary}.txt")), text).ok()?;

    let files =
        std::fs::read_dir(&dir).ok()?.flatten().filter_map(|e| std::fs::read_to_string(e.path()).ok());
    Some(closing_line(&run, files))
}

/// The closing line over the skip files (`files`: their contents) of the run `run`;
/// files of other runs are left out.
pub fn closing_line(run: &str, files: impl Iterator<Item = String>) -> String {
    let (mut binaries, mut total, mut unpackaged) = (0, 0, 0);
    let mut packages: std::collections::BTreeSet<String> = Default::default();
    for text in files {
        let mut lines = text.lines();
        if lines.next() != Some(format!("run {run}").as_str()) {
            continue; // left by an earlier run
        }
        binaries += 1;
        for line in lines.filter_map(|l| l.strip_prefix("skip")) {
            total += 1;
            packages.extend(line.split_whitespace().map(String::from));
            if line.trim().is_empty() {
                unpackaged += 1;
            }
        }
    }
    let binaries = match binaries {
        1 => "the 1 test binary".to_string(),
        n => format!("the {n} test binaries"),
    };
    let so_far = format!("skipped {total} in {binaries} of this run so far");
    match (total, packages.is_empty()) {
        (0, _) => so_far,
        (_, true) => format!("{so_far}: no package would run them (see the reasons above)"),
        (_, false) => {
            let list: Vec<String> = packages.into_iter().collect();
            let others = match unpackaged {
                0 => String::new(),
                n => format!(" ({n} of them skipped for other reasons, given above)"),
            };
            format!("{so_far}: run `apt-get install {}` to run them{others}", list.join(" "))
        }
    }
}
