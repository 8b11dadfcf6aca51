//! Throughput against problem size: FLOPs (or bytes for copy, cast and rng) of a case across on
//! a log axis, GFLOP/s (GB/s) of its median time up, one line per solver and env combination.
//!
//! Non-numeric parameters that vary (dtype, direction, layout, ...) get a panel each, on shared
//! axes: a line through f32 and bf16 points would zig-zag between the two, and one line per
//! combination of everything turns into spaghetti (27 lines for 3 envs x 3 dtypes x 3
//! directions). Numeric parameters are what the size axis already shows.
//! Dots are cases; a line joins the cases of one shape family (everything numeric but the size
//! fixed, `c_in→c_out=3→16`), whose marker shape the legend names, so that equal-FLOP cases of
//! different shapes stay apart and a line never jumps between channel counts. Each line's best point is
//! drawn larger; the best of all gets a ring and is named above the plot.

use super::draw::{self, Canvas, DrawResult, Figure, LegendItem, Shape};
use super::facts::{self, Facts};
use crate::error::CmdError;
use plotters::prelude::*;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

mod data;
mod model;
pub use model::Throughput;
use model::{Panel, Series, title};

const WIDTH: u32 = 1200;
const TOP: u32 = 72;
const MARGIN: u32 = 20;
/// Room left of the panels for the rotated y axis title.
const Y_DESC_W: u32 = 30;
const Y_LABELS_W: u32 = 64;
const X_LABELS_H: u32 = 30;
const X_DESC_H: u32 = 40;
const PANEL_TITLE_H: u32 = 26;
const PANEL_TITLE_LINE_H: u32 = 17;
const SINGLE_H: u32 = 540;
const MULTI_H: u32 = 330;

/// Distinct on white and from each other (CIE76 distance at least 22), and from every status
/// colour of the heatmap and counts plot (at least 25), so that no line reads as "hang" red or
/// "ok" green; cycled when there are more series (markers and the legend still tell them apart).
pub(super) const PALETTE: [RGBColor; 7] = [
    RGBColor(0x01, 0x57, 0x9b),
    RGBColor(0x82, 0x77, 0x17),
    RGBColor(0x00, 0x69, 0x5c),
    RGBColor(0xb3, 0x9d, 0xdb),
    RGBColor(0x3f, 0x51, 0xb5),
    RGBColor(0x33, 0x69, 0x1e),
    RGBColor(0x26, 0xa6, 0x9a),
];

/// A panel's chart: the size on a log axis across, the rate on a linear axis up.
type Chart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<LogCoord<f64>, plotters::coord::types::RangedCoordf64>>;

/// The plotting area of a panel, in pixels of the whole image.
#[derive(Clone, Copy)]
struct Frame {
    left: i32,
    top: i32,
    right: i32,
    bottom: i32,
}

/// Grid lines: between ticks, and at powers of ten on the size axis.
const GRID_MINOR: RGBColor = RGBColor(0xef, 0xef, 0xef);
const GRID_MAJOR: RGBColor = RGBColor(0xd0, 0xd0, 0xd0);

pub fn write(f: &Facts, dir: &Path) -> Result<Vec<PathBuf>, CmdError> {
    match data::build(f) {
        Some(t) => draw::render(&t, dir, "throughput"),
        None => {
            let message = if f.rows().is_empty() {
                "no data: results.csv has no rows".to_string()
            } else {
                format!(
                    "no timings: no ok unit has a median time and {}",
                    f.metric.rate_unit()
                )
            };
            draw::render(
                &draw::NoData {
                    title: title(f),
                    message,
                },
                dir,
                "throughput",
            )
        }
    }
}

/// The dash pattern of series `i` (dash, gap in pixels): solid through the palette, then
/// dashed, then dotted, so that 21 series differ in colour or line before any two look alike.
pub(super) fn dash(i: usize) -> Option<(u32, u32)> {
    match (i / PALETTE.len()) % 3 {
        0 => None,
        1 => Some((8, 5)),
        _ => Some((2, 4)),
    }
}

/// The marker of a family (cycled past six: the legend still names each).
fn shape(family: usize) -> Shape {
    Shape::ALL[family % Shape::ALL.len()]
}

/// Tick values of a log axis: (value, is a power of ten, gets a label). Fewer labels as the
/// range widens or the panel narrows, so they never run into each other.
fn log_ticks(lo: f64, hi: f64, width_px: i32) -> Vec<(f64, bool, bool)> {
    let decades = (hi / lo).log10();
    let px_per_decade = f64::from(width_px) / decades.max(0.1);
    let mut out = Vec::new();
    let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    for k in k0..=k1 {
        for m in 1..=9 {
            let v = f64::from(m) * 10f64.powi(k);
            if v < lo || v > hi {
                continue;
            }
            let labelled = if px_per_decade >= 500.0 {
                true
            } else if px_per_decade >= 200.0 {
                matches!(m, 1 | 2 | 5)
            } else {
                m == 1
            };
            out.push((v, m == 1, labelled));
        }
    }
    out
}

impl Throughput {
    fn legend(&self) -> Vec<LegendItem> {
        let solvers = self.keys.iter().enumerate().map(|(i, k)| LegendItem {
            color: if self.by_family() {
                draw::GREY
            } else {
                PALETTE[i % PALETTE.len()]
            },
            text: k.clone(),
            line: true,
            dash: if self.by_family() { None } else { dash(i) },
            hatched: false,
            shape: None,
        });
        let families = self.families.iter().enumerate().map(|(i, fam)| LegendItem {
            color: self.family_color(i),
            text: fam.clone(),
            line: false,
            dash: None,
            hatched: false,
            shape: Some(shape(i)),
        });
        solvers.chain(families).collect()
    }
    /// With one solver the families take the colours too; with several, colour is the solver's.
    fn by_family(&self) -> bool {
        self.keys.len() == 1 && !self.families.is_empty()
    }
    fn family_color(&self, family: usize) -> RGBColor {
        if self.by_family() {
            PALETTE[family % PALETTE.len()]
        } else {
            draw::GREY
        }
    }
    fn series_color(&self, s: &Series) -> RGBColor {
        if self.by_family() {
            self.family_color(s.family)
        } else {
            PALETTE[s.key % PALETTE.len()]
        }
    }
    fn multi(&self) -> bool {
        self.panels.len() > 1
    }
    fn panel_w(&self) -> u32 {
        (WIDTH - 2 * MARGIN - Y_DESC_W) / self.cols
    }
    fn panel_h(&self) -> u32 {
        if self.multi() {
            self.panel_title_h() + MULTI_H
        } else {
            SINGLE_H
        }
    }
    /// A panel's title in lines that fit the panel (wrapped, never cut).
    fn panel_title_lines(&self, p: &Panel) -> Vec<String> {
        draw::wrap(&draw::bold(14.0), &p.title, self.panel_w() - 20)
    }
    fn panel_title_h(&self) -> u32 {
        let lines = self
            .panels
            .iter()
            .map(|p| self.panel_title_lines(p).len() as u32)
            .max()
            .unwrap_or(1)
            .max(1);
        PANEL_TITLE_H + PANEL_TITLE_LINE_H * (lines - 1)
    }
    fn top(&self) -> u32 {
        TOP + draw::head_extra(&self.title, &self.subtitle, WIDTH)
    }
    fn grid_h(&self) -> u32 {
        (self.panels.len() as u32).div_ceil(self.cols) * self.panel_h()
    }
    fn legend_w(&self) -> u32 {
        WIDTH - 2 * MARGIN - Y_DESC_W - Y_LABELS_W
    }

    fn draw_panel<DB: DrawingBackend>(
        &self,
        c: &Canvas<DB>,
        i: usize,
        (ox, oy): (u32, u32),
    ) -> DrawResult<DB> {
        let p = &self.panels[i];
        let title_h = if self.multi() {
            self.panel_title_h()
        } else {
            0
        };
        let area = c.area.clone().shrink(
            (ox, oy + title_h),
            (self.panel_w(), self.panel_h() - title_h),
        );
        let mut chart = ChartBuilder::on(&area)
            .margin_right(14)
            .margin_top(8)
            .x_label_area_size(X_LABELS_H)
            .y_label_area_size(Y_LABELS_W)
            .build_cartesian_2d(
                (self.x_range.0..self.x_range.1).log_scale(),
                0f64..self.y_max,
            )?;
        // Grid, ticks and labels are drawn here instead of by plotters' mesh so that their text
        // goes through Canvas::text like every other label.
        let (left, top) = chart.backend_coord(&(self.x_range.0, self.y_max));
        let (right, bottom) = chart.backend_coord(&(self.x_range.1, 0.0));
        let frame = Frame {
            left,
            top,
            right,
            bottom,
        };
        if !p.title.is_empty() {
            let tf = draw::bold(14.0);
            // Centred on the panel, so a title as wide as the panel stays inside it.
            let mid = (ox + self.panel_w() / 2) as i32;
            for (k, line) in self.panel_title_lines(p).iter().enumerate() {
                let at = (mid, (oy + 13 + PANEL_TITLE_LINE_H * k as u32) as i32);
                c.text(line, at, &tf, &BLACK, draw::CENTER)?;
            }
        }
        self.draw_x_grid(c, &chart, &frame)?;
        self.draw_y_grid(c, &chart, &frame)?;
        let axes = vec![(left, top), (left, bottom), (right, bottom)];
        c.area.draw(&PathElement::new(axes, BLACK))?;
        self.draw_series(c, &mut chart, p)?;
        if self.best.0 == i {
            let ring = Circle::new((self.best.1, self.best.2), 12, BLACK.stroke_width(2));
            chart.draw_series(std::iter::once(ring))?;
        }
        Ok(())
    }

    /// The size axis: a grid line at each log tick (stronger at powers of ten), with a tick
    /// mark and a label where there is room.
    fn draw_x_grid<DB: DrawingBackend>(
        &self,
        c: &Canvas<DB>,
        chart: &Chart<DB>,
        frame: &Frame,
    ) -> DrawResult<DB> {
        let Frame {
            left,
            top,
            right,
            bottom,
        } = *frame;
        let lf = draw::font(13.0);
        for (v, major, labelled) in log_ticks(self.x_range.0, self.x_range.1, right - left) {
            let (x, _) = chart.backend_coord(&(v, 0.0));
            let grid = if major { GRID_MAJOR } else { GRID_MINOR };
            c.area
                .draw(&PathElement::new(vec![(x, top), (x, bottom)], grid))?;
            if labelled {
                c.area
                    .draw(&PathElement::new(vec![(x, bottom), (x, bottom + 5)], BLACK))?;
                let at = (x, bottom + 16);
                c.text(&facts::si(v), at, &lf, &draw::GREY, draw::CENTER)?;
            }
        }
        Ok(())
    }

    /// The rate axis: a grid line, tick mark and label at each nice step from zero.
    fn draw_y_grid<DB: DrawingBackend>(
        &self,
        c: &Canvas<DB>,
        chart: &Chart<DB>,
        frame: &Frame,
    ) -> DrawResult<DB> {
        let Frame { left, right, .. } = *frame;
        let lf = draw::font(13.0);
        let ticks = if self.multi() { 5.0 } else { 8.0 };
        let step = draw::nice_step(self.y_max, ticks);
        let mut v = 0.0;
        while v <= self.y_max {
            let (_, y) = chart.backend_coord(&(self.x_range.0, v));
            c.area
                .draw(&PathElement::new(vec![(left, y), (right, y)], GRID_MINOR))?;
            c.area
                .draw(&PathElement::new(vec![(left - 5, y), (left, y)], BLACK))?;
            c.text(&facts::si(v), (left - 8, y), &lf, &draw::GREY, draw::RIGHT)?;
            v += step;
        }
        Ok(())
    }

    /// Each series of panel `p`: its line, and a marker per point, larger at its best point.
    fn draw_series<DB: DrawingBackend>(
        &self,
        c: &Canvas<DB>,
        chart: &mut Chart<DB>,
        p: &Panel,
    ) -> DrawResult<DB> {
        for s in &p.series {
            let color = self.series_color(s);
            let style = color.stroke_width(2);
            let pattern = if self.by_family() { None } else { dash(s.key) };
            let line = distinct_pixels(chart, &s.line);
            match pattern {
                None => {
                    chart.draw_series(LineSeries::new(line, style))?;
                }
                Some((d, g)) => {
                    chart.draw_series(DashedLineSeries::new(line, d, g, style))?;
                }
            }
            let top = s
                .points
                .iter()
                .copied()
                .fold((0.0, 0.0), |a, p| if p.1 > a.1 { p } else { a });
            // A marker already drawn at the same pixel would only paint it again: a series of
            // 10^6 shapes draws the few thousand places it has, not 10^6 elements in the SVG.
            let mut drawn = HashSet::new();
            for &p in &s.points {
                let at = chart.backend_coord(&p);
                if p != top && drawn.insert(at) {
                    draw::marker(c, at, shape(s.family), 4, color)?;
                }
            }
            if !s.points.is_empty() {
                draw::marker(c, chart.backend_coord(&top), shape(s.family), 6, color)?;
            }
        }
        Ok(())
    }
}

/// A line's points without those that land on the pixel of the point before them: the same
/// picture, without the zero-length steps a line through 10^6 shapes is mostly made of.
fn distinct_pixels<DB: DrawingBackend>(chart: &Chart<DB>, line: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut last = None;
    let mut out = Vec::new();
    for &p in line {
        let at = chart.backend_coord(&p);
        if last != Some(at) {
            out.push(p);
            last = Some(at);
        }
    }
    out
}

impl Figure for Throughput {
    fn size(&self) -> (u32, u32) {
        let legend = draw::legend_height(&self.legend(), &draw::font(14.0), self.legend_w());
        (
            WIDTH,
            self.top() + self.grid_h() + X_DESC_H + legend + 2 * MARGIN,
        )
    }

    fn draw<DB: DrawingBackend>(&self, c: &Canvas<DB>) -> DrawResult<DB> {
        draw::head(
            c,
            &draw::title_lines(&self.title, WIDTH),
            &draw::subtitle_lines(&self.subtitle, WIDTH),
            WIDTH,
        )?;
        for i in 0..self.panels.len() {
            let (col, row) = (i as u32 % self.cols, i as u32 / self.cols);
            let origin = (
                MARGIN + Y_DESC_W + col * self.panel_w(),
                self.top() + row * self.panel_h(),
            );
            self.draw_panel(c, i, origin)?;
        }
        let af = draw::font(15.0);
        let grid_bottom = (self.top() + self.grid_h()) as i32;
        let x_mid = ((MARGIN + Y_DESC_W + Y_LABELS_W + WIDTH - MARGIN) / 2) as i32;
        c.text(
            &self.x_desc,
            (x_mid, grid_bottom + 14),
            &af,
            &BLACK,
            draw::CENTER,
        )?;
        let y_mid = (self.top() as i32 + grid_bottom) / 2;
        c.text_up(&self.y_desc, ((MARGIN + 8) as i32, y_mid), &af, &BLACK)?;
        draw::draw_legend(
            c,
            &self.legend(),
            &draw::font(14.0),
            (
                (MARGIN + Y_DESC_W + Y_LABELS_W) as i32,
                grid_bottom + X_DESC_H as i32,
            ),
            self.legend_w(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::PALETTE;
    use crate::report::facts::{NO_UNIT, color};
    use crate::results::status::Status;
    use plotters::style::RGBColor;

    /// CIE L*a*b* of an sRGB colour (D65).
    fn lab(c: RGBColor) -> [f64; 3] {
        let lin = |u: u8| {
            let u = f64::from(u) / 255.0;
            if u <= 0.04045 {
                u / 12.92
            } else {
                ((u + 0.055) / 1.055).powf(2.4)
            }
        };
        let (r, g, b) = (lin(c.0), lin(c.1), lin(c.2));
        let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
        let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
        let f = |t: f64| {
            if t > 0.008856 {
                t.cbrt()
            } else {
                7.787 * t + 16.0 / 116.0
            }
        };
        [
            116.0 * f(y) - 16.0,
            500.0 * (f(x) - f(y)),
            200.0 * (f(y) - f(z)),
        ]
    }

    fn distance(a: RGBColor, b: RGBColor) -> f64 {
        let (a, b) = (lab(a), lab(b));
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    /// With 40 env combinations the palette cycles: the first 21 series still differ in
    /// colour or dash pattern.
    #[test]
    fn the_first_21_series_differ_in_colour_or_line() {
        type Look = ((u8, u8, u8), Option<(u32, u32)>);
        let looks: std::collections::HashSet<Look> = (0..21)
            .map(|i| {
                let c = PALETTE[i % PALETTE.len()];
                ((c.0, c.1, c.2), super::dash(i))
            })
            .collect();
        assert_eq!(looks.len(), 21);
    }

    /// Issue 31: one env combination's line was drawn in the red of "hang". No series colour
    /// is within a CIE76 distance of 25 of any status colour, nor within 22 of another series.
    #[test]
    fn no_series_colour_looks_like_a_status_or_like_another_series() {
        let mut statuses: Vec<RGBColor> = Status::ALL.iter().map(|s| color(*s)).collect();
        statuses.push(NO_UNIT);
        for p in PALETTE {
            for s in &statuses {
                assert!(
                    distance(p, *s) >= 25.0,
                    "series {p:?} is {:.1} from status colour {s:?}",
                    distance(p, *s)
                );
            }
            for q in PALETTE.iter().filter(|q| **q != p) {
                assert!(distance(p, *q) >= 22.0, "{p:?} and {q:?}");
            }
        }
    }
}
