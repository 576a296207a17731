//! The command's source layout, checked: the shared layers (child processes, statistics,
//! output, symbolization) never use a subcommand's module, so that a subcommand can be
//! changed without reading the others and the layers stay reusable; and no source file
//! grows past a size that can be read in one sitting.
//!
//! The check reads cli/src as text: a layer file that names `crate::<subcommand>` (in a
//! `use`, or a path in code) fails, and so does any file over [`MAX_LINES`] lines.

use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Failed, Trial};

/// The subcommands' modules: each uses the layers, never the reverse.
const SUBCOMMANDS: &[&str] = &["ab", "bench", "man", "report", "run"];

/// The shared layers, as paths under cli/src: a folder, or a file.
const LAYERS: &[&str] = &["output", "process", "stats", "symbolize.rs"];

/// The most lines a source file may have.
const MAX_LINES: usize = 650;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every .rs file under `dir`, or `dir` itself when it is a file.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    if dir.is_file() {
        return vec![dir.to_path_buf()];
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The lines of `text` that name a subcommand's module (`crate::bench`,
/// `crate::{report, ...}`), as (line number, line). Comments do not count.
fn subcommand_uses(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_braces = false;
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let names_one = SUBCOMMANDS.iter().any(|s| {
            code.match_indices(&format!("crate::{s}")).any(|(at, m)| {
                let next = code[at + m.len()..].chars().next();
                !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        });
        // `use crate::{a, b}` over one line or several.
        if code.contains("crate::{") {
            in_braces = true;
        }
        let in_list = in_braces
            && code
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|word| SUBCOMMANDS.contains(&word) && !code.contains(&format!("::{word}")));
        if in_braces && code.contains('}') {
            in_braces = false;
        }
        if names_one || in_list {
            found.push((n + 1, line.trim().to_string()));
        }
    }
    found
}

fn layers_use_no_subcommand() -> Result<(), Failed> {
    let mut wrong = Vec::new();
    for layer in LAYERS {
        let root = src().join(layer);
        assert!(root.exists(), "the layer {} is gone: update LAYERS", root.display());
        for file in rust_files(&root) {
            let text = std::fs::read_to_string(&file).expect("a readable source file");
            for (n, line) in subcommand_uses(&text) {
                wrong.push(format!("{}:{n}: {line}", file.display()));
            }
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!("a shared layer uses a subcommand's module:\n{}", wrong.join("\n")).into())
    }
}

fn no_file_is_too_long() -> Result<(), Failed> {
    let long: Vec<String> = rust_files(&src())
        .into_iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(&file).expect("a readable source file").lines().count();
            (lines > MAX_LINES).then(|| format!("{}: {lines} lines", file.display()))
        })
        .collect();
    if long.is_empty() {
        Ok(())
    } else {
        Err(format!("over {MAX_LINES} lines: split by what the parts do\n{}", long.join("\n")).into())
    }
}

/// The checker itself: it must see each form of a subcommand's use, and nothing else.
fn the_check_sees_every_form_of_use() -> Result<(), Failed> {
    let text = "use crate::bench::Layout;\n\
                use crate::{report, Failure};\n\
                use crate::{\n    output,\n    run,\n};\n\
                let x = crate::ab::main(a);\n\
                // crate::report in a comment\n\
                use crate::stats::sample;\n\
                use crate::benchmark;\n\
                use crate::{process::child, Failure};\n";
    let lines: Vec<usize> = subcommand_uses(text).into_iter().map(|(n, _)| n).collect();
    if lines == [1, 2, 5, 7] {
        Ok(())
    } else {
        Err(format!("found uses on lines {lines:?}, not [1, 2, 5, 7]").into())
    }
}

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let trials = vec![
        Trial::test("layers_use_no_subcommand", layers_use_no_subcommand),
        Trial::test("no_file_is_too_long", no_file_is_too_long),
        Trial::test("the_check_sees_every_form_of_use", the_check_sees_every_form_of_use),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}
