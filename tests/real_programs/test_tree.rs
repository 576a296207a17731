//! Programs of the test tree: SQLite in serialized mode, jemalloc preloaded beside the
//! library, and a C++ program on the standard library's mutexes.

use super::*;

/// Runs `program args` without the preload and under each strategy (with `extra_preload`
/// before or after the library, when given); every run exits 0 with the output of the
/// first, which ends in "ok".
fn same_output_everywhere(
    what: &str,
    program: &Path,
    args: &[&Path],
    preload_orders: &[Option<&str>],
    musts: &[MustBind],
    scratch: &Scratch,
) {
    let mut reference: Option<String> = None;
    for strategy in modes() {
        let orders: &[Option<&str>] = if strategy.is_some() { preload_orders } else { &[None] };
        for order in orders {
            let mut cmd = preloaded(program, strategy);
            cmd.args(args);
            let mut what = what.to_string();
            if let Some(order) = order {
                let lib = lib_path();
                let preload = match *order {
                    "before" => format!("{JEMALLOC}:{}", lib.display()),
                    _ => format!("{}:{JEMALLOC}", lib.display()),
                };
                cmd.env("LD_PRELOAD", preload);
                what = format!("{what} (jemalloc {order} the library)");
            }
            let out = run_checked(&what, scratch, strategy, cmd, musts);
            assert!(
                out.stdout.ends_with("ok\n"),
                "{what} {}: incomplete output\n{}",
                label(strategy),
                out.stdout
            );
            match &reference {
                None => reference = Some(out.stdout),
                Some(r) => {
                    assert_eq!(
                        &out.stdout,
                        r,
                        "{what}: output {} differs from the run without it",
                        label(strategy)
                    )
                }
            }
        }
    }
}

/// SQLite in serialized mode: one shared connection used by four threads, then one
/// connection per thread to a WAL file database (see c-tests/real_sqlite.c). Row counts,
/// sums and checksums are exact (the program checks them and prints them).
pub(crate) fn sqlite_serialized_threads() {
    let program = c_test("real_sqlite");
    let scratch = Scratch::new("sqlite");
    let db_dir = scratch.subdir("db");
    // libsqlite3 does the locking (its connection, static and VFS mutexes).
    let musts = [must_bind("libsqlite3.so")];
    same_output_everywhere("real_sqlite", &program, &[&db_dir], &[None], &musts, &scratch);
}

/// jemalloc co-preloaded, in both orders: a malloc-heavy program whose threads exchange
/// buffers through a mutex + condition variable queue (see c-tests/real_jemalloc.c).
/// jemalloc must be the allocator and must take its own locks through the library.
pub(crate) fn jemalloc_co_preloaded() {
    let program = c_test("real_jemalloc");
    let scratch = Scratch::new("jemalloc");
    let musts = [
        must_bind("real_jemalloc"),
        // jemalloc tries first and locks only when contended; it is linked lazily, so
        // either binding proves that it called the library.
        MustBind { object: "libjemalloc.so", symbols: &["pthread_mutex_trylock", "pthread_mutex_lock"] },
    ];
    same_output_everywhere(
        "real_jemalloc",
        &program,
        &[],
        &[Some("before"), Some("after")],
        &musts,
        &scratch,
    );

    // And jemalloc really is the allocator in those runs.
    let log_dir = scratch.subdir("ld-debug");
    let mut cmd = preloaded(&program, Some("spin"));
    cmd.env("LD_PRELOAD", format!("{JEMALLOC}:{}", lib_path().display()));
    log_bindings(&mut cmd, &log_dir);
    run_bounded(cmd, HANG_GUARD).assert_success("real_jemalloc under spin with jemalloc");
    assert!(
        bindings(&log_dir).iter().any(|b| file_name(&b.from).starts_with("real_jemalloc")
            && b.symbol == "malloc"
            && file_name(&b.to).starts_with("libjemalloc.so")),
        "real_jemalloc's malloc is not jemalloc's"
    );
}

/// A C++ program on std::mutex, std::recursive_mutex, std::condition_variable,
/// std::shared_ptr (and its atomic operations, which lock inside libstdc++) and
/// std::async (see c-tests/real_cpp.cpp).
pub(crate) fn cpp_standard_library() {
    let program = c_test("real_cpp");
    let scratch = Scratch::new("cpp");
    let musts = [must_bind("real_cpp"), must_bind("libstdc++.so")];
    same_output_everywhere("real_cpp", &program, &[], &[None], &musts, &scratch);
}

// The checker itself
