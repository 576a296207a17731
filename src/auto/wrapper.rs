//! Mutexes made through a function of the program's own.
//!
//! Many programs make every mutex through one function (pigz's lock constructor, libuv's
//! `uv_mutex_init`, APR's `apr_thread_mutex_create`). Classed by the `pthread_mutex_init`
//! call alone, all their mutexes would be one class with one policy, the lock held
//! across I/O and the one held for nanoseconds alike. So an init call site whose
//! mutexes are made for two different callers is a **wrapper**, and a mutex made there
//! takes the class of the call of the wrapper instead: the return address one frame up.
//!
//! That address takes unwinding (glibc's `backtrace`: 0.3–0.5 µs for the few frames
//! here), so it is looked for only where it can tell something:
//!
//! * a call site's first [`LEARN`] inits, then one in [`RECHECK`], find out whether it is
//!   a wrapper (a site called from one place only is not);
//! * at a wrapper, every init looks;
//!
//! and after its first [`LEARN`] inits a call site unwinds at most once per [`GAP_NS`]:
//! a program that makes mutexes faster than that spends at most about 1% of a CPU on
//! it, and a mutex made in between takes the wrapper's own class, as every mutex would
//! without this. (A look that comes too soon costs a clock read, about as much as the
//! rest of an init: a wrapper whose last look came too soon looks again only at one
//! init in [`RECHECK`].) Nothing unwinds before the library's constructor has loaded the
//! unwinder ([`init`]), nor on the uncontended path: only `pthread_mutex_init` does.
//!
//! A call site's entry in the class table is kept for good, and a program may call its
//! wrappers from hundreds of places: the wrappers' callers take at most
//! [`CALLER_CLASSES`] entries, so that the table keeps room for other classes (every
//! C++ `std::mutex` is one); past that, a mutex takes its wrapper's class.

use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize};

use super::class::Class;
use crate::observe::callsite;
use crate::sys;

/// Inits of a call site that all look for their caller.
const LEARN: u32 = 8;
/// After those, one init in this many looks, until the site is found to be a wrapper.
const RECHECK: u32 = 64;
/// Least time between two unwinds at one call site after its first [`LEARN`] inits.
const GAP_NS: u64 = 50_000;

/// Most entries of the class table that wrappers' callers may take.
const CALLER_CLASSES: u32 = (super::CLASSES / 2) as u32;

/// The unwinder is loaded and this library's address range known.
static READY: AtomicBool = AtomicBool::new(false);
/// Entries taken (or about to be) by wrappers' callers.
static CALLERS: AtomicU32 = AtomicU32::new(0);

/// A wrapper's caller that has no class yet may have one (see [`CALLER_CLASSES`]).
pub(super) fn may_add_class() -> bool {
    CALLERS.load(Relaxed) < CALLER_CLASSES && CALLERS.fetch_add(1, Relaxed) < CALLER_CLASSES
}

/// Called by the constructor under `auto`: loads the unwinder (which allocates), so
/// that no `pthread_mutex_init` is the first to.
pub fn init() {
    callsite::init();
    READY.store(true, Relaxed);
}

/// What an init call site's entry knows of its callers.
pub(super) struct Site {
    /// Inits at the site so far (saturating).
    inits: AtomicU32,
    /// The call of the site's function that the first unwound init came from.
    first_caller: AtomicUsize,
    /// Inits have come from two different calls: the site is a wrapper.
    wrapper: AtomicBool,
    /// When the site last unwound.
    unwound_ns: AtomicU64,
    /// The site's last look came less than [`GAP_NS`] after the one before: it looks
    /// again only at one init in [`RECHECK`].
    held_back: AtomicBool,
}

impl Site {
    pub(super) const fn new() -> Site {
        Site {
            inits: AtomicU32::new(0),
            first_caller: AtomicUsize::new(0),
            wrapper: AtomicBool::new(false),
            unwound_ns: AtomicU64::new(0),
            held_back: AtomicBool::new(false),
        }
    }

    pub(super) fn reset(&self) {
        self.inits.store(0, Relaxed);
        self.first_caller.store(0, Relaxed);
        self.wrapper.store(false, Relaxed);
        self.unwound_ns.store(0, Relaxed);
        self.held_back.store(false, Relaxed);
    }

    /// The site has been found to be a wrapper.
    pub(super) fn is_wrapper(&self) -> bool {
        self.wrapper.load(Relaxed)
    }
}

/// For a mutex made now at the init call site `site`, whose return address is `call`:
/// the return address of the call of the site's function, when the mutex is to be
/// classed by it (the site is a wrapper), else `None` (the site's own class).
pub(super) fn wrapper_caller(site: &Class, call: usize) -> Option<usize> {
    if !READY.load(Relaxed) {
        return None;
    }
    let s = &site.site;
    let n = s.inits.load(Relaxed);
    s.inits.store(n.saturating_add(1), Relaxed);
    let wrapper = s.is_wrapper();
    if n >= LEARN {
        // The clock costs about as much as the rest of an init: a site that is not known
        // as a wrapper, or whose last look came too soon, reads it only now and then.
        let seldom = !wrapper || s.held_back.load(Relaxed);
        if seldom && !n.is_multiple_of(RECHECK) {
            return None;
        }
        let now = sys::now_ns();
        let too_soon = now.saturating_sub(s.unwound_ns.load(Relaxed)) < GAP_NS;
        s.held_back.store(too_soon, Relaxed);
        if too_soon {
            return None;
        }
        s.unwound_ns.store(now, Relaxed);
    }
    let above = caller_of(call)?;
    if wrapper {
        return Some(above);
    }
    match s.first_caller.compare_exchange(0, above, Relaxed, Relaxed) {
        Ok(_) => None,
        Err(first) if first == above => None,
        Err(_) => {
            s.wrapper.store(true, Relaxed);
            Some(above)
        }
    }
}

/// The return address one frame above `call`, the innermost frame outside this library,
/// if the stack unwinds to it.
fn caller_of(call: usize) -> Option<usize> {
    // Ours are 2-4 frames (`pthread_mutex_init`'s, as inlining leaves them).
    let frames = callsite::outside::<7, 2>();
    (frames[0] == call && frames[1] != 0).then_some(frames[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_callers_take_at_most_half_the_table() {
        let taken = (0..super::super::CLASSES).filter(|_| may_add_class()).count();
        assert_eq!(taken, CALLER_CLASSES as usize);
        CALLERS.store(0, Relaxed);
    }
}
