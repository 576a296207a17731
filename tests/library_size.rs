//! The preload library carries nothing of the command: no symbol of a crate only the
//! `spinmutex` command uses (clap, serde, statrs, regex-lite, indicatif...), no import
//! beyond the list it had when the workspace was split (tests/library_imports.txt), and
//! in a release build no more bytes than it had then. A feature of a shared dependency
//! that the command enables, unified into the library's build, fails here. Also: the
//! tests link the dependencies `cargo build` made, rather than building them again.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::harness::{Need, Suite};
use common::lib_path;

/// The release .so when the workspace was split (`debug = 1` then; line tables since).
const RELEASE_FILE_BYTES: u64 = 6_844_600;
/// Its code and data (text + data + bss of `size`), with 5% for the library's own growth:
/// measured again when the `kernel` strategy learned glibc's rules for normal mutexes,
/// output learned never to block, and settings learned secure execution (994,477 at the
/// split), and when the build left `panic = "abort"` for the abort at `extern "C"`
/// boundaries (std's unwinding code: 1,047,653 before, 1,133,665 after, +8.2%), and when
/// `auto` came (its class table and counting stripes, 40 KiB of bss, and its code:
/// 1,191,208, +5.1%). The command's crates leaking in would add hundreds of kilobytes.
const RELEASE_LOADED_BYTES: u64 = 1_191_208 * 105 / 100;

fn nm(args: &[&str]) -> String {
    let out = Command::new("nm").args(args).arg(lib_path()).output().expect("run nm");
    assert!(out.status.success(), "nm failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn imports_are_the_known_ones() {
    let known: Vec<&str> = include_str!("library_imports.txt").lines().collect();
    let new: Vec<String> = nm(&["-D", "--undefined-only"])
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|sym| !known.contains(sym))
        .map(String::from)
        .collect();
    assert!(
        new.is_empty(),
        "libspinmutex.so imports symbols it did not before: {new:?} (add them to tests/library_imports.txt \
         only if the library itself needs them)"
    );
}

fn no_symbol_of_the_command() {
    let symbols = nm(&["-C"]);
    let crates =
        ["serde", "clap", "statrs", "regex_lite", "indicatif", "console::", "spinmutex_cli", "tempfile"];
    let leaked: Vec<&str> =
        symbols.lines().filter(|l| crates.iter().any(|c| l.contains(c))).take(10).collect();
    assert!(leaked.is_empty(), "libspinmutex.so holds code of the command's crates:\n{}", leaked.join("\n"));
}

/// The rlib files of the registry dependencies cargo builds with `args` (at this test's
/// profile and target directory), by package: every unit is fresh after `cargo build`
/// and `cargo test`, so this only asks cargo what it has.
fn dependency_artifacts(args: &[&str]) -> BTreeMap<String, Vec<String>> {
    let dir = common::target_dir();
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(args).args(["--quiet", "--message-format=json", "--package", "spinmutex-cli"]);
    if let Some(profile) = dir.file_name().and_then(|n| n.to_str()).filter(|p| *p != "debug") {
        cargo.args(["--profile", profile]);
    }
    if let Some(target) = dir.parent() {
        cargo.arg("--target-dir").arg(target);
    }
    let out = cargo.current_dir(env!("CARGO_MANIFEST_DIR")).output().expect("run cargo");
    assert!(out.status.success(), "cargo {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut found = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let id = message["package_id"].as_str().unwrap_or("");
        if message["reason"] != "compiler-artifact" || !id.starts_with("registry+") {
            continue;
        }
        let files = message["filenames"].as_array().into_iter().flatten();
        let rlibs: Vec<String> =
            files.filter_map(|f| f.as_str()).filter(|f| f.ends_with(".rlib")).map(String::from).collect();
        if !rlibs.is_empty() {
            found.insert(id.to_string(), rlibs);
        }
    }
    found
}

/// `cargo build` then `cargo test` compiles each dependency once: the tests link the
/// very files the build made. (A `panic = "abort"` profile would make cargo build every
/// dependency again with unwinding for the test harness. The library needs no such
/// setting: every entry point is `extern "C"`, where a panic aborts the process.)
fn tests_reuse_the_builds_dependencies() {
    let built = dependency_artifacts(&["build"]);
    let tested = dependency_artifacts(&["test", "--no-run", "--lib"]);
    let shared: Vec<&String> = built.keys().filter(|id| tested.contains_key(*id)).collect();
    assert!(shared.len() >= 10, "too few dependencies in common to compare: {shared:?}");
    let twice: Vec<&&String> = shared.iter().filter(|id| built[**id] != tested[**id]).collect();
    assert!(twice.is_empty(), "built again for the tests: {twice:?}");
}

fn release_size_is_no_larger() {
    let lib = lib_path();
    let file = std::fs::metadata(&lib).expect("stat the library").len();
    assert!(file <= RELEASE_FILE_BYTES, "{} is {file} bytes, more than {RELEASE_FILE_BYTES}", lib.display());
    let out = Command::new("size").arg(&lib).output().expect("run size");
    let text = String::from_utf8_lossy(&out.stdout);
    let loaded: u64 = text
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|dec| dec.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output of size:\n{text}"));
    assert!(
        loaded <= RELEASE_LOADED_BYTES,
        "{} loads {loaded} bytes, more than {RELEASE_LOADED_BYTES}",
        lib.display()
    );
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    let nm = Need::Program("nm", "binutils");
    suite.needs("imports_are_the_known_ones", &[nm], imports_are_the_known_ones);
    suite.needs("no_symbol_of_the_command", &[Need::Program("nm", "binutils")], no_symbol_of_the_command);
    suite.test("tests_reuse_the_builds_dependencies", tests_reuse_the_builds_dependencies);
    if cfg!(debug_assertions) {
        suite.skip("release_size_is_no_larger", "sizes are checked in release builds (cargo test --release)");
    } else {
        suite.needs(
            "release_size_is_no_larger",
            &[Need::Program("size", "binutils")],
            release_size_is_no_larger,
        );
    }
    suite.run()
}
