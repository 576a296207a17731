//! `--metric`: one number taken from a command's output with a regular expression, and
//! which direction of it is better.

use regex_lite::Regex;
use serde::{Deserialize, Serialize};

/// A compiled `--metric` pattern.
#[derive(Debug, Clone)]
pub struct Metric {
    regex: Regex,
}

/// A number found in the output, with the text the pattern matched and what follows
/// the number on its line.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub value: f64,
    /// The whole match.
    pub matched: String,
    /// The word right after the number on its line (its unit, usually), or "" (also
    /// when that word is another `key=value`).
    pub unit: String,
}

impl Metric {
    /// The pattern's syntax is `regex-lite`'s (Rust regex syntax without Unicode
    /// classes). The number is its first capture group, or the whole match.
    pub fn compile(src: &str) -> Result<Metric, String> {
        if src.is_empty() {
            return Err("the pattern is empty".into());
        }
        let regex = Regex::new(src).map_err(|e| e.to_string())?;
        Ok(Metric { regex })
    }

    pub fn source(&self) -> &str {
        self.regex.as_str()
    }

    /// Whether `line` holds a match (the number in it may still not parse).
    pub fn matches(&self, line: &str) -> bool {
        self.regex.is_match(line)
    }

    /// Searches each line of `stdout`, then each line of `stderr`; the first line that
    /// matches decides.
    pub fn extract(&self, stdout: &str, stderr: &str) -> Result<Found, String> {
        for line in stdout.lines().chain(stderr.lines()) {
            let Some(caps) = self.regex.captures(line) else { continue };
            let m = caps.get(1).or_else(|| caps.get(0)).expect("a match has group 0");
            let text = m.as_str().trim();
            return match text.parse::<f64>() {
                Ok(value) if value.is_finite() => {
                    let unit = line[m.end()..]
                        .trim_start()
                        .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == ')')
                        .next()
                        .filter(|word| !word.contains(['=', ':']))
                        .unwrap_or("")
                        .to_string();
                    let matched = caps.get(0).map_or("", |m| m.as_str()).to_string();
                    Ok(Found { value, matched, unit })
                }
                _ => Err(format!("--metric '{}' matched {text:?}, which is not a number", self.source())),
            };
        }
        Err(format!("--metric '{}' matched nothing in the output", self.source()))
    }
}

/// Which way a quantity is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    HigherIsBetter,
    LowerIsBetter,
    /// Not known: comparisons say "higher" or "lower", never "better".
    Unknown,
}

impl Direction {
    pub fn describe(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "higher is better",
            Direction::LowerIsBetter => "lower is better",
            Direction::Unknown => "direction unknown",
        }
    }
}

const TIME_UNITS: &[&str] = &[
    "s",
    "sec",
    "secs",
    "second",
    "seconds",
    "ms",
    "msec",
    "msecs",
    "millisecond",
    "milliseconds",
    "us",
    "µs",
    "usec",
    "usecs",
    "microsecond",
    "microseconds",
    "ns",
    "nsec",
    "nsecs",
    "nanosecond",
    "nanoseconds",
    "min",
    "mins",
    "minutes",
];
const RATE_WORDS: &[&str] = &[
    "/s",
    "/sec",
    "per second",
    "per sec",
    "tps",
    "qps",
    "rps",
    "iops",
    "throughput",
    "events",
    "bandwidth",
];
const TIME_WORDS: &[&str] = &["latency", "elapsed", "duration", "time", "wall"];

/// The direction of a metric, from its unit: a time (`ms`, `s`, `latency`) is better
/// lower, a rate (`ops/s`, `MB/s`, `tps`, `events`) higher. Looks at the word after the
/// number first, then at the pattern and the text it matched (not the rest of the
/// line, which may name other quantities). Also says why.
pub fn infer(pattern: &str, found: &Found) -> (Direction, String) {
    let unit = found.unit.to_lowercase();
    let unit_trimmed = unit.trim_matches(|c: char| !c.is_alphanumeric() && c != '/' && c != 'µ');
    if !unit_trimmed.is_empty() {
        if RATE_WORDS.iter().any(|w| unit_trimmed.contains(w)) {
            return (Direction::HigherIsBetter, format!("the output's unit '{}' is a rate", found.unit));
        }
        if TIME_UNITS.contains(&unit_trimmed) {
            return (Direction::LowerIsBetter, format!("the output's unit '{}' is a time", found.unit));
        }
    }
    let context = format!("{pattern} {}", found.matched).to_lowercase();
    if let Some(w) = RATE_WORDS.iter().find(|w| context.contains(*w)) {
        return (Direction::HigherIsBetter, format!("'{w}' in the metric names a rate"));
    }
    if let Some(w) = TIME_WORDS.iter().find(|w| context.contains(*w)) {
        return (Direction::LowerIsBetter, format!("'{w}' in the metric names a time"));
    }
    (Direction::Unknown, "no unit recognised; pass --higher-is-better or --lower-is-better".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(pattern: &str, out: &str) -> Found {
        Metric::compile(pattern).unwrap().extract(out, "").unwrap()
    }

    #[test]
    fn extracts_the_first_group_or_the_match() {
        let f = found(r"ops/s=([0-9.]+)", "counter=4 ops/s=1234.5\n");
        assert_eq!(f.value, 1234.5);
        let f = found(r"\d+\.\d+", "took 3.25 ms\n");
        assert_eq!((f.value, f.unit.as_str()), (3.25, "ms"));
        let m = Metric::compile(r"x=(\d+)").unwrap();
        assert_eq!(m.extract("nothing\n", "x=7\n").unwrap().value, 7.0);
        assert!(m.extract("x\n", "").unwrap_err().contains("matched nothing"));
        assert!(Metric::compile(r"v=(\w+)")
            .unwrap()
            .extract("v=abc", "")
            .unwrap_err()
            .contains("not a number"));
        assert!(Metric::compile("(").is_err());
        assert!(Metric::compile("").is_err());
    }

    #[test]
    fn infers_direction_from_units() {
        let d = |pattern: &str, out: &str| infer(pattern, &found(pattern, out)).0;
        assert_eq!(d(r"ops/s=([0-9.]+)", "ops/s=5"), Direction::HigherIsBetter);
        assert_eq!(d(r"([0-9.]+) MB/s", "read 120.5 MB/s"), Direction::HigherIsBetter);
        assert_eq!(
            d(r"events per second:\s*([0-9.]+)", "events per second:  998.1"),
            Direction::HigherIsBetter
        );
        assert_eq!(d(r"tps = ([0-9.]+)", "tps = 412"), Direction::HigherIsBetter);
        assert_eq!(d(r"avg: ([0-9.]+)", "avg: 12.5 ms"), Direction::LowerIsBetter);
        assert_eq!(d(r"latency ([0-9.]+)", "latency 17"), Direction::LowerIsBetter);
        assert_eq!(d(r"took ([0-9.]+)", "took 3 s"), Direction::LowerIsBetter);
        assert_eq!(d(r"score=(\d+)", "score=17"), Direction::Unknown);
        // Another quantity on the same line does not decide.
        assert_eq!(d(r"counter=(\d+)", "counter=400 ops/s=12"), Direction::Unknown);
    }
}
