//! Behaviour tests: each C/C++ program in `c-tests/` checks one behaviour of the
//! pthread mutex API and exits non-zero with a message on stderr when it does not hold.
//! Every program runs under every strategy with the library preloaded; the baseline
//! test runs them all without any preload, which proves that each program's
//! expectations are glibc's own.

mod common;

use common::harness::{tests, Need, Suite};

use common::{c_test, lib_path, preloaded, run_bounded, Outcome, STRATEGIES};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Bound on one run of one program. The programs arm a 30 s watchdog of their own
/// (normal runs take well under 2 s), so this only catches a watchdog that cannot fire.
const LIMIT: Duration = Duration::from_secs(45);

/// Debian's jemalloc (package libjemalloc2).
const JEMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

/// Debian's CPython, not a virtual environment's.
const PYTHON: &str = "/usr/bin/python3";

/// Every C/C++ program with the arguments it runs with in the baseline.
const PROGRAMS: &[(&str, &[&str])] = &[
    ("mutex_exclusion", &[]),
    ("mutex_errors", &[]),
    ("mutex_timed", &[]),
    ("cond_prodcons", &[]),
    ("cond_broadcast", &[]),
    ("cond_timed", &[]),
    ("cond_cancel", &[]),
    ("c11_threads", &[]),
    ("cxx_mutex", &[]),
    ("fork_contended", &[]),
    ("pshared", &[]),
    ("robust", &[]),
    ("ctor_dtor", &[]),
    ("many_threads", &[]),
    ("reuse_memory", &[]),
    ("prio_mutex", &[]),
    ("starvation", &[]),
    ("sched_idle", &[]),
    ("auto_phases", &["1000", "500"]),
    ("stress", &[]),
    ("malloc_threads", &[]),
    ("hello_contended", &[]),
    ("signals", &[]),
    ("exit_while_locking", &[]),
    ("thread_exit_locks", &[]),
    ("report_signal", &[]),
    ("old_symbols", &[]),
    ("normal_rules", &[]),
    ("pshared_mixed", &[]),
    ("deepbind_mixed", &[]),
    ("differential", &["mutex", "1", "50"]),
    ("differential", &["rwlock", "1", "50"]),
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

/// Runs `make(strategy)` for every strategy, collecting every failure (not only the
/// first) so that one run of the test shows which strategies break.
fn under_every_strategy(
    what: &str,
    make: impl Fn(&str) -> Command,
    check: impl Fn(&str, &Outcome) -> Option<String>,
) {
    let mut failures = Vec::new();
    for strategy in STRATEGIES {
        let outcome = run_bounded(make(strategy), LIMIT);
        let label = format!("{what} under {strategy}");
        if !outcome.success() {
            failures.push(describe(&label, &outcome));
        } else if let Some(problem) = check(strategy, &outcome) {
            failures.push(format!("{problem}\n{}", describe(&label, &outcome)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} strategies failed:\n\n{}",
        failures.len(),
        STRATEGIES.len(),
        failures.join("\n\n")
    );
}

/// Runs the compiled program `name` with `args` under every strategy; it must exit 0.
fn c_program(name: &str, args: &[&str]) {
    let path = program(name);
    let what = if args.is_empty() { name.to_string() } else { format!("{name} {}", args.join(" ")) };
    under_every_strategy(
        &what,
        |strategy| {
            let mut cmd = preloaded(&path, Some(strategy));
            cmd.args(args);
            cmd
        },
        |_, _| None,
    );
}

/// The same program without preload: its stdout, which must not change under a strategy.
fn baseline_stdout(path: &Path, args: &[&str]) -> String {
    let mut cmd = preloaded(path, None);
    cmd.args(args);
    let o = run_bounded(cmd, LIMIT);
    o.assert_success(&format!("{} without preload", path.display()));
    o.stdout
}

// ---------------------------------------------------------------------------------
// Baseline: glibc alone.

fn baseline_every_program_passes_without_preload() {
    let mut failures = Vec::new();
    for (name, args) in PROGRAMS {
        let o = run_bounded(
            {
                let mut c = preloaded(program(name), None);
                c.args(*args);
                c
            },
            LIMIT,
        );
        if !o.success() {
            failures.push(describe(&format!("{name} without preload"), &o));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------
// Mutual exclusion, per type and initialisation path.

fn exclusion_static_normal() {
    c_program("mutex_exclusion", &["static-normal"]);
}

fn exclusion_static_recursive() {
    c_program("mutex_exclusion", &["static-recursive"]);
}

fn exclusion_static_errorcheck() {
    c_program("mutex_exclusion", &["static-errorcheck"]);
}

fn exclusion_static_adaptive() {
    c_program("mutex_exclusion", &["static-adaptive"]);
}

fn exclusion_init_default() {
    c_program("mutex_exclusion", &["init-null", "init-default", "init-normal"]);
}

fn exclusion_init_recursive() {
    c_program("mutex_exclusion", &["init-recursive"]);
}

fn exclusion_init_errorcheck() {
    c_program("mutex_exclusion", &["init-errorcheck"]);
}

fn exclusion_init_adaptive() {
    c_program("mutex_exclusion", &["init-adaptive"]);
}

// ---------------------------------------------------------------------------------
// Error codes and trylock.

fn error_ebusy() {
    c_program("mutex_errors", &["busy"]);
}

fn error_edeadlk() {
    c_program("mutex_errors", &["deadlk"]);
}

fn error_eperm() {
    c_program("mutex_errors", &["perm"]);
}

fn error_eagain_recursion_overflow() {
    c_program("mutex_errors", &["eagain"]);
}

fn error_einval_bad_timespec_only_when_blocking() {
    c_program("mutex_errors", &["timespec"]);
}

fn error_einval_unsupported_clock() {
    c_program("mutex_errors", &["clock"]);
}

fn error_etimedout_and_past_deadlines() {
    c_program("mutex_errors", &["timeout"]);
}

/// Random sequences of operations by three threads, one at a time (c-tests/differential.c):
/// every result under every strategy is glibc's, sequence after sequence. A sequence
/// that waits for ever without the preload (a robust adaptive mutex that is not
/// recoverable does under glibc 2.36) is left out; a difference is looked at twice more
/// before it counts, both runs again.
fn random_sequences_give_glibcs_results() {
    const SEEDS: u32 = 24;
    let path = program("differential");
    let run = |kind: &str, seed: u32, strategy: Option<&str>| {
        let mut cmd = preloaded(&path, strategy);
        cmd.args([kind, &seed.to_string(), "150"]);
        let o = run_bounded(cmd, LIMIT);
        o.assert_success(&format!("differential {kind} {seed} under {}", strategy.unwrap_or("no preload")));
        o.stdout
    };
    let mut failures = Vec::new();
    let mut compared = 0;
    for kind in ["mutex", "rwlock"] {
        for seed in 1..=SEEDS {
            let expected = run(kind, seed, None);
            if expected.lines().last() != Some("end") {
                continue;
            }
            compared += 1;
            for strategy in STRATEGIES {
                let differs = || run(kind, seed, Some(strategy)) != run(kind, seed, None);
                if run(kind, seed, Some(strategy)) != expected && differs() && differs() {
                    let got = run(kind, seed, Some(strategy));
                    let first = expected.lines().zip(got.lines()).position(|(a, b)| a != b).unwrap_or(0);
                    let context = |text: &str| {
                        text.lines().skip(first.saturating_sub(3)).take(6).collect::<Vec<_>>().join("\n")
                    };
                    failures.push(format!(
                        "differential {kind} {seed} 150 under {strategy}, from line {}:\n--- without the preload\n{}\n--- under {strategy}\n{}",
                        first + 1,
                        context(&expected),
                        context(&got)
                    ));
                }
            }
        }
    }
    assert!(compared >= SEEDS, "only {compared} of {} sequences ended without the preload", 2 * SEEDS);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn error_einval_destroyed_mutex() {
    c_program("mutex_errors", &["destroyed"]);
}

fn trylock_every_type() {
    c_program("mutex_errors", &["trylock"]);
}

fn timedlock_and_clocklock_timeouts_on_both_clocks() {
    c_program("mutex_timed", &[]);
}

// ---------------------------------------------------------------------------------
// Condition variables.

fn condvar_producer_consumer() {
    c_program("cond_prodcons", &[]);
}

fn condvar_broadcast_many_waiters() {
    c_program("cond_broadcast", &[]);
}

fn condvar_timed_waits_on_both_clocks() {
    c_program("cond_timed", &[]);
}

fn condvar_wait_cancellation() {
    c_program("cond_cancel", &[]);
}

// ---------------------------------------------------------------------------------
// C11 and C++.

fn c11_mtx_and_cnd() {
    c_program("c11_threads", &[]);
}

fn cxx_std_mutexes_and_condition_variable() {
    c_program("cxx_mutex", &[]);
}

// ---------------------------------------------------------------------------------
// Processes.

fn fork_while_contended() {
    c_program("fork_contended", &["fork", "atfork"]);
}

/// `_Fork` (glibc 2.34) runs no atfork handlers, so a child made with it must not rely
/// on one to learn its new thread and process ids. Also with eager handoffs, where the
/// parent's sleepers leave requests in the mutex the child inherits locked.
fn fork_without_atfork_handlers() {
    c_program("fork_contended", &["_Fork"]);
    with_settings(
        &[("SPINMUTEX_HANDOFF_AFTER", "1"), ("SPINMUTEX_HANDOFF_WAIT", "20us")],
        &[("fork_contended", &["_Fork"])],
    );
}

fn process_shared_mutex_and_condvar() {
    c_program("pshared", &[]);
}

fn process_shared_mutex_beside_a_process_without_preload() {
    c_program("pshared_mixed", &[]);
}

/// A plugin loaded with RTLD_DEEPBIND reaches glibc's own mutex functions: one mutex,
/// locked and unlocked through both at once, must still exclude, count and wake.
fn mutex_locked_through_glibc_and_the_preload_at_once() {
    c_program("deepbind_mixed", &[]);
}

// What glibc allows a normal mutex although POSIX leaves it undefined (normal_rules.c).

fn normal_mutex_owner_relocks_to_wait_for_another_threads_unlock() {
    c_program("normal_rules", &["semaphore"]);
}

fn normal_mutex_unlock_of_a_free_mutex_succeeds() {
    c_program("normal_rules", &["double"]);
}

fn normal_mutex_unlocked_by_another_thread_lets_waiters_in() {
    c_program("normal_rules", &["waiters", "handover"]);
}

/// A mutex used as a semaphore, released by a relay thread: exact, no taker starved
/// (but under `kernel`, a known limit), and under `kernel` without the note meant for
/// condition-variable waiters stuck in the kernel (it once added up several stray
/// releases, each taken over in time, into one refused long).
fn normal_mutex_relayed_by_another_thread_starves_no_taker_and_raises_no_false_note() {
    let path = program("normal_rules");
    under_every_strategy(
        "normal_rules relay",
        |strategy| {
            let mut cmd = preloaded(&path, Some(strategy));
            cmd.arg("relay");
            cmd
        },
        |_, o| {
            o.stderr
                .contains("condition-variable waiter")
                .then(|| "a note about a condition-variable waiter".into())
        },
    );
}

/// `heir`: under `kernel` a take-over running when the owner exited once dropped the
/// release another thread had made for it, and the waiter the kernel gave the dead
/// owner's hold waited for ever (7 runs of 7 of the group).
fn normal_mutex_held_by_a_thread_that_exited() {
    c_program("normal_rules", &["condexit", "exited", "heir"]);
}

/// Chromium and Firefox start sandboxed processes with a raw `clone`, correct glibc's
/// cached thread id in the child, and check that a mutex they lock names it: the
/// library's own cached id, still the parent's, made every browser hang.
fn child_of_a_raw_clone_owns_mutexes_by_the_id_glibc_keeps() {
    c_program("fork_contended", &["clone"]);
}

fn normal_mutex_held_by_another_parent_thread_across_fork() {
    c_program("normal_rules", &["forkheld"]);
}

fn fork_before_the_library_constructor_gives_the_child_its_own_ids() {
    c_program("normal_rules", &["early"]);
}

fn robust_owner_death() {
    c_program("robust", &[]);
}

// ---------------------------------------------------------------------------------
// Lifetimes.

fn locks_in_constructor_atexit_and_destructor() {
    let path = program("ctor_dtor");
    let expected = "preinit ok\nctor ok\nmain ok\natexit ok\ndtor ok\n";
    assert_eq!(baseline_stdout(&path, &[]), expected, "ctor_dtor without preload");
    under_every_strategy(
        "ctor_dtor",
        |strategy| preloaded(&path, Some(strategy)),
        |_, o| (o.stdout != expected).then(|| format!("stdout should be exactly {expected:?}")),
    );
}

fn locks_while_threads_exit() {
    c_program("thread_exit_locks", &[]);
}

fn process_exits_while_threads_lock() {
    c_program("exit_while_locking", &[]);
}

fn signals_interrupting_blocked_lockers() {
    c_program("signals", &[]);
}

fn thousands_of_short_lived_threads() {
    c_program("many_threads", &[]);
}

fn mutex_memory_freed_without_destroy_and_reused() {
    c_program("reuse_memory", &[]);
}

// ---------------------------------------------------------------------------------
// Forwarded kinds.

fn priority_inherit_and_protect_mutexes() {
    c_program("prio_mutex", &[]);
}

// ---------------------------------------------------------------------------------
// Fairness and stress.

fn sleeping_thread_is_not_starved() {
    c_program("starvation", &["4", "1000", "50"]);
}

fn stress_mixed_lock_trylock_timedlock() {
    c_program("stress", &["8", "1000"]);
}

// ---------------------------------------------------------------------------------
// The same behaviours under non-default tuning, which drives the library down paths
// the defaults rarely take. `glibc` forwards everything, so only the library's own
// strategies run here.

/// Runs each `(program, args)` under the library's own strategies with `vars` set.
fn with_settings(vars: &[(&str, &str)], programs: &[(&str, &[&str])]) {
    let mut failures = Vec::new();
    for (name, args) in programs {
        let path = program(name);
        for strategy in STRATEGIES.iter().filter(|s| **s != "glibc") {
            let mut cmd = preloaded(&path, Some(strategy));
            cmd.args(*args).envs(vars.iter().copied());
            let o = run_bounded(cmd, LIMIT);
            if !o.success() {
                failures.push(describe(&format!("{name} {args:?} under {strategy} with {vars:?}"), &o));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Handoffs requested at the first lost race and after 20 us: timed lockers that give up
/// with a request pending, condvar relocks inside glibc, fork with requests from parent
/// threads, and requests between processes.
fn eager_handoff_settings() {
    with_settings(&[("SPINMUTEX_HANDOFF_AFTER", "1"), ("SPINMUTEX_HANDOFF_WAIT", "20us")], SLEEP_PATHS);
}

/// Programs that drive every way out of a sleep: timeouts, condvar relocks inside glibc,
/// fork, other processes, cancellation points and signals.
const SLEEP_PATHS: &[(&str, &[&str])] = &[
    ("stress", &["6", "600", "3000"]),
    ("starvation", &["4", "600", "30"]),
    ("sched_idle", &[]),
    ("cond_prodcons", &[]),
    ("fork_contended", &["fork", "atfork"]),
    ("pshared", &[]),
    ("mutex_timed", &[]),
    ("cond_broadcast", &[]),
    ("c11_threads", &[]),
    ("signals", &[]),
];

/// No spinning at all: every contended acquisition sleeps.
fn no_spinning_settings() {
    with_settings(
        &[("SPINMUTEX_SPIN_LIMIT", "0")],
        &[
            ("stress", &["6", "500"]),
            ("starvation", &["4", "600", "30"]),
            ("cond_prodcons", &[]),
            ("mutex_exclusion", &["static-normal", "init-recursive", "init-errorcheck", "init-adaptive"]),
        ],
    );
}

/// No spinning past sleepers: sleeper counts must stay balanced through timeouts,
/// condvar relocks inside glibc, handoffs, fork and signals.
fn fair_settings() {
    with_settings(&[("SPINMUTEX_FAIR", "1")], SLEEP_PATHS);
}

/// Long spins by many spinners, handoffs off: correctness must not depend on either.
fn heavy_spinning_no_handoff_settings() {
    with_settings(
        &[
            ("SPINMUTEX_SPIN_LIMIT", "1ms"),
            ("SPINMUTEX_MAX_SPINNERS", "64"),
            ("SPINMUTEX_HANDOFF_AFTER", "0"),
            ("SPINMUTEX_HANDOFF_WAIT", "0"),
        ],
        &[
            ("stress", &["6", "500"]),
            ("cond_prodcons", &[]),
            ("pshared", &[]),
            ("mutex_exclusion", &["static-normal", "init-recursive", "init-errorcheck", "init-adaptive"]),
        ],
    );
}

/// Statistics on with a side table of 4 slots (it overflows) and tracing of every
/// slow-path decision to a file: neither may change what the program sees. With
/// statistics on, report_signal also makes the library print its report on SIGUSR2
/// hundreds of times while threads contend.
fn statistics_and_tracing_on() {
    let dir = common::scratch();
    let trace = dir.path().join("trace.log");
    let trace = trace.to_str().expect("utf-8 temp path");
    let programs: &[(&str, &[&str])] = &[
        ("reuse_memory", &[]),
        ("fork_contended", &["fork", "atfork"]),
        ("cond_cancel", &[]),
        ("many_threads", &[]),
        ("stress", &["6", "300"]),
        ("thread_exit_locks", &[]),
        ("exit_while_locking", &[]),
        ("signals", &[]),
        ("report_signal", &[]),
    ];
    with_settings(&[("SPINMUTEX_STATS", "1"), ("SPINMUTEX_STATS_SLOTS", "4")], programs);
    with_settings(&[("SPINMUTEX_TRACE", "trace"), ("SPINMUTEX_TRACE_FILE", trace)], programs);
}

// ---------------------------------------------------------------------------------
// Real-world hosts: jemalloc co-preloaded, CPython.

fn jemalloc_preloaded_alongside() {
    assert!(
        Path::new(JEMALLOC).exists(),
        "{JEMALLOC} is missing: install Debian's libjemalloc2 (CI installs it)"
    );
    let path = program("malloc_threads");
    let mut alone = preloaded(&path, None);
    alone.env("LD_PRELOAD", JEMALLOC).arg("--expect-jemalloc");
    run_bounded(alone, LIMIT).assert_success("malloc_threads with jemalloc only");
    let both = format!("{} {JEMALLOC}", lib_path().display());
    under_every_strategy(
        "malloc_threads with jemalloc",
        |strategy| {
            let mut cmd = preloaded(&path, Some(strategy));
            cmd.env("LD_PRELOAD", &both).arg("--expect-jemalloc");
            cmd
        },
        |_, _| None,
    );
}

fn cpython_threads_same_output() {
    assert!(Path::new(PYTHON).exists(), "{PYTHON} is missing");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("c-tests/py_threads.py");
    let make = |strategy: Option<&str>| {
        let mut cmd = preloaded(PYTHON, strategy);
        cmd.arg("-I").arg(&script);
        cmd
    };
    let base = run_bounded(make(None), LIMIT);
    base.assert_success("python without preload");
    assert!(base.stdout.contains("lock counter 20000"), "unexpected python output:\n{}", base.stdout);
    under_every_strategy(
        "python threads",
        |strategy| make(Some(strategy)),
        |_, o| {
            if o.stdout != base.stdout {
                Some(format!("stdout differs from the run without preload:\n{}", base.stdout))
            } else if !o.stderr.is_empty() {
                Some("unexpected stderr".to_string())
            } else {
                None
            }
        },
    );
}

// ---------------------------------------------------------------------------------
// Configuration and the library's own surface.

/// Runs hello_contended with `var=value` on top of a valid strategy and checks that the
/// library says exactly one line on stderr naming the variable, the value and each of
/// `accepted`, and changes nothing else.
fn bad_setting(var: &str, value: &str, accepted: &[&str]) {
    bad_setting_with("hello_contended", var, value, accepted);
}

fn bad_setting_with(name: &str, var: &str, value: &str, accepted: &[&str]) {
    let path = program(name);
    let expected = baseline_stdout(&path, &[]);
    let mut cmd = preloaded(&path, Some("spin"));
    cmd.env(var, value);
    let o = run_bounded(cmd, LIMIT);
    let what = format!("{name} with {var}={value}");
    assert!(o.success(), "{}", describe(&what, &o));
    assert_eq!(o.stdout, expected, "{what}: stdout changed");
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: expected exactly one stderr line, got:\n{}", o.stderr);
    let line = lines[0];
    assert!(line.contains(var), "{what}: the stderr line does not name {var}: {line:?}");
    assert!(line.contains(value), "{what}: the stderr line does not quote {value:?}: {line:?}");
    for a in accepted {
        assert!(line.contains(a), "{what}: the stderr line does not list the accepted {a:?}: {line:?}");
    }
}

fn bad_strategy_gives_one_stderr_line() {
    bad_setting("SPINMUTEX_STRATEGY", "bogus", &["glibc", "futex", "spin"]);
}

fn bad_spin_limit_gives_one_stderr_line() {
    bad_setting("SPINMUTEX_SPIN_LIMIT", "abc", &["ns", "us", "ms"]);
}

fn other_bad_settings_give_one_stderr_line() {
    bad_setting("SPINMUTEX_MAX_SPINNERS", "zero", &[]);
    bad_setting("SPINMUTEX_HANDOFF_AFTER", "often", &[]);
    bad_setting("SPINMUTEX_HANDOFF_WAIT", "5parsecs", &[]);
    bad_setting("SPINMUTEX_FAIR", "yes", &["0 or 1"]);
}

/// ctor_dtor locks mutexes from its `.preinit_array`, before libc has set up `environ`
/// and before the library's constructor: the warning must still come, exactly once.
fn bad_setting_warned_when_locking_starts_before_libc_init() {
    bad_setting_with("ctor_dtor", "SPINMUTEX_STRATEGY", "bogus", &["glibc", "futex", "spin"]);
    bad_setting_with("ctor_dtor", "SPINMUTEX_SPIN_LIMIT", "abc", &["ns", "us", "ms"]);
}

/// A misspelt name would otherwise be ignored without a word: the library names it, and
/// the setting it most likely meant, in one line, once per process (also when locking
/// starts before libc's initialisation), however many unknown names there are; the
/// program runs as it would without them.
fn unknown_setting_name_gives_one_stderr_line() {
    for name in ["hello_contended", "ctor_dtor"] {
        let path = program(name);
        let expected = baseline_stdout(&path, &[]);
        for (vars, more) in [
            (&[("SPINMUTEX_STRATEGI", "glibc")][..], None),
            (&[("SPINMUTEX_STRATEGI", "glibc"), ("SPINMUTEX_SPINLIMIT", "5us")][..], Some("1 more")),
        ] {
            let mut cmd = preloaded(&path, Some("spin"));
            cmd.envs(vars.iter().copied());
            let o = run_bounded(cmd, LIMIT);
            let what = format!("{name} with {vars:?}");
            assert!(o.success(), "{}", describe(&what, &o));
            assert_eq!(o.stdout, expected, "{what}: stdout changed");
            let lines: Vec<&str> = o.stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{what}: expected exactly one stderr line, got:\n{}", o.stderr);
            let unknown = vars.iter().map(|(k, _)| *k).find(|k| lines[0].contains(k));
            let hint = match unknown {
                Some("SPINMUTEX_STRATEGI") => "(did you mean SPINMUTEX_STRATEGY?)",
                _ => "(did you mean SPINMUTEX_SPIN_LIMIT?)",
            };
            assert!(
                unknown.is_some() && lines[0].starts_with("spinmutex: SPINMUTEX_") && lines[0].contains(hint),
                "{what}: the line does not name an unknown variable and its nearest setting: {:?}",
                lines[0]
            );
            if let Some(more) = more {
                assert!(
                    lines[0].contains(more),
                    "{what}: the line does not count the others: {:?}",
                    lines[0]
                );
            }
        }
    }
    // Names the command and the test suite set are known: no line for them.
    let path = program("hello_contended");
    let mut cmd = preloaded(&path, Some("spin"));
    cmd.env("SPINMUTEX_LIB", lib_path()).env("SPINMUTEX_TESTS_REQUIRE_ALL", "0");
    let o = run_bounded(cmd, LIMIT);
    assert!(o.success() && o.stderr.is_empty(), "{}", describe("known names", &o));
}

fn valid_settings_are_silent() {
    let path = program("hello_contended");
    let expected = baseline_stdout(&path, &[]);
    let settings: &[&[(&str, &str)]] = &[
        &[],
        &[("SPINMUTEX_SPIN_LIMIT", "200")],
        &[("SPINMUTEX_SPIN_LIMIT", "5us")],
        &[("SPINMUTEX_SPIN_LIMIT", "300ns"), ("SPINMUTEX_MAX_SPINNERS", "1")],
        &[("SPINMUTEX_SPIN_LIMIT", "1ms"), ("SPINMUTEX_HANDOFF_AFTER", "0")],
        &[("SPINMUTEX_HANDOFF_AFTER", "4"), ("SPINMUTEX_HANDOFF_WAIT", "50us")],
        &[("SPINMUTEX_FAIR", "1")],
        &[("SPINMUTEX_FAIR", "0")],
    ];
    for vars in settings {
        under_every_strategy(
            &format!("hello_contended with {vars:?}"),
            |strategy| {
                let mut cmd = preloaded(&path, Some(strategy));
                cmd.envs(vars.iter().copied());
                cmd
            },
            |_, o| {
                if o.stdout != expected {
                    Some(format!("stdout differs from the run without preload: {expected:?}"))
                } else if !o.stderr.is_empty() {
                    Some("a valid configuration printed on stderr".to_string())
                } else {
                    None
                }
            },
        );
    }
}

/// The load message goes only to the `spinmutex` command's pipe: a descriptor that is
/// not that FIFO (the program's own stdout and stderr, which are pipes of another
/// identity here, or a closed number) gets nothing, and a malformed value is ignored.
fn load_message_goes_only_to_the_named_pipe() {
    let path = program("hello_contended");
    let expected = baseline_stdout(&path, &[]);
    for value in ["fd=1,dev=1,ino=1", "fd=2,dev=0,ino=0", "fd=99,dev=1,ino=1", "fd=1", "garbage"] {
        under_every_strategy(
            &format!("hello_contended with SPINMUTEX_HANDSHAKE={value}"),
            |strategy| {
                let mut cmd = preloaded(&path, Some(strategy));
                cmd.env("SPINMUTEX_HANDSHAKE", value);
                cmd
            },
            |_, o| {
                (o.stdout != expected || !o.stderr.is_empty())
                    .then(|| "the program's output changed".to_string())
            },
        );
    }
}

/// Statistics and tracing report on stderr (or a file), never on the program's stdout.
fn observability_leaves_stdout_alone() {
    let path = program("ctor_dtor");
    let expected = baseline_stdout(&path, &[]);
    for vars in [
        [("SPINMUTEX_STATS", "1"), ("SPINMUTEX_TRACE", "trace")],
        [("SPINMUTEX_STATS", "json"), ("SPINMUTEX_TRACE", "debug")],
    ] {
        under_every_strategy(
            &format!("ctor_dtor with {vars:?}"),
            |strategy| {
                let mut cmd = preloaded(&path, Some(strategy));
                cmd.envs(vars);
                cmd
            },
            |_, o| {
                (o.stdout != expected)
                    .then(|| format!("stdout differs from the run without preload: {expected:?}"))
            },
        );
    }
}

fn old_symbol_versions() {
    c_program("old_symbols", &[]);
}

/// Every mutex symbol the library defines, as `nm -D --defined-only` lists it.
fn exported_mutex_symbols() -> Vec<String> {
    let out = Command::new("nm").args(["-D", "--defined-only"]).arg(lib_path()).output().expect("run nm");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|sym| ["pthread_mutex_", "__pthread_mutex_", "mtx_"].iter().any(|p| sym.starts_with(p)))
        .map(String::from)
        .collect()
}

/// With `LD_DEBUG=bindings`, the dynamic linker reports every symbol binding: each of the
/// library's mutex symbols that a program (or libstdc++, or CPython) binds, under any
/// symbol version, must be bound to the library, not to glibc. Returns the
/// `symbol [version]` pairs bound to the library.
fn bindings_to_library(mut cmd: Command, what: &str, exported: &[String]) -> Vec<String> {
    // Bind everything at load time, in one thread, so that no two threads' reports
    // interleave (and symbols a run happens not to call are checked too).
    cmd.env("LD_DEBUG", "bindings").env("LD_BIND_NOW", "1");
    let o = run_bounded(cmd, LIMIT);
    assert!(o.success(), "{}", describe(what, &o));
    let lib = lib_path();
    let lib_name = lib.file_name().and_then(|n| n.to_str()).expect("library file name");
    let mut to_library = Vec::new();
    let mut wrong = Vec::new();
    for line in o.stderr.lines() {
        // "  PID:\tbinding file FROM [0] to TO [0]: normal symbol `NAME' [VERSION]"
        let Some(rest) = line.split("binding file ").nth(1) else { continue };
        let Some((from, rest)) = rest.split_once(" to ") else { continue };
        let Some((to, rest)) = rest.split_once(": ") else { continue };
        let Some(name) = rest.split('`').nth(1).and_then(|r| r.split('\'').next()) else { continue };
        if from.contains(lib_name) || !exported.iter().any(|e| e == name) {
            continue;
        }
        let version = rest.rsplit_once('[').map(|(_, v)| v.trim_end_matches(']')).unwrap_or("");
        if to.contains(lib_name) {
            to_library.push(format!("{name} [{version}]"));
        } else {
            wrong.push(format!("{from} binds {name} [{version}] to {to}"));
        }
    }
    assert!(wrong.is_empty(), "{what}: mutex symbols bound past the library:\n{}", wrong.join("\n"));
    to_library
}

fn interposed_symbols_bind_to_the_library() {
    let exported = exported_mutex_symbols();
    assert!(exported.iter().any(|s| s == "pthread_mutex_lock"), "the library exports {exported:?}");
    let old = bindings_to_library(preloaded(program("old_symbols"), Some("spin")), "old_symbols", &exported);
    for expected in [
        "pthread_mutex_trylock [GLIBC_2.2.5]",
        "pthread_mutex_timedlock [GLIBC_2.2.5]",
        "pthread_mutex_clocklock [GLIBC_2.30]",
        "__pthread_mutex_lock [GLIBC_2.2.5]",
        "__pthread_mutex_trylock [GLIBC_2.2.5]",
        "__pthread_mutex_unlock [GLIBC_2.2.5]",
        "__pthread_mutex_init [GLIBC_2.2.5]",
        "__pthread_mutex_destroy [GLIBC_2.2.5]",
        "mtx_init [GLIBC_2.28]",
        "mtx_lock [GLIBC_2.28]",
        "mtx_trylock [GLIBC_2.28]",
        "mtx_timedlock [GLIBC_2.28]",
        "mtx_unlock [GLIBC_2.28]",
        "mtx_destroy [GLIBC_2.28]",
    ] {
        assert!(
            old.iter().any(|b| b == expected),
            "old_symbols: {expected} not bound to the library: {old:?}"
        );
    }
    let cxx = bindings_to_library(preloaded(program("cxx_mutex"), Some("spin")), "cxx_mutex", &exported);
    for expected in
        ["pthread_mutex_lock", "pthread_mutex_unlock", "pthread_mutex_trylock", "pthread_mutex_clocklock"]
    {
        assert!(
            cxx.iter().any(|b| b.starts_with(&format!("{expected} "))),
            "cxx_mutex: {expected} not bound: {cxx:?}"
        );
    }
    let c11 = bindings_to_library(preloaded(program("c11_threads"), Some("spin")), "c11_threads", &exported);
    for expected in ["mtx_init", "mtx_lock", "mtx_trylock", "mtx_timedlock", "mtx_unlock", "mtx_destroy"] {
        assert!(
            c11.iter().any(|b| b.starts_with(&format!("{expected} "))),
            "c11_threads: {expected} not bound: {c11:?}"
        );
    }
    let mut python = preloaded(PYTHON, Some("spin"));
    python.args(["-I", "-c", "import threading; t = threading.Thread(target=print); t.start(); t.join()"]);
    let py = bindings_to_library(python, "python", &exported);
    assert!(
        py.iter().any(|b| b.starts_with("pthread_mutex_lock ")),
        "python: pthread_mutex_lock not bound: {py:?}"
    );
}

fn library_imports_no_mutex_or_condvar_symbol() {
    let lib = lib_path();
    let out =
        Command::new("nm").args(["-D", "--undefined-only"]).arg(&lib).output().expect("run nm (binutils)");
    assert!(out.status.success(), "nm failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let bad: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split_whitespace().last())
        .map(|sym| sym.split('@').next().unwrap_or(sym))
        .filter(|sym| {
            ["pthread_mutex_", "pthread_cond_", "__pthread_mutex_", "__pthread_cond_", "mtx_", "cnd_"]
                .iter()
                .any(|p| sym.starts_with(p))
        })
        .collect();
    assert!(bad.is_empty(), "{} imports {bad:?}", lib.display());
    // Guard against testing an empty file: the library must at least define the lock.
    let defined = Command::new("nm").args(["-D", "--defined-only"]).arg(&lib).output().expect("run nm");
    let defined = String::from_utf8_lossy(&defined.stdout);
    assert!(
        defined.lines().any(|l| l.split_whitespace().last() == Some("pthread_mutex_lock")),
        "{} does not export pthread_mutex_lock",
        lib.display()
    );
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    tests!(
        suite,
        baseline_every_program_passes_without_preload,
        exclusion_static_normal,
        exclusion_static_recursive,
        exclusion_static_errorcheck,
        exclusion_static_adaptive,
        exclusion_init_default,
        exclusion_init_recursive,
        exclusion_init_errorcheck,
        exclusion_init_adaptive,
        error_ebusy,
        error_edeadlk,
        error_eperm,
        error_eagain_recursion_overflow,
        error_einval_bad_timespec_only_when_blocking,
        error_einval_unsupported_clock,
        error_etimedout_and_past_deadlines,
        error_einval_destroyed_mutex,
        random_sequences_give_glibcs_results,
        trylock_every_type,
        timedlock_and_clocklock_timeouts_on_both_clocks,
        condvar_producer_consumer,
        condvar_broadcast_many_waiters,
        condvar_timed_waits_on_both_clocks,
        condvar_wait_cancellation,
        c11_mtx_and_cnd,
        cxx_std_mutexes_and_condition_variable,
        fork_while_contended,
        fork_without_atfork_handlers,
        child_of_a_raw_clone_owns_mutexes_by_the_id_glibc_keeps,
        process_shared_mutex_and_condvar,
        process_shared_mutex_beside_a_process_without_preload,
        mutex_locked_through_glibc_and_the_preload_at_once,
        normal_mutex_owner_relocks_to_wait_for_another_threads_unlock,
        normal_mutex_unlock_of_a_free_mutex_succeeds,
        normal_mutex_unlocked_by_another_thread_lets_waiters_in,
        normal_mutex_relayed_by_another_thread_starves_no_taker_and_raises_no_false_note,
        normal_mutex_held_by_a_thread_that_exited,
        normal_mutex_held_by_another_parent_thread_across_fork,
        fork_before_the_library_constructor_gives_the_child_its_own_ids,
        robust_owner_death,
        locks_in_constructor_atexit_and_destructor,
        locks_while_threads_exit,
        process_exits_while_threads_lock,
        signals_interrupting_blocked_lockers,
        thousands_of_short_lived_threads,
    );
    tests!(
        suite,
        mutex_memory_freed_without_destroy_and_reused,
        priority_inherit_and_protect_mutexes,
        sleeping_thread_is_not_starved,
        stress_mixed_lock_trylock_timedlock,
        eager_handoff_settings,
        no_spinning_settings,
        fair_settings,
        heavy_spinning_no_handoff_settings,
        statistics_and_tracing_on,
    );
    suite.needs(
        "jemalloc_preloaded_alongside",
        &[Need::File(JEMALLOC, "libjemalloc2")],
        jemalloc_preloaded_alongside,
    );
    suite.needs("cpython_threads_same_output", &[Need::File(PYTHON, "python3")], cpython_threads_same_output);
    tests!(
        suite,
        bad_strategy_gives_one_stderr_line,
        bad_spin_limit_gives_one_stderr_line,
        other_bad_settings_give_one_stderr_line,
        bad_setting_warned_when_locking_starts_before_libc_init,
        unknown_setting_name_gives_one_stderr_line,
        valid_settings_are_silent,
        load_message_goes_only_to_the_named_pipe,
        observability_leaves_stdout_alone,
        old_symbol_versions,
    );
    suite.needs(
        "interposed_symbols_bind_to_the_library",
        &[Need::Program("nm", "binutils"), Need::File(PYTHON, "python3")],
        interposed_symbols_bind_to_the_library,
    );
    suite.needs(
        "library_imports_no_mutex_or_condvar_symbol",
        &[Need::Program("nm", "binutils")],
        library_imports_no_mutex_or_condvar_symbol,
    );
    suite.run()
}
