//! The spin policy: whether a thread that finds a lock busy spins, for how long, and
//! when it stops and sleeps. The lock's protocol lives elsewhere (`mutex.rs`); what the
//! policy needs of a lock is [`SpinTarget`].
//!
//! Spinning pays only while the owner runs on another CPU and is about to release.
//! Beyond one futex sleep-and-wake round trip (the spin limit) sleeping is cheaper, so a
//! spin never lasts longer. Within that limit:
//!
//! * **The machine.** A process that cannot run two threads at once (one CPU in its
//!   affinity mask, or a cgroup quota of less than two CPUs) never spins: the owner can
//!   only run once the spinner stops, and a spinner under a quota burns the time the
//!   owner needs. Checked at load and again at most once a second.
//! * **The owner.** The owner writes the CPU it runs on into the lock when it takes it
//!   (`rseq`'s `cpu_id`, one thread-local read). A spinner that finds itself on that CPU
//!   knows the owner is not running there now; it stops.
//! * **The spinner itself.** A spinner whose CPU changes, or for whom far more time
//!   passed than its pauses account for, was preempted meanwhile; it stops.
//! * **Learning.** Each lock keeps a moving average of the pauses a winning spin needed
//!   (like glibc's adaptive mutex, for every lock); a spin may last twice that plus a
//!   small floor, so a lock held long stops costing CPU, and one held briefly keeps
//!   catching the release.
//! * **Back-off.** A spinner reads the lock 1, 2, 4, … up to [`MAX_BACKOFF`] pauses
//!   apart: a word read on every pause is pulled away from an owner that keeps writing
//!   it, which slows down exactly the thread that is waited for.
//! * **Lost races.** A spinner that saw the lock free and lost it to another thread
//!   [`LOST_RACES`] times stops: the lock changes hands faster than a thread on another
//!   CPU can take it.
//! * **The lock's own reasons** ([`SpinTarget::reason_to_stop`]): a handoff pending, or
//!   sleepers under `SPINMUTEX_FAIR`; and a cap on the spinners (`SPINMUTEX_MAX_SPINNERS`).

use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8};

use crate::observe::GiveUp;
use crate::{config, sys, thread};

/// Longest run of pauses between two reads of a busy lock (about 0.5-1 µs).
pub const MAX_BACKOFF: u32 = 32;
/// A spinner that saw the lock free this many times and each time lost it stops.
pub const LOST_RACES: u32 = 2;
/// Every contended acquisition may spin this many pause iterations, whatever the
/// estimate says: it is how a lock whose estimate fell to zero notices that spinning
/// pays again.
const FLOOR: u32 = 64;
/// Weight of the newest sample in the moving average: 1/8, as glibc's adaptive mutex.
const SHIFT: u32 = 3;
/// Time a spinner's pauses may take beyond what they should before it concludes it was
/// preempted (the clock is read only every few reads of the lock).
const PREEMPTED_SLACK_NS: u64 = 20_000;

/// What spinning needs of the lock it waits for.
pub trait SpinTarget {
    /// The lock reads free (one plain load).
    fn looks_free(&self) -> bool;
    /// One attempt to take it.
    fn try_take(&self) -> bool;
    /// The CPU its owner ran on when it took the lock, if known.
    fn owner_cpu(&self) -> Option<u32>;
    /// A reason only the lock knows not to spin (on): checked before spinning and
    /// whenever the lock reads busy.
    fn reason_to_stop(&self) -> Option<GiveUp>;
    /// The learned estimate, in pauses.
    fn estimate(&self) -> u32;
    fn set_estimate(&self, estimate: u32);
    /// Pause iterations this acquisition may spin (0: none).
    fn budget(&self) -> u32 {
        budget_for(self.estimate())
    }
    /// A spin ended: won after `Ok(pauses)`, or in vain after `Err(pauses)`.
    fn learn(&self, outcome: Result<u32, u32>) {
        self.set_estimate(next_estimate(self.estimate(), outcome.ok()));
    }
    /// Where the lock counts its spinners, for `SPINMUTEX_MAX_SPINNERS`.
    fn spinners(&self) -> &AtomicU32;
    /// Tells tracing that a spin stopped.
    fn gave_up(&self, spun: u32, budget: u32, why: GiveUp);
}

/// Spins on `lock` until it is taken, or until the policy says to stop.
/// `Ok`: the pauses it took to win; `Err`: the pauses spent in vain (0: no spin at all).
#[inline(never)]
pub fn spin(lock: &impl SpinTarget) -> Result<u32, u32> {
    let budget = lock.budget();
    if budget == 0 {
        return Err(0);
    }
    if let Some(why) = lock.reason_to_stop().or_else(machine_forbids) {
        lock.gave_up(0, budget, why);
        return Err(0);
    }
    // Counting spinners costs two atomic operations on the lock's own cache line, so
    // it happens only when a cap is configured.
    let cap = config::max_spinners();
    if cap != 0 && lock.spinners().fetch_add(1, Relaxed) >= cap {
        lock.spinners().fetch_sub(1, Relaxed);
        lock.gave_up(0, budget, GiveUp::TooManySpinners);
        return Err(0);
    }
    let outcome = spin_within(lock, budget);
    if cap != 0 {
        lock.spinners().fetch_sub(1, Relaxed);
    }
    lock.learn(outcome);
    outcome
}

#[inline(always)]
fn spin_within(lock: &impl SpinTarget, budget: u32) -> Result<u32, u32> {
    let cpu = thread::cpu();
    let started = sys::now_ns();
    let pause_ps = u64::from(config::pause_ps());
    let (mut used, mut lost, mut backoff, mut rounds) = (0u32, 0, 1, 0u32);
    loop {
        if lock.looks_free() {
            if lock.try_take() {
                return Ok(used);
            }
            lost += 1;
            if lost >= LOST_RACES {
                lock.gave_up(used, budget, GiveUp::LostRaces);
                return Err(used);
            }
        } else if let Some(why) = lock.reason_to_stop() {
            lock.gave_up(used, budget, why);
            return Err(used);
        }
        let why = if used >= budget {
            Some(GiveUp::Budget)
        } else if cpu.is_some() && lock.owner_cpu() == cpu {
            Some(GiveUp::OwnerNotRunning)
        } else if thread::cpu() != cpu
            || (rounds % 4 == 3
                && sys::now_ns() - started > 2 * u64::from(used) * pause_ps / 1000 + PREEMPTED_SLACK_NS)
        {
            Some(GiveUp::Preempted)
        } else {
            None
        };
        if let Some(why) = why {
            lock.gave_up(used, budget, why);
            return Err(used);
        }
        for _ in 0..backoff {
            core::hint::spin_loop();
        }
        used += backoff;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        rounds += 1;
    }
}

/// Pause iterations a contended acquisition may spin given the lock's estimate: 0 when
/// the strategy does not spin (or the spin limit is 0), else at most the spin limit.
#[inline]
pub fn budget_for(estimate: u32) -> u32 {
    if !config::row().spins {
        return 0;
    }
    (2 * estimate + FLOOR).min(config::spin_limit())
}

/// The estimate after a spin that won after `won_after` pauses (`None`: in vain).
pub fn next_estimate(estimate: u32, won_after: Option<u32>) -> u32 {
    let estimate = estimate as i64;
    let target = match won_after {
        Some(iterations) => iterations as i64,
        None => 0,
    };
    (estimate + ((target - estimate) >> SHIFT)).max(0) as u32
}

// ---------------------------------------------------------------------------------
// The machine: can this process run two threads at once?

const UNKNOWN: u8 = 0;
const PARALLEL: u8 = 1;
const SERIAL: u8 = 2;

static MACHINE: AtomicU8 = AtomicU8::new(UNKNOWN);
static NEXT_CHECK_NS: AtomicU64 = AtomicU64::new(0);
const CHECK_EVERY_NS: u64 = 1_000_000_000;

/// `Some(NoParallelism)` when the process cannot run two threads at once (see
/// `effective_cpus_x100`); looked at again at most once a second, since affinity and
/// quotas can change while a program runs. The one thread that wins the right to look
/// does it out of line with a static scratch area, so the lock path's stack stays small.
#[inline]
fn machine_forbids() -> Option<GiveUp> {
    let now = sys::now_ns();
    let next = NEXT_CHECK_NS.load(Relaxed);
    if now >= next && NEXT_CHECK_NS.compare_exchange(next, now + CHECK_EVERY_NS, Relaxed, Relaxed).is_ok() {
        look_at_the_machine();
    }
    (MACHINE.load(Relaxed) == SERIAL).then_some(GiveUp::NoParallelism)
}

/// Called by the constructor, so that a process that cannot spin never starts to.
pub fn init() {
    NEXT_CHECK_NS.store(sys::now_ns() + CHECK_EVERY_NS, Relaxed);
    look_at_the_machine();
}

#[cold]
#[inline(never)]
fn look_at_the_machine() {
    // SAFETY: only the thread that moved NEXT_CHECK_NS forward (or the constructor,
    // before any other thread of ours can run) gets here; it finishes within a second.
    let scratch = unsafe { &mut *SCRATCH.0.get() };
    let cpus = effective_cpus_x100(scratch);
    MACHINE.store(if cpus >= 200 { PARALLEL } else { SERIAL }, Relaxed);
}

/// Room for reading the affinity mask and cgroup files.
struct Scratch {
    mask: [u64; 16],
    cgroup: [u8; 512],
    path: [u8; 576],
    text: [u8; 64],
}

struct ScratchCell(core::cell::UnsafeCell<Scratch>);
// SAFETY: used by one thread at a time (see `look_at_the_machine`).
unsafe impl Sync for ScratchCell {}

static SCRATCH: ScratchCell = ScratchCell(core::cell::UnsafeCell::new(Scratch {
    mask: [0; 16],
    cgroup: [0; 512],
    path: [0; 576],
    text: [0; 64],
}));

/// How many CPUs this process may use at once, in hundredths: the CPUs of its
/// affinity mask, and no more than its cgroup's CPU quota (this cgroup and every
/// parent; cgroup v2's `cpu.max` or v1's `cpu.cfs_quota_us`).
fn effective_cpus_x100(s: &mut Scratch) -> u64 {
    s.mask = [0; 16];
    // SAFETY: sched_getaffinity writes at most `size_of_val(&s.mask)` bytes into it.
    let n = unsafe {
        libc::syscall(libc::SYS_sched_getaffinity, 0, core::mem::size_of_val(&s.mask), s.mask.as_mut_ptr())
    };
    let cpus = if n > 0 { s.mask.iter().map(|w| u64::from(w.count_ones())).sum::<u64>() } else { 2 };
    cpus.saturating_mul(100).min(cgroup_quota_x100(s).unwrap_or(u64::MAX))
}

/// Where a cgroup hierarchy keeps the CPU quota.
struct Hierarchy {
    /// The mount point the paths of /proc/self/cgroup are relative to.
    mount: &'static [u8],
    /// The quota file: "max 100000" / "50000 100000" (v2), or "-1" / "50000" (v1).
    quota: &'static [u8],
    /// v1 keeps the period in a file of its own; v2 in the quota file.
    period: Option<&'static [u8]>,
}

const V2: Hierarchy = Hierarchy { mount: b"/sys/fs/cgroup", quota: b"/cpu.max\0", period: None };
const V1: Hierarchy = Hierarchy {
    mount: b"/sys/fs/cgroup/cpu",
    quota: b"/cpu.cfs_quota_us\0",
    period: Some(b"/cpu.cfs_period_us\0"),
};

/// The smallest CPU quota on the way from this process's cgroups to the root, in
/// hundredths of a CPU; None when there is none (or it cannot be read). A hybrid
/// system has both a v2 line ("0::/path") and a v1 line naming the `cpu` controller
/// ("4:cpu,cpuacct:/path") in /proc/self/cgroup; both are looked at.
fn cgroup_quota_x100(s: &mut Scratch) -> Option<u64> {
    let n = read_file(c"/proc/self/cgroup", &mut s.cgroup)?;
    let mut best: Option<u64> = None;
    for line in s.cgroup[..n].split(|&b| b == b'\n') {
        let mut fields = line.splitn(3, |&b| b == b':');
        let (Some(_), Some(controllers), Some(path)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let hierarchy = if controllers.is_empty() {
            &V2
        } else if controllers.split(|&b| b == b',').any(|c| c == b"cpu") {
            &V1
        } else {
            continue;
        };
        let mut dir = path;
        loop {
            if let Some(q) = quota_of(hierarchy, dir, &mut s.path, &mut s.text) {
                best = Some(best.map_or(q, |b| b.min(q)));
            }
            match dir.iter().rposition(|&b| b == b'/') {
                Some(cut) if dir.len() > 1 => dir = &dir[..cut.max(1)],
                _ => break,
            }
        }
    }
    best
}

/// The CPU quota of the cgroup at `dir` of `h`, in hundredths of a CPU.
fn quota_of(h: &Hierarchy, dir: &[u8], path: &mut [u8], text: &mut [u8]) -> Option<u64> {
    let dir = if dir == b"/" { &b""[..] } else { dir };
    let mut read_number_pair = |file: &[u8]| -> Option<(Option<u64>, Option<u64>)> {
        let len = h.mount.len() + dir.len() + file.len();
        let path = path.get_mut(..len)?;
        let (mount, rest) = path.split_at_mut(h.mount.len());
        mount.copy_from_slice(h.mount);
        rest[..dir.len()].copy_from_slice(dir);
        rest[dir.len()..].copy_from_slice(file);
        let n = read_file(core::ffi::CStr::from_bytes_with_nul(path).ok()?, text)?;
        let mut fields = text[..n].split(|&b| b == b' ' || b == b'\n');
        // "max" and "-1" (no quota) do not parse: None.
        Some((
            fields.next().and_then(spinmutex_names::parse_count),
            fields.next().and_then(spinmutex_names::parse_count),
        ))
    };
    let (quota, v2_period) = read_number_pair(h.quota)?;
    let quota = quota?;
    let period = match h.period {
        Some(file) => read_number_pair(file)?.0?,
        None => v2_period?,
    };
    Some(quota.saturating_mul(100) / period.max(1))
}

/// Reads up to `buf.len()` bytes of a small file by raw system calls.
fn read_file(path: &core::ffi::CStr, buf: &mut [u8]) -> Option<usize> {
    let fd = sys::open(path, libc::O_RDONLY, 0).ok()?;
    let n = sys::pread(fd, buf, 0);
    sys::close(fd);
    n.ok()
}

// ---------------------------------------------------------------------------------
// Handoffs (the policy side of mutex.rs's protocol).

static HANDOFF_UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// Lost wake-ups after which a sleeper asks for the lock to be handed over; 0 if
/// handoffs are off (other strategies, `SPINMUTEX_HANDOFF_AFTER=0`, old kernels).
pub fn handoff_after() -> u32 {
    if !config::row().hands_off || HANDOFF_UNAVAILABLE.load(Relaxed) {
        return 0;
    }
    config::handoff_after()
}

/// The kernel lacks `futex_waitv`: handoffs are turned off for the process.
pub fn disable_handoff() {
    HANDOFF_UNAVAILABLE.store(true, Relaxed);
}
