fn main() -> std::process::ExitCode {
    spinmutex_cli::main()
}
