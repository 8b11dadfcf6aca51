//! What a sweep file is once read: its axes, dimensions and weights ([`Sweep`]), the limits a
//! file must keep, and the per-op checks of a parameter's slot and value.

use super::filter::{Filter, Ty};
use crate::op::value::Value;
use crate::op::{self, OpKind, ParamKind};

use super::policy::{Limits, TimingPolicy, VerifyPolicy};
use std::sync::Arc;

pub const BACKENDS: &[&str] = &["auto", "cpu", "cuda", "rocm", "torch"];

pub(crate) const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "op",
    "backend",
    "rocm",
    "axes",
    "zip",
    "cases",
    "drop",
    "env",
    "env_axes",
    "limits",
    "timing",
    "verify",
];

/// One axis: an op parameter (or `solver`) and the values it takes.
#[derive(Clone, Debug)]
pub struct Axis {
    pub name: String,
    /// Position in a combination: the op's parameters in order, then `solver`.
    pub slot: usize,
    pub values: Vec<Value>,
}

/// One dimension of the product: a single axis, or a zip group whose axes vary together (a
/// `[[cases]]` list is one, named `cases`).
#[derive(Clone, Debug)]
pub struct Dim {
    pub group: Option<String>,
    pub axes: Vec<Axis>,
    /// The model's weight of each row (`[[cases]]` with `weight`), or empty: unweighted.
    pub weights: Vec<Weight>,
}

/// How much of a model one case stands for: the calls a log or trace saw, and the time it
/// traced for them where the source has times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weight {
    pub calls: f64,
    pub traced_ms: Option<f64>,
}

impl Dim {
    pub fn len(&self) -> usize {
        self.axes.first().map_or(0, |a| a.values.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Clone, Debug)]
pub struct Source {
    pub path: String,
    pub text: Arc<String>,
    pub sha256: String,
}

impl Source {
    /// A file's path as given, its text and the text's SHA-256 (what `compare` and `--resume`
    /// check a run's file by).
    pub fn new(path: &str, text: Arc<String>) -> Source {
        use sha2::Digest as _;
        let sha256 = sha2::Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Source {
            path: path.to_string(),
            text,
            sha256,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Sweep {
    pub name: String,
    pub description: String,
    pub op: OpKind,
    /// Backend named by the file (`auto` when absent), the first of `backends`; the CLI's
    /// `--backend` wins over it.
    pub backend: String,
    /// Every backend the file names (`backend = ["cpu", "torch"]`), in order; one for a plain
    /// `backend = "cpu"`. With several, each runs the sweep in workers of its own.
    pub backends: Vec<String>,
    /// The ROCm trees named by the file (`rocm = [..]`), as written; empty when absent. With
    /// several, each runs the sweep in workers of its own (`--rocm A --rocm B` wins).
    pub rocm: Vec<String>,
    pub dims: Vec<Dim>,
    pub filters: Vec<Filter>,
    pub env: Vec<(String, String)>,
    pub env_axes: Vec<(String, Vec<String>)>,
    pub limits: Limits,
    pub timing: TimingPolicy,
    pub verify: VerifyPolicy,
    pub source: Source,
    /// The overrides applied, as given: `NAME=VALUES` for `--axis`, `--set SECTION.KEY=VALUE`
    /// for `--set` (`sets::as_set`).
    pub overrides: Vec<String>,
    /// The source text with every value the sweep sets under a credential's name (`HF_TOKEN`
    /// in `[env]` or `[env_axes]`) replaced by its label (`results::manifest::
    /// sweep_secret_label`): what a run directory stores. None when it sets none.
    pub masked_text: Option<String>,
}

/// The first pair (i, j), i < j, of items that read the same (by their text: values of one
/// axis have one type, so equal text is an equal value). Linear time: axes can be long.
pub(crate) fn first_duplicate<T: std::fmt::Debug>(items: &[T]) -> Option<(usize, usize)> {
    let mut seen = std::collections::HashMap::with_capacity(items.len());
    items
        .iter()
        .enumerate()
        .find_map(|(j, x)| seen.insert(format!("{x:?}"), j).map(|i| (i, j)))
}

/// The most env combinations (the product of the [env_axes] lengths) a sweep may have
/// (docs/sweep-files.md "Limits").
pub const MAX_ENV_COMBOS: usize = 4096;

/// The longest sweep name (docs/sweep-files.md "Limits"): it names the run directory, with a timestamp and
/// a shard suffix after it, within the file system's 255 bytes.
pub const MAX_NAME: usize = 100;

/// The largest sweep file read, in bytes (docs/sweep-files.md "Limits"): a sweep is a few hundred lines.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

pub(crate) fn op_names() -> String {
    OpKind::ALL
        .iter()
        .map(|o| o.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Number of slots in a combination: every op parameter plus `solver`.
pub fn slot_count(op: OpKind) -> usize {
    op.params().len() + 1
}

pub(crate) fn slot_of(op: OpKind, name: &str) -> Option<usize> {
    if name == op::SOLVER {
        return Some(op.params().len());
    }
    op.params().iter().position(|p| p.name == name)
}

pub(crate) fn slot_type(op: OpKind, slot: usize) -> Ty {
    match op.params().get(slot).map(|p| p.kind) {
        Some(ParamKind::Int { .. } | ParamKind::Float { .. }) => Ty::Num,
        Some(ParamKind::Bool) => Ty::Bool,
        _ => Ty::Str,
    }
}

pub(crate) fn axis_names(op: OpKind) -> String {
    let mut v: Vec<&str> = op.params().iter().map(|p| p.name).collect();
    v.push(op::SOLVER);
    v.join(", ")
}

/// Checks one value for an axis; solver names are checked against the backends' names.
pub(crate) fn check_value(op: OpKind, slot: usize, v: &Value) -> Result<(), String> {
    match op.params().get(slot) {
        Some(def) => def.check(v),
        None => match v {
            Value::Str(s) if crate::backend::registry::is_known_solver(op, s) => Ok(()),
            Value::Str(s) => Err(format!(
                "unknown solver `{s}` for {}, expected one of: default, all, {} (or solver#<id>)",
                op.name(),
                crate::backend::registry::solver_names(op).join(", ")
            )),
            other => Err(format!(
                "`solver` expects a string, found {}",
                other.type_name()
            )),
        },
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
