//! The man pages: docs/man/ holds exactly what the current clap definitions generate,
//! `spinmutex man --out DIR` writes the same files, and scripts/install.sh installs them.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::harness::{tests, Suite};
use common::{preloaded, run_bounded, scratch};
use spinmutex_cli::man;

const LIMIT: Duration = Duration::from_secs(120);

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_spinmutex"))
}

fn checked_in() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/man")
}

/// Every `*.1` file of `dir`, by name.
fn pages_in(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "1"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

fn checked_in_pages_are_current() {
    let want: BTreeMap<String, Vec<u8>> = man::pages().into_iter().collect();
    let have = pages_in(&checked_in());
    let mut stale = Vec::new();
    for (name, text) in &want {
        match have.get(name) {
            None => stale.push(format!("{name} is missing")),
            Some(old) if old != text => stale.push(format!("{name} differs")),
            Some(_) => {}
        }
    }
    stale.extend(
        have.keys().filter(|n| !want.contains_key(*n)).map(|n| format!("{n} is no longer generated")),
    );
    assert!(
        stale.is_empty(),
        "docs/man/ is out of date with the command's definitions ({}); regenerate it with `{}` and commit the result",
        stale.join(", "),
        man::REGENERATE
    );
}

fn man_out_writes_the_generated_pages() {
    let dir = scratch();
    let out = dir.path().join("man");
    let o = assert_cmd::Command::new(bin()).args(["man", "--out"]).arg(&out).assert().success();
    assert!(o.get_output().stdout.is_empty(), "man --out printed on stdout");
    let want: BTreeMap<String, Vec<u8>> = man::pages().into_iter().collect();
    assert_eq!(pages_in(&out), want);
    for sub in man::PAGES {
        let o = assert_cmd::Command::new(bin()).args(["man", sub]).assert().success();
        assert_eq!(o.get_output().stdout, want[&format!("spinmutex-{sub}.1")], "man {sub}");
    }
    assert_cmd::Command::new(bin()).args(["man", "run", "--out"]).arg(&out).assert().code(2);
}

fn install_script_installs_the_man_pages() {
    let dir = scratch();
    let prefix = dir.path().join("prefix");
    let from = bin().parent().unwrap().to_path_buf();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/install.sh");
    let mut cmd = preloaded("sh", None);
    cmd.arg(&script).arg("--prefix").arg(&prefix).arg("--from").arg(&from);
    run_bounded(cmd, LIMIT).assert_success("install.sh");
    assert_eq!(pages_in(&prefix.join("share/man/man1")), pages_in(&checked_in()));
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    tests!(
        suite,
        checked_in_pages_are_current,
        man_out_writes_the_generated_pages,
        install_script_installs_the_man_pages,
    );
    suite.run()
}
