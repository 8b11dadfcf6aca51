//! default_best.png/.svg: the library's default against its best named solution, one bar per
//! shape, sorted from the shape where the default loses most (rocm-libraries#9985's picture).
//! A bar's height is default time / best time; red where the best beats the default beyond
//! noise, amber where the default is more than 10 % slower but the noise could explain it,
//! grey otherwise. Lines at 1 (the default is the best) and at 1.1.

use super::draw::{self, Canvas, DrawResult, Figure, LegendItem};
use super::facts::Facts;
use crate::analyze::default_best::{self as db, SLOWER_BY};
use crate::error::CmdError;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// The plot's heading in report.html, which puts it after its table.
pub const HEADING: &str = "Default against best";

const WIDTH: u32 = 1100;
const MARGIN: u32 = 20;
const TOP: u32 = 70;
const PLOT_H: u32 = 360;
const AXIS_W: u32 = 70;
const AXIS_H: u32 = 50;

const BEATEN: RGBColor = RGBColor(0xc6, 0x28, 0x28);
const WITHIN_NOISE: RGBColor = RGBColor(0xff, 0xb3, 0x47);
const NEAR: RGBColor = RGBColor(0x9e, 0x9e, 0x9e);

pub struct DefaultBest {
    title: String,
    subtitle: String,
    /// (ratio, colour), sorted by ratio, largest first.
    bars: Vec<(f64, RGBColor)>,
    y_max: f64,
    y_min: f64,
}

/// Draws the plot when the run has shapes with both a default and a named solution timed;
/// nothing otherwise.
pub fn write(f: &Facts, dir: &Path) -> Result<Vec<PathBuf>, CmdError> {
    match build(f) {
        Some(fig) => draw::render(&fig, dir, "default_best"),
        None => Ok(Vec::new()),
    }
}

pub fn build(f: &Facts) -> Option<DefaultBest> {
    let pairs = db::pairs(f.rows());
    if pairs.is_empty() {
        return None;
    }
    let mut bars: Vec<(f64, RGBColor)> = pairs
        .iter()
        .map(|p| {
            let color = if p.beats_default() {
                BEATEN
            } else if p.default_much_slower() {
                WITHIN_NOISE
            } else {
                NEAR
            };
            (p.ratio, color)
        })
        .collect();
    bars.sort_by(|a, b| b.0.total_cmp(&a.0));
    let hi = bars.first().map_or(1.0, |b| b.0);
    let lo = bars.last().map_or(1.0, |b| b.0);
    Some(DefaultBest {
        title: format!("Default against best: {}", f.run.manifest.sweep.name),
        subtitle: db::tally(&pairs).line(),
        y_max: (hi.max(SLOWER_BY) * 1.05).max(1.2),
        y_min: (lo.min(1.0) * 0.95).min(0.9),
        bars,
    })
}

impl DefaultBest {
    fn top(&self) -> u32 {
        TOP + draw::head_extra(&self.title, &self.subtitle, WIDTH)
    }

    fn legend() -> Vec<LegendItem> {
        [
            (BEATEN, "the best beats the default beyond noise"),
            (WITHIN_NOISE, "default > 10 % slower, within noise"),
            (NEAR, "the default is within 10 % of the best"),
        ]
        .into_iter()
        .map(|(color, text)| LegendItem {
            color,
            text: text.to_string(),
            line: false,
            dash: None,
            hatched: false,
            shape: None,
        })
        .collect()
    }
}

impl DefaultBest {
    /// The horizontal grid lines and their ratio labels.
    fn grid<DB: DrawingBackend>(
        &self,
        c: &Canvas<DB>,
        (gx, gw): (i32, i32),
        py: impl Fn(f64) -> i32,
    ) -> DrawResult<DB> {
        let lf = draw::font(13.0);
        let grid = RGBColor(0xe0, 0xe0, 0xe0);
        let step = draw::nice_step(self.y_max - self.y_min, 6.0);
        let mut t = (self.y_min / step).ceil() * step;
        while t <= self.y_max + 1e-9 {
            let y = py(t);
            c.area
                .draw(&PathElement::new(vec![(gx, y), (gx + gw, y)], grid))?;
            c.text(
                &format!("{t:.2}"),
                (gx - 8, y),
                &lf,
                &draw::GREY,
                draw::RIGHT,
            )?;
            t += step;
        }
        Ok(())
    }
}

impl Figure for DefaultBest {
    fn size(&self) -> (u32, u32) {
        let legend = draw::legend_height(&Self::legend(), &draw::font(14.0), WIDTH - 2 * MARGIN);
        (WIDTH, self.top() + PLOT_H + AXIS_H + legend + MARGIN)
    }

    fn draw<DB: DrawingBackend>(&self, c: &Canvas<DB>) -> DrawResult<DB> {
        draw::head(
            c,
            &draw::title_lines(&self.title, WIDTH),
            &draw::subtitle_lines(&self.subtitle, WIDTH),
            WIDTH,
        )?;
        let gx = (MARGIN + AXIS_W) as i32;
        let gw = (WIDTH - 2 * MARGIN - AXIS_W) as i32;
        let gy = self.top() as i32;
        let gh = PLOT_H as i32;
        let py = |r: f64| {
            gy + gh - ((r - self.y_min) / (self.y_max - self.y_min) * gh as f64).round() as i32
        };
        self.grid(c, (gx, gw), py)?;
        let lf = draw::font(13.0);
        let n = self.bars.len() as i32;
        // A few shapes get bars of a readable width, not the whole plot.
        let slot = (gw as f64 / n.max(1) as f64).min(48.0);
        let base = py(1.0);
        for (i, (ratio, color)) in self.bars.iter().enumerate() {
            let x0 = gx + (i as f64 * slot).round() as i32;
            let x1 =
                (gx + ((i + 1) as f64 * slot).round() as i32 - (slot > 4.0) as i32).max(x0 + 1);
            let y = py(*ratio);
            let corners = [(x0, y.min(base)), (x1, y.max(base))];
            c.area.draw(&Rectangle::new(corners, color.filled()))?;
        }
        c.area.draw(&PathElement::new(
            vec![(gx, base), (gx + gw, base)],
            BLACK.stroke_width(1),
        ))?;
        let y10 = py(SLOWER_BY);
        let mut x = gx;
        while x < gx + gw {
            let end = (x + 8).min(gx + gw);
            c.area.draw(&PathElement::new(
                vec![(x, y10), (end, y10)],
                BLACK.stroke_width(2),
            ))?;
            x += 14;
        }
        c.text(
            "1.1: 10 % slower",
            (gx + gw - 4, y10 - 10),
            &lf,
            &BLACK,
            draw::RIGHT,
        )?;
        let af = draw::font(14.0);
        c.text_up(
            "default time / best time",
            (MARGIN as i32 + 10, gy + gh / 2),
            &af,
            &BLACK,
        )?;
        c.text(
            &format!(
                "{} shapes, the default's largest loss first",
                self.bars.len()
            ),
            (gx + gw / 2, gy + gh + 22),
            &af,
            &BLACK,
            draw::CENTER,
        )?;
        draw::draw_legend(
            c,
            &Self::legend(),
            &draw::font(14.0),
            (MARGIN as i32, gy + gh + AXIS_H as i32),
            WIDTH - 2 * MARGIN,
        )
    }
}
