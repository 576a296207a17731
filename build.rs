//! Builds the C side of the package with the system compilers:
//!
//! * `src/cond.c`, the condition-variable wrappers, into an object linked into the
//!   preload library (with `src/versions.map`, the symbol versions they carry);
//! * every `c-tests/*.c` and `c-tests/*.cpp` into an executable in `$OUT_DIR/c-tests/`,
//!   whose directory the integration tests read from `SPINMUTEX_C_TESTS_DIR`;
//! * `bench/contention.c`, the contention workload, into an object linked into the
//!   `spinmutex` command only (never into the preloaded library).
//!
//! A source file can carry these header lines:
//! `// build-flags: -lsqlite3` (extra compiler/linker flags),
//! `// requires-header: sqlite3.h` (skip the file when that header is not installed;
//! the test that runs it then reports the program as missing), and
//! `// build-optional: why` (a failed compile skips the file instead of failing the
//! build, e.g. when a sanitizer runtime is not installed).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let tests_out = out.join("c-tests");
    fs::create_dir_all(&tests_out).expect("create c-tests output directory");

    // The condition-variable wrappers (src/cond.c, src/cond.rs), linked into the preload
    // library only, and the version nodes their symbols carry.
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let (wrappers, versions) = (root.join("src/cond.c"), root.join("src/versions.map"));
    println!("cargo:rerun-if-changed={}", wrappers.display());
    println!("cargo:rerun-if-changed={}", versions.display());
    let object = out.join("cond.o");
    let mut cmd = Command::new("cc");
    cmd.args([
        "-O2",
        "-g",
        "-fPIC",
        "-fexceptions",
        "-fasynchronous-unwind-tables",
        "-Wall",
        "-Werror",
        "-c",
        "-o",
    ])
    .arg(&object)
    .arg(&wrappers);
    run(cmd, &wrappers);
    println!("cargo:rustc-cdylib-link-arg={}", object.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", versions.display());
    println!("cargo:rerun-if-changed=c-tests");
    println!("cargo:rerun-if-changed=bench");
    println!("cargo:rustc-env=SPINMUTEX_C_TESTS_DIR={}", tests_out.display());

    let mut sources: Vec<PathBuf> = fs::read_dir("c-tests")
        .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    sources.sort();
    for src in sources {
        let compiler = match src.extension().and_then(|e| e.to_str()) {
            Some("c") => "cc",
            Some("cpp") => "c++",
            _ => continue,
        };
        println!("cargo:rerun-if-changed={}", src.display());
        let header = HeaderLines::read(&src);
        if !header.requirements_met(compiler) {
            continue;
        }
        let exe = tests_out.join(src.file_stem().expect("file stem"));
        let mut cmd = Command::new(compiler);
        cmd.args(["-O2", "-g", "-Wall", "-Werror", "-pthread", "-o"]).arg(&exe).arg(&src).args(&header.flags);
        if header.optional {
            cmd.stderr(std::process::Stdio::null());
            if !cmd.status().is_ok_and(|s| s.success()) {
                let _ = fs::remove_file(&exe);
            }
            continue;
        }
        run(cmd, &src);
    }

    let workload = Path::new("bench/contention.c");
    if workload.exists() {
        println!("cargo:rerun-if-changed={}", workload.display());
        let obj = out.join("contention.o");
        let mut cmd = Command::new("cc");
        cmd.args(["-O2", "-g", "-Wall", "-Werror", "-pthread", "-fPIE", "-c", "-o"]).arg(&obj).arg(workload);
        run(cmd, workload);
        println!("cargo:rustc-link-arg-bins={}", obj.display());
        println!("cargo:rustc-link-arg-bins=-lm");
        println!("cargo:rustc-cfg=spinmutex_workload");
    }
    println!("cargo::rustc-check-cfg=cfg(spinmutex_workload)");
}

/// The optional `// build-flags:` and `// requires-header:` lines of a C source.
struct HeaderLines {
    flags: Vec<String>,
    headers: Vec<String>,
    optional: bool,
}

impl HeaderLines {
    fn read(src: &Path) -> Self {
        let text = fs::read_to_string(src).unwrap_or_default();
        let mut lines = HeaderLines { flags: Vec::new(), headers: Vec::new(), optional: false };
        for line in text.lines().take(20) {
            if let Some(rest) = line.strip_prefix("// build-flags:") {
                lines.flags.extend(rest.split_whitespace().map(String::from));
            } else if let Some(rest) = line.strip_prefix("// requires-header:") {
                lines.headers.extend(rest.split_whitespace().map(String::from));
            } else if line.starts_with("// build-optional:") {
                lines.optional = true;
            }
        }
        lines
    }

    /// True when every required header can be included by `compiler`.
    fn requirements_met(&self, compiler: &str) -> bool {
        self.headers.iter().all(|h| {
            let probe = format!("#include <{h}>\n");
            let lang = if compiler == "c++" { "c++" } else { "c" };
            let mut child = match Command::new(compiler)
                .args(["-x", lang, "-E", "-o", "/dev/null", "-"])
                .stdin(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
            {
                Ok(c) => c,
                Err(_) => return false,
            };
            use std::io::Write;
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(probe.as_bytes());
            }
            child.wait().map(|s| s.success()).unwrap_or(false)
        })
    }
}

fn run(mut cmd: Command, src: &Path) {
    let status = cmd.status().unwrap_or_else(|e| panic!("cannot run compiler for {}: {e}", src.display()));
    assert!(status.success(), "compiling {} failed", src.display());
}
