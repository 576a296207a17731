//! The `kernel` strategy: the kernel's own spinning futex, Linux's priority-inheritance
//! futex, as glibc uses it for its priority-inheritance mutexes.
//!
//! # The protocol
//!
//! The lock word holds the owner's thread id, 0 when free; the kernel sets
//! `FUTEX_WAITERS` (bit 31) while threads wait. Lock: compare-and-swap 0 → tid; if the
//! word is taken, `FUTEX_LOCK_PI2`: the kernel queues the caller, spins while the owner
//! runs on a CPU (Linux 5.15 and later) and puts it to sleep as soon as the owner does
//! not, lends the owner the caller's priority meanwhile, and returns with the caller as
//! the owner. Unlock: compare-and-swap tid → 0 unless `FUTEX_WAITERS` is set; then
//! `FUTEX_UNLOCK_PI` hands the lock to the first waiter.
//!
//! # Converting a mutex, and why no thread ever uses the old protocol on one
//!
//! A converted mutex has glibc's priority-inherit bit in its kind (and our
//! `kind::CONVERTED`, which glibc ignores). glibc's own code that takes an application's
//! mutex (a condition-variable wait releasing and retaking it, and the cleanup of a
//! wait cancelled) reads the kind first and then speaks this same protocol; the
//! condition variables keep working because of that. The bits are set:
//!
//! 1. by `pthread_mutex_init` or `mtx_init` under this strategy, before they return: no
//!    other thread can know the mutex yet;
//! 2. for a mutex that was never initialised through those (a static initialiser), by
//!    the first lock call that finds it unconverted and free: one compare-and-swap on
//!    the kind, after which that call, like every later one, takes the word with this
//!    protocol.
//!
//! Every call of this library reads the kind first and uses this protocol exactly when
//! the bit is set. glibc's internal code touches an application's mutex only while the
//! application holds it, which it took through one of those calls. So the only mutexes
//! that can be found unconverted yet locked are ones locked with the old protocol
//! before this strategy was in force (from `.preinit_array`, before the environment
//! can be read): such a mutex is never converted while it is locked. A lock call waits
//! for it to come free without writing to it (polling, since its holder will not wake a
//! waiter it does not know of), and its holder's unlock uses the old protocol, which is
//! the one it was locked with.
//!
//! **Process-shared mutexes are never converted.** Another process may use the same
//! mutex without this library (or with another strategy). glibc there reads the kind,
//! then swaps the word; a conversion here reads the word, then swaps the kind. Run at
//! the same moment, glibc's `1` lands in a converted word (where the kernel reads it as
//! thread 1), whichever order the two processes choose. So a shared mutex keeps glibc's
//! word, served as `futex` serves it (sleep at the first contention).
//!
//! # glibc's rules for a normal mutex, on a word that names its owner
//!
//! glibc lets any thread unlock a normal (or adaptive) mutex, lets an unlock of a free
//! one succeed, and lets the owner lock it again to wait until another thread unlocks
//! it (a mutex used as a binary semaphore: glibc's own `tst-cond14` does this). Here the
//! word names one owner, X, and the kernel hands the lock on for X alone
//! (`FUTEX_UNLOCK_PI` refuses anyone else). A converted mutex keeps glibc's rules so:
//!
//! * **Unlock by a thread the word does not name.** A free word: nothing to do (glibc
//!   does nothing either). A word naming X with nobody queued in the kernel (no
//!   `FUTEX_WAITERS`): swapped to 0, as glibc would release it. Otherwise only X could
//!   hand it to the kernel's waiters, so the unlock records a *stray release* of X's
//!   hold: the stray word (beside the lock word, see `RawMutex::pi_side`) reads X.
//! * **A stray release is used up** by the first of: X locking the mutex again (the
//!   word still names X, and the release X waited for has come: it owns the lock,
//!   even where threads are queued in the kernel, which glibc's unlock would wake
//!   first: handing the lock to them through the kernel instead raced take-overs and
//!   lost releases, and the program hung, 1 run in 60); X unlocking it (its release
//!   and the stray one are one release, which the kernel hands to its first waiter);
//!   X exiting (the kernel hands the lock to its first waiter); or another thread
//!   *taking over* the word. The stray word counts only while it names the word's
//!   owner: once the lock has passed on it is stale, the next owner that got the lock
//!   from the kernel clears it, and the next stray release replaces it.
//! * **Taking over** is possible only while no thread is queued in the kernel: one
//!   taker at a time marks the stray word `TAKING_OVER`, fences the word (X with
//!   `FUTEX_OWNER_DIED`, and `FUTEX_WAITERS` cleared: X's own unlock can no longer
//!   release it in user space, and a thread that queues in the kernel now sets
//!   `FUTEX_WAITERS` again, which the taker sees), asks the kernel whether anyone is
//!   queued (a plain `FUTEX_WAKE` fails with `EINVAL` where priority-inheritance waiters
//!   are queued), and if nobody is, swaps the fenced word to its own id. If somebody
//!   is, or comes, it puts `FUTEX_WAITERS` back, and the stray release stays pending.
//! * **Waits in the kernel are bounded** to `SLICE_NS`, after which the waiter looks
//!   again: so after a stray release this library's waiters leave the kernel within a
//!   slice, stop queueing there, and one of them takes over.
//! * **The owner locking again** (the word names the caller; the kernel would answer
//!   `EDEADLK`) waits for a stray release of its hold, or for another thread to free the
//!   word, as glibc waits for that unlock.
//! * **An owner gone** (`FUTEX_LOCK_PI` answers `ESRCH`: it exited, and nobody waited
//!   then; or `EPERM`: in a child after `fork`, the word names a thread of the parent):
//!   glibc's normal mutex stays locked until some thread unlocks it, and so this one
//!   waits for that unlock, or for its deadline. Where threads did wait when the owner
//!   exited, the kernel gives the word to the first of them, marked `FUTEX_OWNER_DIED`:
//!   that thread keeps the word in the dead owner's place and waits on as the owner
//!   locking again does. A stray release of the dead owner's hold is its release: one
//!   already pending frees the hold, and a take-over that was running when the owner
//!   died hands it to that thread as it ends (the thread waits for that before it
//!   clears the mark, by which the take-over knows the word was inherited; dropping the
//!   release there left the heir waiting for ever, 1 run in 150 of a mutex used as a
//!   semaphore whose takers exit holding it).
//!
//! Threads waiting for one of these events sleep on the *events* word, which every
//! release by a non-owner and every end of a take-over increments before it wakes them,
//! so that no such event can slip between a waiter's look and its sleep.
//!
//! # What cannot be served the same way
//!
//! glibc's condition variables retake a converted mutex with `FUTEX_LOCK_PI` and no time
//! bound. If a thread releases a lock it does not own while such a condition-variable
//! waiter is queued in the kernel, nobody can take over: that waiter, and the threads
//! behind it, get the lock when X next locks or unlocks it, or exits. glibc's normal
//! mutex would let them in at once. The library says so on standard error the first
//! time a take-over waits that long.
//!
//! For the same reason, a thread that exits holding a converted mutex while a
//! condition-variable waiter is queued in the kernel for it makes glibc's condition
//! variable abort (it asserts that the kernel handed it no `FUTEX_OWNER_DIED`), as it
//! does with glibc's own priority-inheritance mutexes; glibc's normal mutex would keep
//! that waiter waiting until another thread unlocks the mutex.
//!
//! A program's own priority-inheritance mutexes (not converted) keep glibc's rules for
//! those: only the owner may unlock (`EPERM` otherwise), and an owner that locks a
//! normal one again waits for ever.
//!
//! A mutex held across `fork` names, in the child, a thread that no longer exists: the
//! child's only thread, which held it in the parent, may still unlock a converted one
//! (handled below), as glibc's normal mutex lets it, but not one of the program's own
//! (`EPERM`, as glibc answers); the mutexes other threads held stay locked, as under
//! glibc. The kernel
//! refuses the child's other threads that come for such a mutex (`EPERM`: its owner is
//! a thread of another process), so they wait for an event, which the release counts.
//! And glibc's condition variables release it with glibc's own unlock, which refuses a
//! word that does not name the caller's id: so before such a wait the word is given the
//! thread's id in the child ([`adopt_hold_across_fork`]).

use core::sync::atomic::AtomicU32;
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use libc::c_int;

use crate::mutex::{kind, Acquired, How, RawMutex};
use crate::sys::{self, Deadline};

/// Set by the kernel in the word while threads wait.
const FUTEX_WAITERS: u32 = 0x8000_0000;
/// Set by the kernel when the owner died holding a robust mutex; here, the take-over's
/// fence (see the header).
const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
const FUTEX_TID_MASK: u32 = 0x3fff_ffff;

/// In the stray word: a thread is taking the word over.
const TAKING_OVER: u32 = 0x8000_0000;

/// The longest one wait in the kernel lasts before the waiter looks again.
const SLICE_NS: u64 = 20_000_000;

/// The protocol a mutex speaks under this strategy.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Converted (or created as priority-inherit by the program).
    PriorityInheritance,
    /// glibc's 0/1/2 word: process-shared, or locked before it could be converted.
    Word,
}

/// Whether the kernel spins in `FUTEX_LOCK_PI` (5.15 and later); said once at load.
pub fn init() {
    let (major, minor) = sys::kernel_version();
    if (major, minor) < (5, 15) {
        crate::config::note(format_args!(
            "SPINMUTEX_STRATEGY=kernel: Linux {major}.{minor} does not spin in FUTEX_LOCK_PI (5.15 and later do); \
             waiters sleep at once, with priority inheritance"
        ));
    }
}

/// The kind bits of a converted mutex.
const CONVERTED_BITS: i32 = kind::PRIO_INHERIT | kind::CONVERTED;

/// Gives a freshly initialised, process-private mutex the converted bits (step 1 of the
/// header).
pub fn convert_new(m: &RawMutex) {
    let k = m.kind();
    if k & !kind::SERVED == 0 && k & kind::PSHARED == 0 {
        m.set_kind(k | CONVERTED_BITS);
    }
}

/// The protocol of `m` now, converting it if it is free (step 2 of the header).
/// `None`: it is locked with the old protocol; wait for it with [`wait_unconverted`].
pub fn protocol(m: &RawMutex) -> Option<Protocol> {
    loop {
        let k = m.kind();
        if k & kind::PRIO_INHERIT != 0 {
            return Some(Protocol::PriorityInheritance);
        }
        if k & kind::PSHARED != 0 {
            return Some(Protocol::Word);
        }
        if m.word().load(Acquire) != 0 {
            return None;
        }
        if m.convert_kind(k, k | CONVERTED_BITS) {
            return Some(Protocol::PriorityInheritance);
        }
        // Someone else changed the kind (converted it, most likely): look again.
    }
}

/// Waits, without writing to the word, until an unconverted mutex reads free.
pub fn wait_unconverted(m: &RawMutex, deadline: Option<&Deadline>) -> Result<(), c_int> {
    loop {
        let word = m.word().load(Acquire);
        if word == 0 || m.kind() & kind::PRIO_INHERIT != 0 {
            return Ok(());
        }
        let (until, users) = Deadline::sooner_of(deadline, 1_000_000);
        if sys::futex_wait(m.word(), word, Some(&until), m.shared()) == libc::ETIMEDOUT && users {
            return Err(libc::ETIMEDOUT);
        }
    }
}

fn converted(m: &RawMutex) -> bool {
    m.kind() & kind::CONVERTED != 0
}

/// A priority-inheritance mutex the program made so (not converted): glibc's rules for
/// those apply to it.
pub fn programs_own(m: &RawMutex) -> bool {
    m.kind() & (kind::PRIO_INHERIT | kind::CONVERTED) == kind::PRIO_INHERIT
}

fn owner_of(word: i32) -> u32 {
    word as u32 & FUTEX_TID_MASK
}

/// One attempt: 0 → tid.
#[inline]
pub fn try_acquire(m: &RawMutex, tid: i32) -> bool {
    m.word().compare_exchange(0, tid, Acquire, Relaxed).is_ok()
}

/// `trylock`'s attempt: a free word, or a converted mutex's stray release (its own hold
/// given back, or a take-over that needs no waiting).
pub fn try_lock(m: &RawMutex, tid: i32) -> bool {
    try_acquire(m, tid) || (converted(m) && claim_stray(m, tid))
}

/// Waits in the kernel until the caller owns `m`, or `deadline` passes.
#[cold]
pub fn acquire_contended(m: &RawMutex, tid: i32, deadline: Option<&Deadline>) -> Result<Acquired, c_int> {
    if !converted(m) {
        return acquire_as_glibc_pi(m, tid, deadline);
    }
    let mut sleeps = 0;
    // Since when the stray release of which owner has been refused a take-over.
    let mut refused: Option<(u32, u64)> = None;
    loop {
        let events = events(m).load(Acquire);
        if try_acquire(m, tid) || claim_stray(m, tid) {
            return Ok(Acquired { how: How::Kernel, spins: 0, sleeps });
        }
        let owner = owner_of(m.word().load(Relaxed));
        let stray = stray(m).load(Acquire);
        // (A word freed since the attempt above names no owner: the kernel takes it for
        // the caller below. Read as a stray release of "thread 0", it once slept a whole
        // slice, every thread waiting with the lock free.)
        if owner == tid as u32 || (owner != 0 && stray & FUTEX_TID_MASK == owner) {
            // Our own hold, or a stray release that cannot be taken over yet: wait for
            // a non-owner's unlock or the end of a take-over (the header).
            if owner != tid as u32 {
                // Timed per stray release: several in one wait, each taken over in
                // time, are not one refused for long.
                let since = match refused {
                    Some((refused_owner, since)) if refused_owner == owner => since,
                    _ => refused.insert((owner, sys::now_ns())).1,
                };
                note_if_refused_long(m, since);
            } else {
                refused = None;
            }
            sleeps += 1;
            wait_for_event(m, events, deadline)?;
            continue;
        }
        refused = None;
        crate::observe::sleeping(m);
        sleeps += 1;
        let (slice, is_deadline) = Deadline::sooner_of(deadline, SLICE_NS);
        match sys::futex_lock_pi(m.word(), Some(&slice), false) {
            // Still held, as glibc's word would be, unless its release came already.
            0 if inherit_from_the_dead(m) == Some(Held) => {}
            0 => {
                forget_stale_stray(m, tid);
                return Ok(Acquired { how: How::Kernel, spins: 0, sleeps });
            }
            libc::ETIMEDOUT if is_deadline => {
                crate::observe::timed_out(m);
                return Err(libc::ETIMEDOUT);
            }
            // A slice ended, the owner was exiting, a signal came, or the word named us
            // by the time the kernel looked: look again.
            libc::ETIMEDOUT | libc::EAGAIN | libc::EINTR | libc::EDEADLK => {}
            // The owner is gone, or a thread of the parent (the header): wait for an
            // unlock, as glibc does.
            _ => wait_for_event(m, events, deadline)?,
        }
    }
}

/// A program's own priority-inheritance mutex: glibc's rules for those.
fn acquire_as_glibc_pi(m: &RawMutex, tid: i32, deadline: Option<&Deadline>) -> Result<Acquired, c_int> {
    loop {
        if try_acquire(m, tid) {
            return Ok(Acquired { how: How::Kernel, spins: 0, sleeps: 0 });
        }
        crate::observe::sleeping(m);
        match sys::futex_lock_pi(m.word(), deadline, m.shared()) {
            0 => return Ok(Acquired { how: How::Kernel, spins: 0, sleeps: 1 }),
            libc::ETIMEDOUT => {
                crate::observe::timed_out(m);
                return Err(libc::ETIMEDOUT);
            }
            // The kernel found the caller to own the lock already (a normal mutex locked
            // twice), or its owner gone: glibc waits for ever, or until the deadline.
            libc::EDEADLK | libc::ESRCH => return wait_for_ever(deadline),
            // The owner was exiting, or a signal came: ask again.
            libc::EAGAIN | libc::EINTR => {}
            e => return Err(e),
        }
    }
}

/// What glibc does for a self-deadlock on a normal priority-inheritance mutex.
fn wait_for_ever(deadline: Option<&Deadline>) -> Result<Acquired, c_int> {
    let never = core::sync::atomic::AtomicI32::new(0);
    loop {
        if sys::futex_wait(&never, 0, deadline, false) == libc::ETIMEDOUT {
            return Err(libc::ETIMEDOUT);
        }
    }
}

/// The stray word of a converted mutex: 0, or the owner whose hold another thread
/// released, with `TAKING_OVER` while a thread takes the word over.
fn stray(m: &RawMutex) -> &AtomicU32 {
    m.pi_side().0
}

/// Counts releases by non-owners and ends of take-overs; waiters for them sleep on it.
fn events(m: &RawMutex) -> &AtomicU32 {
    m.pi_side().1
}

/// Sleeps until the events word moves on from `seen`, for a slice at most; `ETIMEDOUT`
/// once the caller's deadline has passed.
fn wait_for_event(m: &RawMutex, seen: u32, deadline: Option<&Deadline>) -> Result<(), c_int> {
    let (slice, is_deadline) = Deadline::sooner_of(deadline, SLICE_NS);
    let r = sys::futex_wait_bitset(events(m).as_ptr(), seen, u32::MAX, Some(&slice), false);
    if r == libc::ETIMEDOUT && is_deadline {
        crate::observe::timed_out(m);
        return Err(libc::ETIMEDOUT);
    }
    Ok(())
}

/// Announces an event to the threads in [`wait_for_event`]. Called before the write
/// that makes the event visible when that write may release the mutex (after it, the
/// memory may be gone); waking by address afterwards is safe.
fn count_event(m: &RawMutex) {
    events(m).fetch_add(1, Release);
}

fn wake_event_waiters(events: *const u32) {
    sys::futex_wake_bitset(events, i32::MAX, u32::MAX, false);
}

/// Uses up a stray release of the word's owner's hold: the caller's own hold given back
/// to it, or a take-over. False if there is none, or it cannot be taken now.
fn claim_stray(m: &RawMutex, tid: i32) -> bool {
    let x = stray(m).load(Acquire);
    if x == 0 || x & TAKING_OVER != 0 || x != owner_of(m.word().load(Relaxed)) {
        return false;
    }
    if x == tid as u32 {
        // Our own hold, released by another thread while we waited to lock again: the
        // word already names us.
        return stray(m).compare_exchange(x, 0, Acquire, Relaxed).is_ok();
    }
    take_over(m, tid, x)
}

/// Moves the word from `x`, whose hold another thread released, to the caller, if no
/// thread is queued in the kernel (the header's "Taking over").
fn take_over(m: &RawMutex, tid: i32, x: u32) -> bool {
    // No signal handler may run (and leave with `siglongjmp`) while the word is fenced
    // and the stray word says a take-over runs: both would stay so for good.
    let mask = sys::block_all_signals();
    let taken = take_over_unsignalled(m, tid, x);
    sys::set_signal_mask(mask);
    taken
}

fn take_over_unsignalled(m: &RawMutex, tid: i32, x: u32) -> bool {
    if stray(m).compare_exchange(x, x | TAKING_OVER, Acquire, Relaxed).is_err() {
        return false;
    }
    let word = m.word();
    let fenced = (x | FUTEX_OWNER_DIED) as i32;
    let mut current = word.load(Relaxed);
    let taken = loop {
        if owner_of(current) != x {
            break false; // x released it through the kernel meanwhile
        }
        if current != fenced {
            if let Err(now) = word.compare_exchange(current, fenced, Relaxed, Relaxed) {
                current = now;
                continue;
            }
        }
        if sys::futex_wake(word.as_ptr(), 1, false) == Err(libc::EINVAL) {
            break false; // threads are queued in the kernel: only x can let them in
        }
        match word.compare_exchange(fenced, tid, Acquire, Relaxed) {
            Ok(_) => break true,
            Err(_) => break false, // one queued just now, or x released it
        }
    };
    if !taken {
        unfence(m, x);
    }
    // Used up if taken, or if x released the lock through the kernel meanwhile (its
    // release and the stray one were one); still pending if the word names x. If x
    // exited instead, the kernel gave its hold to the first waiter, marked
    // `FUTEX_OWNER_DIED` (that heir waits for this take-over to end before it clears
    // the mark): the release frees the heir's hold now.
    let pending = if taken { 0 } else { release_now_for(word.load(Relaxed), x) };
    count_event(m);
    stray(m).store(pending, Release);
    // The word may have passed on between the look above and the store: by its owner's
    // unlock through the kernel (the release is used up; left pending, it would name
    // an owner the word no longer names), or by its death (the release frees the
    // heir's hold, as above). After this look, an owner's unlock finds its own pending
    // release and uses it up, and an heir waits for no take-over.
    if pending != 0 {
        let now = release_now_for(word.load(Relaxed), pending);
        if now != pending {
            let _ = stray(m).compare_exchange(pending, now, Relaxed, Relaxed);
        }
    }
    wake_event_waiters(events(m).as_ptr());
    taken
}

/// Whose hold a pending release of `x`'s hold frees, the word reading `word`: `x`'s
/// while the word names `x`; the heir's where `x` died holding it (the kernel gave the
/// word to its first waiter, marked `FUTEX_OWNER_DIED`); nobody's (0) where `x`
/// released it through the kernel (its release and the stray one were one).
fn release_now_for(word: i32, x: u32) -> u32 {
    match owner_of(word) {
        owner if owner == x => x,
        heir if word as u32 & FUTEX_OWNER_DIED != 0 => heir,
        _ => 0,
    }
}

/// Gives a fenced word back its `FUTEX_WAITERS` and drops the fence, unless it has
/// passed on: the kernel's waiters are then woken by x's unlock again.
fn unfence(m: &RawMutex, x: u32) {
    let word = m.word();
    let mut current = word.load(Relaxed);
    while owner_of(current) == x && current as u32 & FUTEX_OWNER_DIED != 0 {
        let restored = ((current as u32 & !FUTEX_OWNER_DIED) | FUTEX_WAITERS) as i32;
        match word.compare_exchange(current, restored, Relaxed, Relaxed) {
            Ok(_) => return,
            Err(now) => current = now,
        }
    }
}

/// What the caller got from a dead owner ([`inherit_from_the_dead`]).
#[derive(PartialEq, Eq)]
enum Inherited {
    /// The hold: the caller waits for another thread's unlock.
    Held,
    /// The hold and a release of it: the caller owns the lock.
    Released,
}
use Inherited::{Held, Released};

/// After the kernel gave the caller the word: `None` unless its owner had exited
/// holding it. The kernel then passes the word to the first waiter with
/// `FUTEX_OWNER_DIED` set; glibc's normal mutex would stay locked until another thread
/// unlocks it. So the caller keeps the word in the dead owner's place, and, unless a
/// release of the dead owner's hold is pending (a stray word names the word's owner or
/// is cleared when the word passes on, and this word passed straight from the dead
/// owner to the caller), waits as an owner locking again does. A take-over of that
/// release may be running: it hands the release to the caller as it ends, by the mark
/// it sees, so the caller waits for it and clears the mark only once it has decided.
fn inherit_from_the_dead(m: &RawMutex) -> Option<Inherited> {
    let word = m.word();
    if word.load(Relaxed) as u32 & FUTEX_OWNER_DIED == 0 {
        return None;
    }
    let inherited = loop {
        let x = stray(m).load(Acquire);
        if x & TAKING_OVER != 0 {
            // SAFETY: sched_yield has no preconditions; a take-over ends within a few
            // system calls, with signals blocked.
            unsafe { libc::sched_yield() };
        } else if x == 0 {
            // No take-over can start now: it needs a pending release.
            break Held;
        } else if stray(m).compare_exchange(x, 0, Acquire, Relaxed).is_ok() {
            break Released;
        }
    };
    let mut current = word.load(Relaxed);
    while current as u32 & FUTEX_OWNER_DIED != 0 {
        match word.compare_exchange(current, (current as u32 & !FUTEX_OWNER_DIED) as i32, Relaxed, Relaxed) {
            Ok(_) => break,
            Err(now) => current = now,
        }
    }
    Some(inherited)
}

/// After the kernel gave the caller the lock: a stray word naming an earlier owner no
/// longer means anything.
fn forget_stale_stray(m: &RawMutex, tid: i32) {
    let x = stray(m).load(Relaxed);
    if x != 0 && x & TAKING_OVER == 0 && x != tid as u32 {
        let _ = stray(m).compare_exchange(x, 0, Relaxed, Relaxed);
    }
}

/// The first time a take-over has waited four slices for threads queued in the kernel
/// that do not leave (glibc's condition variables retaking the mutex), says what it
/// waits for.
fn note_if_refused_long(m: &RawMutex, since: u64) {
    static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if sys::now_ns().saturating_sub(since) < 4 * SLICE_NS || SAID.swap(true, Relaxed) {
        return;
    }
    let owner = owner_of(m.word().load(Relaxed));
    crate::config::note(format_args!(
        "SPINMUTEX_STRATEGY=kernel: mutex {:#x} was unlocked by a thread that does not own it while a \
         condition-variable waiter waited for it in the kernel; it passes on when thread {owner} next locks \
         or unlocks it, or exits (glibc would pass it on at once)",
        m.addr()
    ));
}

/// Whether the word names `tid` as its owner; in a forked child, also the id its
/// thread had in the parent (see `release_through_kernel`).
pub fn owned_by(m: &RawMutex, tid: i32) -> bool {
    let owner = owner_of(m.word().load(Relaxed));
    owner == tid as u32 || held_across_fork(m, owner)
}

/// An unlock by a thread the word does not name. A program's own priority-inheritance
/// mutex refuses it (`EPERM`), as glibc does; a converted one follows glibc's rules for
/// a normal mutex (the header).
pub fn release_not_owned(m: &RawMutex) -> c_int {
    if !converted(m) {
        return libc::EPERM;
    }
    m.clear_owner();
    let word = m.word();
    let events = events(m).as_ptr();
    let mut current = word.load(Relaxed);
    loop {
        if current == 0 {
            return 0;
        }
        let x = owner_of(current);
        if current as u32 & (FUTEX_WAITERS | FUTEX_OWNER_DIED) == 0 {
            // Nobody in the kernel: release the word as glibc would.
            count_event(m);
            match word.compare_exchange(current, 0, Release, Relaxed) {
                Ok(_) => break,
                Err(now) => current = now,
            }
        } else {
            // Only x can let the kernel's waiters in: record a stray release of its
            // hold. One already pending for x (or being taken over) is the same
            // release. One left naming an earlier owner means nothing now and gives
            // way; a take-over of an earlier owner's release ends within a few system
            // calls (signals blocked), and is waited out. (Dropping this release
            // there left x's waiters, and x, waiting for ever.)
            let recorded = match stray(m).compare_exchange(0, x, Release, Relaxed) {
                Ok(_) => true,
                Err(old) if old & FUTEX_TID_MASK == x => true,
                Err(old) if old & TAKING_OVER != 0 => {
                    // SAFETY: sched_yield has no preconditions.
                    unsafe { libc::sched_yield() };
                    false
                }
                Err(old) => stray(m).compare_exchange(old, x, Release, Relaxed).is_ok(),
            };
            if !recorded {
                current = word.load(Relaxed);
                continue;
            }
            count_event(m);
            break;
        }
    }
    wake_event_waiters(events);
    0
}

/// Before a condition-variable wait on `m` in a forked child: if the caller held `m`
/// when it forked, the word still names the id it had in the parent, and glibc's unlock
/// inside the wait would refuse it (`EPERM`, and the wait returns at once with the
/// mutex still held). The word takes the caller's id now, its other bits kept.
pub fn adopt_hold_across_fork(m: &RawMutex) {
    let word = m.word();
    let current = word.load(Relaxed);
    if held_across_fork(m, owner_of(current)) {
        let adopted = (current as u32 & !FUTEX_TID_MASK) | crate::thread::tid() as u32;
        let _ = word.compare_exchange(current, adopted as i32, Relaxed, Relaxed);
    }
}

/// Whether `owner`, read from `m`'s word, is the id the calling thread had in the
/// parent: a hold across `fork` by the thread that forked, of a converted mutex (never
/// a process-shared one, whose word may name a thread of another process for good
/// reason). A program's own priority-inheritance mutex stays the parent's: glibc
/// refuses its unlock in the child (`EPERM`), since the word names another thread.
fn held_across_fork(m: &RawMutex, owner: u32) -> bool {
    owner != 0 && owner == crate::thread::tid_before_fork() as u32 && !m.shared() && converted(m)
}

/// Releases `m`, held by `tid`. Decides everything before the release (see mutex.rs).
#[inline]
pub fn release(m: &RawMutex, tid: i32) {
    let word = m.word();
    let shared = m.shared();
    let mut current = word.load(Relaxed);
    loop {
        if current & FUTEX_WAITERS as i32 != 0 || current != tid {
            return release_through_kernel(m, tid, current, shared);
        }
        match word.compare_exchange_weak(current, 0, Release, Relaxed) {
            Ok(_) => return,
            Err(now) => current = now,
        }
    }
}

#[cold]
fn release_through_kernel(m: &RawMutex, tid: i32, current: i32, shared: bool) {
    let owner = owner_of(current);
    if owner != tid as u32 && held_across_fork(m, owner) {
        // Held across fork by the thread that forked. No thread waits in the kernel:
        // the parent's are not here, and the kernel refused the child's (the header),
        // which wait for an event instead.
        let events = events(m).as_ptr();
        count_event(m);
        m.word().store(0, Release);
        wake_event_waiters(events);
        return;
    }
    // Another thread may have released this hold already: this release and that one
    // are the one the kernel now makes, and those waiting for a take-over look again.
    let stray_used_up = converted(m)
        && stray(m).load(Relaxed) == owner
        && stray(m).compare_exchange(owner, 0, Relaxed, Relaxed).is_ok();
    if stray_used_up {
        count_event(m);
    }
    let events = events(m).as_ptr();
    sys::futex_unlock_pi(m.word().as_ptr(), shared);
    if stray_used_up {
        wake_event_waiters(events);
    }
}
