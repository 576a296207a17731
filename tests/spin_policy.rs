//! The spin policy's reasons not to spin, as the trace shows them: a spinner on the CPU
//! its owner last ran on stops at once (the owner cannot be running), and a process
//! that cannot run two threads at once (one CPU in its affinity mask, or a cgroup CPU
//! quota below two CPUs) never spins.

mod common;

use common::harness::{tests, Need, Suite};
use common::{c_test, preloaded, run_bounded, scratch};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// Runs `spin_policy MODE` under `spin` with tracing to a file (through `prefix`, a
/// command such as taskset, if any); the trace.
fn traced(mode: &str, prefix: &[&str]) -> String {
    let dir = scratch();
    let trace = dir.path().join("trace.log");
    let program = c_test("spin_policy");
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut cmd = preloaded(first, Some("spin"));
            cmd.args(rest).arg(&program);
            cmd
        }
        None => preloaded(&program, Some("spin")),
    };
    cmd.arg(mode).env("SPINMUTEX_TRACE", "trace").env("SPINMUTEX_TRACE_FILE", &trace);
    run_bounded(cmd, LIMIT).assert_success(&format!("spin_policy {mode} with {prefix:?}"));
    std::fs::read_to_string(&trace).unwrap_or_default()
}

fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn spinner_on_the_owners_cpu_stops_at_once() {
    if online_cpus() < 2 {
        // With one CPU the process never spins at all (the next test).
        return;
    }
    let text = traced("same-cpu", &[]);
    let stops = text.matches("reason=owner_not_running").count();
    assert!(
        stops > 0,
        "no spin stopped for an owner on the spinner's CPU:\n{}",
        &text[..text.len().min(3000)]
    );
    for line in text.lines().filter(|l| l.contains("reason=owner_not_running")) {
        let spins: u64 =
            line.split(" spins=").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
        assert!(spins <= 64, "a spinner on the owner's CPU spun {spins} pauses first: {line}");
    }
}

fn one_cpu_means_no_spinning() {
    let text = traced("contend", &["taskset", "-c", "0"]);
    assert!(
        text.contains("reason=no_parallelism"),
        "no spin refused for want of CPUs:\n{}",
        &text[..text.len().min(3000)]
    );
    assert!(!text.contains("how=spin"), "a lock was taken by spinning on one CPU");
}

/// A cgroup limited to half a CPU, removed when dropped.
struct HalfCpuGroup(std::path::PathBuf);

impl HalfCpuGroup {
    /// One under the cgroup v2 root when its `cpu` controller is enabled for children,
    /// else under the v1 `cpu` hierarchy.
    fn create() -> Result<HalfCpuGroup, String> {
        let name = format!("spinmutex-test-{}", std::process::id());
        let v2 = std::path::Path::new("/sys/fs/cgroup");
        let v2_cpu = std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"));
        let (dir, files): (_, &[(&str, &str)]) = if v2_cpu {
            (v2.join(&name), &[("cpu.max", "50000 100000")])
        } else {
            (
                std::path::Path::new("/sys/fs/cgroup/cpu").join(&name),
                &[("cpu.cfs_period_us", "100000"), ("cpu.cfs_quota_us", "50000")],
            )
        };
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let group = HalfCpuGroup(dir);
        for (file, value) in files {
            let path = group.0.join(file);
            std::fs::write(&path, value).map_err(|e| format!("write {}: {e}", path.display()))?;
        }
        Ok(group)
    }
}

impl Drop for HalfCpuGroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn half_a_cpu_means_no_spinning() {
    let group = HalfCpuGroup::create().expect("the cgroup could be created before");
    let join = format!("echo $$ > {}/cgroup.procs && exec \"$@\"", group.0.display());
    let text = traced("contend", &["sh", "-c", &join, "sh"]);
    assert!(
        text.contains("reason=no_parallelism"),
        "no spin refused under a quota of half a CPU:\n{}",
        &text[..text.len().min(3000)]
    );
    assert!(!text.contains("how=spin"), "a lock was taken by spinning under half a CPU");
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    tests!(suite, spinner_on_the_owners_cpu_stops_at_once);
    suite.needs(
        "one_cpu_means_no_spinning",
        &[Need::Program("taskset", "util-linux")],
        one_cpu_means_no_spinning,
    );
    match HalfCpuGroup::create() {
        Ok(_) => suite.test("half_a_cpu_means_no_spinning", half_a_cpu_means_no_spinning),
        Err(why) => suite.skip(
            "half_a_cpu_means_no_spinning",
            &format!("cannot make a cgroup with a CPU quota (needs root and the cpu controller): {why}"),
        ),
    };
    suite.run()
}
