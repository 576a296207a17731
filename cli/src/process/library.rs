//! Finding `libspinmutex.so`, the arms a comparison runs (a strategy, or `none`), and
//! preparing a child's environment for one.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use spinmutex_names::{self as names, Strategy};

pub const LIB_NAME: &str = "libspinmutex.so";

/// Where the library is: `$SPINMUTEX_LIB` when set, else beside this command, else in
/// `../lib` relative to it. The path returned is absolute.
/// The file found is checked to be this project's library, of this command's version.
pub fn find() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(names::LIB.name).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(&p);
        let given = format!("{}={}", names::LIB.name, path.display());
        if path.is_dir() {
            let inside = path.join(LIB_NAME);
            let hint = if inside.is_file() { format!(" (give {})", inside.display()) } else { String::new() };
            return Err(format!("{given} is a directory; it must name the library file{hint}"));
        }
        let found = absolute(&path).ok_or_else(|| format!("{given}: no such file"))?;
        return check(&found).map(|()| found).map_err(|e| format!("{given}: {e}"));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this command's own path: {e}"))?;
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let candidates = [dir.join(LIB_NAME), dir.join("..").join("lib").join(LIB_NAME)];
    for c in &candidates {
        if let Some(found) = absolute(c) {
            return match check(&found) {
                Ok(()) => Ok(found),
                Err(e) => Err(format!("{}: {e}", found.display())),
            };
        }
    }
    Err(format!(
        "cannot find {LIB_NAME}: looked at {} and {}; set {} to its path",
        candidates[0].display(),
        candidates[1].display(),
        names::LIB.name
    ))
}

/// The exported symbol that holds the library's version (NUL-terminated).
const VERSION_SYMBOL: &str = "spinmutex_version";

/// Checks that `path` is libspinmutex.so of this command's version, by the version
/// symbol it exports, read from the file (nothing is loaded).
fn check(path: &Path) -> Result<(), String> {
    use object::{Object, ObjectSection, ObjectSymbol};
    let data = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let not_ours = |why: &str| {
        format!("not the spinmutex library ({why}): point {} at libspinmutex.so", names::LIB.name)
    };
    let file = object::File::parse(&*data).map_err(|_| not_ours("not a shared library"))?;
    let symbol = file
        .dynamic_symbols()
        .find(|s| s.name() == Ok(VERSION_SYMBOL))
        .ok_or_else(|| not_ours(&format!("it exports no {VERSION_SYMBOL}")))?;
    let version = symbol
        .section_index()
        .and_then(|i| file.section_by_index(i).ok())
        .and_then(|section| {
            let bytes = section.data().ok()?;
            let start = usize::try_from(symbol.address().checked_sub(section.address())?).ok()?;
            let rest = bytes.get(start..)?;
            let end = rest.iter().position(|&b| b == 0)?;
            String::from_utf8(rest[..end].to_vec()).ok()
        })
        .ok_or_else(|| not_ours(&format!("its {VERSION_SYMBOL} cannot be read")))?;
    let mine = env!("CARGO_PKG_VERSION");
    if version != mine {
        return Err(format!(
            "libspinmutex.so version {version}, but this command is version {mine}: install both from one build"
        ));
    }
    Ok(())
}

fn absolute(p: &Path) -> Option<PathBuf> {
    p.is_file().then(|| p.canonicalize().ok()).flatten()
}

/// One arm of a comparison: how the command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arm {
    /// Without the library at all.
    None,
    /// With the library, under a strategy.
    Strategy(Strategy),
    /// `bench` only: `glibc` with the workload's mutex made PTHREAD_MUTEX_ADAPTIVE_NP.
    GlibcAdaptive,
    /// `bench` only, added by it: the workload's threads without the lock (and without
    /// the library), the control for fairness.
    LockFree,
}

/// Says, once, what `kernel` serves differently from glibc (docs/DESIGN.md, "The `kernel`
/// strategy"), when one of `arms` runs it: an A/B comparison is read with that in mind.
pub fn note_arm_limits(arms: &[Arm]) {
    if arms.contains(&Arm::Strategy(Strategy::Kernel)) {
        eprintln!(
            "spinmutex: note: under kernel, a mutex released by a thread that does not own it while a \
             condition-variable waiter is queued for it reaches that waiter only when its owner next locks, \
             unlocks or exits; a thread that exits holding a mutex a condition-variable waiter is queued for \
             makes glibc abort, as with glibc's own priority-inheritance mutexes; a condition-variable wait \
             on a mutex the caller does not hold returns EPERM at once; a signal handler that runs just as a \
             waiting thread is handed the mutex runs holding it; and a plugin loaded with RTLD_DEEPBIND, \
             or a seccomp filter that forbids priority-inheritance futexes, can hang or stop the program \
             (docs/DESIGN.md)"
        );
    }
}

impl Arm {
    /// The strategy the library must report for this arm; None: the library must not load.
    pub fn strategy(self) -> Option<Strategy> {
        match self {
            Arm::None | Arm::LockFree => None,
            Arm::Strategy(s) => Some(s),
            Arm::GlibcAdaptive => Some(Strategy::Glibc),
        }
    }

    /// Parses an arm name: `none` or a strategy, and `glibc-adaptive` when `bench`.
    pub fn parse(text: &str, bench: bool) -> Result<Arm, String> {
        match text {
            "none" => Ok(Arm::None),
            "glibc-adaptive" if bench => Ok(Arm::GlibcAdaptive),
            "glibc-adaptive" => {
                Err("glibc-adaptive exists only for `bench` (a mutex type its workload creates, \
                                     not a library strategy)"
                    .into())
            }
            _ => Strategy::from_name(text.as_bytes()).map(Arm::Strategy).ok_or_else(|| {
                let extra = if bench { ", glibc-adaptive" } else { "" };
                format!("accepted: none (no preload), {}{extra}", names::STRATEGY_NAMES)
            }),
        }
    }
}

impl fmt::Display for Arm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arm::None => f.write_str("none"),
            Arm::Strategy(s) => f.write_str(s.name()),
            Arm::GlibcAdaptive => f.write_str("glibc-adaptive"),
            Arm::LockFree => f.write_str("lock-free"),
        }
    }
}

/// clap value parser for `ab`'s and `run`'s arms.
pub fn parse_arm(text: &str) -> Result<Arm, String> {
    Arm::parse(text, false)
}

/// clap value parser for `bench`'s arms.
pub fn parse_bench_arm(text: &str) -> Result<Arm, String> {
    Arm::parse(text, true)
}

/// Adds `none` before the arms when `glibc` is compared and `none` is not already
/// there: `glibc` forwards every call through the library, `none` has no library, so
/// the two together show what the preload itself costs.
pub fn with_none_baseline(arms: &mut Vec<Arm>) {
    if arms.contains(&Arm::Strategy(Strategy::Glibc)) && !arms.contains(&Arm::None) {
        arms.insert(0, Arm::None);
    }
}

/// `existing` with `lib` appended (`:`-separated), unless `lib` is already in it.
pub fn append_preload(existing: Option<OsString>, lib: &Path) -> OsString {
    match existing {
        Some(e) if !e.is_empty() => {
            if preload_items(&e).any(|item| Path::new(item) == lib) {
                return e;
            }
            let mut out = e.clone();
            out.push(":");
            out.push(lib.as_os_str());
            out
        }
        _ => lib.as_os_str().to_os_string(),
    }
}

/// `existing` without any `libspinmutex.so`: what an arm without the library gets.
pub fn remove_preload(existing: Option<OsString>) -> Option<OsString> {
    let e = existing?;
    let kept: Vec<String> = preload_items(&e)
        .filter(|item| !item.is_empty() && Path::new(item).file_name() != Some(LIB_NAME.as_ref()))
        .map(String::from)
        .collect();
    (!kept.is_empty()).then(|| kept.join(":").into())
}

fn preload_items(list: &std::ffi::OsStr) -> impl Iterator<Item = &str> {
    list.to_str().unwrap_or("").split([':', ' '])
}

/// Prepares `cmd` for `arm`: the library appended to the inherited LD_PRELOAD (or
/// removed from it for `none`), the strategy, then `env` (later settings win).
pub fn apply(arm: Arm, cmd: &mut Command, lib: &Path, env: &[(String, String)]) {
    match arm.strategy() {
        Some(strategy) => {
            cmd.env("LD_PRELOAD", append_preload(std::env::var_os("LD_PRELOAD"), lib));
            cmd.env(names::STRATEGY.name, strategy.name());
        }
        None => match remove_preload(std::env::var_os("LD_PRELOAD")) {
            Some(rest) => {
                cmd.env("LD_PRELOAD", rest);
            }
            None => {
                cmd.env_remove("LD_PRELOAD");
            }
        },
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preload_is_appended_once_and_removed_for_none() {
        let lib = Path::new("/opt/lib/libspinmutex.so");
        assert_eq!(append_preload(None, lib), OsString::from("/opt/lib/libspinmutex.so"));
        assert_eq!(append_preload(Some("".into()), lib), OsString::from("/opt/lib/libspinmutex.so"));
        assert_eq!(
            append_preload(Some("/x/libfoo.so".into()), lib),
            OsString::from("/x/libfoo.so:/opt/lib/libspinmutex.so")
        );
        assert_eq!(
            append_preload(Some("/opt/lib/libspinmutex.so:/x/a.so".into()), lib),
            OsString::from("/opt/lib/libspinmutex.so:/x/a.so")
        );
        assert_eq!(remove_preload(Some("/a/libspinmutex.so:/x/a.so".into())), Some("/x/a.so".into()));
        assert_eq!(remove_preload(Some("/a/libspinmutex.so".into())), None);
        assert_eq!(remove_preload(None), None);
    }

    #[test]
    fn arms() {
        assert_eq!(parse_arm("none"), Ok(Arm::None));
        assert_eq!(parse_arm("spin"), Ok(Arm::Strategy(Strategy::Spin)));
        let e = parse_arm("spinn").unwrap_err();
        assert!(e.contains("none (no preload), glibc, futex, spin"), "{e}");
        assert!(parse_arm("glibc-adaptive").is_err());
        assert_eq!(parse_bench_arm("glibc-adaptive"), Ok(Arm::GlibcAdaptive));
        let mut arms = vec![Arm::Strategy(Strategy::Glibc), Arm::Strategy(Strategy::Spin)];
        with_none_baseline(&mut arms);
        assert_eq!(arms[0], Arm::None);
        let mut arms = vec![Arm::Strategy(Strategy::Spin)];
        with_none_baseline(&mut arms);
        assert_eq!(arms.len(), 1);
    }
}
