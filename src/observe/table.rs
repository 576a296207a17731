//! The side table: what does not fit in a mutex's 40 bytes.
//!
//! Two arrays, mapped once at load time (`SPINMUTEX_STATS_SLOTS` entries each, never
//! grown, never `malloc`ed), with open addressing and no locks:
//!
//! * **instances**, keyed by a lock's address: the counters of one live mutex or rwlock;
//! * **classes**, keyed by a hash of a call stack (each frame by its module's path and
//!   offset, so that a module mapped where an unloaded one was gets classes of its own,
//!   and the lock type): every lock
//!   initialised at the same place (or, if it was statically initialised, first locked
//!   there) belongs to the same class. A class keeps how many instances it has had and
//!   how many were destroyed, and the counters of its destroyed instances, which
//!   `destroy` folds into it. A program that makes a mutex per job or per connection
//!   thus sees one class with every acquisition of every job's mutex.
//!
//! Mutexes and rwlocks share both tables; each entry says which it is ([`Lock`]). An
//! rwlock keeps two sets of counters, one per mode ([`Mode`]): `counters` for its write
//! locks (the exclusive mode, which is all a mutex has) and `read` for its read locks.
//!
//! An instance or class that finds no free entry within a short probe is counted in the
//! overflow: its events go to one set of overflow counters, so that the report's rows
//! plus the overflow always add up to its totals.
//!
//! Exclusive-mode instance counters are written only by the lock's owner of the moment
//! (the previous owner's writes are ordered before by the lock itself), so they are plain
//! load/store pairs on atomics; the few written by others (timeouts), an rwlock's read
//! counters (several readers hold it at once) and the class and overflow counters are
//! atomic adds. The lock path touches only its instance; classes are touched when a lock
//! is made, first seen or destroyed. A child after `fork` starts with empty tables.
//!
//! # Hold time of a read lock
//!
//! A write lock (or a mutex) has one owner, so its instance keeps when it was taken
//! (`locked_at_ns`) and the release measures the hold. Readers hold an rwlock together,
//! each from its own acquisition to its own unlock, so the time each took it is kept by
//! the reader itself: a small per-thread table of the read locks it holds ([`holds`],
//! thread-local, fixed size, no allocation), which its unlock looks up. This gives every
//! reader's own hold time, so the total is the sum of the readers' holds and the maximum
//! is the longest single hold, as for a mutex. (The alternative, accumulating
//! readers × time on the instance at each arrival and departure, needs a consistent
//! update of three words by every reader, gives no maximum, and would put the
//! readers' clock reads in a race.) A thread that holds more read locks at once than the
//! table has room for, or unlocks a read lock another thread took, leaves that hold
//! unmeasured and counted as such (`holds_unmeasured`). The same table measures the
//! holds of mutexes and write locks that found no instance slot.

use core::ptr;
use core::sync::atomic::Ordering::{AcqRel, Relaxed};
use core::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

use spinmutex_names::{self as names, Stats};

use super::callsite::{self, FRAMES};
use crate::config;

const PROBES: usize = 32;

/// What every instance, class and the overflow count (per mode, for rwlocks).
#[repr(C)]
pub struct Counters {
    pub acquisitions: AtomicU64,
    pub owner_changes: AtomicU64,
    pub contended: AtomicU64,
    pub spins: AtomicU64,
    pub sleeps: AtomicU64,
    pub handoffs: AtomicU64,
    pub timeouts: AtomicU64,
    pub wait_total_ns: AtomicU64,
    pub wait_max_ns: AtomicU64,
    pub hold_total_ns: AtomicU64,
    pub hold_max_ns: AtomicU64,
}

/// A snapshot of [`Counters`], or a sum of several.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Sum {
    pub acquisitions: u64,
    pub owner_changes: u64,
    pub contended: u64,
    pub spins: u64,
    pub sleeps: u64,
    pub handoffs: u64,
    pub timeouts: u64,
    pub wait_total_ns: u64,
    pub wait_max_ns: u64,
    pub hold_total_ns: u64,
    pub hold_max_ns: u64,
}

impl Counters {
    pub const fn new() -> Self {
        Counters {
            acquisitions: AtomicU64::new(0),
            owner_changes: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            spins: AtomicU64::new(0),
            sleeps: AtomicU64::new(0),
            handoffs: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            wait_total_ns: AtomicU64::new(0),
            wait_max_ns: AtomicU64::new(0),
            hold_total_ns: AtomicU64::new(0),
            hold_max_ns: AtomicU64::new(0),
        }
    }

    /// Every counter with the way it combines: added up, or the largest kept.
    fn each(&self) -> [(&AtomicU64, bool); 11] {
        [
            (&self.acquisitions, false),
            (&self.owner_changes, false),
            (&self.contended, false),
            (&self.spins, false),
            (&self.sleeps, false),
            (&self.handoffs, false),
            (&self.timeouts, false),
            (&self.wait_total_ns, false),
            (&self.wait_max_ns, true),
            (&self.hold_total_ns, false),
            (&self.hold_max_ns, true),
        ]
    }

    pub fn sum(&self) -> Sum {
        let mut s = Sum::default();
        s.add(self);
        s
    }

    fn clear(&self) {
        for (c, _) in self.each() {
            c.store(0, Relaxed);
        }
    }

    /// Adds these counters into `into` with atomic operations (others may add too).
    fn fold_into(&self, into: &Counters) {
        for ((from, max), (to, _)) in self.each().into_iter().zip(into.each()) {
            let v = from.load(Relaxed);
            if max {
                to.fetch_max(v, Relaxed);
            } else if v != 0 {
                to.fetch_add(v, Relaxed);
            }
        }
    }
}

impl Sum {
    pub const ZERO: Sum = Sum {
        acquisitions: 0,
        owner_changes: 0,
        contended: 0,
        spins: 0,
        sleeps: 0,
        handoffs: 0,
        timeouts: 0,
        wait_total_ns: 0,
        wait_max_ns: 0,
        hold_total_ns: 0,
        hold_max_ns: 0,
    };

    /// Adds a snapshot of `c`.
    pub fn add(&mut self, c: &Counters) {
        let v = |a: &AtomicU64| a.load(Relaxed);
        self.acquisitions += v(&c.acquisitions);
        self.owner_changes += v(&c.owner_changes);
        self.contended += v(&c.contended);
        self.spins += v(&c.spins);
        self.sleeps += v(&c.sleeps);
        self.handoffs += v(&c.handoffs);
        self.timeouts += v(&c.timeouts);
        self.wait_total_ns += v(&c.wait_total_ns);
        self.wait_max_ns = self.wait_max_ns.max(v(&c.wait_max_ns));
        self.hold_total_ns += v(&c.hold_total_ns);
        self.hold_max_ns = self.hold_max_ns.max(v(&c.hold_max_ns));
    }

    pub fn merge(&mut self, o: &Sum) {
        self.acquisitions += o.acquisitions;
        self.owner_changes += o.owner_changes;
        self.contended += o.contended;
        self.spins += o.spins;
        self.sleeps += o.sleeps;
        self.handoffs += o.handoffs;
        self.timeouts += o.timeouts;
        self.wait_total_ns += o.wait_total_ns;
        self.wait_max_ns = self.wait_max_ns.max(o.wait_max_ns);
        self.hold_total_ns += o.hold_total_ns;
        self.hold_max_ns = self.hold_max_ns.max(o.hold_max_ns);
    }
}

/// Reading a set of counters, live ([`Counters`]), added up ([`Sum`]) or two sets as one
/// ([`Both`]), without copying them (the report may run on a small stack).
macro_rules! figures {
    (added: $($added:ident),*; largest: $($largest:ident),*) => {
        pub trait Figures {
            $(fn $added(&self) -> u64;)*
            $(fn $largest(&self) -> u64;)*

            /// Ranking: longest total wait first (what the lock cost its threads), then
            /// most contended acquisitions, then most acquisitions.
            fn rank(&self) -> (u64, u64, u64) {
                (self.wait_total_ns(), self.contended(), self.acquisitions())
            }
        }
        impl Figures for Sum {
            $(fn $added(&self) -> u64 { self.$added })*
            $(fn $largest(&self) -> u64 { self.$largest })*
        }
        impl Figures for Counters {
            $(fn $added(&self) -> u64 { self.$added.load(Relaxed) })*
            $(fn $largest(&self) -> u64 { self.$largest.load(Relaxed) })*
        }
        impl<A: Figures, B: Figures> Figures for Both<'_, A, B> {
            $(fn $added(&self) -> u64 { self.0.$added() + self.1.$added() })*
            $(fn $largest(&self) -> u64 { self.0.$largest().max(self.1.$largest()) })*
        }
    };
}

/// Two sets of counters read as one: an rwlock's read and write locks together.
pub struct Both<'a, A, B>(pub &'a A, pub &'a B);

figures!(
    added: acquisitions, owner_changes, contended, spins, sleeps, handoffs, timeouts, wait_total_ns, hold_total_ns;
    largest: wait_max_ns, hold_max_ns
);

/// Owner-only counters need no atomic read-modify-write.
fn bump(counter: &AtomicU64, by: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(by), Relaxed);
}

fn bump_max(max: &AtomicU64, value: u64) {
    if value > max.load(Relaxed) {
        max.store(value, Relaxed);
    }
}

/// Instance keys besides addresses.
const EMPTY: usize = 0;
/// A destroyed instance: lookups go on past it, a new instance may take its place.
const GONE: usize = 1;

/// Which kind of lock an instance or class is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lock {
    Mutex = 0,
    RwLock = 1,
}

impl Lock {
    fn from_u32(v: u32) -> Lock {
        if v == Lock::RwLock as u32 {
            Lock::RwLock
        } else {
            Lock::Mutex
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Lock::Mutex => "mutex",
            Lock::RwLock => "rwlock",
        }
    }
}

/// How an rwlock is held: a mutex is always held in the exclusive mode, `Write`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Read,
    Write,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
        }
    }
}

/// One live mutex or rwlock.
#[repr(C, align(64))]
pub struct Instance {
    pub key: AtomicUsize,
    /// Its class: an index into the class table plus one, [`UNKNOWN_CLASS`], or 0 while
    /// being set up.
    pub class: AtomicU32,
    /// A mutex's `__kind`; an rwlock's kind (see [`rwlock_kind`]).
    pub kind: AtomicI32,
    pub last_owner: AtomicI32,
    /// A [`Lock`].
    pub lock: AtomicU32,
    /// When the current exclusive owner took the lock (0: not known).
    pub locked_at_ns: AtomicU64,
    /// Every acquisition of a mutex; the write locks of an rwlock.
    pub counters: Counters,
    /// The read locks of an rwlock.
    pub read: Counters,
}

impl Instance {
    pub fn lock(&self) -> Lock {
        Lock::from_u32(self.lock.load(Relaxed))
    }

    /// The counters of `mode`.
    fn of(&self, mode: Mode) -> &Counters {
        match mode {
            Mode::Write => &self.counters,
            Mode::Read => &self.read,
        }
    }

    /// Both modes together.
    pub fn total(&self) -> Both<'_, Counters, Counters> {
        Both(&self.counters, &self.read)
    }
}

/// The kind an rwlock is recorded with: its `__flags` (the `PTHREAD_RWLOCK_PREFER_*_NP`
/// value), plus the mutex kinds' process-shared bit when it is process-shared.
pub const fn rwlock_kind(flags: u32, shared: bool) -> i32 {
    (flags & 3) as i32 | if shared { RWLOCK_PSHARED } else { 0 }
}

/// The process-shared bit of an rwlock's recorded kind (the mutex kinds' one).
pub const RWLOCK_PSHARED: i32 = 128;

/// The class of instances whose class found no room in the class table.
pub const UNKNOWN_CLASS: u32 = u32::MAX;

/// How a class's instances came to be.
pub const BY_INIT: u32 = 1;
pub const BY_FIRST_LOCK: u32 = 2;

/// All locks of one type made at one place.
#[repr(C, align(64))]
pub struct Class {
    /// Hash of the frames and the lock type (never 0 once claimed).
    pub key: AtomicU64,
    /// [`BY_INIT`] or [`BY_FIRST_LOCK`] (0 while being set up).
    pub origin: AtomicU32,
    pub kind: AtomicI32,
    /// A [`Lock`].
    pub lock: AtomicU32,
    pub created: AtomicU64,
    pub destroyed: AtomicU64,
    pub frames: [AtomicUsize; FRAMES],
    /// The counters of its destroyed instances (an rwlock's write locks).
    pub folded: Counters,
    /// The read locks of its destroyed rwlocks.
    pub folded_read: Counters,
}

impl Class {
    const fn new() -> Self {
        Class {
            key: AtomicU64::new(0),
            origin: AtomicU32::new(0),
            kind: AtomicI32::new(0),
            lock: AtomicU32::new(0),
            created: AtomicU64::new(0),
            destroyed: AtomicU64::new(0),
            frames: [const { AtomicUsize::new(0) }; FRAMES],
            folded: Counters::new(),
            folded_read: Counters::new(),
        }
    }

    pub fn live(&self) -> u64 {
        self.created.load(Relaxed).saturating_sub(self.destroyed.load(Relaxed))
    }

    pub fn lock(&self) -> Lock {
        Lock::from_u32(self.lock.load(Relaxed))
    }
}

/// The stand-in class when the class table is full.
pub static UNKNOWN: Class = Class::new();
/// Events of locks that found no instance slot.
pub static OVERFLOW: Counters = Counters::new();
/// How many times a lock found no instance slot, or a class no class slot.
pub static OVERFLOWED_INSTANCES: AtomicU64 = AtomicU64::new(0);
pub static OVERFLOWED_CLASSES: AtomicU64 = AtomicU64::new(0);
/// Releases whose hold time could not be measured: read unlocks, and unlocks of locks
/// that found no instance slot, by a thread that did not take the lock (or took it
/// before statistics started) or held too many such locks at once.
pub static HOLDS_UNMEASURED: AtomicU64 = AtomicU64::new(0);

static INSTANCES: AtomicPtr<Instance> = AtomicPtr::new(ptr::null_mut());
static CLASSES: AtomicPtr<Class> = AtomicPtr::new(ptr::null_mut());
/// Scratch sums for a report, one per class (see `report`).
static SUMS: AtomicPtr<Split> = AtomicPtr::new(ptr::null_mut());
static LEN: AtomicUsize = AtomicUsize::new(0);

/// Reads SPINMUTEX_STATS and maps the tables. False if statistics are off.
pub fn init() -> bool {
    if config::read(&names::STATS, names::parse_stats, Stats::Off, true) == Stats::Off {
        return false;
    }
    let slots = config::read(&names::STATS_SLOTS, names::parse_stats_slots, names::DEFAULT_STATS_SLOTS, true);
    let (Some(instances), Some(classes), Some(sums)) =
        (map::<Instance>(slots), map::<Class>(slots), map::<Split>(slots))
    else {
        return false;
    };
    LEN.store(slots, Relaxed);
    INSTANCES.store(instances, Relaxed);
    CLASSES.store(classes, Relaxed);
    SUMS.store(sums, Relaxed);
    callsite::init();
    true
}

/// A zeroed array of `n` `T`s that lives as long as the process.
fn map<T>(n: usize) -> Option<*mut T> {
    // SAFETY: a fresh private anonymous mapping; zeroed memory is a valid array of empty
    // entries (all-zero atomics and integers).
    let mem = unsafe {
        libc::mmap(
            ptr::null_mut(),
            n * core::mem::size_of::<T>(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    (mem != libc::MAP_FAILED).then_some(mem.cast())
}

fn array<T>(base: &AtomicPtr<T>) -> &'static [T] {
    let base = base.load(Relaxed);
    if base.is_null() {
        return &[];
    }
    // SAFETY: `base` maps LEN entries for the life of the process.
    unsafe { core::slice::from_raw_parts(base, LEN.load(Relaxed)) }
}

pub fn instances() -> &'static [Instance] {
    array(&INSTANCES)
}

pub fn classes() -> &'static [Class] {
    array(&CLASSES)
}

/// A class's counters added up in a report: per mode, and together.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Split {
    /// Every acquisition of a mutex; the write locks of an rwlock.
    pub write: Sum,
    /// The read locks of an rwlock.
    pub read: Sum,
}

impl Split {
    /// Starts from a class's folded counters.
    pub fn set_to_class(&mut self, class: &Class) {
        self.write = Sum::ZERO;
        self.write.add(&class.folded);
        self.read = Sum::ZERO;
        self.read.add(&class.folded_read);
    }

    /// Adds a live instance's counters.
    pub fn add(&mut self, instance: &Instance) {
        self.write.add(&instance.counters);
        self.read.add(&instance.read);
    }

    /// Both modes together.
    pub fn total(&self) -> Both<'_, Sum, Sum> {
        Both(&self.write, &self.read)
    }
}

/// The report's scratch sums, one per class.
///
/// # Safety
/// Only the one report that holds the report lock may use them.
pub unsafe fn sums() -> &'static mut [Split] {
    let base = SUMS.load(Relaxed);
    if base.is_null() {
        return &mut [];
    }
    // SAFETY: as `array`; exclusive by the caller's promise.
    unsafe { core::slice::from_raw_parts_mut(base, LEN.load(Relaxed)) }
}

fn start(key: u64, len: usize) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16) as usize % len
}

/// The live instance at `addr`, if it has one.
pub fn instance(addr: usize) -> Option<&'static Instance> {
    let table = instances();
    if table.is_empty() {
        return None;
    }
    let first = start(addr as u64 >> 3, table.len());
    for i in 0..PROBES.min(table.len()) {
        let slot = &table[(first + i) % table.len()];
        match slot.key.load(Relaxed) {
            k if k == addr => return Some(slot),
            EMPTY => return None,
            _ => {}
        }
    }
    None
}

/// The instance at `addr`, made (first seen: its class is its first lock's call site)
/// if it has none. None if the table has no room: the caller counts the overflow.
#[inline]
pub fn instance_or_new(addr: usize, lock: Lock, kind: i32) -> Option<&'static Instance> {
    match instance(addr) {
        Some(found) => Some(found),
        None => new_instance(addr, lock, kind, BY_FIRST_LOCK),
    }
}

/// Takes a free (or destroyed) slot for `addr`; its class comes from the caller's
/// stack. Returns the existing instance if another thread made it meanwhile.
#[cold]
#[inline(never)]
fn new_instance(addr: usize, lock: Lock, kind: i32, origin: u32) -> Option<&'static Instance> {
    let table = instances();
    if table.is_empty() {
        return None;
    }
    let first = start(addr as u64 >> 3, table.len());
    for _attempt in 0..4 {
        let mut free = None;
        for i in 0..PROBES.min(table.len()) {
            let slot = &table[(first + i) % table.len()];
            match slot.key.load(Relaxed) {
                k if k == addr => return Some(slot),
                EMPTY => {
                    free = free.or(Some((slot, EMPTY)));
                    break;
                }
                GONE => free = free.or(Some((slot, GONE))),
                _ => {}
            }
        }
        let Some((slot, was)) = free else { break };
        match slot.key.compare_exchange(was, addr, AcqRel, Relaxed) {
            Ok(_) => {
                slot.counters.clear();
                slot.read.clear();
                slot.locked_at_ns.store(0, Relaxed);
                slot.last_owner.store(0, Relaxed);
                slot.kind.store(kind, Relaxed);
                slot.lock.store(lock as u32, Relaxed);
                slot.class.store(class_here(origin, lock, kind), Relaxed);
                return Some(slot);
            }
            Err(k) if k == addr => return Some(slot),
            Err(_) => {} // another lock took that slot: look again
        }
    }
    OVERFLOWED_INSTANCES.fetch_add(1, Relaxed);
    None
}

/// The class for a lock made by the caller's caller (its stack, our frames left out),
/// counting one more instance in it. The lock type is part of the key: a mutex and an
/// rwlock never share a class.
fn class_here(origin: u32, lock: Lock, kind: i32) -> u32 {
    let frames = callsite::capture();
    // Each frame by its module and offset, not its address (see `callsite::identity`).
    let key = frames.iter().fold(0xcbf2_9ce4_8422_2325u64 ^ lock as u64, |h, &f| {
        let frame = if f == 0 { 0 } else { callsite::identity(f) };
        (h ^ frame).wrapping_mul(0x100_0000_01b3)
    });
    let key = key.max(1);
    let table = classes();
    let first = if table.is_empty() { 0 } else { start(key, table.len()) };
    for i in 0..PROBES.min(table.len()) {
        let index = (first + i) % table.len();
        let class = &table[index];
        let claimed = match class.key.load(Relaxed) {
            k if k == key => true,
            0 => match class.key.compare_exchange(0, key, AcqRel, Relaxed) {
                Ok(_) => {
                    for (slot, frame) in class.frames.iter().zip(frames) {
                        slot.store(frame, Relaxed);
                    }
                    class.kind.store(kind, Relaxed);
                    class.lock.store(lock as u32, Relaxed);
                    class.origin.store(origin, Relaxed);
                    true
                }
                Err(k) => k == key,
            },
            _ => false,
        };
        if claimed {
            class.created.fetch_add(1, Relaxed);
            return index as u32 + 1;
        }
    }
    OVERFLOWED_CLASSES.fetch_add(1, Relaxed);
    UNKNOWN.created.fetch_add(1, Relaxed);
    UNKNOWN_CLASS
}

/// The class an instance belongs to.
pub fn class_of(instance: &Instance) -> &'static Class {
    match instance.class.load(Relaxed) {
        0 | UNKNOWN_CLASS => &UNKNOWN,
        n => classes().get(n as usize - 1).unwrap_or(&UNKNOWN),
    }
}

/// `pthread_mutex_init` (or `mtx_init`, or `pthread_rwlock_init`) made a lock at `addr`:
/// a new instance of the caller's class. A lock that was there before without
/// `destroy` ends first.
pub fn born(addr: usize, lock: Lock, kind: i32) {
    died(addr);
    let _ = new_instance(addr, lock, kind, BY_INIT);
}

/// `destroy` of the lock at `addr`: its counters join its class's.
pub fn died(addr: usize) {
    let Some(slot) = instance(addr) else { return };
    let class = class_of(slot);
    slot.counters.fold_into(&class.folded);
    slot.read.fold_into(&class.folded_read);
    class.destroyed.fetch_add(1, Relaxed);
    slot.key.store(GONE, Relaxed);
}

/// The caller now owns the mutex at `addr`.
pub fn locked(addr: usize, kind: i32, tid: i32, now_ns: u64) {
    let Some(slot) = instance_or_new(addr, Lock::Mutex, kind) else {
        OVERFLOW.acquisitions.fetch_add(1, Relaxed);
        holds::locked(addr, now_ns);
        return;
    };
    bump(&slot.counters.acquisitions, 1);
    if slot.last_owner.load(Relaxed) != tid {
        slot.last_owner.store(tid, Relaxed);
        bump(&slot.counters.owner_changes, 1);
    }
    slot.locked_at_ns.store(now_ns, Relaxed);
}

/// The owner is about to release the mutex at `addr`.
pub fn unlocking(addr: usize, now_ns: u64) {
    let (counters, since, owner_only) = match instance(addr) {
        Some(slot) => (&slot.counters, slot.locked_at_ns.swap(0, Relaxed), true),
        None => (&OVERFLOW, holds::unlocking(addr), false),
    };
    add_hold(counters, since, now_ns, owner_only);
}

/// Adds a hold that began at `since` (0: not known) and ends at `now_ns`.
fn add_hold(counters: &Counters, since: u64, now_ns: u64, owner_only: bool) {
    if since == 0 {
        return;
    }
    let held = now_ns.saturating_sub(since);
    if owner_only {
        bump(&counters.hold_total_ns, held);
        bump_max(&counters.hold_max_ns, held);
    } else {
        counters.hold_total_ns.fetch_add(held, Relaxed);
        counters.hold_max_ns.fetch_max(held, Relaxed);
    }
}

/// The caller now holds the rwlock at `addr` in `mode`.
pub fn rw_locked(addr: usize, kind: i32, mode: Mode, tid: i32, now_ns: u64) {
    let Some(slot) = instance_or_new(addr, Lock::RwLock, kind) else {
        OVERFLOW.acquisitions.fetch_add(1, Relaxed);
        holds::locked(addr, now_ns);
        return;
    };
    // Readers share the lock, so every counter is an atomic add here; a writer is alone.
    let counters = slot.of(mode);
    if slot.last_owner.swap(tid, Relaxed) != tid {
        counters.owner_changes.fetch_add(1, Relaxed);
    }
    counters.acquisitions.fetch_add(1, Relaxed);
    match mode {
        Mode::Write => slot.locked_at_ns.store(now_ns, Relaxed),
        Mode::Read => holds::locked(addr, now_ns),
    }
}

/// The caller is about to release the rwlock at `addr`, which it holds in `mode`.
pub fn rw_unlocking(addr: usize, mode: Mode, now_ns: u64) {
    let slot = instance(addr);
    let since = match (slot, mode) {
        (Some(slot), Mode::Write) => slot.locked_at_ns.swap(0, Relaxed),
        _ => holds::unlocking(addr),
    };
    let counters = slot.map_or(&OVERFLOW, |s| s.of(mode));
    add_hold(counters, since, now_ns, false);
}

/// A contended acquisition; called by the new owner before `locked`.
pub fn contended(addr: usize, kind: i32, spins: u32, sleeps: u32, handoff: bool, wait_ns: u64) {
    match instance_or_new(addr, Lock::Mutex, kind) {
        Some(slot) => {
            let c = &slot.counters;
            bump(&c.contended, 1);
            bump(&c.spins, spins.into());
            bump(&c.sleeps, sleeps.into());
            bump(&c.handoffs, handoff.into());
            bump(&c.wait_total_ns, wait_ns);
            bump_max(&c.wait_max_ns, wait_ns);
        }
        None => add_contended(&OVERFLOW, spins, sleeps, handoff, wait_ns),
    }
}

/// A contended acquisition of the rwlock at `addr` in `mode`; called by the new holder
/// before `rw_locked`.
pub fn rw_contended(addr: usize, kind: i32, mode: Mode, spins: u32, sleeps: u32, wait_ns: u64) {
    let counters = instance_or_new(addr, Lock::RwLock, kind).map_or(&OVERFLOW, |slot| slot.of(mode));
    add_contended(counters, spins, sleeps, false, wait_ns);
}

/// Counts a contended acquisition with atomic adds (others may count at once).
fn add_contended(c: &Counters, spins: u32, sleeps: u32, handoff: bool, wait_ns: u64) {
    c.contended.fetch_add(1, Relaxed);
    c.spins.fetch_add(spins.into(), Relaxed);
    c.sleeps.fetch_add(sleeps.into(), Relaxed);
    c.handoffs.fetch_add(handoff.into(), Relaxed);
    c.wait_total_ns.fetch_add(wait_ns, Relaxed);
    c.wait_max_ns.fetch_max(wait_ns, Relaxed);
}

/// A timed lock gave up (the caller does not own the lock: atomic add). `mode` is
/// `Write` for a mutex.
pub fn timed_out(addr: usize, lock: Lock, kind: i32, mode: Mode) {
    let counters = instance_or_new(addr, lock, kind).map_or(&OVERFLOW, |slot| slot.of(mode));
    counters.timeouts.fetch_add(1, Relaxed);
}

/// The child of a `fork` reports on its own life only.
pub fn after_fork_in_child() {
    for (base, bytes) in [
        (INSTANCES.load(Relaxed).cast::<u8>(), core::mem::size_of::<Instance>()),
        (CLASSES.load(Relaxed).cast::<u8>(), core::mem::size_of::<Class>()),
    ] {
        if !base.is_null() {
            // SAFETY: MADV_DONTNEED on our private anonymous mapping makes it read back
            // as zeros, i.e. empty entries.
            unsafe { libc::madvise(base.cast(), bytes * LEN.load(Relaxed), libc::MADV_DONTNEED) };
        }
    }
    UNKNOWN.folded.clear();
    UNKNOWN.folded_read.clear();
    UNKNOWN.created.store(0, Relaxed);
    UNKNOWN.destroyed.store(0, Relaxed);
    OVERFLOW.clear();
    for n in [&OVERFLOWED_INSTANCES, &OVERFLOWED_CLASSES, &HOLDS_UNMEASURED] {
        n.store(0, Relaxed);
    }
}

/// When the calling thread took the locks it holds without an instance of their own to
/// say so: its read locks (readers share an instance), and the mutexes and write locks
/// that found no instance slot. A fixed table per thread (see "Hold time of a read lock"
/// in the module header).
mod holds {
    use core::cell::Cell;
    use core::sync::atomic::Ordering::Relaxed;

    /// Locks a thread can hold at once with their holds measured.
    const HELD: usize = 8;

    thread_local! {
        static LOCKED_AT: [Cell<(usize, u64)>; HELD] = const { [const { Cell::new((0, 0)) }; HELD] };
    }

    /// Remembers when the calling thread took `addr`, if it has room (if not, the
    /// release counts the hold as unmeasured).
    pub fn locked(addr: usize, now_ns: u64) {
        let _ = LOCKED_AT.try_with(|held| {
            if let Some(free) = held.iter().find(|h| h.get().0 == 0) {
                free.set((addr, now_ns.max(1)));
            }
        });
    }

    /// When the calling thread took `addr`, forgetting it; 0 if it does not know. Of
    /// several holds of one lock (a reader that read-locks again), the latest.
    pub fn unlocking(addr: usize) -> u64 {
        let since = LOCKED_AT
            .try_with(|held| match held.iter().filter(|h| h.get().0 == addr).max_by_key(|h| h.get().1) {
                Some(entry) => entry.replace((0, 0)).1,
                None => 0,
            })
            .unwrap_or(0);
        if since == 0 {
            super::HOLDS_UNMEASURED.fetch_add(1, Relaxed);
        }
        since
    }
}
