//! fio with `--lockfile=readwrite` takes a process-shared rwlock (in a MAP_SHARED
//! mapping, fio's rwlock.c) around every I/O: rdlock for reads, wrlock for writes. Its
//! jobs run as threads (`--thread`) or as forked processes.

use super::*;

pub(crate) const FIO: &str = "/usr/bin/fio";

/// fio's JSON report, reduced to what the test checks: per job, its error and the I/Os
/// it completed.
fn fio_jobs(json: &str) -> Vec<(u64, u64, u64)> {
    // A small scan instead of a JSON parser: each job object has "error" : N, then its
    // "read" object with "total_ios" : N, then its "write" object with the same.
    let number_after = |text: &str, key: &str| -> Option<(u64, usize)> {
        let at = text.find(key)? + key.len();
        let rest = text[at..].trim_start_matches([' ', ':', '"']);
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        Some((digits.parse().ok()?, at))
    };
    let mut jobs = Vec::new();
    let mut rest = json;
    while let Some((error, at)) = number_after(rest, "\"error\"") {
        rest = &rest[at..];
        let Some((reads, at)) = number_after(rest, "\"total_ios\"") else { break };
        rest = &rest[at..];
        let Some((writes, at)) = number_after(rest, "\"total_ios\"") else { break };
        rest = &rest[at..];
        jobs.push((error, reads, writes));
    }
    jobs
}

pub(crate) fn fio_with_a_process_shared_rwlock_around_every_io() {
    let dir = scratch();
    let data = dir.path().join("data");
    let jobs = 4u64;
    let ios_per_job = 4096u64; // --size / --bs
    for threads in [true, false] {
        for strategy in std::iter::once(None).chain(STRATEGIES.iter().copied().map(Some)) {
            let mut cmd = preloaded(FIO, strategy);
            // --lockfile must come before --filename: fio reads it when it adds the file.
            cmd.args(["--name=rw", "--lockfile=readwrite"])
                .arg(format!("--filename={}", data.display()))
                .args(["--size=4m", "--bs=1k", "--rw=randrw", "--rwmixread=75", "--ioengine=psync"])
                .args(["--randseed=7", "--output-format=json", "--group_reporting=0"])
                .arg(format!("--numjobs={jobs}"));
            if threads {
                cmd.arg("--thread");
            }
            let log = dir.path().join("ld");
            if strategy.is_some() {
                let _ = std::fs::remove_dir_all(&log);
                std::fs::create_dir_all(&log).expect("create log directory");
                cmd.env("LD_DEBUG", "bindings").env("LD_DEBUG_OUTPUT", log.join("ld"));
            }
            let what = format!("fio {} under {strategy:?}", if threads { "threads" } else { "processes" });
            let o = run_bounded(cmd, Duration::from_secs(120));
            o.assert_success(&what);
            let report = fio_jobs(&o.stdout);
            assert_eq!(
                report.len() as u64,
                jobs,
                "{what}: expected {jobs} jobs in the report:\n{}",
                o.stdout
            );
            for (error, reads, writes) in &report {
                assert_eq!(*error, 0, "{what}: a job reported error {error}");
                assert_eq!(
                    reads + writes,
                    ios_per_job,
                    "{what}: a job did {reads} reads and {writes} writes"
                );
                assert!(*reads > 0 && *writes > 0, "{what}: a job did {reads} reads and {writes} writes");
            }
            if strategy.is_some() {
                // fio binds at load time (-z now): its rwlock calls reach the library.
                let mut bound = std::collections::BTreeSet::new();
                for entry in std::fs::read_dir(&log).expect("read log directory").flatten() {
                    let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                    for message in text.split("binding file ").skip(1) {
                        if !message.starts_with("/usr/bin/fio ") {
                            continue;
                        }
                        let Some(sym) = message.split('`').nth(1).and_then(|r| r.split('\'').next()) else {
                            continue;
                        };
                        if sym.starts_with("pthread_rwlock_") {
                            assert!(
                                message.contains("libspinmutex.so"),
                                "{what}: fio binds {sym} elsewhere: {}",
                                message.lines().next().unwrap_or("")
                            );
                            bound.insert(sym.to_string());
                        }
                    }
                }
                for sym in ["pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_unlock"] {
                    assert!(bound.contains(sym), "{what}: fio does not bind {sym} to the library: {bound:?}");
                }
            }
        }
    }
}

/// fio's rwlock under statistics: with its jobs as threads (one process, one report),
/// its rwlock is the top rwlock class, made by fio's own `fio_rwlock_init`, process-shared,
/// with every read and every write I/O counted in its mode.
pub(crate) fn fio_rwlock_is_the_top_rwlock_class_under_statistics() {
    let dir = scratch();
    let data = dir.path().join("data");
    let stats = dir.path().join("stats.json");
    for strategy in STRATEGIES {
        let _ = std::fs::remove_file(&stats);
        let mut cmd = preloaded(FIO, Some(strategy));
        cmd.args(["--name=rw", "--lockfile=readwrite"])
            .arg(format!("--filename={}", data.display()))
            .args(["--size=4m", "--bs=1k", "--rw=randrw", "--rwmixread=75", "--ioengine=psync"])
            .args(["--randseed=7", "--output-format=json", "--group_reporting=0", "--numjobs=4", "--thread"])
            .env("SPINMUTEX_STATS", "json")
            .env("SPINMUTEX_STATS_FILE", &stats);
        let what = format!("fio threads under {strategy} with statistics");
        let o = run_bounded(cmd, Duration::from_secs(120));
        o.assert_success(&what);
        let jobs = fio_jobs(&o.stdout);
        assert_eq!(jobs.len(), 4, "{what}: {}", o.stdout);
        let (reads, writes) = jobs.iter().fold((0, 0), |(r, w), (_, jr, jw)| (r + jr, w + jw));
        let report = stats::json_report(&stats);
        stats::assert_rows_add_up(&report);
        let top = *stats::classes_of(&report, "rwlock")
            .first()
            .unwrap_or_else(|| panic!("{what}: no rwlock class in {report:#}"));
        assert_eq!(top["type"], "rwlock,pshared", "{what}: {top:#}");
        assert_eq!(top["frames"][0]["symbol"], "fio_rwlock_init", "{what}: {top:#}");
        assert_eq!(top["read"]["locked"], reads, "{what}: {top:#}");
        assert_eq!(top["write"]["locked"], writes, "{what}: {top:#}");
    }
}
