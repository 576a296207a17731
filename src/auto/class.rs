//! The class table: where a lock class's policy and counts live, how a mutex finds
//! its class, and what a class learns from its spins.
//!
//! Under `auto` a mutex's `__spins` holds its class in its high 8 bits (an
//! index into a fixed table of [`CLASSES`] entries) beside its spin estimate in its low
//! 8 (mutex.rs), for private mutexes of the normal, recursive and error-checking types.
//! glibc's condition variables write their own estimate into an adaptive mutex's
//! `__spins`, and in a process-shared mutex an index would mean another class in each
//! process: those, and mutexes never initialised by a call (zeroed memory,
//! `PTHREAD_MUTEX_INITIALIZER`, every C++ `std::mutex`), are classed by their address,
//! and found by it on each lookup. A call site's entry (an init call's, or a wrapper's
//! call's: wrapper.rs) is kept for good; an address
//! class lives as long as its mutex, so a class that finds no room near its key takes
//! over the entry of an address class not looked up lately ([`class_for_key`]: a
//! program that makes and frees such mutexes all the time would otherwise fill the
//! table with dead ones). A class that still finds no room shares entry 0, which learns
//! for all of them. Nothing here is on the uncontended path: the class is read after
//! the first failed attempt.

use core::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};

use super::experiment::{EXPERIMENT, HOT};
use super::wrapper::{self, Site};
use super::{Because, Mode};
use crate::mutex::{kind, RawMutex};
use crate::spin::SpinTarget;
use crate::{config, observe};

/// Entries of the class table; entry 0 is for classes that find no room.
pub const CLASSES: usize = 256;
/// Slots a class key may probe before it settles for entry 0.
const PROBES: usize = 16;

/// Spins (sampled) in spin mode over which their economics are judged.
pub(super) const SPIN_WINDOW: u32 = 64;
/// Spins leave a class in spin mode only if fewer than this share (1/16) of them win:
/// on a lock that is the bottleneck, spins that lose races still keep it busy, and the
/// experiments judge those.
pub(super) const RARE_WINS: (u32, u32) = (1, 16);
/// Probes over which sleep mode is judged.
pub(super) const PROBE_WINDOW: u32 = 16;
/// Probes bring a class back to spin mode only if at least this share (1/8) of them
/// win: twice the share below which spins send it away, so that a class on the
/// boundary does not flap between the modes.
pub(super) const PROBES_WIN: (u32, u32) = (1, 8);

/// What one class has learned. All counters are approximate by design: threads update
/// them without coordination, as glibc's adaptive mutex updates its estimate. What every
/// contended acquisition reads (the mode) and what sampled ones write (the counts) are on
/// cache lines of their own, so that the writes do not take the line the reads need.
#[repr(C)]
pub struct Class {
    pub(super) policy: Policy,
    pub(super) counts: Counts,
    /// An init call site's callers (wrapper.rs).
    pub(super) site: Site,
}

#[repr(align(64))]
pub(super) struct Policy {
    /// The init call site's return address, or the mutex's address; 0: free.
    pub(super) key: AtomicUsize,
    /// The key is a call site's return address (else a mutex's address).
    pub(super) call_site: AtomicBool,
    pub(super) mode: AtomicU8,
    /// The mode was chosen by an experiment: probes do not change it.
    pub(super) measured: AtomicBool,
    /// A class keyed by a mutex's address was looked up since a lookup that found no
    /// room last passed it (see [`class_for_key`]).
    pub(super) recent: AtomicBool,
}

#[repr(align(64))]
pub(super) struct Counts {
    /// The spin estimate its mutexes last learned, which a new mutex starts from.
    pub(super) estimate: AtomicU32,
    /// Spins (or probes), wins, and pauses spun in all, in the current window.
    pub(super) spins: AtomicU32,
    pub(super) wins: AtomicU32,
    pub(super) spent: AtomicU32,
    /// Contended acquisitions since the last experiment (saturating).
    pub(super) contended: AtomicU32,
    /// A window of spins (or probes) has been judged: the class's mode says what its
    /// spins are worth, and an experiment can start from it.
    pub(super) judged: AtomicBool,
    /// An experiment of the class's has compared something (see [`Class::untried`]).
    pub(super) compared: AtomicBool,
    pub(super) next_experiment_ns: AtomicU64,
    /// The wait from its last experiment to its next; 0: it has had none.
    pub(super) interval_ns: AtomicU64,
    /// After an experiment that changed the class's mode: the pace the mode it left
    /// kept in that experiment, which the new one must still beat when checked
    /// ([`check`]); 0: no check due.
    ///
    /// [`check`]: super::experiment::check
    pub(super) to_beat_per_s: AtomicU64,
    /// Checks the new mode has passed since that experiment.
    pub(super) checks_passed: AtomicU32,
    /// The class's pace in its mode when last measured alone (by its last [`watch`], or
    /// an experiment or check of it alone), which the next watch compares with; 0: not
    /// known, the next watch only measures it.
    ///
    /// [`watch`]: super::experiment::watch
    pub(super) pace_per_s: AtomicU64,
    /// When the next watch of the class is due.
    pub(super) next_watch_ns: AtomicU64,
    /// Contended acquisitions served in each mode.
    pub(super) served: [AtomicU64; 2],
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
                pace_per_s: AtomicU64::new(0),
                next_watch_ns: AtomicU64::new(0),
                served: [AtomicU64::new(0), AtomicU64::new(0)],
            },
            site: Site::new(),
        }
    }

    /// Forgets what the entry learned, for the class that has just taken it over.
    pub(super) fn reset(&self) {
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
        c.pace_per_s.store(0, Relaxed);
        c.next_watch_ns.store(0, Relaxed);
        for served in &c.served {
            served.store(0, Relaxed);
        }
        self.site.reset();
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
        if self.experimenting() {
            EXPERIMENT.before()
        } else {
            self.waiting_mode()
        }
    }

    /// The mode its contended acquisitions wait in now: an experiment's phase's mode.
    pub(super) fn waiting_mode(&self) -> Mode {
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
    pub(super) fn experimenting(&self) -> bool {
        EXPERIMENT.has(self)
    }

    /// The class has had no experiment that compared something. Its next is still a
    /// first one, which others may join: a first experiment that compared nothing is
    /// mostly the program's start (threads not yet spread over the CPUs), and the
    /// classes that were hot together then are still so when it is tried again.
    pub(super) fn untried(&self) -> bool {
        !self.counts.compared.load(Relaxed)
    }

    /// The class has had no window of spins judged and no experiment, so its mode says
    /// nothing yet: it samples more of its contended acquisitions ([`YOUNG_SAMPLE`]),
    /// and starts no experiment (a class that joined another's first experiment may
    /// have had no spins judged, and is not young).
    ///
    /// [`YOUNG_SAMPLE`]: super::YOUNG_SAMPLE
    pub(super) fn young(&self) -> bool {
        !self.counts.judged.load(Relaxed) && self.counts.interval_ns.load(Relaxed) == 0
    }

    /// Something has judged the class's mode (not young): else it is the mode every
    /// class starts in, for the statistics report.
    pub fn judged(&self) -> bool {
        !self.young()
    }

    /// The class's last experiment changed its mode, and the new one has not been
    /// checked yet ([`check`]).
    ///
    /// [`check`]: super::experiment::check
    pub(super) fn check_due(&self) -> bool {
        self.counts.to_beat_per_s.load(Relaxed) != 0
    }

    /// Whether this class joins `leader`'s first experiment: it has had none either,
    /// waits in the same mode, and has been contended about as often (within 4×). Such
    /// classes are usually taken by the same threads at the same time, and what one's
    /// waiting does shows in the others' throughput (module header).
    pub(super) fn joins_first_experiment_of(&self, leader: &Class) -> bool {
        let contended = self.counts.contended.load(Relaxed);
        !core::ptr::eq(self, leader)
            && self.key() != 0
            && self.untried()
            && self.waiting_mode() == leader.waiting_mode()
            && contended >= HOT
            && contended.saturating_mul(4) >= leader.counts.contended.load(Relaxed)
    }

    pub fn index(&self) -> usize {
        (self as *const Class as usize - TABLE.as_ptr() as usize) / core::mem::size_of::<Class>()
    }

    pub(super) fn set_mode(&self, to: Mode, measured: bool, because: &Because) {
        self.policy.measured.store(measured, Relaxed);
        self.new_window();
        let from = Mode::from_u8(self.policy.mode.swap(to as u8, Relaxed));
        if from != to || because.is_experiment() {
            observe::policy_changed(self.trace_key(), from.name(), to.name(), because);
        }
    }

    /// The key the trace names the class by: as the statistics name call sites, by the
    /// call instruction, one byte before the return address.
    pub(super) fn trace_key(&self) -> usize {
        self.key() - usize::from(self.policy.call_site.load(Relaxed))
    }

    /// One spin (or probe) ended, after `pauses`, won or not: judges the window when it
    /// is full.
    pub(super) fn spun(&self, pauses: u32, won: bool) {
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

    pub(super) fn new_window(&self) {
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

pub(super) static TABLE: [Class; CLASSES] = [const { Class::new() }; CLASSES];

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
/// or where the site is a wrapper, the class of the wrapper's call (wrapper.rs); it
/// starts from the estimate the class's mutexes last learned.
pub fn born(m: &RawMutex, caller: usize) {
    if keeps_link(m) {
        let site = class_for_key(caller, true);
        let index = match wrapper::wrapper_caller(&TABLE[site], caller) {
            Some(call) => match find(call) {
                Some(class) => class.index(),
                None if wrapper::may_add_class() => class_for_key(call, true),
                None => site,
            },
            None => site,
        };
        m.set_class_link(index as u16);
        m.set_estimate(TABLE[index].counts.estimate.load(Relaxed));
    }
}

/// The class of the mutexes made at the call stack `frames` (return addresses,
/// innermost first, as the statistics keep them): the init call's, or where that call
/// is a wrapper's, the class of the wrapper's call. (A mutex a wrapper made while it was
/// not yet known as one, or too soon after another, has the wrapper's own.)
pub fn class_made_at(frames: &[usize]) -> Option<&'static Class> {
    let site = find(*frames.first()?)?;
    match frames.get(1) {
        Some(&call) if call != 0 && site.site.is_wrapper() => find(call).or(Some(site)),
        _ => Some(site),
    }
}

/// The class of `m`, claimed if new.
#[inline]
pub fn class_of(m: &RawMutex) -> &'static Class {
    linked_class(m).unwrap_or_else(|| &TABLE[class_for_key(m.addr(), false)])
}

/// The class of `m` if it has one already: what a lookup on every acquisition (not only
/// the contended ones) uses, so that it neither claims entries nor moves the clock.
pub(super) fn known_class_of(m: &RawMutex) -> Option<&'static Class> {
    linked_class(m).or_else(|| find(m.addr()))
}

/// The call site's class that `m`'s `__spins` links to, if any.
#[inline]
fn linked_class(m: &RawMutex) -> Option<&'static Class> {
    let link = if keeps_link(m) { usize::from(m.class_link()) } else { 0 };
    (link != 0).then(|| &TABLE[link % CLASSES])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auto::table_to_myself;

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
}
