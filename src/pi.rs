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
//! A converted mutex has glibc's priority-inherit bit in its kind. glibc's own code that
//! takes an application's mutex (a condition-variable wait releasing and retaking it,
//! and the cleanup of a wait cancelled) reads the kind first and then speaks this same
//! protocol; the condition variables keep working because of that. The bit is set:
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
//! can be read) or by a process that shares the mutex and does not use this library:
//! such a mutex is never converted while it is locked. A lock call waits for it to come
//! free without writing to it (polling, since its holder will not wake a waiter it does
//! not know of), and its holder's unlock, through this library or not, uses the old
//! protocol, which is the one it was locked with. A process-shared mutex is converted
//! in the memory all its processes share, so a process that uses glibc alone follows
//! the conversion too (glibc reads the kind on every call).
//!
//! # Limits, as glibc's own priority-inheritance mutexes
//!
//! The word names its owner, so a mutex held across `fork` names, in the child, a thread
//! that no longer exists: the child's only thread, which held it in the parent, may
//! still unlock it (handled below); no other thread can.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use libc::c_int;

use crate::mutex::{kind, Acquired, How, RawMutex};
use crate::sys::{self, Deadline};

/// Set by the kernel in the word while threads wait.
const FUTEX_WAITERS: u32 = 0x8000_0000;
/// Set by the kernel when the owner died holding a robust mutex (not ours).
const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
const FUTEX_TID_MASK: u32 = 0x3fff_ffff;

/// The protocol a mutex speaks under this strategy.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Converted (or created as priority-inherit by the program).
    PriorityInheritance,
    /// glibc's 0/1/2 word: locked before it could be converted.
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

/// Gives a freshly initialised mutex the priority-inherit bit (step 1 of the header).
pub fn convert_new(m: &RawMutex) {
    let k = m.kind();
    if k & !kind::SERVED == 0 {
        m.set_kind(k | kind::PRIO_INHERIT);
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
        if m.word().load(Acquire) != 0 {
            return None;
        }
        if m.convert_kind(k, k | kind::PRIO_INHERIT) {
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

/// One attempt: 0 → tid.
#[inline]
pub fn try_acquire(m: &RawMutex, tid: i32) -> bool {
    m.word().compare_exchange(0, tid, Acquire, Relaxed).is_ok()
}

/// Waits in the kernel until the caller owns `m`, or `deadline` passes.
#[cold]
pub fn acquire_contended(m: &RawMutex, tid: i32, deadline: Option<&Deadline>) -> Result<Acquired, c_int> {
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

/// Whether the word names `tid` as its owner; in a forked child, also the id its
/// thread had in the parent (see `release_through_kernel`).
pub fn owned_by(m: &RawMutex, tid: i32) -> bool {
    let owner = m.word().load(Relaxed) as u32 & FUTEX_TID_MASK;
    owner == tid as u32 || (owner != 0 && owner == crate::thread::tid_before_fork() as u32 && !m.shared())
}

/// Releases `m` for the thread that holds it, which is not the caller: possible only
/// while no thread waits in the kernel. 0, or `EPERM` (the mutex stays locked).
pub fn release_for_owner(m: &RawMutex) -> c_int {
    let current = m.word().load(Relaxed);
    if current == 0 || current as u32 & FUTEX_WAITERS != 0 {
        return libc::EPERM;
    }
    m.clear_owner();
    match m.word().compare_exchange(current, 0, Release, Relaxed) {
        Ok(_) => 0,
        Err(_) => {
            m.set_owner(current & FUTEX_TID_MASK as i32); // a waiter came: undo
            libc::EPERM
        }
    }
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
    let owner = current as u32 & FUTEX_TID_MASK;
    if owner != tid as u32 && owner == crate::thread::tid_before_fork() as u32 && owner != 0 && !shared {
        // Held across fork by the thread that forked, which is this child's only
        // thread: the waiters the word mentions were the parent's and are not here.
        m.word().store(0, Release);
        return;
    }
    debug_assert!(current as u32 & FUTEX_OWNER_DIED == 0);
    sys::futex_unlock_pi(m.word().as_ptr(), shared);
}
