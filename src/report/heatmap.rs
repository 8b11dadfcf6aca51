//! The safe-region map: problem size across, the other varying parameters down, one panel per
//! env combination and solver, each cell coloured by the status of its unit.
//!
//! Layout rules:
//! - x: the op's size parameter (`h` for conv2d, `m` for gemm, `size`, `count` or `bytes` for
//!   the others); parameters that equal it in every row (conv2d `w`, gemm `n`/`k` when they
//!   follow) are not shown separately.
//! - y: every other varying parameter, channels first (`c_in→c_out`). When that makes more than
//!   `MAX_ROWS` rows, trailing parameters are folded: a cell then holds several units and shows
//!   the most severe status (`Status::severity`), which the subtitle says.
//! - panels: with more than one solver, first two overviews per env combination (the worst
//!   and the best status over all solvers in each cell), then one per (env combination,
//!   solver) that has rows, `default` first; all on the same grid so they compare cell by
//!   cell, as many side by side as fit in `MAX_WIDTH`. The picture (not report.html's map)
//!   draws at most `MAX_DRAWN_SOLVER_PANELS` per-solver panels: those with a unit not `ok`
//!   first, in order; the subtitle says how many were left out and whether all of them were ok
//!   (a cuBLASLt sweep names one solver per heuristic rank and algorithm: 44 panels, a picture
//!   13,790 pixels tall).
//! - cells whose status was inferred by a boundary search (`inferred-ok`, `inferred-fail`: the
//!   unit never ran) are hatched with diagonal lines over the colour of what they stand for (an
//!   inferred failure in the colour of the measured failure it was inferred from), and the
//!   legend says so.

use super::draw::{self, Canvas, DrawResult, Figure, LegendItem};
use super::facts::{self, Facts, NO_UNIT};
use crate::error::CmdError;
use crate::results::rundata::{Row, Text};
use crate::results::status::Status;
use plotters::prelude::*;
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

mod picture;
#[cfg(test)]
mod tests;

const MAX_ROWS: usize = 40;
/// The picture's per-solver panels past this many are left out (report.html keeps them all).
const MAX_DRAWN_SOLVER_PANELS: usize = 12;
/// Panels go side by side up to this width.
const MAX_WIDTH: u32 = 2400;
const CELL_H: u32 = 30;
const MARGIN: u32 = 20;
const TOP: u32 = 70;
const PANEL_TITLE_H: u32 = 28;
/// The y axis title sits above the y labels, level with nothing else, so it never collides.
const Y_TITLE_ROW_H: u32 = 22;
const BELOW_GRID_H: u32 = 62;
const LABEL_PX: f64 = 13.0;
/// Row labels are never cut below this; past it (an imported model's dozen parameters) the
/// label's last parameters are folded into the subtitle instead (`YAxis::new`).
pub(super) const MAX_Y_LABEL_W: u32 = 1400;

#[derive(Clone, Debug)]
pub(super) struct Cell {
    pub status: Status,
    /// The status whose colour the cell takes (`Facts::shade`: an inferred failure is drawn
    /// in the colour of the failure it was inferred from).
    pub shade: Status,
    pub phase: Text,
    /// The unit the cell shows (the worst, or for a "best of" panel the best, of its units).
    pub unit_id: Text,
    pub solver: Text,
    pub case: String,
    /// Units the cell stands for.
    pub units: usize,
}

impl Heatmap {
    /// Whether some panel has a cell no unit fills.
    pub fn has_empty_cells(&self) -> bool {
        self.panels
            .iter()
            .any(|p| p.cells.iter().any(Option::is_none))
    }
}

impl Cell {
    /// What the cell says: the status letter, with the phase for hangs, crashes and
    /// interrupts (`H:compile`); nothing for ok.
    pub fn text(&self) -> String {
        let code = facts::code(self.status);
        if facts::shows_phase(self.status) && !self.phase.is_empty() {
            format!("{code}:{}", self.phase)
        } else {
            code.to_string()
        }
    }
}

/// Which unit of several a panel's cell shows.
#[derive(Clone, Copy, PartialEq)]
enum Pick {
    Worst,
    Best,
}

#[derive(Clone)]
pub(super) struct Panel {
    pub title: String,
    /// Overview panels (over all solvers) come first; the rest are one per solver.
    pub overview: bool,
    pick: Pick,
    /// Row-major, `y_labels.len()` rows of `x_labels.len()` cells; None where no unit ran.
    pub cells: Vec<Option<Cell>>,
}

pub struct Heatmap {
    pub title: String,
    /// One or two lines: the run, then how cells fold units when they do.
    pub subtitle: Vec<String>,
    pub x_title: String,
    pub y_title: String,
    pub x_labels: Vec<String>,
    pub y_labels: Vec<String>,
    pub panels: Vec<Panel>,
    cell_w: u32,
    y_label_w: u32,
    cols: u32,
    /// Lines of the longest panel title, wrapped to the panel's width (titles are never cut).
    title_lines: u32,
}

/// What a light grey cell means, said wherever the map is shown with one.
pub const NO_UNIT_TEXT: &str = "light grey (no unit): no unit of the run has these values in this panel (the sweep's filters or invalid combinations left the case out, the solver or env combination did not run it, or the run stopped before it)";

/// Panel titles: bold, this size.
const PANEL_TITLE_PX: f64 = 15.0;
/// Each wrapped line of a panel title past the first adds this much.
const PANEL_TITLE_LINE_H: u32 = 19;

/// Draws `map` (`build`'s, None for a run without rows) as heatmap.png and heatmap.svg.
pub fn write(f: &Facts, map: Option<&Heatmap>, dir: &Path) -> Result<Vec<PathBuf>, CmdError> {
    let fewer = map.and_then(Heatmap::for_picture);
    match fewer.as_ref().or(map) {
        Some(h) if !h.drawable() => {
            let (w, hh) = h.size();
            draw::render(
                &draw::NoData {
                    title: title(f),
                    message: format!(
                        "too many cells to draw ({w} x {hh} pixels); the map is in results.csv (narrow the sweep or filter it)"
                    ),
                },
                dir,
                "heatmap",
            )
        }
        Some(h) => draw::render(h, dir, "heatmap"),
        None => draw::render(
            &draw::NoData {
                title: title(f),
                message: "no data: results.csv has no rows".to_string(),
            },
            dir,
            "heatmap",
        ),
    }
}

/// A bitmap past this would cost gigabytes to draw (a 100,000-value axis is one cell each).
const MAX_PIXELS: u64 = 40_000_000;
const MAX_SIDE: u32 = 20_000;

fn too_large((w, h): (u32, u32)) -> bool {
    w > MAX_SIDE || h > MAX_SIDE || w as u64 * h as u64 > MAX_PIXELS
}

fn title(f: &Facts) -> String {
    format!("Safe region: {} on {}", f.run.manifest.sweep.op, f.device())
}

/// Orders a parameter's values: numbers numerically, words (directions, dtypes) in the order
/// the run met them, which is the sweep file's order (`fwd, bwd_data, bwd_weights`).
struct Order<'a> {
    first_seen: HashMap<(&'a str, &'a str), usize>,
}

impl<'a> Order<'a> {
    fn new(rows: &'a [Row]) -> Order<'a> {
        let mut first_seen = HashMap::new();
        for (i, r) in rows.iter().enumerate() {
            for (k, v) in r.params.iter() {
                first_seen.entry((k, v)).or_insert(i);
            }
        }
        Order { first_seen }
    }

    fn cmp(&self, param: &str, a: &str, b: &str) -> Ordering {
        match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(x), Ok(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
            _ => {
                let rank = |v: &str| {
                    self.first_seen
                        .get(&(param, v))
                        .copied()
                        .unwrap_or(usize::MAX)
                };
                rank(a).cmp(&rank(b)).then_with(|| a.cmp(b))
            }
        }
    }

    fn cmp_keys(&self, params: &[String], a: &[String], b: &[String]) -> Ordering {
        params
            .iter()
            .zip(a.iter().zip(b))
            .map(|(p, (x, y))| self.cmp(p, x, y))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }
}

/// The y parameters' values of a row, as the tuple the row's y position is keyed on.
fn y_key(r: &Row, params: &[String]) -> Vec<String> {
    params
        .iter()
        .map(|p| r.param(p).unwrap_or("").to_string())
        .collect()
}

/// Parameters that read as one thing written `a→b`: a channel configuration, a conversion.
fn is_pair(a: &str, b: &str) -> bool {
    matches!((a, b), ("c_in", "c_out") | ("from", "to"))
}

/// `c_in→c_out` reads as one channel configuration; other numbers keep their name so that a
/// bare `3` is not mistaken for a channel count; words (dtypes, directions) speak for themselves.
fn y_label(params: &[String], values: &[String]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < params.len() {
        if params
            .get(i + 1)
            .is_some_and(|next| is_pair(&params[i], next))
        {
            parts.push(format!("{}→{}", values[i], values[i + 1]));
            i += 2;
            continue;
        }
        if values[i].parse::<f64>().is_ok() || values[i] == "true" || values[i] == "false" {
            parts.push(format!("{}={}", params[i], values[i]));
        } else {
            parts.push(values[i].clone());
        }
        i += 1;
    }
    parts.join(" · ")
}

fn y_title(groups: &[(String, Vec<String>)]) -> String {
    let named = |(p, followers): &(String, Vec<String>)| {
        if followers.is_empty() {
            p.clone()
        } else {
            format!("{p} (= {})", followers.join(" = "))
        }
    };
    let mut parts = Vec::new();
    let mut i = 0;
    while i < groups.len() {
        if groups
            .get(i + 1)
            .is_some_and(|g| is_pair(&groups[i].0, &g.0))
        {
            parts.push(format!("{}→{}", groups[i].0, groups[i + 1].0));
            i += 2;
        } else {
            parts.push(named(&groups[i]));
            i += 1;
        }
    }
    parts.join(" · ")
}

/// The x axis: the size parameter's values in order (or one column, `all`).
struct XAxis {
    param: Option<String>,
    labels: Vec<String>,
    title: String,
}

impl XAxis {
    fn of(r: &Row, param: Option<&str>) -> String {
        param.map_or("all".to_string(), |p| r.param(p).unwrap_or("").to_string())
    }

    fn new(f: &Facts, order: &Order) -> (XAxis, Vec<(String, Vec<String>)>) {
        let x = f.size_param();
        let mut labels: Vec<String> = f
            .rows()
            .iter()
            .map(|r| XAxis::of(r, x.as_deref()))
            .collect::<HashSet<String>>()
            .into_iter()
            .collect();
        labels.sort_by(|a, b| order.cmp(x.as_deref().unwrap_or(""), a, b));
        let mut ordered: Vec<String> = x.iter().cloned().collect();
        ordered.extend(f.varying.iter().filter(|p| Some(*p) != x.as_ref()).cloned());
        let mut groups = f.leaders(&ordered);
        let followers = match &x {
            Some(_) if !groups.is_empty() => groups.remove(0).1,
            _ => Vec::new(),
        };
        let title = match &x {
            Some(p) if followers.is_empty() => p.clone(),
            Some(p) => format!("{p} (= {})", followers.join(" = ")),
            None => "(no size parameter varies)".to_string(),
        };
        (
            XAxis {
                param: x,
                labels,
                title,
            },
            groups,
        )
    }
}

/// The y axis: every other varying parameter (channels first), trailing ones folded when that
/// makes more than `MAX_ROWS` rows.
struct YAxis {
    params: Vec<String>,
    folded: Vec<String>,
    keys: Vec<Vec<String>>,
    labels: Vec<String>,
    title: String,
}

impl YAxis {
    fn new(f: &Facts, order: &Order, mut groups: Vec<(String, Vec<String>)>) -> YAxis {
        // Channels lead the y axis: the RDNA1 maps this report exists for are channels x size.
        groups.sort_by_key(|(p, _)| match p.as_str() {
            "c_in" => 0,
            "c_out" => 1,
            _ => 2,
        });
        let mut params: Vec<String> = groups.iter().map(|(p, _)| p.clone()).collect();
        let mut folded: Vec<String> = Vec::new();
        let mut keys: Vec<Vec<String>>;
        loop {
            keys = f
                .rows()
                .iter()
                .map(|r| y_key(r, &params))
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            let lf = draw::font(LABEL_PX);
            let fits = keys
                .iter()
                .all(|k| draw::text_width(&lf, &y_label(&params, k)) <= MAX_Y_LABEL_W);
            if (keys.len() <= MAX_ROWS && fits) || params.len() <= 1 {
                break;
            }
            if let Some(p) = params.pop() {
                folded.insert(0, p);
            }
        }
        keys.sort_by(|a, b| order.cmp_keys(&params, a, b));
        let labels = if params.is_empty() {
            vec!["all".to_string()]
        } else {
            keys.iter().map(|k| y_label(&params, k)).collect()
        };
        let title = y_title(&groups[..params.len()]);
        YAxis {
            params,
            folded,
            keys,
            labels,
            title,
        }
    }
}

pub fn build(f: &Facts) -> Option<Heatmap> {
    if f.rows().is_empty() {
        return None;
    }
    let order = Order::new(f.rows());
    let (x, groups) = XAxis::new(f, &order);
    let y = YAxis::new(f, &order, groups);
    let (mut panels, panel_of) = panels_for(f, x.labels.len() * y.labels.len());
    fill(f, &x, &y, &mut panels, &panel_of);
    let mut subtitle = subtitle(f, &y.folded, &panels);
    if panels.iter().any(|p| p.cells.iter().any(Option::is_none)) {
        subtitle.push(NO_UNIT_TEXT.to_string());
    }
    let (cell_w, y_label_w, cols) = layout(&x, &y, &panels);
    let mut map = Heatmap {
        title: title(f),
        subtitle,
        x_title: x.title,
        y_title: y.title,
        x_labels: x.labels,
        y_labels: y.labels,
        panels,
        cell_w,
        y_label_w,
        cols,
        title_lines: 1,
    };
    map.title_lines = map.wrap_titles();
    Some(map)
}

/// Puts every row into its cell of each panel it belongs to, keeping the worst (or, in a
/// "best of" panel, the best) unit of the cell.
fn fill(f: &Facts, x: &XAxis, y: &YAxis, panels: &mut [Panel], panel_of: &PanelsOf) {
    let x_index: HashMap<&str, usize> = x
        .labels
        .iter()
        .enumerate()
        .map(|(i, v)| (v.as_str(), i))
        .collect();
    let y_index: HashMap<&[String], usize> = y
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_slice(), i))
        .collect();
    let nx = x.labels.len();
    for r in f.rows() {
        let s = f.solvers.iter().position(|s| *s == r.solver).unwrap_or(0);
        let e = f.env_index(&r.env);
        let xi = x_index
            .get(XAxis::of(r, x.param.as_deref()).as_str())
            .copied()
            .unwrap_or(0);
        let yk = y_key(r, &y.params);
        let yi = y_index.get(yk.as_slice()).copied().unwrap_or(0);
        let idx = yi * nx + xi;
        let shown = || Cell {
            status: r.status,
            shade: f.shade(r),
            phase: r.phase.clone(),
            unit_id: r.unit_id.clone(),
            solver: r.solver.clone(),
            case: f.case_label(r),
            units: 0,
        };
        for key in [(e, Some(s)), (e, None)] {
            for &p in panel_of.get(&key).into_iter().flatten() {
                let pick = panels[p].pick;
                let cell = panels[p].cells[idx].get_or_insert_with(shown);
                let (new, old) = (r.status.severity(), cell.status.severity());
                let replace = match pick {
                    Pick::Worst => new > old,
                    Pick::Best => new < old,
                };
                if replace {
                    *cell = Cell {
                        units: cell.units,
                        ..shown()
                    };
                }
                cell.units += 1;
            }
        }
    }
}

/// The run, and how cells fold units and panels fold solvers when they do.
fn subtitle(f: &Facts, folded: &[String], panels: &[Panel]) -> Vec<String> {
    let shared = panels
        .iter()
        .filter(|p| !p.overview)
        .flat_map(|p| p.cells.iter().flatten())
        .any(|c| c.units > 1);
    let mut out = vec![format!(
        "{} · {}",
        f.run.manifest.sweep.name,
        facts::counts_line(&f.counts(None))
    )];
    if folded.is_empty() && !shared {
        out[0].push_str(" · one unit per cell");
    } else {
        let what = if folded.is_empty() {
            "several units".to_string()
        } else {
            format!("all values of {}", folded.join(", "))
        };
        out.push(format!(
            "each cell holds {what} and shows the worst of them:"
        ));
        out.push(facts::severity_text());
    }
    if panels.iter().any(|p| p.overview) {
        out.push(
            "first the worst and the best status over all solvers in each cell (unsafe with any? safe with some?), then one panel per solver"
                .to_string(),
        );
    }
    out
}

/// Cell width, y label width and panels per row.
fn layout(x: &XAxis, y: &YAxis, panels: &[Panel]) -> (u32, u32, u32) {
    let lf = draw::font(LABEL_PX);
    let y_label_w = y
        .labels
        .iter()
        .map(|l| draw::text_width(&lf, l))
        .chain(std::iter::once(draw::text_width(
            &draw::bold(LABEL_PX),
            &y.title,
        )))
        .max()
        .unwrap_or(0)
        // Wide enough for the widest label: a label cut short can make two rows read alike.
        .clamp(30, MAX_Y_LABEL_W)
        + 10;
    let nx = x.labels.len();
    let cell_w = (680 / nx.max(1) as u32).clamp(46, 96);
    let panel_w = y_label_w + cell_w * nx as u32 + MARGIN;
    (cell_w, y_label_w, columns(panel_w, panels))
}

/// Panels per row: as many side by side as fit in MAX_WIDTH (56 cuDNN engines in one column
/// made a map 16,000 pixels tall), never more than the longer of the two sections.
fn columns(panel_w: u32, panels: &[Panel]) -> u32 {
    let widest_section = panels
        .iter()
        .filter(|p| p.overview)
        .count()
        .max(panels.iter().filter(|p| !p.overview).count());
    (MAX_WIDTH / panel_w).clamp(1, widest_section.max(1) as u32)
}

/// (env, Some(solver)) or (env, None) to the panels a unit of them lands in.
type PanelsOf = HashMap<(usize, Option<usize>), Vec<usize>>;

/// The panels and which of them each unit lands in, keyed by (env, Some(solver)) for a
/// solver's own panel and (env, None) for the overview panels of its env combination. With
/// more than one solver the map opens on two overviews per env combination: the worst status
/// over all solvers (is any solver unsafe here?) and the best (is this shape safe with
/// anything?); then one panel per solver, `default` first when the run has it.
fn panels_for(f: &Facts, n_cells: usize) -> (Vec<Panel>, PanelsOf) {
    let multi_env = f.envs.len() > 1;
    let cells = vec![None; n_cells];
    let mut keys: Vec<(usize, usize)> = f
        .rows()
        .iter()
        .map(|r| {
            let s = f.solvers.iter().position(|s| *s == r.solver).unwrap_or(0);
            (f.env_index(&r.env), s)
        })
        .collect();
    keys.sort_by_key(|&(e, s)| (e, f.solvers[s] != "default", s));
    keys.dedup();
    let env_part = |e: usize| {
        if multi_env {
            format!("{} · ", f.env_labels[e])
        } else {
            String::new()
        }
    };
    let mut panels: Vec<Panel> = Vec::new();
    let mut panel_of: PanelsOf = HashMap::new();
    let solvers_in = |e: usize| keys.iter().filter(|k| k.0 == e).count();
    let envs: Vec<usize> = keys
        .iter()
        .map(|k| k.0)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    for &e in &envs {
        let n = solvers_in(e);
        if n < 2 {
            continue;
        }
        for (pick, what) in [(Pick::Worst, "worst"), (Pick::Best, "best")] {
            panel_of.entry((e, None)).or_default().push(panels.len());
            panels.push(Panel {
                title: format!("{}{what} of {n} solvers", env_part(e)),
                overview: true,
                pick,
                cells: cells.clone(),
            });
        }
    }
    for &(e, s) in &keys {
        panel_of.entry((e, Some(s))).or_default().push(panels.len());
        panels.push(Panel {
            title: format!("{}solver {}", env_part(e), f.solvers[s]),
            overview: false,
            pick: Pick::Worst,
            cells: cells.clone(),
        });
    }
    (panels, panel_of)
}
