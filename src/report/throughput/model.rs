//! What the throughput plot shows, built by `data` and drawn by its parent: the panels, their
//! series (a line and points per solver and shape family) and the plot's texts and ranges.

use crate::report::facts::Facts;

pub(super) struct Series {
    /// Index into `Throughput::keys`, which fixes colour and legend text.
    pub(super) key: usize,
    /// Index into `Throughput::families`, which fixes the marker.
    pub(super) family: usize,
    /// (size, rate), sorted by size.
    pub(super) points: Vec<(f64, f64)>,
    /// The best rate at each size, joined: one family's points differ only in the size
    /// parameter, so they differ in work too (unless env or folded repeats meet).
    pub(super) line: Vec<(f64, f64)>,
}

pub(super) struct Panel {
    pub(super) title: String,
    pub(super) series: Vec<Series>,
}

pub struct Throughput {
    pub(super) title: String,
    pub(super) subtitle: String,
    pub(super) x_desc: String,
    pub(super) y_desc: String,
    /// Legend text per (solver, env) series key.
    pub(super) keys: Vec<String>,
    /// Legend text per shape family (the numeric parameters other than the size, fixed along
    /// a line: `c_in→c_out=3→16`); empty when there is one family.
    pub(super) families: Vec<String>,
    pub(super) panels: Vec<Panel>,
    pub(super) best: (usize, f64, f64),
    pub(super) x_range: (f64, f64),
    pub(super) y_max: f64,
    pub(super) cols: u32,
}

pub(super) fn title(f: &Facts) -> String {
    format!("Throughput: {} on {}", f.run.manifest.sweep.op, f.device())
}
