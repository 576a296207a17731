//! Progress of a long measurement on standard error: a bar with an ETA on a terminal,
//! one plain line per run otherwise (logs, CI, tests).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    total: u64,
    done: u64,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            let style =
                ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed} elapsed, ETA {eta} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        Progress { total, done: 0, bar }
    }

    /// One run finished: `line` describes it. Failures stay visible above the bar.
    pub fn step(&mut self, line: &str, failed: bool) {
        self.done += 1;
        let text = format!("[{:>3}/{}] {line}", self.done, self.total);
        match &self.bar {
            Some(bar) => {
                if failed {
                    bar.println(&text);
                }
                bar.set_message(line.to_string());
                bar.inc(1);
            }
            None => eprintln!("{text}"),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
