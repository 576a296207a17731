//! The symbols the preload puts in front of glibc's, and the library's constructor and
//! destructor. Each entry point serves the mutex itself or forwards it to glibc.
//!
//! `lock`, `trylock` and `unlock` start with the fast path: a normal mutex, a strategy
//! that serves it with glibc's word, no statistics (one test of the kind and one
//! published word, see `RawMutex::plain`), and the lock free or held by the caller. All
//! else, including every decision of tracing, statistics and strategy, is in the general
//! path, out of line.

use libc::{c_int, clockid_t, pthread_mutex_t, pthread_mutexattr_t, timespec};

use crate::lock::{self, served};
use crate::mutex::RawMutex;
use crate::sys::{self, Deadline};
use crate::{config, handshake, observe, real, thread, unlock};

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: POSIX requires `m` to point to a mutex.
    let mutex = unsafe { RawMutex::from_ptr(m) };
    if mutex.plain() && mutex.try_acquire() {
        mutex.set_owner(thread::tid());
        return 0;
    }
    if forwards_unobserved() {
        // SAFETY: the caller's mutex goes to glibc unchanged.
        return unsafe { real::mutex_lock(m) };
    }
    // SAFETY: as above.
    unsafe { lock_in_general(m) }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: POSIX requires `m` to point to a mutex.
    let mutex = unsafe { RawMutex::from_ptr(m) };
    if mutex.plain() {
        if !mutex.try_acquire() {
            return libc::EBUSY;
        }
        mutex.set_owner(thread::tid());
        return 0;
    }
    if forwards_unobserved() {
        // SAFETY: the caller's mutex goes to glibc unchanged.
        return unsafe { real::mutex_trylock(m) };
    }
    match served(m) {
        Some(mutex) => lock::trylock(mutex),
        // SAFETY: the caller's mutex goes to glibc unchanged.
        None if !observe::enabled() => unsafe { real::mutex_trylock(m) },
        // SAFETY: as above.
        None => unsafe { forward(m, Call::TryLock) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: POSIX requires `m` to point to a mutex.
    let mutex = unsafe { RawMutex::from_ptr(m) };
    if mutex.plain_to_release() {
        mutex.clear_owner();
        mutex.release();
        return 0;
    }
    if forwards_unobserved() {
        // SAFETY: the caller's mutex goes to glibc unchanged.
        return unsafe { real::mutex_unlock(m) };
    }
    // SAFETY: as above.
    unsafe { unlock_in_general(m) }
}

/// The `glibc` strategy with neither statistics nor tracing on: `lock`, `trylock` and
/// `unlock` jump straight to glibc's function, before the general path sets up a frame
/// (the forwarded pair: 128 instructions through the general path). Inside a held
/// mutex, every instruction of the forwarding call before glibc's release lengthens the
/// critical section.
#[inline(always)]
fn forwards_unobserved() -> bool {
    config::serves_nothing() && !observe::enabled()
}

/// `pthread_mutex_lock` past the fast path.
#[inline(never)]
unsafe fn lock_in_general(m: *mut pthread_mutex_t) -> c_int {
    match served(m) {
        Some(mutex) => lock::lock(mutex, None),
        // SAFETY: the caller's mutex goes to glibc unchanged.
        None if !observe::enabled() => unsafe { real::mutex_lock(m) },
        // SAFETY: as above.
        None => unsafe { forward(m, Call::Lock) },
    }
}

/// `pthread_mutex_unlock` past the fast path.
#[inline(never)]
unsafe fn unlock_in_general(m: *mut pthread_mutex_t) -> c_int {
    match served(m) {
        Some(mutex) => unlock::unlock(mutex),
        // SAFETY: the caller's mutex goes to glibc unchanged.
        None if !observe::enabled() => unsafe { real::mutex_unlock(m) },
        // SAFETY: as above.
        None => unsafe { forward(m, Call::Unlock) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_timedlock(m: *mut pthread_mutex_t, abstime: *const timespec) -> c_int {
    match served(m) {
        // SAFETY: POSIX requires `abstime` to point to a timespec.
        Some(mutex) => unsafe { timed_lock(mutex, libc::CLOCK_REALTIME, abstime) },
        // SAFETY: the caller's arguments go to glibc unchanged.
        None if !observe::enabled() => unsafe { real::mutex_timedlock(m, abstime) },
        // SAFETY: as above.
        None => unsafe { forward(m, Call::TimedLock(abstime)) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    m: *mut pthread_mutex_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    match served(m) {
        // SAFETY: POSIX requires `abstime` to point to a timespec.
        Some(mutex) => unsafe { timed_lock(mutex, clock, abstime) },
        // SAFETY: the caller's arguments go to glibc unchanged.
        None if !observe::enabled() => unsafe { real::mutex_clocklock(m, clock, abstime) },
        // SAFETY: as above.
        None => unsafe { forward(m, Call::ClockLock(clock, abstime)) },
    }
}

/// A call this library does not serve, with its arguments.
enum Call {
    Lock,
    TryLock,
    Unlock,
    TimedLock(*const timespec),
    ClockLock(clockid_t, *const timespec),
}

/// Passes a call to glibc's own function while tracing or statistics are on, so they
/// see it. Out of line: neither the served path nor plain forwarding pays for it.
#[cold]
#[inline(never)]
unsafe fn forward(m: *mut pthread_mutex_t, call: Call) -> c_int {
    // SAFETY (every arm): the caller's arguments go to glibc unchanged.
    match call {
        Call::Lock => observe::forward_acquire(m, || unsafe { real::mutex_lock(m) }),
        Call::TryLock => observe::forward_acquire(m, || unsafe { real::mutex_trylock(m) }),
        Call::TimedLock(at) => observe::forward_acquire(m, || unsafe { real::mutex_timedlock(m, at) }),
        Call::ClockLock(clock, at) => {
            observe::forward_acquire(m, || unsafe { real::mutex_clocklock(m, clock, at) })
        }
        Call::Unlock => observe::forward_release(m, || unsafe { real::mutex_unlock(m) }),
    }
}

/// glibc refuses a clock a futex cannot time out on, even for a free mutex; it checks
/// the timespec only when it is about to block, and a null one means no time limit
/// (programs pass null for "no limit" and rely on getting the lock).
unsafe fn timed_lock(m: &crate::mutex::RawMutex, clock: clockid_t, abstime: *const timespec) -> c_int {
    if !sys::clock_supported(clock) {
        return libc::EINVAL;
    }
    // SAFETY: the caller's timespec, read once, or null.
    let deadline = unsafe { abstime.as_ref() }.map(|at| Deadline { clock, at: *at });
    lock::lock(m, deadline.as_ref())
}

/// `pthread_mutex_init` and its old name enter here with the caller's return address
/// still on top of the stack: it is passed on as a third argument, since `auto` classes
/// a mutex by the call site that made it (auto/class.rs), and reading it here costs one load
/// where unwinding would cost microseconds.
macro_rules! mutex_init_entry {
    ($($name:ident),*) => {$(
        #[cfg(target_arch = "x86_64")]
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name(m: *mut pthread_mutex_t, attr: *const pthread_mutexattr_t) -> c_int {
            core::arch::naked_asm!("mov rdx, qword ptr [rsp]", "jmp {init}", init = sym mutex_init)
        }

        #[cfg(not(target_arch = "x86_64"))]
        #[no_mangle]
        pub unsafe extern "C" fn $name(m: *mut pthread_mutex_t, attr: *const pthread_mutexattr_t) -> c_int {
            // SAFETY: the caller's arguments, passed on.
            unsafe { mutex_init(m, attr, 0) }
        }
    )*};
}

mutex_init_entry!(pthread_mutex_init, __pthread_mutex_init);

/// `pthread_mutex_init` called from `caller` (0: not known).
unsafe extern "C" fn mutex_init(
    m: *mut pthread_mutex_t,
    attr: *const pthread_mutexattr_t,
    caller: usize,
) -> c_int {
    // glibc's initialiser writes every byte, including those this library uses.
    // SAFETY: the caller's arguments go to glibc unchanged.
    let r = unsafe { real::mutex_init(m, attr) };
    if r == 0 {
        made(m, caller);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut pthread_mutex_t) -> c_int {
    // glibc's check (EBUSY while `__nusers` counts an owner or a condvar waiter) reads the
    // fields this library keeps exactly as glibc does.
    // SAFETY: the caller's mutex goes to glibc unchanged.
    let r = unsafe { real::mutex_destroy(m) };
    if r == 0 {
        observe::died(m as usize);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_consistent(m: *mut pthread_mutex_t) -> c_int {
    // Only robust mutexes can be inconsistent, and those are glibc's.
    // SAFETY: the caller's mutex goes to glibc unchanged.
    unsafe { real::mutex_consistent(m) }
}

/// A mutex `init` just made, called from `caller` (0: not known): converted for a
/// strategy with its own protocol (its first moment, when no other thread can know it),
/// given its class under `auto`, and counted by the statistics.
pub fn made(m: *mut pthread_mutex_t, caller: usize) {
    let row = config::row();
    if row.priority_inheritance {
        // SAFETY: the mutex glibc just initialised.
        crate::pi::convert_new(unsafe { RawMutex::from_ptr(m) });
    }
    if row.learns && caller != 0 {
        // SAFETY: as above.
        crate::auto::born(unsafe { RawMutex::from_ptr(m) }, caller);
    }
    observe::born(m as usize);
}

/// `_Fork` (glibc 2.34) creates a child without running atfork handlers, so the child's
/// cached ids are refreshed here instead. glibc's own `fork` calls its `_Fork`
/// internally, not through this symbol, and runs the atfork handler as usual.
#[no_mangle]
pub unsafe extern "C" fn _Fork() -> libc::pid_t {
    thread::before_fork();
    // SAFETY: glibc's `_Fork` takes no arguments.
    let pid = unsafe { real::fork_no_handlers() };
    if pid == 0 {
        thread::after_fork_in_child();
    }
    pid
}

// The old double-underscore names some programs still link against.
alias! {
    __pthread_mutex_lock => pthread_mutex_lock(m: *mut pthread_mutex_t);
    __pthread_mutex_trylock => pthread_mutex_trylock(m: *mut pthread_mutex_t);
    __pthread_mutex_unlock => pthread_mutex_unlock(m: *mut pthread_mutex_t);
    __pthread_mutex_destroy => pthread_mutex_destroy(m: *mut pthread_mutex_t);
}

/// Runs when the library is loaded. Every entry point also works before this.
extern "C" fn constructor() {
    thread::init();
    config::init();
    if config::row().priority_inheritance {
        crate::pi::init();
    }
    crate::spin::init();
    if config::row().learns {
        crate::auto::init();
    }
    real::resolve_all();
    observe::init();
    handshake::announce();
}

/// Runs at exit. Every entry point keeps working after this.
extern "C" fn destructor() {
    observe::at_exit();
}

#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;

#[used]
#[link_section = ".fini_array"]
static DESTRUCTOR: extern "C" fn() = destructor;
