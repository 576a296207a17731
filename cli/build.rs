//! Builds the C side of the command with the system compilers:
//!
//! * `../bench/contention.c`, the contention workload of `spinmutex bench`, and
//!   `../bench/rwlock.c`, the reader-writer workload of `spinmutex bench --rwlock`, into a
//!   static library linked into the command only (never into the preloaded library);
//! * the few programs of `../c-tests/` that the command's tests run, into
//!   `$OUT_DIR/c-tests/`, read by the tests from `SPINMUTEX_C_TESTS_DIR`: `ab_tiny`, and
//!   `ab_tiny_static` (the same, linked statically: the library cannot load in it) when
//!   glibc's static libraries are installed; and `stats_sites`, a position-independent
//!   executable with known lock call sites, which the tests strip to check that
//!   `spinmutex report` names them from a separate debug file; and the other programs
//!   the tests run (`wait_ranking`, `auto_classes`, `raise_signal`).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

include!("../build-support/cbuild.rs");

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=../build-support");

    let mut objects = Vec::new();
    for workload in [Path::new("../bench/contention.c"), Path::new("../bench/rwlock.c")] {
        println!("cargo:rerun-if-changed={}", workload.display());
        let obj = out.join(workload.with_extension("o").file_name().expect("a file name"));
        let mut cmd = Command::new("cc");
        cmd.args(["-O2", "-g", "-Wall", "-Werror", "-pthread", "-fPIC", "-c", "-o"]).arg(&obj).arg(workload);
        run(cmd, workload);
        objects.push(obj);
    }
    let archive = out.join("libspinmutex_contention.a");
    let _ = fs::remove_file(&archive);
    let mut ar = Command::new("ar");
    ar.arg("crs").arg(&archive).args(&objects);
    run(ar, Path::new("../bench"));
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=spinmutex_contention");
    println!("cargo:rustc-link-lib=m");

    let tests_out = out.join("c-tests");
    fs::create_dir_all(&tests_out).expect("create c-tests output directory");
    println!("cargo:rustc-env=SPINMUTEX_C_TESTS_DIR={}", tests_out.display());
    let ab_tiny = Path::new("../c-tests/ab_tiny.c");
    compile_program(ab_tiny, &tests_out.join("ab_tiny"), &[]);
    let static_exe = tests_out.join("ab_tiny_static");
    let _ = fs::remove_file(&static_exe);
    if can_link_static() {
        compile_program(ab_tiny, &static_exe, &["-static"]);
    }
    for name in ["stats_sites", "wait_ranking", "auto_classes", "raise_signal"] {
        compile_program(
            &Path::new("../c-tests").join(format!("{name}.c")),
            &tests_out.join(name),
            &["-fPIE", "-pie"],
        );
    }
}
