//! `libspinmutex.so`: preloaded into an unmodified program, it serves the program's
//! pthread and C11 mutexes with a strategy chosen from the environment at load time.
//!
//! The mutex's own 40 bytes are the lock, in glibc's layout and protocol (see
//! [`mutex`]); strategies differ only in how a thread waits for a busy lock
//! ([`spin`]). What this library does not serve is forwarded to glibc ([`real`]).
//!
//! Module map: `exports` and `c11` are the C entry points; `lock` and `unlock` apply
//! glibc's per-type rules; `mutex` is the protocol on the bytes; `spin` the spinning
//! policy; `config` the environment; `thread` the caller's ids; `sys` the system calls;
//! `real` glibc's own functions; `observe` tracing and statistics.

mod c11;
mod config;
mod exports;
mod lock;
mod mutex;
mod observe;
mod real;
mod rwlock;
mod spin;
mod sys;
mod thread;
mod unlock;
