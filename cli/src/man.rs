//! The man pages: the clap definitions rendered by clap_mangen, plus a few sections of
//! prose that a reference needs and `--help` does not (how to read ab's verdicts, how the
//! command proves the library loaded).
//!
//! `spinmutex man [SUB]` prints one page; `spinmutex man --out DIR` writes all of them,
//! which is how docs/man/ is made. A test compares docs/man/ with what these
//! definitions generate, so the checked-in pages never drift from the command.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;

use crate::{Cli, Failure};

/// The subcommands that get a page of their own (`spinmutex-SUB(1)`).
pub const PAGES: &[&str] = &["run", "ab", "bench", "report", "completions", "man"];

/// The command that regenerates docs/man/, for messages.
pub const REGENERATE: &str = "cargo run --release -p spinmutex-cli -- man --out docs/man";

/// `spinmutex man [SUB] [--out DIR]`.
pub fn main(sub: Option<&str>, out: Option<&Path>) -> Result<u8, Failure> {
    if let Some(dir) = out {
        if sub.is_some() {
            return Err(Failure::Usage("man", "--out writes every page; give no subcommand with it".into()));
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Runtime(format!("cannot create {}: {e}", dir.display())))?;
        for (name, text) in pages() {
            let path = dir.join(&name);
            std::fs::write(&path, text)
                .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", path.display())))?;
        }
        return Ok(0);
    }
    let text = match sub {
        None => page(None),
        Some(name) if PAGES.contains(&name) => page(Some(name)),
        Some(name) => {
            return Err(Failure::Usage("man", format!("no subcommand '{name}' ({})", PAGES.join(", "))));
        }
    };
    std::io::stdout()
        .write_all(&text)
        .map_err(|e| Failure::Runtime(format!("cannot write the man page: {e}")))?;
    Ok(0)
}

/// Every page, as (file name, roff text): spinmutex.1 and spinmutex-SUB.1.
pub fn pages() -> Vec<(String, Vec<u8>)> {
    std::iter::once(None)
        .chain(PAGES.iter().map(|s| Some(*s)))
        .map(|sub| (format!("{}.1", name(sub)), page(sub)))
        .collect()
}

/// A page's name: `spinmutex` or `spinmutex-SUB`.
fn name(sub: Option<&str>) -> String {
    sub.map_or("spinmutex".to_string(), |s| format!("spinmutex-{s}"))
}

/// The page of the command (`None`) or of one subcommand.
pub fn page(sub: Option<&str>) -> Vec<u8> {
    // No page for `help`: the pages are the help.
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let cmd = match sub {
        None => cmd,
        Some(sub) => {
            cmd.find_subcommand(sub).expect("a subcommand with a page").clone().name(name(Some(sub)))
        }
    };
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    render(&man, &cmd, sub, &mut out).expect("rendering into memory cannot fail");
    out
}

/// clap_mangen's sections in its own order, with the prose before the version.
fn render(
    man: &clap_mangen::Man,
    cmd: &clap::Command,
    sub: Option<&str>,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(out)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(out)?;
    }
    out.extend_from_slice(roff(prose(sub)).as_bytes());
    man.render_version_section(out)
}

/// The prose sections of a page, in a small markup: `# TITLE` starts a section, a blank
/// line ends a paragraph, `- ` starts a bullet, and lines indented by two spaces are
/// shown as they are (examples).
fn prose(sub: Option<&str>) -> &'static str {
    match sub {
        None => TOP,
        Some("ab") => AB,
        Some("bench") => BENCH,
        _ => "",
    }
}

/// Renders the markup of [`prose`] as roff.
fn roff(text: &str) -> String {
    let mut out = String::new();
    let mut verbatim = false;
    for line in text.lines() {
        let is_verbatim = line.starts_with("  ");
        if verbatim && !is_verbatim {
            out.push_str(".fi\n");
            verbatim = false;
        }
        if is_verbatim {
            if !verbatim {
                out.push_str(".PP\n.nf\n");
                verbatim = true;
            }
            out.push_str(&escape(&line[2..]));
            out.push('\n');
        } else if let Some(title) = line.strip_prefix("# ") {
            out.push_str(&format!(".SH \"{}\"\n", escape(title)));
        } else if let Some(item) = line.strip_prefix("- ") {
            out.push_str(".IP \\(bu 2\n");
            out.push_str(&escape(item));
            out.push('\n');
        } else if line.is_empty() {
            out.push_str(".PP\n");
        } else {
            out.push_str(&escape(line));
            out.push('\n');
        }
    }
    if verbatim {
        out.push_str(".fi\n");
    }
    out
}

/// Escapes text for roff: backslashes, hyphens (so that options copy as typed), and a
/// leading dot or quote that roff would read as a request.
fn escape(line: &str) -> String {
    let body = line.replace('\\', "\\e").replace('-', "\\-");
    if body.starts_with('.') || body.starts_with('\'') {
        format!("\\&{body}")
    } else {
        body
    }
}

const TOP: &str = "\
# THE LIBRARY MUST PROVE IT LOADED
The command hands every child a pipe (SPINMUTEX_HANDSHAKE). Every process that loads
libspinmutex.so writes one line to it from the library's constructor: its pid, the
library's version, the strategy and the settings in force, and its executable. run -v
prints these lines; ab and bench print each arm's settings from them and check every run
against what was asked for. A run that should have loaded the library and reported
nothing stops ab and bench (and makes run fail) with the likely causes: a statically
linked program, a setuid or setgid program (the loader ignores LD_PRELOAD for them), or
a program that clears LD_PRELOAD before the real program starts. A none run in which the
library loaded anyway is an error too.

# SETTINGS
run, ab and bench take the library's settings as options (--spin-limit, --max-spinners,
--handoff-after, --handoff-wait, --fair, --rwlocks, --trace, --trace-file, --trace-format,
--stats, --stats-file, --stats-top, -e KEY=VALUE) and pass them to the library as SPINMUTEX_*
variables. A misspelled strategy or a value the library would refuse (also in an
inherited SPINMUTEX_* variable) exits with status 2 and the accepted values before
anything runs. The variables, their defaults and accepted values are listed in the
project's README.

# SEE ALSO
spinmutex-run(1), spinmutex-ab(1), spinmutex-bench(1), spinmutex-report(1),
spinmutex-completions(1), spinmutex-man(1).
The documents of the project: README.md, docs/DESIGN.md, docs/OBSERVABILITY.md,
docs/BENCHMARKS.md.
";

const AB: &str = "\
# EXAMPLE
Two threads incrementing a counter (c-tests/ab_tiny.c), 10 runs per arm; the output is
shortened:

  $ spinmutex ab -n 10 --metric 'ops/s=([0-9.]+)' -- ./ab_tiny 200000
  spinmutex ab: 10 runs per arm (none, glibc, spin), interleaved, after 1 warm-up round(s)
  ...
  arms (the settings each reported when it loaded):
    none   no preload: the program alone
    glibc  /usr/local/lib/libspinmutex.so 0.1.0: strategy=glibc (every call forwarded to glibc), stats=off, trace=off
    spin   /usr/local/lib/libspinmutex.so 0.1.0: strategy=spin spin_limit=8us (≈316 pauses of 25.3 ns) ...

  CPU time     ok    mean  median  stddev
  ---------------------------------------
  none      10/10  5.27ms  5.12ms    9.3%
  glibc     10/10  7.09ms  7.05ms   15.5%
  spin      10/10  6.63ms  6.63ms   13.8%
    spin vs glibc: no difference detectable at this noise (95% CI of the change in CPU time: -18.6% to +7.4%, Welch p = 0.316); about 135 runs per arm would resolve a 5% difference
    spin uses 25.8% more CPU than none (95% CI 12.0–40.5%), significant (Welch p = 0.001)
    glibc uses 34.6% more CPU than none (95% CI 18.4–51.9%), significant (Welch p < 0.001)

Here nothing tells spin from glibc at this noise; the only significant lines are the
cost of having the library at all, against none, in a program that runs for a few
milliseconds: mostly the library's start-up, which glibc pays as well.

# READING THE VERDICTS
- Each verdict line compares one arm with one baseline, for one quantity: wall time, CPU time (user + system of the command and its children), and the --metric.
- \"spin is 12.4% faster than glibc (95% CI 8.1–16.5%), significant\": the means differ by Welch's t-test (p < 0.05), and the 95% confidence interval of the ratio of means (Fieller's method, which accounts for the baseline's own noise; for times and rates it never goes below 0) lies entirely on that side. For times, \"X% faster\" means X% less time; for a metric, \"better\" follows its direction.
- \"no difference detectable at this noise (95% CI of the change: -3.1% to +6.3%)\": the data cannot tell the arms apart. A narrow interval around 0 says any difference is small, a wide one says more runs are needed, and the line estimates how many runs per arm would resolve a 5% difference (80% power).
- The lines comparing glibc with none measure the preload's own cost (every call forwarded through the library); read the other arms against both baselines.
- A metric's direction comes from --higher-is-better or --lower-is-better, else from its unit (ops/s, MB/s, tps, events: higher; s, ms, us, ns, latency: lower), else it is unknown and the verdict only says \"higher\" or \"lower\".
- Warnings follow: a busy machine (load average at least half the CPUs when ab started) and any arm whose stddev exceeds 10% of its mean make every verdict less trustworthy.

On a terminal the progress lines are a bar with an estimate of the time left.

# SEE ALSO
spinmutex(1), spinmutex-bench(1). --json FILE writes AbReport (cli/src/ab/mod.rs documents
the fields).
";

const BENCH: &str = "\
# READING THE GRID
Beside each arm's ratio of medians to glibc and its 95% interval, the per-arm table gives
the paired ratio: the median over runs of the arm's throughput divided by glibc's in the
same run. The arms of a run follow each other, so it holds where the machine's speed
changes between runs (on a virtual machine a cell can be bimodal for every arm, and two
arms' medians can fall in different modes). fair/ctl divides each arm's fairness by the
lock-free control's, which is what the scheduler alone allows (with 256 threads on 2 CPUs
some threads never run, lock or not).

# WHICH ARM TO CHOOSE
The last table ranks the arms over the grid's cells (not the scenarios): in how many
cells each had the highest median throughput, and its median divided by that highest one,
as a median over the cells, the lowest, and how many cells came within 3%. An arm that
leads few cells but is never far behind can be the safer choice for a program whose
load is not known. A lead of a few per cent over few runs can be noise: read it against
the sd% columns.

# SEE ALSO
spinmutex(1), spinmutex-ab(1). docs/BENCHMARKS.md holds the project's results and the
commands that made them. --json FILE writes BenchReport (cli/src/bench/mutex/mod.rs).
";
