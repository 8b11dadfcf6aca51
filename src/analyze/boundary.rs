//! Boundary tables: along an ordered axis (a boundary search's `--along`, else the op's size
//! parameter: conv2d `h`, gemm `m`, graph `size`, copy `bytes`, rng and cast `count`), for each
//! line (every other varying parameter, the solver and the env combination held fixed), the
//! largest value that was ok below the first failure, the smallest value that failed, how it
//! failed (status and phase), and whether everything above it failed too (contiguous) or some
//! values were ok again (a window). The table states what was measured and nothing more, which
//! a rule from a decision tree cannot promise.
//!
//! A zip group (a channel pair `c_in→c_out`) is one column whose values are the group's rows: a
//! category, never two numbers. Parameters that move with the axis (conv2d `w` equal to `h`, or
//! the axis's own zip partners) are not part of a line's key.

use crate::results::rundata::{Row, RunData};
use crate::results::status::Status;
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

/// How the run's parameters are read for boundaries and rules.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Axes {
    /// The ordered axis lines run along; None when no numeric parameter varies.
    pub along: Option<String>,
    /// Varying parameters that move with `along` (never part of a line's key).
    pub followers: Vec<String>,
    /// The other varying parameters, a zip group's together (`["c_in", "c_out"]`), in CSV order.
    pub groups: Vec<Vec<String>>,
}

impl Axes {
    /// Reads the axes of a run: the sweep text in its manifest says which axes are zipped, its
    /// strategy.json which axis a boundary search went along.
    pub fn of(run: &RunData) -> Axes {
        let m = &run.manifest;
        let sweep = crate::spec::load_str(&m.sweep.path, &m.sweep.text, &m.sweep.overrides).ok();
        let searched = std::fs::read_to_string(run.dir.join("strategy.json"))
            .ok()
            .and_then(|t| {
                serde_json::from_str::<crate::exec::plan::strategy::StrategyInfo>(&t).ok()
            })
            .map(|s| s.along)
            .filter(|a| !a.is_empty());
        let default = sweep
            .as_ref()
            .and_then(|s| crate::exec::plan::strategy::Along::choose(s, None).ok())
            .map(|a| a.name);
        // A `[[cases]]` list is a zip group of every axis: its rows are cases, not categories
        // of one parameter, so its parameters stay apart.
        let zips: Option<Vec<Vec<String>>> = sweep.as_ref().map(|s| {
            s.dims
                .iter()
                .filter(|d| d.axes.len() > 1 && d.group.as_deref() != Some("cases"))
                .map(|d| d.axes.iter().map(|a| a.name.clone()).collect())
                .collect()
        });
        Axes::from_rows(
            &run.rows,
            &run.param_names,
            &m.sweep.op,
            searched.or(default),
            zips.as_deref(),
        )
    }

    /// The axes from the rows alone, given the preferred axis and the sweep's zip groups; when
    /// the sweep is not known (`zips` None), parameters that determine each other in every row
    /// are taken as one group.
    pub fn from_rows(
        rows: &[Row],
        param_names: &[String],
        op: &str,
        preferred: Option<String>,
        zips: Option<&[Vec<String>]>,
    ) -> Axes {
        let known = zips.is_some();
        let zips = zips.unwrap_or_default();
        let varying: Vec<String> = param_names
            .iter()
            .filter(|p| distinct(rows, p) > 1)
            .cloned()
            .collect();
        let numeric = |p: &String| {
            rows.iter()
                .all(|r| r.param_f64(p).is_some_and(f64::is_finite))
        };
        let size = crate::op::OpKind::parse(op).map_or(&[][..], |o| o.size_params());
        let along = preferred
            .filter(|p| varying.contains(p) && numeric(p))
            .or_else(|| {
                size.iter()
                    .map(|s| s.to_string())
                    .find(|s| varying.contains(s) && numeric(s))
            })
            .or_else(|| varying.iter().rev().find(|p| numeric(p)).cloned());
        let zip_of = |p: &str| zips.iter().find(|z| z.iter().any(|q| q == p));
        let mut followers = Vec::new();
        let mut groups: Vec<Vec<String>> = Vec::new();
        for p in &varying {
            if Some(p) == along.as_ref() {
                continue;
            }
            let with_along = along.as_ref().is_some_and(|a| {
                let equal = rows.iter().all(|r| r.param(a) == r.param(p));
                zip_of(a).is_some_and(|z| z.contains(p))
                    || equal
                    || (!known && determine_each_other(rows, a, p))
            });
            if with_along {
                followers.push(p.clone());
                continue;
            }
            let joined = groups.iter_mut().find(|g| {
                g.iter().any(|q| match zip_of(q) {
                    Some(z) => z.contains(p),
                    None => !known && determine_each_other(rows, q, p),
                })
            });
            match joined {
                Some(g) => g.push(p.clone()),
                None => groups.push(vec![p.clone()]),
            }
        }
        Axes {
            along,
            followers,
            groups,
        }
    }

    /// A group's name: `c_in→c_out` for a zip group, the parameter's for one axis.
    pub fn group_name(group: &[String]) -> String {
        group.join("→")
    }

    /// A row's value of a group: `16→32`.
    pub fn group_value(r: &Row, group: &[String]) -> String {
        group
            .iter()
            .map(|p| r.param(p).unwrap_or(""))
            .collect::<Vec<_>>()
            .join("→")
    }
}

fn distinct(rows: &[Row], p: &str) -> usize {
    rows.iter()
        .map(|r| r.param(p).unwrap_or(""))
        .collect::<BTreeSet<_>>()
        .len()
}

/// Whether each value of `a` comes with one value of `b` and the other way round, in every row.
fn determine_each_other(rows: &[Row], a: &str, b: &str) -> bool {
    let mut ab: HashMap<&str, &str> = HashMap::new();
    let mut ba: HashMap<&str, &str> = HashMap::new();
    rows.iter().all(|r| {
        let (x, y) = (r.param(a).unwrap_or(""), r.param(b).unwrap_or(""));
        *ab.entry(x).or_insert(y) == y && *ba.entry(y).or_insert(x) == x
    })
}

/// Numbers numerically, words as text.
pub fn cmp_values(a: &str, b: &str) -> Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    }
}

/// `16→32` against `3→16`: part by part, each as `cmp_values`.
pub fn cmp_group_values(a: &str, b: &str) -> Ordering {
    a.split('→')
        .zip(b.split('→'))
        .map(|(x, y)| cmp_values(x, y))
        .find(|o| o.is_ne())
        .unwrap_or_else(|| a.cmp(b))
}

/// What a unit says about its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// ok or inferred-ok.
    Ok,
    /// A failure, measured or inferred, or interrupted (on an RDNA1 box the mark of a machine
    /// hang).
    Fail,
    /// Unsupported or skipped: no answer about this value.
    NoAnswer,
}

pub fn class(s: Status) -> Class {
    if s.predicts_ok() {
        Class::Ok
    } else if s.predicts_failure() || s == Status::Interrupted {
        Class::Fail
    } else {
        Class::NoAnswer
    }
}

/// One value of the axis on a line.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub value: f64,
    /// As written in results.csv.
    pub text: String,
    pub status: Status,
    pub phase: String,
}

impl Point {
    fn class(&self) -> Class {
        class(self.status)
    }
}

/// One line's boundary: a row of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Boundary {
    /// The env combination's key (results.csv's `env`).
    pub env: String,
    pub solver: String,
    /// The line's value of each of `Axes::groups`.
    pub group: Vec<String>,
    pub points: Vec<Point>,
}

/// One way a line fails.
#[derive(Clone, Debug, PartialEq)]
pub struct Failing {
    pub status: Status,
    pub phase: String,
    /// Values of the line that failed so.
    pub values: usize,
    /// Of them, how many a boundary search inferred instead of running.
    pub inferred: usize,
}

/// A run of consecutive values (first and last, equal for one value).
pub type Span = (String, String);

impl Boundary {
    fn answered(&self) -> impl Iterator<Item = &Point> {
        self.points.iter().filter(|p| p.class() != Class::NoAnswer)
    }

    fn first_fail(&self) -> Option<usize> {
        self.points.iter().position(|p| p.class() == Class::Fail)
    }

    /// The largest value that was ok below the first failure (below everything when nothing
    /// failed); None when the smallest answered value failed.
    pub fn ok_up_to(&self) -> Option<&Point> {
        let end = self.first_fail().unwrap_or(self.points.len());
        self.points[..end]
            .iter()
            .rev()
            .find(|p| p.class() == Class::Ok)
    }

    /// The smallest value that failed.
    pub fn fails_from(&self) -> Option<&Point> {
        self.first_fail().map(|i| &self.points[i])
    }

    /// Each way the line fails (status and phase) with how many values failed so and how many
    /// of those a boundary search inferred, in the order the line first meets them. An
    /// inferred failure counts as the measured failure of the line with its phase (a bisect
    /// gives it that phase); without one it stays `inferred-fail`.
    pub fn failing(&self) -> Vec<Failing> {
        let measured = |phase: &str| {
            self.points
                .iter()
                .find(|p| p.status.is_failure() && p.phase == phase)
                .map(|p| p.status)
        };
        let mut out: Vec<Failing> = Vec::new();
        for p in self.points.iter().filter(|p| p.class() == Class::Fail) {
            let inferred = p.status == Status::InferredFail;
            let status = if inferred {
                measured(&p.phase).unwrap_or(p.status)
            } else {
                p.status
            };
            let i = match out
                .iter()
                .position(|f| f.status == status && f.phase == p.phase)
            {
                Some(i) => i,
                None => {
                    out.push(Failing {
                        status,
                        phase: p.phase.clone(),
                        values: 0,
                        inferred: 0,
                    });
                    out.len() - 1
                }
            };
            out[i].values += 1;
            out[i].inferred += usize::from(inferred);
        }
        out
    }

    /// From the first failure on: the runs of failing values and the runs of ok values between
    /// and after them (values with no answer are skipped over).
    pub fn runs_above(&self) -> (Vec<Span>, Vec<Span>) {
        let (mut fails, mut oks): (Vec<Span>, Vec<Span>) = (Vec::new(), Vec::new());
        let Some(start) = self.first_fail() else {
            return (fails, oks);
        };
        let mut last: Option<Class> = None;
        for p in self.points[start..]
            .iter()
            .filter(|p| p.class() != Class::NoAnswer)
        {
            let c = p.class();
            let runs = if c == Class::Fail {
                &mut fails
            } else {
                &mut oks
            };
            match runs.last_mut() {
                Some(run) if last == Some(c) => run.1 = p.text.clone(),
                _ => runs.push((p.text.clone(), p.text.clone())),
            }
            last = Some(c);
        }
        (fails, oks)
    }

    /// Every answered value above the first failure failed.
    pub fn contiguous(&self) -> bool {
        self.runs_above().1.is_empty()
    }

    /// Values with no answer (unsupported, skipped), with their status.
    pub fn no_answer(&self) -> Vec<(&str, Status)> {
        self.points
            .iter()
            .filter(|p| p.class() == Class::NoAnswer)
            .map(|p| (p.text.as_str(), p.status))
            .collect()
    }

    /// The largest value tested.
    pub fn top(&self) -> Option<&Point> {
        self.answered().last()
    }
}

/// The boundary of every line of `rows` (all env combinations), lines ordered by env (in
/// `envs` order), then group values (numbers numerically), then solver (first seen).
pub fn boundaries<'a>(
    rows: impl IntoIterator<Item = &'a Row>,
    axes: &Axes,
    envs: &[String],
) -> Vec<Boundary> {
    let Some(along) = &axes.along else {
        return Vec::new();
    };
    let mut solvers: Vec<&str> = Vec::new();
    let mut lines: Vec<Boundary> = Vec::new();
    let mut index: HashMap<(String, String, Vec<String>), usize> = HashMap::new();
    for r in rows {
        let Some(value) = r.param_f64(along) else {
            continue;
        };
        if !solvers.contains(&r.solver.as_str()) {
            solvers.push(&r.solver);
        }
        let group: Vec<String> = axes
            .groups
            .iter()
            .map(|g| Axes::group_value(r, g))
            .collect();
        let key = (r.env.to_string(), r.solver.to_string(), group.clone());
        let i = *index.entry(key).or_insert_with(|| {
            lines.push(Boundary {
                env: r.env.to_string(),
                solver: r.solver.to_string(),
                group,
                points: Vec::new(),
            });
            lines.len() - 1
        });
        lines[i].points.push(Point {
            value,
            text: r.param(along).unwrap_or("").to_string(),
            status: r.status,
            phase: r.phase.to_string(),
        });
    }
    for l in &mut lines {
        // The worst status first at a value seen twice (a merge of overlapping runs).
        l.points.sort_by(|a, b| {
            a.value
                .total_cmp(&b.value)
                .then(b.status.severity().cmp(&a.status.severity()))
        });
        l.points.dedup_by(|later, first| later.value == first.value);
    }
    let env_rank = |e: &str| envs.iter().position(|x| x == e).unwrap_or(usize::MAX);
    let solver_rank = |s: &str| solvers.iter().position(|x| *x == s).unwrap_or(usize::MAX);
    lines.sort_by(|a, b| {
        env_rank(&a.env)
            .cmp(&env_rank(&b.env))
            .then_with(|| {
                a.group
                    .iter()
                    .zip(&b.group)
                    .map(|(x, y)| cmp_group_values(x, y))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            })
            .then_with(|| solver_rank(&a.solver).cmp(&solver_rank(&b.solver)))
    });
    lines
}

/// Whether a table of `lines` says anything: some line has two answered values.
pub fn worth_a_table(lines: &[Boundary]) -> bool {
    lines.iter().any(|l| l.answered().count() > 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::boundary_render::{above_text, failing_text, sentence};

    /// A line from (value, status, phase) triples.
    fn line(points: &[(u32, Status, &str)]) -> Boundary {
        Boundary {
            env: String::new(),
            solver: "default".into(),
            group: vec!["16→32".into()],
            points: points
                .iter()
                .map(|&(v, status, phase)| Point {
                    value: f64::from(v),
                    text: v.to_string(),
                    status,
                    phase: phase.to_string(),
                })
                .collect(),
        }
    }

    fn axes() -> Axes {
        Axes {
            along: Some("h".into()),
            followers: vec!["w".into()],
            groups: vec![vec!["c_in".into(), "c_out".into()]],
        }
    }

    const OK: Status = Status::Ok;
    const HANG: Status = Status::Hang;

    #[test]
    fn a_contiguous_boundary_reads_as_the_seed_says() {
        let l = line(&[
            (16, OK, ""),
            (32, OK, ""),
            (40, HANG, "compile"),
            (48, HANG, "compile"),
            (128, HANG, "compile"),
        ]);
        assert_eq!(l.ok_up_to().map(|p| p.text.as_str()), Some("32"));
        assert_eq!(l.fails_from().map(|p| p.text.as_str()), Some("40"));
        assert!(l.contiguous());
        assert_eq!(failing_text(&l), "hang in compile");
        assert_eq!(above_text(&l), "contiguous: every value up to 128 fails");
        assert_eq!(
            sentence(&l, &axes(), false),
            "c_in→c_out=16→32: hang in compile from h=40 (ok up to 32; contiguous: every value up to 128 fails)"
        );
    }

    #[test]
    fn a_window_is_called_a_window_and_the_ok_runs_above_are_named() {
        let l = line(&[
            (16, OK, ""),
            (40, HANG, "run"),
            (48, HANG, "run"),
            (56, OK, ""),
            (64, OK, ""),
            (80, Status::Crash, "run"),
            (96, OK, ""),
        ]);
        assert_eq!(l.ok_up_to().map(|p| p.text.as_str()), Some("16"));
        assert!(!l.contiguous());
        assert_eq!(
            l.runs_above(),
            (
                vec![("40".into(), "48".into()), ("80".into(), "80".into())],
                vec![("56".into(), "64".into()), ("96".into(), "96".into())]
            )
        );
        assert_eq!(
            above_text(&l),
            "2 windows: fails 40–48, 80; ok again 56–64, 96"
        );
        assert_eq!(failing_text(&l), "hang in run (2), crash in run (1)");
    }

    #[test]
    fn values_without_an_answer_neither_end_the_ok_run_nor_break_a_failing_one() {
        let l = line(&[
            (16, OK, ""),
            (24, Status::Unsupported, ""),
            (32, OK, ""),
            (40, HANG, "run"),
            (48, Status::Skipped, ""),
            (56, HANG, "run"),
        ]);
        assert_eq!(l.ok_up_to().map(|p| p.text.as_str()), Some("32"));
        assert!(l.contiguous());
        assert_eq!(
            l.no_answer(),
            vec![("24", Status::Unsupported), ("48", Status::Skipped)]
        );
    }

    #[test]
    fn a_line_that_never_fails_and_one_that_fails_at_once() {
        let never = line(&[(16, OK, ""), (128, Status::InferredOk, "")]);
        assert_eq!(never.fails_from(), None);
        assert_eq!(above_text(&never), "-");
        assert_eq!(
            sentence(&never, &axes(), false),
            "c_in→c_out=16→32: ok at every h tested (16 to 128)"
        );
        let at_once = line(&[(16, Status::Mismatch, ""), (32, OK, "")]);
        assert_eq!(at_once.ok_up_to(), None);
        assert_eq!(above_text(&at_once), "window: fails 16; ok again 32");
    }

    #[test]
    fn inferred_values_are_marked_as_inferred() {
        let l = line(&[
            (16, Status::InferredOk, ""),
            (24, Status::InferredOk, ""),
            (32, OK, ""),
            (40, HANG, "run"),
            (48, Status::InferredFail, "run"),
        ]);
        let t = crate::analyze::boundary_render::table(
            &[l],
            &axes(),
            &crate::analyze::boundary_render::Show {
                env: None,
                solver: false,
            },
        );
        let md = crate::markup::markdown::table(&t, 10);
        assert!(
            md.contains("| 16→32 | 32 | 40 | hang in run (1 run, 1 inferred) |"),
            "{md}"
        );
    }

    #[test]
    fn group_values_sort_as_numbers() {
        let mut v = vec!["64→128", "3→16", "16→32", "32→64"];
        v.sort_by(|a, b| cmp_group_values(a, b));
        assert_eq!(v, vec!["3→16", "16→32", "32→64", "64→128"]);
    }
}
