//! The library's signal handlers, kept out of the program's sight.
//!
//! With statistics on, the library handles two kinds of signal (see `observe::report`):
//! the one that asks for a report (SPINMUTEX_STATS_SIGNAL), and the signals that end a
//! program on request, [`ENDINGS`], whose handler writes the report the process would
//! have written at exit and then lets the same signal end it, as the default action
//! would have. Each is installed at load, and only over the default action.
//!
//! A program must still find its signals as it left them, since some take a signal
//! only if it is at its default action (CPython raises KeyboardInterrupt on SIGINT only
//! then). So `sigaction` and the `signal` family are wrapped, and the ending handler
//! stands for the default action both ways:
//!
//! - a disposition whose handler is one of the library's reads as the default action
//!   (SIG_DFL, no flags, an empty mask);
//! - setting one of [`ENDINGS`] to the default action installs the ending handler
//!   instead (CPython, interrupted, ends by giving SIGINT back its default action and
//!   raising it, past the point where a report would be written at exit).
//!
//! Any other disposition the program sets, its own handler or SIG_IGN, replaces the
//! library's as it would replace the default action, and that signal writes no report.

use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use libc::{c_int, sighandler_t};
use std::sync::OnceLock;

use crate::real;

/// SIGINT (Ctrl-C), SIGTERM (kill, timeout, a service manager), SIGHUP (the terminal
/// went away) and SIGPIPE (the reader went away: `| head`). Not SIGQUIT: who asks for
/// a core dump wants the process exactly as it was.
pub const ENDINGS: [c_int; 4] = spinmutex_names::ENDING_SIGNALS;
const _: () = assert!(
    ENDINGS[0] == libc::SIGINT
        && ENDINGS[1] == libc::SIGTERM
        && ENDINGS[2] == libc::SIGHUP
        && ENDINGS[3] == libc::SIGPIPE
);

/// The handler of the report on demand, once installed; 0 before.
static ON_DEMAND: AtomicUsize = AtomicUsize::new(0);

/// The action that stands for the default one of [`ENDINGS`], once set.
static ENDING: OnceLock<libc::sigaction> = OnceLock::new();

/// Installs `handler`, the report on demand, for `signal` if the program left it at its
/// default action; the handler runs with `blocked` (and `signal`) blocked, a 0 there
/// standing for none.
pub fn take_on_demand(signal: c_int, handler: extern "C" fn(c_int), blocked: &[c_int]) {
    let action = action(handler, blocked);
    ON_DEMAND.store(action.sa_sigaction, Relaxed);
    install_over_default(signal, &action);
}

/// Installs `handler` for each of [`ENDINGS`] the program left at its default action,
/// and from now on in place of the default action the program sets for one of them.
pub fn take_endings(handler: extern "C" fn(c_int), blocked: &[c_int]) {
    let action = ENDING.get_or_init(|| action(handler, blocked));
    for signal in ENDINGS {
        install_over_default(signal, action);
    }
}

fn action(handler: extern "C" fn(c_int), blocked: &[c_int]) -> libc::sigaction {
    // SAFETY: sigaction is plain data, all zero valid; the mask is initialised by
    // sigemptyset before use.
    unsafe {
        let mut action: libc::sigaction = core::mem::zeroed();
        action.sa_sigaction = handler as sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        for &s in blocked.iter().filter(|&&s| s != 0) {
            libc::sigaddset(&mut action.sa_mask, s);
        }
        action
    }
}

fn install_over_default(signal: c_int, action: &libc::sigaction) {
    // SAFETY: glibc's sigaction; the query first, so that a disposition the program
    // chose is never replaced.
    unsafe {
        let mut old: libc::sigaction = core::mem::zeroed();
        if real::sigaction(signal, core::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_DFL {
            real::sigaction(signal, action, core::ptr::null_mut());
        }
    }
}

/// Called from the library's handler for `signal`: gives the signal its default action
/// back and sends it to this thread again, so that it ends the process, with the status
/// its default action gives, as soon as the handler returns (the signal is blocked
/// until then).
pub fn end_by(signal: c_int) {
    // SAFETY: sigaction (SIG_DFL is all zero) and raise are async-signal-safe.
    unsafe {
        let default: libc::sigaction = core::mem::zeroed();
        real::sigaction(signal, &default, core::ptr::null_mut());
        libc::raise(signal);
    }
}

/// Whether `handler` is one of the library's.
fn ours(handler: sighandler_t) -> bool {
    handler != libc::SIG_DFL
        && (handler == ON_DEMAND.load(Relaxed) || ENDING.get().is_some_and(|a| a.sa_sigaction == handler))
}

/// The handler the program is shown: the default action in place of one of ours.
fn shown(handler: sighandler_t) -> sighandler_t {
    if ours(handler) {
        libc::SIG_DFL
    } else {
        handler
    }
}

/// What stands for the default action of `signal`, if the library has a stand-in.
fn stand_in(signal: c_int) -> Option<&'static libc::sigaction> {
    ENDING.get().filter(|_| ENDINGS.contains(&signal))
}

/// The handler to set in place of `handler`: the stand-in for the default action.
fn to_set(signal: c_int, handler: sighandler_t) -> sighandler_t {
    match stand_in(signal) {
        Some(action) if handler == libc::SIG_DFL => action.sa_sigaction,
        _ => handler,
    }
}

#[no_mangle]
pub unsafe extern "C" fn sigaction(
    signal: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    // SAFETY: `act`, if not null, points to the caller's action (sigaction's contract).
    let act = match (unsafe { act.as_ref() }, stand_in(signal)) {
        (Some(a), Some(instead)) if a.sa_sigaction == libc::SIG_DFL => instead,
        _ => act,
    };
    // SAFETY: the caller's arguments go to glibc's function, the action perhaps ours.
    let result = unsafe { real::sigaction(signal, act, old) };
    // SAFETY: glibc just filled the caller's `old`, so it is writable.
    if let Some(old) = unsafe { old.as_mut() }.filter(|o| result == 0 && ours(o.sa_sigaction)) {
        // SAFETY: all zero is the default action with no flags and an empty mask.
        *old = unsafe { core::mem::zeroed() };
    }
    result
}

/// The functions that set a handler and return the old one: glibc's `signal` (also
/// named `bsd_signal` and `ssignal`), the System V `sysv_signal` (which a strict ISO C
/// program's `signal` is), and `sigset`. Each is called with the stand-in in place of
/// SIG_DFL, so that whatever else it does (`sigset` unblocks the signal) is done.
macro_rules! stand_in_for_default {
    ($($name:ident),*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(signal: c_int, handler: sighandler_t) -> sighandler_t {
            // SAFETY: the caller's arguments go to glibc's function, the handler perhaps
            // the library's stand-in for the default action.
            shown(unsafe { real::$name(signal, to_set(signal, handler)) })
        }
    )*};
}

stand_in_for_default!(signal, bsd_signal, ssignal, sysv_signal, __sysv_signal, sigset);
