//! sysbench's mutex and threads tests and stress-ng's mutex and pthread stressors, each
//! unpreloaded and under every strategy, with the loader's binding log checked.

use super::*;

/// The number after `key` on the first line of `text` that contains `key`.
fn number_after(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.contains(key))?;
    let rest = &line[line.find(key)? + key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// stress-ng's "metrc: [pid] NAME   BOGO-OPS ..." line for `stressor`: its bogo ops.
fn stress_ng_bogo_ops(text: &str, stressor: &str) -> Option<u64> {
    text.lines().filter(|l| l.contains("metrc:")).find_map(|l| {
        let after_pid = l.split_once("] ")?.1;
        let mut words = after_pid.split_whitespace();
        if words.next()? != stressor {
            return None;
        }
        words.next()?.parse().ok()
    })
}

// sysbench

pub(crate) fn sysbench_mutex_and_threads() {
    let sysbench = tool("sysbench");
    let scratch = Scratch::new("sysbench");
    let musts = [must_bind("sysbench")];
    let threads = 4;
    // `mutex`: each thread takes one of 4 mutexes 1e6 times; an event is one thread's
    // whole loop, so exactly `threads` events. `threads`: each event locks one of 2
    // mutexes and yields 10 times while holding it; bounded by 10000 events.
    let cases: [(&str, Vec<String>, u64); 2] = [
        (
            "mutex",
            vec![
                "mutex".into(),
                format!("--threads={threads}"),
                "--mutex-num=4".into(),
                "--mutex-locks=1000000".into(),
                "--mutex-loops=50".into(),
                "run".into(),
            ],
            threads,
        ),
        (
            "threads",
            vec![
                "threads".into(),
                format!("--threads={threads}"),
                "--thread-locks=2".into(),
                "--thread-yields=10".into(),
                "--events=10000".into(),
                "--time=0".into(),
                "run".into(),
            ],
            10000,
        ),
    ];
    for (name, args, events) in &cases {
        for strategy in modes() {
            let mut cmd = preloaded(&sysbench, strategy);
            cmd.args(args);
            let what = format!("sysbench {name}");
            let out = run_checked(&what, &scratch, strategy, cmd, &musts);
            let all = format!("{}\n{}", out.stdout, out.stderr);
            assert!(
                !all.contains("FATAL") && !all.to_lowercase().contains("error"),
                "{what} {}: reported an error\n{all}",
                label(strategy)
            );
            assert_eq!(
                number_after(&out.stdout, "total number of events:"),
                Some(*events),
                "{what} {}: wrong number of events\n{}",
                label(strategy),
                out.stdout
            );
        }
    }
}

// stress-ng

/// stress-ng's stressors that take pthread mutexes (checked with a counting preload on
/// Debian 12's 0.15.06: the others that sound related use futexes, SysV or POSIX
/// semaphores, file locks, or only the parent's bookkeeping):
/// `mutex` (two threads on one mutex, changing their SCHED_FIFO priority around it, as
/// root for real), `pthread` (creates threads that wait on a condition variable with a
/// mutex). `--mutex-affinity` also moves the threads between CPUs at random, which puts
/// a spinner and a preempted owner on the same CPU.
pub(crate) fn stress_ng_mutex_and_pthread() {
    let stress_ng = tool("stress-ng");
    let scratch = Scratch::new("stress-ng");
    let musts = [must_bind("stress-ng")];
    // (stressor, its arguments, ops, whether stress-ng itself runs as SCHED_FIFO)
    let cases: [(&str, &[&str], u64, bool); 3] = [
        ("mutex", &["--mutex", "1", "--mutex-ops", "200000"], 200_000, true),
        ("mutex", &["--mutex", "1", "--mutex-ops", "200000", "--mutex-affinity"], 200_000, true),
        ("pthread", &["--pthread", "1", "--pthread-ops", "3000"], 3000, false),
    ];
    for (stressor, args, ops, realtime) in cases {
        for strategy in modes() {
            let mut cmd = preloaded(&stress_ng, strategy);
            cmd.args(args).args(["--verify", "--metrics-brief", "--timeout", "90s"]);
            cmd.arg("--temp-path").arg(scratch.0.path());
            if realtime {
                realtime_parent(&mut cmd);
            }
            let what = format!("stress-ng {}", args.join(" "));
            let out = run_checked(&what, &scratch, strategy, cmd, &musts);
            let all = format!("{}\n{}", out.stdout, out.stderr);
            let context = format!("{what} {}\n{all}", label(strategy));
            assert!(all.contains("successful run completed"), "{context}");
            assert!(!all.lines().any(|l| l.contains(" fail:") || l.contains("failed")), "{context}");
            // Bounded by ops, not by the timeout: the stressor did all its work.
            let done = stress_ng_bogo_ops(&all, stressor);
            assert!(done.is_some_and(|n| n >= ops), "{stressor} bogo ops {done:?}: {context}");
        }
    }
}

/// Starts `cmd` as SCHED_FIFO at the highest priority, where that is allowed (root).
///
/// For stress-ng's `mutex` stressor: its threads raise themselves to SCHED_FIFO (below
/// 7/8 of the top priority) and may run all their ops before the stressor's main thread,
/// preempted on its CPU, gets back to check that it created a thread at all; it then
/// fails with "could not create any pthreads" (exit 3) -- a race in stress-ng 0.15.06
/// itself, seen without any preload on a loaded machine. A main thread that outranks
/// its threads cannot be preempted by them. stress-ng's own processes only sleep and
/// wait; the threads that take the mutex still set their own priorities.
fn realtime_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only makes two system calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let param = libc::sched_param { sched_priority: libc::sched_get_priority_max(libc::SCHED_FIFO) };
            // Not allowed (not root, no CAP_SYS_NICE): then stress-ng's threads cannot
            // use SCHED_FIFO either, and there is no race to avoid.
            let _ = libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
            Ok(())
        });
    }
}

// Compressors
