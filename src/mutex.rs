//! A `pthread_mutex_t` seen as glibc lays it out, and the lock protocol on its bytes.
//!
//! # The lock word (`__lock`, glibc's protocol, unchanged)
//!
//! * `UNLOCKED` (0): free.
//! * `LOCKED` (1): held, and nobody sleeps on it.
//! * `CONTENDED` (2): held, and threads may be asleep in `FUTEX_WAIT` on it.
//!
//! Acquire: compare-and-swap 0 → 1. A thread that goes to sleep first swaps in 2 (if the
//! swap returned 0 it has the lock after all; a word that already reads 2 is left alone),
//! then `FUTEX_WAIT(word, 2)`; once woken it swaps in 2 again, since it cannot know
//! whether others still sleep. Release: compare-and-swap 1 → 0; if the word was 2,
//! exchange it with 0 and `FUTEX_WAKE` one sleeper. glibc's condition variables run this
//! same protocol on the same bytes, which is why they keep working on our mutexes.
//!
//! Between acquire and release the owner keeps `__owner` = its thread id and `__nusers`
//! counted, and `__count` for recursive mutexes, exactly as glibc does.
//!
//! # What this library adds, in bytes glibc leaves alone for these mutex types
//!
//! * `__spins`: the adaptive spin estimate (glibc uses it the same way for its adaptive
//!   type): a moving average of the pause iterations that spinning needed. Under `auto`
//!   it holds the mutex's lock class too ([`AUTO_ESTIMATE_BITS`], auto/class.rs).
//! * `__elision` (used by glibc only when lock elision is switched on, for its own lock
//!   code, which never runs on the mutexes served here): the CPU the owner ran on when
//!   it took the lock, plus one (0: unknown), for the spin policy (spin.rs).
//! * `__list.__prev` (8 bytes, used by glibc only for robust and PI mutexes, which are
//!   forwarded): the **handoff** request. A sleeper that keeps losing the lock to spinners
//!   writes its pid and tid there and sleeps on both the lock word and this word. The next
//!   owner that releases a `CONTENDED` lock (ours: glibc's internal unlock does not know
//!   about handoffs, which is harmless) then does not release it: it marks the request
//!   granted and wakes the requester, which owns the lock on waking. The lock word stays
//!   non-zero throughout, so no spinner or newcomer can take the lock in between.
//!
//!   A granted lock belongs to a thread that is not running yet, so that thread must be
//!   certain to take it: it asks only with every signal blocked, and keeps them blocked
//!   until it holds the lock or has taken its request back. No signal handler can run
//!   in it meanwhile (one could wait for the very lock it is being handed, or leave with
//!   `siglongjmp` and strand it), and no cancellation can end it. A signal that arrives
//!   is noticed within [`SIGNAL_LATENCY_NS`], and at the latest when the lock comes
//!   (granted, or found free): the thread withdraws (passing on a lock it got in that
//!   instant), lets the signal through, and waits on as an ordinary sleeper, owning
//!   nothing, as under glibc.
//! * `__list.__next` low half: how many threads spin on this mutex now, kept only when
//!   SPINMUTEX_MAX_SPINNERS caps them; high half: how many sleep on it, kept only under
//!   SPINMUTEX_FAIR and only for process-private mutexes (a process killed while asleep
//!   on a shared one would leave its count behind for good). A child after `fork` may
//!   inherit a count of the parent's sleepers, and a thread that leaves a wait with
//!   `siglongjmp` leaves its own: that mutex then never spins (slower, never wrong).
//!
//! On a mutex converted to the kernel's protocol (pi.rs) none of the three is used, and
//! pi.rs keeps two words of its own in `__list.__next`: its halves become the *stray
//! release* and the *events* counter that pi.rs describes.
//!
//! # After the release
//!
//! The instant the lock word reads free, the next owner may destroy the mutex and free
//! its memory (POSIX allows it: think of an object whose last reference is dropped under
//! its own lock). So a release decides everything it needs (private or shared futex,
//! where to wake) before the releasing write, and afterwards uses only the mutex's
//! address: for the futex wake, which never reads the memory, and for tracing.

use core::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicI16, AtomicI32, AtomicU16, AtomicU32, AtomicU64};
use libc::{c_int, pthread_mutex_t};

use crate::observe::GiveUp;
use crate::sys::{self, Deadline};

pub const UNLOCKED: i32 = 0;
pub const LOCKED: i32 = 1;
pub const CONTENDED: i32 = 2;

/// `__kind` bits (glibc's `PTHREAD_MUTEX_*_NP` encoding).
pub mod kind {
    pub const TYPE_MASK: i32 = 3;
    pub const RECURSIVE: i32 = 1;
    pub const ERRORCHECK: i32 = 2;
    pub const ADAPTIVE: i32 = 3;
    pub const ROBUST: i32 = 16;
    pub const PRIO_INHERIT: i32 = 32;
    pub const PRIO_PROTECT: i32 = 64;
    pub const PSHARED: i32 = 128;
    pub const ELISION: i32 = 256;
    pub const NO_ELISION: i32 = 512;
    /// Converted by the `kernel` strategy (pi.rs) from a mutex the program made with
    /// glibc's word: glibc's rules for its type still apply, not those of a
    /// priority-inheritance mutex the program asked for. glibc masks this bit out of
    /// every test of the kind (it looks at the low 7 bits and the elision bits only).
    pub const CONVERTED: i32 = 1 << 10;
    /// Everything this library serves itself; any other bit (robust, PI, PP, a destroyed
    /// mutex's −1) is forwarded to glibc.
    pub const SERVED: i32 = TYPE_MASK | PSHARED | ELISION | NO_ELISION;
    /// The bits a normal mutex may have (its type is 0).
    pub const PLAIN: i32 = PSHARED | ELISION | NO_ELISION;
}

/// Under `auto`, `__spins` holds the mutex's class (its high 8 bits: auto/class.rs's 256
/// classes) and its spin estimate (its low 8 bits, in pauses). The estimate saturates at
/// 255, which matters only where the spin limit is raised past 2 × 255 + 64 pauses (about
/// 17 µs): a budget is twice the estimate plus a floor (spin.rs).
pub const AUTO_ESTIMATE_BITS: u32 = 8;
const AUTO_ESTIMATE_MASK: u16 = (1 << AUTO_ESTIMATE_BITS) - 1;
const _: () = assert!(crate::auto::CLASSES == 1 << (16 - AUTO_ESTIMATE_BITS));

/// Bit 31 of the handoff word's low half: the request has been granted.
const GRANTED: u32 = 1 << 31;

/// Longest a thread waiting for a handoff holds back a signal before it withdraws its
/// request and lets the signal through.
pub const SIGNAL_LATENCY_NS: u64 = 500_000;

/// glibc's `struct __pthread_mutex_s` on x86-64, every field atomic because other
/// threads read and write it concurrently.
#[repr(C)]
pub struct RawMutex {
    lock: AtomicI32,
    count: AtomicU32,
    owner: AtomicI32,
    nusers: AtomicU32,
    kind: AtomicI32,
    spins: AtomicI16,
    owner_cpu: AtomicU16,
    handoff: AtomicU64,
    spinners: AtomicU32,
    sleepers: AtomicU32,
}

const _: () = assert!(core::mem::size_of::<RawMutex>() == core::mem::size_of::<pthread_mutex_t>());
const _: () = assert!(core::mem::align_of::<RawMutex>() <= core::mem::align_of::<pthread_mutex_t>());

/// How an acquisition that found the lock busy ended up with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// Caught it free while spinning.
    Spinning,
    /// Took it after sleeping on the futex.
    Sleeping,
    /// Was handed it by the previous owner after sleeping.
    Handoff,
    /// Got it from the kernel (`FUTEX_LOCK_PI`: spun there or slept).
    Kernel,
}

/// The story of one contended acquisition.
#[derive(Clone, Copy, Debug)]
pub struct Acquired {
    pub how: How,
    /// Pause iterations spun.
    pub spins: u32,
    /// Times it went to sleep on the futex.
    pub sleeps: u32,
}

impl RawMutex {
    /// # Safety
    /// `m` must point to a live `pthread_mutex_t` (or `mtx_t`) for the returned lifetime.
    #[inline]
    pub unsafe fn from_ptr<'a>(m: *mut pthread_mutex_t) -> &'a RawMutex {
        // SAFETY: same size and alignment (checked above); every field is an atomic, so
        // a shared reference to memory other threads change is sound.
        unsafe { &*m.cast::<RawMutex>() }
    }

    #[inline]
    pub fn kind(&self) -> i32 {
        self.kind.load(Relaxed)
    }

    #[inline]
    pub fn owner(&self) -> i32 {
        self.owner.load(Relaxed)
    }

    #[inline]
    pub fn is_locked(&self) -> bool {
        self.lock.load(Relaxed) != UNLOCKED
    }

    pub fn addr(&self) -> usize {
        self as *const Self as usize
    }

    #[inline(always)]
    pub fn shared(&self) -> bool {
        self.kind() & kind::PSHARED != 0
    }

    /// The lock word itself, for a strategy that speaks another protocol on it (pi.rs).
    pub fn word(&self) -> &AtomicI32 {
        &self.lock
    }

    /// Sets the kind of a mutex no other thread can know yet (just initialised).
    pub fn set_kind(&self, k: i32) {
        self.kind.store(k, Relaxed);
    }

    /// The class of the mutex under `auto` (auto/class.rs), kept in the high bits of
    /// `__spins` (see [`AUTO_ESTIMATE_BITS`]); 0: none recorded.
    pub fn class_link(&self) -> u16 {
        self.spins.load(Relaxed) as u16 >> AUTO_ESTIMATE_BITS
    }

    pub fn set_class_link(&self, class: u16) {
        let estimate = self.spins.load(Relaxed) as u16 & AUTO_ESTIMATE_MASK;
        self.spins.store(((class << AUTO_ESTIMATE_BITS) | estimate) as i16, Relaxed);
    }

    /// The two words the `kernel` strategy keeps beside a converted mutex's lock word
    /// (pi.rs): the stray release and the events counter, in `__list.__next`, which the
    /// word protocol's counts use only on mutexes that are not converted.
    pub fn pi_side(&self) -> (&AtomicU32, &AtomicU32) {
        (&self.sleepers, &self.spinners)
    }

    /// Changes the kind from `from` to `to` unless another thread changed it first.
    pub fn convert_kind(&self, from: i32, to: i32) -> bool {
        self.kind.compare_exchange(from, to, AcqRel, Acquire).is_ok()
    }

    /// True if this mutex may take the fast path: a normal mutex (`PTHREAD_MUTEX_NORMAL`
    /// or a static initialiser, private or shared), and a strategy that serves it with
    /// this protocol and no statistics (`config::fast_path_off` is 0). One branch.
    #[inline(always)]
    pub fn plain(&self) -> bool {
        (self.kind() as u32 | crate::config::fast_path_off()) & !(kind::PLAIN as u32) == 0
    }

    /// [`plain`](Self::plain), for a release: an `auto` experiment counts acquisitions,
    /// not releases, so a release takes the fast path while it measures, and measuring
    /// adds nothing inside the critical section but the count. The same one test, with
    /// another constant.
    #[inline(always)]
    pub fn plain_to_release(&self) -> bool {
        let ignored = kind::PLAIN as u32 | crate::config::MEASURING;
        (self.kind() as u32 | crate::config::fast_path_off()) & !ignored == 0
    }

    /// One attempt, no waiting: 0 → 1.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        if self.alone() {
            let free = self.lock.load(Relaxed) == UNLOCKED;
            if free {
                self.lock.store(LOCKED, Relaxed);
            }
            return free;
        }
        self.lock.compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed).is_ok()
    }

    /// The only thread of the process, on a process-private mutex: plain loads and
    /// stores are enough.
    #[inline(always)]
    fn alone(&self) -> bool {
        crate::thread::single_threaded() && !self.shared()
    }

    /// Records the caller as owner after any acquisition, with the CPU it runs on.
    #[inline]
    pub fn set_owner(&self, tid: i32) {
        self.owner.store(tid, Relaxed);
        self.nusers.store(self.nusers.load(Relaxed).wrapping_add(1), Relaxed);
        let cpu = crate::thread::cpu().map_or(0, |c| c.wrapping_add(1).min(u32::from(u16::MAX)) as u16);
        self.owner_cpu.store(cpu, Relaxed);
    }

    /// Forgets the owner before a release (glibc's condition variables assert that a
    /// mutex they relock has `__owner == 0`).
    #[inline]
    pub fn clear_owner(&self) {
        self.owner.store(0, Relaxed);
        self.nusers.store(self.nusers.load(Relaxed).wrapping_sub(1), Relaxed);
    }

    pub fn count(&self) -> u32 {
        self.count.load(Relaxed)
    }

    pub fn set_count(&self, n: u32) {
        self.count.store(n, Relaxed);
    }

    /// Releases the lock; wakes a sleeper or hands the lock to a starving one.
    #[inline]
    pub fn release(&self) {
        if self.alone() && self.lock.load(Relaxed) == LOCKED {
            self.lock.store(UNLOCKED, Relaxed);
            return;
        }
        // Uncontended, one compare-and-swap and nothing else. A thread asking for a
        // handoff marks the word CONTENDED before it sleeps, so only a failed swap needs
        // to look for a request.
        if self.lock.compare_exchange(LOCKED, UNLOCKED, Release, Relaxed).is_err() {
            self.release_contended();
        }
    }

    #[cold]
    #[inline(never)]
    fn release_contended(&self) {
        // Read before the release: afterwards the mutex may be gone (module header).
        let shared = self.shared();
        let word = self.lock.as_ptr();
        let addr = self.addr();
        if self.grant_handoff() {
            return;
        }
        if self.lock.swap(UNLOCKED, Release) == CONTENDED {
            let _ = sys::futex_wake(word, 1, shared);
            crate::observe::woke(addr);
        }
    }

    /// If a sleeper of this process asked for a handoff, passes the lock to it without
    /// releasing it. A request left behind by a thread of the parent before `fork` names
    /// another pid: it is withdrawn and the lock released normally.
    fn grant_handoff(&self) -> bool {
        let request = self.handoff.load(Acquire);
        if request == 0 || request as u32 & GRANTED != 0 {
            return false;
        }
        if (request >> 32) as i32 != crate::thread::pid() {
            let _ = self.handoff.compare_exchange(request, 0, Relaxed, Relaxed);
            return false;
        }
        let (word, addr) = (self.handoff.as_ptr().cast::<i32>(), self.addr());
        if self.handoff.compare_exchange(request, request | u64::from(GRANTED), AcqRel, Relaxed).is_err() {
            return false;
        }
        // The lock word stays CONTENDED: the requester owns the lock from here on, and
        // may free the mutex as soon as it runs. Only the address is used now.
        let _ = sys::futex_wake(word, 1, false);
        crate::observe::handed_off(addr, request as u32 as i32);
        true
    }

    /// Waits for the lock after `try_acquire` failed: spins first if the strategy says
    /// so, then sleeps. `Err` is `ETIMEDOUT` once `deadline` passes.
    pub fn acquire_contended(&self, deadline: Option<&Deadline>) -> Result<Acquired, c_int> {
        let acquired = self.spin_then_sleep(deadline);
        if acquired.is_ok() && crate::config::row().learns {
            crate::auto::acquired(self); // `auto`: the class counts it (auto/mod.rs)
        }
        acquired
    }

    #[inline(always)]
    fn spin_then_sleep(&self, deadline: Option<&Deadline>) -> Result<Acquired, c_int> {
        let spins = match crate::spin::spin(self) {
            Ok(spins) => return Ok(Acquired { how: How::Spinning, spins, sleeps: 0 }),
            Err(spins) => spins,
        };
        let fair = self.counts_sleepers();
        if fair {
            self.sleepers.fetch_add(1, Relaxed);
        }
        let slept = self.sleep(deadline, false);
        if fair {
            self.sleepers.fetch_sub(1, Relaxed);
        }
        let (how, sleeps) = slept?;
        Ok(Acquired { how, spins, sleeps })
    }

    /// Under SPINMUTEX_FAIR the mutex counts its sleepers; shared mutexes keep no count:
    /// a process killed in its sleep would leave its share behind in every other
    /// process for good.
    fn counts_sleepers(&self) -> bool {
        crate::config::fair() && !self.shared()
    }

    /// Sleeps on the futex until the lock is ours. After losing the lock on waking
    /// `handoff_after` times, or after sleeping `handoff_wait` in all, asks for a handoff.
    /// `woken`: a release woke the caller and it has not marked the word CONTENDED since.
    #[inline(never)]
    fn sleep(&self, deadline: Option<&Deadline>, woken: bool) -> Result<(How, u32), c_int> {
        let shared = self.shared();
        let handoff_after = self.handoff_after();
        let handoff_wait = crate::config::handoff_wait_ns();
        let started = if handoff_after > 0 && handoff_wait > 0 { sys::now_ns() } else { 0 };
        let mut sleeps = 0;
        // Until a release has woken it, this thread is a newcomer like any other: it may
        // take a free lock as LOCKED, so that its own release needs no futex wake (glibc's
        // lll_lock tries the same before waiting). A woken thread must take it as
        // CONTENDED, since it cannot know whether others still sleep.
        let mut woken = woken;
        loop {
            let word = self.lock.load(Relaxed);
            if !woken
                && word == UNLOCKED
                && self.lock.compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed).is_ok()
            {
                return Ok((How::Sleeping, sleeps));
            }
            // A word that already reads CONTENDED needs no write before sleeping (glibc
            // skips it too): the exchange would only take the cache line from the owner.
            if word != CONTENDED && self.lock.swap(CONTENDED, Acquire) == UNLOCKED {
                return Ok((How::Sleeping, sleeps));
            }
            let starving = handoff_after > 0
                && sleeps > 0
                && (sleeps >= handoff_after || (started != 0 && sys::now_ns() - started >= handoff_wait));
            if starving {
                match self.wait_for_handoff(deadline, &mut sleeps) {
                    Handoff::Taken(how) => return Ok((how, sleeps)),
                    Handoff::TimedOut => {
                        crate::observe::timed_out(self);
                        return Err(libc::ETIMEDOUT);
                    }
                    // It may have consumed a wake-up meant for a sleeper: from now on it
                    // takes the lock as CONTENDED, which never loses one.
                    Handoff::Declined => woken = true,
                }
            }
            crate::observe::sleeping(self);
            let r = sys::futex_wait(&self.lock, CONTENDED, deadline, shared);
            if r == libc::ETIMEDOUT {
                crate::observe::timed_out(self);
                return Err(libc::ETIMEDOUT);
            }
            // EAGAIN: the word changed before the thread slept, so no release woke it.
            // Anything else (a wake, a signal) counts as woken.
            woken |= r != libc::EAGAIN;
            sleeps += 1;
        }
    }

    /// Lost wake-ups after which a sleeper on this mutex asks for a handoff (0: never).
    /// Never on a process-shared mutex. Handoffs keep spinners from starving sleepers:
    /// under `auto`, a thread that goes to sleep in sleep mode waits as under `futex`,
    /// without them (auto/mod.rs).
    fn handoff_after(&self) -> u32 {
        let may_ask = !self.shared() && (!crate::config::row().learns || crate::auto::hands_off(self));
        if may_ask {
            crate::spin::handoff_after()
        } else {
            0
        }
    }

    fn my_request() -> u64 {
        (u64::from(crate::thread::pid() as u32) << 32) | u64::from(crate::thread::tid() as u32)
    }

    /// Registers the caller as the one sleeper to hand the lock to. One request at a time;
    /// a stale one from before a `fork` is replaced.
    fn request_handoff(&self) -> bool {
        let mine = Self::my_request();
        let current = self.handoff.load(Relaxed);
        let free = current == 0 || (current >> 32) as i32 != crate::thread::pid();
        free && self.handoff.compare_exchange(current, mine, Relaxed, Relaxed).is_ok()
    }

    /// Asks for the lock to be handed over and waits for it, with every signal blocked
    /// (module header: a granted lock must never wait for a thread that cannot take it).
    /// The program's signal mask is back in force when this returns, and a signal held
    /// back meanwhile runs its handler then, with no lock in limbo.
    #[inline(never)]
    fn wait_for_handoff(&self, deadline: Option<&Deadline>, sleeps: &mut u32) -> Handoff {
        let program_mask = sys::block_all_signals();
        let outcome = if self.request_handoff() {
            crate::observe::handoff_requested(self);
            self.await_grant(deadline, sleeps, program_mask)
        } else {
            Handoff::Declined // another sleeper's request is pending
        };
        sys::set_signal_mask(program_mask);
        outcome
    }

    /// Sleeps on the lock word and the handoff word at once, so both a grant and an
    /// ordinary wake-up (from glibc's own unlock, for one) reach it, waking at least
    /// every [`SIGNAL_LATENCY_NS`] to let through signals the program would take.
    fn await_grant(
        &self,
        deadline: Option<&Deadline>,
        sleeps: &mut u32,
        program_mask: sys::SigSet,
    ) -> Handoff {
        let mine = Self::my_request();
        let granted = mine | u64::from(GRANTED);
        loop {
            let request = self.handoff.load(Acquire);
            if request != mine && request != granted {
                // Withdrawn by someone else (only stale requests are): wait as before.
                return Handoff::Declined;
            }
            // Signals first: one that came while the thread waited must run without the
            // lock, as under glibc, even when the lock came in the same instant (a
            // handler locking this mutex, or one its owner needs, would wait for ever).
            if sys::pending_signals() & !program_mask != 0 {
                return self.withdraw(mine, true);
            }
            if request == granted {
                self.handoff.store(0, Relaxed);
                return Handoff::Taken(How::Handoff);
            }
            if self.lock.swap(CONTENDED, Acquire) == UNLOCKED {
                // The owner released instead of granting, so no grant can follow: only an
                // owner grants, and we are the owner now.
                self.handoff.store(0, Relaxed);
                return Handoff::Taken(How::Sleeping);
            }
            crate::observe::sleeping(self);
            let (until, users) = Deadline::sooner_of(deadline, SIGNAL_LATENCY_NS);
            let r = sys::futex_wait_either(
                self.lock.as_ptr(),
                CONTENDED,
                self.handoff.as_ptr().cast(),
                mine as u32 as i32,
                Some(&until),
            );
            match r {
                libc::ETIMEDOUT if users => {
                    return match self.withdraw(mine, false) {
                        Handoff::Declined => Handoff::TimedOut,
                        taken => taken, // granted just as time ran out: keep it
                    };
                }
                libc::ENOSYS => {
                    // No futex_waitv (kernel < 5.16): handoffs are off from now on.
                    crate::spin::disable_handoff();
                    return self.withdraw(mine, false);
                }
                // Woken, or the slice ended: look again.
                _ => {}
            }
            *sleeps += 1;
        }
    }

    /// Takes the caller's request back. If it was granted in the meantime the lock is
    /// the caller's: kept, or with `pass_on` (a signal must run first, and its handler
    /// may need the lock) released again at once.
    fn withdraw(&self, mine: u64, pass_on: bool) -> Handoff {
        if self.handoff.compare_exchange(mine, 0, Relaxed, Relaxed).is_ok() {
            return Handoff::Declined;
        }
        self.handoff.store(0, Relaxed);
        if !pass_on {
            return Handoff::Taken(How::Handoff);
        }
        self.release();
        Handoff::Declined
    }
}

impl crate::spin::SpinTarget for RawMutex {
    #[inline]
    fn looks_free(&self) -> bool {
        self.lock.load(Relaxed) == UNLOCKED
    }

    #[inline]
    fn try_take(&self) -> bool {
        self.try_acquire()
    }

    #[inline]
    fn owner_cpu(&self) -> Option<u32> {
        u32::from(self.owner_cpu.load(Relaxed)).checked_sub(1)
    }

    /// A handoff pending (the lock will not come free), or, under SPINMUTEX_FAIR, threads
    /// asleep on it (spinning would overtake them).
    fn reason_to_stop(&self) -> Option<GiveUp> {
        if self.handoff.load(Relaxed) != 0 {
            return Some(GiveUp::HandoffPending);
        }
        (self.counts_sleepers() && self.sleepers.load(Relaxed) != 0).then_some(GiveUp::Sleepers)
    }

    /// Under `auto`, `__spins` holds the class too: the estimate is its low bits.
    fn estimate(&self) -> u32 {
        let spins = self.spins.load(Relaxed);
        if crate::config::row().learns {
            return u32::from(spins as u16 & AUTO_ESTIMATE_MASK);
        }
        spins.max(0) as u32
    }

    fn set_estimate(&self, estimate: u32) {
        let spins = if crate::config::row().learns {
            let now = self.spins.load(Relaxed) as u16;
            (now & !AUTO_ESTIMATE_MASK | estimate.min(u32::from(AUTO_ESTIMATE_MASK)) as u16) as i16
        } else {
            estimate.min(i16::MAX as u32) as i16
        };
        self.spins.store(spins, Relaxed);
    }

    fn budget(&self) -> u32 {
        if crate::config::row().learns {
            return crate::auto::budget(self);
        }
        crate::spin::budget_for(self.estimate())
    }

    fn learn(&self, outcome: Result<u32, u32>) {
        if crate::config::row().learns {
            return crate::auto::learn(self, outcome);
        }
        self.set_estimate(crate::spin::next_estimate(self.estimate(), outcome.ok()));
    }

    fn spinners(&self) -> &AtomicU32 {
        &self.spinners
    }

    fn gave_up(&self, spun: u32, budget: u32, why: GiveUp) {
        crate::observe::gave_up_spinning(self, spun, budget, why);
    }
}

/// How a handoff wait ended.
enum Handoff {
    /// The caller owns the lock.
    Taken(How),
    /// The caller's deadline passed; it owns nothing.
    TimedOut,
    /// No handoff this time (another request is pending, a signal came, or the kernel
    /// cannot); the caller owns nothing and waits on as an ordinary sleeper.
    Declined,
}
