//! `auto`: each lock class learns its own waiting policy while the program runs.
//!
//! Whether spinning pays is a property of a lock and of the machine at the moment, so
//! the decision is made per *class*: every mutex made by one `pthread_mutex_init` call
//! site (its return address), or, where that call is in a function of the program's own
//! that makes mutexes for several callers (a wrapper), every mutex made by one call of
//! the wrapper; for a mutex that was never initialised by a call
//! (`PTHREAD_MUTEX_INITIALIZER`), the mutex itself. A new mutex of a known class starts
//! in its class's mode, with the spin estimate its class's mutexes last learned.
//!
//! # What a class decides
//!
//! A class is in one of two modes: **spin** (as `spin`: each mutex spins for a budget
//! from its own estimate, then sleeps) or **sleep** (sleep at once, as `futex`). A
//! thread that goes to sleep in spin mode may ask for a handoff when it keeps losing
//! the lock, as under `spin`; one that goes to sleep in sleep mode does not, as under
//! `futex`. There, a handoff would only make the lock alternate between threads, each
//! turn waiting for a wake-up, where without it one thread can take the lock many times
//! while a sleeper wakes (2 threads, an empty critical section, 2 CPUs, 2 s runs: sleep
//! mode ran at 0.73× `futex`'s throughput with handoffs, 0.97× without). The mode
//! when the thread goes to sleep decides, for the whole wait (asking on each wake-up
//! instead measured 0.44× `futex` at 4 threads: waiters of an experiment's spin phase
//! then kept the lock alternating).
//! Everything else that stops a spin under `spin` stops it here too:
//! the owner not running, the spinner preempted, a process that cannot run two threads
//! at once (affinity, CPU quota). Two measurements move a class between the modes:
//!
//! 1. **Do spins pay for themselves?** A spin that wins saves a sleep and a wake-up,
//!    worth one futex round trip (the spin limit); every pause spun costs CPU. A class
//!    whose last [`SPIN_WINDOW`] spins cost at least what they saved, and won rarely
//!    ([`RARE_WINS`]), goes to sleep mode (a lock held across I/O or a long computation;
//!    spins that won nothing saved nothing, even those a stopped owner cut short).
//!    In sleep mode one contended acquisition of a thread in [`PROBE_EVERY`] spins as a
//!    probe; when [`PROBE_WINDOW`] probes won often ([`PROBES_WIN`]) and would have
//!    saved twice what they cost, the class spins again (the margins keep a class on
//!    the boundary from flapping).
//!
//! 2. **Does spinning raise throughput?** Spins can win and still buy nothing when the
//!    lock is not the bottleneck (a sleeping waiter then costs no throughput, a spinning
//!    one a CPU), and spins that lose races can still keep a lock busy that would sit
//!    idle while its next owner wakes. Only the class's throughput tells, so a class
//!    runs an A/B experiment of its own, the first once it has had [`HOT`] contended
//!    acquisitions and the economics of 1. have judged its spins once: [`ROUNDS`]
//!    rounds of one phase per mode (order alternating, the class's own mode first),
//!    each settling for [`SETTLE_NS`] (the waiters of the mode before still wait its
//!    way; a spin phase after a sleep phase, until its waiters are back, see
//!    [`inherits_sleepers`]), then measuring for at least [`PHASE_NS`] and
//!    [`PHASE_ACQUISITIONS`] of the class's acquisitions (all of them, not only the
//!    contended ones), how many of them were contended, and the process's CPU time.
//!    Phases are short, since the phase in the worse mode costs throughput; an
//!    experiment whose first two rounds leave no doubt stops there. A spin phase in
//!    which hardly an acquisition was contended ([`CONTENDED_ENOUGH`]) measured no
//!    spinning, and is left out: its waiters were asleep, mostly since the sleep phase
//!    before (the lock's owner takes it again and again, alone, at sleep mode's pace).
//!    An experiment with no spin phase left compared nothing (typically threads that
//!    the scheduler has not yet spread over the CPUs, or a lock its threads seldom meet
//!    on while they wait on another class's): the class takes the mode the last
//!    experiment that did compare something chose, whichever its class, as a measured
//!    decision (else it keeps its own), and tries again soon
//!    ([`RETRY_INTERVAL_NS`]). In a program whose locks are alike (`sysbench mutex`:
//!    4 call sites, 4 classes), the class that cannot tell then follows those that
//!    could. [`choose`] says which mode
//!    wins: the class's mode stands unless the other is clearly better, since the
//!    process's CPU time also holds other classes' work. The decision holds until the
//!    next experiment (the economics of 1. move only a class no experiment has judged:
//!    spins that all lose races can still be what keeps a lock busy), which comes
//!    [`FIRST_INTERVAL_NS`] later, and twice as late each time the decision stands, up
//!    to [`MAX_INTERVAL_NS`], but never sooner than [`INTERVAL_PER_EXPERIMENT`] times
//!    as long as the last one took. After a close call (neither mode 10% faster) in a
//!    class's first experiment or the one after, the next comes
//!    [`CLOSE_CALL_INTERVAL_NS`] later instead: a phase may have missed the state its
//!    mode keeps, and repeating costs little when the modes run that close. A
//!    decision that changed the mode is **checked** [`CHECK_AFTER_NS`] after it and
//!    again [`CHECK_AGAIN_NS`] later, each time by one phase in the new mode, measured
//!    for at least [`CHECK_PHASE_NS`]: a millisecond phase can catch a state its mode
//!    does not keep (a short lock's waiters all asleep, one thread taking it alone),
//!    and a new mode that runs clearly (10%) slower than the old one did in the
//!    experiment is undone ([`check`]). Between experiments a class is **watched**
//!    every [`WATCH_INTERVAL_NS`]: one phase in its own mode, as long as a check's. A
//!    pace four times faster or slower than at the watch before means the lock is used
//!    differently now: the next experiment comes at once, and the waits between
//!    experiments grow again from the shortest ([`watch`]). Watches of different
//!    classes end at least 100 ms apart.
//!
//! While an experiment runs, every mutex lock and trylock takes the general path (a
//! bit of `config::fast_path_off`, the word the fast path already tests), which counts
//! the experimenting classes' acquisitions in per-CPU stripes; unlocks keep their fast
//! path, so that measuring adds to the critical section only the count. One
//! experiment runs at a time, so that the process's CPU time is its own as far as it
//! can be: with several hot classes at once, the others' CPU is noise in each
//! experiment.
//!
//! A class's **first** experiment takes in every other class that has had none yet
//! (none that compared something: a first one that compared nothing is tried again,
//! together), waits in the same mode and has been contended about as often (within
//! 4×): they switch modes together, their acquisitions are counted together, and each
//! takes the verdict. Classes hot at the same time are mostly taken by the same threads,
//! and one's waiting shows in the others' throughput. `sysbench mutex` makes 4 classes
//! (4 init call sites) of locks its threads take at random. One of them experimenting
//! alone, while the other three still spun and kept every thread awake, measured its
//! modes alike (about 2.3 M/s each); sleeping wins only once all four sleep, when one
//! thread at a time runs at 7 M/s. Together, the four decide in one experiment of a few
//! milliseconds. From then on each class experiments on its own.
//!
//! Every change of mode, and every experiment's outcome, is a trace event (`policy`,
//! with the class, the mode before and after, why, and the measurements behind it); each
//! phase of an experiment is one too, at `debug` (`phase`, target `spinmutex::auto`); and
//! the statistics report shows each class's mode and how many contended acquisitions
//! each mode served.
//!
//! # Where things are
//!
//! * [`class`]: the fixed table of classes, how a mutex finds its class, and what a
//!   class learns from its spins (1. above).
//! * [`wrapper`]: which class a mutex made by a wrapper takes.
//! * [`experiment`]: the A/B experiments, one at a time, and their checks (2. above).
//! * Here: the two modes, and what the waiting code of mutex.rs asks of `auto` on each
//!   contended acquisition (the budget of a spin, its outcome, the acquisition), of
//!   which one in [`SAMPLE`] does the class's bookkeeping.
//!
//! [`SPIN_WINDOW`]: class::SPIN_WINDOW
//! [`RARE_WINS`]: class::RARE_WINS
//! [`PROBE_WINDOW`]: class::PROBE_WINDOW
//! [`PROBES_WIN`]: class::PROBES_WIN
//! [`HOT`]: experiment::HOT
//! [`ROUNDS`]: experiment::ROUNDS
//! [`SETTLE_NS`]: experiment::SETTLE_NS
//! [`inherits_sleepers`]: experiment::inherits_sleepers
//! [`PHASE_NS`]: experiment::PHASE_NS
//! [`PHASE_ACQUISITIONS`]: experiment::PHASE_ACQUISITIONS
//! [`CONTENDED_ENOUGH`]: experiment::CONTENDED_ENOUGH
//! [`RETRY_INTERVAL_NS`]: experiment::RETRY_INTERVAL_NS
//! [`choose`]: experiment::choose
//! [`FIRST_INTERVAL_NS`]: experiment::FIRST_INTERVAL_NS
//! [`CLOSE_CALL_INTERVAL_NS`]: experiment::CLOSE_CALL_INTERVAL_NS
//! [`CHECK_PHASE_NS`]: experiment::CHECK_PHASE_NS
//! [`MAX_INTERVAL_NS`]: experiment::MAX_INTERVAL_NS
//! [`INTERVAL_PER_EXPERIMENT`]: experiment::INTERVAL_PER_EXPERIMENT
//! [`CHECK_AFTER_NS`]: experiment::CHECK_AFTER_NS
//! [`CHECK_AGAIN_NS`]: experiment::CHECK_AGAIN_NS
//! [`check`]: experiment::check
//! [`WATCH_INTERVAL_NS`]: experiment::WATCH_INTERVAL_NS
//! [`watch`]: experiment::watch

mod class;
mod experiment;
mod wrapper;

use core::sync::atomic::Ordering::Relaxed;

use crate::mutex::RawMutex;
use crate::observe;
use crate::spin::{self, SpinTarget};

use class::class_of;
pub use class::{born, class_made_at, find, Class, CLASSES};
use experiment::experiment_step;
pub use experiment::{after_fork_in_child, count, measuring, Because, Phase};
pub use wrapper::init;

/// In sleep mode, one contended acquisition of a thread in this many spins as a probe
/// (a multiple of [`SAMPLE`]: every probe is sampled).
const PROBE_EVERY: u32 = 64;

/// A class's mode.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Mode {
    Spin = 0,
    Sleep = 1,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Spin => "spin",
            Mode::Sleep => "sleep",
        }
    }

    fn from_u8(v: u8) -> Mode {
        if v == Mode::Sleep as u8 {
            Mode::Sleep
        } else {
            Mode::Spin
        }
    }

    fn other(self) -> Mode {
        match self {
            Mode::Spin => Mode::Sleep,
            Mode::Sleep => Mode::Spin,
        }
    }
}

// What the waiting code of mutex.rs asks of `auto`, through `RawMutex`'s `SpinTarget`
// methods: the mutex's class supplies the budget and the estimate, and learns from the
// outcome.
//
// The class's line is shared by every thread that contends for any of its mutexes, so
// writing it on every contended acquisition would cost more than a spin saves. Each
// thread therefore does the class's bookkeeping on one contended acquisition in
// [`SAMPLE`] (its tick, counted in `budget`), and counts it as that many; with
// statistics on, where exact counts matter more than speed, on every one. The sampled
// bookkeeping runs out of line, cold: the waiting code's frames stand under every trace
// event it emits (see tests/host.rs on stack use), and the other contended acquisitions
// should pay only the tick's test.

/// One contended acquisition in this many does the class's bookkeeping. One in 8 cost
/// about a seventh of the throughput of a short lock contended by 16 threads on 2 CPUs
/// (the class's line moves between the CPUs on each write).
const SAMPLE: u32 = 64;
/// A young class (no window of spins judged, no experiment yet) samples one in this
/// many, so that its first window is judged within about 500 contended acquisitions,
/// not 4,000: until its first experiment a class spins, and where sleeping wins
/// (`sysbench mutex`: 3× faster) those first milliseconds cost most of what `auto`
/// lost to `futex`.
const YOUNG_SAMPLE: u32 = 8;

fn tick() -> u32 {
    crate::thread::contention_tick()
}

/// How many contended acquisitions the current one stands for in its class's counts: 0
/// when it is not sampled.
#[inline]
fn weight(m: &RawMutex, tick: u32) -> u32 {
    if observe::stats_on() {
        1
    } else if !tick.is_multiple_of(YOUNG_SAMPLE) {
        0
    } else if class_of(m).young() {
        YOUNG_SAMPLE
    } else if tick.is_multiple_of(SAMPLE) {
        SAMPLE
    } else {
        0
    }
}

/// How long a contended acquisition of `m` may spin: as `spin` (from the mutex's own
/// estimate) in spin mode, 0 in sleep mode except for a probe now and then. Counts the
/// acquisition (the thread's tick).
#[inline]
pub fn budget(m: &RawMutex) -> u32 {
    let tick = crate::thread::next_contention_tick();
    let class = class_of(m);
    let spins = match class.waiting_mode() {
        Mode::Spin => true,
        Mode::Sleep => tick.is_multiple_of(PROBE_EVERY) && !class.measured() && !class.experimenting(),
    };
    if spins {
        spin::budget_for(m.estimate())
    } else {
        0
    }
}

/// Whether a sleeper on `m` may ask for a handoff: only in spin mode, where spinners
/// could otherwise take the lock from under it for good. In sleep mode the class waits
/// as `futex` (and glibc) do: a handoff there only makes the lock alternate between
/// threads, and each turn then waits for a wake-up.
#[inline]
pub fn hands_off(m: &RawMutex) -> bool {
    class_of(m).waiting_mode() == Mode::Spin
}

/// A spin on `m` ended (`Ok`: won after so many pauses; `Err`: spent so many in vain).
/// The mutex's estimate learns from every spin, as under `spin`; the class's counts from
/// the sampled ones (every probe among them), out of line.
#[inline]
pub fn learn(m: &RawMutex, outcome: Result<u32, u32>) {
    let estimate = spin::next_estimate(m.estimate(), outcome.ok());
    m.set_estimate(estimate);
    // A probe's tick is a multiple of PROBE_EVERY, so it is always sampled.
    if weight(m, tick()) != 0 {
        learn_sampled(m, estimate, outcome);
    }
}

#[cold]
#[inline(never)]
fn learn_sampled(m: &RawMutex, estimate: u32, outcome: Result<u32, u32>) {
    let class = class_of(m);
    class.counts.estimate.store(estimate, Relaxed);
    let (Ok(pauses) | Err(pauses)) = outcome;
    class.spun(pauses, outcome.is_ok());
}

/// A contended acquisition of `m` succeeded: a sampled one counts it and runs
/// experiments, out of line.
#[inline]
pub fn acquired(m: &RawMutex) {
    let weight = weight(m, tick());
    if weight != 0 {
        acquired_sampled(m, weight);
    }
}

#[cold]
#[inline(never)]
fn acquired_sampled(m: &RawMutex, weight: u32) {
    let class = class_of(m);
    class.counts.served[class.waiting_mode() as usize].fetch_add(u64::from(weight), Relaxed);
    let n = class.counts.contended.load(Relaxed);
    class.counts.contended.store(n.saturating_add(weight), Relaxed);
    experiment_step(class, weight);
}

/// Tests that use the class table take turns: there is one table, and one
/// experiment (the tests of this module and of its submodules).
#[cfg(test)]
static TABLE_USERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
fn table_to_myself() -> std::sync::MutexGuard<'static, ()> {
    TABLE_USERS.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::experiment::RETRY_INTERVAL_NS;
    use super::*;

    #[test]
    fn only_a_class_in_spin_mode_lets_its_sleepers_ask_for_a_handoff() {
        let _table = table_to_myself();
        let mut storage: libc::pthread_mutex_t = libc::PTHREAD_MUTEX_INITIALIZER;
        // SAFETY: `storage` is a mutex, alive for the whole test.
        let m = unsafe { RawMutex::from_ptr(&mut storage) };
        let class = class_of(m);
        class.policy.mode.store(Mode::Sleep as u8, Relaxed);
        assert!(!hands_off(m), "a sleeper in sleep mode waits as under futex");
        class.policy.mode.store(Mode::Spin as u8, Relaxed);
        assert!(hands_off(m), "a sleeper in spin mode may ask, so that spinners cannot starve it");
    }

    #[test]
    fn a_class_samples_more_until_its_spins_are_judged_or_it_has_had_an_experiment() {
        let mut storage: libc::pthread_mutex_t = libc::PTHREAD_MUTEX_INITIALIZER;
        // SAFETY: `storage` is a mutex, alive for the whole test.
        let m = unsafe { RawMutex::from_ptr(&mut storage) };
        let _table = table_to_myself();
        let class = class_of(m);
        class.reset();
        assert!(class.young());
        assert_eq!([weight(m, 8), weight(m, 64), weight(m, 65)], [YOUNG_SAMPLE, YOUNG_SAMPLE, 0]);
        class.counts.judged.store(true, Relaxed);
        assert!(!class.young());
        assert_eq!([weight(m, 8), weight(m, 64), weight(m, 65)], [0, SAMPLE, 0]);
        class.counts.judged.store(false, Relaxed);
        class.counts.interval_ns.store(RETRY_INTERVAL_NS, Relaxed);
        assert!(!class.young(), "a class that joined another's experiment knows its mode");
        class.reset();
    }
}
