//! The hidden subcommands behind `bench`: `__workload` (the C contention workload,
//! run in a child with the library preloaded), `__rwlock_workload` (the C reader-writer
//! workload, for `bench --rwlock`) and `__hog` (a busy loop), and the hogs as `bench`
//! starts them.

use std::process::{Child, Command, Stdio};

type CMain = unsafe extern "C" fn(argc: libc::c_int, argv: *mut *mut libc::c_char) -> libc::c_int;

extern "C" {
    fn spinmutex_contention_main(argc: libc::c_int, argv: *mut *mut libc::c_char) -> libc::c_int;
    fn spinmutex_rwlock_main(argc: libc::c_int, argv: *mut *mut libc::c_char) -> libc::c_int;
}

/// `spinmutex __workload ARGS...`: runs the contention workload (bench/contention.c,
/// compiled by build.rs); its exit status.
pub fn main(rest: &[String]) -> u8 {
    run_c("spinmutex __workload", spinmutex_contention_main, rest)
}

/// `spinmutex __rwlock_workload ARGS...`: runs the reader-writer workload
/// (bench/rwlock.c, compiled by build.rs); its exit status.
pub fn rwlock_main(rest: &[String]) -> u8 {
    run_c("spinmutex __rwlock_workload", spinmutex_rwlock_main, rest)
}

/// Calls a C workload's entry point with `name` and `rest` as its argv.
fn run_c(name: &str, entry: CMain, rest: &[String]) -> u8 {
    use std::ffi::CString;
    let mut owned: Vec<CString> = Vec::with_capacity(rest.len() + 1);
    owned.push(CString::new(name).expect("no NUL"));
    for a in rest {
        match CString::new(a.as_str()) {
            Ok(c) => owned.push(c),
            Err(_) => {
                eprintln!("{name}: argument contains NUL");
                return 2;
            }
        }
    }
    let mut ptrs: Vec<*mut libc::c_char> = owned.iter().map(|c| c.as_ptr() as *mut libc::c_char).collect();
    ptrs.push(std::ptr::null_mut());
    // SAFETY: argv is a NULL-terminated array of NUL-terminated strings that outlive
    // the call; the C side only reads them.
    let rc = unsafe { entry(owned.len() as libc::c_int, ptrs.as_mut_ptr()) };
    rc.clamp(0, 255) as u8
}

/// `spinmutex __hog`: spins until `bench` kills it, or dies (see `Hogs::start`).
pub fn hog() -> u8 {
    let mut x: u64 = 0;
    loop {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// Busy-looping processes (`__hog`), killed when dropped.
pub struct Hogs(Vec<Child>);

impl Hogs {
    /// `n` hogs, each pinned to `cpu` if given.
    pub fn start(n: u64, cpu: Option<usize>) -> Result<Hogs, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this command's path: {e}"))?;
        let mut hogs = Hogs(Vec::new());
        for _ in 0..n {
            let mut cmd = Command::new(&exe);
            crate::process::child::die_with_this_command(&mut cmd);
            let c = cmd
                .arg("__hog")
                .env_remove("LD_PRELOAD")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start a hog: {e}"))?;
            let pid = c.id() as libc::pid_t;
            hogs.0.push(c);
            if let Some(cpu) = cpu {
                crate::bench::scenario::pin(pid, cpu)
                    .map_err(|e| format!("cannot pin a hog to CPU {cpu}: {e}"))?;
            }
        }
        Ok(hogs)
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
