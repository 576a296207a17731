//! The library's settings as options, shared by `run`, `ab` and `bench`: defined once,
//! each validated with the same parser the library uses (spinmutex-names) before
//! anything runs, turned into the child's `SPINMUTEX_*` variables, and compared with
//! what the library reports when it loads.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use clap::Args;

use serde::{Deserialize, Serialize};
use spinmutex_names::{self as names, Invalid, LoadReport, Nanos, Setting, SpinLimit, Stats, Strategy};

/// A setting's value as given on the command line, and what it means.
#[derive(Debug, Clone, PartialEq)]
pub struct Given<T> {
    pub raw: String,
    pub value: T,
}

/// A clap value parser from a setting's parser: the usage error lists what the library
/// accepts, in the library's own words.
fn setting<T: Clone + Send + Sync + 'static>(
    parse: fn(&[u8]) -> Result<T, Invalid>,
) -> impl Fn(&str) -> Result<Given<T>, String> + Clone + Send + Sync + 'static {
    move |s: &str| parse(s.as_bytes()).map(|value| Given { raw: s.to_string(), value }).map_err(accepted)
}

fn accepted(Invalid(setting): Invalid) -> String {
    format!("accepted: {}", setting.accepted)
}

fn trace_directive(s: &str) -> Result<Given<String>, String> {
    names::parse_trace(s.as_bytes())
        .map(|d| Given { raw: s.to_string(), value: d.to_string() })
        .map_err(accepted)
}

/// A file for the library to write (`-`: standard output, for `run --stats-file`).
/// Made absolute here: the library opens it in each process of the command, from that
/// process's working directory, and `run` reads it back from its own.
fn path_setting(s: &str) -> Result<Given<String>, String> {
    if s.is_empty() {
        return Err("the path must not be empty".into());
    }
    let path = if s == "-" {
        s.to_string()
    } else {
        let absolute = std::path::absolute(s).map_err(|e| format!("{s}: {e}"))?;
        absolute.to_str().ok_or_else(|| format!("{s}: not UTF-8"))?.to_string()
    };
    Ok(Given { raw: path.clone(), value: path })
}

/// `KEY=VALUE` for `--env`; a library setting's value is checked like its option.
fn env_pair(s: &str) -> Result<(String, String), String> {
    let (k, v) = match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => (k, v),
        _ => return Err(format!("'{s}' is not KEY=VALUE")),
    };
    if k == names::STRATEGY.name || k == names::HANDSHAKE.name {
        return Err(format!("{k} is set by the command (use --strategy or -s for the strategy)"));
    }
    if let Some(name) = names::unknown_name(k.as_bytes()) {
        return Err(unknown(name, ""));
    }
    if let Some(Err(Invalid(setting))) = names::check(k.as_bytes(), v.as_bytes()) {
        return Err(format!("{k}={v:?} is not valid (accepted: {})", setting.accepted));
    }
    Ok((k.to_string(), v.to_string()))
}

/// The library's settings. Each sets one `SPINMUTEX_*` variable of the child.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Library settings (each sets a SPINMUTEX_* variable of the command it runs)")]
pub struct LibSettings {
    /// The most one acquisition spins: `pause` iterations 0..1000000, or a duration up
    /// to 1s such as 5us [SPINMUTEX_SPIN_LIMIT]
    #[arg(long, value_name = "LIMIT", value_parser = setting(names::parse_spin_limit))]
    pub spin_limit: Option<Given<SpinLimit>>,

    /// Most threads spinning on one mutex at once, 0..1024, 0: no cap [SPINMUTEX_MAX_SPINNERS]
    #[arg(long, value_name = "N", value_parser = setting(names::parse_max_spinners))]
    pub max_spinners: Option<Given<u32>>,

    /// Lost wake-ups after which a sleeper asks for a handoff, 0..1000, 0: never
    /// [SPINMUTEX_HANDOFF_AFTER]
    #[arg(long, value_name = "N", value_parser = setting(names::parse_handoff_after))]
    pub handoff_after: Option<Given<u32>>,

    /// Time asleep after which a sleeper asks for a handoff: 0 or a duration up to 10s
    /// [SPINMUTEX_HANDOFF_WAIT]
    #[arg(long, value_name = "DURATION", value_parser = setting(names::parse_handoff_wait))]
    pub handoff_wait: Option<Given<u64>>,

    /// Never spin while another thread sleeps on the mutex: 0 or 1 (1 when the value is
    /// left out) [SPINMUTEX_FAIR]
    #[arg(long, value_name = "0|1", num_args = 0..=1, default_missing_value = "1",
          value_parser = setting(names::parse_fair))]
    pub fair: Option<Given<bool>>,

    /// Reader-writer locks: 1, served by the strategy, or 0, every pthread_rwlock_* call
    /// forwarded to glibc (for a program that also takes an rwlock through glibc's own
    /// functions, such as a plugin loaded with RTLD_DEEPBIND) [SPINMUTEX_RWLOCKS]
    #[arg(long, value_name = "0|1", value_parser = setting(names::parse_rwlocks))]
    pub rwlocks: Option<Given<bool>>,

    /// Trace slow-path decisions: a filter such as debug or spinmutex=trace [SPINMUTEX_TRACE]
    #[arg(long, value_name = "FILTER", value_parser = trace_directive)]
    pub trace: Option<Given<String>>,

    /// Append trace events to FILE instead of standard error [SPINMUTEX_TRACE_FILE]
    #[arg(long, value_name = "FILE", value_parser = path_setting)]
    pub trace_file: Option<Given<String>>,

    /// Trace format: text or json [SPINMUTEX_TRACE_FORMAT]
    #[arg(long, value_name = "FORMAT", value_parser = setting(names::parse_trace_format))]
    pub trace_format: Option<Given<names::TraceFormat>>,

    /// Per-mutex statistics at exit: 0, 1, text or json (1 when the value is left out)
    /// [SPINMUTEX_STATS]
    #[arg(long, value_name = "FORMAT", num_args = 0..=1, default_missing_value = "1",
          value_parser = setting(names::parse_stats))]
    pub stats: Option<Given<Stats>>,

    /// Append statistics reports to FILE instead of standard error [SPINMUTEX_STATS_FILE]
    #[arg(long, value_name = "FILE", value_parser = path_setting)]
    pub stats_file: Option<Given<String>>,

    /// How many mutexes a statistics report lists, 1..100 [SPINMUTEX_STATS_TOP]
    #[arg(long, value_name = "N", value_parser = setting(names::parse_stats_top))]
    pub stats_top: Option<Given<usize>>,

    /// Any other environment variable of the command (repeatable); SPINMUTEX_* values
    /// are checked like the options above
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE", value_parser = env_pair)]
    pub env: Vec<(String, String)>,
}

impl LibSettings {
    /// The variables to set in the child, in a fixed order; a later `--env` of the same
    /// name wins.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut push = |s: &Setting, raw: Option<&String>| {
            if let Some(raw) = raw {
                out.push((s.name.to_string(), raw.clone()));
            }
        };
        push(&names::SPIN_LIMIT, self.spin_limit.as_ref().map(|g| &g.raw));
        push(&names::MAX_SPINNERS, self.max_spinners.as_ref().map(|g| &g.raw));
        push(&names::HANDOFF_AFTER, self.handoff_after.as_ref().map(|g| &g.raw));
        push(&names::HANDOFF_WAIT, self.handoff_wait.as_ref().map(|g| &g.raw));
        push(&names::FAIR, self.fair.as_ref().map(|g| &g.raw));
        push(&names::RWLOCKS, self.rwlocks.as_ref().map(|g| &g.raw));
        push(&names::TRACE, self.trace.as_ref().map(|g| &g.raw));
        push(&names::TRACE_FILE, self.trace_file.as_ref().map(|g| &g.raw));
        push(&names::TRACE_FORMAT, self.trace_format.as_ref().map(|g| &g.raw));
        push(&names::STATS, self.stats.as_ref().map(|g| &g.raw));
        push(&names::STATS_FILE, self.stats_file.as_ref().map(|g| &g.raw));
        push(&names::STATS_TOP, self.stats_top.as_ref().map(|g| &g.raw));
        for (k, v) in &self.env {
            out.retain(|(key, _)| key != k);
            out.push((k.clone(), v.clone()));
        }
        out
    }
}

/// The refusal of a `SPINMUTEX_*` name that neither the library nor this command knows
/// (`where_` says where it was found): the child would run as if it were not there.
fn unknown(name: &[u8], where_: &str) -> String {
    format!(
        "{}{where_} is not a setting of the library or of this command (did you mean {}?)",
        String::from_utf8_lossy(name),
        names::closest(name)
    )
}

/// Checks the `SPINMUTEX_*` variables this command inherited: an unknown name (most
/// likely a misspelt setting, so that a baseline would quietly run the default) is
/// refused, and so is a bad value of a library setting this command does not override,
/// which would make the library warn on the child's stderr and quietly use its default.
pub fn check_inherited(overrides: &[(String, String)], skip_strategy: bool) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    for (key, _) in std::env::vars_os() {
        if let Some(name) = names::unknown_name(key.as_bytes()) {
            return Err(unknown(name, " in this command's environment"));
        }
    }
    for setting in names::SETTINGS {
        if (skip_strategy && setting.name == names::STRATEGY.name)
            || overrides.iter().any(|(k, _)| k == setting.name)
        {
            continue;
        }
        if let Some(value) = std::env::var_os(setting.name) {
            if let Some(Err(Invalid(s))) = names::check(setting.name.as_bytes(), value.as_bytes()) {
                return Err(format!(
                    "{}={:?} in this command's environment is not valid (accepted: {})",
                    s.name,
                    value.to_string_lossy(),
                    s.accepted
                ));
            }
        }
    }
    Ok(())
}

/// Statistics cost about 95 ns per acquisition in the arms that load the library and
/// nothing in the others (`none`, bench's lock-free control), and their reports would
/// mix with the command's output: `ab` and `bench`, which compare arms, refuse them,
/// from their options or their environment.
pub fn refuse_statistics(env: &[(String, String)]) -> Result<(), String> {
    let name = names::STATS.name;
    let given = env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| (v.clone(), "given"));
    let inherited = || std::env::var(name).ok().map(|v| (v, "inherited from the environment"));
    match given.or_else(inherited) {
        Some((value, how)) if names::parse_stats(value.as_bytes()) != Ok(Stats::Off) => Err(format!(
            "statistics ({name}={value}, {how}) would slow the arms that load the library and not the \
             others, so the arms would not be comparable: compare without them, then look at the locks \
             with `spinmutex run --stats`"
        )),
        _ => Ok(()),
    }
}

/// What the library reported when it loaded in one process, owned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Effective {
    pub pid: u32,
    pub version: String,
    pub strategy: String,
    pub spin_limit_ns: u64,
    pub pause_ps: u32,
    pub max_spinners: u32,
    pub handoff_after: u32,
    pub handoff_wait_ns: u64,
    pub fair: bool,
    /// Reader-writer locks are served by the strategy (else forwarded to glibc).
    pub rwlocks: bool,
    pub stats: String,
    pub trace: bool,
    pub exe: String,
}

impl From<&LoadReport<'_>> for Effective {
    fn from(r: &LoadReport<'_>) -> Self {
        Effective {
            pid: r.pid,
            version: r.version.to_string(),
            strategy: r.strategy.name().to_string(),
            spin_limit_ns: r.spin_limit_ns,
            pause_ps: r.pause_ps,
            max_spinners: r.max_spinners,
            handoff_after: r.handoff_after,
            handoff_wait_ns: r.handoff_wait_ns,
            fair: r.fair,
            rwlocks: r.rwlocks,
            stats: r.stats.name().to_string(),
            trace: r.trace,
            exe: r.exe.to_string(),
        }
    }
}

impl Effective {
    /// One line of the settings in force: `strategy=spin spin_limit=8us (≈266 pauses) ...`.
    pub fn describe(&self) -> String {
        if self.strategy == Strategy::Glibc.name() {
            return format!(
                "strategy=glibc (every call forwarded to glibc), stats={}, trace={}",
                self.stats,
                on(self.trace)
            );
        }
        // Only the settings the strategy uses: futex never spins, and under kernel the
        // kernel decides how long to spin and nothing is handed off.
        let mut line = format!("strategy={}", self.strategy);
        let spins = self.strategy == Strategy::Spin.name() || self.strategy == Strategy::Auto.name();
        if spins {
            let ps = u64::from(self.pause_ps);
            let pauses = (self.spin_limit_ns * 1000 + ps / 2).checked_div(ps).unwrap_or(0);
            let _ = write!(
                line,
                " spin_limit={} (≈{pauses} pauses of {:.1} ns) max_spinners={}",
                Nanos(self.spin_limit_ns),
                self.pause_ps as f64 / 1000.0,
                self.max_spinners
            );
        }
        if self.strategy != Strategy::Kernel.name() {
            let _ = write!(
                line,
                " handoff_after={} handoff_wait={}",
                self.handoff_after,
                Nanos(self.handoff_wait_ns)
            );
        }
        if spins {
            let _ = write!(line, " fair={}", u8::from(self.fair));
        }
        if !self.rwlocks {
            line.push_str(" rwlocks=0 (forwarded to glibc)");
        }
        let _ = write!(line, " stats={} trace={}", self.stats, on(self.trace));
        line
    }
}

fn on(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// The settings a child should run with: its environment as this command builds it,
/// read with the library's parsers and defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    pub strategy: Strategy,
    pub spin_limit: SpinLimit,
    pub max_spinners: u32,
    pub handoff_after: u32,
    pub handoff_wait_ns: u64,
    pub fair: bool,
    /// Rwlocks served: the strategy serves locks and SPINMUTEX_RWLOCKS is not 0.
    pub rwlocks: bool,
    pub stats: Stats,
    /// SPINMUTEX_TRACE is set (the library's filter parser decides if it is valid).
    pub trace: Option<String>,
}

impl Expected {
    /// From the child's environment: `overrides` on top of this process's. Values were
    /// validated before; one that does not parse counts as the default.
    pub fn new(strategy: Strategy, overrides: &[(String, String)]) -> Expected {
        let vars: BTreeMap<&str, String> = names::SETTINGS
            .iter()
            .filter_map(|s| {
                let v = overrides
                    .iter()
                    .rev()
                    .find(|(k, _)| k == s.name)
                    .map(|(_, v)| v.clone())
                    .or_else(|| std::env::var(s.name).ok())?;
                Some((s.name, v))
            })
            .collect();
        fn get<T>(
            vars: &BTreeMap<&str, String>,
            s: &Setting,
            parse: fn(&[u8]) -> Result<T, Invalid>,
            d: T,
        ) -> T {
            vars.get(s.name).and_then(|v| parse(v.as_bytes()).ok()).unwrap_or(d)
        }
        Expected {
            strategy,
            spin_limit: get(&vars, &names::SPIN_LIMIT, names::parse_spin_limit, names::DEFAULT_SPIN_LIMIT),
            max_spinners: get(
                &vars,
                &names::MAX_SPINNERS,
                names::parse_max_spinners,
                names::DEFAULT_MAX_SPINNERS,
            ),
            handoff_after: get(
                &vars,
                &names::HANDOFF_AFTER,
                names::parse_handoff_after,
                names::DEFAULT_HANDOFF_AFTER,
            ),
            handoff_wait_ns: get(
                &vars,
                &names::HANDOFF_WAIT,
                names::parse_handoff_wait,
                names::DEFAULT_HANDOFF_WAIT_NS,
            ),
            fair: get(&vars, &names::FAIR, names::parse_fair, false),
            rwlocks: strategy != Strategy::Glibc && get(&vars, &names::RWLOCKS, names::parse_rwlocks, true),
            stats: get(&vars, &names::STATS, names::parse_stats, Stats::Off),
            trace: vars.get(names::TRACE.name).cloned(),
        }
    }

    /// The differences between these settings and what the library reported.
    pub fn mismatches(&self, got: &Effective) -> Vec<String> {
        let mut out = Vec::new();
        let mut check = |what: &str, want: String, have: String| {
            if want != have {
                out.push(format!("{what}: asked for {want}, the library uses {have}"));
            }
        };
        check(names::STRATEGY.name, self.strategy.name().into(), got.strategy.clone());
        check(
            names::SPIN_LIMIT.name,
            Nanos(self.spin_limit.to_ns(got.pause_ps)).to_string(),
            Nanos(got.spin_limit_ns).to_string(),
        );
        check(names::MAX_SPINNERS.name, self.max_spinners.to_string(), got.max_spinners.to_string());
        check(names::HANDOFF_AFTER.name, self.handoff_after.to_string(), got.handoff_after.to_string());
        check(
            names::HANDOFF_WAIT.name,
            Nanos(self.handoff_wait_ns).to_string(),
            Nanos(got.handoff_wait_ns).to_string(),
        );
        check(names::FAIR.name, u8::from(self.fair).to_string(), u8::from(got.fair).to_string());
        check(names::RWLOCKS.name, u8::from(self.rwlocks).to_string(), u8::from(got.rwlocks).to_string());
        check(names::STATS.name, self.stats.name().into(), got.stats.clone());
        match (&self.trace, got.trace) {
            (Some(filter), false) => out.push(format!(
                "{}: asked for tracing with {filter:?}, the library has tracing off (it did not accept the \
                 filter; its stderr says why)",
                names::TRACE.name
            )),
            (None, true) => out.push(format!("{}: not set, yet the library traces", names::TRACE.name)),
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[derive(clap::Args)]
    struct T {
        #[command(flatten)]
        s: LibSettings,
        #[arg(last = true)]
        rest: Vec<String>,
    }

    fn parse(args: &[&str]) -> Result<T, clap::Error> {
        crate::parse_args(args)
    }

    #[test]
    fn options_map_to_the_environment() {
        let t = parse(&[
            "--spin-limit",
            "50",
            "--trace",
            "debug",
            "--trace-file=/tmp/t",
            "--stats",
            "--env",
            "A=b=c",
            "--fair",
            "1",
            "--rwlocks",
            "0",
            "--",
            "prog",
        ])
        .unwrap();
        assert_eq!(
            t.s.env(),
            vec![
                ("SPINMUTEX_SPIN_LIMIT".to_string(), "50".to_string()),
                ("SPINMUTEX_FAIR".to_string(), "1".to_string()),
                ("SPINMUTEX_RWLOCKS".to_string(), "0".to_string()),
                ("SPINMUTEX_TRACE".to_string(), "debug".to_string()),
                ("SPINMUTEX_TRACE_FILE".to_string(), "/tmp/t".to_string()),
                ("SPINMUTEX_STATS".to_string(), "1".to_string()),
                ("A".to_string(), "b=c".to_string()),
            ]
        );
        assert_eq!(t.rest, vec!["prog"]);
    }

    #[test]
    fn bad_values_are_usage_errors_listing_what_is_accepted() {
        let e = parse(&["--spin-limit", "10x"]).err().unwrap().to_string();
        assert!(e.contains("10x") && e.contains("an iteration count 0..1000000"), "{e}");
        assert!(parse(&["--fair", "2"]).is_err());
        assert!(parse(&["--rwlocks", "off"]).is_err());
        assert!(parse(&["--stats", "yes"]).is_err());
        assert!(parse(&["--env", "SPINMUTEX_SPIN_LIMIT=10x"]).is_err());
        assert!(parse(&["--env", "SPINMUTEX_STRATEGY=spin"]).is_err());
        assert!(parse(&["--env", "NOEQUALS"]).is_err());
        let e = parse(&["--env", "SPINMUTEX_STRATEGI=glibc"]).err().unwrap().to_string();
        assert!(
            e.contains("SPINMUTEX_STRATEGI is not a setting") && e.contains("SPINMUTEX_STRATEGY?"),
            "{e}"
        );
        assert!(parse(&["--env", "SPINMUTEX_LIB=/x", "--env", "NOT_OURS=1"]).is_ok());
    }

    #[test]
    fn expected_settings_are_compared_with_the_report() {
        let e = Expected::new(Strategy::Spin, &[("SPINMUTEX_SPIN_LIMIT".into(), "100".into())]);
        let mut got = Effective {
            pid: 1,
            version: "0.1.0".into(),
            strategy: "spin".into(),
            spin_limit_ns: 3_000,
            pause_ps: 30_000,
            max_spinners: 0,
            handoff_after: 2,
            handoff_wait_ns: 1_000_000,
            fair: false,
            rwlocks: true,
            stats: "off".into(),
            trace: false,
            exe: "/bin/x".into(),
        };
        // Inherited settings of the test's own environment would change the defaults.
        if names::SETTINGS.iter().all(|s| std::env::var_os(s.name).is_none()) {
            assert_eq!(e.mismatches(&got), Vec::<String>::new());
            got.strategy = "glibc".into();
            let m = e.mismatches(&got);
            assert_eq!(m.len(), 1);
            assert!(m[0].contains("asked for spin, the library uses glibc"), "{m:?}");
            got.strategy = "spin".into();
            let forwarding = Expected::new(
                Strategy::Futex,
                &[("SPINMUTEX_SPIN_LIMIT".into(), "100".into()), ("SPINMUTEX_RWLOCKS".into(), "0".into())],
            );
            got.strategy = "futex".into();
            let m = forwarding.mismatches(&got);
            assert_eq!(m, vec!["SPINMUTEX_RWLOCKS: asked for 0, the library uses 1".to_string()]);
            got.rwlocks = false;
            assert!(forwarding.mismatches(&got).is_empty());
            assert!(got.describe().contains(" rwlocks=0 (forwarded to glibc) "), "{}", got.describe());
            assert!(!Expected::new(Strategy::Glibc, &[]).rwlocks, "glibc forwards every rwlock call");
            got.strategy = "glibc".into();
        }
        assert!(got.describe().starts_with("strategy=glibc"));
    }
}
