//! Plain-text tables and the number formats every report shares.

/// A table: header lines (each a row of cells) and rows; every column is as wide as
/// its widest cell. The first `left` columns and the last `left_last` are left-aligned,
/// the rest right-aligned.
pub struct Table {
    pub header: Vec<Vec<String>>,
    pub rows: Vec<Vec<String>>,
    pub left: usize,
    pub left_last: usize,
}

impl Table {
    pub fn new(left: usize) -> Self {
        Table { header: Vec::new(), rows: Vec::new(), left, left_last: 0 }
    }

    pub fn render(&self) -> String {
        let ncols = self.header.iter().chain(&self.rows).map(Vec::len).max().unwrap_or(0);
        let mut width = vec![0usize; ncols];
        for row in self.header.iter().chain(&self.rows) {
            for (i, cell) in row.iter().enumerate() {
                width[i] = width[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let line = |row: &Vec<String>, out: &mut String| {
            let mut s = String::new();
            for (i, w) in width.iter().enumerate() {
                let cell = row.get(i).map(String::as_str).unwrap_or("");
                let pad = " ".repeat(w - cell.chars().count());
                if i > 0 {
                    s.push_str("  ");
                }
                if i < self.left || i + self.left_last >= ncols {
                    s.push_str(cell);
                    s.push_str(&pad);
                } else {
                    s.push_str(&pad);
                    s.push_str(cell);
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        for h in &self.header {
            line(h, &mut out);
        }
        if !self.header.is_empty() {
            let total: usize = width.iter().sum::<usize>() + 2 * ncols.saturating_sub(1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
        for r in &self.rows {
            line(r, &mut out);
        }
        out
    }
}

/// A number with about four significant digits (no exponent); `-` when not finite.
pub fn fixed(v: f64) -> String {
    if !v.is_finite() {
        return "-".to_string();
    }
    let a = v.abs();
    if a >= 1000.0 || a == 0.0 {
        return format!("{v:.0}");
    }
    let decimals = (3 - a.log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
}

/// A duration in the unit that suits it: `850ns`, `12.3µs`, `4.10ms`, `1.20s` (three
/// significant digits), or with `compact` one digit fewer: `512ns`, `1.0µs`, `16µs`.
/// `-` when not finite. The one duration format of every report.
pub fn duration_ns(ns: f64, compact: bool) -> String {
    if !ns.is_finite() {
        return "-".to_string();
    }
    let (v, unit) = if ns.abs() < 1e3 {
        return format!("{ns:.0}ns");
    } else if ns.abs() < 1e6 {
        (ns / 1e3, "µs")
    } else if ns.abs() < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let decimals: usize = match (v.abs() < 10.0, v.abs() < 100.0) {
        (true, _) => 2,
        (false, true) => 1,
        _ => 0,
    };
    let decimals = if compact { decimals.saturating_sub(1) } else { decimals };
    format!("{v:.decimals$}{unit}")
}

/// Seconds, as [`duration_ns`] writes them.
pub fn seconds(s: f64) -> String {
    duration_ns(s * 1e9, false)
}

/// A signed percentage change from a ratio: `+12.3%`; `-` when not finite.
pub fn change(ratio: f64) -> String {
    if !ratio.is_finite() {
        "-".to_string()
    } else {
        format!("{:+.1}%", (ratio - 1.0) * 100.0)
    }
}

/// A percentage with one decimal; `-` when not finite.
pub fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}%")
    } else {
        "-".into()
    }
}

/// A count, short: `9999`, `12k`, `3M`.
pub fn short_count(v: u64) -> String {
    match v {
        0..=9_999 => v.to_string(),
        10_000..=9_999_999 => format!("{}k", v / 1000),
        _ => format!("{}M", v / 1_000_000),
    }
}

/// `Some(v)` for a finite value: JSON has no NaN or infinity.
pub fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// One CSV field, quoted when it needs to be (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A number for CSV: empty when not finite, no decimals when whole.
pub fn csv_num(v: f64) -> String {
    if !v.is_finite() {
        String::new()
    } else if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_aligned() {
        let mut t = Table::new(1);
        t.header.push(vec!["name".into(), "value".into()]);
        t.rows.push(vec!["a".into(), "1".into()]);
        t.rows.push(vec!["long".into(), "100".into()]);
        assert_eq!(t.render(), "name  value\n-----------\na         1\nlong    100\n");
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(fixed(1.23456), "1.235");
        assert_eq!(fixed(0.0085), "0.008500");
        assert_eq!(fixed(123.456), "123.5");
        assert_eq!(fixed(12345.6), "12346");
        assert_eq!(change(1.25), "+25.0%");
        assert_eq!(change(0.9), "-10.0%");
        assert_eq!(short_count(12_345), "12k");
    }

    #[test]
    fn formats_durations() {
        assert_eq!(duration_ns(850.0, false), "850ns");
        assert_eq!(duration_ns(12_340.0, false), "12.3µs");
        assert_eq!(duration_ns(4_100_000.0, false), "4.10ms");
        assert_eq!(duration_ns(1.2e9, false), "1.20s");
        assert_eq!(duration_ns(1024.0, true), "1.0µs");
        assert_eq!(duration_ns(512.0, true), "512ns");
        assert_eq!(duration_ns(16_384.0, true), "16µs");
        assert_eq!(duration_ns(f64::NAN, true), "-");
        assert_eq!(seconds(0.0125), "12.5ms");
    }

    #[test]
    fn csv_quoting() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_num(2.0), "2");
        assert_eq!(csv_num(2.25), "2.25");
        assert_eq!(csv_num(f64::INFINITY), "");
    }
}
