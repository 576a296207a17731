//! Where a lock class comes from: the call stack of the `pthread_mutex_init` (or first
//! lock) that made a mutex, captured as return addresses, and told as module + offset
//! so that it can be resolved after the process is gone.
//!
//! Capture uses glibc's `backtrace` (the unwinder; glibc 2.35 and later find each frame's
//! unwind data without a lock) and drops the frames inside this library. Telling an
//! address uses `_dl_find_object` where glibc has it (2.35+: no lock, safe in a signal
//! handler), else `dladdr` (exit reports only). Nothing here allocates.

use core::ffi::{c_char, c_int, c_void, CStr};
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::Relaxed};

/// Frames kept per class: the caller of the mutex function and three above it.
pub const FRAMES: usize = 4;

/// This library's address range, found at load time.
static OURS: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
/// glibc's `_dl_find_object`, if it has one.
static FIND_OBJECT: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());
/// The main program's path (its link map names it ""), NUL-terminated.
static EXE: ExePath = ExePath(core::cell::UnsafeCell::new([0; 512]));

struct ExePath(core::cell::UnsafeCell<[u8; 512]>);
// SAFETY: written once by `init`, before statistics are switched on and so before any
// reader can run; read-only afterwards.
unsafe impl Sync for ExePath {}

pub fn init() {
    let mut frames = [core::ptr::null_mut(); 2];
    // SAFETY: glibc's backtrace writes at most 2 entries; the first call loads the
    // unwinder (which allocates), so it happens here and not on a lock path.
    unsafe { libc::backtrace(frames.as_mut_ptr(), 2) };
    // SAFETY: dl_iterate_phdr calls `find_ours` with valid program headers.
    unsafe { libc::dl_iterate_phdr(Some(find_ours), core::ptr::null_mut()) };
    // SAFETY: dlsym with a NUL-terminated name only looks the symbol up.
    FIND_OBJECT.store(unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_dl_find_object".as_ptr()) }, Relaxed);
    // SAFETY: see `ExePath`; readlink writes at most len - 1 bytes, leaving a NUL.
    unsafe {
        let buf = &mut *EXE.0.get();
        libc::syscall(libc::SYS_readlink, c"/proc/self/exe".as_ptr(), buf.as_mut_ptr(), buf.len() - 1);
    }
}

/// The main program's path, as `init` read it (empty if it could not).
pub fn exe() -> &'static [u8] {
    // SAFETY: see `ExePath`.
    let exe = unsafe { &*EXE.0.get() };
    &exe[..exe.iter().position(|&b| b == 0).unwrap_or(0)]
}

unsafe extern "C" fn find_ours(info: *mut libc::dl_phdr_info, _size: usize, _data: *mut c_void) -> i32 {
    let probe = init as *const () as usize;
    // SAFETY: the loader passes a valid dl_phdr_info and its program headers.
    let info = unsafe { &*info };
    let headers = unsafe { core::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let (mut lo, mut hi) = (usize::MAX, 0);
    for h in headers.iter().filter(|h| h.p_type == libc::PT_LOAD) {
        let start = info.dlpi_addr as usize + h.p_vaddr as usize;
        lo = lo.min(start);
        hi = hi.max(start + h.p_memsz as usize);
    }
    if (lo..hi).contains(&probe) {
        OURS[0].store(lo, Relaxed);
        OURS[1].store(hi, Relaxed);
        return 1;
    }
    0
}

/// The caller's stack outside this library, innermost first; unused entries are 0.
pub fn capture() -> [usize; FRAMES] {
    outside::<12, FRAMES>()
}

/// The first `N` frames outside this library, of the innermost `RAW` (ours included:
/// the unwinding costs per frame); unused entries are 0.
pub fn outside<const RAW: usize, const N: usize>() -> [usize; N] {
    let mut raw = [core::ptr::null_mut(); RAW];
    // SAFETY: backtrace writes at most RAW entries into our array.
    let n = unsafe { libc::backtrace(raw.as_mut_ptr(), RAW as c_int) }.max(0) as usize;
    let ours = OURS[0].load(Relaxed)..OURS[1].load(Relaxed);
    let mut frames = [0; N];
    let outside = raw[..n].iter().map(|f| *f as usize).skip_while(|f| ours.contains(f));
    for (slot, frame) in frames.iter_mut().zip(outside) {
        *slot = frame;
    }
    frames
}

/// What a frame stands for, as a number for a class's key: its module's path and its
/// offset there, hashed. An address alone is not enough: a module unloaded with
/// `dlclose` leaves its addresses to the next module mapped there, whose locks would
/// then share the first one's classes. (The same file loaded again, wherever it lands,
/// gets its classes back, since its call sites are the same code.) Where glibc has no
/// `_dl_find_object` (before 2.35) the address stands for itself: `dladdr`, the other
/// way to learn the module, takes the loader's lock, which a lock path must not.
pub fn identity(pc: usize) -> u64 {
    // A frame of the calling thread's stack lies in a loaded module.
    let Some(map) = link_map_of(pc) else { return pc as u64 };
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    if !map.l_name.is_null() {
        // SAFETY: a NUL-terminated name owned by the loader (see above).
        for &b in unsafe { CStr::from_ptr(map.l_name) }.to_bytes() {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    (hash ^ pc.wrapping_sub(map.l_addr) as u64).wrapping_mul(0x100_0000_01b3)
}

/// The link map of the module `pc` lies in, by `_dl_find_object`; None where glibc lacks
/// it or no module holds `pc`. Valid while that module stays loaded. Inlined: the record
/// it fills is on the stack of a signal handler's report only once.
#[inline(always)]
fn link_map_of(pc: usize) -> Option<&'static LinkMap> {
    let find = FIND_OBJECT.load(Relaxed);
    if find.is_null() {
        return None;
    }
    // SAFETY: `_dl_find_object(void *, struct dl_find_object *)`, glibc 2.35+.
    let find: unsafe extern "C" fn(*mut c_void, *mut DlFindObject) -> c_int =
        unsafe { core::mem::transmute(find) };
    // SAFETY: a zeroed result is valid for the callee to fill.
    let mut found: DlFindObject = unsafe { core::mem::zeroed() };
    // SAFETY: any address may be asked about; the result is ours.
    if unsafe { find(pc as *mut c_void, &mut found) } != 0 || found.link_map.is_null() {
        return None;
    }
    // SAFETY: the loader's link map stays valid while the module is loaded.
    Some(unsafe { &*found.link_map })
}

/// A frame told as the module it lies in and its offset there (the address a tool such
/// as addr2line takes for that file).
pub struct Location {
    /// The module's path as the loader knows it; empty if unknown.
    pub module: &'static [u8],
    pub offset: usize,
    /// The module's load address (to find its build-id).
    pub base: usize,
}

/// `public` part of glibc's `struct link_map`.
#[repr(C)]
struct LinkMap {
    l_addr: usize,
    l_name: *const c_char,
}

/// glibc's `struct dl_find_object` on x86-64 and aarch64.
#[repr(C)]
struct DlFindObject {
    flags: u64,
    map_start: *mut c_void,
    map_end: *mut c_void,
    link_map: *const LinkMap,
    eh_frame: *mut c_void,
    reserved: [u64; 7],
}

/// Where `pc` (a return address) lies. `signal_safe`: only `_dl_find_object`, never
/// `dladdr` (which takes the loader's lock).
pub fn locate(pc: usize, signal_safe: bool) -> Option<Location> {
    let (base, name) = if !FIND_OBJECT.load(Relaxed).is_null() {
        let map = link_map_of(pc)?;
        (map.l_addr, map.l_name)
    } else if !signal_safe {
        // SAFETY: dladdr fills `info` from the loader's tables.
        let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
        if unsafe { libc::dladdr(pc as *const c_void, &mut info) } == 0 {
            return None;
        }
        (load_bias(info.dli_fbase as usize), info.dli_fname)
    } else {
        return None;
    };
    // SAFETY: module names are NUL-terminated strings owned by the loader, which keeps
    // them while the module is loaded.
    let mut module: &'static [u8] =
        if name.is_null() { b"" } else { unsafe { CStr::from_ptr(name) }.to_bytes() };
    if module.is_empty() {
        module = exe();
    }
    Some(Location { module, offset: pc.wrapping_sub(base), base })
}

/// dladdr gives where a module's first page is mapped; the bias that turns link-time
/// addresses into run-time ones is that less the first segment's page-aligned address,
/// which is 0 for every module built as position-independent and for executables
/// linked at their own address alike, once taken from the program headers.
fn load_bias(mapped: usize) -> usize {
    let mut found = (mapped, 0usize);
    // SAFETY: dl_iterate_phdr passes each module's headers; `found` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(bias_of), (&mut found as *mut (usize, usize)).cast()) };
    found.1
}

unsafe extern "C" fn bias_of(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> i32 {
    // SAFETY: as in `find_ours`; `data` is the pair passed by `load_bias`.
    let (info, found) = unsafe { (&*info, &mut *data.cast::<(usize, usize)>()) };
    let headers = unsafe { core::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let first = headers.iter().filter(|h| h.p_type == libc::PT_LOAD).map(|h| h.p_vaddr as usize).min();
    match first {
        Some(v) if info.dlpi_addr as usize + (v & !0xfff) == found.0 => {
            found.1 = info.dlpi_addr as usize;
            1
        }
        _ => 0,
    }
}

/// The GNU build-id of the module loaded at `base`, as raw bytes (up to 32).
pub fn build_id(base: usize) -> Option<([u8; 32], usize)> {
    let mut found = (base, [0u8; 32], 0usize);
    // SAFETY: as above; `found` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(build_id_of), (&mut found as *mut (usize, [u8; 32], usize)).cast()) };
    (found.2 > 0).then_some((found.1, found.2))
}

unsafe extern "C" fn build_id_of(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> i32 {
    // SAFETY: as above; `data` is the tuple passed by `build_id`.
    let (info, found) = unsafe { (&*info, &mut *data.cast::<(usize, [u8; 32], usize)>()) };
    if info.dlpi_addr as usize != found.0 {
        return 0;
    }
    let headers = unsafe { core::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    for h in headers.iter().filter(|h| h.p_type == libc::PT_NOTE) {
        let start = info.dlpi_addr as usize + h.p_vaddr as usize;
        // SAFETY: a PT_NOTE segment of a loaded module is mapped and readable.
        let notes = unsafe { core::slice::from_raw_parts(start as *const u8, h.p_memsz as usize) };
        let mut at = 0;
        while at + 12 <= notes.len() {
            let word =
                |o: usize| u32::from_ne_bytes([notes[o], notes[o + 1], notes[o + 2], notes[o + 3]]) as usize;
            let (namesz, descsz, kind) = (word(at), word(at + 4), word(at + 8));
            let name_at = at + 12;
            let desc_at = name_at + namesz.next_multiple_of(4);
            let end = desc_at + descsz.next_multiple_of(4);
            if end > notes.len() {
                break;
            }
            if kind == 3 && &notes[name_at..name_at + namesz] == b"GNU\0" {
                let n = descsz.min(32);
                found.1[..n].copy_from_slice(&notes[desc_at..desc_at + n]);
                found.2 = n;
                return 1;
            }
            at = end;
        }
    }
    1
}

/// What `dladdr` says of `pc`: the enclosing exported function and the offset into it.
/// Exit reports only (takes the loader's lock).
pub fn symbol(pc: usize) -> Option<(&'static [u8], usize)> {
    // SAFETY: as in `locate`.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    if unsafe { libc::dladdr(pc as *const c_void, &mut info) } == 0 || info.dli_sname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated name owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_sname) }.to_bytes();
    Some((name, pc.wrapping_sub(info.dli_saddr as usize)))
}
