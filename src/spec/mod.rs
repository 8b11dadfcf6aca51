//! Sweep files: parsing with spans, CLI axis overrides, and streaming expansion into cases.
//!
//! Every error names the file, line and column of the offending text and what was expected; a
//! sweep that loads is valid all the way down (axis values checked against the op's parameters,
//! filters type-checked), so expansion itself cannot fail.

pub mod axis;
pub mod cases;
pub mod code_vars;
pub mod error;
pub mod expand;
pub mod filter;
mod load;
mod overrides;
pub mod policy;
mod reader;
pub mod sets;

use crate::op::value::Value;
use crate::op::{self, OpKind, ParamKind};
use error::SpecError;
use filter::{Filter, Ty};
use overrides::apply_overrides;
use policy::{Limits, TimingPolicy, VerifyPolicy};
use reader::Cx;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use toml::de::DeTable;

pub const BACKENDS: &[&str] = &["auto", "cpu", "cuda", "rocm", "torch"];

const TOP_KEYS: &[&str] = &[
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

/// The most env combinations (the product of the [env_axes] lengths) a sweep may have (README
/// "Limits").
pub const MAX_ENV_COMBOS: usize = 4096;

/// The longest sweep name (README "Limits"): it names the run directory, with a timestamp and
/// a shard suffix after it, within the file system's 255 bytes.
pub const MAX_NAME: usize = 100;

/// The largest sweep file read, in bytes (README "Limits"): a sweep is a few hundred lines.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// Reads a sweep file from disk; an unreadable file is reported against its path.
pub fn load(path: &Path, overrides: &[String]) -> Result<Sweep, SpecError> {
    let shown = path.display().to_string();
    let fail = |why: String| SpecError::whole_file(&shown, why);
    // Checked before opening: a FIFO or a device would block or never end.
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read sweep file: {e}")))?;
    if !meta.is_file() {
        return Err(fail(
            "cannot read sweep file: not a regular file (a directory, FIFO or device)".into(),
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(fail(format!(
            "the sweep file is {} bytes, more than the limit of {MAX_FILE_BYTES} (4 MiB)",
            meta.len()
        )));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| {
            use std::io::Read;
            // Bounded even if the file grows between the check and the read.
            f.take(MAX_FILE_BYTES + 1).read_to_string(&mut text)
        })
        .map_err(|e| fail(format!("cannot read sweep file: {e}")))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(fail(format!(
            "the sweep file grew past the limit of {MAX_FILE_BYTES} bytes while it was read"
        )));
    }
    load_str(&shown, &text, overrides)
}

/// Parses and validates sweep text; `path` is only used in messages and the manifest.
pub fn load_str(path: &str, text: &str, overrides: &[String]) -> Result<Sweep, SpecError> {
    let src = Arc::new(text.to_string());
    let cx = Cx {
        file: path,
        text: &src,
    };
    let root = DeTable::parse(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        cx.err(span, format!("invalid TOML: {}", e.message().trim()))
    })?;
    let root_span = root.span();
    let root = root.into_inner();
    cx.deny_unknown(&root, TOP_KEYS, "top level")?;

    let load::Header {
        name,
        description,
        op,
        backends,
    } = load::header(&cx, &root, root_span)?;
    let backend = backends.first().cloned().unwrap_or_else(|| "auto".into());
    let rocm = load::rocm_trees(&cx, &root)?;
    let mut dims = load::dims(&cx, &root, op)?;
    let axis_overrides: Vec<String> = overrides
        .iter()
        .filter(|o| sets::as_set(o).is_none())
        .cloned()
        .collect();
    apply_overrides(op, &mut dims, &axis_overrides)?;
    // Filters resolve names against the axes the sweep actually varies (after overrides).
    let filters = load::filters(&cx, &root, op, &dims)?;
    let env = load::env(&cx, &root)?;
    let env_axes = load::env_axes(&cx, &root, &env)?;
    let (limits, timing, verify) = load::policies(&cx, &root, op, overrides)?;
    let masked_text = load::masked_text(&root, text);

    let sha256 = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(Sweep {
        name,
        description,
        op,
        backend,
        backends,
        rocm,
        dims,
        filters,
        env,
        env_axes,
        limits,
        timing,
        verify,
        source: Source {
            path: path.to_string(),
            text: src.clone(),
            sha256,
        },
        overrides: overrides.to_vec(),
        masked_text,
    })
}

fn op_names() -> String {
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

fn slot_of(op: OpKind, name: &str) -> Option<usize> {
    if name == op::SOLVER {
        return Some(op.params().len());
    }
    op.params().iter().position(|p| p.name == name)
}

fn slot_type(op: OpKind, slot: usize) -> Ty {
    match op.params().get(slot).map(|p| p.kind) {
        Some(ParamKind::Int { .. } | ParamKind::Float { .. }) => Ty::Num,
        Some(ParamKind::Bool) => Ty::Bool,
        _ => Ty::Str,
    }
}

fn axis_names(op: OpKind) -> String {
    let mut v: Vec<&str> = op.params().iter().map(|p| p.name).collect();
    v.push(op::SOLVER);
    v.join(", ")
}

/// Checks one value for an axis; solver names are checked against the backends' names.
fn check_value(op: OpKind, slot: usize, v: &Value) -> Result<(), String> {
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
