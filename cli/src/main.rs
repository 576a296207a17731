fn main() -> std::process::ExitCode {
    // Output piped into `head` or a pager that quits: end quietly, as other command-line
    // tools do, instead of failing a write (Rust ignores SIGPIPE by default, and a
    // failed print panics). The commands the program runs get the default anyway.
    // SAFETY: setting a signal's disposition to its default before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    spinmutex_cli::main()
}
