//! What the reports say about the machine, and whether it is too busy to measure on.

use serde::{Deserialize, Serialize};

/// The machine a measurement ran on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    /// CPUs this process may run on.
    pub nproc: usize,
    pub cpu_model: String,
    pub kernel: String,
    /// The one-minute load average when the measurement started.
    pub load_average_1m: Option<f64>,
}

impl Machine {
    pub fn probe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown CPU".to_string());
        Machine {
            nproc: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            cpu_model,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_string(),
            load_average_1m: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|t| t.split_whitespace().next().and_then(|v| v.parse().ok())),
        }
    }

    /// A warning when other work keeps at least half the CPUs busy: timings taken now
    /// measure the scheduler as much as the program.
    pub fn busy_warning(&self) -> Option<String> {
        let load = self.load_average_1m?;
        (load >= self.nproc as f64 * 0.5).then(|| {
            format!(
                "the machine is busy: load average {load:.2} on {} CPU(s) before the first run; \
                 timings will be noisy and may mislead (stop other work, or compare more runs)",
                self.nproc
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_when_load_reaches_half_the_cpus() {
        let m = |load| Machine {
            nproc: 4,
            cpu_model: String::new(),
            kernel: String::new(),
            load_average_1m: load,
        };
        assert!(m(Some(1.9)).busy_warning().is_none());
        assert!(m(Some(2.0)).busy_warning().unwrap().contains("load average 2.00 on 4 CPU(s)"));
        assert!(m(None).busy_warning().is_none());
    }
}
