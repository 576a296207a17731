//! Reader-writer locks: a `pthread_rwlock_t`'s own 56 bytes carry a protocol of this
//! library's design, served under every strategy but `glibc`, which forwards every call
//! to glibc, as for mutexes (so does `SPINMUTEX_RWLOCKS=0`, whatever the strategy).
//!
//! # Why the bytes may carry our own protocol
//!
//! Unlike mutexes (which glibc's condition variables lock and unlock from the inside),
//! no glibc-internal code takes an application's rwlock. Checked in glibc 2.36's
//! sources (tag `glibc-2.36`): outside `nptl/pthread_rwlock_*.c` the rwlock functions
//! are called only through the `__libc_rwlock_*` macros of `sysdeps/nptl/libc-lockP.h`,
//! and every use of those (`intl/`, `locale/`, `time/alt_digit.c`, `time/era.c`,
//! `wcsmbs/wcsmbsload.c`, `_dl_pthread_threads_lock` in `sysdeps/generic/ldsodefs.h`)
//! names a lock that glibc defines itself; no public function takes a
//! `pthread_rwlock_t *` but the `pthread_rwlock_*` family (`sysdeps/nptl/pthread.h`).
//! (nscd uses rwlocks, but it is a separate program.) So as long as every entry point
//! that touches an application rwlock is ours, the bytes can mean what we say. (A
//! plugin loaded with `RTLD_DEEPBIND` reaches glibc's functions ahead of ours: an rwlock
//! it shares with the rest of the program breaks. Such a program runs with
//! `SPINMUTEX_RWLOCKS=0`, which forwards every rwlock call to glibc. docs/DESIGN.md,
//! "Known limits".)
//!
//! # The 56 bytes (x86-64, `sysdeps/x86/nptl/bits/struct_rwlock.h`)
//!
//! | offset | glibc's field              | here                                                |
//! |--------|----------------------------|-----------------------------------------------------|
//! | 0      | `__readers` (u32)          | `state`, low half: the *gate*, the futex word       |
//! | 4      | `__writers` (u32)          | `state`, high half: the number of readers holding   |
//! | 8, 12  | `__wrphase_futex`, `__writers_futex` | unused                                    |
//! | 16     | `__pad3`                   | the adaptive spin estimate (like a mutex's `__spins`) |
//! | 20     | `__pad4`                   | unused                                              |
//! | 24     | `__cur_writer` (int)       | the write owner's thread id, as glibc keeps it      |
//! | 28     | `__shared` (int)           | read only: non-zero means process-shared            |
//! | 32..48 | `__rwelision`, `__pad1`, `__pad2` | unused                                       |
//! | 48     | `__flags` (u32)            | read only: the kind (`PTHREAD_RWLOCK_PREFER_*_NP`)  |
//! | 52     | tail padding               | never touched: a static initialiser in automatic storage need not zero it |
//!
//! `state` is one 64-bit atomic over glibc's first two words (the lock is 8-byte
//! aligned). glibc's `pthread_rwlock_init` (`nptl/pthread_rwlock_init.c`) zeroes all 56
//! bytes, then writes `__flags` (the kind from the attribute) and `__shared` (0 or 1);
//! `PTHREAD_RWLOCK_INITIALIZER` and `PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP`
//! are all zero but `__flags` (0 and 2). In every case `state` reads 0: unlocked, nobody
//! waiting. So `init` and `destroy` stay glibc's own (`destroy` does nothing in 2.36 and
//! returns 0, which also means it cannot crash or hang on any state).
//!
//! # The state
//!
//! ```text
//!  63            32 31                      3    2    1    0
//! +----------------+-------------------------+----+----+----+
//! |  readers       |  queued writers         | WW | RW | WL |
//! +----------------+-------------------------+----+----+----+
//!   high half         low half: the gate (the only futex word)
//! ```
//!
//! * `WL` (`WRITE_LOCKED`): a writer holds the lock.
//! * `readers`: threads holding a read lock, plus, for an instant, a reader that has just
//!   added itself with one `fetch_add` and sees it may not enter (it takes itself off
//!   again at once: that is glibc's own fast path, a single atomic add).
//! * `RW` (`READERS_WAITING`): readers may be asleep, waiting for what blocks them; under
//!   the reader-preferring kinds it stays set after a writer's release woke them, until
//!   the first of them is in (see "Readers first" below).
//! * `WW` (`WRITERS_WAITING`): writers may be asleep, waiting for the lock to open to
//!   them.
//! * `queued writers`: writers that want the lock and are not yet in; each adds one when
//!   it starts waiting and takes it off in the same compare-and-swap that gives it the
//!   lock (or when it gives up). It is exact, and it is what writer preference reads.
//!
//! The lock is *idle* when `readers == 0` and `WL` is clear. A reader may enter unless
//! `WL` is set or, for `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP` only, `queued
//! writers > 0`: once a writer waits, no new reader gets in. For the default kind
//! (`PREFER_READER_NP`) and for `PREFER_WRITER_NP`, readers enter while writers wait,
//! which is what glibc documents (its manual page says `PREFER_WRITER_NP` is ignored;
//! glibc 2.36's code does let a releasing writer hand over to a waiting writer for that
//! kind, a detail no program can rely on). A writer may enter only an idle lock, and a
//! writer that would wait for it, under the reader-preferring kinds, only one that no
//! woken reader is still heading for (`RW` clear): the lock is then *open* to writers.
//! A writer that would not wait (`trywrlock`, or a timed call whose deadline has passed)
//! takes any idle lock: a lock that nobody holds is never refused.
//!
//! # Readers first
//!
//! When a writer releases a reader-preferring lock that readers wait for, it wakes them
//! and leaves `RW` set: until one of them is in (its compare-and-swap clears `RW`), no
//! writer that would wait takes the idle lock; it sleeps in the writer queue, for at most
//! [`STALE_WAITER_GRACE_NS`], and a timed writer's deadline ends that sleep too (then it
//! takes the idle lock). A try, which cannot wait, takes the idle lock at once: the woken
//! readers find it taken and wait for its release, which wakes them again. Without this, the writer that just let go (or any running
//! writer) takes the lock again before the woken readers run, and they go back to sleep:
//! with short critical sections, most wake-ups were wasted that way. glibc gets the same
//! effect by handing the read phase to the registered readers; here nothing is handed to
//! a sleeping thread (see below). Readers that were woken need no `RW` to find each other
//! (the release woke them all), and no reader sleeps while no writer holds the lock, so
//! the last reader to leave, or a woken reader that gives up on an idle lock, simply
//! clears `RW` and opens the lock to writers.
//!
//! # Sleeping: one futex word, two queues
//!
//! Everybody sleeps on the gate, with `FUTEX_WAIT_BITSET`: readers in queue 1, writers
//! in queue 2. A release wakes *all* readers (`FUTEX_WAKE_BITSET`, `INT_MAX`, queue 1),
//! so readers waiting for a writer come in together, and *one* writer (queue 2).
//! Keeping the reader count out of the gate matters: readers coming and going do not
//! change the word a sleeping writer compared, so a writer that waits for a busy
//! read-mostly lock falls asleep at once instead of failing `FUTEX_WAIT` with `EAGAIN`
//! on every reader's arrival.
//!
//! # No lost wake-up
//!
//! Two invariants, each kept by one atomic read-modify-write of `state`:
//!
//! 1. `WW` set ⇒ the lock is not open to writers. A writer sets `WW` only with a
//!    compare-and-swap from such a state, and every transition that opens it (a writer's
//!    release, the last reader's release, a blocked reader taking its `fetch_add` back, a
//!    woken reader giving up on an idle lock) clears `WW` in the same compare-and-swap and
//!    then wakes one writer. (A writer's release under the reader-preferring kinds with
//!    readers waiting does not open it, but wakes a writer all the same: should the woken
//!    readers never come, that writer is the one that notices, below.)
//! 2. `RW` set ⇒ readers are blocked, or woken and not yet in. A reader sets `RW` only
//!    with a compare-and-swap from a state that blocks it, and every transition that
//!    unblocks readers (a writer's release, a waiting writer giving up under writer
//!    preference) wakes all readers after its compare-and-swap, which clears `RW` unless
//!    the woken readers are to come first. A reader that gives up clears `RW` while
//!    readers may still be blocked only if it then wakes them all, like a release.
//!
//! A sleeper calls `FUTEX_WAIT_BITSET(gate, g)` with a value `g` that has its bit set.
//! If the transition that clears the bit happens first, the kernel sees a gate other
//! than `g` and returns at once. If it happens after the sleeper is queued, its wake
//! finds the sleeper. The gate can come back to exactly `g` only after the bit was set
//! again, which (by the invariants) happens only while the lock is busy again, so the
//! sleeper then waits for the next release, which will wake it. The count of queued
//! writers is also in the gate, so a writer that registers or leaves costs the others at
//! most one `EAGAIN` each; reader traffic costs them nothing.
//!
//! Since a `RW`/`WW` bit cleared by a release stands for every sleeper of its kind, a
//! writer woken from its queue that takes the lock sets `WW` again if other writers are
//! still queued (some may be asleep); readers need no such care, as all were woken.
//!
//! # Nothing touches the lock after its release
//!
//! POSIX lets the next owner destroy and free an rwlock as soon as it gets it. So every
//! release decides everything first (kind, shared or not, whom to wake, all read before
//! the final compare-and-swap, which clears the bits it takes responsibility for), and
//! afterwards only calls `FUTEX_WAKE_BITSET` on the gate's address (harmless on freed or
//! reused memory). A reader that is not the last never looks at the lock again after its
//! decrement. Sleepers and waiters, on the other hand, are inside a lock call, so the
//! lock is alive while they run; that is why the clean-up duties below fall on them.
//!
//! # No handoff, and leaving a wait
//!
//! A lock is never handed to a sleeper: a woken thread competes for it like any other.
//! So a thread that leaves a wait abnormally (a signal handler's `siglongjmp`, undefined
//! behaviour that glibc also tolerates only in part) strands no lock. What it can leave
//! behind is a stale `RW`/`WW` (cleared, with one spurious wake, at the next release) or,
//! from a writer, a stale entry in the queued-writer count. That costs a spurious wake
//! per release; under writer preference it would also keep readers out of an idle lock,
//! so a reader that finds the lock idle and held back only by queued writers sleeps at
//! most [`STALE_WAITER_GRACE_NS`] (any real writer takes the lock long before) and then
//! enters anyway. The same grace covers a child after `fork` that inherits queued
//! writers that were threads of its parent. Symmetrically, a writer held back from an
//! idle lock only by woken readers still on their way sleeps at most that long, then
//! clears `RW` if nothing moved and goes ahead.
//!
//! A timed call fails only if, once its deadline has passed, the lock would still make
//! it wait: a waiter whose timeout fires just as the lock opens takes it.
//!
//! A writer that gives up (timeout) takes itself off the queue. If it may have consumed
//! the wake meant for another queued writer, it passes it on: when the lock is idle it
//! wakes another writer, when it is busy it sets `WW` so that the release will. If it was
//! the last queued writer under writer preference and no writer holds the lock, it
//! clears `RW` and wakes the readers it was keeping out. A reader that gives up
//! (timeout) must not leave its `RW` behind: a write release would take it for woken
//! readers on their way in, and keep writers out of the idle lock for readers that never
//! come. It cannot tell whether other readers still sleep, so it clears `RW` and wakes
//! all readers if the lock still keeps them out: those still blocked set it again before
//! they sleep (a spurious wake each, paid only when a reader gives up). Under the
//! reader-preferring kinds, if the lock is idle, clearing `RW` opens it to writers, so it
//! also wakes a writer, as the last reader would have.
//!
//! # Writer preference without starvation
//!
//! Under `PREFER_WRITER_NONRECURSIVE_NP`, a writer queues itself before it spins, and
//! from then on no reader enters; the readers inside drain, the last one wakes a writer
//! (which still counts as queued, so readers stay out while it wakes up), and it gets in.
//! A continuous stream of readers therefore cannot starve it. As glibc documents for that
//! kind, a thread that already holds a read lock and asks again while a writer waits
//! deadlocks. Under the reader-preferring kinds, writers can starve under a stream of
//! readers that never leaves the lock idle, as glibc documents.
//!
//! # glibc's rules kept
//!
//! `EDEADLK` from `rdlock`/`wrlock` (and the timed variants) when the caller holds the
//! write lock (`__cur_writer` is its id); `EBUSY` from the try variants (also for the
//! owner); `EAGAIN` at glibc's reader limit of 2^28 − 1 readers; timed variants check
//! the clock and `tv_nsec` first (`EINVAL`, even for a free lock) and a NULL timespec
//! means no timeout; a negative `tv_sec` times out only when the call would block.
//! `unlock` by a thread that holds nothing returns 0 (glibc's `pthread_rwlock_unlock`
//! always does): here it changes nothing when a writer holds the lock or nobody does;
//! while readers hold it, it cannot be told from a reader's unlock. Nothing on any of
//! these paths is a cancellation point: they make raw futex system calls only.
//!
//! Known limit: a process-shared rwlock must be used by processes that all run this
//! library with one of its own strategies, or all not; glibc's protocol and this one do
//! not mix on the same bytes.

mod exports;
mod policy;
mod wait;

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64};
use libc::{c_int, pthread_rwlock_t};

use crate::observe::{self, Mode};
use crate::sys::{self, Deadline};

/// A writer holds the lock.
const WRITE_LOCKED: u64 = 1;
/// Readers may be asleep in the reader queue.
const READERS_WAITING: u64 = 1 << 1;
/// Writers may be asleep in the writer queue.
const WRITERS_WAITING: u64 = 1 << 2;
/// One writer that wants the lock and is not yet in.
const QUEUED_WRITER: u64 = 1 << 3;
/// The queued-writer count's bits (the rest of the gate).
const QUEUED_MASK: u64 = 0xffff_fff8;
/// One reader holding the lock.
const ONE_READER: u64 = 1 << 32;
/// glibc's limit: its reader count has 28 bits below the overflow bit
/// (`PTHREAD_RWLOCK_READER_SHIFT` 3, `PTHREAD_RWLOCK_READER_OVERFLOW` 1 << 31), so the
/// 2^28-th concurrent reader gets `EAGAIN`.
pub const MAX_READERS: u64 = (1 << 28) - 1;

/// `__flags` of the writer-preferring kind that blocks new readers
/// (`PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`).
const PREFER_WRITER_NONRECURSIVE: u32 = 2;

/// glibc's `__readers` bits (`nptl/pthread_rwlock_common.c`), read only to estimate
/// contention of forwarded calls for statistics.
const GLIBC_WRPHASE: u32 = 1;
const GLIBC_WRLOCKED: u32 = 2;
const GLIBC_READER_SHIFT: u32 = 3;

/// The futex bitsets of the two wait queues on the gate.
const READER_QUEUE: u32 = 1;
const WRITER_QUEUE: u32 = 2;

/// How long a reader waits for queued writers (or a writer for woken readers) to take an
/// idle lock before it concludes that they are gone (see "No handoff, and leaving a
/// wait").
const STALE_WAITER_GRACE_NS: i64 = 1_000_000;

#[inline(always)]
fn readers(state: u64) -> u64 {
    state >> 32
}

#[inline(always)]
fn queued_writers(state: u64) -> u64 {
    (state & QUEUED_MASK) >> 3
}

/// The gate: the low half of the state, the word the futex compares.
#[inline(always)]
fn gate(state: u64) -> u32 {
    state as u32
}

#[inline(always)]
fn idle(state: u64) -> bool {
    readers(state) == 0 && state & WRITE_LOCKED == 0
}

/// glibc's `struct __pthread_rwlock_arch_t` on x86-64 as this library uses it; every
/// field is atomic because other threads read and write it concurrently.
#[repr(C)]
pub struct RawRwLock {
    state: AtomicU64,
    glibc_futexes: [AtomicU32; 2],
    spins: AtomicU32,
    _pad4: AtomicU32,
    cur_writer: AtomicI32,
    shared: AtomicI32,
    _elision_and_pads: [AtomicU32; 4],
    flags: AtomicU32,
    _tail_padding: AtomicU32,
}

const _: () = assert!(core::mem::size_of::<RawRwLock>() == core::mem::size_of::<pthread_rwlock_t>());
const _: () = assert!(core::mem::align_of::<RawRwLock>() <= core::mem::align_of::<pthread_rwlock_t>());
const _: () = assert!(core::mem::offset_of!(RawRwLock, spins) == 16);
const _: () = assert!(core::mem::offset_of!(RawRwLock, cur_writer) == 24);
const _: () = assert!(core::mem::offset_of!(RawRwLock, shared) == 28);
const _: () = assert!(core::mem::offset_of!(RawRwLock, flags) == 48);
// The gate is the low half of `state` at the lock's own address.
const _: () = assert!(cfg!(target_endian = "little"));

/// Whom a release must wake once it has let go of the lock. Decided before the release;
/// used after it, when only the gate's address may be used.
#[derive(Clone, Copy)]
struct Wake {
    readers: bool,
    writer: bool,
}

impl Wake {
    const NOBODY: Wake = Wake { readers: false, writer: false };
}

/// The gate's address and the futex flavour: all that may be used after a release.
#[derive(Clone, Copy)]
struct GateAddr {
    word: *const u32,
    shared: bool,
}

impl GateAddr {
    /// Wakes whom `wake` names: readers first, so that under the reader-preferring kinds
    /// they enter before the writer that is woken with them. (The trace is told with the
    /// address only: the lock may be gone.)
    fn wake(self, wake: Wake) {
        if wake.readers {
            let woken = sys::futex_wake_bitset(self.word, i32::MAX, READER_QUEUE, self.shared);
            observe::rw_woke(self.word as usize, Mode::Read, woken);
        }
        if wake.writer {
            let woken = sys::futex_wake_bitset(self.word, 1, WRITER_QUEUE, self.shared);
            observe::rw_woke(self.word as usize, Mode::Write, woken);
        }
    }
}

impl RawRwLock {
    /// A thread is about to sleep on the lock, in `mode`: the trace hears of it. And if
    /// glibc's own rwlock functions have written the lock, the user does, once per
    /// process, on standard error, with what to do: this protocol never writes glibc's
    /// `__wrphase_futex` and `__writers_futex`, and glibc's sets one while a writer holds
    /// the lock or waits for it. Only a caller that reaches glibc's functions directly
    /// does that (a plugin loaded with `RTLD_DEEPBIND`, or, on a process-shared lock, a
    /// process without this library), and the two protocols do not mix: the program may
    /// hang (docs/DESIGN.md, "Known limits").
    fn going_to_sleep(&self, mode: Mode) {
        static WARNED: AtomicBool = AtomicBool::new(false);
        let glibc_took_it = self.glibc_futexes.iter().any(|w| w.load(Relaxed) != 0);
        if glibc_took_it && !WARNED.swap(true, Relaxed) {
            crate::config::note(format_args!(
                "rwlock {:#x} is also taken through glibc's own pthread_rwlock functions (by a \
                 plugin loaded with RTLD_DEEPBIND, or a process without this library?), whose \
                 protocol does not mix with this library's: the program may hang; \
                 SPINMUTEX_RWLOCKS=0 sends every rwlock call to glibc",
                self.addr()
            ));
        }
        observe::rw_sleeping(self.addr(), mode);
    }

    /// # Safety
    /// `l` must point to a live `pthread_rwlock_t` for the returned lifetime.
    #[inline]
    pub unsafe fn from_ptr<'a>(l: *mut pthread_rwlock_t) -> &'a RawRwLock {
        // SAFETY: same size and alignment (checked above); every field is an atomic, so
        // a shared reference to memory other threads change is sound.
        unsafe { &*l.cast::<RawRwLock>() }
    }

    #[inline(always)]
    fn shared(&self) -> bool {
        self.shared.load(Relaxed) != 0
    }

    /// The lock's address: what statistics key it by and the trace names it with.
    #[inline(always)]
    fn addr(&self) -> usize {
        self as *const RawRwLock as usize
    }

    /// The kind statistics record: the `PTHREAD_RWLOCK_PREFER_*_NP` value and whether it
    /// is process-shared (both fields glibc's `init` writes, read the same way under
    /// glibc's protocol and ours).
    fn recorded_kind(&self) -> i32 {
        observe::rwlock_kind(self.flags.load(Relaxed), self.shared())
    }

    /// Statistics: the caller has just taken the lock in `mode`.
    #[cold]
    #[inline(never)]
    pub fn note_locked(&self, mode: Mode) {
        observe::rw_locked(self.addr(), self.recorded_kind(), mode);
    }

    /// Statistics, before an unlock: the mode the caller holds the lock in, if it holds
    /// it. Read the same way under glibc's protocol: glibc too keeps the write owner's
    /// id in `__cur_writer`.
    #[cold]
    #[inline(never)]
    pub fn note_unlocking(&self) {
        let mode = if self.cur_writer.load(Relaxed) == crate::thread::tid() {
            Mode::Write
        } else if self.held_by_readers() {
            Mode::Read
        } else {
            return; // the caller holds nothing: the unlock changes nothing either
        };
        observe::rw_unlocking(self.addr(), mode);
    }

    /// Whether readers may hold the lock, under the protocol in force: ours, or glibc's
    /// (whose `__readers` counts readers from bit 3) when rwlocks are forwarded.
    fn held_by_readers(&self) -> bool {
        let state = self.state.load(Relaxed);
        if crate::config::rwlocks_served() {
            readers(state) != 0
        } else {
            gate(state) >> GLIBC_READER_SHIFT != 0
        }
    }

    /// Under glibc's protocol (rwlocks forwarded): whether glibc's bytes say a
    /// caller that wants `mode` would have to wait. A reader waits in a write phase with
    /// the write lock held; a writer, while the write lock is held or readers are in
    /// (glibc 2.36's `nptl/pthread_rwlock_common.c`). An estimate, taken on entry, as for
    /// forwarded mutexes.
    pub fn glibc_busy(&self, mode: Mode) -> bool {
        let readers_word = gate(self.state.load(Relaxed));
        match mode {
            Mode::Read => readers_word & (GLIBC_WRPHASE | GLIBC_WRLOCKED) == GLIBC_WRPHASE | GLIBC_WRLOCKED,
            Mode::Write => readers_word & GLIBC_WRLOCKED != 0 || readers_word >> GLIBC_READER_SHIFT != 0,
        }
    }

    /// The recorded kind and address, for the forwarded paths' statistics.
    pub fn identity(&self) -> (usize, i32) {
        (self.addr(), self.recorded_kind())
    }

    /// The kind that keeps new readers out while a writer waits.
    #[inline(always)]
    fn prefers_writers(&self) -> bool {
        self.flags.load(Relaxed) == PREFER_WRITER_NONRECURSIVE
    }

    /// Whether `state` keeps a new reader out.
    #[inline(always)]
    fn blocks_readers(&self, state: u64) -> bool {
        state & WRITE_LOCKED != 0 || (queued_writers(state) != 0 && self.prefers_writers())
    }

    /// Whether a writer may take the lock in `state`: it is idle and, under the
    /// reader-preferring kinds, no readers woken by the last write release are still on
    /// their way in (`RW` still set): a writer that took the lock from under them would
    /// only send them back to sleep.
    #[inline(always)]
    fn open_for_writer(&self, state: u64) -> bool {
        idle(state) && (state & READERS_WAITING == 0 || self.prefers_writers())
    }

    fn gate_addr(&self) -> GateAddr {
        // Little-endian: the low half of `state` is its first four bytes.
        GateAddr { word: self.state.as_ptr().cast::<u32>().cast_const(), shared: self.shared() }
    }

    /// The only thread of the process, on a process-private lock: plain loads and stores
    /// are enough (as for mutexes).
    #[inline(always)]
    fn alone(&self) -> bool {
        crate::thread::single_threaded() && !self.shared()
    }

    /// The learned estimate, bounded as a mutex's 16-bit `__spins` is (the bytes are the
    /// application's: a lock overwritten with garbage must not make the budget overflow).
    fn spin_estimate(&self) -> u32 {
        self.spins.load(Relaxed).min(i16::MAX as u32)
    }

    fn set_spin_estimate(&self, estimate: u32) {
        self.spins.store(estimate, Relaxed);
    }

    /// `pthread_rwlock_rdlock` and its timed variants (the caller has checked the
    /// timespec and clock).
    #[inline(always)]
    pub fn read_lock(&self, deadline: Option<&Deadline>) -> c_int {
        if self.alone() {
            let state = self.state.load(Relaxed);
            if !self.blocks_readers(state) && readers(state) < MAX_READERS {
                self.state.store(state + ONE_READER, Relaxed);
                return 0;
            }
            return self.read_lock_refused(state, false, deadline);
        }
        // glibc's reader fast path, one atomic add: it scales better among readers than a
        // compare-and-swap, which fails whenever another reader got there first.
        let before = self.state.fetch_add(ONE_READER, Acquire);
        if !self.blocks_readers(before) && readers(before) < MAX_READERS {
            return 0;
        }
        self.read_lock_refused(before, true, deadline)
    }

    /// The reader fast path saw `before` and may not enter. `added`: it counted itself in
    /// and must first take that back, leaving as any reader leaves (so that if it was
    /// the last one, it wakes whoever waits for the lock to become idle).
    #[cold]
    #[inline(never)]
    fn read_lock_refused(&self, before: u64, added: bool, deadline: Option<&Deadline>) -> c_int {
        if added {
            self.read_unlock(self.state.load(Relaxed));
        }
        // glibc's order: the deadlock it can recognise, then the reader limit, then wait.
        if self.cur_writer.load(Relaxed) == crate::thread::tid() {
            return libc::EDEADLK;
        }
        if readers(before) >= MAX_READERS {
            return libc::EAGAIN;
        }
        let started = if observe::enabled() { sys::now_ns() } else { 0 };
        match wait::read(self, deadline) {
            Ok(how) => {
                if started != 0 {
                    observe::rw_acquired(self.addr(), self.recorded_kind(), Mode::Read, how, started);
                }
                0
            }
            Err(e) => self.failed(e, Mode::Read),
        }
    }

    /// A waiting lock call ends without the lock: the trace and statistics see a timeout.
    #[cold]
    fn failed(&self, e: c_int, mode: Mode) -> c_int {
        if e == libc::ETIMEDOUT && observe::enabled() {
            observe::rw_timed_out(self.addr(), self.recorded_kind(), mode);
        }
        e
    }

    /// `pthread_rwlock_tryrdlock`: `EBUSY` when a reader may not enter now, `EAGAIN` at
    /// the reader limit.
    pub fn try_read_lock(&self) -> c_int {
        let mut state = self.state.load(Relaxed);
        loop {
            if self.blocks_readers(state) {
                return libc::EBUSY;
            }
            if readers(state) >= MAX_READERS {
                return libc::EAGAIN;
            }
            // Retried until the state says no: a try that fails only because another
            // reader moved the count would be a spurious failure, which POSIX forbids.
            match self.state.compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed) {
                Ok(_) => return 0,
                Err(now) => state = now,
            }
        }
    }

    /// One attempt by a reader that has already been refused once (so it never adds
    /// itself speculatively again) and has found it may enter: `Ok(true)` when in,
    /// `Ok(false)` when the state moved under it, `Err(EAGAIN)` at the reader limit.
    fn try_enter_as_reader(&self, state: u64) -> Result<bool, c_int> {
        if readers(state) >= MAX_READERS {
            return Err(libc::EAGAIN);
        }
        // Under the reader-preferring kinds a reader that comes in from the slow path ends
        // the wait of the readers the last write release woke (see `RW` in the header).
        let mut next = state + ONE_READER;
        if !self.prefers_writers() {
            next &= !READERS_WAITING;
        }
        Ok(self.state.compare_exchange(state, next, Acquire, Relaxed).is_ok())
    }

    /// `pthread_rwlock_wrlock` and its timed variants (the caller has checked the
    /// timespec and clock).
    #[inline(always)]
    pub fn write_lock(&self, deadline: Option<&Deadline>) -> c_int {
        let acquired = if self.alone() {
            let free = self.state.load(Relaxed) == 0;
            if free {
                self.state.store(WRITE_LOCKED, Relaxed);
            }
            free
        } else {
            self.state.compare_exchange(0, WRITE_LOCKED, Acquire, Relaxed).is_ok()
        };
        if !acquired {
            return self.write_lock_contended(deadline);
        }
        self.cur_writer.store(crate::thread::tid(), Relaxed);
        0
    }

    #[cold]
    #[inline(never)]
    fn write_lock_contended(&self, deadline: Option<&Deadline>) -> c_int {
        let tid = crate::thread::tid();
        // Only this thread can have stored its own id there (glibc's argument too).
        if self.cur_writer.load(Relaxed) == tid {
            return libc::EDEADLK;
        }
        let started = if observe::enabled() { sys::now_ns() } else { 0 };
        match wait::write(self, deadline) {
            Ok(how) => {
                self.cur_writer.store(tid, Relaxed);
                if started != 0 {
                    observe::rw_acquired(self.addr(), self.recorded_kind(), Mode::Write, how, started);
                }
                0
            }
            Err(e) => self.failed(e, Mode::Write),
        }
    }

    /// `pthread_rwlock_trywrlock`: `EBUSY` unless the lock is idle. Woken readers on
    /// their way in (`RW`) do not count: the lock is free, and a try must not fail on a
    /// free lock (they will find it taken and wait for this writer's release).
    pub fn try_write_lock(&self) -> c_int {
        let mut state = self.state.load(Relaxed);
        loop {
            if !idle(state) {
                return libc::EBUSY;
            }
            match self.state.compare_exchange_weak(
                state,
                acquired_by_writer(state, false, false),
                Acquire,
                Relaxed,
            ) {
                Ok(_) => {
                    self.cur_writer.store(crate::thread::tid(), Relaxed);
                    return 0;
                }
                Err(now) => state = now,
            }
        }
    }

    /// One attempt by a waiting writer to take the idle lock `state` (the caller has
    /// checked it may); `registered`: the caller is one of the queued writers; `woken`:
    /// it has slept in the writer queue (and so may have taken the wake-up that `WW`
    /// promised to the other sleepers too).
    fn try_enter_as_writer(&self, state: u64, registered: bool, woken: bool) -> bool {
        self.state
            .compare_exchange(state, acquired_by_writer(state, registered, woken), Acquire, Relaxed)
            .is_ok()
    }

    /// `pthread_rwlock_unlock`: a write unlock if the caller holds the write lock, else a
    /// read unlock. Always 0, as in glibc.
    ///
    /// The fast path is the two common releases, one compare-and-swap each: a reader
    /// leaving with nobody to wake (not the last, or nobody waiting), and the writer
    /// leaving a lock nobody waits for. Everything else, and a thread alone in its
    /// process, takes [`Self::unlock_slow`].
    #[inline(always)]
    pub fn unlock(&self) -> c_int {
        if !self.alone() {
            let state = self.state.load(Relaxed);
            if state & WRITE_LOCKED == 0 {
                if leaves_quietly(state)
                    && self.state.compare_exchange(state, state - ONE_READER, Release, Relaxed).is_ok()
                {
                    return 0;
                }
            } else if state == WRITE_LOCKED && crate::thread::is_current(self.cur_writer.load(Relaxed)) {
                self.cur_writer.store(0, Relaxed);
                if self.state.compare_exchange(WRITE_LOCKED, 0, Release, Relaxed).is_ok() {
                    return 0;
                }
                // A waiter came in between: it is the contended release after all.
                return self.write_unlock_contended();
            }
        }
        self.unlock_slow()
    }

    #[cold]
    #[inline(never)]
    fn unlock_slow(&self) -> c_int {
        let state = self.state.load(Relaxed);
        if state & WRITE_LOCKED != 0 {
            // While a writer holds the lock no reader can: a caller that is not the writer
            // holds nothing, and nothing changes (glibc would corrupt its reader count).
            if self.cur_writer.load(Relaxed) != crate::thread::tid() {
                return 0;
            }
            return self.write_unlock();
        }
        self.read_unlock(state)
    }

    #[inline]
    fn write_unlock(&self) -> c_int {
        self.cur_writer.store(0, Relaxed);
        if self.alone() && self.state.load(Relaxed) == WRITE_LOCKED {
            self.state.store(0, Relaxed);
            return 0;
        }
        if self.state.compare_exchange(WRITE_LOCKED, 0, Release, Relaxed).is_err() {
            return self.write_unlock_contended();
        }
        0
    }

    /// Someone waits or is queued: clear what this release answers for, release, wake.
    #[cold]
    #[inline(never)]
    fn write_unlock_contended(&self) -> c_int {
        let addr = self.gate_addr();
        let prefers_writers = self.prefers_writers();
        let mut state = self.state.load(Relaxed);
        loop {
            let mut next = state & !(WRITE_LOCKED | WRITERS_WAITING);
            let mut wake = Wake { readers: false, writer: state & WRITERS_WAITING != 0 };
            if state & READERS_WAITING != 0 {
                if !prefers_writers {
                    // The readers come first: `RW` stays set until one of them is in, and
                    // keeps writers out meanwhile.
                    wake.readers = true;
                } else if queued_writers(state) == 0 {
                    next &= !READERS_WAITING;
                    wake.readers = true;
                }
                // Under writer preference, queued writers keep the readers asleep.
            }
            match self.state.compare_exchange_weak(state, next, Release, Relaxed) {
                Ok(_) => {
                    addr.wake(wake);
                    return 0;
                }
                Err(now) => state = now,
            }
        }
    }

    /// A reader leaves (or a refused reader takes its `fetch_add` back), `state` being a
    /// recent load. Does nothing if no reader is counted.
    #[inline]
    fn read_unlock(&self, mut state: u64) -> c_int {
        if self.alone() {
            if readers(state) == 0 {
                return 0;
            }
            let next = state - ONE_READER;
            if !(readers(next) == 0 && state & (READERS_WAITING | WRITERS_WAITING) != 0) {
                self.state.store(next, Relaxed);
                return 0;
            }
        }
        loop {
            if readers(state) == 0 {
                return 0;
            }
            if state & WRITE_LOCKED == 0 && !leaves_quietly(state) {
                return self.last_read_unlock();
            }
            let next = state - ONE_READER;
            // Not the last reader, or nobody to wake: after this the lock is not ours to
            // look at.
            match self.state.compare_exchange_weak(state, next, Release, Relaxed) {
                Ok(_) => return 0,
                Err(now) => state = now,
            }
        }
    }

    /// The last reader leaves a lock that others wait for: it becomes idle, so `WW` is
    /// cleared and a writer woken; readers asleep only because of a writer that has since
    /// given up are woken too.
    #[cold]
    #[inline(never)]
    fn last_read_unlock(&self) -> c_int {
        let addr = self.gate_addr();
        let prefers_writers = self.prefers_writers();
        let mut state = self.state.load(Relaxed);
        loop {
            let mut next = state - ONE_READER;
            let mut wake = Wake::NOBODY;
            if readers(next) == 0 && state & WRITE_LOCKED == 0 {
                if state & WRITERS_WAITING != 0 {
                    next &= !WRITERS_WAITING;
                    wake.writer = true;
                }
                if state & READERS_WAITING != 0 {
                    if !prefers_writers {
                        // Woken readers still on their way in: none sleeps (no writer
                        // holds the lock), so the lock simply opens to writers again.
                        next &= !READERS_WAITING;
                    } else if queued_writers(state) == 0 {
                        next &= !READERS_WAITING;
                        wake.readers = true;
                    }
                }
            }
            match self.state.compare_exchange_weak(state, next, Release, Relaxed) {
                Ok(_) => {
                    addr.wake(wake);
                    return 0;
                }
                Err(now) => state = now,
            }
        }
    }
}

/// Whether a reader can leave `state` (no writer in it, at least one reader) with
/// nothing to wake: it is not the last reader, or nobody waits.
#[inline(always)]
fn leaves_quietly(state: u64) -> bool {
    readers(state) > 1 || (readers(state) == 1 && state & (READERS_WAITING | WRITERS_WAITING) == 0)
}

/// The state after a writer takes the idle lock `state`. A queued writer takes itself off
/// the queue in the same step. A writer that was woken from the writer queue may have
/// taken the wake-up that the cleared `WW` stood for: if writers remain queued, some may
/// still be asleep, so it sets `WW` again and its release will wake one (glibc's
/// writers keep `PTHREAD_RWLOCK_FUTEX_USED` for the same reason). A writer that never
/// slept leaves `WW` alone: any sleeper set it itself before sleeping, and an idle lock
/// has it clear only because a release already woke one of them.
#[inline]
fn acquired_by_writer(state: u64, registered: bool, woken: bool) -> u64 {
    let mut next = state | WRITE_LOCKED;
    if registered {
        next -= QUEUED_WRITER;
    }
    if woken && queued_writers(next) != 0 {
        next |= WRITERS_WAITING;
    }
    next
}
