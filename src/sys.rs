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

impl Deadline {
    /// The earlier of `deadline` and `ns` from now (on the deadline's clock, else the
    /// monotonic one), and whether that is the caller's deadline.
    pub fn sooner_of(deadline: Option<&Deadline>, ns: u64) -> (Deadline, bool) {
        let clock = deadline.map_or(libc::CLOCK_MONOTONIC, |d| d.clock);
        let soon = clock_ns(clock).saturating_add(ns);
        match deadline {
            Some(d) if timespec_ns(&d.at) <= soon => (*d, true),
            _ => (Deadline { clock, at: ns_timespec(soon) }, false),
        }
    }
}

fn timespec_ns(ts: &timespec) -> u64 {
    (ts.tv_sec.max(0) as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec.max(0) as u64)
}

fn ns_timespec(ns: u64) -> timespec {
    timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long }
}

/// Nanoseconds on `clock` (vDSO, no system call, for the clocks that have one).
fn clock_ns(clock: clockid_t) -> u64 {
    let mut ts = timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    timespec_ns(&ts)
}

/// The clocks a futex can time out against.
pub fn clock_supported(clock: clockid_t) -> bool {
    clock == libc::CLOCK_REALTIME || clock == libc::CLOCK_MONOTONIC
}

/// Nanoseconds on `CLOCK_MONOTONIC` (vDSO, no system call).
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time used by every thread of the process, in nanoseconds (a system call).
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
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

/// `FUTEX_LOCK_PI2` (Linux 5.14+, any clock) or, without a deadline or on older
/// kernels, `FUTEX_LOCK_PI` (realtime deadlines only). Returns 0 once the caller owns
/// the word, or the error.
#[inline(never)]
pub fn futex_lock_pi(word: &AtomicI32, deadline: Option<&Deadline>, shared: bool) -> c_int {
    const FUTEX_LOCK_PI2: c_int = 13;
    let call = |op: c_int, ts: *const timespec| {
        // SAFETY: `word` is a live, aligned 32-bit futex word; `ts` is null or a live
        // absolute timespec.
        let r = unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), op | private_flag(shared), 0, ts) };
        if r == 0 {
            0
        } else {
            errno()
        }
    };
    let Some(d) = deadline else { return call(libc::FUTEX_LOCK_PI, ptr::null()) };
    let realtime = if d.clock == libc::CLOCK_REALTIME { libc::FUTEX_CLOCK_REALTIME } else { 0 };
    match call(FUTEX_LOCK_PI2 | realtime, &d.at) {
        libc::ENOSYS if realtime != 0 => call(libc::FUTEX_LOCK_PI, &d.at),
        libc::ENOSYS => {
            // FUTEX_LOCK_PI times out on the realtime clock only: the same distance.
            let now = clock_ns(libc::CLOCK_MONOTONIC);
            let at = clock_ns(libc::CLOCK_REALTIME) + timespec_ns(&d.at).saturating_sub(now);
            call(libc::FUTEX_LOCK_PI, &ns_timespec(at))
        }
        r => r,
    }
}

/// `FUTEX_UNLOCK_PI`: the kernel releases the word and hands it to the first waiter.
pub fn futex_unlock_pi(word: *const i32, shared: bool) {
    // SAFETY: the kernel uses the address as a key and checks the caller owns the word.
    unsafe { libc::syscall(libc::SYS_futex, word, libc::FUTEX_UNLOCK_PI | private_flag(shared)) };
}

/// The running kernel's major and minor version (0.0 if unknown).
pub fn kernel_version() -> (u32, u32) {
    // SAFETY: an all-zero utsname is valid for uname to fill.
    let mut uts: libc::utsname = unsafe { core::mem::zeroed() };
    // SAFETY: uname writes one utsname we own.
    if unsafe { libc::syscall(libc::SYS_uname, &mut uts) } != 0 {
        return (0, 0);
    }
    let release = uts.release.iter().map(|&c| c as u8).take_while(|&c| c != 0);
    let mut numbers = [0u32; 2];
    let mut at = 0;
    for c in release {
        match c {
            b'0'..=b'9' => numbers[at] = numbers[at] * 10 + u32::from(c - b'0'),
            b'.' if at == 0 => at = 1,
            _ => break,
        }
    }
    (numbers[0], numbers[1])
}

/// Wakes up to `count` threads sleeping on `word`. Returns how many it woke, or the
/// error: `EINVAL` where threads wait on `word` with `FUTEX_LOCK_PI` (pi.rs relies on it).
pub fn futex_wake(word: *const i32, count: i32, shared: bool) -> Result<i32, c_int> {
    // SAFETY: FUTEX_WAKE only uses the address as a key; it never dereferences it
    // beyond checking it is mapped.
    let r = unsafe { libc::syscall(libc::SYS_futex, word, libc::FUTEX_WAKE | private_flag(shared), count) };
    if r < 0 {
        Err(errno())
    } else {
        Ok(r as i32)
    }
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

// ---------------------------------------------------------------------------------
// Files, by raw system call. libc's `write`, `open` and `close` are cancellation points:
// a thread with a cancellation pending would be cancelled inside a lock call that
// happened to trace. The system calls themselves never are.

/// The result of a raw system call: the value, or the error number.
fn checked(r: c_long) -> Result<usize, c_int> {
    if r < 0 {
        Err(errno())
    } else {
        Ok(r as usize)
    }
}

/// Opens `path` (NUL-terminated) with `flags` (`O_CLOEXEC` is always added).
pub fn open(path: &core::ffi::CStr, flags: c_int, mode: libc::mode_t) -> Result<c_int, c_int> {
    // SAFETY: a NUL-terminated path; openat reads nothing else of ours.
    let r = unsafe {
        libc::syscall(libc::SYS_openat, libc::AT_FDCWD, path.as_ptr(), flags | libc::O_CLOEXEC, mode)
    };
    checked(r).map(|fd| fd as c_int)
}

/// Closes a descriptor the caller knows to be the library's own.
pub fn close(fd: c_int) {
    // SAFETY: close takes a number; the caller vouches that it is ours.
    unsafe { libc::syscall(libc::SYS_close, fd) };
}

/// One `write`; the bytes written, or the error.
pub fn write(fd: c_int, bytes: &[u8]) -> Result<usize, c_int> {
    // SAFETY: writes from a live buffer of the given length.
    checked(unsafe { libc::syscall(libc::SYS_write, fd, bytes.as_ptr(), bytes.len()) })
}

/// Reads at `offset` without moving the file position.
pub fn pread(fd: c_int, buf: &mut [u8], offset: u64) -> Result<usize, c_int> {
    // SAFETY: reads into a live buffer of the given length.
    checked(unsafe { libc::syscall(libc::SYS_pread64, fd, buf.as_mut_ptr(), buf.len(), offset) })
}

pub fn ftruncate(fd: c_int, len: u64) -> Result<(), c_int> {
    // SAFETY: ftruncate takes numbers only.
    checked(unsafe { libc::syscall(libc::SYS_ftruncate, fd, len) }).map(drop)
}

/// What identifies an open file: its device and inode, and its size.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

/// Takes (`lock`) or gives back this process's write lock on the whole file behind `fd`
/// (a POSIX record lock: it holds other processes off, goes with the process, and needs
/// `fd` open for writing). Never waits: `EAGAIN` or `EACCES` if another process holds
/// the lock.
pub fn lock_file(fd: c_int, lock: bool) -> Result<(), c_int> {
    // SAFETY: an all-zero `flock` is valid (from offset 0 to the end of the file).
    let mut range: libc::flock = unsafe { core::mem::zeroed() };
    range.l_type = (if lock { libc::F_WRLCK } else { libc::F_UNLCK }) as libc::c_short;
    range.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: fcntl F_SETLK reads one `flock` we own.
    checked(unsafe { libc::syscall(libc::SYS_fcntl, fd, libc::F_SETLK, &range) }).map(drop)
}

/// Sleeps for `ns` nanoseconds (less if a signal comes).
pub fn sleep_ns(ns: u64) {
    let time =
        libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as _ };
    // SAFETY: nanosleep reads one `timespec` we own; no remainder is asked for.
    unsafe { libc::syscall(libc::SYS_nanosleep, &time, core::ptr::null_mut::<libc::timespec>()) };
}

/// The identity and size of the file behind `fd`.
pub fn fstat(fd: c_int) -> Result<(FileId, u64), c_int> {
    let st = stat_of(fd)?;
    Ok((FileId { dev: st.st_dev, ino: st.st_ino }, st.st_size as u64))
}

/// Everything `fstat` says of the file behind `fd`.
pub fn stat_of(fd: c_int) -> Result<libc::stat, c_int> {
    // SAFETY: an all-zero `stat` is valid; fstat fills it in.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fstat writes one `stat` we own.
    checked(unsafe { libc::syscall(libc::SYS_fstat, fd, &mut st) })?;
    Ok(st)
}

/// The magic number of the file system that holds the file behind `fd`.
pub fn file_system_of(fd: c_int) -> Result<i64, c_int> {
    // SAFETY: an all-zero `statfs` is valid; fstatfs fills it in.
    let mut st: libc::statfs = unsafe { core::mem::zeroed() };
    // SAFETY: fstatfs writes one `statfs` we own.
    checked(unsafe { libc::syscall(libc::SYS_fstatfs, fd, &mut st) })?;
    Ok(st.f_type as i64)
}

/// A duplicate of `fd` numbered `lowest` or above (close-on-exec), or `fd` itself when
/// there is no such number free.
pub fn dup_at_least(fd: c_int, lowest: c_int) -> c_int {
    // SAFETY: fcntl with F_DUPFD_CLOEXEC takes numbers only.
    match checked(unsafe { libc::syscall(libc::SYS_fcntl, fd, libc::F_DUPFD_CLOEXEC, lowest) }) {
        Ok(high) => high as c_int,
        Err(_) => fd,
    }
}

/// Writes `bytes` to standard error, whole or not at all; never allocates. A pipe whose
/// reader is gone costs the line, not the program (see [`write_holding_sigpipe`]).
pub fn write_stderr(bytes: &[u8]) {
    let _ = write_fully(2, bytes, write_holding_sigpipe);
}

/// Writes all of `bytes` with `write_once`, retrying on `EINTR` and short writes.
#[inline(always)]
pub fn write_fully(
    fd: c_int,
    bytes: &[u8],
    write_once: impl Fn(c_int, &[u8]) -> Result<usize, c_int>,
) -> Result<(), c_int> {
    let mut rest = bytes;
    while !rest.is_empty() {
        match write_once(fd, rest) {
            Ok(0) => return Err(libc::EIO),
            Ok(n) => rest = &rest[n..],
            Err(libc::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One `write` to a pipe or FIFO, with `SIGPIPE` held back: when the reader has gone the
/// write fails with `EPIPE`, and the signal the kernel raises for it is taken back, so it
/// neither ends the program nor reaches its handler. The program's signal mask and
/// dispositions are as they were afterwards, and a `SIGPIPE` of its own that was pending
/// before stays pending.
#[inline(always)]
pub fn write_holding_sigpipe(fd: c_int, bytes: &[u8]) -> Result<usize, c_int> {
    let sigpipe: SigSet = 1 << (libc::SIGPIPE - 1);
    let mut old: SigSet = 0;
    // SAFETY: both sets are live 8-byte values, the size the kernel expects.
    unsafe { libc::syscall(libc::SYS_rt_sigprocmask, libc::SIG_BLOCK, &sigpipe, &mut old, 8usize) };
    // A SIGPIPE can be pending before the write only if the program blocks it (else it
    // would have been delivered): only then can one be the program's own.
    let own_pending = old & sigpipe != 0 && pending_signals() & sigpipe != 0;
    let result = write(fd, bytes);
    if result == Err(libc::EPIPE) && !own_pending {
        let zero = timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: waits for nothing (a zero timeout) on a live 8-byte set; takes the
        // pending SIGPIPE our write raised, if any.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigtimedwait,
                &sigpipe,
                ptr::null_mut::<libc::siginfo_t>(),
                &zero,
                8usize,
            )
        };
    }
    set_signal_mask(old);
    result
}

/// One `send` on a socket that never blocks and never raises `SIGPIPE`.
pub fn send_nowait(fd: c_int, bytes: &[u8]) -> Result<usize, c_int> {
    // SAFETY: sends from a live buffer of the given length; no address.
    checked(unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd,
            bytes.as_ptr(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            ptr::null::<libc::sockaddr>(),
            0usize,
        )
    })
}

/// True in a secure-execution process (setuid, setgid, or raised capabilities): the
/// environment then comes from a less privileged user, as `AT_SECURE` tells.
pub fn secure_execution() -> bool {
    // SAFETY: getauxval reads the auxiliary vector the kernel gave the process.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

// ---------------------------------------------------------------------------------
// Signal masks, by raw system call: glibc's wrappers refuse to block the signals it
// uses itself (cancellation, setxid), which the handoff wait must hold back too.

/// The kernel's signal set (64 signals on Linux).
pub type SigSet = u64;

/// Blocks every signal that can be blocked; returns the mask that was in force.
pub fn block_all_signals() -> SigSet {
    let all: SigSet = !0;
    let mut old: SigSet = 0;
    // SAFETY: both sets are live 8-byte values, the size the kernel expects.
    unsafe { libc::syscall(libc::SYS_rt_sigprocmask, libc::SIG_SETMASK, &all, &mut old, 8usize) };
    old
}

pub fn set_signal_mask(mask: SigSet) {
    // SAFETY: as above.
    unsafe {
        libc::syscall(libc::SYS_rt_sigprocmask, libc::SIG_SETMASK, &mask, ptr::null_mut::<SigSet>(), 8usize)
    };
}

/// Signals pending for the calling thread (or its process).
pub fn pending_signals() -> SigSet {
    let mut set: SigSet = 0;
    // SAFETY: writes one 8-byte set.
    unsafe { libc::syscall(libc::SYS_rt_sigpending, &mut set, 8usize) };
    set
}
