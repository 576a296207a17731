//! `libspinmutex.so`: preloaded into an unmodified program, it serves the program's
//! pthread and C11 mutexes with a strategy chosen from the environment at load time.
//!
//! The mutex's own 40 bytes are the lock, in glibc's layout and protocol (see
//! [`mutex`]); strategies differ in how a thread waits for a busy lock ([`strategy`]:
//! [`spin`], or the kernel's priority-inheritance futex, [`pi`]). What this library does
//! not serve is forwarded to glibc ([`real`]).
//!
//! Module map: `exports` and `c11` are the C entry points (`cond` the condition-variable
//! waits, observed and forwarded); `lock` and `unlock` apply glibc's per-type rules;
//! `mutex` is the protocol on the bytes; `strategy` what each strategy does, `spin` the
//! spinning policy and `pi` the `kernel` strategy's protocol; `config` the environment;
//! `handshake` the load message to the `spinmutex` command; `thread` the caller's ids;
//! `sys` the system calls; `real` glibc's own functions; `observe` tracing and
//! statistics (`signals` keeps their signal handlers out of the program's sight);
//! `tools` the lock watchers (helgrind, drd, ThreadSanitizer) for which the library
//! steps aside.

/// Exports the old double-underscore names of glibc's functions (`__pthread_mutex_lock`,
/// `__pthread_rwlock_rdlock`, ...) that some programs still link against, each as a
/// call of the function it stands for.
macro_rules! alias {
    ($($alias:ident => $target:ident ( $($arg:ident: $ty:ty),* );)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $alias($($arg: $ty),*) -> libc::c_int {
            // SAFETY: same contract as the function it stands for.
            unsafe { $target($($arg),*) }
        }
    )*};
}

mod auto;
mod c11;
mod cond;
mod config;
mod exports;
mod handshake;
mod lock;
mod mutex;
mod observe;
mod pi;
mod real;
mod rwlock;
mod signals;
mod spin;
mod strategy;
mod sys;
mod thread;
mod tools;
mod unlock;
