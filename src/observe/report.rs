//! The statistics report: printed at exit (by a process that locked at least one mutex
//! or rwlock), also when a signal that ends a program on request (SIGINT, SIGTERM,
//! SIGHUP, SIGPIPE) ends it, and on demand when the process receives
//! SPINMUTEX_STATS_SIGNAL (SIGUSR2 by default). See `signals` for the handlers.
//!
//! One data model, two renderings. The model is built in one pass over the side table:
//! each class's counters are those of its destroyed instances plus those of its live
//! ones; classes are listed hottest first (longest total wait, then most contended, then
//! most acquisitions), each with its hottest live instances; the classes not listed are
//! summed in one "others" row, locks of no known class in one row, and locks that found
//! no room in the table in an "overflow" row, so that the rows always add up to the
//! totals exactly. Mutex and rwlock classes are ranked together; an rwlock's row is the
//! sum of its read and write locks, followed by each mode's own figures. [`Text`] gives
//! mutrace's columns, [`Json`] one JSON object.
//!
//! Call sites are module + offset (resolvable after the process is gone, e.g. by
//! `spinmutex report`), with the exported symbol `dladdr` finds at exit. Nothing is
//! symbolized here and no process is started.
//!
//! Writing goes through a small static buffer (the report lock's) straight to the
//! descriptor by raw `write(2)`, and numbers are formatted by hand: a report may be
//! written inside a signal handler, on whatever stack the interrupted thread has, so it
//! allocates nothing, takes no lock and uses well under 1 KiB of that stack.
//!
//! SPINMUTEX_STATS_FILE is opened once, at load, and kept (see `output`). It is opened
//! by name again only if the program closed that descriptor (a daemon closes them all),
//! and then used only if it is the very file opened at load: a path replaced meanwhile
//! (by a symbolic link, say) changes nothing. (So no `O_NOFOLLOW`: `/dev/stderr` is a
//! link, and a fine place for a report. In a privileged process the setting is ignored
//! altogether, see `config::file_setting`.) A file no report could reach (a directory,
//! `/dev/full`, a `/proc` or `/sys` file, a FIFO with no reader) is refused at load with
//! one line on standard error, and reports go there instead. A report the file refuses at exit (a full disk, a reader
//! gone) goes to standard error too, after a line that says why.

use core::cmp::Reverse;
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicBool, AtomicUsize};
use std::ffi::CString;
use std::sync::OnceLock;

use spinmutex_names::{self as names, Stats};

use super::callsite;
use super::output::{self, OwnFd, Target};
use super::table::{self, Class, Figures, Instance, Lock, Split, Sum};
use crate::mutex::kind;
use crate::{config, signals};

/// Live instances listed under each class.
const INSTANCES_PER_CLASS: usize = 3;

static JSON: AtomicBool = AtomicBool::new(false);
static TOP: AtomicUsize = AtomicUsize::new(names::DEFAULT_STATS_TOP);
/// Held while a report is written (its scratch sums are shared).
static WRITING: AtomicBool = AtomicBool::new(false);
/// Set once the exit report is being written.
static EXITED: AtomicBool = AtomicBool::new(false);
/// SPINMUTEX_STATS_FILE, opened at load.
static FILE: OwnFd = OwnFd::new();
/// Its path, once it was opened at load.
static PATH: OnceLock<CString> = OnceLock::new();

/// Reads the report settings and installs the signal handler.
pub fn init() {
    let stats = config::read(&names::STATS, names::parse_stats, Stats::Off, false);
    JSON.store(stats == Stats::Json, Relaxed);
    TOP.store(
        config::read(&names::STATS_TOP, names::parse_stats_top, names::DEFAULT_STATS_TOP, true),
        Relaxed,
    );
    match config::file_setting(&names::STATS_FILE) {
        None => output::keep_stderr(),
        Some(value) => match open_file(value) {
            Ok(path) => {
                let _ = PATH.set(path);
            }
            // A file no report can reach is said now, not found empty after exit.
            Err(why) => {
                config::note(format_args!(
                    "{}={} cannot take the report ({why}); reports go to standard error",
                    names::STATS_FILE.name,
                    config::Shown(value)
                ));
                output::keep_stderr();
            }
        },
    }
    let signal =
        config::read(&names::STATS_SIGNAL, names::parse_stats_signal, names::DEFAULT_STATS_SIGNAL, true);
    // Each handler holds the others off, so that no report is cut short by a second
    // signal, nor an ending one started in the middle of another report.
    let mut blocked = [signal; signals::ENDINGS.len() + 1];
    blocked[1..].copy_from_slice(&signals::ENDINGS);
    if signal != 0 {
        signals::take_on_demand(signal, on_demand, &blocked);
    }
    signals::take_endings(on_ending, &blocked);
}

/// Opens SPINMUTEX_STATS_FILE's `value` for good, or says why no report could reach it.
fn open_file(value: &[u8]) -> Result<CString, &'static str> {
    let path = names::parse_stats_file(value).ok().and_then(|p| CString::new(p).ok()).ok_or("not a path")?;
    let fd = output::open_append(&path).map_err(|e| match e {
        libc::ENOENT => "no such directory",
        libc::EISDIR => "a directory",
        libc::ENXIO => "a FIFO with no reader, or a socket",
        libc::EACCES | libc::EPERM => "permission denied",
        libc::EROFS => "a read-only file system",
        _ => "it cannot be opened for writing",
    })?;
    let refused = refuse(fd);
    if refused.is_some() {
        crate::sys::close(fd);
    }
    match refused {
        Some(why) => Err(why),
        None => FILE.adopt(fd).map(|_| path).ok_or("it cannot be kept open"),
    }
}

/// Why an open file cannot take a report, if it cannot: `/dev/full` fails every write,
/// and `/proc` and `/sys` files are settings or views of the kernel, which take no
/// report (and fail or change something if written).
fn refuse(fd: i32) -> Option<&'static str> {
    const PROC_SUPER_MAGIC: i64 = 0x9fa0;
    const SYSFS_MAGIC: i64 = 0x6265_6572;
    let st = crate::sys::stat_of(fd).ok()?;
    let (major, minor) = (libc::major(st.st_rdev), libc::minor(st.st_rdev));
    if st.st_mode & libc::S_IFMT == libc::S_IFCHR && (major, minor) == (1, 7) {
        return Some("/dev/full, where every write fails");
    }
    match crate::sys::file_system_of(fd) {
        Ok(PROC_SUPER_MAGIC | SYSFS_MAGIC) => Some("a /proc or /sys file"),
        _ => None,
    }
}

/// SPINMUTEX_STATS_SIGNAL: a report now.
extern "C" fn on_demand(_signal: i32) {
    // SAFETY: errno is saved and restored around the report's system calls.
    let saved = unsafe { *libc::__errno_location() };
    print(When::OnDemand);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
}

/// A signal that ends the process ([`signals::ENDINGS`]), at its default action as far
/// as the program knows: the report the process would have written at exit, then the
/// signal ends it as the default action would have.
extern "C" fn on_ending(signal: i32) {
    print(When::Ending);
    signals::end_by(signal);
}

/// When a report is written: which lookups it may use, and whether it is written when
/// nothing was locked.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// At exit: `dladdr` may name the functions of call sites.
    AtExit,
    /// Asked for by SPINMUTEX_STATS_SIGNAL: in a signal handler, where only
    /// async-signal-safe lookups are allowed. Always written.
    OnDemand,
    /// A signal ends the process: the exit report, written by a signal handler.
    Ending,
}

impl When {
    fn in_signal_handler(self) -> bool {
        self != When::AtExit
    }
}

/// Writes the report to SPINMUTEX_STATS_FILE or the standard error the program started
/// with. At exit, or as a signal ends the process, only if the process locked at least
/// one mutex or rwlock, and only once.
pub fn print(when: When) {
    if when == When::Ending && EXITED.load(Relaxed) {
        return; // a signal after the exit report: the process has said all there is
    }
    if WRITING.swap(true, Acquire) {
        return; // another report is being written (a signal during the exit report)
    }
    if when == When::AtExit {
        EXITED.store(true, Relaxed);
    }
    // SAFETY: the report lock is ours until the end of this function.
    let model = unsafe { &mut *MODEL.0.get() };
    model.build();
    if when == When::OnDemand || model.totals.acquisitions > 0 {
        write_where_it_can(model, when);
    }
    WRITING.store(false, Release);
}

/// Writes the report to the statistics file, or to standard error when there is none,
/// when the program closed its descriptor and the path no longer leads to the same file,
/// or when it refused the report; in those last two cases after a line that says so.
#[inline(never)]
fn write_where_it_can(model: &Model, when: When) {
    let Some(path) = PATH.get() else {
        if let Some(target) = output::stderr() {
            let _ = write_report(target, model, when);
        }
        return;
    };
    let why = match FILE.reopen_same(path) {
        None => "the program closed its descriptor, and its path leads elsewhere now",
        Some(target) => match write_report_alone(target, model, when) {
            Ok(()) => return,
            Err(libc::ENOSPC | libc::EDQUOT | libc::EFBIG) => "the file system is full",
            Err(libc::EPIPE) => "its reader went away",
            Err(libc::EAGAIN) => "its pipe is full",
            Err(_) => "a write failed",
        },
    };
    report_on_stderr_instead(why, model, when);
}

/// Writes the report with the file to itself (see [`output::Exclusive`]).
fn write_report_alone(target: Target, model: &Model, when: When) -> Result<(), i32> {
    let _alone = output::Exclusive::hold(target);
    write_report(target, model, when)
}

/// Says why the report is not in the statistics file, then writes it to standard error.
/// Out of line: its line buffer is not on the (signal handler's) stack while the report
/// is rendered to the file.
#[cold]
#[inline(never)]
fn report_on_stderr_instead(why: &str, model: &Model, when: When) {
    let mut line: config::LineBuf<160> = config::LineBuf::new();
    line.push(b"spinmutex: the statistics file could not take the report (").push(why.as_bytes());
    line.push(b"); here it is\n");
    output::write_stderr(line.end_line());
    if let Some(target) = output::stderr() {
        let _ = write_report(target, model, when);
    }
}

/// Renders the report to `target`; the first write error, if any (the rest of the
/// report is then not written).
#[inline(never)]
fn write_report(target: Target, model: &Model, when: When) -> Result<(), i32> {
    // SAFETY: the report lock (WRITING) is held by our caller.
    let buf = unsafe { &mut *BUFFER.0.get() };
    let mut out = Out { target, buf, len: 0, error: 0 };
    if JSON.load(Relaxed) {
        model.render(&mut Json { out: &mut out, when, first_instance: true });
    } else {
        model.render(&mut Text { out: &mut out, when });
    }
    out.flush();
    match out.error {
        0 => Ok(()),
        e => Err(e),
    }
}

// ---------------------------------------------------------------------------------
// The model.

/// A class's place in the ranking: its counters' rank, then its table index (earlier
/// first, so that the order is total).
type Rank = ((u64, u64, u64), Reverse<usize>);

/// The figures of one report. Per-class sums live in the table's scratch space (see
/// `table::sums`), and the model itself in a static: the report lock makes both ours,
/// and neither takes room on the (perhaps small) stack of an interrupted thread.
struct Model {
    classes_used: usize,
    /// How many of them are classes of rwlocks.
    rwlock_classes: usize,
    created: u64,
    live: u64,
    /// Every class's counters plus the overflow's.
    totals: Sum,
    /// The unlisted classes.
    others: Sum,
    others_count: usize,
    /// Locks of no known class (mutexes and rwlocks together).
    unknown: Sum,
    overflow: Sum,
    listed: usize,
    /// The last listed class's rank: a class is listed if it ranks at or above it.
    cutoff: Option<Rank>,
}

struct ModelCell(core::cell::UnsafeCell<Model>);
// SAFETY: used only by the holder of the report lock (WRITING).
unsafe impl Sync for ModelCell {}

static MODEL: ModelCell = ModelCell(core::cell::UnsafeCell::new(Model {
    classes_used: 0,
    rwlock_classes: 0,
    created: 0,
    live: 0,
    totals: Sum::ZERO,
    others: Sum::ZERO,
    others_count: 0,
    unknown: Sum::ZERO,
    overflow: Sum::ZERO,
    listed: 0,
    cutoff: None,
}));

fn rank_of(figures: &impl Figures, index: usize) -> Rank {
    (figures.rank(), Reverse(index))
}

/// A class's rank: by both modes together.
fn class_rank(split: &Split, index: usize) -> Rank {
    rank_of(&split.total(), index)
}

impl Model {
    /// Out of line: what this takes of the stack is given back before writing starts.
    #[inline(never)]
    fn build(&mut self) {
        let classes = table::classes();
        // SAFETY: the report lock (WRITING) is held by our caller.
        let sums = unsafe { table::sums() };
        for (sum, class) in sums.iter_mut().zip(classes) {
            if class.key.load(Relaxed) != 0 {
                sum.set_to_class(class);
            }
        }
        let m = self;
        // Added up in place (the model is static): no copy of the counters on the stack.
        m.unknown = Sum::ZERO;
        m.unknown.add(&table::UNKNOWN.folded);
        m.unknown.add(&table::UNKNOWN.folded_read);
        for instance in table::instances().iter().filter(|i| live(i)) {
            match instance.class.load(Relaxed) {
                0 | table::UNKNOWN_CLASS => {
                    m.unknown.add(&instance.counters);
                    m.unknown.add(&instance.read);
                }
                n => sums[n as usize - 1].add(instance),
            }
        }
        m.classes_used = 0;
        m.rwlock_classes = 0;
        m.created = table::UNKNOWN.created.load(Relaxed);
        m.live = table::UNKNOWN.live();
        m.totals = Sum::ZERO;
        m.others = Sum::ZERO;
        m.others_count = 0;
        m.overflow = table::OVERFLOW.sum();
        m.listed = 0;
        m.cutoff = None;
        for (i, class) in classes.iter().enumerate().filter(|(_, c)| c.key.load(Relaxed) != 0) {
            m.classes_used += 1;
            m.rwlock_classes += usize::from(class.lock() == Lock::RwLock);
            m.created += class.created.load(Relaxed);
            m.live += class.live();
            m.totals.merge(&sums[i].write);
            m.totals.merge(&sums[i].read);
        }
        m.totals.merge(&m.unknown);
        m.totals.merge(&m.overflow);
        let top = TOP.load(Relaxed);
        for (n, (_, rank)) in ranked(sums, classes).take(top).enumerate() {
            m.listed = n + 1;
            m.cutoff = Some(rank);
        }
        for (i, _) in classes.iter().enumerate().filter(|(_, c)| c.key.load(Relaxed) != 0) {
            if m.cutoff.is_none_or(|cut| class_rank(&sums[i], i) < cut) {
                m.others.merge(&sums[i].write);
                m.others.merge(&sums[i].read);
                m.others_count += 1;
            }
        }
    }

    /// Feeds the report to `r`, rows in order.
    fn render(&self, r: &mut dyn Render) {
        // SAFETY: as in `build`; the sums were filled there and are only read now.
        let sums: &[Split] = unsafe { table::sums() };
        let classes = table::classes();
        r.head(self);
        let mut below = None;
        for n in 0..self.listed {
            let Some((index, rank)) = next_class(sums, classes, below) else { break };
            below = Some(rank);
            let class = &classes[index];
            r.class(n + 1, class, &sums[index]);
            if class.lock() == Lock::RwLock {
                r.modes(&sums[index].read, &sums[index].write);
            }
            hottest_instances(index as u32 + 1, r);
            r.class_end();
        }
        r.tail(self);
    }
}

/// Feeds `r` the hottest live instances of class `class`.
#[inline(never)]
fn hottest_instances(class: u32, r: &mut dyn Render) {
    let mut below = None;
    for _ in 0..INSTANCES_PER_CLASS {
        let Some((instance, rank)) = hottest_instance(class, below) else { break };
        r.instance(instance);
        if instance.lock() == Lock::RwLock {
            r.modes(&instance.read, &instance.counters);
        }
        below = Some(rank);
    }
}

fn live(instance: &Instance) -> bool {
    instance.key.load(Relaxed) > 1
}

/// Claimed classes in rank order (class index, rank), by repeated selection: no list is
/// kept, so this runs in a signal handler's small stack.
fn ranked<'a>(sums: &'a [Split], classes: &'a [Class]) -> impl Iterator<Item = (usize, Rank)> + 'a {
    let mut below: Option<Rank> = None;
    core::iter::from_fn(move || {
        let next = next_class(sums, classes, below)?;
        below = Some(next.1);
        Some(next)
    })
}

/// The claimed class ranked highest below `below`.
#[inline(never)]
fn next_class(sums: &[Split], classes: &[Class], below: Option<Rank>) -> Option<(usize, Rank)> {
    classes
        .iter()
        .enumerate()
        .filter(|(_, c)| c.key.load(Relaxed) != 0)
        .map(|(i, _)| (i, class_rank(&sums[i], i)))
        .filter(|(_, r)| below.is_none_or(|b| *r < b))
        .max_by_key(|(_, r)| *r)
}

/// The live instance of class `class` ranked highest below `below`.
#[inline(never)]
fn hottest_instance(class: u32, below: Option<Rank>) -> Option<(&'static Instance, Rank)> {
    table::instances()
        .iter()
        .enumerate()
        .filter(|(_, i)| live(i) && i.class.load(Relaxed) == class)
        .map(|(n, i)| (i, rank_of(&i.total(), n)))
        .filter(|(_, r)| below.is_none_or(|b| *r < b))
        .max_by_key(|(_, r)| *r)
}

/// A lock's kind in words: a mutex's type, then what else it is (`normal,pshared,pi`);
/// `rwlock`, then its preference if not the default and whether it is shared
/// (`rwlock,prefer-writer-nonrecursive,pshared`).
fn type_name(lock: Lock, k: i32) -> TypeName {
    TypeName(lock, k)
}

struct TypeName(Lock, i32);

impl TypeName {
    fn parts(&self) -> impl Iterator<Item = &'static str> {
        let k = self.1;
        let names: [Option<&'static str>; 5] = match self.0 {
            Lock::Mutex => [
                Some(match k & kind::TYPE_MASK {
                    kind::RECURSIVE => "recursive",
                    kind::ERRORCHECK => "errorcheck",
                    kind::ADAPTIVE => "adaptive",
                    _ => "normal",
                }),
                (k & kind::PSHARED != 0).then_some(",pshared"),
                (k & kind::ROBUST != 0).then_some(",robust"),
                (k & kind::PRIO_INHERIT != 0).then_some(",pi"),
                (k & kind::PRIO_PROTECT != 0).then_some(",pp"),
            ],
            Lock::RwLock => [
                Some("rwlock"),
                (k & 3 == 1).then_some(",prefer-writer"),
                (k & 3 == 2).then_some(",prefer-writer-nonrecursive"),
                (k & table::RWLOCK_PSHARED != 0).then_some(",pshared"),
                None,
            ],
        };
        names.into_iter().flatten()
    }

    fn len(&self) -> usize {
        self.parts().map(str::len).sum()
    }
}

/// Under `auto`, the learning class with `key` (a mutex's address), if any.
fn policy_of(key: usize) -> Option<&'static crate::auto::Class> {
    if !config::row().learns {
        return None;
    }
    crate::auto::find(key)
}

/// Under `auto`, the learning class of the mutexes of `class`, if any.
fn policy_of_class(class: &Class) -> Option<&'static crate::auto::Class> {
    if !config::row().learns || class.origin.load(Relaxed) != table::BY_INIT {
        return None;
    }
    crate::auto::class_made_at(&class.frames.each_ref().map(|f| f.load(Relaxed)))
}

/// How many other classes of the statistics (four frames) share `auto`'s class `of`,
/// which tells classes apart by less (the init call, or a wrapper's call).
fn sharing(of: &crate::auto::Class) -> usize {
    let same = |c: &Class| policy_of_class(c).is_some_and(|p| core::ptr::eq(p, of));
    table::classes().iter().filter(|c| same(c)).count().saturating_sub(1)
}

fn origin_name(class: &Class) -> &'static str {
    match class.origin.load(Relaxed) {
        table::BY_INIT => "init",
        table::BY_FIRST_LOCK => "first lock",
        _ => "unknown",
    }
}

/// The pieces of a report, in the order the model gives them.
trait Render {
    fn head(&mut self, m: &Model);
    fn class(&mut self, rank: usize, class: &Class, sum: &Split);
    fn instance(&mut self, instance: &Instance);
    /// After an rwlock's class or instance: its read and write figures, where the
    /// rendering lists them apart from the row (JSON puts them inside the object).
    fn modes(&mut self, _read: &dyn Figures, _write: &dyn Figures) {}
    fn class_end(&mut self);
    fn tail(&mut self, m: &Model);
}

// ---------------------------------------------------------------------------------
// Text: mutrace's columns.

struct Text<'a> {
    out: &'a mut Out,
    when: When,
}

/// The counter columns' names (a static: the report may run on a small stack).
static HEADER: [&str; 14] = spinmutex_names::STATS_COLUMNS;

/// Widths of the counter columns, after the first.
const COLUMNS: [usize; 14] = [8, 6, 10, 9, 9, 10, 9, 9, 12, 9, 9, 12, 9, 9];

impl Text<'_> {
    fn counters<F: Figures + ?Sized>(&mut self, made: Option<(u64, u64)>, s: &F) {
        let o = &mut *self.out;
        match made {
            Some((created, live)) => {
                o.num(created, COLUMNS[0]).num(live, COLUMNS[1]);
            }
            None => {
                o.pad("-", COLUMNS[0]).pad("-", COLUMNS[1]);
            }
        }
        let (locked, contended, wait, hold) =
            (s.acquisitions(), s.contended(), s.wait_total_ns(), s.hold_total_ns());
        o.num(locked, COLUMNS[2]).num(s.owner_changes(), COLUMNS[3]).num(contended, COLUMNS[4]);
        o.num(s.spins(), COLUMNS[5]).num(s.sleeps(), COLUMNS[6]).num(s.handoffs(), COLUMNS[7]);
        o.ms(wait, COLUMNS[8]).ms(avg(wait, contended), COLUMNS[9]).ms(s.wait_max_ns(), COLUMNS[10]);
        o.ms(hold, COLUMNS[11]).ms(avg(hold, locked), COLUMNS[12]).ms(s.hold_max_ns(), COLUMNS[13]);
    }

    /// `function+0xOFF (module+0xOFF)`, or `module+0xOFF`, or the raw address.
    #[inline(never)]
    fn frame(&mut self, pc: usize) {
        let call = pc.wrapping_sub(1); // a return address points after the call
        if !self.when.in_signal_handler() {
            if let Some((name, offset)) = callsite::symbol(call) {
                self.out.bytes(name).str("+").hex(offset as u64).str(" (");
                self.location(call);
                self.out.str(")");
                return;
            }
        }
        self.location(call);
    }

    /// Under `auto`, the waiting policy `policy` of a class or a statically initialised
    /// mutex: its mode now, the contended acquisitions each mode served, and how many
    /// `others` classes listed share it.
    fn policy(&mut self, policy: Option<&'static crate::auto::Class>, others: usize) {
        let Some(c) = policy else { return };
        let (spin, sleep) = c.served();
        let how = match (c.measured(), c.judged()) {
            (true, _) => ", measured",
            (false, true) => "",
            (false, false) => ", not judged yet",
        };
        self.out.str("  [auto: ").str(c.mode().name()).str(how);
        self.out.str("; contended served spinning ").num(spin, 0).str(", sleeping ").num(sleep, 0);
        match others {
            0 => {}
            n => {
                self.out.str("; one auto class with ").num(n as u64, 0).str(" other class");
                self.out.str(if n == 1 { "" } else { "es" });
            }
        }
        self.out.str("]");
    }

    /// An rwlock's figures per mode, one line each under its row.
    fn mode(&mut self, name: &str, figures: &dyn Figures) {
        self.out.pad("", 5);
        self.counters(None, figures);
        self.out.str("    ").str(name).str("\n");
    }

    fn location(&mut self, call: usize) {
        match callsite::locate(call, self.when.in_signal_handler()) {
            Some(at) => {
                let file = at.module.rsplit(|&b| b == b'/').next().unwrap_or(at.module);
                self.out.bytes(file).str("+").hex(at.offset as u64);
            }
            None => {
                self.out.hex(call as u64);
            }
        }
    }
}

impl Render for Text<'_> {
    fn head(&mut self, m: &Model) {
        let o = &mut *self.out;
        o.str("spinmutex: lock statistics for pid ").num(crate::thread::pid().max(0) as u64, 0);
        if !callsite::exe().is_empty() {
            o.str(" (").bytes(callsite::exe()).str(")");
        }
        o.str(", strategy ").str(config::strategy().name());
        if config::row().serves && !config::rwlocks_served() {
            o.str(" (rwlocks forwarded to glibc)");
        }
        o.str(": ").num(m.classes_used as u64, 0).str(" classes");
        if m.rwlock_classes > 0 {
            o.str(" (").num(m.rwlock_classes as u64, 0).str(" of rwlocks)");
        }
        o.str(", ").num(m.created, 0).str(if m.rwlock_classes > 0 {
            " locks made ("
        } else {
            " mutexes made ("
        });
        o.num(m.live, 0).str(" live); ").num(m.totals.acquisitions, 0).str(" acquisitions, ");
        o.num(m.totals.contended, 0).str(" contended\n");
        o.pad("#", 5);
        for (name, width) in HEADER.iter().zip(COLUMNS) {
            o.pad(name, width);
        }
        o.str("  type                made by\n");
    }

    fn class(&mut self, rank: usize, class: &Class, sum: &Split) {
        self.out.num(rank as u64, 5);
        self.counters(Some((class.created.load(Relaxed), class.live())), &sum.total());
        self.out.str("  ").kind(class.lock(), class.kind.load(Relaxed), 18).str("  ");
        self.out.str(origin_name(class)).str(" at ");
        let frames = class.frames.each_ref().map(|f| f.load(Relaxed));
        match frames[0] {
            0 => {
                self.out.str("-");
            }
            pc => self.frame(pc),
        }
        let policy = policy_of_class(class);
        self.policy(policy, policy.map_or(0, sharing));
        self.out.str("\n");
    }

    fn instance(&mut self, instance: &Instance) {
        let lock = instance.lock();
        self.out.pad("", 5);
        self.counters(None, &instance.total());
        self.out.str("  ").kind(lock, instance.kind.load(Relaxed), 18).str("  ").str(lock.name()).str(" ");
        self.out.hex(instance.key.load(Relaxed) as u64);
        self.policy(policy_of(instance.key.load(Relaxed)), 0);
        self.out.str("\n");
    }

    /// An rwlock's figures per mode, one line each under its row.
    fn modes(&mut self, read: &dyn Figures, write: &dyn Figures) {
        self.mode("read", read);
        self.mode("write", write);
    }

    fn class_end(&mut self) {}

    fn tail(&mut self, m: &Model) {
        if m.others_count > 0 {
            self.out.pad("+", 5);
            self.counters(None, &m.others);
            self.out.str("  ").num(m.others_count as u64, 0).str(" other classes\n");
        }
        if m.unknown != Sum::default() {
            self.out.pad("?", 5);
            self.counters(None, &m.unknown);
            self.out.str("  class table full: locks of unknown class\n");
        }
        let overflowed = table::OVERFLOWED_INSTANCES.load(Relaxed);
        if overflowed > 0 || m.overflow != Sum::default() {
            self.out.pad("!", 5);
            self.counters(None, &m.overflow);
            self.out.str("  side table full: ").num(overflowed, 0).str(" times a lock found no slot\n");
        }
        self.out.pad("=", 5);
        self.counters(Some((m.created, m.live)), &m.totals);
        self.out.str("  totals\n");
        let full = table::OVERFLOWED_INSTANCES.load(Relaxed) + table::OVERFLOWED_CLASSES.load(Relaxed);
        if full > 0 {
            self.out.str("spinmutex: the side table was full; raise SPINMUTEX_STATS_SLOTS (now ");
            self.out.num(table::classes().len() as u64, 0).str(")\n");
        }
        let unmeasured = table::HOLDS_UNMEASURED.load(Relaxed);
        if unmeasured > 0 {
            self.out.str("spinmutex: hold times of ").num(unmeasured, 0);
            self.out.str(" releases could not be measured (unlocked by a thread that did not lock, or too many held at once)\n");
        }
    }
}

fn avg(total: u64, n: u64) -> u64 {
    total.checked_div(n).unwrap_or(0)
}

// ---------------------------------------------------------------------------------
// JSON: one object per report.

struct Json<'a> {
    out: &'a mut Out,
    when: When,
    first_instance: bool,
}

impl Json<'_> {
    fn counters(&mut self, s: &impl Figures) {
        self.counter_set("counters", s);
    }

    /// `"name":{...}`, the counter keys of every set.
    fn counter_set(&mut self, name: &str, s: &impl Figures) {
        let o = &mut *self.out;
        o.str("\"").str(name).str("\":{\"locked\":").num(s.acquisitions(), 0);
        o.str(",\"owner_changes\":").num(s.owner_changes(), 0);
        o.str(",\"contended\":").num(s.contended(), 0);
        o.str(",\"spins\":").num(s.spins(), 0);
        o.str(",\"sleeps\":").num(s.sleeps(), 0);
        o.str(",\"handoffs\":").num(s.handoffs(), 0);
        o.str(",\"timeouts\":").num(s.timeouts(), 0);
        o.str(",\"wait_ns_total\":").num(s.wait_total_ns(), 0);
        o.str(",\"wait_ns_max\":").num(s.wait_max_ns(), 0);
        o.str(",\"hold_ns_total\":").num(s.hold_total_ns(), 0);
        o.str(",\"hold_ns_max\":").num(s.hold_max_ns(), 0).str("}");
    }

    /// A JSON string, escaped by hand (no `core::fmt` on a signal handler's stack). A
    /// name that is not UTF-8 (a module path may be any bytes) keeps its ASCII only,
    /// with `?` for the rest.
    fn string(&mut self, text: &[u8]) {
        let utf8 = core::str::from_utf8(text).is_ok();
        self.out.str("\"");
        for &b in text {
            match b {
                b'"' => self.out.str("\\\""),
                b'\\' => self.out.str("\\\\"),
                0..0x20 | 0x7f => self.out.str("\\u00").hex_byte(b),
                0x80.. if !utf8 => self.out.str("?"),
                _ => self.out.bytes(&[b]),
            };
        }
        self.out.str("\"");
    }

    /// An rwlock's `"read"` and `"write"` counter sets, after its `"counters"`.
    /// `,"policy":{...}` under `auto` (see `Text::policy`).
    fn policy(&mut self, policy: Option<&'static crate::auto::Class>) {
        let Some(c) = policy else { return };
        let (spin, sleep) = c.served();
        self.out.str(",\"policy\":{\"class\":").num(c.index() as u64, 0);
        self.out.str(",\"mode\":\"").str(c.mode().name()).str("\",\"measured\":");
        self.out.str(if c.measured() { "true" } else { "false" });
        self.out.str(",\"judged\":").str(if c.judged() { "true" } else { "false" });
        self.out
            .str(",\"served_spinning\":")
            .num(spin, 0)
            .str(",\"served_sleeping\":")
            .num(sleep, 0)
            .str("}");
    }

    fn mode_sets(&mut self, read: &impl Figures, write: &impl Figures) {
        self.out.str(",");
        self.counter_set("read", read);
        self.out.str(",");
        self.counter_set("write", write);
    }

    #[inline(never)]
    fn frame(&mut self, pc: usize) {
        let call = pc.wrapping_sub(1);
        self.out.str("{\"address\":\"").hex(call as u64).str("\"");
        if let Some(at) = callsite::locate(call, self.when.in_signal_handler()) {
            self.out.str(",\"module\":");
            self.string(at.module);
            self.out.str(",\"offset\":\"").hex(at.offset as u64).str("\"");
            if !self.when.in_signal_handler() {
                if let Some((id, len)) = callsite::build_id(at.base) {
                    self.out.str(",\"build_id\":\"");
                    for byte in &id[..len] {
                        self.out.hex_byte(*byte);
                    }
                    self.out.str("\"");
                }
            }
        }
        if !self.when.in_signal_handler() {
            if let Some((name, offset)) = callsite::symbol(call) {
                self.out.str(",\"symbol\":");
                self.string(name);
                self.out.str(",\"symbol_offset\":\"").hex(offset as u64).str("\"");
            }
        }
        self.out.str("}");
    }
}

impl Render for Json<'_> {
    fn head(&mut self, m: &Model) {
        self.out.str("{\"pid\":").num(crate::thread::pid().max(0) as u64, 0);
        if !callsite::exe().is_empty() {
            self.out.str(",\"exe\":");
            self.string(callsite::exe());
        }
        self.out.str(",\"strategy\":\"").str(config::strategy().name());
        let rwlocks = if config::rwlocks_served() { "served" } else { "forwarded" };
        self.out.str("\",\"rwlocks\":\"").str(rwlocks).str("\",\"slots\":");
        self.out
            .num(table::classes().len() as u64, 0)
            .str(",\"classes_used\":")
            .num(m.classes_used as u64, 0);
        self.out.str(",\"classes\":[");
    }

    fn class(&mut self, rank: usize, class: &Class, sum: &Split) {
        let lock = class.lock();
        self.out.str(if rank > 1 { ",{\"rank\":" } else { "{\"rank\":" }).num(rank as u64, 0);
        self.out.str(",\"origin\":\"").str(origin_name(class));
        self.out.str("\",\"lock\":\"").str(lock.name()).str("\",\"type\":\"");
        self.out.kind(lock, class.kind.load(Relaxed), 0).str("\",\"mutexes\":");
        self.out.num(class.created.load(Relaxed), 0).str(",\"live\":").num(class.live(), 0).str(",");
        self.counters(&sum.total());
        if lock == Lock::RwLock {
            self.mode_sets(&sum.read, &sum.write);
        }
        self.out.str(",\"frames\":[");
        let frames = class.frames.each_ref().map(|f| f.load(Relaxed));
        for (i, pc) in frames.into_iter().take_while(|&pc| pc != 0).enumerate() {
            if i > 0 {
                self.out.str(",");
            }
            self.frame(pc);
        }
        self.out.str("]");
        self.policy(policy_of_class(class));
        self.out.str(",\"instances\":[");
        self.first_instance = true;
    }

    fn instance(&mut self, instance: &Instance) {
        let lock = instance.lock();
        self.out.str(if self.first_instance { "{" } else { ",{" });
        self.first_instance = false;
        self.out.str("\"mutex\":\"").hex(instance.key.load(Relaxed) as u64);
        self.out.str("\",\"lock\":\"").str(lock.name()).str("\",\"type\":\"");
        self.out.kind(lock, instance.kind.load(Relaxed), 0).str("\",");
        self.counters(&instance.total());
        if lock == Lock::RwLock {
            self.mode_sets(&instance.read, &instance.counters);
        }
        self.policy(policy_of(instance.key.load(Relaxed)));
        self.out.str("}");
    }

    fn class_end(&mut self) {
        self.out.str("]}");
    }

    fn tail(&mut self, m: &Model) {
        self.out.str("],\"others\":{\"classes\":").num(m.others_count as u64, 0).str(",");
        self.counters(&m.others);
        self.out.str("},\"unknown_class\":{");
        self.counters(&m.unknown);
        self.out.str("},\"overflow\":{\"instances\":").num(table::OVERFLOWED_INSTANCES.load(Relaxed), 0);
        self.out.str(",\"classes\":").num(table::OVERFLOWED_CLASSES.load(Relaxed), 0);
        self.out.str(",\"holds_unmeasured\":").num(table::HOLDS_UNMEASURED.load(Relaxed), 0).str(",");
        self.counters(&m.overflow);
        self.out.str("},\"totals\":{\"mutexes\":").num(m.created, 0).str(",\"live\":").num(m.live, 0);
        self.out.str(",");
        self.counters(&m.totals);
        self.out.str("}}\n");
    }
}

// ---------------------------------------------------------------------------------
// Output: a small static buffer, numbers by hand.

struct Out {
    target: Target,
    buf: &'static mut [u8; 256],
    len: usize,
    /// The error of the first write that failed (0: none): nothing more is written after
    /// it.
    error: i32,
}

/// The output buffer: a static, like the model, so that it takes no room on the stack of
/// an interrupted thread (the report lock makes it ours).
struct BufferCell(core::cell::UnsafeCell<[u8; 256]>);
// SAFETY: used only by the holder of the report lock (WRITING).
unsafe impl Sync for BufferCell {}

static BUFFER: BufferCell = BufferCell(core::cell::UnsafeCell::new([0; 256]));

impl Out {
    fn flush(&mut self) {
        if self.error == 0 {
            self.error = self.target.write_all(&self.buf[..self.len]).err().unwrap_or(0);
        }
        self.len = 0;
    }

    fn bytes(&mut self, mut b: &[u8]) -> &mut Self {
        while !b.is_empty() {
            if self.len == self.buf.len() {
                self.flush();
            }
            let n = b.len().min(self.buf.len() - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
            self.len += n;
            b = &b[n..];
        }
        self
    }

    fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }

    /// `text` right-aligned in `width` columns, after a space.
    fn pad(&mut self, text: &str, width: usize) -> &mut Self {
        self.spaces(width.saturating_sub(text.len()) + 1).str(text)
    }

    /// A lock's kind in words, left-aligned in `width` columns.
    fn kind(&mut self, lock: Lock, k: i32, width: usize) -> &mut Self {
        let name = type_name(lock, k);
        for part in name.parts() {
            self.str(part);
        }
        self.spaces(width.saturating_sub(name.len()))
    }

    fn spaces(&mut self, n: usize) -> &mut Self {
        for _ in 0..n {
            self.bytes(b" ");
        }
        self
    }

    /// A number right-aligned in `width` columns after a space (`width` 0: as it is).
    fn num(&mut self, value: u64, width: usize) -> &mut Self {
        let mut digits = [0u8; 20];
        let n = decimal(value, &mut digits);
        if width > 0 {
            self.spaces(width.saturating_sub(n) + 1);
        }
        self.bytes(&digits[20 - n..])
    }

    /// Milliseconds with three decimals, from nanoseconds, right-aligned.
    fn ms(&mut self, ns: u64, width: usize) -> &mut Self {
        let mut digits = [0u8; 20];
        let n = decimal(ns / 1_000_000, &mut digits);
        let micros = ns / 1000 % 1000;
        self.spaces(width.saturating_sub(n + 4) + 1).bytes(&digits[20 - n..]).str(".");
        self.bytes(&[
            b'0' + (micros / 100) as u8,
            b'0' + (micros / 10 % 10) as u8,
            b'0' + (micros % 10) as u8,
        ])
    }

    fn hex(&mut self, value: u64) -> &mut Self {
        let mut digits = [0u8; 16];
        let mut at = digits.len();
        let mut v = value;
        loop {
            at -= 1;
            digits[at] = b"0123456789abcdef"[(v & 15) as usize];
            v >>= 4;
            if v == 0 {
                break;
            }
        }
        self.str("0x").bytes(&digits[at..])
    }

    fn hex_byte(&mut self, b: u8) -> &mut Self {
        let hex = b"0123456789abcdef";
        self.bytes(&[hex[(b >> 4) as usize], hex[(b & 15) as usize]])
    }
}

/// Writes `value` in decimal at the end of `digits`; returns how many digits.
fn decimal(mut value: u64, digits: &mut [u8; 20]) -> usize {
    let mut n = 0;
    loop {
        n += 1;
        digits[20 - n] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return n;
        }
    }
}

impl core::fmt::Write for Out {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.str(s);
        Ok(())
    }
}
