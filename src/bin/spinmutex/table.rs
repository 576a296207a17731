//! Plain-text tables with right-aligned columns, and number formatting.

/// A table: header lines (each a row of cells) and rows; every column is as wide as
/// its widest cell. The first `left` columns are left-aligned, the rest right-aligned.
pub struct Table {
    pub header: Vec<Vec<String>>,
    pub rows: Vec<Vec<String>>,
    pub left: usize,
}

impl Table {
    pub fn new(left: usize) -> Self {
        Table { header: Vec::new(), rows: Vec::new(), left }
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
                let pad = w - cell.chars().count();
                if i > 0 {
                    s.push_str("  ");
                }
                if i < self.left {
                    s.push_str(cell);
                    s.push_str(&" ".repeat(pad));
                } else {
                    s.push_str(&" ".repeat(pad));
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

/// A number with about four significant digits (no exponent).
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

/// Seconds, in the unit that suits them.
pub fn duration(s: f64) -> String {
    if !s.is_finite() {
        "-".to_string()
    } else if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// A signed percentage change: `+12.3%`.
pub fn change(ratio: f64) -> String {
    if !ratio.is_finite() {
        "-".to_string()
    } else {
        format!("{:+.1}%", (ratio - 1.0) * 100.0)
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
        assert_eq!(duration(0.0125), "12.50 ms");
    }
}
