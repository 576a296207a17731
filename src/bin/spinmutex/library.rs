//! Finding `libspinmutex.so` and preparing a child's environment for a strategy.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const LIB_NAME: &str = "libspinmutex.so";

/// Where the library is: `$SPINMUTEX_LIB` when set, else beside this command, else in
/// `../lib` relative to it. The path returned is absolute.
pub fn find() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("SPINMUTEX_LIB").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(&p);
        return absolute(&path).ok_or_else(|| format!("SPINMUTEX_LIB={}: no such file", path.display()));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this command's own path: {e}"))?;
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let candidates = [dir.join(LIB_NAME), dir.join("..").join("lib").join(LIB_NAME)];
    for c in &candidates {
        if let Some(found) = absolute(c) {
            return Ok(found);
        }
    }
    Err(format!(
        "cannot find {LIB_NAME}: looked at {} and {}; set SPINMUTEX_LIB to its path",
        candidates[0].display(),
        candidates[1].display()
    ))
}

fn absolute(p: &Path) -> Option<PathBuf> {
    if !p.is_file() {
        return None;
    }
    p.canonicalize().ok()
}

/// `existing` with `lib` appended (`:`-separated), unless `lib` is already in it.
pub fn append_preload(existing: Option<OsString>, lib: &Path) -> OsString {
    let lib_s = lib.as_os_str();
    match existing {
        Some(e) if !e.is_empty() => {
            let text = e.to_string_lossy();
            let already = text.split([':', ' ']).any(|item| Path::new(item) == lib);
            if already {
                return e;
            }
            let mut out = e.clone();
            out.push(":");
            out.push(lib_s);
            out
        }
        _ => lib_s.to_os_string(),
    }
}

/// How a child is set up for one strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// False for `none`: the child runs without the library.
    pub preload: bool,
    /// The value of SPINMUTEX_STRATEGY, if any.
    pub strategy: Option<String>,
}

impl Setup {
    /// `none` runs without the library; anything else is passed as SPINMUTEX_STRATEGY.
    pub fn for_strategy(name: &str) -> Setup {
        if name == "none" {
            Setup { preload: false, strategy: None }
        } else {
            Setup { preload: true, strategy: Some(name.to_string()) }
        }
    }

    /// Applies the setup to `cmd`: the library appended to the inherited LD_PRELOAD,
    /// the strategy, then `env` (later settings win).
    pub fn apply(&self, cmd: &mut Command, lib: &Path, env: &[(String, String)]) {
        if self.preload {
            cmd.env("LD_PRELOAD", append_preload(std::env::var_os("LD_PRELOAD"), lib));
        }
        if let Some(s) = &self.strategy {
            cmd.env("SPINMUTEX_STRATEGY", s);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preload_is_appended_once() {
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
    }

    #[test]
    fn none_means_no_preload() {
        assert!(!Setup::for_strategy("none").preload);
        let s = Setup::for_strategy("spin");
        assert!(s.preload);
        assert_eq!(s.strategy.as_deref(), Some("spin"));
    }
}
