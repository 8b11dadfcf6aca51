//! Sequence files (issue 43): a sweep file with `[[step]]` tables instead of `op` + `[axes]`.
//! Each step names `op`, its parameters (unset ones take the op's defaults, as `list-ops` prints
//! them) and optionally `solver`; `[sequence] repeat = N` runs the whole list N times.
//! `backend`, `rocm`, `[env]`, `[env_axes]`, `[limits]`, `[timing]` and `[verify]` mean what
//! they mean in a sweep. Errors carry file:line:col like a sweep's.

use super::error::SpecError;
use super::reader::{Cx, Sp};
use super::{Dim, Source, Sweep, load, model::line_col};
use crate::op::value::Value;
use crate::op::{Case, OpKind};
use std::sync::Arc;
use toml::de::{DeTable, DeValue};

/// The keys a sequence file may have at its top level.
pub const SEQUENCE_KEYS: &[&str] = &[
    "name",
    "description",
    "backend",
    "rocm",
    "env",
    "env_axes",
    "limits",
    "timing",
    "verify",
    "sequence",
    "step",
];

/// The most steps a sequence runs, repeats included (docs/sweep-files.md "Sequences").
pub const MAX_STEPS: usize = 100_000;

/// One call of a sequence.
#[derive(Clone, Debug)]
pub struct Step {
    pub case: Case,
    pub solver: String,
    /// The line of the step's `[[step]]` table in the file.
    pub line: usize,
}

/// A sequence file, read and checked.
#[derive(Clone, Debug)]
pub struct Sequence {
    /// The file's header, environment and policies, as a sweep has them (`op` is the first
    /// step's, `dims` empty: a sequence has no axes).
    pub sweep: Sweep,
    pub steps: Vec<Step>,
    pub repeat: u32,
    /// `[sequence] processes = N`: the whole sequence replayed in N fresh processes, each step
    /// flagged where they disagree (as `run --processes`); 0 when not asked.
    pub processes: u32,
}

/// Where one step runs: its place in the list (1-based), the pass over the list (1-based) and
/// its index in the whole run order (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    pub position: usize,
    pub iteration: u32,
    pub index: usize,
}

impl Sequence {
    /// Every step in run order over the repeats.
    pub fn order(&self) -> Vec<(At, &Step)> {
        (1..=self.repeat)
            .flat_map(|iteration| {
                self.steps
                    .iter()
                    .enumerate()
                    .map(move |(i, s)| (i, iteration, s))
            })
            .enumerate()
            .map(|(index, (i, iteration, s))| {
                let at = At {
                    position: i + 1,
                    iteration,
                    index,
                };
                (at, s)
            })
            .collect()
    }
}

/// Whether a file's text is a sequence (it has a top-level `step` key). Text that does not
/// parse is not: the sweep loader then reports where it breaks.
pub fn is_sequence(text: &str) -> bool {
    DeTable::parse(text).is_ok_and(|t| t.get_ref().contains_key("step"))
}

/// Parses and checks a sequence file's text; `overrides` may hold `--set` values only.
pub fn load_str(path: &str, text: &str, overrides: &[String]) -> Result<Sequence, SpecError> {
    if let Some(axis) = overrides.iter().find(|o| super::sets::as_set(o).is_none()) {
        return Err(SpecError::whole_file(
            path,
            format!(
                "--axis {axis}: a sequence has no axes (set a step's parameters in its [[step]])"
            ),
        ));
    }
    let src = Arc::new(text.to_string());
    let cx = Cx {
        file: path,
        text: &src,
    };
    let root = cx.parse()?;
    let root = root.into_inner();
    for key in ["op", "axes", "zip", "cases", "drop"] {
        if let Some((k, _)) = root.get_key_value(key) {
            return Err(cx.err(
                k.span(),
                format!(
                    "`{key}` belongs to a sweep; a sequence names an op and its parameters in each [[step]]"
                ),
            ));
        }
    }
    cx.deny_unknown(&root, SEQUENCE_KEYS, "top level")?;
    let name = load::name(&cx, &root)?;
    let description = match root.get("description") {
        Some(v) => cx.string(v, "description")?,
        None => String::new(),
    };
    let backends = load::backends(&cx, &root)?;
    let rocm = load::rocm_trees(&cx, &root)?;
    let env = load::env(&cx, &root)?;
    let env_axes = load::env_axes(&cx, &root, &env)?;
    let (repeat, processes) = sequence_table(&cx, &root)?;
    let list = steps_of(&cx, &root)?;
    let first_op = match list.first() {
        Some(item) => load::op(&cx, cx.table(item, "step")?, item.span())?,
        None => return Err(cx.err(0..0, "a sequence needs at least one [[step]]")),
    };
    let policy_op = if list.iter().any(|s| step_op(s) == Some(OpKind::Gemm)) {
        OpKind::Gemm
    } else {
        first_op
    };
    let (limits, timing, verify) = load::policies(&cx, &root, policy_op, overrides)?;
    let sweep = Sweep {
        name,
        description,
        op: first_op,
        backend: backends.first().cloned().unwrap_or_else(|| "auto".into()),
        backends,
        rocm,
        dims: Vec::new(),
        filters: Vec::new(),
        env,
        env_axes,
        limits,
        timing,
        verify,
        source: Source::new(path, src.clone()),
        overrides: overrides.to_vec(),
        masked_text: load::masked_text(&root, text),
    };
    let steps = list
        .iter()
        .enumerate()
        .map(|(i, item)| step(&cx, &sweep, i + 1, item))
        .collect::<Result<Vec<_>, _>>()?;
    if steps.len().saturating_mul(repeat as usize) > MAX_STEPS {
        return Err(cx.err(
            0..0,
            format!(
                "{} steps x repeat {repeat} is more than the limit of {MAX_STEPS} steps",
                steps.len()
            ),
        ));
    }
    Ok(Sequence {
        sweep,
        steps,
        repeat,
        processes,
    })
}

fn step_op(item: &Sp) -> Option<OpKind> {
    match item.get_ref() {
        DeValue::Table(t) => match t.get("op").map(|v| v.get_ref()) {
            Some(DeValue::String(s)) => OpKind::parse(s),
            _ => None,
        },
        _ => None,
    }
}

/// `[sequence] repeat = N` (1 when absent) and `processes = N` (0 when absent).
fn sequence_table(cx: &Cx, root: &DeTable) -> Result<(u32, u32), SpecError> {
    let Some(v) = root.get("sequence") else {
        return Ok((1, 0));
    };
    let t = cx.table(v, "sequence")?;
    cx.deny_unknown(t, &["repeat", "processes"], "[sequence]")?;
    let repeat = match t.get("repeat") {
        Some(r) => cx.count_at_most(r, "repeat", 1, MAX_STEPS as u32)?,
        None => 1,
    };
    let processes = match t.get("processes") {
        Some(p) => cx.count_at_most(p, "processes", 2, super::policy::MAX_TRIALS)?,
        None => 0,
    };
    Ok((repeat, processes))
}

/// The `[[step]]` tables, in order.
fn steps_of<'t>(cx: &Cx, root: &'t DeTable<'t>) -> Result<&'t [Sp<'t>], SpecError> {
    match root.get("step") {
        Some(v) => match v.get_ref() {
            DeValue::Array(items) => Ok(&items[..]),
            _ => Err(cx.type_err(v, "step", "tables ([[step]])")),
        },
        None => Err(cx.err(0..0, "a sequence needs at least one [[step]]")),
    }
}

/// Step `n` (1-based): its op, one value per parameter it sets, and its solver.
fn step(cx: &Cx, base: &Sweep, n: usize, item: &Sp) -> Result<Step, SpecError> {
    let t = cx.table(item, "step")?;
    let op = load::op(cx, t, item.span())?;
    let mut dims = Vec::new();
    let mut seen = Vec::new();
    for (key, val) in t.iter() {
        if key.get_ref() == "op" {
            continue;
        }
        let axis = cx.axis(op, key, val, &seen, true)?;
        if axis.values.len() != 1 {
            return Err(cx.err(
                val.span(),
                format!(
                    "step {n}: `{}` takes one value in a step (a sequence has no axes: write one [[step]] per call)",
                    axis.name
                ),
            ));
        }
        if axis.name == crate::op::SOLVER && axis.values[0] == Value::Str("all".into()) {
            return Err(cx.err(
                val.span(),
                format!(
                    "step {n}: a step runs one solver; name it, or leave `solver` out for the library's default"
                ),
            ));
        }
        seen.push((axis.name.clone(), key.span()));
        dims.push(Dim {
            group: None,
            axes: vec![axis],
            weights: Vec::new(),
        });
    }
    let one = Sweep {
        op,
        dims,
        ..base.clone()
    };
    let case = match one.cases().next() {
        Some(Ok(case)) => case,
        Some(Err(why)) => return Err(cx.err(item.span(), format!("step {n}: {why}"))),
        None => return Err(cx.err(item.span(), format!("step {n}: no case"))),
    };
    Ok(Step {
        solver: case.solver.clone(),
        case,
        line: line_col(cx.text, item.span().start).0,
    })
}
