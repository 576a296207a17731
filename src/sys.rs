//! The few system calls a mutex needs: futex wait and wake, the futex2 `futex_waitv`
//! used by the handoff, the thread id, and the clock.

use core::ffi::c_long;
use core::ptr;
use core::sync::atomic::AtomicI32;
use libc::{c_int, clockid_t, timespec};

/// An absolute deadline on one of the two clocks pthread timed waits accept.
#[derive(Clone, Copy)]
pub struct Deadline {
    pub clock: clockid_t,
    pub at: timespec,
}

impl Deadline {
    /// The checks glibc makes before it blocks: `EINVAL` for a malformed timespec,
    /// `ETIMEDOUT` for a time before the epoch (the kernel refuses those).
    pub fn check(&self) -> Result<(), c_int> {
        if !(0..1_000_000_000).contains(&self.at.tv_nsec) {
            return Err(libc::EINVAL);
        }
        if self.at.tv_sec < 0 {
            return Err(libc::ETIMEDOUT);
        }
        Ok(())
    }
}

/// The clocks a futex can time out against.
pub fn clock_supported(clock: clockid_t) -> bool {
    clock == libc::CLOCK_REALTIME || clock == libc::CLOCK_MONOTONIC
}

/// Nanoseconds on `CLOCK_MONOTONIC` (vDSO, no system call).
pub fn now_ns() -> u64 {
    let mut ts = timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

pub fn getpid() -> i32 {
    // SAFETY: getpid has no arguments and cannot fail.
    unsafe { libc::getpid() }
}

fn errno() -> c_int {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

fn private_flag(shared: bool) -> c_int {
    if shared {
        0
    } else {
        libc::FUTEX_PRIVATE_FLAG
    }
}

/// Sleeps while `*word == expected`, until woken or `deadline`.
/// Returns 0 (woken or spurious), `EAGAIN` (value changed), `EINTR` or `ETIMEDOUT`.
pub fn futex_wait(word: &AtomicI32, expected: i32, deadline: Option<&Deadline>, shared: bool) -> c_int {
    let (op, ts) = match deadline {
        None => (libc::FUTEX_WAIT, ptr::null()),
        Some(d) => {
            let clock = if d.clock == libc::CLOCK_REALTIME { libc::FUTEX_CLOCK_REALTIME } else { 0 };
            (libc::FUTEX_WAIT_BITSET | clock, &d.at as *const timespec)
        }
    };
    // SAFETY: `word` is a live, aligned 32-bit futex word; `ts` is null or points to a
    // timespec that outlives the call; the bitset argument is ignored by FUTEX_WAIT.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | private_flag(shared),
            expected,
            ts,
            ptr::null::<u32>(),
            u32::MAX,
        )
    };
    if r == 0 {
        0
    } else {
        errno()
    }
}

/// Wakes up to `count` threads sleeping on `word`.
pub fn futex_wake(word: *const i32, count: i32, shared: bool) {
    // SAFETY: FUTEX_WAKE only uses the address as a key; it never dereferences it
    // beyond checking it is mapped.
    unsafe { libc::syscall(libc::SYS_futex, word, libc::FUTEX_WAKE | private_flag(shared), count) };
}

/// `FUTEX_WAIT_BITSET` on a raw 32-bit word: sleeps while `*word == expected`, in the
/// wait queue that `bitset` names, until a `FUTEX_WAKE_BITSET` whose bitset shares a bit
/// with it, or `deadline`. Same results as [`futex_wait`]. Several kinds of waiter can
/// share one futex word this way and still be woken apart.
pub fn futex_wait_bitset(
    word: *const u32,
    expected: u32,
    bitset: u32,
    deadline: Option<&Deadline>,
    shared: bool,
) -> c_int {
    let (clock, ts) = match deadline {
        None => (0, ptr::null()),
        Some(d) => {
            let clock = if d.clock == libc::CLOCK_REALTIME { libc::FUTEX_CLOCK_REALTIME } else { 0 };
            (clock, &d.at as *const timespec)
        }
    };
    // SAFETY: `word` is an aligned 32-bit futex word of a live lock (the kernel only reads
    // it); `ts` is null (no timeout) or points to an absolute timespec that outlives the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word,
            libc::FUTEX_WAIT_BITSET | clock | private_flag(shared),
            expected,
            ts,
            ptr::null::<u32>(),
            bitset,
        )
    };
    if r == 0 {
        0
    } else {
        errno()
    }
}

/// `FUTEX_WAKE_BITSET`: wakes up to `count` threads sleeping on `word` in a queue that
/// shares a bit with `bitset`. Returns how many it woke. The address is only a key: this
/// is safe to call on memory that another thread may already have freed.
pub fn futex_wake_bitset(word: *const u32, count: i32, bitset: u32, shared: bool) -> i32 {
    // SAFETY: the kernel uses the address only as a key and never writes through it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word,
            libc::FUTEX_WAKE_BITSET | private_flag(shared),
            count,
            ptr::null::<timespec>(),
            ptr::null::<u32>(),
            bitset,
        )
    };
    r.max(0) as i32
}

const SYS_FUTEX_WAITV: c_long = 449;
const FUTEX2_SIZE_U32: u32 = 0x02;
const FUTEX2_PRIVATE: u32 = 128;

/// `struct futex_waitv` of the futex2 interface.
#[repr(C)]
struct FutexWaitv {
    val: u64,
    uaddr: u64,
    flags: u32,
    reserved: u32,
}

/// Sleeps until either `a` no longer holds `a_val`, or `b` no longer holds `b_val`, or a
/// wake on either address, or `deadline`. Same results as [`futex_wait`], plus `ENOSYS`
/// on kernels before 5.16. Private futexes only.
pub fn futex_wait_either(
    a: *const i32,
    a_val: i32,
    b: *const i32,
    b_val: i32,
    deadline: Option<&Deadline>,
) -> c_int {
    let entry = |addr: *const i32, val: i32| FutexWaitv {
        val: val as u32 as u64,
        uaddr: addr as u64,
        flags: FUTEX2_SIZE_U32 | FUTEX2_PRIVATE,
        reserved: 0,
    };
    let waiters = [entry(a, a_val), entry(b, b_val)];
    let (ts, clock) = match deadline {
        Some(d) => (&d.at as *const timespec, d.clock),
        None => (ptr::null(), libc::CLOCK_MONOTONIC),
    };
    // SAFETY: `waiters` is a live array of two well-formed entries; both addresses are
    // aligned 32-bit words of a live mutex; `ts` is null or a live timespec.
    let r = unsafe { libc::syscall(SYS_FUTEX_WAITV, waiters.as_ptr(), 2u32, 0u32, ts, clock) };
    if r >= 0 {
        0
    } else {
        errno()
    }
}

/// Writes `bytes` to standard error, whole or not at all; never allocates.
pub fn write_stderr(bytes: &[u8]) {
    let mut rest = bytes;
    while !rest.is_empty() {
        // SAFETY: writes from a live buffer of the given length.
        let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            return;
        }
        rest = &rest[n as usize..];
    }
}
