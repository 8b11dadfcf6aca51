//! Sweep files: parsing with spans, CLI axis overrides, and streaming expansion into cases.
//!
//! Every error names the file, line and column of the offending text and what was expected; a
//! sweep that loads is valid all the way down (axis values checked against the op's parameters,
//! filters type-checked), so expansion itself cannot fail.

pub mod axis;
pub mod cases;
pub mod error;
pub mod expand;
pub mod filter;
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
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use toml::de::{DeTable, DeValue};

pub const BACKENDS: &[&str] = &["auto", "cpu", "cuda", "rocm"];

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "op",
    "backend",
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
    /// Backend named by the file (`auto` when absent); the CLI's `--backend` wins over it.
    pub backend: String,
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
}

/// Reads a sweep file from disk; an unreadable file is reported against its path.
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

pub fn load(path: &Path, overrides: &[String]) -> Result<Sweep, SpecError> {
    let shown = path.display().to_string();
    let fail = |why: String| SpecError::at(&shown, &Arc::new(String::new()), 0..0, why);
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

    let name = match root.get("name") {
        Some(v) => cx.string(v, "name")?,
        None => {
            return Err(cx.err(
                0..0,
                "missing key `name`, expected e.g. name = \"my-sweep\"",
            ));
        }
    };
    if name.len() > MAX_NAME {
        let v = root.get("name").map_or(0..0, |v| v.span());
        return Err(cx.err(
            v,
            format!(
                "name is {} characters long, more than the limit of {MAX_NAME} (it names the run directory)",
                name.len()
            ),
        ));
    }
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        let v = root.get("name").map_or(0..0, |v| v.span());
        return Err(cx.err(v, format!("name `{name}` must be non-empty and use only letters, digits, `-`, `_` and `.` (it names the run directory)")));
    }
    let description = match root.get("description") {
        Some(v) => cx.string(v, "description")?,
        None => String::new(),
    };
    let op = match root.get("op") {
        Some(v) => {
            let s = cx.string(v, "op")?;
            OpKind::parse(&s).ok_or_else(|| {
                cx.err(
                    v.span(),
                    format!("unknown op `{s}`, expected one of: {}", op_names()),
                )
            })?
        }
        None => {
            return Err(cx.err(
                root_span.start..root_span.start,
                format!("missing key `op`, expected one of: {}", op_names()),
            ));
        }
    };
    let backend = match root.get("backend") {
        Some(v) => {
            let s = cx.string(v, "backend")?;
            if !BACKENDS.contains(&s.as_str()) {
                return Err(cx.err(
                    v.span(),
                    format!(
                        "unknown backend `{s}`, expected one of: {}",
                        BACKENDS.join(", ")
                    ),
                ));
            }
            s
        }
        None => "auto".to_string(),
    };

    let mut dims: Vec<Dim> = Vec::new();
    let mut seen: Vec<(String, Range<usize>)> = Vec::new();
    if let Some(axes) = root.get("axes") {
        let table = cx.table(axes, "axes")?;
        for (key, val) in table.iter() {
            let axis = cx.axis(op, key, val, &seen, true)?;
            seen.push((axis.name.clone(), key.span()));
            dims.push(Dim {
                group: None,
                axes: vec![axis],
                weights: Vec::new(),
            });
        }
    }
    if let Some(zip) = root.get("zip") {
        for (group, body) in cx.table(zip, "zip")?.iter() {
            let table = cx.table(body, &format!("zip.{}", group.get_ref()))?;
            let mut axes: Vec<Axis> = Vec::new();
            let mut first: Option<(String, usize)> = None;
            for (key, val) in table.iter() {
                let axis = cx.axis(op, key, val, &seen, false)?;
                seen.push((axis.name.clone(), key.span()));
                match &first {
                    None => first = Some((axis.name.clone(), axis.values.len())),
                    Some((fname, flen)) if *flen != axis.values.len() => {
                        return Err(cx.err(val.span(), format!(
                            "zip group `{}`: `{}` has {} values but `{fname}` has {flen}; axes that vary together need the same count",
                            group.get_ref(), axis.name, axis.values.len()
                        )));
                    }
                    Some(_) => {}
                }
                axes.push(axis);
            }
            if axes.is_empty() {
                return Err(cx.err(
                    body.span(),
                    format!(
                        "zip group `{}` is empty, expected at least one axis",
                        group.get_ref()
                    ),
                ));
            }
            let rows: Vec<Vec<&Value>> = (0..axes[0].values.len())
                .map(|r| axes.iter().map(|a| &a.values[r]).collect())
                .collect();
            if let Some((i, j)) = first_duplicate(&rows) {
                return Err(cx.err(
                    body.span(),
                    format!(
                        "zip group `{}`: rows {} and {} are the same ({}); each row may appear once",
                        group.get_ref(),
                        i + 1,
                        j + 1,
                        axes.iter()
                            .map(|a| format!("{} = {}", a.name, a.values[j]))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            dims.push(Dim {
                group: Some(group.get_ref().to_string()),
                axes,
                weights: Vec::new(),
            });
        }
    }
    if let Some(list) = root.get("cases") {
        dims.push(cases::read(&cx, op, list, &mut seen)?);
    }

    let axis_overrides: Vec<String> = overrides
        .iter()
        .filter(|o| sets::as_set(o).is_none())
        .cloned()
        .collect();
    apply_overrides(op, &mut dims, &axis_overrides)?;

    // Filters resolve names against the axes the sweep actually varies (after overrides).
    let axis_slots: Vec<(String, usize)> = dims
        .iter()
        .flat_map(|d| d.axes.iter().map(|a| (a.name.clone(), a.slot)))
        .collect();
    let resolve = |name: &str| {
        axis_slots
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, slot)| (*slot, slot_type(op, *slot)))
    };
    let mut filters = Vec::new();
    if let Some(drop) = root.get("drop") {
        let DeValue::Array(items) = drop.get_ref() else {
            return Err(cx.type_err(
                drop,
                "drop",
                "an array of strings, e.g. drop = [\"c_out < c_in\"]",
            ));
        };
        for item in items.iter() {
            let text = cx.string(item, "drop")?;
            let base = cx.string_content_offset(item, &text);
            let f = Filter::compile(&text, base.unwrap_or(item.span().start), &resolve).map_err(
                |(span, msg)| {
                    let span = if base.is_some() { span } else { item.span() };
                    let not_varied = msg
                        .strip_prefix("filter names unknown axis `")
                        .and_then(|r| r.strip_suffix('`'))
                        .filter(|name| slot_of(op, name).is_some())
                        .map(str::to_string);
                    let msg = match &not_varied {
                        Some(name) => format!(
                            "filter names `{name}`, a parameter of {} that this sweep does not vary; filters can only name axes",
                            op.name()
                        ),
                        None => msg,
                    };
                    let mut e = cx.err(span, msg.clone());
                    if msg.starts_with("filter names") {
                        let names: Vec<&str> = axis_slots.iter().map(|(n, _)| n.as_str()).collect();
                        e = e.with_help(if names.is_empty() {
                            "the sweep has no axes; a filter can only name axes it varies".into()
                        } else {
                            format!("the sweep's axes are: {}", names.join(", "))
                        });
                    }
                    e
                },
            )?;
            filters.push(f);
        }
    }

    let mut env = Vec::new();
    if let Some(t) = root.get("env") {
        for (key, val) in cx.table(t, "env")?.iter() {
            let name = cx.env_name(key)?;
            if matches!(val.get_ref(), DeValue::Array(_)) {
                return Err(cx.err(
                    val.span(),
                    format!(
                        "env value of `{name}` must be a string, found an array: values to try go under [env_axes] (`{name} = [\"1\", \"2\"]` there)"
                    ),
                ));
            }
            env.push((name, cx.env_value(val, key.get_ref())?));
        }
    }
    let mut env_axes = Vec::new();
    if let Some(t) = root.get("env_axes") {
        for (key, val) in cx.table(t, "env_axes")?.iter() {
            let name = cx.env_name(key)?;
            if env.iter().any(|(n, _)| *n == name) {
                return Err(cx.err(
                    key.span(),
                    format!("`{name}` is both a fixed [env] value and an env axis"),
                ));
            }
            let values: Vec<String> = match val.get_ref() {
                DeValue::Array(items) => items
                    .iter()
                    .map(|v| cx.env_value(v, &name))
                    .collect::<Result<_, _>>()?,
                _ => vec![cx.env_value(val, &name)?],
            };
            if values.is_empty() {
                return Err(cx.err(
                    val.span(),
                    format!("env axis `{name}` is empty, expected at least one value"),
                ));
            }
            if let Some((_, j)) = first_duplicate(&values) {
                return Err(cx.err(
                    val.span(),
                    format!(
                        "env axis `{name}` has the value \"{}\" more than once; each value may appear once",
                        values[j]
                    ),
                ));
            }
            let combos = env_axes
                .iter()
                .fold(values.len(), |n: usize, (_, v): &(String, Vec<String>)| {
                    n.saturating_mul(v.len())
                });
            if combos > MAX_ENV_COMBOS {
                return Err(cx.err(
                    key.span(),
                    format!(
                        "with `{name}` the env axes make {combos} combinations, more than the limit of {MAX_ENV_COMBOS}: each is a worker environment of its own; split the sweep"
                    ),
                ));
            }
            env_axes.push((name, values));
        }
    }

    let mut limits = Limits::default();
    if let Some(t) = root.get("limits") {
        cx.limits_into(&mut limits, t)?;
    }
    let mut timing = cx.timing(root.get("timing"))?;
    let mut verify = cx.verify(root.get("verify"))?;
    for set in overrides.iter().filter_map(|o| sets::as_set(o)) {
        sets::apply(set, &mut limits, &mut timing, &mut verify)?;
    }
    if timing.rotating_mib > 0 && op != OpKind::Gemm {
        let at = root
            .get("timing")
            .and_then(|t| t.get_ref().as_table())
            .and_then(|t| t.get("rotating_mib"))
            .map_or(0..0, |v| v.span());
        return Err(cx.err(
            at,
            format!(
                "`rotating_mib` applies to gemm only (its inputs are what rotate, as with hipblaslt-bench --rotating); this sweep's op is {}",
                op.name()
            ),
        ));
    }

    let sha256 = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(Sweep {
        name,
        description,
        op,
        backend,
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
            Value::Str(s) if crate::backend::is_known_solver(op, s) => Ok(()),
            Value::Str(s) => Err(format!(
                "unknown solver `{s}` for {}, expected one of: default, all, {} (or solver#<id>)",
                op.name(),
                crate::backend::solver_names(op).join(", ")
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
