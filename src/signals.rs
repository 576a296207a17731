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
//! library's as it would replace the default action, and that signal writes no report,
//! with one exception. A handler set to run once (SA_RESETHAND, and `sysv_signal`'s
//! System V semantics) gives the signal its default action back as it runs, and
//! programs use that to end by the signal after cleaning up (Node.js: restore the
//! terminal, then raise the signal again). The kernel would reset it to SIG_DFL, past
//! the library; so on [`ENDINGS`] such a handler is run by [`run_once`], which resets
//! the disposition to the stand-in first, and the program is shown its own handler.

use core::ffi::c_void;
use core::sync::atomic::{AtomicI32, AtomicUsize, Ordering::Relaxed};
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

/// The action that stands for the default one of [`ENDINGS`], and its handler, once set.
static ENDING: OnceLock<(libc::sigaction, extern "C" fn(c_int))> = OnceLock::new();

/// A program's handler to run once on one of [`ENDINGS`] (same index), with its flags;
/// 0 when there is none, or when a signal took it to run it.
struct Once {
    handler: AtomicUsize,
    flags: AtomicI32,
}

static ONCE: [Once; ENDINGS.len()] =
    [const { Once { handler: AtomicUsize::new(0), flags: AtomicI32::new(0) } }; 4];

/// `sysv_signal`'s flags besides SA_RESETHAND and SA_NODEFER: glibc's, a historical
/// no-op (not in the libc crate).
const SA_INTERRUPT: c_int = 0x2000_0000;

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
    let (action, _) = ENDING.get_or_init(|| (action(handler, blocked), handler));
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
        && (handler == ON_DEMAND.load(Relaxed)
            || ENDING.get().is_some_and(|(a, _)| a.sa_sigaction == handler))
}

/// The handler the program is shown: the default action in place of one of ours.
fn shown(handler: sighandler_t) -> sighandler_t {
    if ours(handler) {
        libc::SIG_DFL
    } else {
        handler
    }
}

/// For one of [`ENDINGS`], once the library stands for its default action: the
/// signal's index in [`ENDINGS`] (and [`ONCE`]), the stand-in action and its handler.
fn ending(signal: c_int) -> Option<(usize, &'static libc::sigaction, extern "C" fn(c_int))> {
    let (action, handler) = ENDING.get()?;
    Some((ENDINGS.iter().position(|&s| s == signal)?, action, *handler))
}

/// What stands for the default action of `signal`, if the library has a stand-in.
fn stand_in(signal: c_int) -> Option<&'static libc::sigaction> {
    ending(signal).map(|(_, action, _)| action)
}

/// The handler to set in place of `handler`: the stand-in for the default action.
fn to_set(signal: c_int, handler: sighandler_t) -> sighandler_t {
    match stand_in(signal) {
        Some(action) if handler == libc::SIG_DFL => action.sa_sigaction,
        _ => handler,
    }
}

/// Runs the program's handler that was set to run once on `signal`, one of [`ENDINGS`],
/// as the kernel would, but with the disposition reset to the stand-in for the default
/// action instead of to SIG_DFL.
extern "C" fn run_once(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let Some((once, stand_in, on_ending)) = ending(signal) else { return };
    // Taken, so that a second signal, come before the reset below, finds none.
    let handler = ONCE[once].handler.swap(0, Relaxed);
    let flags = ONCE[once].flags.load(Relaxed);
    // SAFETY: glibc's sigaction, async-signal-safe, with the library's action.
    unsafe { real::sigaction(signal, stand_in, core::ptr::null_mut()) };
    match handler {
        // The disposition was already reset for this signal: its default action.
        0 => on_ending(signal),
        // SAFETY: the program set `handler` for this signal, of the type its flags say.
        h if flags & libc::SA_SIGINFO != 0 => unsafe {
            let h: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = core::mem::transmute(h);
            h(signal, info, context)
        },
        // SAFETY: as above.
        h => unsafe {
            let h: extern "C" fn(c_int) = core::mem::transmute(h);
            h(signal)
        },
    }
}

fn run_once_handler() -> sighandler_t {
    let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = run_once;
    f as sighandler_t
}

#[no_mangle]
pub unsafe extern "C" fn sigaction(
    signal: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    let ending = ending(signal);
    let before = ending.map(|(i, ..)| (ONCE[i].handler.load(Relaxed), ONCE[i].flags.load(Relaxed)));
    let mut run_by_us: libc::sigaction;
    // SAFETY: `act`, if not null, points to the caller's action (sigaction's contract).
    let act = match (unsafe { act.as_ref() }, ending) {
        (Some(a), Some((_, instead, _))) if a.sa_sigaction == libc::SIG_DFL => instead,
        (Some(a), Some((i, ..)))
            if a.sa_flags & libc::SA_RESETHAND != 0 && a.sa_sigaction != libc::SIG_IGN =>
        {
            ONCE[i].flags.store(a.sa_flags, Relaxed);
            ONCE[i].handler.store(a.sa_sigaction, Relaxed);
            run_by_us = *a;
            run_by_us.sa_sigaction = run_once_handler();
            run_by_us.sa_flags = (a.sa_flags & !libc::SA_RESETHAND) | libc::SA_SIGINFO;
            &run_by_us
        }
        _ => act,
    };
    // SAFETY: the caller's arguments go to glibc's function, the action perhaps ours.
    let result = unsafe { real::sigaction(signal, act, old) };
    // SAFETY: glibc just filled the caller's `old`, so it is writable.
    let Some(old) = unsafe { old.as_mut() }.filter(|_| result == 0) else { return result };
    match before {
        Some((handler, flags)) if old.sa_sigaction == run_once_handler() && handler != 0 => {
            // The kernel's flags (glibc adds SA_RESTORER), with the program's two back.
            const SET_BY_US: c_int = libc::SA_SIGINFO | libc::SA_RESETHAND;
            old.sa_sigaction = handler;
            old.sa_flags = (old.sa_flags & !SET_BY_US) | (flags & SET_BY_US);
        }
        // SAFETY: all zero is the default action with no flags and an empty mask.
        _ if ours(old.sa_sigaction) || old.sa_sigaction == run_once_handler() => {
            *old = unsafe { core::mem::zeroed() }
        }
        _ => {}
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

stand_in_for_default!(signal, bsd_signal, ssignal, sigset);

/// `sysv_signal` and `__sysv_signal`: a handler that runs once, as glibc sets it, but
/// through this library's [`sigaction`] on [`ENDINGS`], so that it is run by
/// [`run_once`]. Otherwise glibc's function, as the others above.
macro_rules! set_to_run_once {
    ($($name:ident),*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(signal: c_int, handler: sighandler_t) -> sighandler_t {
            if stand_in(signal).is_none() || handler == libc::SIG_ERR {
                // SAFETY: the caller's arguments go to glibc's function.
                return shown(unsafe { real::$name(signal, handler) });
            }
            // SAFETY: all zero is a valid action; the mask is emptied by sigemptyset.
            let (mut act, mut old): (libc::sigaction, libc::sigaction) = unsafe { core::mem::zeroed() };
            act.sa_sigaction = handler;
            act.sa_flags = libc::SA_RESETHAND | libc::SA_NODEFER | SA_INTERRUPT;
            // SAFETY: both actions are this frame's.
            match unsafe { libc::sigemptyset(&mut act.sa_mask); sigaction(signal, &act, &mut old) } {
                0 => old.sa_sigaction,
                _ => libc::SIG_ERR,
            }
        }
    )*};
}

set_to_run_once!(sysv_signal, __sysv_signal);
