//! Real programs under the library: sysbench, stress-ng, pigz, zstd, xz, python3, the
//! JVM, fio (a process-shared rwlock around every I/O), three programs of the test tree
//! (SQLite in serialized mode, jemalloc co-preloaded, a C++ program on the standard
//! library's mutexes), and python3, Node.js and the JVM stopped by a signal.
//!
//! Every program runs first without the preload, then under `LD_PRELOAD` with each
//! strategy. A check fails on a wrong output, a non-zero exit or a hang (every run is
//! bounded by [`HANG_GUARD`]). Every preloaded run is made with
//! `LD_DEBUG=bindings`, and the dynamic loader's log must show the program's own
//! object (the binary, or the library that does its locking: liblzma, libsqlite3,
//! jemalloc, libstdc++) binding `pthread_mutex_lock` to `libspinmutex.so`, and no object
//! of the process binding `pthread_mutex_{lock,trylock,unlock}` anywhere else. For
//! lazily bound objects (python3, jemalloc, the test tree's programs, libstdc++) a
//! binding is logged only when the function is first called, so the log also proves
//! the calls; the distribution's binaries and libraries are linked with `-z now`, so
//! there it proves that every call made through their GOT reaches the library.
//!
//! A test whose program is not installed is skipped, and counted in the closing line
//! of the run; with `SPINMUTEX_TESTS_REQUIRE_ALL=1` (`.ci/run` installs them all) it
//! fails instead (see tests/common/harness.rs).
//!
//! This file holds what every check shares (finding programs, the binding log, running
//! under each strategy); each module holds the checks of one program or kind of
//! program, and `main` lists them all.

#[path = "../common/mod.rs"]
mod common;

mod benchmarks;
mod checker;
mod compressors;
mod endings;
mod fio;
mod java;
mod python;
mod statistics;
mod test_tree;

use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::harness::{self, tests, Need, Suite};
use common::{c_test, lib_path, preloaded, run_bounded, scratch, stats, Outcome, STRATEGIES};

use benchmarks::*;
use checker::*;
use compressors::*;
use endings::*;
use fio::*;
use java::*;
use python::*;
use statistics::*;
use test_tree::*;

/// Only a hang guard: every run here takes a few seconds at most.
const HANG_GUARD: Duration = Duration::from_secs(120);

/// Size of the generated input of the compressors.
const INPUT_BYTES: usize = 24 << 20;

const JEMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
const PYTHON: &str = "/usr/bin/python3";

// ---------------------------------------------------------------------------------------
// Finding programs and scratch directories
// ---------------------------------------------------------------------------------------

/// A program on PATH; the test declared it as a [`Need`], so it is there.
fn tool(name: &str) -> PathBuf {
    harness::program(name).unwrap_or_else(|| panic!("{name} is not installed"))
}

/// A fresh temporary directory, removed when dropped.
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = tempfile::Builder::new().prefix(&format!("spinmutex-real-{tag}-")).tempdir();
        Scratch(dir.expect("create a temporary directory"))
    }

    fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.0.path().join(name)
    }

    /// An empty subdirectory (replacing any earlier one of that name).
    fn subdir(&self, name: &str) -> PathBuf {
        let dir = self.join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        dir
    }
}

// ---------------------------------------------------------------------------------------
// Proof of interposition: the dynamic loader's binding log
// ---------------------------------------------------------------------------------------

/// The symbols whose bindings must all go to the library.
const LOCK_SYMBOLS: &[&str] = &["pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_unlock"];

/// One "binding file FROM [n] to TO [n]: normal symbol `SYM'" line of `LD_DEBUG=bindings`.
#[derive(Debug)]
struct Binding {
    from: String,
    to: String,
    symbol: String,
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Every binding logged in `dir` (one `ld.<pid>` file per process).
///
/// The loader writes a binding's message in pieces (the line, then its version and the
/// newline), so two threads binding at the same moment can leave two messages on one
/// line: every "binding file " starts a message, wherever it is.
fn bindings(dir: &Path) -> Vec<Binding> {
    let mut out = Vec::new();
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let text =
            fs::read(entry.path()).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        for message in text.split("binding file ").skip(1) {
            let Some((from, rest)) = message.split_once(" [") else { continue };
            let Some((_, rest)) = rest.split_once("] to ") else { continue };
            let Some((to, rest)) = rest.split_once(" [") else { continue };
            let Some((_, rest)) = rest.split_once("symbol `") else { continue };
            let Some((symbol, _)) = rest.split_once('\'') else { continue };
            out.push(Binding { from: from.to_string(), to: to.to_string(), symbol: symbol.to_string() });
        }
    }
    out
}

/// What the binding log of a run must show: an object (by the start of its file name)
/// that binds one of `symbols` to the library.
struct MustBind {
    object: &'static str,
    symbols: &'static [&'static str],
}

const fn must_bind(object: &'static str) -> MustBind {
    MustBind { object, symbols: &["pthread_mutex_lock"] }
}

/// Checks the binding log in `dir` of the run `what`: each of `musts` is there, and no
/// object but the library itself binds a lock symbol to anything but the library.
fn check_interposed(what: &str, dir: &Path, musts: &[MustBind]) -> Result<(), String> {
    let log = bindings(dir);
    let ours = |b: &Binding| file_name(&b.to) == "libspinmutex.so";
    for must in musts {
        let found = log.iter().any(|b| {
            file_name(&b.from).starts_with(must.object)
                && must.symbols.contains(&b.symbol.as_str())
                && ours(b)
        });
        if !found {
            let seen: Vec<String> = log
                .iter()
                .filter(|b| b.symbol.starts_with("pthread_mutex"))
                .map(|b| format!("{} -> {}: {}", b.from, b.to, b.symbol))
                .collect();
            return Err(format!(
                "{what}: the loader's log shows no binding of {:?} from {}* to libspinmutex.so, so the \
                 program never reached the library.\nmutex bindings seen ({} files in {}):\n{}",
                must.symbols,
                must.object,
                fs::read_dir(dir).map(|d| d.count()).unwrap_or(0),
                dir.display(),
                seen.join("\n")
            ));
        }
    }
    for b in &log {
        if LOCK_SYMBOLS.contains(&b.symbol.as_str()) && file_name(&b.from) != "libspinmutex.so" && !ours(b) {
            return Err(format!("{what}: {} binds {} to {}, not to libspinmutex.so", b.from, b.symbol, b.to));
        }
    }
    Ok(())
}

/// [`check_interposed`], panicking with its message.
fn assert_interposed(what: &str, dir: &Path, musts: &[MustBind]) {
    if let Err(e) = check_interposed(what, dir, musts) {
        panic!("{e}");
    }
}

/// Turns on the binding log of `cmd`, into a fresh directory `dir`.
fn log_bindings(cmd: &mut Command, dir: &Path) {
    cmd.env("LD_DEBUG", "bindings").env("LD_DEBUG_OUTPUT", dir.join("ld"));
}

// ---------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------

/// "no preload" or "under STRATEGY", for messages.
fn label(strategy: Option<&str>) -> String {
    match strategy {
        None => "without the preload".to_string(),
        Some(s) => format!("under {s}"),
    }
}

/// The runs of every check: first without the preload, then under each strategy.
fn modes() -> impl Iterator<Item = Option<&'static str>> {
    std::iter::once(None).chain(STRATEGIES.iter().copied().map(Some))
}

/// Runs `cmd` (built by [`preloaded`]) with a binding log when it is preloaded, checks
/// that it exits 0 in time and that the log proves interposition. Returns its output.
fn run_checked(
    what: &str,
    scratch: &Scratch,
    strategy: Option<&str>,
    mut cmd: Command,
    musts: &[MustBind],
) -> Outcome {
    let what = format!("{what} {}", label(strategy));
    let log_dir = scratch.subdir("ld-debug");
    if strategy.is_some() {
        log_bindings(&mut cmd, &log_dir);
    }
    let start = Instant::now();
    let outcome = run_bounded(cmd, HANG_GUARD);
    eprintln!("{what}: {:.2} s", start.elapsed().as_secs_f64());
    outcome.assert_success(&what);
    if strategy.is_some() {
        assert_interposed(&what, &log_dir, musts);
    }
    outcome
}

/// Like [`run_checked`], with the program's stdout written to the file `stdout`.
fn run_checked_to_file(
    what: &str,
    scratch: &Scratch,
    strategy: Option<&str>,
    mut cmd: Command,
    stdout: &Path,
    musts: &[MustBind],
) {
    let what = format!("{what} {}", label(strategy));
    let log_dir = scratch.subdir("ld-debug");
    if strategy.is_some() {
        log_bindings(&mut cmd, &log_dir);
    }
    let file = File::create(stdout).unwrap_or_else(|e| panic!("create {}: {e}", stdout.display()));
    cmd.stdin(Stdio::null()).stdout(file).stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: spawn {cmd:?}: {e}"));
    let mut err = child.stderr.take().expect("stderr");
    let err_reader = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let status = wait_within_guard(&mut child, start);
    let stderr = err_reader.join().expect("stderr reader");
    eprintln!("{what}: {:.2} s", start.elapsed().as_secs_f64());
    assert!(
        status.is_some_and(|s| s.success()),
        "{what}: status {status:?} (None: still running after {HANG_GUARD:?}, killed)\n--- stderr\n{stderr}"
    );
    if strategy.is_some() {
        assert_interposed(&what, &log_dir, musts);
    }
}

/// Waits for `child`, started at `start`; past [`HANG_GUARD`] kills its process group
/// (the child leads one: see `preloaded`) and returns None.
fn wait_within_guard(child: &mut std::process::Child, start: Instant) -> Option<std::process::ExitStatus> {
    loop {
        match child.try_wait().expect("try_wait") {
            Some(status) => return Some(status),
            None if start.elapsed() > HANG_GUARD => {
                // SAFETY: kill(2) only sends a signal.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            None => thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Panics unless the files `a` and `b` hold the same bytes.
fn assert_same_bytes(what: &str, a: &Path, b: &Path) {
    let x = fs::read(a).unwrap_or_else(|e| panic!("read {}: {e}", a.display()));
    let y = fs::read(b).unwrap_or_else(|e| panic!("read {}: {e}", b.display()));
    if x != y {
        let at = x.iter().zip(&y).position(|(p, q)| p != q).unwrap_or(x.len().min(y.len()));
        panic!(
            "{what}: {} ({} bytes) and {} ({} bytes) differ, first at byte {at}",
            a.display(),
            x.len(),
            b.display(),
            y.len()
        );
    }
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    suite.needs(
        "sysbench_mutex_and_threads",
        &[Need::Program("sysbench", "sysbench")],
        sysbench_mutex_and_threads,
    );
    suite.needs(
        "stress_ng_mutex_and_pthread",
        &[Need::Program("stress-ng", "stress-ng")],
        stress_ng_mutex_and_pthread,
    );
    suite.needs("pigz_round_trips", &[Need::Program("pigz", "pigz")], pigz_round_trips);
    suite.needs("zstd_round_trips", &[Need::Program("zstd", "zstd")], zstd_round_trips);
    suite.needs("xz_round_trips", &[Need::Program("xz", "xz-utils")], xz_round_trips);
    suite.needs("python_threads", &[Need::File(PYTHON, "python3")], python_threads);
    suite.needs("java_threads", &java_needs(), java_threads);
    suite.needs(
        "sqlite_serialized_threads",
        &[Need::Built(c_test("real_sqlite"), "sqlite3.h (libsqlite3-dev)")],
        sqlite_serialized_threads,
    );
    suite.needs("jemalloc_co_preloaded", &[Need::File(JEMALLOC, "libjemalloc2")], jemalloc_co_preloaded);
    suite.needs(
        "fio_with_a_process_shared_rwlock_around_every_io",
        &[Need::File(FIO, "fio")],
        fio_with_a_process_shared_rwlock_around_every_io,
    );
    suite.needs(
        "fio_rwlock_is_the_top_rwlock_class_under_statistics",
        &[Need::File(FIO, "fio")],
        fio_rwlock_is_the_top_rwlock_class_under_statistics,
    );
    suite.needs(
        "compressor_statistics",
        &[
            Need::Program("pigz", "pigz"),
            Need::Program("zstd", "zstd"),
            Need::Program("xz", "xz-utils"),
            command_need(),
        ],
        compressor_statistics,
    );
    suite.needs(
        "sysbench_statistics",
        &[Need::Program("sysbench", "sysbench"), command_need()],
        sysbench_statistics,
    );
    suite.needs(
        "sqlite_statistics",
        &[Need::Built(c_test("real_sqlite"), "sqlite3.h (libsqlite3-dev)"), command_need()],
        sqlite_statistics,
    );
    suite.needs("python_statistics", &[Need::File(PYTHON, "python3"), command_need()], python_statistics);
    let [javac, java] = java_needs();
    suite.needs("java_statistics", &[javac, java, command_need()], java_statistics);
    suite.needs("python_ended_by_signals", &[Need::File(PYTHON, "python3")], python_ended_by_signals);
    suite.needs("node_ended_by_signals", &[Need::Program("node", "nodejs")], node_ended_by_signals);
    suite.needs("java_ended_by_signals", &java_needs(), java_ended_by_signals);
    tests!(
        suite,
        cpp_standard_library,
        binding_log_lines_are_parsed,
        binding_check_rejects_a_run_without_the_preload,
        input_generator_is_deterministic_and_compressible,
    );
    suite.run()
}
