//! Other tools that watch a program's locks: Valgrind's helgrind and drd, and
//! ThreadSanitizer.
//!
//! Each sees lock calls by standing in front of glibc's functions: helgrind and drd
//! redirect calls into libc, ThreadSanitizer's runtime defines `pthread_mutex_lock` and
//! friends itself. A preloaded library that serves the locks comes first and hides them,
//! and the tool then reports thousands of races that are not there. So when one of them
//! is in the process, this library steps aside: every call goes on to the next
//! definition (the tool's, which calls glibc's), the condition-variable waits included
//! (`cond`), statistics and tracing stay off, and one line on standard error says why. (AddressSanitizer refuses to run when another
//! library is preloaded before its runtime, and says so itself.)

use core::ffi::{c_char, c_int, c_void, CStr};

/// Module names that give a lock-watching tool away, and the tool's name.
const TELLTALES: &[(&[u8], &str)] = &[
    (b"vgpreload_helgrind", "Valgrind's helgrind"),
    (b"vgpreload_drd", "Valgrind's drd"),
    (b"libtsan.so", "ThreadSanitizer"),
];

/// The lock-watching tool present in this process, if any.
pub fn lock_watcher() -> Option<&'static str> {
    let mut found: Option<&'static str> = None;
    // SAFETY: dl_iterate_phdr calls `visit` with valid module records and our pointer.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut found as *mut Option<&'static str>).cast()) };
    if found.is_some() {
        return found;
    }
    // A ThreadSanitizer runtime linked into the executable (clang's default).
    // SAFETY: dlsym with a NUL-terminated name only looks the symbol up.
    let tsan = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__tsan_init".as_ptr()) };
    (!tsan.is_null()).then_some("ThreadSanitizer")
}

unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: the loader passes a valid record; `data` is the `Option` passed above.
    let (name, found) = unsafe { ((*info).dlpi_name, &mut *data.cast::<Option<&'static str>>()) };
    if name.is_null() {
        return 0;
    }
    // SAFETY: module names are NUL-terminated strings owned by the loader.
    let name = unsafe { CStr::from_ptr(name as *const c_char) }.to_bytes();
    let tool = TELLTALES.iter().find(|(telltale, _)| name.windows(telltale.len()).any(|w| w == *telltale));
    match tool {
        Some((_, tool)) => {
            *found = Some(tool);
            1
        }
        None => 0,
    }
}
