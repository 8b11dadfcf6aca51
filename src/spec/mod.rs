//! Sweep files: parsing with spans, CLI axis overrides, and streaming expansion into cases.
//!
//! Every error names the file, line and column of the offending text and what was expected; a
//! sweep that loads is valid all the way down (axis values checked against the op's parameters,
//! filters type-checked), so expansion itself cannot fail.

pub mod axis;
pub mod error;
pub mod expand;
pub mod filter;
pub mod policy;
pub mod value;

use crate::op::{self, OpKind, ParamKind};
use error::SpecError;
use filter::{Filter, Ty};
use policy::{Limits, TimingPolicy, VerifyPolicy};
use sha2::{Digest, Sha256};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use toml::de::{DeTable, DeValue};
use value::Value;

type Sp<'a> = toml::Spanned<DeValue<'a>>;

pub const BACKENDS: &[&str] = &["auto", "cpu", "cuda", "rocm"];

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "op",
    "backend",
    "axes",
    "zip",
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

/// One dimension of the product: a single axis, or a zip group whose axes vary together.
#[derive(Clone, Debug)]
pub struct Dim {
    pub group: Option<String>,
    pub axes: Vec<Axis>,
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
    /// The `--axis` overrides applied, as given.
    pub overrides: Vec<String>,
}

/// Reads a sweep file from disk; an unreadable file is reported against its path.
pub fn load(path: &Path, overrides: &[String]) -> Result<Sweep, SpecError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        SpecError::at(
            &shown,
            &Arc::new(String::new()),
            0..0,
            format!("cannot read sweep file: {e}"),
        )
    })?;
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
            let axis = cx.axis(op, key, val, &seen)?;
            seen.push((axis.name.clone(), key.span()));
            dims.push(Dim {
                group: None,
                axes: vec![axis],
            });
        }
    }
    if let Some(zip) = root.get("zip") {
        for (group, body) in cx.table(zip, "zip")?.iter() {
            let table = cx.table(body, &format!("zip.{}", group.get_ref()))?;
            let mut axes: Vec<Axis> = Vec::new();
            let mut first: Option<(String, usize)> = None;
            for (key, val) in table.iter() {
                let axis = cx.axis(op, key, val, &seen)?;
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
            dims.push(Dim {
                group: Some(group.get_ref().to_string()),
                axes,
            });
        }
    }

    for ov in overrides {
        apply_override(op, &mut dims, ov)?;
    }

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
            env.push((cx.env_name(key)?, cx.env_value(val, key.get_ref())?));
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
            env_axes.push((name, values));
        }
    }

    let mut limits = Limits::default();
    if let Some(t) = root.get("limits") {
        for (key, val) in cx.table(t, "limits")?.iter() {
            let slot = limits.get_mut(key.get_ref()).ok_or_else(|| {
                cx.err(
                    key.span(),
                    format!(
                        "unknown key `{}` at [limits], expected one of: {}, grace",
                        key.get_ref(),
                        policy::PHASES.join(", ")
                    ),
                )
            })?;
            *slot = cx.positive_seconds(val, key.get_ref())?;
        }
    }
    let timing = cx.timing(root.get("timing"))?;
    let verify = cx.verify(root.get("verify"))?;

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
            Value::Str(s) if op.is_known_solver(s) => Ok(()),
            Value::Str(s) => Err(format!(
                "unknown solver `{s}` for {}, expected one of: {} (or solver#<id>)",
                op.name(),
                op.solver_names().join(", ")
            )),
            other => Err(format!(
                "`solver` expects a string, found {}",
                other.type_name()
            )),
        },
    }
}

fn apply_override(op: OpKind, dims: &mut Vec<Dim>, arg: &str) -> Result<(), SpecError> {
    let text = Arc::new(arg.to_string());
    let cx = Cx {
        file: "--axis",
        text: &text,
    };
    let Some((raw_name, list)) = arg.split_once('=') else {
        return Err(cx.err(
            0..arg.len(),
            format!("expected NAME=VALUES (e.g. c_in=16,32), found `{arg}`"),
        ));
    };
    let name = raw_name.trim();
    let name_start = raw_name.len() - raw_name.trim_start().len();
    let slot = slot_of(op, name).ok_or_else(|| {
        cx.err(
            name_start..name_start + name.len(),
            format!(
                "unknown axis `{name}` for op {}, expected one of: {}",
                op.name(),
                axis_names(op)
            ),
        )
    })?;
    // Offsets of list items are relative to the text after `=`, whatever spacing the name has.
    let base = raw_name.len() + 1;
    let is_int_axis = matches!(
        op.params().get(slot).map(|p| p.kind),
        Some(ParamKind::Int { .. })
    );
    let mut values = Vec::new();
    for (off, item) in axis::split_items(list) {
        let start = base + off;
        let lead = item.len() - item.trim_start().len();
        let span = start + lead..start + item.trim_end().len();
        if item.trim().is_empty() {
            return Err(cx.err(span, format!("empty value in the list for `{name}`")));
        }
        if axis::is_generator(item) {
            if !is_int_axis {
                return Err(cx.err(
                    span,
                    format!(
                        "`{name}` is not an integer axis, so it cannot use `{}`",
                        item.trim()
                    ),
                ));
            }
            let v = axis::expand_generator(item, start).map_err(|(s, m)| cx.err(s, m))?;
            for n in v {
                let v = Value::Int(n);
                check_value(op, slot, &v).map_err(|m| cx.err(span.clone(), m))?;
                values.push(v);
            }
        } else {
            let v = axis::parse_scalar(item);
            check_value(op, slot, &v).map_err(|m| cx.err(span.clone(), m))?;
            values.push(v);
        }
    }
    let new_len = values.len();
    for d in dims.iter_mut() {
        if let Some(pos) = d.axes.iter().position(|a| a.slot == slot) {
            if d.axes.len() > 1 && d.len() != new_len {
                let others: Vec<&str> = d
                    .axes
                    .iter()
                    .filter(|a| a.slot != slot)
                    .map(|a| a.name.as_str())
                    .collect();
                return Err(cx.err(base..arg.len(), format!(
                    "`{name}` varies together with {} in zip group `{}` ({} values each), but the override gives {new_len}",
                    others.join(", "), d.group.as_deref().unwrap_or(""), d.len()
                )));
            }
            d.axes[pos].values = values;
            return Ok(());
        }
    }
    dims.push(Dim {
        group: None,
        axes: vec![Axis {
            name: name.to_string(),
            slot,
            values,
        }],
    });
    Ok(())
}

/// Error context: the file name and text every span points into.
struct Cx<'a> {
    file: &'a str,
    text: &'a Arc<String>,
}

impl Cx<'_> {
    fn err(&self, span: Range<usize>, msg: impl Into<String>) -> SpecError {
        SpecError::at(self.file, self.text, span, msg)
    }

    fn type_err(&self, v: &Sp, key: &str, expected: &str) -> SpecError {
        self.err(
            v.span(),
            format!("`{key}` expects {expected}, found {}", de_type(v.get_ref())),
        )
    }

    fn deny_unknown(&self, t: &DeTable, known: &[&str], place: &str) -> Result<(), SpecError> {
        for (key, _) in t.iter() {
            if !known.contains(&key.get_ref().as_ref()) {
                return Err(self.err(
                    key.span(),
                    format!(
                        "unknown key `{}` at {place}, expected one of: {}",
                        key.get_ref(),
                        known.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    fn string(&self, v: &Sp, key: &str) -> Result<String, SpecError> {
        match v.get_ref() {
            DeValue::String(s) => Ok(s.to_string()),
            _ => Err(self.type_err(v, key, "a string")),
        }
    }

    fn table<'t>(&self, v: &'t Sp<'t>, key: &str) -> Result<&'t DeTable<'t>, SpecError> {
        match v.get_ref() {
            DeValue::Table(t) => Ok(t),
            _ => Err(self.type_err(v, key, &format!("a table ([{key}])"))),
        }
    }

    /// Byte offset of a basic string's content when the file spells it without escapes, so that
    /// errors inside it can point at the exact character.
    fn string_content_offset(&self, v: &Sp, content: &str) -> Option<usize> {
        let span = v.span();
        let raw = self.text.get(span.clone())?;
        let inner = raw.get(1..raw.len().checked_sub(1)?)?;
        (inner == content).then_some(span.start + 1)
    }

    fn scalar(&self, v: &Sp, key: &str) -> Result<Value, SpecError> {
        Ok(match v.get_ref() {
            DeValue::Integer(i) => {
                let clean = i.as_str().replace('_', "");
                let n = i64::from_str_radix(&clean, i.radix()).map_err(|_| {
                    self.err(
                        v.span(),
                        format!(
                            "integer `{}` overflows a 64-bit signed integer",
                            self.snippet(v)
                        ),
                    )
                })?;
                Value::Int(n)
            }
            DeValue::Float(f) => {
                let n: f64 = f
                    .as_str()
                    .replace('_', "")
                    .parse()
                    .map_err(|_| self.err(v.span(), "bad float"))?;
                Value::Float(n)
            }
            DeValue::Boolean(b) => Value::Bool(*b),
            DeValue::String(s) => Value::Str(s.to_string()),
            other => {
                return Err(self.err(
                    v.span(),
                    format!(
                        "`{key}` values must be numbers, booleans or strings, found {}",
                        de_type(other)
                    ),
                ));
            }
        })
    }

    fn snippet(&self, v: &Sp) -> String {
        self.text.get(v.span()).unwrap_or("").to_string()
    }

    /// Values of one item: a scalar, or a generator string expanded to integers.
    fn items(
        &self,
        op: OpKind,
        slot: usize,
        key: &str,
        v: &Sp,
        out: &mut Vec<Value>,
    ) -> Result<(), SpecError> {
        if let DeValue::String(s) = v.get_ref()
            && axis::is_generator(s)
        {
            if !matches!(
                op.params().get(slot).map(|p| p.kind),
                Some(ParamKind::Int { .. })
            ) {
                return Err(self.err(
                    v.span(),
                    format!(
                        "`{key}` is not an integer axis, so it cannot use `{}`",
                        s.trim()
                    ),
                ));
            }
            let base = self.string_content_offset(v, s);
            let vals = axis::expand_generator(s, base.unwrap_or(v.span().start))
                .map_err(|(span, m)| self.err(if base.is_some() { span } else { v.span() }, m))?;
            for n in vals {
                let val = Value::Int(n);
                check_value(op, slot, &val).map_err(|m| self.err(v.span(), m))?;
                out.push(val);
            }
            return Ok(());
        }
        let val = self.scalar(v, key)?;
        check_value(op, slot, &val).map_err(|m| self.err(v.span(), m))?;
        out.push(val);
        Ok(())
    }

    fn axis(
        &self,
        op: OpKind,
        key: &toml::Spanned<std::borrow::Cow<str>>,
        v: &Sp,
        seen: &[(String, Range<usize>)],
    ) -> Result<Axis, SpecError> {
        let name = key.get_ref().to_string();
        let slot = slot_of(op, &name).ok_or_else(|| {
            let e = self.err(
                key.span(),
                format!(
                    "unknown axis `{name}` for op {}, expected one of: {}",
                    op.name(),
                    axis_names(op)
                ),
            );
            if TOP_KEYS.contains(&name.as_str()) {
                // TOML puts every key after a [table] header into that table.
                e.with_help(format!(
                    "`{name}` is a top-level key: move it above the first [table] header"
                ))
            } else {
                e
            }
        })?;
        if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
            let (line, _) = line_col(self.text, first.start);
            return Err(self.err(
                key.span(),
                format!("duplicate axis `{name}`: it is already given on line {line}"),
            ));
        }
        let mut values = Vec::new();
        match v.get_ref() {
            DeValue::Array(items) => {
                for item in items.iter() {
                    self.items(op, slot, &name, item, &mut values)?;
                }
            }
            _ => self.items(op, slot, &name, v, &mut values)?,
        }
        if values.is_empty() {
            return Err(self.err(
                v.span(),
                format!("axis `{name}` is empty, expected at least one value"),
            ));
        }
        Ok(Axis { name, slot, values })
    }

    fn env_name(&self, key: &toml::Spanned<std::borrow::Cow<str>>) -> Result<String, SpecError> {
        let name = key.get_ref().to_string();
        let ok = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(self.err(
                key.span(),
                format!("`{name}` is not a valid environment variable name (letters, digits, `_`)"),
            ));
        }
        if name.starts_with("ROCSWEEP_") {
            return Err(self.err(
                key.span(),
                format!("`{name}`: names starting with ROCSWEEP_ are reserved for rocsweep itself"),
            ));
        }
        Ok(name)
    }

    fn env_value(&self, v: &Sp, name: &str) -> Result<String, SpecError> {
        match v.get_ref() {
            DeValue::String(s) if s.contains('\0') => {
                Err(self.err(v.span(), format!("value of `{name}` contains a NUL byte")))
            }
            DeValue::String(s) => Ok(s.to_string()),
            other => Err(self.err(
                v.span(),
                format!(
                    "env value of `{name}` must be a string, found {}: write {name} = \"{}\"",
                    de_type(other),
                    self.snippet(v)
                ),
            )),
        }
    }

    fn number(&self, v: &Sp, key: &str) -> Result<f64, SpecError> {
        match self.scalar(v, key)? {
            Value::Int(i) => Ok(i as f64),
            Value::Float(f) if f.is_finite() => Ok(f),
            _ => Err(self.type_err(v, key, "a finite number")),
        }
    }

    fn positive_seconds(&self, v: &Sp, key: &str) -> Result<f64, SpecError> {
        let n = self.number(v, key)?;
        if n <= 0.0 {
            return Err(self.err(
                v.span(),
                format!("`{key}` must be a positive number of seconds, found {n}"),
            ));
        }
        Ok(n)
    }

    fn count(&self, v: &Sp, key: &str, min: i64) -> Result<u32, SpecError> {
        match self.scalar(v, key)? {
            Value::Int(i) if i >= min && i <= u32::MAX as i64 => Ok(i as u32),
            Value::Int(i) => Err(self.err(
                v.span(),
                format!("`{key}` must be an integer of at least {min}, found {i}"),
            )),
            _ => Err(self.type_err(v, key, "an integer")),
        }
    }

    fn boolean(&self, v: &Sp, key: &str) -> Result<bool, SpecError> {
        match v.get_ref() {
            DeValue::Boolean(b) => Ok(*b),
            _ => Err(self.type_err(v, key, "a boolean (true or false)")),
        }
    }

    fn timing(&self, t: Option<&Sp>) -> Result<TimingPolicy, SpecError> {
        let mut p = TimingPolicy::default();
        let Some(t) = t else { return Ok(p) };
        let table = self.table(t, "timing")?;
        let keys = [
            "enabled",
            "warmup",
            "min_samples",
            "max_samples",
            "target_noise",
            "max_time",
            "flush_cache",
        ];
        self.deny_unknown(table, &keys, "[timing]")?;
        for (key, v) in table.iter() {
            let k = key.get_ref().as_ref();
            match k {
                "enabled" => p.enabled = self.boolean(v, k)?,
                "warmup" => p.warmup = self.count(v, k, 0)?,
                "min_samples" => p.min_samples = self.count(v, k, 1)?,
                "max_samples" => p.max_samples = self.count(v, k, 1)?,
                "target_noise" => {
                    p.target_noise = self.number(v, k)?;
                    if p.target_noise < 0.0 {
                        return Err(self.err(
                            v.span(),
                            "`target_noise` must be at least 0 (0 turns the noise target off)",
                        ));
                    }
                }
                "max_time" => p.max_time = self.positive_seconds(v, k)?,
                _ => p.flush_cache = self.boolean(v, k)?,
            }
        }
        if p.max_samples < p.min_samples {
            // Point at whichever of the two the file sets (max_samples first), not the table.
            let at = ["max_samples", "min_samples"]
                .iter()
                .find_map(|k| table.get(*k))
                .map_or(t.span(), |v| v.span());
            return Err(self.err(
                at,
                format!(
                    "[timing] max_samples ({}) is smaller than min_samples ({})",
                    p.max_samples, p.min_samples
                ),
            ));
        }
        Ok(p)
    }

    fn verify(&self, t: Option<&Sp>) -> Result<VerifyPolicy, SpecError> {
        let mut p = VerifyPolicy::default();
        let Some(t) = t else { return Ok(p) };
        let table = self.table(t, "verify")?;
        self.deny_unknown(
            table,
            &["enabled", "tolerance_scale", "max_reference_gflop"],
            "[verify]",
        )?;
        for (key, v) in table.iter() {
            let k = key.get_ref().as_ref();
            match k {
                "enabled" => p.enabled = self.boolean(v, k)?,
                "tolerance_scale" => {
                    p.tolerance_scale = self.number(v, k)?;
                    if p.tolerance_scale <= 0.0 {
                        return Err(self.err(v.span(), "`tolerance_scale` must be positive"));
                    }
                }
                _ => {
                    p.max_reference_gflop = self.number(v, k)?;
                    if p.max_reference_gflop < 0.0 {
                        return Err(self.err(v.span(), "`max_reference_gflop` must be at least 0"));
                    }
                }
            }
        }
        Ok(p)
    }
}

fn de_type(v: &DeValue) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a datetime",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
