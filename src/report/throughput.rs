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
use crate::results::rundata::Row;
use crate::results::status::Status;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const WIDTH: u32 = 1200;
const TOP: u32 = 72;
const MARGIN: u32 = 20;
/// Room left of the panels for the rotated y axis title.
const Y_DESC_W: u32 = 30;
const Y_LABELS_W: u32 = 64;
const X_LABELS_H: u32 = 30;
const X_DESC_H: u32 = 40;
const PANEL_TITLE_H: u32 = 26;
const SINGLE_H: u32 = 540;
const MULTI_H: u32 = 330;

/// Distinct on white and from each other; cycled when there are more series.
const PALETTE: [RGBColor; 12] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0x39, 0x3b, 0x79),
    RGBColor(0x63, 0x79, 0x39),
];

struct Series {
    /// Index into `Throughput::keys`, which fixes colour and legend text.
    key: usize,
    /// Index into `Throughput::families`, which fixes the marker.
    family: usize,
    /// (size, rate), sorted by size.
    points: Vec<(f64, f64)>,
    /// The best rate at each size, joined: one family's points differ only in the size
    /// parameter, so they differ in work too (unless env or folded repeats meet).
    line: Vec<(f64, f64)>,
}

struct Panel {
    title: String,
    series: Vec<Series>,
}

pub struct Throughput {
    title: String,
    subtitle: String,
    x_desc: String,
    y_desc: String,
    /// Legend text per (solver, env) series key.
    keys: Vec<String>,
    /// Legend text per shape family (the numeric parameters other than the size, fixed along
    /// a line: `c_in→c_out=3→16`); empty when there is one family.
    families: Vec<String>,
    panels: Vec<Panel>,
    best: (usize, f64, f64),
    x_range: (f64, f64),
    y_max: f64,
    cols: u32,
}

pub fn write(f: &Facts, dir: &Path) -> Result<Vec<PathBuf>, CmdError> {
    match build(f) {
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

fn title(f: &Facts) -> String {
    format!("Throughput: {} on {}", f.run.manifest.sweep.op, f.device())
}

fn point(f: &Facts, r: &Row) -> Option<(f64, f64)> {
    if r.status != Status::Ok {
        return None;
    }
    let x = f.metric.size(r)?;
    let y = f.metric.rate(r)?;
    (x.is_finite() && y.is_finite() && x > 0.0 && y > 0.0).then_some((x, y))
}

/// The marker of a family (cycled past six: the legend still names each).
fn shape(family: usize) -> Shape {
    Shape::ALL[family % Shape::ALL.len()]
}

fn index_of<T: PartialEq>(v: &mut Vec<T>, item: T) -> usize {
    match v.iter().position(|x| *x == item) {
        Some(i) => i,
        None => {
            v.push(item);
            v.len() - 1
        }
    }
}

pub fn build(f: &Facts) -> Option<Throughput> {
    let categorical: Vec<&String> = f
        .groups
        .iter()
        .map(|(p, _)| p)
        .filter(|p| f.rows().iter().any(|r| r.param_f64(p).is_none()))
        .collect();
    let family = family_params(f);
    let family_of = |r: &Row| -> Vec<String> {
        family
            .iter()
            .map(|p| r.param(p).unwrap_or("").to_string())
            .collect()
    };
    // Families in numeric order (3→16 before 16→32), so markers and legend read in order.
    let mut family_ids: Vec<Vec<String>> = f
        .rows()
        .iter()
        .map(family_of)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    family_ids.sort_by(|a, b| {
        a.iter()
            .zip(b)
            .map(|(x, y)| {
                let (x, y) = (
                    x.parse::<f64>().unwrap_or(0.0),
                    y.parse::<f64>().unwrap_or(0.0),
                );
                x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal)
            })
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let multi_env = f.envs.len() > 1;
    let mut key_ids: Vec<(&str, &str)> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    let mut panel_ids: Vec<Vec<&str>> = Vec::new();
    let mut panels: Vec<Panel> = Vec::new();
    let mut best: Option<(usize, f64, f64, &Row)> = None;
    for r in f.rows() {
        let Some(pt) = point(f, r) else { continue };
        let k = index_of(&mut key_ids, (r.solver.as_str(), r.env.as_str()));
        let fam = index_of(&mut family_ids, family_of(r));
        if k == keys.len() {
            let mut label = r.solver.clone();
            if multi_env {
                label = format!("{label} · {}", f.env_label(&r.env));
            }
            keys.push(label);
        }
        let cats: Vec<&str> = categorical
            .iter()
            .map(|p| r.param(p).unwrap_or(""))
            .collect();
        let p = index_of(&mut panel_ids, cats.clone());
        if p == panels.len() {
            let title: Vec<String> = categorical
                .iter()
                .zip(&cats)
                .map(|(name, v)| format!("{name}={v}"))
                .collect();
            panels.push(Panel {
                title: title.join(" · "),
                series: Vec::new(),
            });
        }
        let series = &mut panels[p].series;
        let s = match series.iter().position(|s| s.key == k && s.family == fam) {
            Some(s) => s,
            None => {
                series.push(Series {
                    key: k,
                    family: fam,
                    points: Vec::new(),
                    line: Vec::new(),
                });
                series.len() - 1
            }
        };
        series[s].points.push(pt);
        if best.is_none_or(|b| pt.1 > b.2) {
            best = Some((p, pt.0, pt.1, r));
        }
    }
    let (bp, bx, by, best_row) = best?;
    let mut lo = f64::INFINITY;
    let mut hi = 0f64;
    for s in panels.iter_mut().flat_map(|p| p.series.iter_mut()) {
        s.points
            .sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        for &(x, y) in &s.points {
            lo = lo.min(x);
            hi = hi.max(x);
            match s.line.last_mut() {
                Some(last) if last.0 == x => last.1 = last.1.max(y),
                _ => s.line.push((x, y)),
            }
        }
    }
    let mut who = vec![format!("solver {}", best_row.solver)];
    if multi_env {
        who.push(f.env_label(&best_row.env).to_string());
    }
    who.push(f.case_label(best_row));
    let cols = match panels.len() {
        1 => 1,
        2 | 4 => 2,
        _ => 3,
    };
    let size_unit = match f.metric {
        facts::Metric::Flops => "FLOP",
        facts::Metric::Bytes => "B",
    };
    Some(Throughput {
        title: title(f),
        subtitle: format!(
            "best (ringed): {} {} at {} {size_unit} — {}",
            facts::si(by),
            f.metric.rate_unit(),
            facts::si(bx),
            who.join(" · ")
        ),
        x_desc: format!("{} (log scale)", f.metric.size_name()),
        y_desc: format!("{} (median time)", f.metric.rate_unit()),
        keys,
        families: if family_ids.len() > 1 {
            family_ids
                .iter()
                .map(|v| family_label(&family, v))
                .collect()
        } else {
            Vec::new()
        },
        panels,
        best: (bp, bx, by),
        // Air on each side keeps the end points off the frame.
        x_range: (lo / 1.6, hi * 1.6),
        y_max: by * 1.12,
        cols,
    })
}

/// The numeric parameters that vary apart from the size: a line holds them fixed, so that it
/// joins c_in=3 at h=32 to c_in=3 at h=64, never to c_in=16 (which reads as a cliff).
fn family_params(f: &Facts) -> Vec<String> {
    let size = f.size_param();
    f.groups
        .iter()
        .filter(|(lead, followers)| {
            size.as_ref()
                .is_none_or(|s| s != lead && !followers.contains(s))
        })
        .map(|(lead, _)| lead)
        .filter(|p| f.rows().iter().all(|r| r.param_f64(p).is_some()))
        .cloned()
        .collect()
}

/// `c_in→c_out=3→16 n=2`: pairs as the heatmap writes them.
fn family_label(params: &[String], values: &[String]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < params.len() {
        if i + 1 < params.len() && params[i] == "c_in" && params[i + 1] == "c_out" {
            parts.push(format!("c_in→c_out={}→{}", values[i], values[i + 1]));
            i += 2;
        } else {
            parts.push(format!("{}={}", params[i], values[i]));
            i += 1;
        }
    }
    parts.join(" ")
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
            hatched: false,
            shape: None,
        });
        let families = self.families.iter().enumerate().map(|(i, fam)| LegendItem {
            color: self.family_color(i),
            text: fam.clone(),
            line: false,
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
            PANEL_TITLE_H + MULTI_H
        } else {
            SINGLE_H
        }
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
        let title_h = if self.multi() { PANEL_TITLE_H } else { 0 };
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
        if !p.title.is_empty() {
            let tf = draw::bold(14.0);
            let shown = draw::fit(&tf, &p.title, self.panel_w() - 20);
            let at = ((left + right) / 2, top - 8 - PANEL_TITLE_H as i32 / 2);
            c.text(&shown, at, &tf, &BLACK, draw::CENTER)?;
        }
        let light = RGBColor(0xef, 0xef, 0xef);
        let strong = RGBColor(0xd0, 0xd0, 0xd0);
        let lf = draw::font(13.0);
        for (v, major, labelled) in log_ticks(self.x_range.0, self.x_range.1, right - left) {
            let (x, _) = chart.backend_coord(&(v, 0.0));
            let grid = if major { strong } else { light };
            c.area
                .draw(&PathElement::new(vec![(x, top), (x, bottom)], grid))?;
            if labelled {
                c.area
                    .draw(&PathElement::new(vec![(x, bottom), (x, bottom + 5)], BLACK))?;
                let at = (x, bottom + 16);
                c.text(&facts::si(v), at, &lf, &draw::GREY, draw::CENTER)?;
            }
        }
        let ticks = if self.multi() { 5.0 } else { 8.0 };
        let step = draw::nice_step(self.y_max, ticks);
        let mut v = 0.0;
        while v <= self.y_max {
            let (_, y) = chart.backend_coord(&(self.x_range.0, v));
            c.area
                .draw(&PathElement::new(vec![(left, y), (right, y)], light))?;
            c.area
                .draw(&PathElement::new(vec![(left - 5, y), (left, y)], BLACK))?;
            c.text(&facts::si(v), (left - 8, y), &lf, &draw::GREY, draw::RIGHT)?;
            v += step;
        }
        let axes = vec![(left, top), (left, bottom), (right, bottom)];
        c.area.draw(&PathElement::new(axes, BLACK))?;
        for s in &p.series {
            let color = self.series_color(s);
            chart.draw_series(LineSeries::new(
                s.line.iter().copied(),
                color.stroke_width(2),
            ))?;
            let top = s
                .points
                .iter()
                .copied()
                .fold((0.0, 0.0), |a, p| if p.1 > a.1 { p } else { a });
            for &p in &s.points {
                let r = if p == top { 6 } else { 4 };
                draw::marker(c, chart.backend_coord(&p), shape(s.family), r, color)?;
            }
        }
        if self.best.0 == i {
            let ring = Circle::new((self.best.1, self.best.2), 12, BLACK.stroke_width(2));
            chart.draw_series(std::iter::once(ring))?;
        }
        Ok(())
    }
}

impl Figure for Throughput {
    fn size(&self) -> (u32, u32) {
        let legend = draw::legend_height(&self.legend(), &draw::font(14.0), self.legend_w());
        (WIDTH, TOP + self.grid_h() + X_DESC_H + legend + 2 * MARGIN)
    }

    fn draw<DB: DrawingBackend>(&self, c: &Canvas<DB>) -> DrawResult<DB> {
        draw::title(c, &self.title, WIDTH)?;
        draw::subtitle(c, &self.subtitle, WIDTH, 52)?;
        for i in 0..self.panels.len() {
            let (col, row) = (i as u32 % self.cols, i as u32 / self.cols);
            let origin = (
                MARGIN + Y_DESC_W + col * self.panel_w(),
                TOP + row * self.panel_h(),
            );
            self.draw_panel(c, i, origin)?;
        }
        let af = draw::font(15.0);
        let grid_bottom = (TOP + self.grid_h()) as i32;
        let x_mid = ((MARGIN + Y_DESC_W + Y_LABELS_W + WIDTH - MARGIN) / 2) as i32;
        c.text(
            &self.x_desc,
            (x_mid, grid_bottom + 14),
            &af,
            &BLACK,
            draw::CENTER,
        )?;
        let y_mid = (TOP as i32 + grid_bottom) / 2;
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
