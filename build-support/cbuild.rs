// Compiling C test programs with the system compilers: shared by the build scripts of
// the library (every program in `c-tests/`) and of the command (the few its tests run),
// through `include!`.
//
// A source file can carry these header lines:
// `// build-flags: -lsqlite3` (extra compiler/linker flags),
// `// requires-header: sqlite3.h` (skip the file when that header is not installed;
// the test that runs it then reports the program as missing), and
// `// build-optional: why` (a failed compile skips the file instead of failing the
// build, e.g. when a sanitizer runtime is not installed).

// No `use` lines: the including build script has its own.

/// The compiler for a source file, by extension: `cc` for `.c`, `c++` for `.cpp`.
pub fn compiler_for(src: &std::path::Path) -> Option<&'static str> {
    match src.extension().and_then(|e| e.to_str()) {
        Some("c") => Some("cc"),
        Some("cpp") => Some("c++"),
        _ => None,
    }
}

/// Compiles `src` into the executable `exe` with `extra` flags after the file's own
/// header flags. Returns false (and builds nothing) when a required header is missing
/// or an optional build fails; any other failure stops the build.
pub fn compile_program(src: &std::path::Path, exe: &std::path::Path, extra: &[&str]) -> bool {
    let Some(compiler) = compiler_for(src) else { return false };
    println!("cargo:rerun-if-changed={}", src.display());
    let header = HeaderLines::read(src);
    if !header.requirements_met(compiler) {
        return false;
    }
    let mut cmd = std::process::Command::new(compiler);
    cmd.args(["-O2", "-g", "-Wall", "-Werror", "-pthread", "-o"])
        .arg(exe)
        .arg(src)
        .args(&header.flags)
        .args(extra);
    if header.optional {
        cmd.stderr(std::process::Stdio::null());
        let built = cmd.status().is_ok_and(|s| s.success());
        if !built {
            let _ = std::fs::remove_file(exe);
        }
        return built;
    }
    run(cmd, src);
    true
}

/// True when `cc` can link a static program (glibc's `libc.a` is installed).
pub fn can_link_static() -> bool {
    probe("cc", &["-x", "c", "-static", "-o", "/dev/null", "-"], "int main(void) { return 0; }\n")
}

/// True when `compiler args` succeeds on `source` given on its standard input.
fn probe(compiler: &str, args: &[&str], source: &str) -> bool {
    let mut child = match std::process::Command::new(compiler)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(_) => return false,
    };
    use std::io::Write;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(source.as_bytes());
    }
    child.wait().map(|s| s.success()).unwrap_or(false)
}

/// The optional `// build-flags:`, `// requires-header:` and `// build-optional:` lines
/// of a C source.
struct HeaderLines {
    flags: Vec<String>,
    headers: Vec<String>,
    optional: bool,
}

impl HeaderLines {
    fn read(src: &std::path::Path) -> Self {
        let text = std::fs::read_to_string(src).unwrap_or_default();
        let mut lines = HeaderLines { flags: Vec::new(), headers: Vec::new(), optional: false };
        for line in text.lines().take(20) {
            if let Some(rest) = line.strip_prefix("// build-flags:") {
                lines.flags.extend(rest.split_whitespace().map(String::from));
            } else if let Some(rest) = line.strip_prefix("// requires-header:") {
                lines.headers.extend(rest.split_whitespace().map(String::from));
            } else if line.starts_with("// build-optional:") {
                lines.optional = true;
            }
        }
        lines
    }

    /// True when every required header can be included by `compiler`.
    fn requirements_met(&self, compiler: &str) -> bool {
        let lang = if compiler == "c++" { "c++" } else { "c" };
        self.headers.iter().all(|h| probe(compiler, &["-x", lang, "-E", "-o", "/dev/null", "-"], &format!("#include <{h}>\n")))
    }
}

pub fn run(mut cmd: std::process::Command, src: &std::path::Path) {
    let status = cmd.status().unwrap_or_else(|e| panic!("cannot run compiler for {}: {e}", src.display()));
    assert!(status.success(), "compiling {} failed", src.display());
}
