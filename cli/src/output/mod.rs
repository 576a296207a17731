//! The output layer: plain-text tables and number formats ([`text`]), SVG charts
//! ([`svg`]) and the progress of a long measurement on standard error ([`progress`]).

pub mod progress;
pub mod svg;
pub mod text;

use std::io::Write;
use std::path::Path;

/// Writes `text` on standard output. A reader that quit or a full disk is an error to
/// report, not a panic (`print!` panics, and takes the files still to write with it).
pub fn stdout(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to standard output: {e}"))
}

/// Writes `text` on standard error, as far as it can be written (`eprint!` panics on a
/// full disk).
pub fn stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Writes a report's files (`-`: standard output), then its text (on standard output,
/// or on standard error when a file took standard output): files first, so that a
/// reader of the text that quits early, or a failed write, loses no file. Every write
/// is tried; the error names each that failed. `command` names the subcommand in the
/// "wrote" lines.
pub fn files_then_text(command: &str, files: Vec<(&Path, String)>, text: &str) -> Result<(), String> {
    let mut errors = Vec::new();
    let text_to_stderr = files.iter().any(|(path, _)| path.as_os_str() == "-");
    for (path, contents) in files {
        if path.as_os_str() == "-" {
            errors.extend(stdout(&contents).err());
        } else {
            match std::fs::write(path, contents) {
                Ok(()) => stderr(&format!("spinmutex {command}: wrote {}\n", path.display())),
                Err(e) => errors.push(format!("cannot write {}: {e}", path.display())),
            }
        }
    }
    if text_to_stderr {
        stderr(text);
    } else {
        errors.extend(stdout(text).err());
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Checks, before a measurement, that a file asked for can be made: not a directory,
/// in a directory that exists. (Whether the disk has room is known only at the end.)
pub fn check_file(option: &str, path: &Path) -> Result<(), String> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    if path.is_dir() {
        return Err(format!("{option} {}: is a directory", path.display()));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(format!("{option} {}: no directory {}", path.display(), parent.display()));
    }
    Ok(())
}
