//! glibc's own functions, for what this library forwards (the `glibc` strategy, robust,
//! priority-inherit and priority-protect mutexes, initialisation and destruction of
//! mutexes and rwlocks, the condition-variable waits it only observes, and the signal
//! functions it wraps to keep its own handlers out of sight).
//!
//! Each is looked up with `dlsym(RTLD_NEXT, …)` on first use and cached in an atomic.
//! No `Once`: a lookup may re-enter the library (through an allocator that locks), and
//! two threads racing to resolve the same symbol store the same pointer.

use core::ffi::{c_void, CStr};
use core::sync::atomic::{AtomicPtr, Ordering::Relaxed};
use libc::{
    c_int, clockid_t, pthread_mutex_t, pthread_mutexattr_t, pthread_rwlock_t, pthread_rwlockattr_t,
    sighandler_t, timespec,
};

/// A lazily resolved glibc function, of a given symbol version or the default one.
pub struct Real {
    name: &'static CStr,
    version: Option<&'static CStr>,
    addr: AtomicPtr<c_void>,
}

impl Real {
    const fn new(name: &'static CStr, version: Option<&'static CStr>) -> Self {
        Real { name, version, addr: AtomicPtr::new(core::ptr::null_mut()) }
    }

    /// The function's address, or null if glibc lacks it.
    #[inline(always)]
    pub fn get(&self) -> *mut c_void {
        let addr = self.addr.load(Relaxed);
        if !addr.is_null() {
            return addr;
        }
        self.resolve()
    }

    #[cold]
    #[inline(never)]
    fn resolve(&self) -> *mut c_void {
        // SAFETY: RTLD_NEXT with NUL-terminated names is dlsym's and dlvsym's documented use.
        let next = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) };
        let addr = match self.version {
            None => next,
            // SAFETY: as above.
            Some(version) => unsafe { libc::dlvsym(libc::RTLD_NEXT, self.name.as_ptr(), version.as_ptr()) },
        };
        // A module after this library that defines the name without a version (a tool
        // such as ThreadSanitizer's runtime) comes before glibc and takes references of
        // every version, so that is what the caller would have reached without this
        // library; `dlvsym` skips such definitions.
        let addr =
            if self.version.is_some() && !next.is_null() && !same_module(next, addr) { next } else { addr };
        self.addr.store(addr, Relaxed);
        addr
    }
}

/// Whether two addresses lie in the same loaded module (false when either is null).
fn same_module(a: *mut c_void, b: *mut c_void) -> bool {
    let base = |p: *mut c_void| {
        // SAFETY: dladdr fills `info` from the loader's tables; any address may be asked.
        let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
        (!p.is_null() && unsafe { libc::dladdr(p, &mut info) } != 0).then_some(info.dli_fbase)
    };
    matches!((base(a), base(b)), (Some(x), Some(y)) if x == y)
}

/// Declares forwarding functions: each calls glibc's function of the same name, or
/// returns `$missing` if glibc has none. Also declares `resolve_all`.
macro_rules! forward {
    ($( $sym:ident / $name:literal : fn($($arg:ident: $ty:ty),*) -> $ret:ty = $missing:expr; )*) => {
        $(
            mod $sym {
                pub static REAL: super::Real = super::Real::new($name, None);
            }

            pub unsafe fn $sym($($arg: $ty),*) -> $ret {
                let addr = $sym::REAL.get();
                if addr.is_null() {
                    return $missing;
                }
                // SAFETY: the symbol named `$name` in glibc has exactly this C signature.
                let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { core::mem::transmute(addr) };
                // SAFETY: the caller's arguments are passed through unchanged.
                unsafe { f($($arg),*) }
            }
        )*

        /// Resolves every symbol now, so later calls never enter the dynamic linker.
        pub fn resolve_all() {
            $( $sym::REAL.get(); )*
            for cond in CONDITION_WAITS {
                cond.get();
            }
        }
    };
}

// The condition-variable waits the wrappers of src/cond.c forward to (through
// `cond::spinmutex_glibc_cond`), each of the version its wrapper stands for.
pub static COND_WAIT: Real = Real::new(c"pthread_cond_wait", Some(c"GLIBC_2.3.2"));
pub static COND_TIMEDWAIT: Real = Real::new(c"pthread_cond_timedwait", Some(c"GLIBC_2.3.2"));
pub static OLD_COND_WAIT: Real = Real::new(c"pthread_cond_wait", Some(c"GLIBC_2.2.5"));
pub static OLD_COND_TIMEDWAIT: Real = Real::new(c"pthread_cond_timedwait", Some(c"GLIBC_2.2.5"));
pub static COND_CLOCKWAIT: Real = Real::new(c"pthread_cond_clockwait", None);
pub static CND_WAIT: Real = Real::new(c"cnd_wait", None);
pub static CND_TIMEDWAIT: Real = Real::new(c"cnd_timedwait", None);
static CONDITION_WAITS: [&Real; 7] = [
    &COND_WAIT,
    &COND_TIMEDWAIT,
    &OLD_COND_WAIT,
    &OLD_COND_TIMEDWAIT,
    &COND_CLOCKWAIT,
    &CND_WAIT,
    &CND_TIMEDWAIT,
];

forward! {
    mutex_init / c"pthread_mutex_init": fn(m: *mut pthread_mutex_t, a: *const pthread_mutexattr_t) -> c_int = libc::ENOSYS;
    mutex_destroy / c"pthread_mutex_destroy": fn(m: *mut pthread_mutex_t) -> c_int = libc::ENOSYS;
    mutex_lock / c"pthread_mutex_lock": fn(m: *mut pthread_mutex_t) -> c_int = libc::ENOSYS;
    mutex_trylock / c"pthread_mutex_trylock": fn(m: *mut pthread_mutex_t) -> c_int = libc::ENOSYS;
    mutex_unlock / c"pthread_mutex_unlock": fn(m: *mut pthread_mutex_t) -> c_int = libc::ENOSYS;
    mutex_timedlock / c"pthread_mutex_timedlock": fn(m: *mut pthread_mutex_t, t: *const timespec) -> c_int = libc::ENOSYS;
    mutex_clocklock / c"pthread_mutex_clocklock": fn(m: *mut pthread_mutex_t, c: clockid_t, t: *const timespec) -> c_int = libc::ENOSYS;
    mutex_consistent / c"pthread_mutex_consistent": fn(m: *mut pthread_mutex_t) -> c_int = libc::ENOSYS;
    rwlock_init / c"pthread_rwlock_init": fn(l: *mut pthread_rwlock_t, a: *const pthread_rwlockattr_t) -> c_int = libc::ENOSYS;
    rwlock_destroy / c"pthread_rwlock_destroy": fn(l: *mut pthread_rwlock_t) -> c_int = libc::ENOSYS;
    rwlock_rdlock / c"pthread_rwlock_rdlock": fn(l: *mut pthread_rwlock_t) -> c_int = libc::ENOSYS;
    rwlock_tryrdlock / c"pthread_rwlock_tryrdlock": fn(l: *mut pthread_rwlock_t) -> c_int = libc::ENOSYS;
    rwlock_timedrdlock / c"pthread_rwlock_timedrdlock": fn(l: *mut pthread_rwlock_t, t: *const timespec) -> c_int = libc::ENOSYS;
    rwlock_clockrdlock / c"pthread_rwlock_clockrdlock": fn(l: *mut pthread_rwlock_t, c: clockid_t, t: *const timespec) -> c_int = libc::ENOSYS;
    rwlock_wrlock / c"pthread_rwlock_wrlock": fn(l: *mut pthread_rwlock_t) -> c_int = libc::ENOSYS;
    rwlock_trywrlock / c"pthread_rwlock_trywrlock": fn(l: *mut pthread_rwlock_t) -> c_int = libc::ENOSYS;
    rwlock_timedwrlock / c"pthread_rwlock_timedwrlock": fn(l: *mut pthread_rwlock_t, t: *const timespec) -> c_int = libc::ENOSYS;
    rwlock_clockwrlock / c"pthread_rwlock_clockwrlock": fn(l: *mut pthread_rwlock_t, c: clockid_t, t: *const timespec) -> c_int = libc::ENOSYS;
    rwlock_unlock / c"pthread_rwlock_unlock": fn(l: *mut pthread_rwlock_t) -> c_int = libc::ENOSYS;
    sigaction / c"sigaction": fn(s: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int = -1;
    signal / c"signal": fn(s: c_int, h: sighandler_t) -> sighandler_t = libc::SIG_ERR;
    bsd_signal / c"bsd_signal": fn(s: c_int, h: sighandler_t) -> sighandler_t = libc::SIG_ERR;
    ssignal / c"ssignal": fn(s: c_int, h: sighandler_t) -> sighandler_t = libc::SIG_ERR;
    sysv_signal / c"sysv_signal": fn(s: c_int, h: sighandler_t) -> sighandler_t = libc::SIG_ERR;
    __sysv_signal / c"__sysv_signal": fn(s: c_int, h: sighandler_t) -> sighandler_t = libc::SIG_ERR;
    sigset / c"sigset": fn(s: c_int, h: sighandler_t) -> sighandler_t = libc::SIG_ERR;
    mtx_init / c"mtx_init": fn(m: *mut pthread_mutex_t, kind: c_int) -> c_int = crate::c11::THRD_ERROR;
    fork_no_handlers / c"_Fork": fn() -> libc::pid_t = {
        // SAFETY: sets this thread's errno, as a failed call would.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        -1
    };
}
