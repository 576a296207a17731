//! SVG charts: the primitives every chart uses (document, axis ticks and labels, the
//! plot frame, colours) and the small-multiple line chart of `bench`, whose points can
//! carry error bars (the 95% interval of the mean over the runs). The histograms and
//! bars of `report` are drawn with the same primitives (see report/svg.rs).

use std::fmt::Write as _;

/// Colours for series without a fixed one: none of the fixed ones.
const PALETTE: &[&str] = &["#8c564b", "#e377c2", "#bcbd22", "#2ca02c"];

/// The colour of a series, fixed (and distinct) for the strategy and arm names.
pub fn colour(name: &str, index: usize) -> &'static str {
    match name {
        "glibc" => "#1f77b4",
        "glibc-adaptive" => "#17becf",
        "futex" => "#ff7f0e",
        "spin" => "#d62728",
        "kernel" => "#9467bd",
        "none" => "#7f7f7f",
        _ => PALETTE[index % PALETTE.len()],
    }
}

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Tick values 0, step, 2 step, ... covering `max` with a 1-2-5 step of at least 1; the
/// last tick is the axis top.
pub fn ticks(max: f64) -> Vec<f64> {
    let max = if max > 0.0 && max.is_finite() { max } else { 1.0 };
    let rough = max / 5.0;
    let mag = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= rough).unwrap_or(10.0 * mag);
    let step = step.max(1.0);
    let n = (max / step).ceil().max(1.0) as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// An axis label: `950`, `1.5k`, `12k`, `2.5M`, `1G`.
pub fn tick_label(v: f64) -> String {
    if v >= 1e9 {
        format!("{}G", trim(v / 1e9))
    } else if v >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if v >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The opening of a chart: the `<svg>` element, a white background, a bold title and
/// a grey subtitle.
pub fn document_start(width: f64, height: f64, title: &str, subtitle: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="10" y="20" font-size="15" font-weight="bold">{}</text>"#, escape(title));
    let _ = writeln!(s, r##"<text x="10" y="38" fill="#444">{}</text>"##, escape(subtitle));
    s
}

/// The size of a chart's panels, and the margins between a panel's edges and its plot
/// area.
pub struct Layout {
    pub panel_w: f64,
    pub panel_h: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl Layout {
    /// The plot area of the panel whose top left corner is (`ox`, `oy`), `width_panels`
    /// panels wide, with the value `top` at the top of its vertical axis.
    pub fn plot(&self, ox: f64, oy: f64, width_panels: f64, top: f64) -> Plot {
        Plot {
            x: ox + self.left,
            y: oy + self.top,
            w: width_panels * self.panel_w - self.left - self.right,
            h: self.panel_h - self.top - self.bottom,
            top,
        }
    }
}

/// A plot area: its position and size, and the top of its vertical value axis.
pub struct Plot {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    /// The value at the top of the area (the last tick).
    pub top: f64,
}

impl Plot {
    /// The vertical position of value `v`.
    pub fn sy(&self, v: f64) -> f64 {
        self.y + self.h - v / self.top * self.h
    }

    /// A bold title centred above the area, at `y`.
    pub fn title(&self, s: &mut String, y: f64, text: &str) {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{y:.1}" text-anchor="middle" font-size="12" font-weight="bold">{}</text>"#,
            self.x + self.w / 2.0,
            escape(text)
        );
    }

    /// Horizontal grid lines with their labels on the left.
    pub fn y_grid(&self, s: &mut String, ticks: &[f64]) {
        for t in ticks {
            let y = self.sy(*t);
            let _ = writeln!(
                s,
                r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                self.x,
                self.x + self.w,
                self.x - 4.0,
                y + 4.0,
                tick_label(*t)
            );
        }
    }

    /// The frame around the area.
    pub fn border(&self, s: &mut String) {
        let _ = writeln!(
            s,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#888"/>"##,
            self.x, self.y, self.w, self.h
        );
    }

    /// A label under the area and one turned along its left side, at `left_x`.
    pub fn axis_labels(&self, s: &mut String, x_label: &str, x_label_y: f64, y_label: &str, left_x: f64) {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{x_label_y:.1}" text-anchor="middle">{}</text>"#,
            self.x + self.w / 2.0,
            escape(x_label)
        );
        let ly = self.y + self.h / 2.0;
        let _ = writeln!(
            s,
            r#"<text x="{left_x:.1}" y="{ly:.1}" text-anchor="middle" transform="rotate(-90 {left_x:.1} {ly:.1})">{}</text>"#,
            escape(y_label)
        );
    }

    /// A centred grey note, for an area with no data.
    pub fn note(&self, s: &mut String, text: &str) {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#666">{}</text>"##,
            self.x + self.w / 2.0,
            self.y + self.h / 2.0,
            escape(text)
        );
    }
}

/// One line of a panel.
pub struct Series {
    pub name: String,
    /// (x, y) points; x > 0 (log axis). Points with a non-finite y are skipped.
    pub points: Vec<(f64, f64)>,
    /// Error bars: (x, low, high), drawn at the point of the same x.
    pub bars: Vec<(f64, f64, f64)>,
}

impl Series {
    /// A series of points with the 95% interval of the mean of each point's `samples`
    /// (Student's t; none for fewer than two samples).
    pub fn with_intervals(name: String, points: Vec<(f64, f64, Vec<f64>)>) -> Series {
        let bars = points
            .iter()
            .filter_map(|(x, _, samples)| crate::stats::ci95_mean(samples).map(|(lo, hi)| (*x, lo, hi)))
            .filter(|(_, lo, hi)| lo.is_finite() && hi.is_finite())
            .collect();
        Series { name, points: points.into_iter().map(|(x, y, _)| (x, y)).collect(), bars }
    }
}

/// One panel: a title, its lines and an optional horizontal bound.
pub struct Panel {
    pub title: String,
    pub series: Vec<Series>,
    /// Drawn as a dashed line; labelled as off scale when far above the data.
    pub bound: Option<f64>,
}

/// Small-multiple line charts with a log x axis.
pub struct Chart {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    pub x_ticks: Vec<f64>,
    pub panels: Vec<Panel>,
}

const LAYOUT: Layout =
    Layout { panel_w: 330.0, panel_h: 250.0, left: 62.0, right: 14.0, top: 28.0, bottom: 44.0 };
const PANEL_W: f64 = LAYOUT.panel_w;
const PANEL_H: f64 = LAYOUT.panel_h;
const HEADER_H: f64 = 78.0;

impl Chart {
    pub fn render(&self) -> String {
        let cols = self.panels.len().clamp(1, 3);
        let rows = self.panels.len().div_ceil(cols).max(1);
        let height = HEADER_H + rows as f64 * PANEL_H + 10.0;
        // The legend first: the chart is as wide as the panels or the legend.
        let mut legend = String::new();
        let s = &mut legend;
        // Legend: every series name seen, in order of first appearance.
        let mut names: Vec<&str> = Vec::new();
        for p in &self.panels {
            for se in &p.series {
                if !names.contains(&se.name.as_str()) {
                    names.push(&se.name);
                }
            }
        }
        let mut lx = 10.0;
        for (i, n) in names.iter().enumerate() {
            let c = colour(n, i);
            let _ = writeln!(
                s,
                r#"<line x1="{lx}" y1="56" x2="{}" y2="56" stroke="{c}" stroke-width="2.5"/><circle cx="{}" cy="56" r="3" fill="{c}"/><text x="{}" y="60">{}</text>"#,
                lx + 22.0,
                lx + 11.0,
                lx + 27.0,
                escape(n)
            );
            lx += 40.0 + 7.0 * n.chars().count() as f64;
        }
        let _ = writeln!(
            s,
            r##"<line x1="{lx}" y1="56" x2="{}" y2="56" stroke="#000" stroke-width="1.2" stroke-dasharray="5,3"/><text x="{}" y="60">bound 1/(load × pause)</text>"##,
            lx + 22.0,
            lx + 27.0
        );
        let mut legend_end = lx + 200.0;
        if self.panels.iter().any(|p| p.series.iter().any(|se| !se.bars.is_empty())) {
            let lx = lx + 200.0;
            legend_end = lx + 22.0 + 7.5 * "95% interval of the mean".len() as f64;
            let _ = writeln!(
                s,
                r##"<path d="M{},50H{}M{},50V62M{},62H{}" stroke="#000" stroke-width="1.2" fill="none"/><text x="{}" y="60">95% interval of the mean</text>"##,
                lx + 8.0,
                lx + 14.0,
                lx + 11.0,
                lx + 8.0,
                lx + 14.0,
                lx + 22.0
            );
        }
        let width = (cols as f64 * PANEL_W + 20.0).max(legend_end + 10.0);
        let mut s = document_start(width, height, &self.title, &self.subtitle);
        s.push_str(&legend);
        for (k, panel) in self.panels.iter().enumerate() {
            let ox = 10.0 + (k % cols) as f64 * PANEL_W;
            let oy = HEADER_H + (k / cols) as f64 * PANEL_H;
            self.panel(&mut s, panel, ox, oy, &names);
        }
        s.push_str("</svg>\n");
        s
    }

    fn panel(&self, s: &mut String, panel: &Panel, ox: f64, oy: f64, names: &[&str]) {
        let xs: Vec<f64> = self.x_ticks.iter().copied().filter(|x| *x > 0.0).collect();
        let (mut xmin, mut xmax) =
            xs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        if !xmin.is_finite() {
            (xmin, xmax) = (1.0, 2.0);
        }
        if xmax <= xmin {
            xmin /= 2.0;
            xmax *= 2.0;
        }
        let data_max = panel
            .series
            .iter()
            .flat_map(|se| se.points.iter().map(|p| p.1).chain(se.bars.iter().map(|b| b.2)))
            .filter(|y| y.is_finite())
            .fold(0.0f64, f64::max);
        let bound = panel.bound.filter(|b| b.is_finite() && *b > 0.0);
        let bound_on_scale = bound.is_some_and(|b| data_max <= 0.0 || b <= 2.5 * data_max);
        let mut top = data_max * 1.08;
        if let (Some(b), true) = (bound, bound_on_scale) {
            top = top.max(b * 1.05);
        }
        let ticks = ticks(top);
        let plot = LAYOUT.plot(ox, oy, 1.0, *ticks.last().unwrap_or(&1.0));
        let (lxmin, lxmax) = (xmin.log2(), xmax.log2());
        let sx = |x: f64| plot.x + (x.log2() - lxmin) / (lxmax - lxmin) * plot.w;

        let _ = writeln!(s, "<g>");
        plot.title(s, oy + 16.0, &panel.title);
        plot.y_grid(s, &ticks);
        for x in &xs {
            let xp = sx(*x);
            let _ = writeln!(
                s,
                r##"<line x1="{xp:.1}" y1="{:.1}" x2="{xp:.1}" y2="{:.1}" stroke="#f0f0f0"/><text x="{xp:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                plot.y,
                plot.y + plot.h,
                plot.y + plot.h + 14.0,
                trim(*x)
            );
        }
        plot.border(s);
        plot.axis_labels(s, &self.x_label, plot.y + plot.h + 32.0, &self.y_label, ox + 14.0);
        if let Some(b) = bound {
            let right = plot.x + plot.w;
            if bound_on_scale {
                let y = plot.sy(b);
                let _ = writeln!(
                    s,
                    r##"<line x1="{:.1}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}" stroke="#000" stroke-width="1.2" stroke-dasharray="5,3"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#000">bound {}</text>"##,
                    plot.x,
                    right - 3.0,
                    y - 3.0,
                    tick_label(b)
                );
            } else {
                let _ = writeln!(
                    s,
                    r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#000">↑ bound {} (off scale)</text>"##,
                    right - 3.0,
                    plot.y + 11.0,
                    tick_label(b)
                );
            }
        }
        for se in &panel.series {
            let idx = names.iter().position(|n| *n == se.name).unwrap_or(0);
            let c = colour(&se.name, idx);
            let pts: Vec<(f64, f64)> = se
                .points
                .iter()
                .copied()
                .filter(|(x, y)| *x > 0.0 && y.is_finite())
                .map(|(x, y)| (sx(x), plot.sy(y)))
                .collect();
            // Error bars under the points: a vertical line with caps, nudged sideways per
            // series so that overlapping intervals stay apart.
            let nudge = (idx as f64 - (names.len() as f64 - 1.0) / 2.0) * 3.0;
            for (x, lo, hi) in se.bars.iter().filter(|(x, _, _)| *x > 0.0) {
                let xp = sx(*x) + nudge;
                let (y1, y2) = (plot.sy(lo.max(0.0)), plot.sy(*hi));
                let _ = writeln!(
                    s,
                    r#"<path d="M{:.1},{y1:.1}H{:.1}M{xp:.1},{y1:.1}V{y2:.1}M{:.1},{y2:.1}H{:.1}" stroke="{c}" stroke-width="1.2" fill="none" opacity="0.75"><title>{}: 95% interval {} to {}</title></path>"#,
                    xp - 3.0,
                    xp + 3.0,
                    xp - 3.0,
                    xp + 3.0,
                    escape(&se.name),
                    tick_label(*lo),
                    tick_label(*hi)
                );
            }
            if pts.len() > 1 {
                let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                let _ = writeln!(
                    s,
                    r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="2" stroke-linejoin="round"/>"#,
                    path.join(" ")
                );
            }
            for (x, y) in &pts {
                let _ = writeln!(
                    s,
                    r#"<circle cx="{x:.1}" cy="{y:.1}" r="2.8" fill="{c}"><title>{}</title></circle>"#,
                    escape(&se.name)
                );
            }
        }
        let _ = writeln!(s, "</g>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice() {
        assert_eq!(ticks(10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0).len(), 2);
        assert_eq!(ticks(3.0), vec![0.0, 1.0, 2.0, 3.0]);
        let t = ticks(4321.0);
        assert!(*t.last().unwrap() >= 4321.0 && t.len() <= 7, "{t:?}");
        assert_eq!(tick_label(1500.0), "1.5k");
        assert_eq!(tick_label(2_000_000.0), "2M");
    }

    #[test]
    fn renders_balanced_svg() {
        let chart = Chart {
            title: "t <1>".into(),
            subtitle: "s & s".into(),
            x_label: "threads".into(),
            y_label: "kops/s".into(),
            x_ticks: vec![1.0, 2.0, 8.0],
            panels: vec![
                Panel {
                    title: "load 0".into(),
                    bound: None,
                    series: vec![Series::with_intervals(
                        "glibc".into(),
                        vec![(1.0, 5.0, vec![4.0, 5.0, 6.0]), (2.0, 3.0, vec![3.0]), (8.0, f64::NAN, vec![])],
                    )],
                },
                Panel {
                    title: "load 10".into(),
                    bound: Some(100.0),
                    series: vec![Series {
                        name: "spin".into(),
                        points: vec![(1.0, 50.0), (8.0, 60.0)],
                        bars: vec![],
                    }],
                },
            ],
        };
        let svg = chart.render();
        assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("t &lt;1&gt;") && svg.contains("s &amp; s"));
        assert_eq!(svg.matches("<g>").count(), svg.matches("</g>").count());
        assert!(svg.contains("bound 100"));
        // One error bar: the glibc point with three samples.
        assert_eq!(svg.matches("95% interval ").count(), 2, "the bar and its legend:\n{svg}");
    }

    #[test]
    fn every_arm_has_its_own_colour() {
        let names = ["glibc", "glibc-adaptive", "futex", "spin", "kernel", "none"];
        let mut colours: Vec<&str> = names.iter().enumerate().map(|(i, n)| colour(n, i)).collect();
        colours.extend(PALETTE);
        let mut unique = colours.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), colours.len(), "{colours:?}");
    }
}
