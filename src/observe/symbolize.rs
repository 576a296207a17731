//! Call sites described for people: `function+0xOFF (file.c:LINE) [module]`, and for
//! inlined code `function+0xOFF (inner.h:LINE, inlined helper called at file.c:LINE)
//! [module]`.
//!
//! Used at report time only (process exit, or a report asked for by a signal and
//! written from an ordinary context), never on a lock path: it allocates, reads files
//! and may start a child process.
//!
//! * `dladdr` names the module (`dli_fname`) and where it is mapped (`dli_fbase`).
//! * The module's ELF file is read for its function symbols: `.symtab`, which also
//!   holds an executable's static functions, else `.dynsym`. The load bias is
//!   `dli_fbase` less the first loadable segment's (page-aligned) address: the mapping
//!   address for PIE executables and shared objects, 0 for `ET_EXEC` executables.
//! * File and line come from binutils' `addr2line` when it is on `PATH`: one run per
//!   module with all of that module's addresses, stdin closed, stderr discarded,
//!   `LD_PRELOAD` removed from its environment, killed after [`ADDR2LINE_TIMEOUT`].
//!   Without it (or when it fails) file and line are left out. Nothing here parses
//!   DWARF or demangles; the names `addr2line -C` prints are used when there are some.
//!
//! Nothing in this module panics on bad input: every read of a file is bounds-checked.
//!
//! For a return address taken from a stack, pass `address - 1` to get the line of the
//! call rather than of the instruction after it.

use std::ffi::CStr;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one `addr2line` run may take before it is killed.
pub const ADDR2LINE_TIMEOUT: Duration = Duration::from_secs(2);
/// Addresses per `addr2line` command line.
const ADDR2LINE_BATCH: usize = 1024;
/// Largest symbol or string table read from a module file.
const MAX_TABLE_BYTES: u64 = 512 << 20;

/// Describes one address. Starts a fresh [`Symbolizer`]: to describe many addresses,
/// use one `Symbolizer` (or [`describe_all`]) so that modules are read once.
#[allow(dead_code)]
pub fn describe(addr: usize) -> String {
    Symbolizer::new().describe(addr)
}

/// Describes many addresses, running `addr2line` once per module.
#[allow(dead_code)]
pub fn describe_all(addrs: &[usize]) -> Vec<String> {
    Symbolizer::new().describe_all(addrs)
}

/// A cache of the modules read so far; keep one for the duration of a report.
#[derive(Default)]
pub struct Symbolizer {
    modules: Vec<Module>,
    /// Where `addr2line` is: `None` until looked for, then `Some(None)` when absent.
    addr2line: Option<Option<PathBuf>>,
}

/// One loaded module, keyed by its mapping base.
struct Module {
    base: usize,
    /// The path `dladdr` gave ("" for the main program).
    name: String,
    /// The file read, when it could be opened.
    file: Option<PathBuf>,
    /// Added to a link-time address to give the run-time one.
    bias: usize,
    /// Function symbols by start address.
    funcs: Vec<Func>,
    /// `addr2line` answers by link-time address (`None`: it had nothing to say).
    lines: Vec<(u64, Option<Lines>)>,
    /// `addr2line` failed on this module: do not try again.
    lines_failed: bool,
}

#[derive(Clone, Debug, PartialEq)]
struct Func {
    start: u64,
    size: u64,
    name: String,
    local: bool,
}

/// What `addr2line -i` said about one address: innermost frame first.
#[derive(Clone, Debug, PartialEq)]
struct Lines {
    frames: Vec<(Option<String>, Option<String>)>,
}

/// What `dladdr` said.
struct DlInfo {
    fname: String,
    fbase: usize,
    sname: Option<String>,
    saddr: usize,
}

fn dladdr(addr: usize) -> Option<DlInfo> {
    // SAFETY: dladdr only reads the loader's tables; the strings it returns live as
    // long as the module stays loaded, and are copied out at once.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(addr as *const libc::c_void, &mut info) == 0 {
            return None;
        }
        let cstr = |p: *const libc::c_char| {
            if p.is_null() {
                None
            } else {
                Some(CStr::from_ptr(p).to_string_lossy().into_owned())
            }
        };
        Some(DlInfo {
            fname: cstr(info.dli_fname).unwrap_or_default(),
            fbase: info.dli_fbase as usize,
            sname: cstr(info.dli_sname).filter(|s| !s.is_empty()),
            saddr: info.dli_saddr as usize,
        })
    }
}

impl Symbolizer {
    pub fn new() -> Self {
        Symbolizer::default()
    }

    /// Describes one address (runs `addr2line` for it alone if it is not cached yet).
    pub fn describe(&mut self, addr: usize) -> String {
        self.describe_all(&[addr]).pop().unwrap_or_default()
    }

    /// Describes each address, in order; `addr2line` runs once per module involved.
    pub fn describe_all(&mut self, addrs: &[usize]) -> Vec<String> {
        let mut infos: Vec<Option<(DlInfo, usize)>> = Vec::with_capacity(addrs.len());
        for &a in addrs {
            infos.push(dladdr(a).map(|info| {
                let m = self.module_index(&info);
                (info, m)
            }));
        }
        self.fetch_lines(addrs, &infos);
        addrs
            .iter()
            .zip(&infos)
            .map(|(&addr, info)| match info {
                None => format!("{addr:#x}"),
                Some((dl, m)) => self.format(addr, dl, *m),
            })
            .collect()
    }

    /// The index of the module `info` names, reading it the first time.
    fn module_index(&mut self, info: &DlInfo) -> usize {
        if let Some(i) = self.modules.iter().position(|m| m.base == info.fbase && m.name == info.fname) {
            return i;
        }
        self.modules.push(Module::load(&info.fname, info.fbase));
        self.modules.len() - 1
    }

    /// Runs `addr2line` for the addresses of each module that are not answered yet.
    fn fetch_lines(&mut self, addrs: &[usize], infos: &[Option<(DlInfo, usize)>]) {
        let mut wanted: Vec<(usize, u64)> = Vec::new();
        for (&addr, info) in addrs.iter().zip(infos) {
            let Some((_, m)) = info else { continue };
            let module = &self.modules[*m];
            if module.file.is_none() || module.lines_failed {
                continue;
            }
            let vaddr = addr.wrapping_sub(module.bias) as u64;
            if !module.lines.iter().any(|(a, _)| *a == vaddr) && !wanted.contains(&(*m, vaddr)) {
                wanted.push((*m, vaddr));
            }
        }
        if wanted.is_empty() {
            return;
        }
        let Some(tool) = self.addr2line_path() else { return };
        let mut module_ids: Vec<usize> = wanted.iter().map(|(m, _)| *m).collect();
        module_ids.sort_unstable();
        module_ids.dedup();
        for m in module_ids {
            let vaddrs: Vec<u64> = wanted.iter().filter(|(i, _)| *i == m).map(|(_, a)| *a).collect();
            let module = &mut self.modules[m];
            let Some(file) = module.file.clone() else { continue };
            for chunk in vaddrs.chunks(ADDR2LINE_BATCH) {
                match run_addr2line(&tool, &file, chunk) {
                    Ok(answers) => {
                        for &a in chunk {
                            let found = answers.iter().find(|(k, _)| *k == a).map(|(_, l)| l.clone());
                            module.lines.push((a, found));
                        }
                    }
                    Err(Addr2lineError::Failed) => {
                        module.lines_failed = true;
                        break;
                    }
                    Err(Addr2lineError::TimedOut) => {
                        // A hung tool would hang again: bound the whole report to one wait.
                        module.lines_failed = true;
                        self.addr2line = Some(None);
                        return;
                    }
                }
            }
        }
    }

    fn addr2line_path(&mut self) -> Option<PathBuf> {
        self.addr2line.get_or_insert_with(|| find_on_path("addr2line")).clone()
    }

    fn format(&self, addr: usize, dl: &DlInfo, m: usize) -> String {
        let module = &self.modules[m];
        let vaddr = addr.wrapping_sub(module.bias) as u64;
        let lines = module.lines.iter().find(|(a, _)| *a == vaddr).and_then(|(_, l)| l.as_ref());
        let mut out = String::new();
        // The function: the ELF symbol that contains the address, named as addr2line
        // names the outermost frame when it did (demangled), else as the symbol table.
        if let Some(f) = module.function(vaddr) {
            let outer = lines.and_then(|l| l.frames.last()).and_then(|(func, _)| func.clone());
            let name = outer.unwrap_or_else(|| f.name.clone());
            let _ = write!(out, "{name}+{:#x}", vaddr - f.start);
        } else if let Some(s) = &dl.sname {
            let _ = write!(out, "{s}+{:#x}", addr.wrapping_sub(dl.saddr));
        } else {
            let _ = write!(out, "{addr:#x}");
        }
        if let Some(l) = lines {
            // Innermost location first; for inlined code, the inlined function and where
            // the containing function called it.
            if let Some((inner_func, Some(loc))) = l.frames.first() {
                let _ = write!(out, " ({loc}");
                if let (Some(inner), true) = (inner_func, l.frames.len() > 1) {
                    let _ = write!(out, ", inlined {inner}");
                    if let Some((_, Some(outer_loc))) = l.frames.last() {
                        let _ = write!(out, " called at {outer_loc}");
                    }
                }
                out.push(')');
            }
        }
        let shown = if module.name.is_empty() {
            module.file.as_deref().map(display_name).unwrap_or_else(|| "?".to_string())
        } else {
            display_name(Path::new(&module.name))
        };
        let _ = write!(out, " [{shown}]");
        out
    }
}

/// The module's file name without its directory.
fn display_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.to_string_lossy().into_owned())
}

impl Module {
    fn load(name: &str, base: usize) -> Module {
        // dladdr gives "" for the main program.
        let path = if name.is_empty() {
            std::fs::read_link("/proc/self/exe").ok()
        } else {
            Some(PathBuf::from(name))
        };
        let elf = path.as_deref().and_then(|p| File::open(p).ok()).and_then(|f| read_elf(&f));
        let (file, bias, funcs) = match elf {
            Some(e) => {
                let bias = if e.is_exec { 0 } else { base.wrapping_sub(page_down(e.first_load) as usize) };
                (path, bias, e.funcs)
            }
            None => (None, base, Vec::new()),
        };
        Module { base, name: name.to_string(), file, bias, funcs, lines: Vec::new(), lines_failed: false }
    }

    /// The function symbol containing link-time address `vaddr`.
    fn function(&self, vaddr: u64) -> Option<&Func> {
        lookup(&self.funcs, vaddr)
    }
}

fn page_down(a: u64) -> u64 {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = if page > 0 { page as u64 } else { 4096 };
    a & !(page - 1)
}

/// Finds the function containing `vaddr` in `funcs` (sorted by start). A symbol
/// without a size only matches its own first byte.
fn lookup(funcs: &[Func], vaddr: u64) -> Option<&Func> {
    let end = funcs.partition_point(|f| f.start <= vaddr);
    // Nested or overlapping symbols are rare: look at a few candidates below.
    funcs[..end].iter().rev().take(64).find(|f| vaddr < f.start.saturating_add(f.size.max(1)))
}

/// What is read from a module file.
struct Elf {
    is_exec: bool,
    /// The lowest `p_vaddr` of a `PT_LOAD` segment.
    first_load: u64,
    funcs: Vec<Func>,
}

const ET_EXEC: u16 = 2;
const PT_LOAD: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const SHT_NOBITS: u32 = 8;
const STT_FUNC: u8 = 2;
const STT_GNU_IFUNC: u8 = 10;
const STB_LOCAL: u8 = 0;

fn read_at(f: &File, off: u64, len: u64) -> Option<Vec<u8>> {
    if len > MAX_TABLE_BYTES {
        return None;
    }
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    f.read_exact_at(&mut buf, off).ok()?;
    Some(buf)
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off.checked_add(2)?)?.try_into().ok()?))
}
fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off.checked_add(4)?)?.try_into().ok()?))
}
fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off.checked_add(8)?)?.try_into().ok()?))
}

/// A section header's fields that matter here.
struct Section {
    kind: u32,
    offset: u64,
    size: u64,
    link: u32,
    entsize: u64,
}

/// Reads a 64-bit little-endian ELF file's type, first load address and function
/// symbols (`.symtab`, else `.dynsym`). `None` for anything else or on a short read.
fn read_elf(f: &File) -> Option<Elf> {
    let eh = read_at(f, 0, 64)?;
    if eh.get(0..4)? != b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
        return None;
    }
    let e_type = u16_at(&eh, 16)?;
    let phoff = u64_at(&eh, 32)?;
    let shoff = u64_at(&eh, 40)?;
    let phentsize = u64::from(u16_at(&eh, 54)?);
    let phnum = u64::from(u16_at(&eh, 56)?);
    let shentsize = u64::from(u16_at(&eh, 58)?);
    let mut shnum = u64::from(u16_at(&eh, 60)?);

    let mut first_load = u64::MAX;
    if phentsize >= 56 && phnum > 0 {
        let ph = read_at(f, phoff, phentsize.checked_mul(phnum)?)?;
        for i in 0..phnum as usize {
            let o = i * phentsize as usize;
            if u32_at(&ph, o)? == PT_LOAD {
                first_load = first_load.min(u64_at(&ph, o + 16)?);
            }
        }
    }
    if first_load == u64::MAX {
        first_load = 0;
    }
    let mut elf = Elf { is_exec: e_type == ET_EXEC, first_load, funcs: Vec::new() };

    if shoff == 0 || shentsize < 64 {
        return Some(elf);
    }
    if shnum == 0 {
        // Extended numbering: the count is in section 0's size.
        let s0 = read_at(f, shoff, shentsize)?;
        shnum = u64_at(&s0, 32)?;
    }
    if shnum == 0 || shnum > 1 << 20 {
        return Some(elf);
    }
    let sh = read_at(f, shoff, shentsize.checked_mul(shnum)?)?;
    let sections: Vec<Section> = (0..shnum as usize)
        .filter_map(|i| {
            let o = i * shentsize as usize;
            Some(Section {
                kind: u32_at(&sh, o + 4)?,
                offset: u64_at(&sh, o + 24)?,
                size: u64_at(&sh, o + 32)?,
                link: u32_at(&sh, o + 40)?,
                entsize: u64_at(&sh, o + 56)?,
            })
        })
        .collect();
    for kind in [SHT_SYMTAB, SHT_DYNSYM] {
        for s in sections.iter().filter(|s| s.kind == kind) {
            read_symbols(f, s, sections.get(s.link as usize), &mut elf.funcs);
        }
        if !elf.funcs.is_empty() {
            break;
        }
    }
    // By start; at equal starts a global name before a local one, then a sized one.
    elf.funcs.sort_by(|a, b| a.start.cmp(&b.start).then(a.local.cmp(&b.local)).then(b.size.cmp(&a.size)));
    elf.funcs.dedup_by(|later, earlier| later.start == earlier.start && later.size <= earlier.size);
    Some(elf)
}

fn read_symbols(f: &File, symtab: &Section, strtab: Option<&Section>, out: &mut Vec<Func>) {
    let Some(strtab) = strtab else { return };
    if strtab.kind == SHT_NOBITS || symtab.entsize < 24 {
        return;
    }
    let (Some(syms), Some(strs)) =
        (read_at(f, symtab.offset, symtab.size), read_at(f, strtab.offset, strtab.size))
    else {
        return;
    };
    let ent = symtab.entsize as usize;
    for o in (0..syms.len() / ent).map(|i| i * ent) {
        let (Some(name_off), Some(&info), Some(shndx), Some(value), Some(size)) = (
            u32_at(&syms, o),
            syms.get(o + 4),
            u16_at(&syms, o + 6),
            u64_at(&syms, o + 8),
            u64_at(&syms, o + 16),
        ) else {
            continue;
        };
        let kind = info & 0xf;
        if (kind != STT_FUNC && kind != STT_GNU_IFUNC) || shndx == 0 || value == 0 {
            continue;
        }
        let Some(rest) = strs.get(name_off as usize..) else { continue };
        let name = match rest.iter().position(|&c| c == 0) {
            Some(n) => &rest[..n],
            None => rest,
        };
        if name.is_empty() {
            continue;
        }
        out.push(Func {
            start: value,
            size,
            name: String::from_utf8_lossy(name).into_owned(),
            local: info >> 4 == STB_LOCAL,
        });
    }
}

fn find_on_path(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(tool)).find(|p| {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else { return false };
        // SAFETY: a valid NUL-terminated path.
        p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
    })
}

enum Addr2lineError {
    /// It could not start, or exited with an error.
    Failed,
    /// It ran past [`ADDR2LINE_TIMEOUT`] and was killed.
    TimedOut,
}

/// Runs `addr2line` on `file` for link-time addresses `vaddrs`. It is killed when it
/// runs out of time.
fn run_addr2line(tool: &Path, file: &Path, vaddrs: &[u64]) -> Result<Vec<(u64, Lines)>, Addr2lineError> {
    let mut cmd = Command::new(tool);
    cmd.arg("-a").arg("-f").arg("-C").arg("-i").arg("-e").arg(file);
    for a in vaddrs {
        cmd.arg(format!("{a:#x}"));
    }
    // Without the preload (this library must not load into it), and without debuginfod:
    // a report never waits on the network.
    cmd.env_remove("LD_PRELOAD").env_remove("DEBUGINFOD_URLS");
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd.spawn().map_err(|_| Addr2lineError::Failed)?;
    let deadline = Instant::now() + ADDR2LINE_TIMEOUT;
    let mut text = Vec::new();
    let mut complete = false;
    let mut timed_out = false;
    if let Some(mut out) = child.stdout.take() {
        let fd = out.as_raw_fd();
        let mut buf = [0u8; 8192];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                timed_out = true;
                break;
            }
            let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            let ms = left.as_millis().clamp(1, 60_000) as libc::c_int;
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, ms) };
            if r < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                break;
            }
            if r == 0 {
                continue;
            }
            match out.read(&mut buf) {
                Ok(0) => {
                    complete = true;
                    break;
                }
                Ok(n) => text.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }
    if !complete {
        let _ = child.kill();
        let _ = child.wait();
        return Err(if timed_out { Addr2lineError::TimedOut } else { Addr2lineError::Failed });
    }
    // Output is at its end: the child has exited or is about to. A host program that
    // reaps every child itself (or ignores SIGCHLD) makes this wait fail; the output
    // is complete either way.
    let ok = match child.wait() {
        Ok(status) => status.success(),
        Err(_) => true,
    };
    if !ok {
        return Err(Addr2lineError::Failed);
    }
    Ok(parse_addr2line(&String::from_utf8_lossy(&text)))
}

/// Parses `addr2line -a -f -i` output: per address a `0x…` line, then pairs of
/// function and `file:line` lines, innermost frame first. `??` means unknown.
fn parse_addr2line(text: &str) -> Vec<(u64, Lines)> {
    let mut out: Vec<(u64, Lines)> = Vec::new();
    let mut pending_func: Option<Option<String>> = None;
    for line in text.lines() {
        let line = line.trim_end();
        if let Some(hex) = line.strip_prefix("0x") {
            if let Ok(a) = u64::from_str_radix(hex, 16) {
                out.push((a, Lines { frames: Vec::new() }));
                pending_func = None;
                continue;
            }
        }
        let Some((_, lines)) = out.last_mut() else { continue };
        match pending_func.take() {
            None => pending_func = Some(known(line)),
            Some(func) => {
                // `file:line (discriminator N)`; unknown is `??:0` or `??:?`.
                let loc = line.split(" (discriminator").next().unwrap_or(line);
                let loc = if loc.starts_with("??") || loc.ends_with(":0") || loc.ends_with(":?") {
                    None
                } else {
                    Some(loc.to_string())
                };
                lines.frames.push((func, loc));
            }
        }
    }
    // Drop addresses it knew nothing about.
    out.retain(|(_, l)| l.frames.iter().any(|(f, loc)| f.is_some() || loc.is_some()));
    out
}

fn known(s: &str) -> Option<String> {
    if s.is_empty() || s == "??" {
        None
    } else {
        Some(s.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn symbolize_probe_target(x: u64) -> u64 {
        // Something the optimiser cannot fold away.
        std::hint::black_box(x).wrapping_mul(2654435761) ^ 0x5bd1e995
    }

    fn probe_addr() -> usize {
        let f: fn(u64) -> u64 = symbolize_probe_target;
        std::hint::black_box(f)(1);
        f as usize
    }

    #[test]
    fn symtab_of_the_test_binary_holds_local_functions() {
        let exe = std::env::current_exe().unwrap();
        let elf = read_elf(&File::open(&exe).unwrap()).expect("the test binary is 64-bit ELF");
        assert!(!elf.funcs.is_empty());
        assert!(elf.funcs.windows(2).all(|w| w[0].start <= w[1].start));
        // Find the probe through dladdr's base and the bias rule.
        let addr = probe_addr();
        let dl = dladdr(addr).expect("dladdr knows the test binary");
        let bias = if elf.is_exec { 0 } else { dl.fbase - page_down(elf.first_load) as usize };
        let f = lookup(&elf.funcs, (addr - bias) as u64).expect("a symbol contains the probe");
        assert!(f.name.contains("symbolize_probe_target"), "{f:?}");
        assert!(lookup(&elf.funcs, (addr - bias) as u64 + 1).is_some_and(|g| g == f));
    }

    #[test]
    fn describes_a_function_of_the_test_binary() {
        let addr = probe_addr();
        let text = describe(addr);
        assert!(text.contains("symbolize_probe_target+0x0"), "{text}");
        let exe = std::env::current_exe().unwrap();
        let exe_name = exe.file_name().unwrap().to_string_lossy().into_owned();
        assert!(text.ends_with(&format!("[{exe_name}]")), "{text}");
        if find_on_path("addr2line").is_some() {
            // Tests are built with debug information.
            assert!(text.contains("symbolize.rs:"), "{text}");
        }
        // An address inside the function keeps the name and gets an offset.
        let inner = describe(addr + 4);
        assert!(inner.contains("symbolize_probe_target+0x4"), "{inner}");
    }

    #[test]
    fn describes_a_libc_function_and_batches() {
        // `write` is in libc's dynamic symbol table whatever its symbol table holds.
        let write_addr = libc::write as *const () as usize;
        let mut s = Symbolizer::new();
        let got = s.describe_all(&[write_addr, probe_addr(), write_addr]);
        assert_eq!(got.len(), 3);
        assert!(got[0].contains("write"), "{got:?}");
        assert!(got[0].contains("[libc.so"), "{got:?}");
        assert_eq!(got[0], got[2]);
        assert!(got[1].contains("symbolize_probe_target"), "{got:?}");
        // Cached: a second round reads nothing again and says the same.
        assert_eq!(s.describe(write_addr), got[0]);
        assert_eq!(s.modules.len(), 2, "one entry per module");
    }

    #[test]
    fn unknown_addresses_are_hex() {
        assert_eq!(describe(0x10), "0x10");
    }

    #[test]
    fn lookup_respects_sizes() {
        let f = |start, size, name: &str| Func { start, size, name: name.into(), local: false };
        let funcs =
            vec![f(0x100, 0x10, "a"), f(0x110, 0, "nosize"), f(0x200, 0x100, "b"), f(0x220, 0x8, "inner")];
        assert_eq!(lookup(&funcs, 0x105).unwrap().name, "a");
        assert_eq!(lookup(&funcs, 0x110).unwrap().name, "nosize");
        assert!(lookup(&funcs, 0x111).is_none());
        assert!(lookup(&funcs, 0xff).is_none());
        assert_eq!(lookup(&funcs, 0x224).unwrap().name, "inner");
        assert_eq!(lookup(&funcs, 0x230).unwrap().name, "b");
        assert!(lookup(&funcs, 0x300).is_none());
    }

    #[test]
    fn parses_addr2line_output() {
        let text = "0x0000000000001139\nhelper\n/src/a.c:12\nmain\n/src/a.c:30 (discriminator 2)\n\
                    0x0000000000002000\n??\n??:0\n0x0000000000002010\nf\n??:?\n";
        let got = parse_addr2line(text);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, 0x1139);
        assert_eq!(
            got[0].1.frames,
            vec![
                (Some("helper".to_string()), Some("/src/a.c:12".to_string())),
                (Some("main".to_string()), Some("/src/a.c:30".to_string())),
            ]
        );
        assert_eq!(got[1], (0x2010, Lines { frames: vec![(Some("f".to_string()), None)] }));
    }

    #[test]
    fn rejects_what_is_not_elf() {
        use std::io::Write;
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"#!/bin/sh\necho hi\n").unwrap();
        assert!(read_elf(&f).is_none());
    }
}
