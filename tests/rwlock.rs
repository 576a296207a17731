//! Reader-writer locks: each C/C++ program `c-tests/rwlock_*.c` and
//! `cxx_shared_mutex.cpp` checks one behaviour of the `pthread_rwlock_*` API and exits
//! non-zero with a message on stderr when it does not hold. Every program runs under
//! every strategy with the library preloaded, and again without any preload (the
//! baseline), which proves that each expectation is glibc's own. The library's own
//! strategies also run them with spinning off and with long spins. Then: the symbols
//! (bindings, imports), and the benchmark workload. (The real program that takes a
//! process-shared rwlock around every I/O, fio, is in tests/real_programs/fio.rs.)

mod common;

use common::harness::{tests, Suite};
use common::{c_test, lib_path, preloaded, run_bounded, Outcome, STRATEGIES};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Bound on one run of one program. The programs arm a watchdog of their own (normal
/// runs take a few seconds at most), so this only catches a watchdog that cannot fire.
const LIMIT: Duration = Duration::from_secs(90);

/// Every program with the arguments of its baseline run.
const PROGRAMS: &[(&str, &[&str])] = &[
    ("rwlock_exclusion", &[]),
    ("rwlock_exclusion", &["many", "one-reader"]),
    ("rwlock_errors", &["deadlk", "busy", "recursive", "timespec", "clock", "timeout", "unlock", "destroy"]),
    ("rwlock_errors", &["eagain"]),
    ("rwlock_timed", &[]),
    ("rwlock_prefer", &["reader", "writer", "stream"]),
    ("rwlock_cancel", &[]),
    ("rwlock_leave", &[]),
    ("rwlock_leave_cxx", &[]),
    ("rwlock_fork", &[]),
    ("rwlock_pshared", &[]),
    ("rwlock_reuse", &[]),
    ("rwlock_signals", &[]),
    ("rwlock_signals", &["small"]),
    ("rwlock_lifetime", &[]),
    ("rwlock_old_symbols", &[]),
    ("cxx_shared_mutex", &[]),
    ("deepbind_mixed", &["rwlock"]),
    ("deepbind_mixed", &["rwlock-held"]),
];

fn program(name: &str) -> PathBuf {
    let path = c_test(name);
    assert!(path.exists(), "{} was not built (see build.rs)", path.display());
    path
}

fn describe(what: &str, o: &Outcome) -> String {
    format!(
        "{what}: status {:?}, timed out {}\n--- stdout\n{}--- stderr\n{}",
        o.status, o.timed_out, o.stdout, o.stderr
    )
}

/// Runs `name args` under every strategy with `vars` set, collecting every failure.
fn run_under(strategies: &[&str], vars: &[(&str, &str)], name: &str, args: &[&str]) -> Vec<String> {
    let path = program(name);
    let mut failures = Vec::new();
    for strategy in strategies {
        let mut cmd = preloaded(&path, Some(strategy));
        cmd.args(args).envs(vars.iter().copied());
        let o = run_bounded(cmd, LIMIT);
        if !o.success() {
            failures.push(describe(&format!("{name} {args:?} under {strategy} with {vars:?}"), &o));
        }
    }
    failures
}

/// The program must exit 0 under every strategy.
fn c_program(name: &str, args: &[&str]) {
    let failures = run_under(STRATEGIES, &[], name, args);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------
// Baseline: glibc alone.

fn baseline_every_program_passes_without_preload() {
    let mut failures = Vec::new();
    for (name, args) in PROGRAMS {
        let mut cmd = preloaded(program(name), None);
        cmd.args(*args);
        let o = run_bounded(cmd, LIMIT);
        if !o.success() {
            failures.push(describe(&format!("{name} {args:?} without preload"), &o));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------
// Exclusion, initialisers and attributes.

fn exclusion_static_initialisers() {
    c_program("rwlock_exclusion", &["static-default", "static-writer-nonrecursive", "automatic"]);
}

fn exclusion_init_with_every_attribute() {
    c_program("rwlock_exclusion", &["init-null", "init-attrs"]);
}

fn exclusion_many_readers_and_writers() {
    c_program("rwlock_exclusion", &["many"]);
}

fn exclusion_many_writers_and_one_reader() {
    c_program("rwlock_exclusion", &["one-reader"]);
}

// ---------------------------------------------------------------------------------
// Error codes.

fn error_edeadlk_for_the_write_owner() {
    c_program("rwlock_errors", &["deadlk"]);
}

fn error_ebusy_from_the_try_variants() {
    c_program("rwlock_errors", &["busy", "recursive"]);
}

fn error_eagain_at_the_reader_limit() {
    c_program("rwlock_errors", &["eagain"]);
}

fn error_einval_and_etimedout_for_timespecs() {
    c_program("rwlock_errors", &["timespec", "timeout"]);
}

fn error_einval_for_unsupported_clocks() {
    c_program("rwlock_errors", &["clock"]);
}

fn unlock_by_a_thread_holding_nothing_and_destroy() {
    c_program("rwlock_errors", &["unlock", "destroy"]);
}

// ---------------------------------------------------------------------------------
// Waiting.

fn timeouts_on_both_clocks_for_readers_and_writers() {
    c_program("rwlock_timed", &[]);
}

fn reader_preferring_kinds_let_readers_past_a_waiting_writer() {
    c_program("rwlock_prefer", &["reader"]);
}

fn writer_preferring_kind_keeps_new_readers_out() {
    c_program("rwlock_prefer", &["writer"]);
}

fn writer_gets_in_under_a_stream_of_readers() {
    c_program("rwlock_prefer", &["stream"]);
}

fn cancellation_while_blocked_and_while_holding() {
    c_program("rwlock_cancel", &[]);
}

/// A waiter that timed out, or was cancelled while it waited, leaves the lock as if it
/// had never come: try and past-deadline calls on the lock nobody holds succeed.
fn a_waiter_that_left_leaves_nothing_behind() {
    c_program("rwlock_leave", &[]);
}

fn signal_handlers_in_blocked_lockers() {
    c_program("rwlock_signals", &[]);
}

fn minimal_stacks() {
    c_program("rwlock_signals", &["small"]);
}

// ---------------------------------------------------------------------------------
// Processes and lifetimes.

fn fork_while_readers_hold() {
    c_program("rwlock_fork", &[]);
}

fn process_shared_across_processes() {
    c_program("rwlock_pshared", &[]);
}

fn memory_freed_right_after_unlock() {
    c_program("rwlock_reuse", &[]);
}

fn locks_before_the_constructor_and_after_the_destructor() {
    let path = program("rwlock_lifetime");
    let expected = "preinit ok\nctor ok\nmain ok\natexit ok\ndtor ok\n";
    let base = run_bounded(preloaded(&path, None), LIMIT);
    base.assert_success("rwlock_lifetime without preload");
    assert_eq!(base.stdout, expected, "rwlock_lifetime without preload");
    for strategy in STRATEGIES {
        let o = run_bounded(preloaded(&path, Some(strategy)), LIMIT);
        o.assert_success(&format!("rwlock_lifetime under {strategy}"));
        assert_eq!(o.stdout, expected, "rwlock_lifetime under {strategy}");
    }
}

/// Leaving a blocked rdlock/wrlock with `siglongjmp` (undefined behaviour) strands
/// nothing here. Not in the baseline: glibc 2.36 hands the lock to the writer that left
/// and never gets it back (checked by hand: the program times out without the preload).
fn leaving_a_wait_with_siglongjmp_strands_no_lock() {
    let own: Vec<&str> = STRATEGIES.iter().copied().filter(|s| *s != "glibc").collect();
    let mut failures = run_under(&own, &[], "rwlock_longjmp", &[]);
    failures.extend(run_under(&own, &[("SPINMUTEX_SPIN_LIMIT", "0")], "rwlock_longjmp", &[]));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------
// C++.

fn cxx_shared_mutex_and_shared_timed_mutex() {
    c_program("cxx_shared_mutex", &[]);
}

fn cxx_shared_timed_mutex_free_after_a_shared_waiter_timed_out() {
    c_program("rwlock_leave_cxx", &[]);
}

fn old_symbol_versions() {
    c_program("rwlock_old_symbols", &[]);
}

/// A plugin loaded with RTLD_DEEPBIND takes one rwlock through glibc's own functions
/// while the program takes it through the preload: the two protocols do not mix (served,
/// this program hangs or fails), so SPINMUTEX_RWLOCKS=0 forwards every rwlock call to
/// glibc, whatever the strategy.
fn rwlocks_forwarded_beside_a_plugin_that_takes_them_through_glibc() {
    let failures = run_under(STRATEGIES, &[("SPINMUTEX_RWLOCKS", "0")], "deepbind_mixed", &["rwlock"]);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A thread about to sleep on a served rwlock that glibc's own functions hold (the plugin
/// of deepbind_mixed write-locked it) says so on stderr, once, naming the setting that
/// avoids the hang; nothing is said where rwlocks go to glibc.
fn a_served_rwlock_taken_through_glibc_is_named_with_the_way_out() {
    let path = program("deepbind_mixed");
    let mut failures = Vec::new();
    for strategy in STRATEGIES {
        for forwarded in [false, true] {
            let mut cmd = preloaded(&path, Some(strategy));
            cmd.arg("rwlock-held");
            if forwarded {
                cmd.env("SPINMUTEX_RWLOCKS", "0");
            }
            let o = run_bounded(cmd, LIMIT);
            let warnings = o.stderr.lines().filter(|l| l.starts_with("spinmutex: rwlock 0x")).count();
            let served = *strategy != "glibc" && !forwarded;
            let good = o.success()
                && warnings == usize::from(served)
                && (!served || o.stderr.contains("SPINMUTEX_RWLOCKS=0 sends every rwlock call to glibc"));
            if !good {
                failures.push(describe(&format!("{strategy}, rwlocks forwarded: {forwarded}"), &o));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------
// The same behaviours with spinning off, and with long spins, under the library's own
// strategies (`glibc` forwards everything).

/// Programs that drive every way into and out of a wait.
const WAIT_PATHS: &[(&str, &[&str])] = &[
    ("rwlock_exclusion", &["init-attrs"]),
    ("rwlock_exclusion", &["many", "one-reader"]),
    ("rwlock_timed", &[]),
    ("rwlock_prefer", &["reader", "writer", "stream"]),
    ("rwlock_cancel", &[]),
    ("rwlock_leave", &[]),
    ("rwlock_fork", &[]),
    ("rwlock_pshared", &[]),
    ("rwlock_reuse", &[]),
    ("rwlock_signals", &[]),
    ("cxx_shared_mutex", &[]),
];

fn with_settings(vars: &[(&str, &str)]) {
    let own: Vec<&str> = STRATEGIES.iter().copied().filter(|s| *s != "glibc").collect();
    let mut failures = Vec::new();
    for (name, args) in WAIT_PATHS {
        failures.extend(run_under(&own, vars, name, args));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn no_spinning_settings() {
    with_settings(&[("SPINMUTEX_SPIN_LIMIT", "0")]);
}

fn long_spin_settings() {
    with_settings(&[("SPINMUTEX_SPIN_LIMIT", "1ms")]);
}

fn fair_settings() {
    with_settings(&[("SPINMUTEX_FAIR", "1")]);
}

// ---------------------------------------------------------------------------------
// The benchmark workload keeps its data consistent under every strategy.

fn benchmark_workload_is_consistent() {
    let path = program("rwlock_bench");
    for (permille, kind) in
        [("0", "reader"), ("10", "reader"), ("500", "writer-nonrecursive"), ("1000", "writer")]
    {
        for strategy in std::iter::once(None).chain(STRATEGIES.iter().copied().map(Some)) {
            let mut cmd = preloaded(&path, strategy);
            cmd.args([
                "--threads",
                "4",
                "--duration-ms",
                "100",
                "--write-permille",
                permille,
                "--kind",
                kind,
            ]);
            let o = run_bounded(cmd, LIMIT);
            let what = format!("rwlock_bench {permille}\u{2030} writes, {kind}, under {strategy:?}");
            o.assert_success(&what);
            assert!(o.stdout.contains("data_ok=1"), "{}", describe(&what, &o));
        }
    }
}

// ---------------------------------------------------------------------------------
// Symbols.

/// The rwlock entry points the library must define (and therefore never import).
const RWLOCK_SYMBOLS: &[&str] = &[
    "pthread_rwlock_init",
    "pthread_rwlock_destroy",
    "pthread_rwlock_rdlock",
    "pthread_rwlock_tryrdlock",
    "pthread_rwlock_timedrdlock",
    "pthread_rwlock_clockrdlock",
    "pthread_rwlock_wrlock",
    "pthread_rwlock_trywrlock",
    "pthread_rwlock_timedwrlock",
    "pthread_rwlock_clockwrlock",
    "pthread_rwlock_unlock",
    "__pthread_rwlock_init",
    "__pthread_rwlock_destroy",
    "__pthread_rwlock_rdlock",
    "__pthread_rwlock_tryrdlock",
    "__pthread_rwlock_wrlock",
    "__pthread_rwlock_trywrlock",
    "__pthread_rwlock_unlock",
];

fn nm(args: &[&str]) -> Vec<String> {
    let out = Command::new("nm").args(args).arg(lib_path()).output().expect("run nm (binutils)");
    assert!(out.status.success(), "nm failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(|s| s.split('@').next().unwrap_or(s).to_string())
        .collect()
}

fn library_defines_every_rwlock_symbol_and_imports_none() {
    let defined = nm(&["-D", "--defined-only"]);
    for sym in RWLOCK_SYMBOLS {
        assert!(defined.iter().any(|d| d == sym), "the library does not define {sym}");
    }
    let imported: Vec<String> = nm(&["-D", "--undefined-only"])
        .into_iter()
        .filter(|s| s.starts_with("pthread_rwlock") || s.starts_with("__pthread_rwlock"))
        .collect();
    assert!(imported.is_empty(), "the library imports {imported:?}");
}

/// With `LD_DEBUG=bindings` and `LD_BIND_NOW=1`, every rwlock symbol that `cmd`'s objects
/// bind, under any version, must be bound to the library. Returns `symbol [version]` of
/// each binding to the library.
fn bindings_to_library(mut cmd: Command, what: &str) -> Vec<String> {
    cmd.env("LD_DEBUG", "bindings").env("LD_BIND_NOW", "1");
    let o = run_bounded(cmd, LIMIT);
    assert!(o.success(), "{}", describe(what, &o));
    let lib_name = "libspinmutex.so";
    let mut to_library = Vec::new();
    let mut wrong = Vec::new();
    for line in o.stderr.lines() {
        // "  PID:\tbinding file FROM [0] to TO [0]: normal symbol `NAME' [VERSION]"
        let Some(rest) = line.split("binding file ").nth(1) else { continue };
        let Some((from, rest)) = rest.split_once(" to ") else { continue };
        let Some((to, rest)) = rest.split_once(": ") else { continue };
        let Some(name) = rest.split('`').nth(1).and_then(|r| r.split('\'').next()) else { continue };
        if from.contains(lib_name) || !RWLOCK_SYMBOLS.contains(&name) {
            continue;
        }
        let version = rest.rsplit_once('[').map(|(_, v)| v.trim_end_matches(']')).unwrap_or("");
        if to.contains(lib_name) {
            to_library.push(format!("{name} [{version}]"));
        } else {
            wrong.push(format!("{from} binds {name} [{version}] to {to}"));
        }
    }
    assert!(wrong.is_empty(), "{what}: rwlock symbols bound past the library:\n{}", wrong.join("\n"));
    to_library
}

fn assert_bound(bound: &[String], what: &str, expected: &[&str]) {
    for e in expected {
        let found = if e.contains('[') {
            bound.iter().any(|b| b == e)
        } else {
            bound.iter().any(|b| b.starts_with(&format!("{e} ")))
        };
        assert!(found, "{what}: {e} is not bound to the library; bound: {bound:?}");
    }
}

fn rwlock_symbols_bind_to_the_library() {
    let c = bindings_to_library(preloaded(program("rwlock_exclusion"), Some("spin")), "rwlock_exclusion");
    assert_bound(
        &c,
        "rwlock_exclusion",
        &[
            "pthread_rwlock_init [GLIBC_2.34]",
            "pthread_rwlock_destroy [GLIBC_2.34]",
            "pthread_rwlock_rdlock [GLIBC_2.34]",
            "pthread_rwlock_tryrdlock [GLIBC_2.34]",
            "pthread_rwlock_timedrdlock [GLIBC_2.34]",
            "pthread_rwlock_clockrdlock [GLIBC_2.34]",
            "pthread_rwlock_wrlock [GLIBC_2.34]",
            "pthread_rwlock_trywrlock [GLIBC_2.34]",
            "pthread_rwlock_timedwrlock [GLIBC_2.34]",
            "pthread_rwlock_clockwrlock [GLIBC_2.34]",
            "pthread_rwlock_unlock [GLIBC_2.34]",
        ],
    );
    // libstdc++'s shared_mutex and shared_timed_mutex are inline: the program's own PLT.
    let cxx = bindings_to_library(preloaded(program("cxx_shared_mutex"), Some("spin")), "cxx_shared_mutex");
    assert_bound(
        &cxx,
        "cxx_shared_mutex",
        &[
            "pthread_rwlock_rdlock",
            "pthread_rwlock_tryrdlock",
            "pthread_rwlock_wrlock",
            "pthread_rwlock_trywrlock",
            "pthread_rwlock_unlock",
            "pthread_rwlock_timedrdlock",
            "pthread_rwlock_timedwrlock",
            "pthread_rwlock_clockrdlock",
            "pthread_rwlock_clockwrlock",
        ],
    );
    let old =
        bindings_to_library(preloaded(program("rwlock_old_symbols"), Some("spin")), "rwlock_old_symbols");
    assert_bound(
        &old,
        "rwlock_old_symbols",
        &[
            "pthread_rwlock_init [GLIBC_2.2.5]",
            "pthread_rwlock_rdlock [GLIBC_2.2.5]",
            "pthread_rwlock_timedrdlock [GLIBC_2.2.5]",
            "pthread_rwlock_timedwrlock [GLIBC_2.2.5]",
            "pthread_rwlock_tryrdlock [GLIBC_2.2.5]",
            "pthread_rwlock_trywrlock [GLIBC_2.2.5]",
            "pthread_rwlock_unlock [GLIBC_2.2.5]",
            "pthread_rwlock_wrlock [GLIBC_2.2.5]",
            "pthread_rwlock_destroy [GLIBC_2.2.5]",
            "pthread_rwlock_clockrdlock [GLIBC_2.30]",
            "pthread_rwlock_clockwrlock [GLIBC_2.30]",
            "__pthread_rwlock_init [GLIBC_2.2.5]",
            "__pthread_rwlock_destroy [GLIBC_2.2.5]",
            "__pthread_rwlock_rdlock [GLIBC_2.2.5]",
            "__pthread_rwlock_tryrdlock [GLIBC_2.2.5]",
            "__pthread_rwlock_wrlock [GLIBC_2.2.5]",
            "__pthread_rwlock_trywrlock [GLIBC_2.2.5]",
            "__pthread_rwlock_unlock [GLIBC_2.2.5]",
        ],
    );
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    tests!(
        suite,
        baseline_every_program_passes_without_preload,
        exclusion_static_initialisers,
        exclusion_init_with_every_attribute,
        exclusion_many_readers_and_writers,
        exclusion_many_writers_and_one_reader,
        error_edeadlk_for_the_write_owner,
        error_ebusy_from_the_try_variants,
        error_eagain_at_the_reader_limit,
        error_einval_and_etimedout_for_timespecs,
        error_einval_for_unsupported_clocks,
        unlock_by_a_thread_holding_nothing_and_destroy,
        timeouts_on_both_clocks_for_readers_and_writers,
        reader_preferring_kinds_let_readers_past_a_waiting_writer,
        writer_preferring_kind_keeps_new_readers_out,
        writer_gets_in_under_a_stream_of_readers,
        cancellation_while_blocked_and_while_holding,
        a_waiter_that_left_leaves_nothing_behind,
        signal_handlers_in_blocked_lockers,
        minimal_stacks,
        fork_while_readers_hold,
        process_shared_across_processes,
        memory_freed_right_after_unlock,
        locks_before_the_constructor_and_after_the_destructor,
        leaving_a_wait_with_siglongjmp_strands_no_lock,
        cxx_shared_mutex_and_shared_timed_mutex,
        cxx_shared_timed_mutex_free_after_a_shared_waiter_timed_out,
        old_symbol_versions,
        rwlocks_forwarded_beside_a_plugin_that_takes_them_through_glibc,
        a_served_rwlock_taken_through_glibc_is_named_with_the_way_out,
        no_spinning_settings,
        long_spin_settings,
        fair_settings,
        benchmark_workload_is_consistent,
        library_defines_every_rwlock_symbol_and_imports_none,
        rwlock_symbols_bind_to_the_library,
    );
    suite.run()
}
