//! Hand-rolled command-line parsing: a small lexer over the arguments, typed value
//! parsers, and the library knobs that several subcommands share.
//!
//! Accepted forms: `--name value`, `--name=value`, `-x value`, `-xvalue`; `--` ends
//! the options and everything after it is the command to run.

use std::fmt;

/// A bad argument: printed on stderr, exit status 2.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageError(String);

impl UsageError {
    pub fn new(msg: impl Into<String>) -> Self {
        UsageError(msg.into())
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One lexed argument.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// An option, spelled as given without any `=value` (`--runs`, `-n`).
    Opt(String),
    /// A word that is not an option.
    Positional(String),
    /// `--` was seen: everything after it.
    Rest(Vec<String>),
}

/// Options that take a value, for the short forms that may carry it attached (`-n5`).
const SHORT_WITH_VALUE: &[char] = &['s', 'n', 'e'];

pub struct Parser {
    args: Vec<String>,
    pos: usize,
    /// The `value` of a `--name=value` or `-xvalue` just returned, until it is taken.
    inline: Option<(String, String)>,
}

impl Parser {
    pub fn new(args: &[String]) -> Self {
        Parser { args: args.to_vec(), pos: 0, inline: None }
    }

    pub fn next_arg(&mut self) -> Result<Option<Arg>, UsageError> {
        if let Some((opt, _)) = self.inline.take() {
            return Err(UsageError::new(format!("option {opt} takes no value")));
        }
        let Some(arg) = self.args.get(self.pos).cloned() else {
            return Ok(None);
        };
        self.pos += 1;
        if arg == "--" {
            let rest = self.args[self.pos..].to_vec();
            self.pos = self.args.len();
            return Ok(Some(Arg::Rest(rest)));
        }
        if let Some(long) = arg.strip_prefix("--") {
            if let Some((name, value)) = long.split_once('=') {
                let opt = format!("--{name}");
                self.inline = Some((opt.clone(), value.to_string()));
                return Ok(Some(Arg::Opt(opt)));
            }
            return Ok(Some(Arg::Opt(arg)));
        }
        if arg.len() > 1 && arg.starts_with('-') && !looks_numeric(&arg) {
            let mut chars = arg[1..].chars();
            let c = chars.next().expect("non-empty");
            let attached: String = chars.collect();
            let opt = format!("-{c}");
            if !attached.is_empty() {
                if SHORT_WITH_VALUE.contains(&c) {
                    self.inline = Some((opt.clone(), attached));
                } else {
                    return Err(UsageError::new(format!("unknown option '{arg}'")));
                }
            }
            return Ok(Some(Arg::Opt(opt)));
        }
        Ok(Some(Arg::Positional(arg)))
    }

    /// The value of option `opt` just returned by [`Parser::next_arg`].
    pub fn value(&mut self, opt: &str) -> Result<String, UsageError> {
        if let Some((_, v)) = self.inline.take() {
            return Ok(v);
        }
        match self.args.get(self.pos) {
            Some(v) if v != "--" => {
                self.pos += 1;
                Ok(v.clone())
            }
            _ => Err(UsageError::new(format!("option {opt} needs a value"))),
        }
    }

    /// The `=value` of the option just returned, if it was written with one.
    pub fn inline_value(&mut self) -> Option<String> {
        self.inline.take().map(|(_, v)| v)
    }

    /// Everything not yet lexed (after a positional that starts a command).
    pub fn remaining(&mut self) -> Vec<String> {
        let rest = self.args[self.pos..].to_vec();
        self.pos = self.args.len();
        rest
    }
}

fn looks_numeric(s: &str) -> bool {
    s[1..].chars().next().is_some_and(|c| c.is_ascii_digit() || c == '.')
}

pub fn parse_u64(opt: &str, s: &str, min: u64, max: u64) -> Result<u64, UsageError> {
    let bad = || UsageError::new(format!("{opt}: '{s}' is not a whole number from {min} to {max}"));
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let v: u64 = t.parse().map_err(|_| bad())?;
    if v < min || v > max {
        return Err(bad());
    }
    Ok(v)
}

/// A comma-separated list of whole numbers (`1,2,4`), each in `min..=max`, no repeats.
pub fn parse_u64_list(opt: &str, s: &str, min: u64, max: u64) -> Result<Vec<u64>, UsageError> {
    let mut out = Vec::new();
    for part in s.split(',') {
        if part.trim().is_empty() {
            return Err(UsageError::new(format!("{opt}: empty item in list '{s}'")));
        }
        let v = parse_u64(opt, part, min, max)?;
        if out.contains(&v) {
            return Err(UsageError::new(format!("{opt}: {v} is listed twice")));
        }
        out.push(v);
    }
    Ok(out)
}

/// A comma-separated list of names (`glibc,spin`), no empty items, no repeats.
pub fn parse_name_list(opt: &str, s: &str) -> Result<Vec<String>, UsageError> {
    let mut out: Vec<String> = Vec::new();
    for part in s.split(',') {
        let p = part.trim();
        if p.is_empty() {
            return Err(UsageError::new(format!("{opt}: empty item in list '{s}'")));
        }
        if out.iter().any(|o| o == p) {
            return Err(UsageError::new(format!("{opt}: '{p}' is listed twice")));
        }
        out.push(p.to_string());
    }
    Ok(out)
}

/// `KEY=VALUE` for `--env`.
pub fn parse_env_pair(s: &str) -> Result<(String, String), UsageError> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && !k.contains('\0') && !v.contains('\0') => {
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(UsageError::new(format!("--env: '{s}' is not KEY=VALUE"))),
    }
}

/// Help text for the knobs, shared by the subcommands that accept them.
pub const KNOBS_HELP: &str = "\
Library settings (each becomes an environment variable of the child):
  --spin-limit N       SPINMUTEX_SPIN_LIMIT
  --max-spinners N     SPINMUTEX_MAX_SPINNERS
  --handoff-after N    SPINMUTEX_HANDOFF_AFTER
  --handoff-wait N     SPINMUTEX_HANDOFF_WAIT
  --fair[=0|1]         SPINMUTEX_FAIR (1 when no value is given)
  --trace[=FILTER]     SPINMUTEX_TRACE, a tracing filter (`debug` when none is
                       given; `trace` for every decision)
  --trace-file FILE    SPINMUTEX_TRACE_FILE
  --stats[=FORMAT]     SPINMUTEX_STATS (1 when no format is given; text, json)
  --env KEY=VALUE      any variable (repeatable)
Values are passed through as written; the library checks them.
";

/// Handles `opt` when it is one of the library knobs, adding its environment variable
/// to `env`. Returns false when `opt` is not a knob.
pub fn knob(opt: &str, p: &mut Parser, env: &mut Vec<(String, String)>) -> Result<bool, UsageError> {
    let var = match opt {
        "--spin-limit" => "SPINMUTEX_SPIN_LIMIT",
        "--max-spinners" => "SPINMUTEX_MAX_SPINNERS",
        "--handoff-after" => "SPINMUTEX_HANDOFF_AFTER",
        "--handoff-wait" => "SPINMUTEX_HANDOFF_WAIT",
        "--trace-file" => "SPINMUTEX_TRACE_FILE",
        "--trace" => {
            let v = p.inline_value().unwrap_or_else(|| "debug".to_string());
            set_env(env, "SPINMUTEX_TRACE", v);
            return Ok(true);
        }
        "--stats" => {
            let v = p.inline_value().unwrap_or_else(|| "1".to_string());
            set_env(env, "SPINMUTEX_STATS", v);
            return Ok(true);
        }
        "--fair" => {
            let v = p.inline_value().unwrap_or_else(|| "1".to_string());
            set_env(env, "SPINMUTEX_FAIR", v);
            return Ok(true);
        }
        "--env" | "-e" => {
            let (k, v) = parse_env_pair(&p.value(opt)?)?;
            set_env(env, &k, v);
            return Ok(true);
        }
        _ => return Ok(false),
    };
    let v = p.value(opt)?;
    if v.is_empty() || v.contains('\0') {
        return Err(UsageError::new(format!("{opt}: the value must not be empty")));
    }
    set_env(env, var, v);
    Ok(true)
}

/// Sets `key` in `env`, replacing an earlier setting (the last one given wins).
pub fn set_env(env: &mut Vec<(String, String)>, key: &str, value: String) {
    env.retain(|(k, _)| k != key);
    env.push((key.to_string(), value));
}

/// Test helper: an argument vector from string literals.
#[cfg(test)]
pub fn words(s: &[&str]) -> Vec<String> {
    s.iter().map(|w| w.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(words: &[&str]) -> Result<Vec<Arg>, UsageError> {
        let args: Vec<String> = words.iter().map(|s| s.to_string()).collect();
        let mut p = Parser::new(&args);
        let mut out = Vec::new();
        while let Some(a) = p.next_arg()? {
            if let Arg::Opt(o) = &a {
                if o == "-n" || o == "--runs" {
                    let v = p.value(o)?;
                    out.push(a);
                    out.push(Arg::Positional(v));
                    continue;
                }
            }
            out.push(a);
        }
        Ok(out)
    }

    #[test]
    fn lexes_long_short_inline_and_rest() {
        let got = lex(&["--runs=3", "-n", "4", "-n5", "--quick", "--", "cmd", "--runs"]).unwrap();
        assert_eq!(
            got,
            vec![
                Arg::Opt("--runs".into()),
                Arg::Positional("3".into()),
                Arg::Opt("-n".into()),
                Arg::Positional("4".into()),
                Arg::Opt("-n".into()),
                Arg::Positional("5".into()),
                Arg::Opt("--quick".into()),
                Arg::Rest(vec!["cmd".into(), "--runs".into()]),
            ]
        );
    }

    #[test]
    fn missing_value_and_unwanted_value_are_errors() {
        assert!(lex(&["--runs"]).is_err());
        assert!(lex(&["--runs", "--", "x"]).is_err());
        // `--quick=1`: the inline value is never taken.
        let args = vec!["--quick=1".to_string()];
        let mut p = Parser::new(&args);
        assert_eq!(p.next_arg().unwrap(), Some(Arg::Opt("--quick".into())));
        assert!(p.next_arg().is_err());
    }

    #[test]
    fn numbers_and_lists() {
        assert_eq!(parse_u64("--runs", "7", 1, 10).unwrap(), 7);
        assert!(parse_u64("--runs", "0", 1, 10).is_err());
        assert!(parse_u64("--runs", "11", 1, 10).is_err());
        assert!(parse_u64("--runs", "-1", 1, 10).is_err());
        assert!(parse_u64("--runs", "1.5", 1, 10).is_err());
        assert!(parse_u64("--runs", "", 1, 10).is_err());
        assert_eq!(parse_u64_list("--threads", "1,2, 64", 1, 4096).unwrap(), vec![1, 2, 64]);
        assert!(parse_u64_list("--threads", "1,,2", 1, 4096).is_err());
        assert!(parse_u64_list("--threads", "1,1", 1, 4096).is_err());
        assert!(parse_u64_list("--threads", "0", 1, 4096).is_err());
        assert_eq!(parse_name_list("-s", "glibc,spin").unwrap(), vec!["glibc", "spin"]);
        assert!(parse_name_list("-s", "glibc,").is_err());
    }

    #[test]
    fn knobs_map_to_environment() {
        let args: Vec<String> = [
            "--spin-limit",
            "50",
            "--trace",
            "--trace-file=/tmp/t",
            "--stats",
            "--env",
            "A=b=c",
            "--stats=json",
            "--fair",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut p = Parser::new(&args);
        let mut env = Vec::new();
        while let Some(Arg::Opt(o)) = p.next_arg().unwrap() {
            assert!(knob(&o, &mut p, &mut env).unwrap(), "{o}");
        }
        assert_eq!(
            env,
            vec![
                ("SPINMUTEX_SPIN_LIMIT".to_string(), "50".to_string()),
                ("SPINMUTEX_TRACE".to_string(), "debug".to_string()),
                ("SPINMUTEX_TRACE_FILE".to_string(), "/tmp/t".to_string()),
                ("A".to_string(), "b=c".to_string()),
                ("SPINMUTEX_STATS".to_string(), "json".to_string()),
                ("SPINMUTEX_FAIR".to_string(), "1".to_string()),
            ]
        );
        assert!(parse_env_pair("NOEQUALS").is_err());
        assert!(parse_env_pair("=v").is_err());
    }

    #[test]
    fn negative_looking_numbers_are_positional() {
        let args = vec!["-5".to_string()];
        let mut p = Parser::new(&args);
        assert_eq!(p.next_arg().unwrap(), Some(Arg::Positional("-5".into())));
    }
}
