//! The plot's data: each ok row's point, sorted into panels (one per combination of the
//! categorical parameters) and series (one per solver and env key and shape family), each
//! series' line, the best point and the ranges of the axes.

use super::model::{Panel, Series, Throughput, title};
use crate::report::facts::{self, Facts};
use crate::results::rundata::Row;
use crate::results::status::Status;

/// The plot of the run's ok rows; `None` when no row has a point.
pub fn build(f: &Facts) -> Option<Throughput> {
    let categorical = categorical_params(f);
    let family = family_params(f);
    let mut family_ids = family_ids(f, &family);
    let Gathered {
        keys,
        mut panels,
        best,
    } = gather(f, &categorical, &family, &mut family_ids);
    let (bp, bx, by, best_row) = best?;
    let (lo, hi) = join_lines(&mut panels);
    let cols = match panels.len() {
        1 => 1,
        2 | 4 => 2,
        _ => 3,
    };
    Some(Throughput {
        title: title(f),
        subtitle: subtitle(f, best_row, bx, by),
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

/// The parameters that vary and are not numbers in every row: each value combination of
/// them gets a panel.
fn categorical_params<'f>(f: &'f Facts) -> Vec<&'f String> {
    f.groups
        .iter()
        .map(|(p, _)| p)
        .filter(|p| f.rows().iter().any(|r| r.param_f64(p).is_none()))
        .collect()
}

/// A row's values of the family parameters.
fn family_of(family: &[String], r: &Row) -> Vec<String> {
    family
        .iter()
        .map(|p| r.param(p).unwrap_or("").to_string())
        .collect()
}

/// The families of the run, each once, in numeric order.
fn family_ids(f: &Facts, family: &[String]) -> Vec<Vec<String>> {
    // Families in numeric order (3→16 before 16→32), so markers and legend read in order.
    let mut family_ids: Vec<Vec<String>> = f
        .rows()
        .iter()
        .map(|r| family_of(family, r))
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
    family_ids
}

/// The plotted points sorted into panels and series, with the best of them.
struct Gathered<'a> {
    /// Legend text per (solver, env) series key.
    keys: Vec<String>,
    panels: Vec<Panel>,
    /// (panel, size, rate, row) of the highest rate.
    best: Option<(usize, f64, f64, &'a Row)>,
}

/// Puts each ok row's point into the series of its (solver, env) key and family, in the panel
/// of its categorical values; panels, series and keys come in the order rows first meet them.
fn gather<'a>(
    f: &'a Facts,
    categorical: &[&String],
    family: &[String],
    family_ids: &mut Vec<Vec<String>>,
) -> Gathered<'a> {
    let multi_env = f.envs.len() > 1;
    // Indexes by hash: a run of 10^5 shapes has as many families, and a scan per row made
    // this quadratic (issue 40, Scale).
    let mut key_ids: Index<(&str, &str)> = Index::default();
    let mut keys: Vec<String> = Vec::new();
    let mut panel_ids: Index<Vec<&str>> = Index::default();
    let mut panels: Vec<Panel> = Vec::new();
    let mut best: Option<(usize, f64, f64, &Row)> = None;
    let mut fam_ids: Index<Vec<String>> = Index::default();
    for id in family_ids.iter() {
        fam_ids.of(id.clone());
    }
    // Per panel: (series key, family) -> the series' position.
    let mut series_at: Vec<std::collections::HashMap<(usize, usize), usize>> = Vec::new();
    for r in f.rows() {
        let Some(pt) = point(f, r) else { continue };
        let k = key_ids.of((r.solver.as_str(), r.env.as_str()));
        let fam = fam_ids.of(family_of(family, r));
        if fam == family_ids.len() {
            family_ids.push(family_of(family, r));
        }
        if k == keys.len() {
            let mut label = r.solver.to_string();
            if multi_env {
                label = format!("{label} · {}", f.env_label(&r.env));
            }
            keys.push(label);
        }
        let cats: Vec<&str> = categorical
            .iter()
            .map(|p| r.param(p).unwrap_or(""))
            .collect();
        let p = panel_ids.of(cats.clone());
        if p == panels.len() {
            series_at.push(std::collections::HashMap::new());
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
        let s = *series_at[p].entry((k, fam)).or_insert_with(|| {
            series.push(Series {
                key: k,
                family: fam,
                points: Vec::new(),
                line: Vec::new(),
            });
            series.len() - 1
        });
        series[s].points.push(pt);
        if best.is_none_or(|b| pt.1 > b.2) {
            best = Some((p, pt.0, pt.1, r));
        }
    }
    Gathered { keys, panels, best }
}

/// Sorts each series' points by size and joins the best rate at each size into its line.
/// Returns the smallest and largest size.
fn join_lines(panels: &mut [Panel]) -> (f64, f64) {
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
    (lo, hi)
}

/// The line above the plot naming the best point: its rate, its size and who made it.
fn subtitle(f: &Facts, best_row: &Row, bx: f64, by: f64) -> String {
    let mut who = vec![format!("solver {}", best_row.solver)];
    if f.envs.len() > 1 {
        who.push(f.env_label(&best_row.env).to_string());
    }
    who.push(f.case_label(best_row));
    let size_unit = match f.metric {
        facts::Metric::Flops => "FLOP",
        facts::Metric::Bytes => "B",
    };
    format!(
        "best (ringed): {} {} at {} {size_unit} — {}",
        facts::si(by),
        f.metric.rate_unit(),
        facts::si(bx),
        who.join(" · ")
    )
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

fn point(f: &Facts, r: &Row) -> Option<(f64, f64)> {
    if r.status != Status::Ok {
        return None;
    }
    let x = f.metric.size(r)?;
    let y = f.metric.rate(r)?;
    (x.is_finite() && y.is_finite() && x > 0.0 && y > 0.0).then_some((x, y))
}

/// Items numbered in the order they are first met.
struct Index<T> {
    at: std::collections::HashMap<T, usize>,
}

impl<T> Default for Index<T> {
    fn default() -> Self {
        Index {
            at: std::collections::HashMap::new(),
        }
    }
}

impl<T: std::hash::Hash + Eq> Index<T> {
    /// The item's number, a new one (the count so far) when it is new.
    fn of(&mut self, item: T) -> usize {
        let n = self.at.len();
        *self.at.entry(item).or_insert(n)
    }
}
