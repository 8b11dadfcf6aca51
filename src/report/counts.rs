//! Units per status for each env combination: one horizontal bar per combination, stacked in
//! the fixed status order and colours, with the count written in every segment wide enough.

use super::draw::{self, Canvas, DrawResult, Figure, LegendItem};
use super::facts::{self, Facts};
use crate::error::CmdError;
use crate::results::status::Status;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const WIDTH: u32 = 1100;
const MARGIN: u32 = 20;
const TOP: u32 = 70;
const BAR_ROW: u32 = 44;
const BAR_H: i32 = 30;
const AXIS_H: u32 = 56;
const TOTAL_W: u32 = 70;
/// Labels wider than this wrap onto more lines (all rows get the height of the tallest).
const MAX_LABEL_W: u32 = 520;
const LABEL_LINE_H: u32 = 17;

pub struct Counts {
    title: String,
    subtitle: String,
    bars: Vec<(String, [u64; Status::COUNT])>,
    label_w: u32,
    axis_max: u64,
    step: u64,
}

pub fn write(f: &Facts, dir: &Path) -> Result<Vec<PathBuf>, CmdError> {
    if f.rows().is_empty() {
        return draw::render(
            &draw::NoData {
                title: title(f),
                message: "no data: results.csv has no rows".to_string(),
            },
            dir,
            "counts",
        );
    }
    draw::render(&build(f), dir, "counts")
}

fn title(f: &Facts) -> String {
    format!("Units per status: {}", f.run.manifest.sweep.name)
}

/// A round tick step giving about `target` ticks up to `max` (at least 1: units are whole).
fn nice_step(max: u64, target: u64) -> u64 {
    (draw::nice_step(max as f64, target as f64).round() as u64).max(1)
}

pub fn build(f: &Facts) -> Counts {
    let bars: Vec<(String, [u64; Status::COUNT])> = f
        .envs
        .iter()
        .zip(&f.env_labels)
        .map(|(key, label)| (label.clone(), f.counts(Some(key))))
        .collect();
    let lf = draw::font(14.0);
    let label_w = bars
        .iter()
        .map(|(l, _)| draw::text_width(&lf, l))
        .max()
        .unwrap_or(0)
        .clamp(60, MAX_LABEL_W)
        + 14;
    let max_total = bars
        .iter()
        .map(|(_, c)| c.iter().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let step = nice_step(max_total, 8);
    let axis_max = max_total.div_ceil(step) * step;
    let envs = f.envs.len();
    Counts {
        title: title(f),
        subtitle: format!(
            "{} · {} env combination{}",
            facts::counts_line(&f.counts(None)),
            envs,
            if envs == 1 { "" } else { "s" }
        ),
        bars,
        label_w,
        axis_max,
        step,
    }
}

impl Counts {
    /// A bar's label in lines that fit the label column (wrapped, never cut).
    pub(super) fn label_lines(&self, label: &str) -> Vec<String> {
        draw::wrap(&draw::font(14.0), label, self.label_w - 14)
    }

    /// Height of a bar's row: room for the label with the most lines.
    fn row_h(&self) -> u32 {
        let lines = self
            .bars
            .iter()
            .map(|(l, _)| self.label_lines(l).len() as u32)
            .max()
            .unwrap_or(1);
        BAR_ROW.max(lines * LABEL_LINE_H + 10)
    }

    fn top(&self) -> u32 {
        TOP + draw::head_extra(&self.title, &self.subtitle, WIDTH)
    }

    /// Only statuses that occur: the heatmap's legend already shows the full key.
    fn legend(&self) -> Vec<LegendItem> {
        Status::ALL
            .iter()
            .enumerate()
            .filter(|(i, _)| self.bars.iter().any(|(_, c)| c[*i] > 0))
            .map(|(_, s)| LegendItem {
                color: facts::color(*s),
                text: s.name().to_string(),
                line: false,
                dash: None,
                hatched: s.is_inferred(),
                shape: None,
            })
            .collect()
    }
}

impl Figure for Counts {
    fn size(&self) -> (u32, u32) {
        let legend = draw::legend_height(&self.legend(), &draw::font(14.0), WIDTH - 2 * MARGIN);
        (
            WIDTH,
            self.top() + self.row_h() * self.bars.len() as u32 + AXIS_H + legend + MARGIN,
        )
    }

    fn draw<DB: DrawingBackend>(&self, c: &Canvas<DB>) -> DrawResult<DB> {
        draw::head(
            c,
            &draw::title_lines(&self.title, WIDTH),
            &draw::subtitle_lines(&self.subtitle, WIDTH),
            WIDTH,
        )?;
        let row_h = self.row_h() as i32;
        let gx = (MARGIN + self.label_w) as i32;
        let gw = (WIDTH - MARGIN - self.label_w - TOTAL_W) as i32;
        let gy = self.top() as i32;
        let gh = row_h * self.bars.len() as i32;
        let px = |n: u64| gx + (n as f64 / self.axis_max as f64 * gw as f64).round() as i32;
        let grid = RGBColor(0xe0, 0xe0, 0xe0);
        let lf = draw::font(13.0);
        let mut t = 0;
        while t <= self.axis_max {
            let x = px(t);
            c.area
                .draw(&PathElement::new(vec![(x, gy), (x, gy + gh)], grid))?;
            c.text(
                &t.to_string(),
                (x, gy + gh + 12),
                &lf,
                &draw::GREY,
                draw::CENTER,
            )?;
            t += self.step;
        }
        let af = draw::font(14.0);
        c.text(
            "units",
            (gx + gw / 2, gy + gh + 36),
            &af,
            &BLACK,
            draw::CENTER,
        )?;
        for (row, (label, counts)) in self.bars.iter().enumerate() {
            let cy = gy + row as i32 * row_h + row_h / 2;
            let lines = self.label_lines(label);
            let first = cy - ((lines.len() as i32 - 1) * LABEL_LINE_H as i32) / 2;
            for (i, line) in lines.iter().enumerate() {
                let at = (gx - 10, first + i as i32 * LABEL_LINE_H as i32);
                c.text(line, at, &af, &BLACK, draw::RIGHT)?;
            }
            let mut acc = 0u64;
            for (i, s) in Status::ALL.iter().enumerate() {
                let n = counts[i];
                if n == 0 {
                    continue;
                }
                let (x0, x1) = (px(acc), px(acc + n));
                let color = facts::color(*s);
                let corners = [(x0, cy - BAR_H / 2), (x1, cy + BAR_H / 2)];
                c.area.draw(&Rectangle::new(corners, color.filled()))?;
                if s.is_inferred() {
                    draw::hatch(c, corners[0], corners[1], color)?;
                }
                // A white edge keeps neighbouring segments of similar colour apart.
                c.area.draw(&Rectangle::new(corners, WHITE))?;
                let text = n.to_string();
                if draw::text_width(&lf, &text) as i32 + 6 <= x1 - x0 {
                    let fg = draw::contrast(color);
                    c.text(&text, ((x0 + x1) / 2, cy), &lf, &fg, draw::CENTER)?;
                }
                acc += n;
            }
            let total = acc.to_string();
            c.text(
                &total,
                (px(acc) + 8, cy),
                &draw::bold(14.0),
                &BLACK,
                draw::LEFT,
            )?;
        }
        draw::draw_legend(
            c,
            &self.legend(),
            &draw::font(14.0),
            (MARGIN as i32, gy + gh + AXIS_H as i32),
            WIDTH - 2 * MARGIN,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::nice_step;

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(32, 8), 5);
        assert_eq!(nice_step(3, 8), 1);
        assert_eq!(nice_step(1000, 8), 200);
    }
}
