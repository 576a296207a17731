//! The test harness of every integration test binary (`harness = false`): libtest-mimic
//! runs the tests, and a test whose external program is missing is skipped, visibly.
//!
//! A test declares what it needs ([`Need`]). When something is missing the test is
//! listed as ignored, and after libtest's own summary one closing line counts the
//! skipped tests by reason, such as
//! `skipped 3: sysbench not installed (2), libjemalloc2 not installed (1)`.
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
    /// installed, and what that is (`sqlite3.h (libsqlite3-dev)`).
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
    /// (test, reason) of every test skipped for a missing need.
    skipped: Vec<(String, String)>,
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
        if require_all() {
            let msg = format!("{reason}, and SPINMUTEX_TESTS_REQUIRE_ALL is set");
            self.trials.push(Trial::test(name, move || Err(Failed::from(msg))));
        } else {
            let msg = format!("skipped: {reason}");
            self.trials.push(Trial::test(name, move || Err(Failed::from(msg))).with_ignored_flag(true));
            self.skipped.push((name.to_string(), reason));
        }
        self
    }

    /// A test that does not apply to this run, for `reason`: listed as ignored and
    /// counted with the skips.
    pub fn skip(&mut self, name: &str, reason: &str) -> &mut Self {
        let msg = format!("skipped: {reason}");
        self.trials.push(Trial::test(name, move || Err(Failed::from(msg))).with_ignored_flag(true));
        self.skipped.push((name.to_string(), reason.to_string()));
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
            for (name, reason) in &self.skipped {
                let selected = args.filter.as_deref().is_none_or(|f| matches(name, f))
                    && !args.skip.iter().any(|s| matches(name, s));
                if selected {
                    *by_reason.entry(reason).or_default() += 1;
                }
            }
            let total: usize = by_reason.values().sum();
            if total == 0 {
                println!("skipped 0: every program the tests use is installed");
            } else {
                let reasons: Vec<String> = by_reason.iter().map(|(r, n)| format!("{r} ({n})")).collect();
                println!("skipped {total}: {}", reasons.join(", "));
            }
        }
        conclusion.exit_code()
    }
}
