//! `spinmutex run`: run a command with the library preloaded.

use std::io::Seek;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use spinmutex_names::{self as names, Stats, Strategy};

use crate::process::library::{self, parse_arm, Arm};
use crate::process::settings::{self, Expected, LibSettings};
use crate::process::{child, handshake};
use crate::report;
use crate::stats::lockstats::Sort;
use crate::symbolize::Resolver;
use crate::Failure;

/// Run a command with libspinmutex.so preloaded
#[derive(Args, Debug)]
#[command(long_about = "Run a command with libspinmutex.so preloaded.\n\n\
    The library is appended to any LD_PRELOAD already set. CMD's exit status is passed \
    through; a CMD killed by a signal is reported on stderr and gives 128 + the signal \
    number. A CMD that cannot be started gives 127 (not found) or 126.\n\n\
    In the foreground of a terminal CMD shares run's process group, so that it can read the \
    terminal, and gets Ctrl-C (SIGINT) and SIGQUIT from the terminal itself: run ignores them. \
    Otherwise CMD runs in a process group of its own. SIGTERM and SIGHUP (and SIGINT when \
    not in a terminal's foreground) sent to run stop CMD, its whole process group when it \
    has its own (SIGTERM, then SIGKILL 2 s later); run then reports the statistics written \
    so far and exits with 128 + the signal number. SIGKILL, which run cannot catch, kills CMD \
    too (CMD itself, not the processes it started).\n\n\
    Every process of CMD that loads the library reports it; when none does (a static or \
    setuid program, or one that clears LD_PRELOAD), or the settings it reports are not the \
    ones asked for, run says so and exits with 1 (or CMD's own non-zero status).\n\n\
    With --stats (or --stats=text, --stats=json) the library writes its statistics as JSON \
    to a file of this command's (or to --stats-file, which is kept), and when CMD has exited \
    run prints every process's report on standard error (with --stats-file -, on standard \
    output, which then carries nothing else: CMD's own standard output goes to standard \
    error, so that `run --stats=json --stats-file - -- CMD | jq` reads the report alone), with each call site named \
    (function+offset, file:line) from the files on this machine, as `spinmutex report` \
    does; --stats=json prints it as `spinmutex report --json` does. Only processes that \
    locked a mutex have a report. A process writes it as it exits, and as SIGINT, SIGTERM, \
    SIGHUP or SIGPIPE ends it (Ctrl-C and run's own interruption included) unless it \
    handles that signal itself; another signal (SIGKILL, a crash) leaves none.")]
pub struct RunArgs {
    /// The strategy: glibc, futex, spin, auto, kernel; `none` runs CMD without the library
    /// [SPINMUTEX_STRATEGY; default: the environment's, else spin]
    #[arg(short = 's', long, value_name = "S", value_parser = parse_arm)]
    pub strategy: Option<Arm>,

    /// With --stats: the order of the lock classes (and of the processes, when several
    /// reported): wait (total time waited), contended (contended acquisitions), hold
    /// (total time held), acquisitions
    #[arg(long, value_name = "KEY", value_enum, default_value_t = Sort::Wait)]
    pub sort: Sort,

    /// Print the settings the library reports from each process it loaded in
    #[arg(short, long)]
    pub verbose: bool,

    #[command(flatten)]
    pub settings: LibSettings,

    /// The command and its arguments
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

pub fn main(a: RunArgs) -> Result<u8, Failure> {
    let mut env = a.settings.env();
    // --stats: the library writes JSON to a file, and this command reports it.
    let stats = a.settings.stats.as_ref().map(|g| g.value).filter(|s| *s != Stats::Off);
    let stats_to_stdout = a.settings.stats_file.as_ref().is_some_and(|f| f.raw == "-");
    if stats_to_stdout && stats.is_none() {
        return Err(Failure::Usage(
            "run",
            "--stats-file - (the report on standard output) needs --stats or --stats=json".into(),
        ));
    }
    let stats_file = match stats {
        Some(_) => Some(StatsFile::new(&mut env).map_err(Failure::Runtime)?),
        None => None,
    };
    settings::check_inherited(&env, a.strategy.is_some()).map_err(|m| Failure::Usage("run", m))?;
    let arm = match a.strategy {
        Some(arm) => arm,
        None => {
            let inherited = std::env::var(names::STRATEGY.name).ok();
            let strategy =
                inherited.and_then(|s| Strategy::from_name(s.as_bytes())).unwrap_or(names::DEFAULT_STRATEGY);
            Arm::Strategy(strategy)
        }
    };
    library::note_arm_limits(&[arm]);
    if arm == Arm::None && stats.is_some() {
        return Err(Failure::Usage(
            "run",
            "--stats needs the library, and --strategy none runs CMD without it: choose one".into(),
        ));
    }
    let lib =
        if arm.strategy().is_some() { library::find().map_err(Failure::Runtime)? } else { PathBuf::new() };
    let mut cmd = Command::new(&a.command[0]);
    cmd.args(&a.command[1..]);
    library::apply(arm, &mut cmd, &lib, &env);
    if stats_to_stdout {
        // Standard output carries the report alone: the command's own goes to stderr.
        let stderr = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Failure::Runtime(format!("cannot duplicate standard error: {e}")))?;
        cmd.stdout(stderr);
    }
    child::catch_interrupts();
    let done = match child::run(&mut cmd, child::Output::Inherit) {
        Ok(done) => done,
        Err(e) => {
            eprintln!("spinmutex run: cannot run {}: {e}", a.command[0]);
            return Ok(if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 });
        }
    };
    if let (child::Termination::Signaled { .. }, None) = (done.termination, child::interrupted()) {
        eprintln!("spinmutex run: {} {}", a.command[0], done.termination.describe());
    }
    let status = done.termination.shell_status();
    let failed = |msg: String| {
        eprintln!("spinmutex run: {msg}");
        Ok(if status == 0 { 1 } else { status })
    };
    if a.verbose {
        for e in &done.loads {
            eprintln!("spinmutex run: loaded in pid {} ({}): {}", e.pid, e.exe, e.describe());
        }
    }
    // A library that did not load wrote no statistics: only that is said (below).
    let unloaded = arm.strategy().is_some() && done.loads.is_empty();
    if let (Some(format), Some(file), false) = (stats, &stats_file, unloaded) {
        print_statistics(file, format == Stats::Json, a.sort, &done.loads, done.termination);
    }
    if let Some(sig) = child::interrupted() {
        eprintln!("spinmutex run: interrupted by {}; {} stopped", child::signal_name(sig), a.command[0]);
        return Ok(child::interrupted_status(sig));
    }
    match arm.strategy() {
        None if !done.loads.is_empty() => {
            return failed(format!(
            "--strategy none, yet the library loaded in {} (inherited LD_PRELOAD, or /etc/ld.so.preload?)",
            done.loads[0].exe
        ))
        }
        None => {}
        Some(_) if done.loads.is_empty() => return failed(handshake::not_loaded(&a.command[0])),
        Some(strategy) => {
            let expected = Expected::new(strategy, &env);
            for e in &done.loads {
                let wrong = expected.mismatches(e);
                if !wrong.is_empty() {
                    return failed(format!(
                        "the library in pid {} ({}) runs other settings: {}",
                        e.pid,
                        e.exe,
                        wrong.join("; ")
                    ));
                }
            }
        }
    }
    Ok(status)
}

/// Where the library writes its statistics for `run --stats`: `--stats-file` (or an
/// `-e SPINMUTEX_STATS_FILE`), kept; else (and for `-`, which sends the report to
/// standard output) a new temporary file, removed afterwards.
struct StatsFile {
    path: PathBuf,
    temporary: bool,
    to_stdout: bool,
    /// Where this run's reports begin: a kept file may hold earlier runs'.
    start: u64,
}

impl StatsFile {
    /// Sets the child's SPINMUTEX_STATS=json and its file in `env`.
    fn new(env: &mut Vec<(String, String)>) -> Result<StatsFile, String> {
        env.retain(|(k, _)| k != names::STATS.name);
        env.push((names::STATS.name.to_string(), "json".to_string()));
        let to_stdout = env.iter().any(|(k, v)| k == names::STATS_FILE.name && v == "-");
        if to_stdout {
            env.retain(|(k, _)| k != names::STATS_FILE.name);
        }
        if let Some((_, path)) = env.iter().find(|(k, _)| k == names::STATS_FILE.name) {
            let start = std::fs::metadata(path).map_or(0, |m| if m.is_file() { m.len() } else { 0 });
            return Ok(StatsFile { path: PathBuf::from(path), temporary: false, to_stdout, start });
        }
        let dir = std::env::temp_dir();
        for n in 0..100u32 {
            let path = dir.join(format!("spinmutex-stats-{}-{n}.json", std::process::id()));
            let created = std::fs::OpenOptions::new().write(true).create_new(true).open(&path);
            match created {
                Ok(_) => {
                    env.push((names::STATS_FILE.name.to_string(), path.display().to_string()));
                    return Ok(StatsFile { path, temporary: true, to_stdout, start: 0 });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("cannot create a statistics file in {}: {e}", dir.display())),
            }
        }
        Err(format!("cannot create a statistics file in {}", dir.display()))
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for StatsFile {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Prints, on standard error, the statistics reports in `file` of the processes that
/// loaded the library in this run, with their call sites named.
fn print_statistics(
    stats: &StatsFile,
    json: bool,
    sort: Sort,
    loads: &[crate::Effective],
    ended: child::Termination,
) {
    let file = stats.path();
    // A FIFO, a pipe (`/dev/stdout` under `| jq`) or a device cannot be read back: its
    // reader has the report, and reading would wait for a writer that never comes.
    if std::fs::metadata(file).is_ok_and(|m| !m.is_file()) {
        eprintln!(
            "spinmutex run: {} is not a regular file, so the statistics written to it are not \
             read back (--stats-file - puts the report on standard output)",
            file.display()
        );
        return;
    }
    let mut loaded = report::Loaded { sort, ..Default::default() };
    let read = std::fs::File::open(file).and_then(|mut f| {
        // From where this run began, unless the file was cut shorter since.
        if f.metadata()?.len() >= stats.start {
            f.seek(std::io::SeekFrom::Start(stats.start))?;
        }
        loaded.read(&file.display().to_string(), std::io::BufReader::new(f))
    });
    if let Err(e) = read {
        eprintln!("spinmutex run: cannot read the statistics in {}: {e}", file.display());
        return;
    }
    // Only this run's processes count (a process of another run may have written since).
    loaded.reports.retain(|r| loads.iter().any(|e| u64::from(e.pid) == r.pid));
    for r in &mut loaded.reports {
        r.exe = loads.iter().find(|e| u64::from(e.pid) == r.pid).map(|e| e.exe.clone());
        if stats.temporary {
            r.file = None;
        }
    }
    if stats.temporary {
        loaded.inputs.clear();
    }
    loaded.resolve(&mut Resolver::default(), usize::MAX);
    print_reports(&loaded, stats, json, ended);
    // Said after the report, where it is read: the report misses these processes.
    let cut = loaded.trace.malformed;
    if cut > 0 {
        eprintln!(
            "spinmutex run: {cut} line{s} of {file} {are} not a whole statistics report: a process \
             was killed while writing it (SIGKILL, or 2 s after run's SIGTERM){also}, and \
             {its} statistics are missing",
            s = if cut == 1 { "" } else { "s" },
            are = if cut == 1 { "is" } else { "are" },
            its = if cut == 1 { "its" } else { "their" },
            file =
                if stats.temporary { "the statistics file".to_string() } else { file.display().to_string() },
            also = if stats.temporary { "" } else { ", or another program wrote into the file" },
        );
    }
}

/// The reports of `loaded`, as text or JSON, or why there are none.
fn print_reports(loaded: &report::Loaded, stats: &StatsFile, json: bool, ended: child::Termination) {
    if loaded.reports.is_empty() && !json {
        if loaded.trace.malformed > 0 {
            return; // Why is said next.
        }
        match ended {
            // The library writes its report as the process exits, and when a signal
            // that ends programs on request ends it: any other signal leaves none.
            child::Termination::Signaled { signo, .. } if !names::ENDING_SIGNALS.contains(&signo) => {
                eprintln!(
                    "spinmutex run: no statistics: the command was ended by {} before it exited, \
                 when the library writes them (SPINMUTEX_STATS_SIGNAL, SIGUSR2 by default, \
                 makes a running process write them)",
                    child::signal_name(signo)
                )
            }
            child::Termination::Signaled { signo, .. } => eprintln!(
                "spinmutex run: no statistics: {name} ended the command before any process of \
                 it wrote them (a process that locked no mutex writes none; one that handles \
                 {name} itself writes them only if it then exits)",
                name = child::signal_name(signo)
            ),
            child::Termination::Exited(_) => {
                eprintln!("spinmutex run: no statistics: no process of the command locked a mutex")
            }
        }
        return;
    }
    let text = if json {
        serde_json::to_string_pretty(&loaded.json()).map(|s| s + "\n").unwrap_or_default()
    } else {
        loaded.render_text(usize::MAX, false)
    };
    if !stats.to_stdout {
        crate::output::stderr(&text);
    } else if let Err(e) = crate::output::stdout(&text) {
        crate::output::stderr(&format!("spinmutex run: {e}\n"));
    }
}
