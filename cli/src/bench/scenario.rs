//! The named scenarios `bench` runs beside its grid: machines on which a lock owner
//! often cannot run, where spinning for it wastes what it needs.
//!
//! * `idle-owner`: 4 threads; thread 0 runs at SCHED_IDLE pinned to one CPU, which a
//!   busy process (a hog pinned there) keeps occupied. Whenever thread 0 holds the lock
//!   and the hog takes its CPU back, the other three wait for an owner that will not
//!   run for a while. Throughput is bimodal (it depends on how often that happens), so
//!   the scenario runs 7 times by default.
//! * `cpu-quota`: 16 threads in a cgroup limited to half a CPU (cgroup v2 `cpu.max`
//!   50000 100000, or v1 `cpu.cfs_quota_us` 50000 of 100000), the usual container
//!   limit; where no cgroup can be made (not root, read-only cgroupfs), pinned to one
//!   CPU instead, which is said in the report. A spinning thread burns quota its owner
//!   needs to release the lock.
//! * `mixed`: two lock classes of opposite needs in one program: one thread per CPU
//!   holds one mutex across a long computation (50 µs), as many others take another
//!   for a few pauses at a high rate; twice as many threads as CPUs, so that a thread
//!   spinning for the slow lock takes a CPU the others need. One strategy for the whole
//!   program cannot suit both. A run does a fixed amount of work, sized by the run length
//!   ([`MIXED_FAST_OPS_PER_MS`], [`MIXED_SLOW_OPS_PER_MS`]), so that its wall time
//!   measures the policy; the report gives each class's time and throughput.

use std::ffi::CString;
use std::fmt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::bench::workload::Hogs;

/// Pauses inside (and outside) the lock in every scenario (the fast class's, in `mixed`).
pub const LOAD: u64 = 10;
/// Threads of `mixed` that hold the slow lock: one per CPU the process may use. As many
/// again take the fast lock, so that a thread spinning for the slow lock takes a CPU
/// that another needs, on any machine.
pub fn mixed_slow_threads() -> u64 {
    allowed_cpus().len().max(1) as u64
}
/// `mixed`'s work per millisecond of the run length: the fast class's acquisitions
/// and the slow class's. A 2-vCPU Xeon VM does it in about half the run length under
/// any of the strategies; the slow class alone needs at least a quarter of it (each of
/// its acquisitions holds the lock for 50 µs).
pub const MIXED_FAST_OPS_PER_MS: u64 = 2000;
pub const MIXED_SLOW_OPS_PER_MS: u64 = 5;
/// Runs per arm unless `--runs` says otherwise: the idle-owner case is bimodal.
pub const RUNS: u64 = 7;
/// Length of a run unless `--duration-ms` says otherwise.
pub const DURATION_MS: u64 = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    IdleOwner,
    CpuQuota,
    Mixed,
}

pub const ALL: &[Scenario] = &[Scenario::IdleOwner, Scenario::CpuQuota, Scenario::Mixed];

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::IdleOwner => "idle-owner",
            Scenario::CpuQuota => "cpu-quota",
            Scenario::Mixed => "mixed",
        }
    }

    pub fn threads(self) -> u64 {
        match self {
            Scenario::IdleOwner => 4,
            Scenario::CpuQuota => 16,
            Scenario::Mixed => 2 * mixed_slow_threads(),
        }
    }

    pub fn from_name(text: &str) -> Option<Scenario> {
        ALL.iter().copied().find(|s| s.name() == text)
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a scenario's runs need around them, set up once for all of them and undone
/// when dropped.
pub struct Stage {
    /// Arguments for the workload.
    pub args: Vec<String>,
    /// How the scenario was set up on this machine, for the report.
    pub note: String,
    confine: Confine,
    _hog: Option<Hogs>,
    _group: Option<QuotaGroup>,
}

/// How each run's process is confined before it executes the workload.
enum Confine {
    Nothing,
    /// Writes its pid into this cgroup.procs.
    Cgroup(CString),
    /// Pins itself to this CPU.
    Cpu(usize),
}

impl Stage {
    /// `duration_ms` sizes the work of a scenario that runs a fixed amount of it.
    pub fn set_up(scenario: Scenario, duration_ms: u64) -> Result<Stage, String> {
        let cpus = allowed_cpus();
        let last = *cpus.last().ok_or("this process may run on no CPU")?;
        match scenario {
            Scenario::IdleOwner => {
                let hog = Hogs::start(1, Some(last))?;
                Ok(Stage {
                    args: vec!["--idle-thread".into(), last.to_string()],
                    note: format!(
                        "thread 0 at SCHED_IDLE on CPU {last}, with a busy process pinned there; \
                         the other 3 threads on any of the {} CPUs",
                        cpus.len()
                    ),
                    confine: Confine::Nothing,
                    _hog: Some(hog),
                    _group: None,
                })
            }
            Scenario::Mixed => {
                let (fast, slow) = (MIXED_FAST_OPS_PER_MS * duration_ms, MIXED_SLOW_OPS_PER_MS * duration_ms);
                let slow_threads = mixed_slow_threads();
                Ok(Stage {
                    args: vec![
                        "--mixed".into(),
                        slow_threads.to_string(),
                        "--ops".into(),
                        fast.to_string(),
                        "--slow-ops".into(),
                        slow.to_string(),
                    ],
                    note: format!(
                        "threads 0-{} hold a mutex of their own across 50 µs of pauses, {slow} times in all; \
                         the other {} take the grid's mutex (load {LOAD}) {fast} times; {} CPUs",
                        slow_threads - 1,
                        slow_threads,
                        cpus.len()
                    ),
                    confine: Confine::Nothing,
                    _hog: None,
                    _group: None,
                })
            }
            Scenario::CpuQuota => match QuotaGroup::create() {
                Ok(group) => {
                    let procs = group.dir.join("cgroup.procs");
                    let procs = CString::new(procs.as_os_str().as_encoded_bytes())
                        .map_err(|_| "a cgroup path with a NUL byte".to_string())?;
                    Ok(Stage {
                        args: Vec::new(),
                        note: format!("in cgroup {} ({})", group.dir.display(), group.limit),
                        confine: Confine::Cgroup(procs),
                        _hog: None,
                        _group: Some(group),
                    })
                }
                Err(why) => Ok(Stage {
                    args: Vec::new(),
                    note: format!("pinned to CPU {last}: no cgroup with a CPU quota could be made ({why})"),
                    confine: Confine::Cpu(last),
                    _hog: None,
                    _group: None,
                }),
            },
        }
    }

    /// Confines the process `cmd` starts, before it executes.
    pub fn apply(&self, cmd: &mut Command) {
        match &self.confine {
            Confine::Nothing => {}
            Confine::Cgroup(procs) => {
                let procs = procs.clone();
                // SAFETY: between fork and exec the closure makes only async-signal-safe
                // calls (open, write, close) on memory allocated before the fork.
                unsafe {
                    cmd.pre_exec(move || {
                        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                        if fd < 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        // "0" moves the writing process.
                        let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                        let err = std::io::Error::last_os_error();
                        libc::close(fd);
                        if ok {
                            Ok(())
                        } else {
                            Err(err)
                        }
                    });
                }
            }
            &Confine::Cpu(cpu) => {
                // SAFETY: sched_setaffinity is async-signal-safe; the set lives on the
                // child's stack.
                unsafe {
                    cmd.pre_exec(move || pin(0, cpu));
                }
            }
        }
    }
}

/// The CPUs this process may run on, ascending.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sched_getaffinity writes at most size_of(cpu_set_t) bytes into `set`.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return vec![0];
    }
    // SAFETY: CPU_ISSET reads the set, for indices below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// Pins process `pid` (0: the caller) to `cpu`; async-signal-safe.
pub fn pin(pid: libc::pid_t, cpu: usize) -> std::io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes within the set (it ignores indices past CPU_SETSIZE).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: the set is a valid cpu_set_t of the size given.
    if unsafe { libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A cgroup limited to half a CPU, removed when dropped (after the runs in it ended).
struct QuotaGroup {
    dir: PathBuf,
    /// The limit as written, for the report.
    limit: String,
}

impl QuotaGroup {
    /// Under the cgroup v2 root when its `cpu` controller is enabled for children, else
    /// under the v1 `cpu` hierarchy.
    fn create() -> Result<QuotaGroup, String> {
        let name = format!("spinmutex-bench-{}", std::process::id());
        let v2 = Path::new("/sys/fs/cgroup");
        let v2_cpu = std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"));
        let (dir, files, limit): (_, &[(&str, &str)], _) = if v2_cpu {
            (v2.join(&name), &[("cpu.max", "50000 100000")], "cgroup v2 cpu.max 50000 100000")
        } else {
            (
                Path::new("/sys/fs/cgroup/cpu").join(&name),
                &[("cpu.cfs_period_us", "100000"), ("cpu.cfs_quota_us", "50000")],
                "cgroup v1 cpu.cfs_quota_us 50000 of cpu.cfs_period_us 100000",
            )
        };
        if let Some(parent) = dir.parent() {
            remove_orphans(parent);
        }
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let group = QuotaGroup { dir, limit: limit.to_string() };
        for (file, value) in files {
            let path = group.dir.join(file);
            std::fs::write(&path, value).map_err(|e| format!("write {}: {e}", path.display()))?;
        }
        Ok(group)
    }
}

/// Removes the groups of `spinmutex bench` commands that are gone without removing
/// theirs (a SIGKILL). One that still holds a process stays: the kernel refuses to
/// remove it.
fn remove_orphans(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("spinmutex-bench-")) else { continue };
        let Ok(pid) = pid.parse::<libc::pid_t>() else { continue };
        // SAFETY: signal 0 only checks whether the process exists.
        let gone = pid > 0
            && unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

impl Drop for QuotaGroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}
