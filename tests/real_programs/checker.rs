//! The checks themselves: the binding log's parser, the interposition check refusing a
//! run without the preload, and the generated input.

use super::*;

pub(crate) fn binding_log_lines_are_parsed() {
    let scratch = Scratch::new("parse");
    let dir = scratch.subdir("log");
    fs::write(
        dir.join("ld.123"),
        "     123:\tbinding file /lib/x86_64-linux-gnu/liblzma.so.5 [0] to /t/target/release/libspinmutex.so [0]: \
         normal symbol `pthread_mutex_lock' [GLIBC_2.2.5]\n\
         \x20    123:\tbinding file /t/libspinmutex.so [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol \
         `pthread_mutex_unlock'\n\
         \x20    123:\tsymbol=malloc;  lookup in file=/usr/bin/xz [0]\n\
         \x20    123:\tbinding file /x/real_cpp [0] to /t/libspinmutex.so [0]: normal symbol `pthread_mutex_unlock'\
         \x20    124:\tbinding file /x/real_cpp [0] to /t/libspinmutex.so [0]: normal symbol `pthread_mutex_lock' \
         [GLIBC_2.2.5]\n [GLIBC_2.2.5]\n",
    )
    .expect("write log");
    let log = bindings(&dir);
    assert_eq!(log.len(), 4, "{log:?}");
    // Two threads' messages interleaved on one line: both are found.
    assert_eq!(
        (log[2].symbol.as_str(), log[3].symbol.as_str()),
        ("pthread_mutex_unlock", "pthread_mutex_lock")
    );
    assert_eq!(log[0].from, "/lib/x86_64-linux-gnu/liblzma.so.5");
    assert_eq!(log[0].to, "/t/target/release/libspinmutex.so");
    assert_eq!(log[0].symbol, "pthread_mutex_lock");
    // The library's own look-up of glibc's function is not a failed interposition.
    assert_interposed("sample", &dir, &[must_bind("liblzma.so")]);
}

/// The binding check fails a program that never reached the library: run one without
/// the preload, with the log on.
pub(crate) fn binding_check_rejects_a_run_without_the_preload() {
    let program = c_test("real_cpp");
    let scratch = Scratch::new("no-preload");
    let dir = scratch.subdir("ld-debug");
    let mut cmd = preloaded(&program, None);
    log_bindings(&mut cmd, &dir);
    run_bounded(cmd, HANG_GUARD).assert_success("real_cpp without the preload");
    assert!(!bindings(&dir).is_empty(), "LD_DEBUG=bindings logged nothing in {}", dir.display());
    let check = check_interposed("no preload", &dir, &[must_bind("real_cpp")]);
    assert!(check.is_err(), "the binding check passed a run without the preload");
    // And a binding to glibc's own function is caught even when the required one is there.
    let dir = scratch.subdir("sample");
    fs::write(
        dir.join("ld.1"),
        "1:\tbinding file /x/real_cpp [0] to /t/libspinmutex.so [0]: normal symbol `pthread_mutex_lock'\n\
         1:\tbinding file /x/libfoo.so [0] to /lib/libc.so.6 [0]: normal symbol `pthread_mutex_unlock'\n",
    )
    .expect("write log");
    let check = check_interposed("partial", &dir, &[must_bind("real_cpp")]);
    assert!(
        check.is_err_and(|e| e.contains("libfoo.so binds pthread_mutex_unlock")),
        "mixed bindings passed"
    );
}

pub(crate) fn input_generator_is_deterministic_and_compressible() {
    let scratch = Scratch::new("input");
    let (a, b) = (scratch.join("a"), scratch.join("b"));
    write_input(&a, 1 << 20);
    write_input(&b, 1 << 20);
    assert_same_bytes("generated input", &a, &b);
    let data = fs::read(&a).expect("read input");
    assert!(data.len() >= 1 << 20 && data.len() < (1 << 20) + 128);
    // Not constant, not random: a few dozen distinct bytes.
    let mut seen = [false; 256];
    data.iter().for_each(|&c| seen[c as usize] = true);
    let distinct = seen.iter().filter(|&&s| s).count();
    assert!((20..=64).contains(&distinct), "{distinct} distinct bytes");
}
