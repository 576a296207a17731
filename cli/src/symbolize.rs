//! Naming call sites after the process is gone: a frame recorded by the library as
//! module + offset (the link-time address inside that file) becomes a function, a source
//! file and a line, read from the files on this machine. No process is started.
//!
//! The reading is done by the `addr2line` crate (on `gimli` and `object`), not by
//! `blazesym`: it is what Rust's own backtraces use, pure Rust, reads inlined frames and
//! demangles C++ and Rust names, and through `object` also gives the symbol tables, the
//! build-id and the `.gnu_debuglink` this module needs; blazesym would bring process and
//! kernel symbolization and caches a report reader never uses, and a larger dependency
//! tree. addr2line does not look for separate debug files, so the search is here, in the
//! order gdb uses:
//!
//! 1. the module itself, when it has DWARF (`.debug_info`);
//! 2. the name in its `.gnu_debuglink`: beside it, in `.debug/` beside it, and under each
//!    debug directory (`/usr/lib/debug/<module's directory>/NAME`); a candidate is taken
//!    only if its build-id matches (or, without build-ids, its CRC does);
//! 3. `<debug directory>/.build-id/xx/rest.debug`, by the recorded build-id.
//!
//! Function names come from DWARF, else from the symbol table of the debug file or the
//! module (`.symtab`, else `.dynsym`, whose lookups respect symbol sizes, so a static
//! function is never named after the exported one before it), else from the `dladdr`
//! name the library recorded. A module whose file on disk has another build-id than the
//! one recorded is not the build that ran: its names would be wrong, so it is not read
//! (a debug file found by the recorded build-id still is).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};
use serde::{Deserialize, Serialize};

/// Where debug files are looked for by default (gdb's `debug-file-directory`).
pub const DEFAULT_DEBUG_DIR: &str = "/usr/lib/debug";

/// What the files on this machine say about one frame.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Resolved {
    /// The function the address is in (the innermost inlined one), demangled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// The address's offset in the symbol that holds it (the out-of-line function).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function_offset: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The functions the innermost one was inlined into, innermost first, each with the
    /// place of the inlined call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inlined_into: Vec<Inlined>,
    /// What named it: "dwarf", "symtab", "dynsym" or "dladdr" (the library's record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub named_by: Option<String>,
    /// The file the name was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug_file: Option<String>,
    /// Why the frame is not (fully) named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Inlined {
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// Why a module gives no names.
#[derive(Debug, Clone, PartialEq)]
pub enum Trouble {
    /// The file is not on this machine (or cannot be read).
    Missing(String),
    /// The file on disk is another build than the one that ran.
    OtherBuild { on_disk: String, recorded: String },
    /// Not an object file `object` can read.
    Unreadable(String),
    /// Readable, but stripped (no `.symtab`) and no debug file was found: only its
    /// exported functions (`.dynsym`) can be named.
    Stripped,
}

/// One module: its own symbols and, if found, its debug file.
struct Module {
    /// The module file's symbols (`.symtab`, else `.dynsym`), if the file is the build
    /// that ran; and which table that was.
    own: Option<(addr2line::Loader, &'static str)>,
    /// The file with DWARF, if any (the module itself or a separate debug file).
    debug: Option<(addr2line::Loader, PathBuf)>,
    trouble: Option<Trouble>,
}

/// Resolves frames, reading each module once.
pub struct Resolver {
    debug_dirs: Vec<PathBuf>,
    modules: HashMap<(String, Option<String>), Module>,
}

impl Default for Resolver {
    fn default() -> Self {
        Resolver::new(vec![PathBuf::from(DEFAULT_DEBUG_DIR)])
    }
}

impl Resolver {
    pub fn new(debug_dirs: Vec<PathBuf>) -> Self {
        Resolver { debug_dirs, modules: HashMap::new() }
    }

    /// Names the code at link-time address `offset` of `module`, which ran with build-id
    /// `build_id` (hex) when the report recorded one. `dladdr` is the library's own name
    /// for the frame (`symbol`, `symbol_offset`), used when nothing else names it.
    pub fn resolve(
        &mut self,
        module: &str,
        offset: u64,
        build_id: Option<&str>,
        dladdr: Option<(&str, &str)>,
    ) -> Resolved {
        let key = (module.to_string(), build_id.map(str::to_ascii_lowercase));
        let dirs = &self.debug_dirs;
        let m = self.modules.entry(key).or_insert_with(|| Module::open(module, build_id, dirs));
        let mut r = m.lookup(offset);
        if r.function.is_none() {
            if let Some((name, off)) = dladdr {
                r.function = Some(demangle_symbol(name));
                r.function_offset = Some(off.to_string());
                r.named_by = Some("dladdr".into());
            }
        }
        if r.named_by.as_deref().is_none_or(|n| n == "dladdr") {
            r.problem = match &m.trouble {
                Some(t) => Some(t.describe(module)),
                None if r.function.is_none() => Some(format!("no symbol of {module} holds this address")),
                None => None,
            };
        }
        r
    }

    /// Why `module` (as asked about before) names nothing, if it does not.
    pub fn trouble(&self, module: &str) -> Option<&Trouble> {
        self.modules.iter().find(|((m, _), _)| m == module).and_then(|(_, m)| m.trouble.as_ref())
    }
}

impl Trouble {
    pub fn describe(&self, module: &str) -> String {
        match self {
            Trouble::Missing(e) => format!("{module} cannot be read on this machine ({e})"),
            Trouble::OtherBuild { on_disk, recorded } => format!(
                "{module} on this machine is another build (build-id {on_disk}) than the one that ran \
                 ({recorded}), so its names would be wrong"
            ),
            Trouble::Unreadable(e) => format!("{module} is not an object file this command reads ({e})"),
            Trouble::Stripped => format!(
                "{module} is stripped (no .symtab) and no debug info was found for it: only its exported \
                 functions have names"
            ),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A read-only map of a whole file.
fn map(path: &Path) -> std::io::Result<memmap2::Mmap> {
    let file = File::open(path)?;
    // SAFETY: the map is read only while this command runs; a file changed meanwhile can
    // give wrong names, as with any debugger.
    unsafe { memmap2::Mmap::map(&file) }
}

/// True when the object has DWARF of its own (not only the NOBITS stubs a stripped file
/// or a separate debug file's code sections leave).
fn has_dwarf(obj: &object::File) -> bool {
    obj.section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0 && s.kind() != object::SectionKind::UninitializedData)
}

fn symbol_table_kind(obj: &object::File) -> Option<&'static str> {
    if obj.symbol_table().is_some() {
        Some("symtab")
    } else if obj.dynamic_symbol_table().is_some() {
        Some("dynsym")
    } else {
        None
    }
}

impl Module {
    fn open(path: &str, recorded: Option<&str>, debug_dirs: &[PathBuf]) -> Module {
        let recorded = recorded.map(str::to_ascii_lowercase);
        let mut m = Module { own: None, debug: None, trouble: None };
        let mut debuglink: Option<(Vec<u8>, u32)> = None;
        let mut own_id: Option<String> = None;
        match map(Path::new(path)) {
            Err(e) => m.trouble = Some(Trouble::Missing(e.to_string())),
            Ok(data) => match object::File::parse(&*data) {
                Err(e) => m.trouble = Some(Trouble::Unreadable(e.to_string())),
                Ok(obj) => {
                    own_id = obj.build_id().ok().flatten().map(hex);
                    let other_build = matches!((&own_id, &recorded), (Some(a), Some(b)) if a != b);
                    if other_build {
                        m.trouble = Some(Trouble::OtherBuild {
                            on_disk: own_id.clone().unwrap_or_default(),
                            recorded: recorded.clone().unwrap_or_default(),
                        });
                    } else {
                        debuglink = obj.gnu_debuglink().ok().flatten().map(|(n, crc)| (n.to_vec(), crc));
                        let kind = symbol_table_kind(&obj);
                        let dwarf = has_dwarf(&obj);
                        if let Ok(loader) = addr2line::Loader::new(path) {
                            if dwarf {
                                m.debug = Some((loader, PathBuf::from(path)));
                                // The same file gives the symbols too.
                                if let (Some(kind), Ok(l)) = (kind, addr2line::Loader::new(path)) {
                                    m.own = Some((l, kind));
                                }
                            } else if let Some(kind) = kind {
                                m.own = Some((loader, kind));
                            }
                        }
                    }
                }
            },
        }
        if m.debug.is_none() {
            let id = if matches!(m.trouble, Some(Trouble::OtherBuild { .. })) {
                recorded.clone()
            } else {
                own_id.clone().or(recorded.clone())
            };
            let found = debuglink
                .as_ref()
                .and_then(|(name, crc)| by_debuglink(Path::new(path), name, *crc, id.as_deref(), debug_dirs))
                .or_else(|| id.as_deref().and_then(|id| by_build_id(id, debug_dirs)));
            if let Some(file) = found {
                if let Ok(loader) = addr2line::Loader::new(&file) {
                    m.debug = Some((loader, file));
                }
            }
        }
        if m.trouble.is_none()
            && m.debug.is_none()
            && m.own.as_ref().is_none_or(|(_, kind)| *kind != "symtab")
        {
            m.trouble = Some(Trouble::Stripped);
        }
        m
    }

    fn lookup(&self, probe: u64) -> Resolved {
        let mut r = Resolved::default();
        if let Some((loader, file)) = &self.debug {
            if let Ok(mut frames) = loader.find_frames(probe) {
                let mut all = Vec::new();
                while let Ok(Some(f)) = frames.next() {
                    let function = f.function.as_ref().and_then(|n| n.demangle().ok()).map(Cow::into_owned);
                    let (file, line) =
                        f.location.as_ref().map_or((None, None), |l| (l.file.map(str::to_string), l.line));
                    all.push(Inlined { function, file, line });
                }
                let mut all = all.into_iter();
                if let Some(first) = all.next() {
                    r.function = first.function;
                    r.file = first.file;
                    r.line = first.line;
                    r.inlined_into = all.collect();
                }
            }
            if r.file.is_none() {
                if let Ok(Some(l)) = loader.find_location(probe) {
                    r.file = l.file.map(str::to_string);
                    r.line = l.line;
                }
            }
            if r.function.is_some() {
                r.named_by = Some("dwarf".into());
                r.debug_file = Some(file.display().to_string());
            }
            if let Some(sym) = loader.find_symbol_info(probe) {
                r.function_offset = Some(format!("{:#x}", probe - sym.address()));
                if r.function.is_none() {
                    r.function = Some(demangle_symbol(sym.name()));
                    r.named_by = Some("symtab".into());
                    r.debug_file = Some(file.display().to_string());
                }
            }
        }
        if r.function.is_none() {
            if let Some((loader, kind)) = &self.own {
                if let Some(sym) = loader.find_symbol_info(probe) {
                    r.function = Some(demangle_symbol(sym.name()));
                    r.function_offset = Some(format!("{:#x}", probe - sym.address()));
                    r.named_by = Some((*kind).into());
                }
            }
        }
        r
    }
}

/// The debug file `.gnu_debuglink` names, where gdb looks for it.
fn by_debuglink(module: &Path, name: &[u8], crc: u32, id: Option<&str>, dirs: &[PathBuf]) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::OsStr::from_bytes(name);
    let dir = module.parent()?;
    let mut candidates = vec![dir.join(name), dir.join(".debug").join(name)];
    for d in dirs {
        candidates.push(d.join(dir.strip_prefix("/").unwrap_or(dir)).join(name));
    }
    candidates.into_iter().find(|c| c.as_path() != module && debug_file_matches(c, crc, id))
}

/// The debug file of build-id `id` in each debug directory's `.build-id` tree.
fn by_build_id(id: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    if id.len() < 3 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    dirs.iter()
        .map(|d| d.join(".build-id").join(&id[..2]).join(format!("{}.debug", &id[2..])))
        .find(|p| p.is_file())
}

/// A debug file belongs to the module if their build-ids agree, or, when either has
/// none, if its CRC is the one the debuglink records.
fn debug_file_matches(path: &Path, crc: u32, id: Option<&str>) -> bool {
    let Ok(data) = map(path) else { return false };
    let Ok(obj) = object::File::parse(&*data) else { return false };
    match (obj.build_id().ok().flatten().map(hex), id) {
        (Some(theirs), Some(ours)) => theirs == ours,
        _ => crc32(&data) == crc,
    }
}

/// CRC-32 (IEEE, as `.gnu_debuglink` uses).
fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (i, t) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
        }
        *t = c;
    }
    !data.iter().fold(!0u32, |c, &b| table[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8))
}

/// How a person gets names for stripped modules, in one line.
pub fn how_to_get_names() -> String {
    format!(
        "install the debug symbols of the package that ships each file (Debian: `dpkg -S FILE` \
         names the package; its symbols are PACKAGE-dbgsym, from the debian-debug archive, and \
         glibc's are libc6-dbg), or rebuild it with -g; spinmutex report reads the module's own \
         symbols, its .gnu_debuglink and {DEFAULT_DEBUG_DIR} (more with --debug-dir)"
    )
}

/// A symbol's name, demangled where it is mangled (C++ and Rust names start with `_Z`
/// or `_R`). Anything else is a C name, kept as it is: the C++ demangler reads a bare
/// `w` or `i` as a builtin type, and showed a C function `w` as `wchar_t`.
fn demangle_symbol(name: &str) -> String {
    if name.starts_with("_Z") || name.starts_with("_R") {
        addr2line::demangle_auto(Cow::Borrowed(name), None).into_owned()
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn only_mangled_names_are_demangled() {
        for c_name in ["w", "i", "St", "main", "worker"] {
            assert_eq!(demangle_symbol(c_name), c_name);
        }
        assert_eq!(demangle_symbol("_Z6workerPv"), "worker(void*)");
    }

    #[test]
    fn build_id_paths() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".build-id/ab");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("cdef.debug"), b"x").unwrap();
        let dirs = vec![PathBuf::from("/nonexistent"), dir.path().to_path_buf()];
        assert_eq!(by_build_id("abcdef", &dirs), Some(p.join("cdef.debug")));
        assert_eq!(by_build_id("abcdee", &dirs), None);
        assert_eq!(by_build_id("../x", &dirs), None);
    }

    #[test]
    fn a_missing_module_says_so_and_keeps_the_dladdr_name() {
        let mut r = Resolver::new(vec![]);
        let got = r.resolve("/nonexistent/prog", 0x10, Some("abcd"), Some(("exported", "0x4")));
        assert_eq!(got.function.as_deref(), Some("exported"));
        assert_eq!(got.named_by.as_deref(), Some("dladdr"));
        assert!(got.problem.unwrap().contains("cannot be read"));
        let got = r.resolve("/nonexistent/prog", 0x10, Some("abcd"), None);
        assert_eq!(got.function, None);
    }

    /// A function that exists on its own in the test binary: its address is taken
    /// below, so it cannot be inlined away.
    #[inline(never)]
    fn symbolize_marker_function(x: u64) -> u64 {
        // Plain arithmetic: nothing inlined at its first instructions.
        x * 31 + 7
    }

    #[test]
    fn this_test_binary_resolves_its_own_function() {
        // The test binary has DWARF (or at least a symbol table): a function's own
        // address names it.
        assert_eq!(std::hint::black_box(symbolize_marker_function as fn(u64) -> u64)(1), 38);
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let obj = object::File::parse(&*data).unwrap();
        use object::ObjectSymbol;
        let sym = obj
            .symbols()
            .find(|s| s.name().is_ok_and(|n| n.contains("symbolize_marker_function")))
            .expect("the test function's symbol");
        let mut r = Resolver::new(vec![]);
        let got = r.resolve(exe.to_str().unwrap(), sym.address() + 1, None, None);
        assert!(got.function.as_deref().is_some_and(|f| f.contains("symbolize_marker_function")), "{got:?}");
        assert_eq!(got.function_offset.as_deref(), Some("0x1"));
    }
}
