//! Shared plotting: the embedded font, one figure drawn to both PNG and SVG, text, legends and
//! the "no data" panel.
//!
//! PNG text is rasterised here rather than by plotters: plotters 0.3.7's ab_glyph path drops
//! each glyph's left side bearing, so `1`, `:` and `-` sit visibly out of place (`bf1 6`,
//! `H: compile`). SVG text stays `<text>` for the browser to set.

use crate::error::CmdError;
use plotters::prelude::*;
use plotters::style::FontDesc;
use std::path::{Path, PathBuf};

mod canvas;
mod text;
pub use canvas::{
    CENTER, Canvas, DrawResult, GREY, LEFT, RIGHT, bold, ensure_fonts, font, text_width,
};
pub use text::{
    SUBTITLE_LINE_H, TITLE_LINE_H, head, head_extra, subtitle_lines, title, title_lines, wrap,
};

/// A figure knows its size before drawing, so the same layout goes to both backends.
pub trait Figure {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, c: &Canvas<DB>) -> DrawResult<DB>;
}

use crate::results::atomic;

/// Draws `fig` into `<dir>/<stem>.png` and `<dir>/<stem>.svg`.
pub fn render<F: Figure>(fig: &F, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, CmdError> {
    let size = fig.size();
    let png = dir.join(format!("{stem}.png"));
    let svg = dir.join(format!("{stem}.svg"));
    let fail = |path: &Path, e: &dyn std::fmt::Display| {
        CmdError::Failure(format!("{}: could not draw: {e}", path.display()))
    };
    let io = |e: &dyn std::fmt::Display| std::io::Error::other(e.to_string());
    // Each image is drawn into a temporary file and renamed into place (results::atomic).
    atomic::write_via(&png, |tmp| {
        crate::markup::png::draw_to(tmp, size, io, |root| {
            root.fill(&WHITE).map_err(|e| io(&e))?;
            fig.draw(&Canvas::new(root, true)).map_err(|e| io(&e))
        })
    })
    .map_err(|e| fail(&png, &e))?;
    atomic::write_via(&svg, |tmp| {
        let root = SVGBackend::new(tmp, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| io(&e))?;
        fig.draw(&Canvas::new(&root, false)).map_err(|e| io(&e))?;
        root.present().map_err(|e| io(&e))
    })
    .map_err(|e| fail(&svg, &e))?;
    Ok(vec![png, svg])
}

/// Black or white, whichever reads better on `bg`.
pub fn contrast(bg: RGBColor) -> RGBColor {
    let l = 0.299 * f64::from(bg.0) + 0.587 * f64::from(bg.1) + 0.114 * f64::from(bg.2);
    if l > 140.0 { BLACK } else { WHITE }
}

/// Shortens `text` with an ellipsis until it fits `max_w` pixels.
pub fn fit(f: &FontDesc, text: &str, max_w: u32) -> String {
    if text_width(f, text) <= max_w {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    for keep in (1..chars.len()).rev() {
        let s: String = chars[..keep].iter().collect::<String>() + "…";
        if text_width(f, &s) <= max_w {
            return s;
        }
    }
    "…".to_string()
}

/// A round step giving about `target` ticks from 0 to `max`.
pub fn nice_step(max: f64, target: f64) -> f64 {
    let raw = max / target;
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * 0.999)
        .unwrap_or(10.0 * mag)
}

/// One legend entry: a swatch and its text.
pub struct LegendItem {
    pub color: RGBColor,
    pub text: String,
    /// Draw a short line instead of a filled square (for line series).
    pub line: bool,
    /// The line's dash pattern (dash, gap in pixels); None for a solid line.
    pub dash: Option<(u32, u32)>,
    /// Diagonal lines over the square: the mark of inferred (not measured) cells.
    pub hatched: bool,
    /// A marker instead of a square or line (the shape that tells a throughput family apart).
    pub shape: Option<Shape>,
}

/// Point markers, told apart without colour.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    Circle,
    Square,
    Triangle,
    Diamond,
    Cross,
    Plus,
}

impl Shape {
    pub const ALL: [Shape; 6] = [
        Shape::Circle,
        Shape::Square,
        Shape::Triangle,
        Shape::Diamond,
        Shape::Cross,
        Shape::Plus,
    ];
}

/// A marker of radius `r` pixels centred on `(x, y)`.
pub fn marker<DB: DrawingBackend>(
    c: &Canvas<DB>,
    (x, y): (i32, i32),
    shape: Shape,
    r: i32,
    color: RGBColor,
) -> DrawResult<DB> {
    let stroke = color.stroke_width(2);
    match shape {
        Shape::Circle => c.area.draw(&Circle::new((x, y), r, color.filled())),
        Shape::Square => c.area.draw(&Rectangle::new(
            [(x - r, y - r), (x + r, y + r)],
            color.filled(),
        )),
        Shape::Triangle => c.area.draw(&Polygon::new(
            vec![(x, y - r - 1), (x + r + 1, y + r), (x - r - 1, y + r)],
            color.filled(),
        )),
        Shape::Diamond => c.area.draw(&Polygon::new(
            vec![
                (x, y - r - 1),
                (x + r + 1, y),
                (x, y + r + 1),
                (x - r - 1, y),
            ],
            color.filled(),
        )),
        Shape::Cross => {
            c.area.draw(&PathElement::new(
                vec![(x - r, y - r), (x + r, y + r)],
                stroke,
            ))?;
            c.area.draw(&PathElement::new(
                vec![(x - r, y + r), (x + r, y - r)],
                stroke,
            ))
        }
        Shape::Plus => {
            c.area
                .draw(&PathElement::new(vec![(x - r, y), (x + r, y)], stroke))?;
            c.area
                .draw(&PathElement::new(vec![(x, y - r), (x, y + r)], stroke))
        }
    }
}

/// Spacing of hatch lines, in pixels.
const HATCH_STEP: i32 = 6;

/// Diagonal lines (bottom-left to top-right) over the rectangle from `(x0, y0)` to `(x1, y1)`,
/// in a colour that stands out from `bg`: how plots mark a status that was inferred, not run.
pub fn hatch<DB: DrawingBackend>(
    c: &Canvas<DB>,
    (x0, y0): (i32, i32),
    (x1, y1): (i32, i32),
    bg: RGBColor,
) -> DrawResult<DB> {
    let (w, h) = (x1 - x0, y1 - y0);
    if w <= 0 || h <= 0 {
        return Ok(());
    }
    let ink = contrast(bg).mix(0.55).stroke_width(1);
    // Each line is x + y = x0 + y0 + k, clipped to the rectangle.
    let mut k = HATCH_STEP / 2;
    while k < w + h {
        let sum = x0 + y0 + k;
        let start_x = x0.max(sum - y1);
        let end_x = x1.min(sum - y0);
        if start_x < end_x {
            c.area.draw(&PathElement::new(
                vec![(start_x, sum - start_x), (end_x, sum - end_x)],
                ink,
            ))?;
        }
        k += HATCH_STEP;
    }
    Ok(())
}

const SWATCH: i32 = 14;
const ITEM_GAP: i32 = 22;
const LEGEND_ROW: i32 = 22;

/// Height a legend flowing left to right in `width` pixels needs.
pub fn legend_height(items: &[LegendItem], f: &FontDesc, width: u32) -> u32 {
    legend_rows(items, f, width).len() as u32 * LEGEND_ROW as u32
}

fn legend_rows(items: &[LegendItem], f: &FontDesc, width: u32) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut x = 0i32;
    for (i, it) in items.iter().enumerate() {
        let w = SWATCH + 6 + text_width(f, &it.text) as i32 + ITEM_GAP;
        match rows.last_mut() {
            Some(row) if x + w <= width as i32 => {
                row.push(i);
                x += w;
            }
            _ => {
                rows.push(vec![i]);
                x = w;
            }
        }
    }
    rows
}

/// Draws the legend with its top-left corner at (x0, y0).
pub fn draw_legend<DB: DrawingBackend>(
    c: &Canvas<DB>,
    items: &[LegendItem],
    f: &FontDesc,
    (x0, y0): (i32, i32),
    width: u32,
) -> DrawResult<DB> {
    for (r, row) in legend_rows(items, f, width).iter().enumerate() {
        let mut x = x0;
        let cy = y0 + r as i32 * LEGEND_ROW + LEGEND_ROW / 2;
        for &i in row {
            let it = &items[i];
            if let Some(shape) = it.shape {
                marker(c, (x + SWATCH / 2, cy), shape, 5, it.color)?;
            } else if it.line {
                let (dash, gap) = it.dash.map_or((SWATCH, 0), |(d, g)| (d as i32, g as i32));
                let mut at = 0;
                while at < SWATCH {
                    let end = (at + dash).min(SWATCH);
                    c.area.draw(&PathElement::new(
                        vec![(x + at, cy), (x + end, cy)],
                        it.color.stroke_width(3),
                    ))?;
                    at = end + gap.max(1);
                }
            } else {
                let (a, b) = ((x, cy - SWATCH / 2), (x + SWATCH, cy + SWATCH / 2));
                c.area.draw(&Rectangle::new([a, b], it.color.filled()))?;
                if it.hatched {
                    hatch(c, a, b, it.color)?;
                }
                c.area
                    .draw(&Rectangle::new([a, b], RGBColor(0x75, 0x75, 0x75)))?;
            }
            c.text(&it.text, (x + SWATCH + 6, cy), f, &BLACK, LEFT)?;
            x += SWATCH + 6 + text_width(f, &it.text) as i32 + ITEM_GAP;
        }
    }
    Ok(())
}

/// A titled figure with a message instead of data (an empty run, a run with no timings).
pub struct NoData {
    pub title: String,
    pub message: String,
}

impl Figure for NoData {
    fn size(&self) -> (u32, u32) {
        (900, 220)
    }
    fn draw<DB: DrawingBackend>(&self, c: &Canvas<DB>) -> DrawResult<DB> {
        let (w, h) = self.size();
        title(c, &self.title, w)?;
        c.area.draw(&Rectangle::new(
            [(20, 50), (w as i32 - 20, h as i32 - 20)],
            RGBColor(0xbd, 0xbd, 0xbd),
        ))?;
        let f = font(18.0);
        c.text(
            &fit(&f, &self.message, w - 60),
            (w as i32 / 2, (h as i32 + 30) / 2),
            &f,
            &RGBColor(0x61, 0x61, 0x61),
            CENTER,
        )
    }
}
