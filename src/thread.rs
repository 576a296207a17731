//! Who is asking: the caller's kernel thread id (what glibc stores in `__owner`) and the
//! process id, both cached, and corrected in a child after `fork`.
//!
//! The thread id is read on every lock, so its cache is one 32-bit thread-local in the
//! static TLS block, read with a single `%fs`-relative load (the initial-exec model that
//! glibc uses for its own thread id). Rust's `thread_local!` would call
//! `__tls_get_addr` from a shared library, which costs about as much as the lock itself.
//! The static block has room for it even when the library is `dlopen`ed: glibc
//! reserves spare static TLS for such libraries.

use core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicIsize, AtomicU8, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};

/// Defines a 32-bit slot in the static TLS block named `$symbol`, with a reader and a
/// writer that reach it by one `%fs`-relative access (module header). `$read_options`
/// are extra options of the read: `pure` where the compiler may merge reads.
#[cfg(target_arch = "x86_64")]
macro_rules! static_tls_u32 {
    ($symbol:literal, $read:ident, $write:ident, [$($read_options:ident),*]) => {
        core::arch::global_asm!(
            ".pushsection .tbss,\"awT\",@nobits",
            ".p2align 2",
            concat!(".globl ", $symbol),
            concat!(".hidden ", $symbol),
            concat!(".type ", $symbol, ", @object"),
            concat!(".size ", $symbol, ", 4"),
            concat!($symbol, ":"),
            ".zero 4",
            ".popsection",
        );

        #[inline(always)]
        fn $read() -> u32 {
            let value: u32;
            // SAFETY: reads this thread's own 4-byte TLS slot defined above; the GOT
            // entry holds its offset from the thread pointer.
            unsafe {
                core::arch::asm!(
                    concat!("mov {off}, qword ptr [rip + ", $symbol, "@GOTTPOFF]"),
                    "mov {value:e}, dword ptr fs:[{off}]",
                    off = out(reg) _,
                    value = out(reg) value,
                    options(nostack, preserves_flags, readonly $(, $read_options)*),
                );
            }
            value
        }

        #[inline(always)]
        fn $write(value: u32) {
            // SAFETY: writes this thread's own 4-byte TLS slot defined above.
            unsafe {
                core::arch::asm!(
                    concat!("mov {off}, qword ptr [rip + ", $symbol, "@GOTTPOFF]"),
                    "mov dword ptr fs:[{off}], {value:e}",
                    off = out(reg) _,
                    value = in(reg) value,
                    options(nostack, preserves_flags),
                );
            }
        }
    };
}

// This thread's cached id; 0 until first asked. Set once per thread (and after `fork`),
// so its reads may be merged.
#[cfg(target_arch = "x86_64")]
static_tls_u32!("spinmutex_cached_tid", tid_slot, set_tid_slot, [pure]);

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn cached_tid() -> i32 {
    tid_slot() as i32
}

#[cfg(target_arch = "x86_64")]
fn set_cached_tid(tid: i32) {
    set_tid_slot(tid as u32);
}

// This thread's count of contended acquisitions under `auto` (auto/mod.rs samples its
// bookkeeping by it): read and bumped on every contended acquisition, so it lives in
// static TLS like the thread id. Its reads must not be merged across a bump.
#[cfg(target_arch = "x86_64")]
static_tls_u32!("spinmutex_contention_tick", tick_slot, set_tick_slot, []);

/// This thread's contended acquisitions under `auto` so far (wrapping).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn contention_tick() -> u32 {
    tick_slot()
}

/// Counts one more contended acquisition; the new count.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn next_contention_tick() -> u32 {
    let tick = tick_slot().wrapping_add(1);
    set_tick_slot(tick);
    tick
}

#[cfg(not(target_arch = "x86_64"))]
thread_local! {
    static CONTENTION_TICK: core::cell::Cell<u32> = const { core::cell::Cell::new(0) };
}

#[cfg(not(target_arch = "x86_64"))]
pub fn contention_tick() -> u32 {
    CONTENTION_TICK.try_with(|t| t.get()).unwrap_or(0)
}

#[cfg(not(target_arch = "x86_64"))]
pub fn next_contention_tick() -> u32 {
    CONTENTION_TICK
        .try_with(|t| {
            let n = t.get().wrapping_add(1);
            t.set(n);
            n
        })
        .unwrap_or(0)
}

/// A line of output that this thread is formatting (a trace event). It lives in static
/// TLS rather than on the stack: tracing runs inside the program's lock calls, on
/// whatever stack the calling thread has, which may be small.
pub type OutputLine = crate::config::LineBuf<512>;

#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".p2align 3",
    ".globl spinmutex_output_line",
    ".hidden spinmutex_output_line",
    ".type spinmutex_output_line, @object",
    ".size spinmutex_output_line, {size}",
    "spinmutex_output_line:",
    ".zero {size}",
    ".popsection",
    size = const core::mem::size_of::<OutputLine>(),
);

/// This thread's output line, emptied.
///
/// # Safety
/// One user at a time per thread: only inside a hook that `observe::guarded` admitted
/// (a hook never runs inside another on the same thread, signal handlers included), and
/// the reference must not outlive that hook.
#[cfg(target_arch = "x86_64")]
pub unsafe fn output_line() -> &'static mut OutputLine {
    let line: *mut OutputLine;
    // SAFETY: computes the address of this thread's slot defined above: the thread
    // pointer (at fs:0) plus the slot's offset from it (in the GOT).
    unsafe {
        core::arch::asm!(
            "mov {line}, qword ptr [rip + spinmutex_output_line@GOTTPOFF]",
            "add {line}, qword ptr fs:[0]",
            line = out(reg) line,
            options(nostack, readonly, pure),
        );
    }
    // SAFETY: the slot is zero-initialised per thread, which is an empty line (a zero
    // length), properly aligned; exclusive use is the caller's promise.
    let line = unsafe { &mut *line };
    line.clear();
    line
}

#[cfg(not(target_arch = "x86_64"))]
thread_local! {
    static TID: core::cell::Cell<i32> = const { core::cell::Cell::new(0) };
    static OUTPUT_LINE: core::cell::UnsafeCell<OutputLine> = const { core::cell::UnsafeCell::new(OutputLine::new()) };
}

/// As above, through `thread_local!` where the static-TLS slot is not written out.
///
/// # Safety
/// As above.
#[cfg(not(target_arch = "x86_64"))]
pub unsafe fn output_line() -> &'static mut OutputLine {
    // SAFETY: as above; the thread's own slot lives as long as the thread.
    let line = OUTPUT_LINE.with(|l| unsafe { &mut *l.get() });
    line.clear();
    line
}

#[cfg(not(target_arch = "x86_64"))]
fn cached_tid() -> i32 {
    TID.try_with(|t| t.get()).unwrap_or(0)
}

#[cfg(not(target_arch = "x86_64"))]
fn set_cached_tid(tid: i32) {
    let _ = TID.try_with(|t| t.set(tid));
}

static PID: AtomicI32 = AtomicI32::new(0);

/// Where, from the thread pointer, glibc keeps the calling thread's id: `struct
/// pthread`'s `tid`, the id glibc itself writes into `__owner`. glibc publishes the
/// offset for libthread_db (`_thread_db_pthread_tid`). 0: unknown (before the
/// constructor, or another libc), and the library's own cache serves instead.
///
/// Reading glibc's copy rather than keeping one keeps `__owner` what glibc would write
/// where a program changes the copy itself: Chromium and Firefox start their sandboxed
/// processes with a raw `clone` (no fork handler runs), correct glibc's cached id in
/// the child, and then check that a recursive mutex they lock names it. With the
/// library's own cache still naming the parent's thread, every sandboxed child failed
/// that check and the browser never rendered.
static GLIBC_TID_OFFSET: AtomicIsize = AtomicIsize::new(0);

/// Whether `tid` is the calling thread's id, without asking the kernel: a thread whose
/// id was never asked for (so false for it) cannot own anything, since every owner's id
/// was asked for when it took the lock. Lets a fast path compare without a call.
#[inline(always)]
pub fn is_current(tid: i32) -> bool {
    let offset = GLIBC_TID_OFFSET.load(Relaxed);
    let me = if offset != 0 { read_tls_i32(offset) } else { cached_tid() };
    me != 0 && me == tid
}

/// The calling thread's id.
#[inline]
pub fn tid() -> i32 {
    let offset = GLIBC_TID_OFFSET.load(Relaxed);
    if offset != 0 {
        return read_tls_i32(offset);
    }
    match cached_tid() {
        0 => first_tid(),
        tid => tid,
    }
}

/// Set once the fork handler that corrects the caches is registered. Until then
/// nothing is cached: a program may fork before this library's constructor runs (from
/// another library's constructor, say), and a child of that fork would keep its
/// parent's ids with nobody to correct them.
static CACHING: AtomicBool = AtomicBool::new(false);

#[cold]
#[inline(never)]
fn first_tid() -> i32 {
    let tid = crate::sys::gettid();
    if CACHING.load(Acquire) {
        set_cached_tid(tid);
    }
    tid
}

/// The calling process's id.
pub fn pid() -> i32 {
    match PID.load(Relaxed) {
        0 => crate::sys::getpid(),
        pid => pid,
    }
}

extern "C" {
    /// glibc ≥ 2.32: non-zero while the process has never had a second thread.
    static __libc_single_threaded: u8;
}

/// True while this is the process's only thread. Then no other thread can touch a
/// process-private mutex, and its lock word needs no atomic read-modify-write (glibc
/// skips them too).
#[inline(always)]
pub fn single_threaded() -> bool {
    // SAFETY: a byte glibc exports for exactly this purpose; read as an atomic because
    // pthread_create writes it.
    let flag = unsafe { &*(core::ptr::addr_of!(__libc_single_threaded) as *const AtomicU8) };
    flag.load(Relaxed) != 0
}

/// In a child after `fork`: the id its one thread had in the parent (0 elsewhere). A
/// lock word that names its owner (the `kernel` strategy's) still names that id for the
/// mutexes the thread held when it forked.
static TID_BEFORE_FORK: AtomicI32 = AtomicI32::new(0);

/// The forking thread's id, from just before the `fork`.
static FORKING_TID: AtomicI32 = AtomicI32::new(0);

pub fn tid_before_fork() -> i32 {
    TID_BEFORE_FORK.load(Relaxed)
}

/// Before `fork` (or `_Fork`), in the forking thread.
pub extern "C" fn before_fork() {
    FORKING_TID.store(tid(), Relaxed);
}

/// In a child after `fork` (or `_Fork`): the one thread left has a new id, and so does
/// the process.
pub extern "C" fn after_fork_in_child() {
    TID_BEFORE_FORK.store(FORKING_TID.load(Relaxed), Relaxed);
    set_cached_tid(crate::sys::gettid());
    PID.store(crate::sys::getpid(), Relaxed);
    crate::auto::after_fork_in_child();
    crate::observe::after_fork_in_child();
}

/// Where, from the thread pointer, this thread's `rseq` area keeps the CPU it runs on
/// (glibc 2.35+ registers one for every thread and exports its offset as
/// `__rseq_offset`; `cpu_id` is its second field). 0: unknown.
static CPU_ID_OFFSET: AtomicIsize = AtomicIsize::new(0);

/// The CPU the calling thread runs on now, as the kernel keeps it in `rseq` (no system
/// call); None where glibc registered no `rseq` area (or before the constructor).
#[inline(always)]
pub fn cpu() -> Option<u32> {
    let offset = CPU_ID_OFFSET.load(Relaxed);
    if offset == 0 {
        return None;
    }
    let id = read_tls_i32(offset);
    (id >= 0).then_some(id as u32)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_tls_i32(offset: isize) -> i32 {
    let value: i32;
    // SAFETY: reads 4 bytes of this thread's own thread control block or TLS block, at
    // an offset glibc published (its `rseq` area, its `struct pthread`'s thread id),
    // which live as long as the thread.
    unsafe {
        core::arch::asm!(
            "mov {value:e}, dword ptr fs:[{offset}]",
            offset = in(reg) offset,
            value = out(reg) value,
            options(nostack, preserves_flags, readonly),
        );
    }
    value
}

#[cfg(not(target_arch = "x86_64"))]
fn read_tls_i32(_offset: isize) -> i32 {
    -1
}

/// Finds glibc's `rseq` area: `__rseq_offset` is a glibc 2.35 symbol, looked up rather
/// than linked so that the library still loads on older glibc.
fn find_rseq() {
    // SAFETY: dlsym with a NUL-terminated name only looks the symbol up.
    let (offset, size) = unsafe {
        (
            libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()),
            libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()),
        )
    };
    if offset.is_null() || size.is_null() || !cfg!(target_arch = "x86_64") {
        return;
    }
    // SAFETY: glibc's `ptrdiff_t __rseq_offset` and `unsigned int __rseq_size`.
    let (offset, size) = unsafe { (*(offset as *const isize), *(size as *const u32)) };
    if size >= 8 && offset != 0 {
        CPU_ID_OFFSET.store(offset + 4, Relaxed);
    }
}

/// Finds glibc's own copy of the thread id (see [`GLIBC_TID_OFFSET`]), and uses it if
/// it reads the caller's id.
fn find_glibc_tid() {
    // SAFETY: dlsym with a NUL-terminated name only looks the symbol up.
    let descriptor = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_thread_db_pthread_tid".as_ptr()) };
    if descriptor.is_null() || !cfg!(target_arch = "x86_64") {
        return;
    }
    // SAFETY: glibc's libthread_db descriptor: three 32-bit words, the field's size in
    // bits, its count and its offset in `struct pthread`.
    let [bits, count, offset] = unsafe { *(descriptor as *const [u32; 3]) };
    // `struct pthread` starts at the thread pointer on x86-64; it is a few KiB long.
    if bits != 32 || count != 1 || offset == 0 || offset >= 4096 {
        return;
    }
    if read_tls_i32(offset as isize) == crate::sys::gettid() {
        GLIBC_TID_OFFSET.store(offset as isize, Relaxed);
    }
}

/// Registers the fork handlers, then starts caching ids. Called once, by the
/// constructor.
pub fn init() {
    find_rseq();
    find_glibc_tid();
    // SAFETY: registers plain functions that only touch this module's state.
    unsafe { libc::pthread_atfork(Some(before_fork), None, Some(after_fork_in_child)) };
    PID.store(crate::sys::getpid(), Relaxed);
    CACHING.store(true, Release);
}
