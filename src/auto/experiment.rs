//! A class's A/B experiments of its two modes, one experiment at a time in the process,
//! the checks of a verdict that changed a mode, and the watches of a class's pace
//! between experiments (the header of auto/mod.rs, 2.).

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8};

use super::class::{known_class_of, Class, CLASSES, TABLE};
use super::Mode;
use crate::mutex::RawMutex;
use crate::{config, observe, sys};

/// Rounds of an experiment (each one phase per mode).
pub(super) const ROUNDS: u32 = 3;
/// Shortest phase of an experiment: short, since the phase in the worse mode costs
/// the program throughput.
pub(super) const PHASE_NS: u64 = 1_000_000;
/// Shortest phase of a check ([`check`]): longer than an experiment's, since it runs
/// in the mode the class is in anyway, and a mode whose pace comes in bursts (sleep
/// mode's, where a short lock alternates between one thread taking it alone and
/// waiters that wake in turn) is then read over several of them. (`sysbench mutex`
/// on 2 CPUs: 1 ms checks of sleep mode read 7-26 Mops/s, and undid a right verdict
/// in 5 of 30 traced runs; 5 ms checks, in 1 of 30.)
pub(super) const CHECK_PHASE_NS: u64 = 5_000_000;
/// Time a phase runs in its mode before it starts to measure.
pub(super) const SETTLE_NS: u64 = 500_000;
/// A spin phase after a sleep phase settles until the class has a (sampled) contended
/// acquisition again, for at most this long: sleep mode can leave one thread taking
/// the lock while the others sleep, a state that outlasts the switch to spin mode and
/// runs at sleep mode's pace (see [`inherits_sleepers`]).
const SETTLE_MAX_NS: u64 = 5_000_000;
/// Fewest acquisitions of the class in a phase, so that a slow lock's phase still
/// measures something; a phase never lasts longer than [`PHASE_MAX_NS`].
pub(super) const PHASE_ACQUISITIONS: u64 = 1_000;
const PHASE_MAX_NS: u64 = 20_000_000;
/// Throughputs this close (3%) count as the same; CPU per acquisition then decides, if
/// one mode is [`CHEAPER`].
const SAME_THROUGHPUT: (u64, u64) = (97, 100);
/// At least 10% less CPU per acquisition.
const CHEAPER: (u64, u64) = (90, 100);
/// The other mode must be this much (10%) faster to be chosen for its throughput.
const CLEARLY_FASTER: (u64, u64) = (110, 100);
/// From the second round on, a mode below this share of the other's throughput (80%)
/// has lost: the experiment stops early.
const CLEARLY_WORSE: (u64, u64) = (80, 100);
/// Contended acquisitions a class must have had before its first experiment.
pub(super) const HOT: u32 = 64;
pub(super) const FIRST_INTERVAL_NS: u64 = 250_000_000;
/// After an experiment whose modes ran within 10% of each other, the next comes this
/// soon (but never sooner than [`INTERVAL_PER_EXPERIMENT`] allows): a close call can be
/// a phase that missed the state its mode keeps, and one more experiment costs little,
/// its phases in a mode at most about 10% slower. Only while the class's interval is
/// still the first (so at most twice in a row, then as usual): experiments turn off
/// the fast path of every mutex in the process, and a program of many classes that
/// all tie must not keep one running all the time.
pub(super) const CLOSE_CALL_INTERVAL_NS: u64 = 50_000_000;
/// An experiment that changed a class's mode is checked this long after, and again
/// [`CHECK_AGAIN_NS`] later if the new mode passed: a wrong verdict is undone early,
/// and a right one is still checked once the new mode has had time to settle into the
/// state it keeps (see [`check`]).
pub(super) const CHECK_AFTER_NS: u64 = 10_000_000;
/// How long after a passed check the next one comes.
pub(super) const CHECK_AGAIN_NS: u64 = 20_000_000;
/// Checks a changed mode must pass to stand until the next experiment.
const CHECKS: u32 = 2;
/// How often a class's pace in its own mode is watched between its experiments (see
/// [`watch`]). A watch is not free where the lock is short: while it measures, every
/// acquisition takes the general path, and the longer path from a release to the
/// owner's next acquisition can end a state sleep mode keeps (one thread taking the
/// lock alone). 3 s runs at load 0 (2, 4 and 16 threads) read 0.93-1.07× those
/// without watches with a watch every 250 ms, 0.98-1.07× with one every 500 ms: both
/// within the noise, the longer interval the safer.
pub(super) const WATCH_INTERVAL_NS: u64 = 500_000_000;
/// Watches of different classes end at least this far apart, so that a program with
/// many hot classes spends at most about 5% of its time watching (a watch measures for
/// [`CHECK_PHASE_NS`]), each class then watched less often.
const WATCHES_APART_NS: u64 = 100_000_000;
/// A watched pace this many times faster or slower than the one before means the
/// workload changed: more than a short lock's two states differ by in one mode (sleep
/// mode's checks on `sysbench mutex` read 7-26 Mops/s, 3.7×).
const WATCH_BAND: u64 = 4;
/// A spin phase with fewer than this share (in 1/1000: 1/32) of contended acquisitions
/// measured no spinning, and is left out of the experiment's sums; an experiment left
/// with none compared nothing, and the next one comes after [`RETRY_INTERVAL_NS`],
/// twice as late each time that happens again. (Two threads on one CPU, before the
/// scheduler spreads them: 0-0.7% of the acquisitions contended; a spin phase after a
/// sleep phase whose sleepers still sleep: 0-2.4%. Two threads on two CPUs with an
/// empty critical section, where a thread mostly takes the lock back uncontended:
/// 5-9%.)
pub(super) const CONTENDED_ENOUGH: u64 = 31;
pub(super) const RETRY_INTERVAL_NS: u64 = 10_000_000;
/// The next experiment waits at least this many times as long as the last one took, so
/// that a slow lock's long phases cost it at most a tenth of its time.
pub(super) const INTERVAL_PER_EXPERIMENT: u64 = 10;
pub(super) const MAX_INTERVAL_NS: u64 = 8_000_000_000;

/// Why a class changed mode, or kept it, for the trace.
pub enum Because {
    /// The window's spins cost more CPU than the sleeps their wins avoided.
    SpinsLose {
        wins: u32,
        spins: u32,
        spent_ns: u64,
        saved_ns: u64,
    },
    /// The probes' wins would save at least twice what spinning costs.
    ProbesWin {
        wins: u32,
        probes: u32,
        spent_ns: u64,
        saved_ns: u64,
    },
    Measured(Outcome),
    /// The experiment's spin phases were hardly contended: it compared nothing, and the
    /// class's mode stands until the next one, which comes soon.
    Uncontended(Outcome),
    /// A check of the mode the last experiment chose: it ran at `per_s`, against the
    /// `to_beat_per_s` the mode before had kept in that experiment.
    Checked {
        per_s: u64,
        to_beat_per_s: u64,
    },
    /// A watch found the class's pace in its mode at `per_s`, [`WATCH_BAND`] or more
    /// times off the `pace_per_s` it kept before: the workload changed, and the class
    /// experiments again at once. The mode stands until then.
    Watched {
        per_s: u64,
        pace_per_s: u64,
    },
}

impl Because {
    /// The trace's name for it.
    pub fn name(&self) -> &'static str {
        match self {
            Because::SpinsLose { .. } => "spins_lose",
            Because::ProbesWin { .. } => "probes_win",
            Because::Measured(_) => "measured",
            Because::Uncontended(_) => "uncontended",
            Because::Checked { .. } => "checked",
            Because::Watched { .. } => "watched",
        }
    }

    /// An experiment's outcome: traced even when the mode stands.
    pub(super) fn is_experiment(&self) -> bool {
        matches!(self, Because::Measured(_) | Because::Uncontended(_) | Because::Checked { .. })
    }
}

/// What an experiment measured, per mode: acquisitions per second, CPU nanoseconds per
/// acquisition, and the share of the acquisitions that were contended (in 1/1000), all
/// over the classes it measured.
#[derive(Clone, Copy, Default)]
pub struct Outcome {
    pub per_s: [u64; 2],
    pub cpu_ns_per_acq: [u64; 2],
    pub contended_permille: [u64; 2],
    /// Classes the experiment measured together (module header).
    pub classes: u32,
}

impl Outcome {
    /// No spin phase was counted: in each, hardly an acquisition was contended
    /// ([`CONTENDED_ENOUGH`]), so hardly a waiter spun, and the outcome says nothing
    /// about spinning. (Sleep phases always count: one can be uncontended because
    /// sleeping works, a sleeper leaving the owner to take the lock alone.)
    fn compared_nothing(&self) -> bool {
        self.per_s[Mode::Spin as usize] == 0
    }

    /// Neither mode ran clearly (10%) faster than the other.
    fn close_call(&self) -> bool {
        let [spin, sleep] = self.per_s;
        !clearly_faster(spin, sleep) && !clearly_faster(sleep, spin)
    }
}

/// What one phase of an experiment measured, for the trace: the phase's place in the
/// experiment and its mode, the class's acquisitions per second, how many in 1,000 were
/// contended, the process's CPU per acquisition, and how many CPUs the process kept
/// busy (in 1/1000: 1000 is one CPU all the time).
pub struct Phase {
    pub index: u32,
    pub mode: Mode,
    pub per_s: u64,
    pub contended_permille: u64,
    pub cpu_ns_per_acq: u64,
    pub busy_cpus_permille: u64,
    /// The phase is in the experiment's sums: a sleep phase, or a spin phase in which
    /// enough acquisitions were contended ([`CONTENDED_ENOUGH`]) for waiters to spin.
    pub counted: bool,
}

/// What the running measurement is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(super) enum Run {
    /// An A/B experiment: rounds of one phase per mode.
    Experiment,
    /// One phase in the mode an experiment has just chosen ([`check`]).
    Check,
    /// One phase in a class's mode, between its experiments ([`watch`]).
    Watch,
}

pub(super) struct Experiment {
    /// The experimenting class's index plus one (its leader's, when several classes
    /// experiment together); 0: none.
    class: AtomicU32,
    /// What it is: a [`Run`].
    run: AtomicU8,
    /// When the last watch, whichever its class, ended.
    watch_ended_ns: AtomicU64,
    /// The classes in the experiment, the leader's among them: a bit per table entry.
    members: [AtomicU64; CLASSES / 64],
    /// The mode its classes waited in before the experiment (the same for all), and
    /// when it began.
    before: AtomicU8,
    began_ns: AtomicU64,
    /// The phase running: rounds × 2; set to `u32::MAX` while one thread ends a phase.
    phase: AtomicU32,
    /// When the phase began, then (once settled) when its measure began.
    started_ns: AtomicU64,
    settled: AtomicBool,
    started_cpu_ns: AtomicU64,
    started_count: AtomicU64,
    /// Contended acquisitions of the class (sampled) since the experiment began, and
    /// when the phase's measure began.
    contended: AtomicU64,
    started_contended: AtomicU64,
    /// Totals per mode.
    acquisitions: [AtomicU64; 2],
    contended_in: [AtomicU64; 2],
    wall_ns: [AtomicU64; 2],
    cpu_ns: [AtomicU64; 2],
    /// See [`Experiment::verdict`].
    verdict: AtomicU8,
}

impl Experiment {
    pub(super) fn before(&self) -> Mode {
        Mode::from_u8(self.before.load(Relaxed))
    }

    fn run(&self) -> Run {
        match self.run.load(Relaxed) {
            r if r == Run::Check as u8 => Run::Check,
            r if r == Run::Watch as u8 => Run::Watch,
            _ => Run::Experiment,
        }
    }

    /// `class` is in the experiment (as its leader or as a companion).
    pub(super) fn has(&self, class: &Class) -> bool {
        let i = class.index();
        self.members[i / 64].load(Relaxed) & (1 << (i % 64)) != 0
    }

    pub(super) fn enroll(&self, class: &Class) {
        let i = class.index();
        self.members[i / 64].fetch_or(1 << (i % 64), Relaxed);
    }

    /// The classes in the experiment.
    fn members(&self) -> impl Iterator<Item = &'static Class> + '_ {
        self.members.iter().enumerate().flat_map(|(word, bits)| {
            let bits = bits.load(Relaxed);
            (0..64).filter(move |b| bits & (1 << b) != 0).map(move |b| &TABLE[word * 64 + b])
        })
    }

    /// Ends the experiment: its classes take the general path no more for its sake.
    pub(super) fn close(&self) {
        config::set_measuring(false);
        for word in &self.members {
            word.store(0, Relaxed);
        }
        self.class.store(0, Release);
    }

    /// The mode the last experiment that compared something chose, whichever its class,
    /// or the mode a check of that choice went back to.
    fn verdict(&self) -> Option<Mode> {
        match self.verdict.load(Relaxed) {
            NO_VERDICT => None,
            v => Some(Mode::from_u8(v)),
        }
    }
}

/// [`Experiment::verdict`] before any experiment compared something.
const NO_VERDICT: u8 = u8::MAX;

pub(super) static EXPERIMENT: Experiment = Experiment {
    class: AtomicU32::new(0),
    run: AtomicU8::new(Run::Experiment as u8),
    watch_ended_ns: AtomicU64::new(0),
    members: [const { AtomicU64::new(0) }; CLASSES / 64],
    before: AtomicU8::new(0),
    began_ns: AtomicU64::new(0),
    phase: AtomicU32::new(0),
    started_ns: AtomicU64::new(0),
    settled: AtomicBool::new(false),
    started_cpu_ns: AtomicU64::new(0),
    started_count: AtomicU64::new(0),
    contended: AtomicU64::new(0),
    started_contended: AtomicU64::new(0),
    acquisitions: [AtomicU64::new(0), AtomicU64::new(0)],
    contended_in: [AtomicU64::new(0), AtomicU64::new(0)],
    wall_ns: [AtomicU64::new(0), AtomicU64::new(0)],
    cpu_ns: [AtomicU64::new(0), AtomicU64::new(0)],
    verdict: AtomicU8::new(NO_VERDICT),
};

/// Acquisitions of the experimenting classes, striped by CPU so that counting costs no
/// shared cache line.
#[repr(align(64))]
struct Stripe(AtomicU64);
const STRIPES: usize = 64;
static COUNTS: [Stripe; STRIPES] = [const { Stripe(AtomicU64::new(0)) }; STRIPES];
/// Acquisitions of other locks meanwhile (they only pace the clock checks).
static OTHERS: [Stripe; STRIPES] = [const { Stripe(AtomicU64::new(0)) }; STRIPES];

fn count_total() -> u64 {
    COUNTS.iter().map(|s| s.0.load(Relaxed)).fold(0, u64::wrapping_add)
}

/// The mode phase `phase` of an experiment measures: rounds alternate which goes first.
/// The first phase is the class's own mode (`before`), whose waiters are already there.
fn phase_mode(phase: u32, before: Mode) -> Mode {
    let first = if (phase / 2).is_multiple_of(2) { before } else { before.other() };
    if phase.is_multiple_of(2) {
        first
    } else {
        first.other()
    }
}

/// An experiment is running: every acquisition takes the general path, which calls
/// [`count`].
#[inline]
pub fn measuring() -> bool {
    config::fast_path_off() & config::MEASURING != 0
}

/// The caller took `m` (general path, while an experiment runs). Counts it if it is of
/// an experimenting class; now and then, whatever the lock, looks at the clock, so
/// that a phase ends even when the class's contended acquisitions stop.
#[cold]
pub fn count(m: &RawMutex) {
    let running = EXPERIMENT.class.load(Relaxed) as usize;
    if running == 0 {
        return;
    }
    let stripe = crate::thread::cpu().unwrap_or(0) as usize % STRIPES;
    let member = known_class_of(m).is_some_and(Class::experimenting);
    let counter = if member { &COUNTS[stripe] } else { &OTHERS[stripe] };
    if counter.0.fetch_add(1, Relaxed) % 256 == 255 {
        advance(&TABLE[running - 1], sys::now_ns());
    }
}

/// After a sampled contended acquisition of `class`, standing for `weight` of them:
/// counts it to the running experiment if the class is in it, and moves that on, or
/// starts an experiment (or check) when the class's next is due, or else a watch when
/// one is.
pub(super) fn experiment_step(class: &'static Class, weight: u32) {
    let running = EXPERIMENT.class.load(Relaxed) as usize;
    if running != 0 {
        if class.experimenting() {
            EXPERIMENT.contended.fetch_add(u64::from(weight), Relaxed);
            advance(&TABLE[running - 1], sys::now_ns());
        }
        return;
    }
    if class.counts.contended.load(Relaxed) < HOT || class.young() || class.index() == 0 {
        return;
    }
    let now = sys::now_ns();
    let due = class.counts.next_experiment_ns.load(Relaxed);
    if due == 0 {
        // First time hot: the first experiment comes at once.
        class.counts.next_experiment_ns.store(now, Relaxed);
    } else if now < due {
        let apart = now >= EXPERIMENT.watch_ended_ns.load(Relaxed).saturating_add(WATCHES_APART_NS);
        if now >= class.counts.next_watch_ns.load(Relaxed) && !class.check_due() && apart {
            start(class, Run::Watch, now);
        }
        return;
    }
    start(class, if class.check_due() { Run::Check } else { Run::Experiment }, now);
}

/// Starts a measurement led by `class`: an experiment, with the classes that join its
/// first one; a check, with the classes that took the verdict with it; or a watch of
/// the class alone.
fn start(class: &'static Class, run: Run, now: u64) {
    let e = &EXPERIMENT;
    // The phase word doubles as the lock on the experiment's fields.
    if e.class.compare_exchange(0, class.index() as u32 + 1, Acquire, Relaxed).is_err() {
        return;
    }
    e.run.store(run as u8, Relaxed);
    e.before.store(class.policy.mode.load(Relaxed), Relaxed);
    e.enroll(class);
    if run == Run::Check {
        // The classes that took the verdict together are checked together.
        let mode = class.waiting_mode();
        for companion in TABLE[1..].iter().filter(|c| c.check_due() && c.waiting_mode() == mode) {
            e.enroll(companion);
        }
    } else if run == Run::Experiment && class.untried() {
        for companion in TABLE[1..].iter().filter(|c| c.joins_first_experiment_of(class)) {
            e.enroll(companion);
        }
    }
    e.began_ns.store(now, Relaxed);
    e.contended.store(0, Relaxed);
    for m in 0..2 {
        e.acquisitions[m].store(0, Relaxed);
        e.contended_in[m].store(0, Relaxed);
        e.wall_ns[m].store(0, Relaxed);
        e.cpu_ns[m].store(0, Relaxed);
    }
    begin_phase(0, now);
    if run == Run::Watch {
        start_measure(now); // no mode changed: nothing to settle
    }
    config::set_measuring(true);
}

/// Switches the experiment's classes to the phase's mode. What the phase measures starts
/// only after [`SETTLE_NS`]: the waiters of the mode before (asleep, or spinning) are
/// still waiting its way, and would be counted to the new one.
fn begin_phase(phase: u32, now: u64) {
    let e = &EXPERIMENT;
    let mode = phase_mode(phase, e.before());
    for member in e.members() {
        member.policy.mode.store(mode as u8, Relaxed);
    }
    e.started_ns.store(now, Relaxed);
    e.settled.store(false, Relaxed);
    e.started_contended.store(e.contended.load(Relaxed), Relaxed);
    e.phase.store(phase, Release);
}

/// Phase `phase` spins after a sleep phase. Its waiters are then mostly asleep, and
/// whoever holds the lock can keep taking it while they sleep: in that state
/// (solo, no acquisition contended, one CPU busy) the phase would measure the sleep
/// phase's pace, not spinning's, however long it stayed so. It settles until a
/// contended acquisition shows the waiters are back, or [`SETTLE_MAX_NS`]. (The
/// experiment counts the sampled ones, see [`weight`]: one in [`SAMPLE`] of each
/// thread's, so a lock contended again is seen within a few dozen acquisitions.)
///
/// [`weight`]: super::weight
/// [`SAMPLE`]: super::SAMPLE
pub(super) fn inherits_sleepers(phase: u32, before: Mode) -> bool {
    phase > 0 && phase_mode(phase, before) == Mode::Spin && phase_mode(phase - 1, before) == Mode::Sleep
}

/// The phase has settled: its measure starts now (called by the thread that holds the
/// phase word).
fn start_measure(now: u64) {
    let e = &EXPERIMENT;
    e.started_ns.store(now, Relaxed);
    e.started_cpu_ns.store(sys::process_cpu_ns(), Relaxed);
    e.started_count.store(count_total(), Relaxed);
    e.started_contended.store(e.contended.load(Relaxed), Relaxed);
    e.settled.store(true, Relaxed);
}

/// Ends the running phase if it has lasted long enough; the thread that ends it
/// records it and starts the next one, or decides.
fn advance(class: &Class, now: u64) {
    let e = &EXPERIMENT;
    let phase = e.phase.load(Acquire);
    if phase == u32::MAX {
        return;
    }
    let elapsed = now.saturating_sub(e.started_ns.load(Relaxed));
    if !e.settled.load(Relaxed) {
        let waiters_back = !inherits_sleepers(phase, e.before())
            || e.contended.load(Relaxed) > e.started_contended.load(Relaxed)
            || elapsed >= SETTLE_MAX_NS;
        if elapsed >= SETTLE_NS
            && waiters_back
            && e.phase.compare_exchange(phase, u32::MAX, Acquire, Relaxed).is_ok()
        {
            start_measure(now);
            e.phase.store(phase, Release);
        }
        return;
    }
    let run = e.run();
    let shortest = if run == Run::Experiment { PHASE_NS } else { CHECK_PHASE_NS };
    if elapsed < shortest {
        return; // the common case, decided without reading the stripes
    }
    let acquisitions = count_total().wrapping_sub(e.started_count.load(Relaxed));
    if acquisitions < PHASE_ACQUISITIONS && elapsed < PHASE_MAX_NS {
        return;
    }
    if e.phase.compare_exchange(phase, u32::MAX, Acquire, Relaxed).is_err() {
        return;
    }
    let cpu = sys::process_cpu_ns().saturating_sub(e.started_cpu_ns.load(Relaxed));
    let mode = phase_mode(phase, e.before());
    let contended = e.contended.load(Relaxed).saturating_sub(e.started_contended.load(Relaxed));
    let (per_s, cpu_ns_per_acq, contended_permille) = rates(acquisitions, contended, elapsed, cpu);
    let counted = mode == Mode::Sleep || contended_permille >= CONTENDED_ENOUGH;
    if counted {
        let m = mode as usize;
        e.acquisitions[m].fetch_add(acquisitions, Relaxed);
        e.contended_in[m].fetch_add(contended, Relaxed);
        e.wall_ns[m].fetch_add(elapsed, Relaxed);
        e.cpu_ns[m].fetch_add(cpu, Relaxed);
    }
    let busy_cpus_permille = cpu.saturating_mul(1000) / elapsed.max(1);
    let figures =
        Phase { index: phase, mode, per_s, contended_permille, cpu_ns_per_acq, busy_cpus_permille, counted };
    observe::experiment_phase(class.trace_key(), &figures);
    match run {
        Run::Check => return check(per_s, now),
        Run::Watch => return watch(class, per_s, now),
        Run::Experiment => {}
    }
    let next = phase + 1;
    let outcome = outcome();
    // An experiment stops early when its first spin phase is left out, or when two
    // rounds leave no doubt.
    let clear = (mode == Mode::Spin && phase < 2 && outcome.compared_nothing())
        || (next.is_multiple_of(2) && next >= 4 && clearly_decided(&outcome));
    if next < 2 * ROUNDS && !clear {
        begin_phase(next, now);
        return;
    }
    decide(outcome, now);
}

/// What `acquisitions` of a class, `contended` of them, over `wall_ns` with `cpu_ns` of
/// the process's CPU come to: acquisitions per second, CPU nanoseconds per acquisition,
/// and the contended share in 1/1000.
fn rates(acquisitions: u64, contended: u64, wall_ns: u64, cpu_ns: u64) -> (u64, u64, u64) {
    let per_s = acquisitions.saturating_mul(1_000_000_000) / wall_ns.max(1);
    let cpu_ns_per_acq = cpu_ns / acquisitions.max(1);
    let contended_permille = (contended * 1000 / acquisitions.max(1)).min(1000);
    (per_s, cpu_ns_per_acq, contended_permille)
}

fn outcome() -> Outcome {
    let e = &EXPERIMENT;
    let mut o = Outcome { classes: e.members().count() as u32, ..Outcome::default() };
    for m in 0..2 {
        (o.per_s[m], o.cpu_ns_per_acq[m], o.contended_permille[m]) = rates(
            e.acquisitions[m].load(Relaxed),
            e.contended_in[m].load(Relaxed),
            e.wall_ns[m].load(Relaxed),
            e.cpu_ns[m].load(Relaxed),
        );
    }
    o
}

/// `a` acquisitions per second is clearly (10%) more than `b`.
fn clearly_faster(a: u64, b: u64) -> bool {
    a * CLEARLY_FASTER.1 > b * CLEARLY_FASTER.0
}

/// After a round: one mode's throughput far below the other's.
fn clearly_decided(o: &Outcome) -> bool {
    let [spin, sleep] = o.per_s;
    spin * CLEARLY_WORSE.1 < sleep * CLEARLY_WORSE.0 || sleep * CLEARLY_WORSE.1 < spin * CLEARLY_WORSE.0
}

/// The mode an experiment's outcome chooses for a class in mode `now`: the other mode
/// if it is as fast (within 3%) and at least 10% cheaper in CPU per acquisition, or
/// clearly (10%) faster; otherwise `now`. Phases of a millisecond are noisy, and the
/// process's CPU time holds other classes' work too, so a change must show a margin;
/// `now` is what the spins' own economics chose.
pub fn choose(o: &Outcome, now: Mode) -> Mode {
    let (i, j) = (now as usize, now.other() as usize);
    let as_fast = o.per_s[j] * SAME_THROUGHPUT.1 >= o.per_s[i] * SAME_THROUGHPUT.0;
    let cheaper = o.cpu_ns_per_acq[j] * CHEAPER.1 < o.cpu_ns_per_acq[i] * CHEAPER.0;
    let faster = clearly_faster(o.per_s[j], o.per_s[i]);
    if (as_fast && cheaper) || faster {
        now.other()
    } else {
        now
    }
}

fn decide(o: Outcome, now: u64) {
    let e = &EXPERIMENT;
    let took = now.saturating_sub(e.began_ns.load(Relaxed));
    if !o.compared_nothing() {
        e.verdict.store(choose(&o, e.before()) as u8, Relaxed);
    }
    for class in e.members() {
        decide_for(class, &o, now + INTERVAL_PER_EXPERIMENT * took, now);
    }
    e.close();
}

/// What the experiment's outcome `o` means for one of its classes; its next experiment
/// comes no sooner than `not_before`.
fn decide_for(class: &Class, o: &Outcome, not_before: u64, now: u64) {
    let before = EXPERIMENT.before();
    // The mode the class had before the experiment is what a trace reader compares
    // with; during the experiment it alternated.
    class.policy.mode.store(before as u8, Relaxed);
    let last = class.counts.interval_ns.load(Relaxed);
    let interval = if o.compared_nothing() {
        // Often a start-up effect (threads not yet spread over the CPUs), or a lock
        // its threads seldom meet on while they wait on another class's: the class
        // takes the verdict of the last experiment that compared something (in a
        // program with one hot class, its own; undone if a check undid it), tries
        // again soon, then less and less often if the lock stays that way. A verdict
        // taken counts as measured: sleep mode's probes, which ask only whether spins
        // win and not whether they raise throughput, must not undo it before the
        // class's own next experiment (in `sysbench mutex` they sent such classes
        // back to spinning within 10 ms).
        let verdict = EXPERIMENT.verdict();
        let to = verdict.unwrap_or(before);
        class.set_mode(to, class.measured() || verdict.is_some(), &Because::Uncontended(*o));
        (last * 2).clamp(RETRY_INTERVAL_NS, MAX_INTERVAL_NS)
    } else {
        let to = choose(o, before);
        class.set_mode(to, true, &Because::Measured(*o));
        class.counts.compared.store(true, Relaxed);
        if before == to {
            (last * 2).clamp(FIRST_INTERVAL_NS, MAX_INTERVAL_NS)
        } else {
            class.counts.to_beat_per_s.store(o.per_s[before as usize].max(1), Relaxed);
            FIRST_INTERVAL_NS
        }
    };
    class.counts.interval_ns.store(interval, Relaxed);
    let repeat = !o.compared_nothing() && o.close_call() && last <= FIRST_INTERVAL_NS;
    let wait = if repeat { CLOSE_CALL_INTERVAL_NS } else { interval };
    // A check measures the mode the class is in anyway, so it may come before
    // `not_before`.
    let next = if class.check_due() { now + CHECK_AFTER_NS } else { (now + wait).max(not_before) };
    class.counts.next_experiment_ns.store(next, Relaxed);
    // A class that compared nothing keeps its count: it is still untried, and joins
    // the next first experiment that another class of the same contention starts
    // (in `sysbench mutex` that one often starts right after, when a count set back
    // to 0 would leave it out, spinning alone while the others sleep).
    if !o.compared_nothing() {
        class.counts.contended.store(0, Relaxed);
    }
    let alone = o.classes == 1;
    watch_next(class, if alone { o.per_s[class.waiting_mode() as usize] } else { 0 }, now);
}

/// The end of a check, whose one phase ran at `per_s` in the mode its classes' last
/// experiment chose, [`CHECK_AFTER_NS`] after that experiment (the first check) or
/// [`CHECK_AGAIN_NS`] after the first check (the second), measured for at least
/// [`CHECK_PHASE_NS`].
///
/// A phase of a millisecond can catch a state that its mode does not keep. The one
/// that misleads most: when a short lock's class switches to sleep mode, its waiters
/// fall asleep and one thread takes the lock alone, at single-thread speed; on some
/// machines and thread counts the state lasts (sleeping then wins), on others it gives
/// way within milliseconds to waiters that sleep and wake in turn, at a fraction of
/// the pace. So a verdict that changed the mode is checked in the new mode: if it runs
/// clearly (10%) slower than the old mode did in the experiment, the class goes back.
/// Within that margin the verdict stands: it took a margin to be made (or gave up 3% of
/// throughput for 10% of CPU on purpose), and a phase in a mode whose pace comes in
/// bursts, as sleep mode's does, reads a few per cent either way in the same state.
/// The first check comes soon, so that a wrong verdict costs little; a verdict that
/// passes it is checked again once the new mode has had time to settle. A check costs
/// no phase in the other mode. The classes' next experiment comes
/// [`FIRST_INTERVAL_NS`] after the check that undid the verdict or the second one.
pub(super) fn check(per_s: u64, now: u64) {
    let e = &EXPERIMENT;
    let before = e.before();
    let alone = e.members().count() == 1;
    for class in e.members() {
        let c = &class.counts;
        let to_beat_per_s = c.to_beat_per_s.load(Relaxed);
        let behind = clearly_faster(to_beat_per_s, per_s);
        let to = if behind { before.other() } else { before };
        if behind {
            // The verdict that classes without a comparison of their own take goes too.
            e.verdict.store(to as u8, Relaxed);
        }
        class.policy.mode.store(before as u8, Relaxed);
        class.set_mode(to, true, &Because::Checked { per_s, to_beat_per_s });
        let next = if !behind && c.checks_passed.fetch_add(1, Relaxed) + 1 < CHECKS {
            now + CHECK_AGAIN_NS
        } else {
            c.to_beat_per_s.store(0, Relaxed);
            c.checks_passed.store(0, Relaxed);
            now + c.interval_ns.load(Relaxed)
        };
        c.next_experiment_ns.store(next, Relaxed);
        c.contended.store(0, Relaxed);
        watch_next(class, if alone && !behind { per_s } else { 0 }, now);
    }
    e.close();
}

/// The end of a watch: one phase in `class`'s own mode, measured for at least
/// [`CHECK_PHASE_NS`], [`WATCH_INTERVAL_NS`] after its last experiment, check or watch,
/// ran at `per_s`.
///
/// A class's mode stands until its next experiment, up to [`MAX_INTERVAL_NS`] later:
/// a program whose lock is held long for a while and then briefly would spend that
/// long in the mode of the phase before. A watch sees the change coming: the class's
/// pace in its own mode [`WATCH_BAND`] times faster or slower than at the watch before
/// (or at an experiment or check of it alone). Its next experiment then comes at once,
/// and the waits between its experiments grow again from the shortest. Like a check,
/// a watch costs no phase in the other mode, only the counting.
pub(super) fn watch(class: &Class, per_s: u64, now: u64) {
    let c = &class.counts;
    let pace_per_s = c.pace_per_s.load(Relaxed);
    let faster = per_s > pace_per_s.saturating_mul(WATCH_BAND);
    let slower = per_s.saturating_mul(WATCH_BAND) < pace_per_s;
    if pace_per_s != 0 && (faster || slower) {
        let mode = class.waiting_mode().name();
        observe::policy_changed(class.trace_key(), mode, mode, &Because::Watched { per_s, pace_per_s });
        c.interval_ns.store(FIRST_INTERVAL_NS, Relaxed);
        c.next_experiment_ns.store(now, Relaxed);
    }
    watch_next(class, per_s, now);
    EXPERIMENT.watch_ended_ns.store(now, Relaxed);
    EXPERIMENT.close();
}

/// After a measurement of `class` that ended at `now`: its next watch, and the pace in
/// its mode that the watch compares with (0: none, the watch only measures).
fn watch_next(class: &Class, pace_per_s: u64, now: u64) {
    class.counts.pace_per_s.store(pace_per_s, Relaxed);
    class.counts.next_watch_ns.store(now + WATCH_INTERVAL_NS, Relaxed);
}

/// In a child after `fork`: an experiment of the parent's (its phases timed by the
/// parent's threads) is abandoned; its classes keep the mode they had.
pub fn after_fork_in_child() {
    let e = &EXPERIMENT;
    if e.class.load(Relaxed) != 0 {
        for class in e.members() {
            class.policy.mode.store(e.before() as u8, Relaxed);
        }
        e.phase.store(0, Relaxed);
        e.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auto::class::{class_of, PROBE_WINDOW};
    use crate::auto::{table_to_myself, SAMPLE};

    fn outcome(spin: u64, sleep: u64, spin_cpu: u64, sleep_cpu: u64) -> Outcome {
        Outcome {
            per_s: [spin, sleep],
            cpu_ns_per_acq: [spin_cpu, sleep_cpu],
            contended_permille: [500, 100],
            classes: 1,
        }
    }

    /// What an experiment none of whose spin phases counted comes to.
    fn compared_nothing() -> Outcome {
        outcome(0, 0, 0, 0)
    }

    /// An experiment of `class` alone, the class in mode `from` before it, that began and
    /// ended at `at` with the outcome `o` (what its class makes of it is then decided).
    fn experiment_ends(class: &'static Class, from: Mode, o: Outcome, at: u64) {
        class.counts.compared.store(true, Relaxed);
        EXPERIMENT.before.store(from as u8, Relaxed);
        EXPERIMENT.class.store(class.index() as u32 + 1, Relaxed);
        EXPERIMENT.run.store(Run::Experiment as u8, Relaxed);
        EXPERIMENT.began_ns.store(at, Relaxed);
        EXPERIMENT.enroll(class);
        decide(o, at);
    }

    #[test]
    fn a_spin_phase_in_which_hardly_a_waiter_spun_is_left_out() {
        let _table = table_to_myself();
        let e = &EXPERIMENT;
        // The first phase of a class in spin mode, with so many of its acquisitions
        // contended (in 1/1000): what goes into the sums.
        let first_spin_phase = |contended_permille: u64| {
            for m in 0..2 {
                for sum in [&e.acquisitions[m], &e.contended_in[m], &e.wall_ns[m], &e.cpu_ns[m]] {
                    sum.store(0, Relaxed);
                }
            }
            e.before.store(Mode::Spin as u8, Relaxed);
            e.class.store(1, Relaxed);
            e.run.store(Run::Experiment as u8, Relaxed);
            begin_phase(0, 0);
            advance(&TABLE[0], SETTLE_NS);
            let acquisitions = 2 * PHASE_ACQUISITIONS;
            COUNTS[0].0.fetch_add(acquisitions, Relaxed);
            e.contended.fetch_add(acquisitions * contended_permille / 1000, Relaxed);
            advance(&TABLE[0], SETTLE_NS + PHASE_NS);
            let (summed, next) = (e.acquisitions[Mode::Spin as usize].load(Relaxed), e.phase.load(Relaxed));
            e.phase.store(0, Relaxed);
            e.close();
            (summed, next)
        };
        assert_eq!(first_spin_phase(100), (2 * PHASE_ACQUISITIONS, 1), "counted; the next phase runs");
        // Hardly contended: no waiter spun. It is left out, and the experiment stops,
        // having compared nothing.
        assert_eq!(first_spin_phase(CONTENDED_ENOUGH - 1).0, 0);
        assert_eq!(e.class.load(Relaxed), 0, "decided");
        // Sleep phases always count: one can be uncontended because sleeping works.
        assert!(!outcome(300, 100, 50, 80).compared_nothing());
        assert!(compared_nothing().compared_nothing());
    }

    #[test]
    fn a_mode_stands_unless_the_other_is_clearly_faster_or_as_fast_and_cheaper() {
        use Mode::*;
        for now in [Spin, Sleep] {
            // Clearly faster.
            assert_eq!(choose(&outcome(300, 100, 50, 80), now), Spin);
            assert_eq!(choose(&outcome(100, 300, 50, 80), now), Sleep);
            // As fast (within 3%) and at least 10% cheaper: the cheaper one.
            assert_eq!(choose(&outcome(100, 98, 160, 100), now), Sleep);
            assert_eq!(choose(&outcome(98, 100, 100, 160), now), Spin);
            // The same within the noise: the mode stands.
            assert_eq!(choose(&outcome(100, 101, 100, 95), now), now);
        }
        // 5% slower is not as fast, however cheap.
        assert_eq!(choose(&outcome(100, 95, 160, 100), Spin), Spin);
        // A little faster but dearer: noise, the mode stands.
        assert_eq!(choose(&outcome(190, 203, 463, 839), Spin), Spin);
        assert_eq!(choose(&outcome(203, 190, 839, 463), Sleep), Sleep);
    }

    #[test]
    fn a_class_whose_experiment_compared_nothing_takes_the_last_verdict() {
        let mut storage: libc::pthread_mutex_t = libc::PTHREAD_MUTEX_INITIALIZER;
        // SAFETY: `storage` is a mutex, alive for the whole test.
        let m = unsafe { RawMutex::from_ptr(&mut storage) };
        let class = class_of(m);
        let uncontended = compared_nothing();
        let _table = table_to_myself();
        // No experiment has compared anything yet: the class keeps its mode.
        EXPERIMENT.verdict.store(NO_VERDICT, Relaxed);
        EXPERIMENT.before.store(Mode::Spin as u8, Relaxed);
        EXPERIMENT.enroll(class);
        class.policy.measured.store(false, Relaxed);
        decide(uncontended, 0);
        assert_eq!((class.mode(), class.measured()), (Mode::Spin, false));
        // Another class's experiment chose sleep: this one follows it, and the verdict
        // counts as measured, so that probes winning cannot undo it.
        EXPERIMENT.verdict.store(Mode::Sleep as u8, Relaxed);
        EXPERIMENT.before.store(Mode::Spin as u8, Relaxed);
        EXPERIMENT.enroll(class);
        decide(uncontended, 0);
        assert_eq!((class.mode(), class.measured()), (Mode::Sleep, true));
        for _ in 0..PROBE_WINDOW {
            class.spun(10, true);
        }
        assert_eq!(class.mode(), Mode::Sleep, "probes that win do not move a measured class");
        // An experiment that compared something decides for itself, and is the verdict
        // the next one that cannot tell will follow.
        EXPERIMENT.before.store(Mode::Sleep as u8, Relaxed);
        EXPERIMENT.enroll(class);
        decide(outcome(300, 100, 50, 80), 0);
        assert_eq!((class.mode(), EXPERIMENT.verdict()), (Mode::Spin, Some(Mode::Spin)));
    }

    #[test]
    fn classes_without_an_experiment_contended_alike_join_a_first_one_and_take_its_verdict() {
        let mut storage = [libc::PTHREAD_MUTEX_INITIALIZER; 5];
        let classes: Vec<&'static Class> = storage
            .iter_mut()
            .map(|m| {
                // SAFETY: each element is a mutex, alive for the whole test.
                class_of(unsafe { RawMutex::from_ptr(m) })
            })
            .collect();
        let [leader, alike, rare, asleep, decided] = classes[..] else { unreachable!() };
        let _table = table_to_myself();
        for (class, contended) in [(leader, 1000), (alike, 400), (rare, 200), (asleep, 1000), (decided, 1000)]
        {
            // As new, whatever an earlier test left in an entry of the same address.
            class.policy.mode.store(Mode::Spin as u8, Relaxed);
            class.policy.measured.store(false, Relaxed);
            class.counts.compared.store(false, Relaxed);
            class.counts.contended.store(contended, Relaxed);
        }
        asleep.policy.mode.store(Mode::Sleep as u8, Relaxed);
        decided.counts.compared.store(true, Relaxed);
        assert!(alike.joins_first_experiment_of(leader), "contended within 4x, the same mode");
        assert!(!rare.joins_first_experiment_of(leader), "contended 5x less often");
        assert!(!asleep.joins_first_experiment_of(leader), "waiting in the other mode");
        assert!(!decided.joins_first_experiment_of(leader), "it has had an experiment already");
        assert!(!leader.joins_first_experiment_of(leader));
        // A first experiment that compared nothing (threads not yet spread over the
        // CPUs) leaves both to try again together.
        let uncontended = compared_nothing();
        EXPERIMENT.verdict.store(NO_VERDICT, Relaxed);
        EXPERIMENT.before.store(Mode::Spin as u8, Relaxed);
        EXPERIMENT.enroll(leader);
        EXPERIMENT.enroll(alike);
        decide(uncontended, 0);
        assert!(alike.joins_first_experiment_of(leader), "still untried, and as contended as before");
        // Both take the verdict, and their next experiments are their own.
        EXPERIMENT.before.store(Mode::Spin as u8, Relaxed);
        EXPERIMENT.enroll(leader);
        EXPERIMENT.enroll(alike);
        assert!(alike.experimenting() && !rare.experimenting());
        decide(outcome(100, 300, 50, 80), 0);
        for class in [leader, alike] {
            assert_eq!((class.mode(), class.measured(), class.experimenting()), (Mode::Sleep, true, false));
        }
        assert!(!alike.joins_first_experiment_of(leader), "tried now");
        assert_eq!((rare.mode(), rare.measured()), (Mode::Spin, false));
    }

    #[test]
    fn a_verdict_that_changed_the_mode_is_checked_twice_and_undone_if_the_new_mode_falls_clearly_behind() {
        let mut storage = libc::PTHREAD_MUTEX_INITIALIZER;
        // SAFETY: `storage` is a mutex, alive for the whole test.
        let class = class_of(unsafe { RawMutex::from_ptr(&mut storage) });
        let _table = table_to_myself();
        // An experiment of a class in `from` that measured spin at 100/s and sleep at
        // 300/s, at time 0.
        let experiment = |from: Mode| {
            class.reset();
            experiment_ends(class, from, outcome(100, 300, 50, 80), 0);
        };
        // It moves the class from spin to sleep, and its check comes soon, sooner than
        // the experiment's length would allow another experiment: one phase, in sleep.
        let changed = || {
            experiment(Mode::Spin);
            assert_eq!((class.mode(), class.check_due()), (Mode::Sleep, true));
            assert_eq!(class.counts.next_experiment_ns.load(Relaxed), CHECK_AFTER_NS);
            start(class, Run::Check, CHECK_AFTER_NS);
            assert!(class.check_due() && class.experimenting());
            assert_eq!(class.waiting_mode(), Mode::Sleep);
        };
        let (first, second) = (CHECK_AFTER_NS, CHECK_AFTER_NS + CHECK_AGAIN_NS);
        // Sleep mode runs clearly behind spin's 100/s: the class goes back to spin at
        // once. Within 10% of it, the verdict stands.
        changed();
        check(95, first);
        assert_eq!((class.mode(), class.check_due()), (Mode::Sleep, true));
        changed();
        assert_eq!(EXPERIMENT.verdict(), Some(Mode::Sleep));
        check(90, first);
        assert_eq!((class.mode(), class.measured(), class.check_due()), (Mode::Spin, true, false));
        assert_eq!(EXPERIMENT.verdict(), Some(Mode::Spin));
        assert!(!class.experimenting());
        assert_eq!(class.counts.next_experiment_ns.load(Relaxed), first + FIRST_INTERVAL_NS);
        // Ahead at the first check, behind at the second, once settled: back to spin.
        changed();
        check(150, first);
        assert_eq!((class.mode(), class.check_due()), (Mode::Sleep, true));
        assert_eq!(class.counts.next_experiment_ns.load(Relaxed), second);
        start(class, Run::Check, second);
        check(90, second);
        assert_eq!((class.mode(), class.check_due()), (Mode::Spin, false));
        // Ahead at both: sleep stands, and the next experiment comes at the usual time.
        changed();
        check(150, first);
        start(class, Run::Check, second);
        check(150, second);
        assert_eq!((class.mode(), class.check_due()), (Mode::Sleep, false));
        assert_eq!(EXPERIMENT.verdict(), Some(Mode::Sleep));
        assert_eq!(class.counts.next_experiment_ns.load(Relaxed), second + FIRST_INTERVAL_NS);
        // A verdict that kept the mode is not checked.
        experiment(Mode::Sleep);
        assert_eq!((class.mode(), class.check_due()), (Mode::Sleep, false));
        assert!(class.counts.next_experiment_ns.load(Relaxed) >= FIRST_INTERVAL_NS);
        class.reset();
    }

    #[test]
    fn a_check_measures_for_longer_than_an_experiment_s_phase() {
        let mut storage = libc::PTHREAD_MUTEX_INITIALIZER;
        // SAFETY: `storage` is a mutex, alive for the whole test.
        let class = class_of(unsafe { RawMutex::from_ptr(&mut storage) });
        let _table = table_to_myself();
        // A class that went from spin (100/s) to sleep, at its check.
        class.reset();
        experiment_ends(class, Mode::Spin, outcome(100, 300, 50, 80), 0);
        start(class, Run::Check, CHECK_AFTER_NS);
        let settled = CHECK_AFTER_NS + SETTLE_NS;
        advance(class, settled);
        COUNTS[0].0.fetch_add(2 * PHASE_ACQUISITIONS, Relaxed);
        // An experiment's phase would end here; the check goes on.
        advance(class, settled + PHASE_NS);
        assert!(class.check_due() && class.experimenting());
        let end = settled + CHECK_PHASE_NS;
        advance(class, end);
        assert!(!class.experimenting(), "checked");
        assert_eq!(
            (class.mode(), class.counts.next_experiment_ns.load(Relaxed)),
            (Mode::Sleep, end + CHECK_AGAIN_NS)
        );
        class.reset();
    }

    #[test]
    fn a_watch_that_finds_the_pace_four_times_off_brings_the_next_experiment_forward() {
        let mut storage = libc::PTHREAD_MUTEX_INITIALIZER;
        // SAFETY: `storage` is a mutex, alive for the whole test.
        let class = class_of(unsafe { RawMutex::from_ptr(&mut storage) });
        let _table = table_to_myself();
        // An experiment of the class alone keeps it in sleep mode at 300/s; its next
        // comes seconds later, its first watch sooner.
        class.reset();
        class.counts.interval_ns.store(4_000_000_000, Relaxed);
        experiment_ends(class, Mode::Sleep, outcome(100, 300, 50, 80), 0);
        let c = &class.counts;
        let next_experiment = c.next_experiment_ns.load(Relaxed);
        assert_eq!(next_experiment, 8_000_000_000);
        assert_eq!((c.pace_per_s.load(Relaxed), c.next_watch_ns.load(Relaxed)), (300, WATCH_INTERVAL_NS));
        // A watch that reads less than 4× off: the pace it read is the next one's.
        let watched = |per_s, at| {
            start(class, Run::Watch, at);
            assert!(class.experimenting() && config::fast_path_off() & config::MEASURING != 0);
            watch(class, per_s, at);
            assert!(!class.experimenting() && !measuring());
            (c.next_experiment_ns.load(Relaxed), c.pace_per_s.load(Relaxed), c.next_watch_ns.load(Relaxed))
        };
        let t = WATCH_INTERVAL_NS;
        assert_eq!(watched(1_000, t), (next_experiment, 1_000, 2 * t));
        assert_eq!(watched(300, 2 * t), (next_experiment, 300, 3 * t));
        // 4× slower, or faster: the next experiment is due at once, and the class's
        // intervals start over.
        assert_eq!(watched(74, 3 * t), (3 * t, 74, 4 * t));
        assert_eq!((class.mode(), c.interval_ns.load(Relaxed)), (Mode::Sleep, FIRST_INTERVAL_NS));
        c.next_experiment_ns.store(next_experiment, Relaxed);
        assert_eq!(watched(296, 4 * t), (next_experiment, 296, 5 * t));
        assert_eq!(watched(1_185, 5 * t), (5 * t, 1_185, 6 * t));
        // After an experiment of several classes together, whose count is theirs
        // together, the first watch only measures the class's own pace.
        class.reset();
        class.counts.interval_ns.store(4_000_000_000, Relaxed);
        experiment_ends(class, Mode::Sleep, Outcome { classes: 2, ..outcome(100, 300, 50, 80) }, 0);
        assert_eq!(c.pace_per_s.load(Relaxed), 0);
        assert_eq!(watched(3, t), (next_experiment, 3, 2 * t));
        class.reset();
    }

    #[test]
    fn a_watch_starts_when_due_between_experiments_and_measures_without_settling() {
        let mut storage = libc::PTHREAD_MUTEX_INITIALIZER;
        // SAFETY: `storage` is a mutex, alive for the whole test.
        let class = class_of(unsafe { RawMutex::from_ptr(&mut storage) });
        let _table = table_to_myself();
        class.reset();
        let c = &class.counts;
        c.judged.store(true, Relaxed);
        c.contended.store(HOT, Relaxed);
        c.next_experiment_ns.store(u64::MAX, Relaxed);
        // Not due yet: nothing starts.
        c.next_watch_ns.store(u64::MAX - 1, Relaxed);
        experiment_step(class, SAMPLE);
        assert!(!class.experimenting());
        // Due, but a check is due too: the check comes first, when its time comes.
        c.next_watch_ns.store(0, Relaxed);
        c.to_beat_per_s.store(100, Relaxed);
        experiment_step(class, SAMPLE);
        assert!(!class.experimenting());
        c.to_beat_per_s.store(0, Relaxed);
        // Due: a watch of the class alone, in its own mode, measuring at once.
        experiment_step(class, SAMPLE);
        assert!(class.experimenting() && EXPERIMENT.run() == Run::Watch);
        assert!(EXPERIMENT.settled.load(Relaxed));
        let began = EXPERIMENT.started_ns.load(Relaxed);
        COUNTS[0].0.fetch_add(2 * PHASE_ACQUISITIONS, Relaxed);
        advance(class, began + PHASE_NS);
        assert!(class.experimenting(), "a watch measures as long as a check");
        advance(class, began + CHECK_PHASE_NS);
        assert!(!class.experimenting());
        let per_s = 2 * PHASE_ACQUISITIONS * 1_000_000_000 / CHECK_PHASE_NS;
        assert_eq!(c.pace_per_s.load(Relaxed), per_s);
        assert_eq!(c.next_watch_ns.load(Relaxed), began + CHECK_PHASE_NS + WATCH_INTERVAL_NS);
        assert_eq!(class.mode(), Mode::Spin);
        // Due again at once, but another watch (its own) ended just now: it waits.
        c.next_watch_ns.store(0, Relaxed);
        EXPERIMENT.watch_ended_ns.store(sys::now_ns(), Relaxed);
        experiment_step(class, SAMPLE);
        assert!(!class.experimenting(), "watches end at least {WATCHES_APART_NS} ns apart");
        EXPERIMENT.watch_ended_ns.store(0, Relaxed);
        class.reset();
    }

    #[test]
    fn a_close_call_is_repeated_soon_at_most_twice_in_a_row() {
        let mut storage = libc::PTHREAD_MUTEX_INITIALIZER;
        // SAFETY: `storage` is a mutex, alive for the whole test.
        let class = class_of(unsafe { RawMutex::from_ptr(&mut storage) });
        let _table = table_to_myself();
        // An experiment at time `at` of a class in spin mode, whose last interval was
        // `last`: when its next one comes, and the interval after.
        let experiment = |o: Outcome, at: u64, last: u64| {
            class.reset();
            class.counts.interval_ns.store(last, Relaxed);
            experiment_ends(class, Mode::Spin, o, at);
            assert_eq!(class.mode(), Mode::Spin);
            (class.counts.next_experiment_ns.load(Relaxed) - at, class.counts.interval_ns.load(Relaxed))
        };
        let (tie, clear) = (outcome(100, 105, 50, 80), outcome(300, 100, 50, 80));
        let first = FIRST_INTERVAL_NS;
        // Spin clearly ahead: the mode stands, and the interval doubles.
        assert_eq!(experiment(clear, 0, first), (2 * first, 2 * first));
        // Within 10% either way: the mode stands, and the next experiment comes soon, in
        // a class's first experiment and the one after it.
        assert_eq!(experiment(tie, 0, 0), (CLOSE_CALL_INTERVAL_NS, first));
        assert_eq!(experiment(tie, 0, first), (CLOSE_CALL_INTERVAL_NS, 2 * first));
        assert_eq!(experiment(outcome(105, 100, 50, 80), 0, first), (CLOSE_CALL_INTERVAL_NS, 2 * first));
        // A third in a row waits as long as any.
        assert_eq!(experiment(tie, 0, 2 * first), (4 * first, 4 * first));
        assert!(outcome(100, 110, 50, 80).close_call() && !outcome(100, 111, 50, 80).close_call());
        class.reset();
    }

    #[test]
    fn a_spin_phase_after_a_sleep_phase_waits_for_its_waiters_to_come_back() {
        use Mode::*;
        // Rounds alternate which mode goes first: the spin phases that follow a sleep
        // phase are the fourth from spin mode, the second and sixth from sleep mode.
        let inheriting = |before| (0..6).filter(|&p| inherits_sleepers(p, before)).collect::<Vec<_>>();
        assert_eq!(inheriting(Spin), [3]);
        assert_eq!(inheriting(Sleep), [1, 5]);
        let _table = table_to_myself();
        let e = &EXPERIMENT;
        let settles_at = |phase, contended_meanwhile: u64, now| {
            e.before.store(Spin as u8, Relaxed);
            e.run.store(Run::Experiment as u8, Relaxed);
            begin_phase(phase, 0);
            e.contended.fetch_add(contended_meanwhile, Relaxed);
            advance(&TABLE[0], now);
            e.settled.load(Relaxed)
        };
        assert!(settles_at(2, 0, SETTLE_NS), "a sleep phase settles on time");
        assert!(settles_at(4, 0, SETTLE_NS), "so does a spin phase after a spin phase");
        assert!(!settles_at(3, 0, SETTLE_NS), "no contended acquisition yet: the sleepers still sleep");
        assert!(settles_at(3, SAMPLE.into(), SETTLE_NS), "a waiter is back");
        assert!(settles_at(3, 0, SETTLE_MAX_NS), "it waits no longer than this");
        e.phase.store(0, Relaxed);
        e.close();
    }

    #[test]
    fn rounds_alternate_which_mode_goes_first_from_the_class_s_own() {
        use Mode::*;
        let order: Vec<Mode> = (0..6).map(|p| phase_mode(p, Spin)).collect();
        assert_eq!(order, [Spin, Sleep, Sleep, Spin, Spin, Sleep]);
        let order: Vec<Mode> = (0..6).map(|p| phase_mode(p, Sleep)).collect();
        assert_eq!(order, [Sleep, Spin, Spin, Sleep, Sleep, Spin]);
    }
}
