//! The per-mutex side table: what does not fit in a mutex's 40 bytes.
//!
//! A fixed array of slots, mapped once at load time (`SPINMUTEX_STATS_SLOTS`, never
//! grown, never `malloc`ed), keyed by the mutex's address with open addressing. A slot is
//! claimed with one compare-and-swap and never given back, so lookups take no lock. When
//! no slot is free within a short probe, the event is counted as overflow and only the
//! totals see it. Counters that only the lock's owner updates are plain load/store
//! pairs; the others are atomic adds. `init` and `destroy` zero a mutex's counters; a
//! child after `fork` starts with an empty table.

use core::ptr;
use core::sync::atomic::Ordering::{AcqRel, Relaxed};
use core::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, AtomicUsize};

use spinmutex_names::{self as names, Stats};

use crate::config::{self, Strategy};
use crate::mutex::kind;

/// Call-site frames kept per mutex: the caller of the lock function and three above it.
pub const FRAMES: usize = 4;
const PROBES: usize = 32;

/// What the table knows of one mutex (or, for the totals, of all of them).
#[repr(C, align(64))]
pub struct Slot {
    pub key: AtomicUsize,
    pub kind: AtomicI32,
    pub last_owner: AtomicI32,
    pub acquisitions: AtomicU64,
    pub owner_changes: AtomicU64,
    pub contended: AtomicU64,
    pub spins: AtomicU64,
    pub sleeps: AtomicU64,
    pub handoffs: AtomicU64,
    pub timeouts: AtomicU64,
    pub wait_total_ns: AtomicU64,
    pub wait_max_ns: AtomicU64,
    pub hold_total_ns: AtomicU64,
    pub hold_max_ns: AtomicU64,
    /// When the current owner took the lock (0: unknown, e.g. relocked by a condvar).
    pub locked_at_ns: AtomicU64,
    pub callsite: [AtomicUsize; FRAMES],
}

impl Slot {
    const fn new() -> Self {
        Slot {
            key: AtomicUsize::new(0),
            kind: AtomicI32::new(0),
            last_owner: AtomicI32::new(0),
            acquisitions: AtomicU64::new(0),
            owner_changes: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            spins: AtomicU64::new(0),
            sleeps: AtomicU64::new(0),
            handoffs: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            wait_total_ns: AtomicU64::new(0),
            wait_max_ns: AtomicU64::new(0),
            hold_total_ns: AtomicU64::new(0),
            hold_max_ns: AtomicU64::new(0),
            locked_at_ns: AtomicU64::new(0),
            callsite: [const { AtomicUsize::new(0) }; FRAMES],
        }
    }

    /// Zeroes everything but the key.
    fn clear(&self) {
        for counter in [
            &self.acquisitions,
            &self.owner_changes,
            &self.contended,
            &self.spins,
            &self.sleeps,
            &self.handoffs,
            &self.timeouts,
            &self.wait_total_ns,
            &self.wait_max_ns,
            &self.hold_total_ns,
            &self.hold_max_ns,
            &self.locked_at_ns,
        ] {
            counter.store(0, Relaxed);
        }
        self.last_owner.store(0, Relaxed);
        for frame in &self.callsite {
            frame.store(0, Relaxed);
        }
    }
}

static SLOTS: AtomicPtr<Slot> = AtomicPtr::new(ptr::null_mut());
static LEN: AtomicUsize = AtomicUsize::new(0);
/// Events that found no slot.
pub static OVERFLOW: AtomicU64 = AtomicU64::new(0);
/// Totals for the mutexes served by the strategy, and for those forwarded to glibc.
pub static TOTALS: [Slot; 2] = [Slot::new(), Slot::new()];
pub const SERVED: usize = 0;
pub const FORWARDED: usize = 1;

/// Reads SPINMUTEX_STATS and maps the table. False if statistics are off.
pub fn init() -> bool {
    if config::read(&names::STATS, names::parse_stats, Stats::Off, true) == Stats::Off {
        return false;
    }
    let slots = config::read(&names::STATS_SLOTS, names::parse_stats_slots, names::DEFAULT_STATS_SLOTS, true);
    let bytes = slots * core::mem::size_of::<Slot>();
    // SAFETY: a fresh private anonymous mapping; zeroed memory is a valid array of
    // empty slots (all-zero atomics).
    let mem = unsafe {
        libc::mmap(
            ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if mem == libc::MAP_FAILED {
        return false;
    }
    LEN.store(slots, Relaxed);
    SLOTS.store(mem.cast(), Relaxed);
    callsite::init();
    true
}

/// Every slot (claimed or not).
pub fn slots() -> &'static [Slot] {
    let base = SLOTS.load(Relaxed);
    if base.is_null() {
        return &[];
    }
    // SAFETY: `base` maps LEN slots for the life of the process.
    unsafe { core::slice::from_raw_parts(base, LEN.load(Relaxed)) }
}

/// The slot of the mutex at `addr`, claimed on first use.
fn slot(addr: usize) -> Option<&'static Slot> {
    find(addr, true)
}

fn find(addr: usize, claim: bool) -> Option<&'static Slot> {
    let slots = slots();
    if slots.is_empty() {
        return None;
    }
    let start = (addr >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) % slots.len();
    for i in 0..PROBES.min(slots.len()) {
        let slot = &slots[(start + i) % slots.len()];
        match slot.key.load(Relaxed) {
            k if k == addr => return Some(slot),
            0 if claim => match slot.key.compare_exchange(0, addr, AcqRel, Relaxed) {
                Ok(_) => return Some(slot),
                Err(k) if k == addr => return Some(slot),
                Err(_) => {}
            },
            _ => {}
        }
    }
    if claim {
        OVERFLOW.fetch_add(1, Relaxed);
    }
    None
}

fn bucket(kind: i32) -> usize {
    if kind & !kind::SERVED != 0 || config::strategy() == Strategy::Glibc {
        FORWARDED
    } else {
        SERVED
    }
}

fn add_max(max: &AtomicU64, value: u64) {
    max.fetch_max(value, Relaxed);
}

/// Owner-only counters need no atomic read-modify-write.
fn bump(counter: &AtomicU64, by: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(by), Relaxed);
}

pub fn reset(addr: usize) {
    if let Some(slot) = find(addr, false) {
        slot.clear();
    }
}

pub fn locked(addr: usize, kind: i32, tid: i32, now_ns: u64) {
    let totals = &TOTALS[bucket(kind)];
    totals.acquisitions.fetch_add(1, Relaxed);
    let Some(slot) = slot(addr) else { return };
    slot.kind.store(kind, Relaxed);
    bump(&slot.acquisitions, 1);
    if slot.last_owner.load(Relaxed) != tid {
        slot.last_owner.store(tid, Relaxed);
        bump(&slot.owner_changes, 1);
        totals.owner_changes.fetch_add(1, Relaxed);
    }
    slot.locked_at_ns.store(now_ns, Relaxed);
}

pub fn unlocking(addr: usize, now_ns: u64) {
    let Some(slot) = find(addr, false) else { return };
    let since = slot.locked_at_ns.swap(0, Relaxed);
    if since == 0 {
        return;
    }
    let held = now_ns.saturating_sub(since);
    bump(&slot.hold_total_ns, held);
    add_max(&slot.hold_max_ns, held);
    let totals = &TOTALS[bucket(slot.kind.load(Relaxed))];
    totals.hold_total_ns.fetch_add(held, Relaxed);
    add_max(&totals.hold_max_ns, held);
}

/// A contended acquisition; called by the new owner before `locked`.
pub fn contended(addr: usize, spins: u32, sleeps: u32, handoff: bool, wait_ns: u64) {
    // SAFETY: reading the kind of a mutex the caller now owns.
    let kind = unsafe { crate::mutex::RawMutex::from_ptr(addr as *mut libc::pthread_mutex_t) }.kind();
    let totals = &TOTALS[bucket(kind)];
    let slot = slot(addr);
    for s in [Some(totals), slot].into_iter().flatten() {
        s.contended.fetch_add(1, Relaxed);
        s.spins.fetch_add(u64::from(spins), Relaxed);
        s.sleeps.fetch_add(u64::from(sleeps), Relaxed);
        s.handoffs.fetch_add(u64::from(handoff), Relaxed);
        s.wait_total_ns.fetch_add(wait_ns, Relaxed);
        add_max(&s.wait_max_ns, wait_ns);
    }
    if let Some(slot) = slot {
        if slot.callsite[0].load(Relaxed) == 0 {
            callsite::capture(&slot.callsite);
        }
    }
}

pub fn timed_out(addr: usize) {
    if let Some(slot) = slot(addr) {
        slot.timeouts.fetch_add(1, Relaxed);
    }
    TOTALS[SERVED].timeouts.fetch_add(1, Relaxed);
}

/// The child of a `fork` reports on its own life only.
pub fn after_fork_in_child() {
    let slots = slots();
    if !slots.is_empty() {
        // SAFETY: MADV_DONTNEED on our private anonymous mapping makes it read back as
        // zeros, i.e. empty slots.
        unsafe {
            libc::madvise(
                slots.as_ptr() as *mut libc::c_void,
                core::mem::size_of_val(slots),
                libc::MADV_DONTNEED,
            )
        };
    }
    for totals in &TOTALS {
        totals.clear();
    }
    OVERFLOW.store(0, Relaxed);
}

/// Capturing the first contended call site: a backtrace with this library's own frames
/// removed.
mod callsite {
    use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    /// This library's address range, found at load time.
    static OURS: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

    pub fn init() {
        let mut frames = [core::ptr::null_mut(); 2];
        // SAFETY: glibc's backtrace writes at most 2 entries; the first call loads the
        // unwinder (which allocates), so it happens here and not on a lock path.
        unsafe { libc::backtrace(frames.as_mut_ptr(), 2) };
        // SAFETY: dl_iterate_phdr calls `find_ours` with valid program headers.
        unsafe { libc::dl_iterate_phdr(Some(find_ours), core::ptr::null_mut()) };
    }

    unsafe extern "C" fn find_ours(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        _data: *mut libc::c_void,
    ) -> i32 {
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

    pub fn capture(out: &[AtomicUsize; super::FRAMES]) {
        let mut frames = [core::ptr::null_mut(); 16];
        // SAFETY: backtrace writes at most 16 entries into our array.
        let n = unsafe { libc::backtrace(frames.as_mut_ptr(), 16) }.max(0) as usize;
        let ours = OURS[0].load(Relaxed)..OURS[1].load(Relaxed);
        let outside = frames[..n].iter().map(|f| *f as usize).skip_while(|f| ours.contains(f));
        for (slot, frame) in out.iter().zip(outside) {
            slot.store(frame, Relaxed);
        }
    }
}
