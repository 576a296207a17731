//! Builds the C side of the preload library's package with the system compilers:
//!
//! * `src/cond.c`, the condition-variable wrappers, into an object linked into the
//!   preload library (with `src/versions.map`, the symbol versions they carry), which
//!   is linked `-z nodelete`;
//! * every `c-tests/*.c` and `c-tests/*.cpp` into an executable in `$OUT_DIR/c-tests/`,
//!   whose directory the library's integration tests read from
//!   `SPINMUTEX_C_TESTS_DIR`. (The contention workload of `spinmutex bench` is built by
//!   the command's own build script, cli/build.rs.)

use std::env;
use std::fs;
use std::path::PathBuf;

include!("build-support/cbuild.rs");

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));

    // The condition-variable wrappers (src/cond.c, src/cond.rs), linked into the preload
    // library only, and the version nodes their symbols carry.
    let (wrappers, versions) = (root.join("src/cond.c"), root.join("src/versions.map"));
    println!("cargo:rerun-if-changed={}", wrappers.display());
    println!("cargo:rerun-if-changed={}", versions.display());
    let object = out.join("cond.o");
    let mut cmd = std::process::Command::new("cc");
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
    // Never unmapped, even by a dlclose of a program that dlopened it: its signal
    // handlers, fork handlers and thread-exit hooks must outlive any such call.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");

    let tests_out = out.join("c-tests");
    fs::create_dir_all(&tests_out).expect("create c-tests output directory");
    println!("cargo:rerun-if-changed=c-tests");
    println!("cargo:rerun-if-changed=build-support");
    println!("cargo:rustc-env=SPINMUTEX_C_TESTS_DIR={}", tests_out.display());

    let mut sources: Vec<PathBuf> = fs::read_dir("c-tests")
        .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    sources.sort();
    for src in sources {
        if compiler_for(&src).is_some() {
            let exe = tests_out.join(src.file_stem().expect("file stem"));
            compile_program(&src, &exe, &[]);
        }
    }
}
