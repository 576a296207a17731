//! `auto`: each lock class learns its own waiting policy while the program runs.
//!
//! Whether spinning pays is a property of a lock and of the machine at the moment, so
//! the decision is made per *class*: every mutex made by one `pthread_mutex_init` call
//! site (its return address), or, for a mutex that was never initialised by a call
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
//!    as long as the last one took. A decision that changed the mode is **checked**
//!    [`CHECK_AFTER_NS`] after it and again [`CHECK_AGAIN_NS`] later, each time by one
//!    phase in the new mode: a millisecond phase can catch a state its mode does not
//!    keep (a short lock's waiters all asleep, one thread taking it alone), and a new
//!    mode that no longer beats the pace the old one kept in the experiment is undone
//!    ([`check`]).
//!
//! While an experiment runs, every mutex call takes the general path (a bit of
//! `config::fast_path_off`, the word the fast path already tests), which counts the
//! experimenting classes' acquisitions in per-CPU stripes. One experiment runs at a
//! time, so that the process's CPU time is its own as far as it can be: with several
//! hot classes at once, the others' CPU is noise in each experiment.
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
//! # Where the class is kept
//!
//! Under `auto` a mutex's `__spins` holds its call site's class in its high 8 bits (an
//! index into a fixed table of [`CLASSES`] entries) beside its spin estimate in its low
//! 8 (mutex.rs), for private mutexes of the normal, recursive and error-checking types.
//! glibc's condition variables write their own estimate into an adaptive mutex's
//! `__spins`, and in a process-shared mutex an index would mean another class in each
//! process: those, and mutexes never initialised by a call (zeroed memory,
//! `PTHREAD_MUTEX_INITIALIZER`, every C++ `std::mutex`), are classed by their address,
//! and found by it on each lookup. A call site's entry is kept for good; an address
//! class lives as long as its mutex, so a class that finds no room near its key takes
//! over the entry of an address class not looked up lately ([`class_for_key`]: a
//! program that makes and frees such mutexes all the time would otherwise fill the
//! table with dead ones). A class that still finds no room shares entry 0, which learns
//! for all of them. Nothing here is on the uncontended path: the class is read after
//! the first failed attempt.

use core::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};

use crate::mutex::{kind, RawMutex};
use crate::spin::{self, SpinTarget};
use crate::{config, observe, sys};

/// Entries of the class table; entry 0 is for classes that find no room.
pub const CLASSES: usize = 256;
/// Slots a class key may probe before it settles for entry 0.
const PROBES: usize = 16;

/// Spins (sampled) in spin mode over which their economics are judged.
const SPIN_WINDOW: u32 = 64;
/// Spins leave a class in spin mode only if fewer than this share (1/16) of them win:
/// on a lock that is the bottleneck, spins that lose races still keep it busy, and the
/// experiments judge those.
const RARE_WINS: (u32, u32) = (1, 16);
/// In sleep mode, one contended acquisition of a thread in this many spins as a probe
/// (a multiple of [`SAMPLE`]: every probe is sampled).
const PROBE_EVERY: u32 = 64;
/// Probes over which sleep mode is judged.
const PROBE_WINDOW: u32 = 16;
/// Probes bring a class back to spin mode only if at least this share (1/8) of them
/// win: twice the share below which spins send it away, so that a class on the
/// boundary does not flap between the modes.
const PROBES_WIN: (u32, u32) = (1, 8);

/// Rounds of an experiment (each one phase per mode).
const ROUNDS: u32 = 3;
/// Shortest phase of an experiment: short, since the phase in the worse mode costs
/// the program throughput.
const PHASE_NS: u64 = 1_000_000;
/// Time a phase runs in its mode before it starts to measure.
const SETTLE_NS: u64 = 500_000;
/// A spin phase after a sleep phase settles until the class has a (sampled) contended
/// acquisition again, for at most this long: sleep mode can leave one thread taking
/// the lock while the others sleep, a state that outlasts the switch to spin mode and
/// runs at sleep mode's pace (see [`inherits_sleepers`]).
const SETTLE_MAX_NS: u64 = 5_000_000;
/// Fewest acquisitions of the class in a phase, so that a slow lock's phase still
/// measures something; a phase never lasts longer than [`PHASE_MAX_NS`].
const PHASE_ACQUISITIONS: u64 = 1_000;
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
const HOT: u32 = 64;
const FIRST_INTERVAL_NS: u64 = 250_000_000;
/// An experiment that changed a class's mode is checked this long after, and again
/// [`CHECK_AGAIN_NS`] later if the new mode passed: a wrong verdict is undone early,
/// and a right one is still checked once the new mode has had time to settle into the
/// state it keeps (see [`check`]).
const CHECK_AFTER_NS: u64 = 10_000_000;
/// How long after a passed check the next one comes.
const CHECK_AGAIN_NS: u64 = 20_000_000;
/// Checks a changed mode must pass to stand until the next experiment.
const CHECKS: u32 = 2;
/// A spin phase with fewer than this share (in 1/1000: 1/32) of contended acquisitions
/// measured no spinning, and is left out of the experiment's sums; an experiment left
/// with none compared nothing, and the next one comes after [`RETRY_INTERVAL_NS`],
/// twice as late each time that happens again. (Two threads on one CPU, before the
/// scheduler spreads them: 0-0.7% of the acquisitions contended; a spin phase after a
/// sleep phase whose sleepers still sleep: 0-2.4%. Two threads on two CPUs with an
/// empty critical section, where a thread mostly takes the lock back uncontended:
/// 5-9%.)
const CONTENDED_ENOUGH: u64 = 31;
const RETRY_INTERVAL_NS: u64 = 10_000_000;
/// The next experiment waits at least this many times as long as the last one took, so
/// that a slow lock's long phases cost it at most a tenth of its time.
const INTERVAL_PER_EXPERIMENT: u64 = 10;
const MAX_INTERVAL_NS: u64 = 8_000_000_000;

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

/// What one class has learned. All counters are approximate by design: threads update
/// them without coordination, as glibc's adaptive mutex updates its estimate. What every
/// contended acquisition reads (the mode) and what sampled ones write (the counts) are on
/// cache lines of their own, so that the writes do not take the line the reads need.
#[repr(C)]
pub struct Class {
    policy: Policy,
    counts: Counts,
}

#[repr(align(64))]
struct Policy {
    /// The init call site's return address, or the mutex's address; 0: free.
    key: AtomicUsize,
    /// The key is a call site's return address (else a mutex's address).
    call_site: AtomicBool,
    mode: AtomicU8,
    /// The mode was chosen by an experiment: probes do not change it.
    measured: AtomicBool,
    /// A class keyed by a mutex's address was looked up since a lookup that found no
    /// room last passed it (see [`class_for_key`]).
    recent: AtomicBool,
}

#[repr(align(64))]
struct Counts {
    /// The spin estimate its mutexes last learned, which a new mutex starts from.
    estimate: AtomicU32,
    /// Spins (or probes), wins, and pauses spun in all, in the current window.
    spins: AtomicU32,
    wins: AtomicU32,
    spent: AtomicU32,
    /// Contended acquisitions since the last experiment (saturating).
    contended: AtomicU32,
    /// A window of spins (or probes) has been judged: the class's mode says what its
    /// spins are worth, and an experiment can start from it.
    judged: AtomicBool,
    /// An experiment of the class's has compared something (see [`Class::untried`]).
    compared: AtomicBool,
    next_experiment_ns: AtomicU64,
    /// The wait from its last experiment to its next; 0: it has had none.
    interval_ns: AtomicU64,
    /// After an experiment that changed the class's mode: the pace the mode it left
    /// kept in that experiment, which the new one must still beat when checked
    /// ([`check`]); 0: no check due.
    to_beat_per_s: AtomicU64,
    /// Checks the new mode has passed since that experiment.
    checks_passed: AtomicU32,
    /// Contended acquisitions served in each mode.
    served: [AtomicU64; 2],
}

impl Class {
    const fn new() -> Class {
        Class {
            policy: Policy {
                key: AtomicUsize::new(0),
                call_site: AtomicBool::new(false),
                mode: AtomicU8::new(Mode::Spin as u8),
                measured: AtomicBool::new(false),
                recent: AtomicBool::new(false),
            },
            counts: Counts {
                estimate: AtomicU32::new(0),
                spins: AtomicU32::new(0),
                wins: AtomicU32::new(0),
                spent: AtomicU32::new(0),
                contended: AtomicU32::new(0),
                judged: AtomicBool::new(false),
                compared: AtomicBool::new(false),
                next_experiment_ns: AtomicU64::new(0),
                interval_ns: AtomicU64::new(0),
                to_beat_per_s: AtomicU64::new(0),
                checks_passed: AtomicU32::new(0),
                served: [AtomicU64::new(0), AtomicU64::new(0)],
            },
        }
    }

    /// Forgets what the entry learned, for the class that has just taken it over.
    fn reset(&self) {
        let (p, c) = (&self.policy, &self.counts);
        p.mode.store(Mode::Spin as u8, Relaxed);
        p.measured.store(false, Relaxed);
        c.estimate.store(0, Relaxed);
        self.new_window();
        c.contended.store(0, Relaxed);
        c.judged.store(false, Relaxed);
        c.compared.store(false, Relaxed);
        c.next_experiment_ns.store(0, Relaxed);
        c.interval_ns.store(0, Relaxed);
        c.to_beat_per_s.store(0, Relaxed);
        c.checks_passed.store(0, Relaxed);
        for served in &c.served {
            served.store(0, Relaxed);
        }
    }

    pub fn key(&self) -> usize {
        self.policy.key.load(Relaxed)
    }

    /// A lookup found the class: an address class is kept from retiring for one more
    /// pass of the clock (see [`class_for_key`]). Written only when it changes, since
    /// every contended acquisition looks its class up.
    fn looked_up(&self) {
        let p = &self.policy;
        if !p.call_site.load(Relaxed) && !p.recent.load(Relaxed) {
            p.recent.store(true, Relaxed);
        }
    }

    /// The clock's hand passes the entry, clearing `recent` (a second chance); true if
    /// the entry may be handed to another class: it is keyed by a mutex's address, is
    /// not in the running experiment, and was not looked up since the hand last passed.
    fn hand_passes(&self) -> bool {
        if self.policy.call_site.load(Relaxed) || self.experimenting() {
            return false;
        }
        !self.policy.recent.swap(false, Relaxed)
    }

    /// The class's mode; while it experiments, the mode it had before (the phases'
    /// modes are not decisions).
    pub fn mode(&self) -> Mode {
        let mode = if self.experimenting() { &EXPERIMENT.before } else { &self.policy.mode };
        Mode::from_u8(mode.load(Relaxed))
    }

    /// The mode its contended acquisitions wait in now: an experiment's phase's mode.
    fn waiting_mode(&self) -> Mode {
        Mode::from_u8(self.policy.mode.load(Relaxed))
    }

    /// The mode was chosen by an experiment (else by whether spins win).
    pub fn measured(&self) -> bool {
        self.policy.measured.load(Relaxed)
    }

    /// Contended acquisitions served in spin mode and in sleep mode.
    pub fn served(&self) -> (u64, u64) {
        (self.counts.served[0].load(Relaxed), self.counts.served[1].load(Relaxed))
    }

    /// The class is in the running experiment (as its leader or as a companion).
    fn experimenting(&self) -> bool {
        let i = self.index();
        EXPERIMENT.members[i / 64].load(Relaxed) & (1 << (i % 64)) != 0
    }

    /// The class has had no experiment that compared something. Its next is still a
    /// first one, which others may join: a first experiment that compared nothing is
    /// mostly the program's start (threads not yet spread over the CPUs), and the
    /// classes that were hot together then are still so when it is tried again.
    fn untried(&self) -> bool {
        !self.counts.compared.load(Relaxed)
    }

    /// The class has had no window of spins judged and no experiment, so its mode says
    /// nothing yet: it samples more of its contended acquisitions ([`YOUNG_SAMPLE`]),
    /// and starts no experiment (a class that joined another's first experiment may
    /// have had no spins judged, and is not young).
    fn young(&self) -> bool {
        !self.counts.judged.load(Relaxed) && self.counts.interval_ns.load(Relaxed) == 0
    }

    /// Something has judged the class's mode (not young): else it is the mode every
    /// class starts in, for the statistics report.
    pub fn judged(&self) -> bool {
        !self.young()
    }

    /// The class's last experiment changed its mode, and the new one has not been
    /// checked yet ([`check`]).
    fn check_due(&self) -> bool {
        self.counts.to_beat_per_s.load(Relaxed) != 0
    }

    /// Whether this class joins `leader`'s first experiment: it has had none either,
    /// waits in the same mode, and has been contended about as often (within 4×). Such
    /// classes are usually taken by the same threads at the same time, and what one's
    /// waiting does shows in the others' throughput (module header).
    fn joins_first_experiment_of(&self, leader: &Class) -> bool {
        let contended = self.counts.contended.load(Relaxed);
        !core::ptr::eq(self, leader)
            && self.key() != 0
            && self.untried()
            && self.waiting_mode() == leader.waiting_mode()
            && contended >= HOT
            && contended.saturating_mul(4) >= leader.counts.contended.load(Relaxed)
    }

    fn index(&self) -> usize {
        (self as *const Class as usize - TABLE.as_ptr() as usize) / core::mem::size_of::<Class>()
    }

    fn set_mode(&self, to: Mode, measured: bool, because: &Because) {
        self.policy.measured.store(measured, Relaxed);
        self.new_window();
        let from = Mode::from_u8(self.policy.mode.swap(to as u8, Relaxed));
        if from != to || because.is_experiment() {
            observe::policy_changed(self.trace_key(), from.name(), to.name(), because);
        }
    }

    /// The key the trace names the class by: as the statistics name call sites, by the
    /// call instruction, one byte before the return address.
    fn trace_key(&self) -> usize {
        self.key() - usize::from(self.policy.call_site.load(Relaxed))
    }

    /// One spin (or probe) ended, after `pauses`, won or not: judges the window when it
    /// is full.
    fn spun(&self, pauses: u32, won: bool) {
        if self.experimenting() || self.measured() {
            return; // the experiment's decision stands
        }
        if won {
            self.counts.wins.fetch_add(1, Relaxed);
        }
        let spent = self.counts.spent.load(Relaxed);
        self.counts.spent.store(spent.saturating_add(pauses), Relaxed);
        let n = self.counts.spins.fetch_add(1, Relaxed) + 1;
        let window = match self.waiting_mode() {
            Mode::Spin => SPIN_WINDOW,
            Mode::Sleep => PROBE_WINDOW,
        };
        if n < window {
            return;
        }
        let wins = self.counts.wins.load(Relaxed);
        let (spent_ns, saved_ns) = spin_economics(self.counts.spent.load(Relaxed), wins);
        self.counts.judged.store(true, Relaxed);
        match self.waiting_mode() {
            Mode::Spin if spent_ns >= saved_ns && wins * RARE_WINS.1 < n * RARE_WINS.0 => {
                self.set_mode(Mode::Sleep, false, &Because::SpinsLose { wins, spins: n, spent_ns, saved_ns });
            }
            Mode::Sleep if 2 * spent_ns < saved_ns && wins * PROBES_WIN.1 >= n * PROBES_WIN.0 => {
                self.set_mode(Mode::Spin, false, &Because::ProbesWin { wins, probes: n, spent_ns, saved_ns });
            }
            _ => self.new_window(),
        }
    }

    fn new_window(&self) {
        self.counts.spins.store(0, Relaxed);
        self.counts.wins.store(0, Relaxed);
        self.counts.spent.store(0, Relaxed);
    }
}

/// What a window's spins cost and what they saved, in nanoseconds: `pauses` spun in
/// all, and `wins` sleeps avoided, each worth one futex sleep-and-wake round trip (the
/// spin limit, which is set to that: see spin.rs).
fn spin_economics(pauses: u32, wins: u32) -> (u64, u64) {
    let spent_ns = u64::from(pauses) * u64::from(config::pause_ps()) / 1000;
    let saved_ns = u64::from(wins) * config::spin_limit_ns();
    (spent_ns, saved_ns)
}

static TABLE: [Class; CLASSES] = [const { Class::new() }; CLASSES];

/// The class with `key`, if there is one. The search stops at the first free entry: a
/// key takes the first free entry of its window, and an entry, once taken, is never
/// free again (it can only change hands).
pub fn find(key: usize) -> Option<&'static Class> {
    for index in window(key) {
        match TABLE[index].key() {
            0 => return None,
            k if k == key => return Some(&TABLE[index]),
            _ => {}
        }
    }
    None
}

/// The entries `key` may have: [`PROBES`] in a row from where it hashes to.
fn window(key: usize) -> impl Iterator<Item = usize> {
    let first = (key.max(1) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
    (0..PROBES).map(move |i| 1 + (first as usize + i) % (CLASSES - 1))
}

/// The entry for `key`, claimed if new; entry 0 when the table has no room near it.
///
/// Call sites are few and last as long as the program's code, so their entries are
/// kept for good. A class keyed by a mutex's address (a mutex never initialised by a
/// call: zeroed memory, `PTHREAD_MUTEX_INITIALIZER`, every C++ `std::mutex`) lives as
/// long as that mutex, and a long-running program makes and frees such mutexes all the
/// time. So a key that finds no room near it takes over the entry of an address class
/// not looked up lately, which forgets what it learned: a clock, whose hand is each
/// such search (it clears `recent` in the entries it passes, until it finds one
/// already clear). The mutexes of address classes are therefore found by their address
/// on every lookup, never by a link.
#[inline(never)]
fn class_for_key(key: usize, call_site: bool) -> usize {
    let key = key.max(1);
    for index in window(key) {
        let class = &TABLE[index];
        let found = match class.policy.key.load(Acquire) {
            k if k == key => true,
            0 => claim(class, 0, key, call_site) != Claim::Lost,
            _ => false,
        };
        if found {
            class.looked_up();
            return index;
        }
    }
    for index in window(key) {
        let class = &TABLE[index];
        let old = class.policy.key.load(Acquire);
        if old != 0 && class.hand_passes() {
            return match claim(class, old, key, call_site) {
                Claim::Lost => 0,
                won_or_same => {
                    if won_or_same == Claim::Won {
                        class.reset();
                    }
                    class.looked_up();
                    index
                }
            };
        }
    }
    0
}

#[derive(PartialEq)]
enum Claim {
    /// The entry is the key's now.
    Won,
    /// Another thread claimed it for the same key first.
    Same,
    /// Another thread claimed it for another key.
    Lost,
}

/// Makes `class`, keyed `old` (0: free), the entry of `key`.
fn claim(class: &Class, old: usize, key: usize, call_site: bool) -> Claim {
    match class.policy.key.compare_exchange(old, key, AcqRel, Acquire) {
        Ok(_) => {
            class.policy.call_site.store(call_site, Relaxed);
            Claim::Won
        }
        Err(k) if k == key => Claim::Same,
        Err(_) => Claim::Lost,
    }
}

/// Whether `m` keeps its class in `__spins` (module header).
fn keeps_link(m: &RawMutex) -> bool {
    let k = m.kind();
    k & kind::PSHARED == 0 && k & kind::TYPE_MASK != kind::ADAPTIVE
}

/// `pthread_mutex_init` made `m`, called from `caller`: its class is the call site's,
/// and it starts from the estimate the class's mutexes last learned.
pub fn born(m: &RawMutex, caller: usize) {
    if keeps_link(m) {
        let index = class_for_key(caller, true);
        m.set_class_link(index as u16);
        m.set_estimate(TABLE[index].counts.estimate.load(Relaxed));
    }
}

/// The class of `m`, claimed if new.
#[inline]
pub fn class_of(m: &RawMutex) -> &'static Class {
    linked_class(m).unwrap_or_else(|| &TABLE[class_for_key(m.addr(), false)])
}

/// The class of `m` if it has one already: what a lookup on every acquisition (not only
/// the contended ones) uses, so that it neither claims entries nor moves the clock.
fn known_class_of(m: &RawMutex) -> Option<&'static Class> {
    linked_class(m).or_else(|| find(m.addr()))
}

/// The call site's class that `m`'s `__spins` links to, if any.
#[inline]
fn linked_class(m: &RawMutex) -> Option<&'static Class> {
    let link = if keeps_link(m) { usize::from(m.class_link()) } else { 0 };
    (link != 0).then(|| &TABLE[link % CLASSES])
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
    if class.experimenting() {
        EXPERIMENT.contended.fetch_add(u64::from(weight), Relaxed);
    }
    let n = class.counts.contended.load(Relaxed);
    class.counts.contended.store(n.saturating_add(weight), Relaxed);
    experiment_step(class);
}

// ---------------------------------------------------------------------------------
// Experiments: one at a time.

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
        }
    }

    /// An experiment's outcome: traced even when the mode stands.
    fn is_experiment(&self) -> bool {
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

struct Experiment {
    /// The experimenting class's index plus one (its leader's, when several classes
    /// experiment together); 0: none.
    class: AtomicU32,
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
    fn before(&self) -> Mode {
        Mode::from_u8(self.before.load(Relaxed))
    }

    fn enroll(&self, class: &Class) {
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
    fn close(&self) {
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

static EXPERIMENT: Experiment = Experiment {
    class: AtomicU32::new(0),
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

/// After a contended acquisition of `class`: starts an experiment when it is due, or
/// moves the running one on.
fn experiment_step(class: &'static Class) {
    let running = EXPERIMENT.class.load(Relaxed) as usize;
    if running != 0 {
        if class.experimenting() {
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
        return;
    }
    start(class, now);
}

/// Starts an experiment led by `class`, with the classes that join its first one.
fn start(class: &'static Class, now: u64) {
    let e = &EXPERIMENT;
    // The phase word doubles as the lock on the experiment's fields.
    if e.class.compare_exchange(0, class.index() as u32 + 1, Acquire, Relaxed).is_err() {
        return;
    }
    e.before.store(class.policy.mode.load(Relaxed), Relaxed);
    e.enroll(class);
    if class.check_due() {
        // The classes that took the verdict together are checked together.
        let mode = class.waiting_mode();
        for companion in TABLE[1..].iter().filter(|c| c.check_due() && c.waiting_mode() == mode) {
            e.enroll(companion);
        }
    } else if class.untried() {
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
fn inherits_sleepers(phase: u32, before: Mode) -> bool {
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
    if elapsed < PHASE_NS {
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
    // The leader of a check keeps its check due until the check ends.
    if class.check_due() {
        check(per_s, now);
        return;
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
    let faster = o.per_s[j] * CLEARLY_FASTER.1 > o.per_s[i] * CLEARLY_FASTER.0;
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
    // A check measures the mode the class is in anyway, so it may come before
    // `not_before`.
    let next = if class.check_due() { now + CHECK_AFTER_NS } else { (now + interval).max(not_before) };
    class.counts.next_experiment_ns.store(next, Relaxed);
    class.counts.contended.store(0, Relaxed);
}

/// The end of a check, whose one phase ran at `per_s` in the mode its classes' last
/// experiment chose, [`CHECK_AFTER_NS`] after that experiment (the first check) or
/// [`CHECK_AGAIN_NS`] after the first check (the second).
///
/// A phase of a millisecond can catch a state that its mode does not keep. The one
/// that misleads most: when a short lock's class switches to sleep mode, its waiters
/// fall asleep and one thread takes the lock alone, at single-thread speed; on some
/// machines and thread counts the state lasts (sleeping then wins), on others it gives
/// way within milliseconds to waiters that sleep and wake in turn, at a fraction of
/// the pace. So a verdict that changed the mode is checked in the new mode: if it no
/// longer beats the pace the old mode kept in the experiment, the class goes back.
/// The first check comes soon, so that a wrong verdict costs little; a verdict that
/// passes it is checked again once the new mode has had time to settle. A check costs
/// no phase in the other mode. The classes' next experiment comes
/// [`FIRST_INTERVAL_NS`] after the check that undid the verdict or the second one.
fn check(per_s: u64, now: u64) {
    let e = &EXPERIMENT;
    let before = e.before();
    for class in e.members() {
        let c = &class.counts;
        let to_beat_per_s = c.to_beat_per_s.load(Relaxed);
        let behind = per_s < to_beat_per_s;
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
    }
    e.close();
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

    /// Tests that use the class table take turns: there is one table, and one
    /// experiment.
    static TABLE_USERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn table_to_myself() -> std::sync::MutexGuard<'static, ()> {
        TABLE_USERS.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn outcome(spin: u64, sleep: u64, spin_cpu: u64, sleep_cpu: u64) -> Outcome {
        Outcome {
            per_s: [spin, sleep],
            cpu_ns_per_acq: [spin_cpu, sleep_cpu],
            contended_permille: [500, 100],
            classes: 1,
        }
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

    /// What an experiment none of whose spin phases counted comes to.
    fn compared_nothing() -> Outcome {
        outcome(0, 0, 0, 0)
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
        for (class, contended) in [(leader, 1000), (alike, 400)] {
            class.counts.contended.store(contended, Relaxed);
        }
        assert!(alike.joins_first_experiment_of(leader), "still untried");
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
    fn a_verdict_that_changed_the_mode_is_checked_twice_and_undone_if_the_new_mode_falls_behind() {
        let mut storage = libc::PTHREAD_MUTEX_INITIALIZER;
        // SAFETY: `storage` is a mutex, alive for the whole test.
        let class = class_of(unsafe { RawMutex::from_ptr(&mut storage) });
        let _table = table_to_myself();
        // An experiment of a class in `from` that measured spin at 100/s and sleep at
        // 300/s, at time 0.
        let experiment = |from: Mode| {
            class.reset();
            class.counts.compared.store(true, Relaxed);
            EXPERIMENT.before.store(from as u8, Relaxed);
            EXPERIMENT.class.store(class.index() as u32 + 1, Relaxed);
            EXPERIMENT.enroll(class);
            decide(outcome(100, 300, 50, 80), 0);
        };
        // It moves the class from spin to sleep, and its check comes soon, sooner than
        // the experiment's length would allow another experiment: one phase, in sleep.
        let changed = || {
            experiment(Mode::Spin);
            assert_eq!((class.mode(), class.check_due()), (Mode::Sleep, true));
            assert_eq!(class.counts.next_experiment_ns.load(Relaxed), CHECK_AFTER_NS);
            start(class, CHECK_AFTER_NS);
            assert!(class.check_due() && class.experimenting());
            assert_eq!(class.waiting_mode(), Mode::Sleep);
        };
        let (first, second) = (CHECK_AFTER_NS, CHECK_AFTER_NS + CHECK_AGAIN_NS);
        // Sleep mode runs behind spin's 100/s: the class goes back to spin at once.
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
        start(class, second);
        check(90, second);
        assert_eq!((class.mode(), class.check_due()), (Mode::Spin, false));
        // Ahead at both: sleep stands, and the next experiment comes at the usual time.
        changed();
        check(150, first);
        start(class, second);
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
    fn a_key_with_no_room_takes_over_the_address_class_not_looked_up_longest() {
        let _table = table_to_myself();
        // Keys whose windows are the same entries: the first key's, then others that
        // hash to where it does.
        let first = 0x7000_0000_1000usize;
        let entries: Vec<usize> = window(first).collect();
        let mut keys = (first + 64..).step_by(64).filter(|&k| window(k).next() == Some(entries[0]));
        let fill = |recent: &dyn Fn(usize) -> bool, call_site: &dyn Fn(usize) -> bool| {
            for (i, &e) in entries.iter().enumerate() {
                let p = &TABLE[e].policy;
                p.key.store(first + i, Relaxed); // keys that hash elsewhere: never looked up
                p.call_site.store(call_site(i), Relaxed);
                p.recent.store(recent(i), Relaxed);
            }
        };
        // Every entry but the sixth was looked up since the clock last passed: the
        // hand clears the first five as it passes, and takes the sixth.
        fill(&|i| i != 5, &|_| false);
        TABLE[entries[5]].policy.mode.store(Mode::Sleep as u8, Relaxed);
        TABLE[entries[5]].counts.served[1].store(7, Relaxed);
        let newcomer = keys.next().unwrap();
        assert_eq!(class_for_key(newcomer, false), entries[5]);
        let taken = &TABLE[entries[5]];
        assert_eq!((taken.key(), taken.mode(), taken.served()), (newcomer, Mode::Spin, (0, 0)), "forgotten");
        assert!((0..5).all(|i| !TABLE[entries[i]].policy.recent.load(Relaxed)), "second chances used");
        // Found again: no entry changes hands, and it is marked as looked up.
        assert_eq!(class_for_key(newcomer, false), entries[5]);
        assert!(taken.policy.recent.load(Relaxed));
        // The next key takes the first entry the hand passed, whose chance is spent.
        assert_eq!(class_for_key(keys.next().unwrap(), true), entries[0]);
        // Call sites' entries, and the experiment's classes, are never taken.
        fill(&|_| false, &|i| i % 2 == 0);
        EXPERIMENT.enroll(&TABLE[entries[1]]);
        let odd_after_one = class_for_key(keys.next().unwrap(), false);
        EXPERIMENT.close();
        assert_eq!(odd_after_one, entries[3]);
        fill(&|_| false, &|_| true);
        assert_eq!(class_for_key(keys.next().unwrap(), false), 0, "no room: the shared entry");
        for &e in &entries {
            TABLE[e].policy.key.store(0, Relaxed);
            TABLE[e].reset();
        }
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
