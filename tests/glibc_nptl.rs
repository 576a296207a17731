//! glibc's own nptl tests (every test of `nptl/` and `sysdeps/pthread/` of the installed
//! glibc that builds outside glibc's tree), built from Debian's `glibc-source` package by
//! `scripts/glibc-tests.sh` and run without the preload and with it: the lock tests
//! (mutex, condition variable, robust, PI, PP, C11, rwlock, timed lock) under every
//! configuration (`glibc`, `futex`, `spin`, `kernel`, `auto`, `spin` with
//! `SPINMUTEX_FAIR=1`, `spin` with `SPINMUTEX_STATS=1`), the others under `spin`, `kernel`,
//! `auto` and with statistics. The script prints one table, test × configuration, and fails when a test
//! that passes without the preload fails with it (twice: a failure runs again, alone,
//! before it counts). Skipped, with the package named, where `glibc-source` is not
//! installed.

mod common;

use common::harness::{Need, Suite};
use common::lib_path;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs the whole suite, printing the script's output as it comes (the table is the
/// point), and fails with the failing pairs.
fn glibc_nptl_tests_under_every_configuration() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/glibc-tests.sh");
    let mut child = Command::new("bash")
        .arg(&script)
        .arg("--lib")
        .arg(lib_path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    // Each failing pair: its FAILED line and the indented lines of output under it.
    let mut failed = Vec::new();
    let mut in_failure = false;
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let line = line.expect("read the script's output");
        println!("{line}");
        in_failure = line.starts_with("FAILED:") || (in_failure && line.starts_with("    "));
        if in_failure {
            failed.push(line);
        }
    }
    let status = child.wait().expect("wait for the script");
    assert!(
        status.success(),
        "scripts/glibc-tests.sh exited with {status}; glibc's tests that pass without the preload and \
         fail with it (the table above gives every cell):\n{}",
        failed.join("\n")
    );
}

/// The source tarball of the installed glibc, as Debian's `glibc-source` installs it.
fn glibc_source_tarball() -> &'static str {
    let out = Command::new("getconf").arg("GNU_LIBC_VERSION").output().expect("run getconf");
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.split_whitespace().nth(1).unwrap_or("unknown").to_string();
    Box::leak(format!("/usr/src/glibc/glibc-{version}.tar.xz").into_boxed_str())
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    suite.needs(
        "glibc_nptl_tests_under_every_configuration",
        &[Need::File(glibc_source_tarball(), "glibc-source"), Need::Program("xz", "xz-utils")],
        glibc_nptl_tests_under_every_configuration,
    );
    suite.run()
}
