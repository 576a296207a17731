//! Who is asking: the caller's kernel thread id (what glibc stores in `__owner`) and the
//! process id, both cached, and corrected in a child after `fork`.

use core::cell::Cell;
use core::sync::atomic::{AtomicI32, Ordering::Relaxed};

thread_local! {
    /// This thread's id; 0 until first asked. A `Cell` with a constant initialiser and
    /// no destructor, so it can be read at any time, even while the thread exits.
    static TID: Cell<i32> = const { Cell::new(0) };
}

static PID: AtomicI32 = AtomicI32::new(0);

/// The calling thread's id.
#[inline]
pub fn tid() -> i32 {
    TID.try_with(|t| {
        let tid = t.get();
        if tid != 0 {
            tid
        } else {
            let tid = crate::sys::gettid();
            t.set(tid);
            tid
        }
    })
    .unwrap_or_else(|_| crate::sys::gettid())
}

/// The calling process's id.
pub fn pid() -> i32 {
    match PID.load(Relaxed) {
        0 => {
            let pid = crate::sys::getpid();
            PID.store(pid, Relaxed);
            pid
        }
        pid => pid,
    }
}

/// In a child after `fork`: the one thread left has a new id, and so does the process.
extern "C" fn after_fork_in_child() {
    let _ = TID.try_with(|t| t.set(crate::sys::gettid()));
    PID.store(crate::sys::getpid(), Relaxed);
    crate::observe::after_fork_in_child();
}

/// Registers the fork handler. Called once, by the constructor.
pub fn init() {
    PID.store(crate::sys::getpid(), Relaxed);
    // SAFETY: registers a plain function that only touches this module's state.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
}
