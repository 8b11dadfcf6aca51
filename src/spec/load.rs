//! The steps of `load_str`, in the order it takes them (and so the order its errors come in):
//! the header keys (name, description, op, backend), the dimensions (`[axes]`, `[zip.*]`,
//! `[[cases]]`), the filters (`drop`), the environment (`[env]`, `[env_axes]`) and the policies
//! (`[limits]`, `[timing]`, `[verify]`, `--set`). Each reads the parsed top-level table.

use super::error::SpecError;
use super::filter::Filter;
use super::policy::{Limits, TimingPolicy, VerifyPolicy};
use super::reader::{Cx, Sp};
use super::{
    cases,
    model::{Axis, Dim, MAX_ENV_COMBOS, MAX_NAME, first_duplicate, slot_of, slot_type},
    sets,
};
use crate::op::OpKind;
use crate::op::value::Value;
use std::borrow::Cow;
use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The header keys: what the sweep is called and what it runs where.
pub(super) struct Header {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) op: OpKind,
    /// One or more backends, in the order named (`["auto"]` when absent).
    pub(super) backends: Vec<String>,
}

/// Reads `name`, `description`, `op` and `backend`; `root_span` is where a missing `op` is
/// reported.
pub(super) fn header(
    cx: &Cx,
    root: &DeTable,
    root_span: Range<usize>,
) -> Result<Header, SpecError> {
    let name = name(cx, root)?;
    let description = match root.get("description") {
        Some(v) => cx.string(v, "description")?,
        None => String::new(),
    };
    let op = op(cx, root, root_span)?;
    let backends = backends(cx, root)?;
    Ok(Header {
        name,
        description,
        op,
        backends,
    })
}

/// The sweep's name: required, at most `MAX_NAME` characters, and fit to name a directory.
pub(super) fn name(cx: &Cx, root: &DeTable) -> Result<String, SpecError> {
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
    Ok(name)
}

/// The op: required, one of `OpKind::ALL`.
pub(super) fn op(cx: &Cx, root: &DeTable, root_span: Range<usize>) -> Result<OpKind, SpecError> {
    match root.get("op") {
        Some(v) => {
            let s = cx.string(v, "op")?;
            OpKind::parse(&s).ok_or_else(|| {
                cx.err(
                    v.span(),
                    format!(
                        "unknown op `{s}`, expected one of: {}",
                        super::model::op_names()
                    ),
                )
            })
        }
        None => Err(cx.err(
            root_span.start..root_span.start,
            format!(
                "missing key `op`, expected one of: {}",
                super::model::op_names()
            ),
        )),
    }
}

/// The backends: a name (`backend = "cpu"`) or a list of distinct names (`backend = ["cpu",
/// "torch"]`), each one `backend::registry::check_name` knows; `auto` when absent.
pub(super) fn backends(cx: &Cx, root: &DeTable) -> Result<Vec<String>, SpecError> {
    Ok(names(
        cx,
        root,
        "backend",
        "a backend name",
        crate::backend::registry::check_name,
    )?
    .unwrap_or_else(|| vec!["auto".to_string()]))
}

/// The ROCm trees the sweep runs on, side by side: a path (`rocm = "/opt/rocm-6.4.1"`) or a
/// list of distinct paths (`rocm = ["/opt/rocm-5.7", "~/venvs/gfx1010"]`), as `--rocm` takes
/// them; none when absent (the tree `--rocm`, `$ROCM_PATH` or the environment gives).
pub(super) fn rocm_trees(cx: &Cx, root: &DeTable) -> Result<Vec<String>, SpecError> {
    let non_empty = |s: &str| {
        if s.trim().is_empty() {
            Err("an empty ROCm tree path".to_string())
        } else {
            Ok(())
        }
    };
    Ok(names(cx, root, "rocm", "a ROCm tree's path", non_empty)?.unwrap_or_default())
}

/// A top-level key holding one string or a non-empty list of distinct strings, each checked by
/// `check`; None when the key is absent.
fn names(
    cx: &Cx,
    root: &DeTable,
    key: &str,
    what: &str,
    check: impl Fn(&str) -> Result<(), String>,
) -> Result<Option<Vec<String>>, SpecError> {
    let Some(v) = root.get(key) else {
        return Ok(None);
    };
    let expected = format!("{what} or a list of them");
    let items: Vec<&Sp> = match v.get_ref() {
        DeValue::Array(a) if !a.is_empty() => a.iter().collect(),
        DeValue::Array(_) => {
            return Err(cx.err(
                v.span(),
                format!("`{key}` is an empty list, expected {expected}"),
            ));
        }
        _ => vec![v],
    };
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let s = match item.get_ref() {
            DeValue::String(s) => s.to_string(),
            _ => return Err(cx.type_err(item, key, &expected)),
        };
        check(&s).map_err(|m| cx.err(item.span(), m))?;
        if out.contains(&s) {
            return Err(cx.err(item.span(), format!("`{s}` is named twice in `{key}`")));
        }
        out.push(s);
    }
    Ok(Some(out))
}

/// The product's dimensions as the file gives them: one per `[axes]` key, one per zip group,
/// then `[[cases]]`; no axis may be named twice across them.
pub(super) fn dims(cx: &Cx, root: &DeTable, op: OpKind) -> Result<Vec<Dim>, SpecError> {
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
            dims.push(zip_group(cx, op, group, body, &mut seen)?);
        }
    }
    if let Some(list) = root.get("cases") {
        dims.push(cases::read(cx, op, list, &mut seen)?);
    }
    Ok(dims)
}

/// One `[zip.<group>]` table: axes of equal length that vary together, no row given twice.
fn zip_group(
    cx: &Cx,
    op: OpKind,
    group: &Spanned<Cow<str>>,
    body: &Sp,
    seen: &mut Vec<(String, Range<usize>)>,
) -> Result<Dim, SpecError> {
    let table = cx.table(body, &format!("zip.{}", group.get_ref()))?;
    let mut axes: Vec<Axis> = Vec::new();
    let mut first: Option<(String, usize)> = None;
    for (key, val) in table.iter() {
        let axis = cx.axis(op, key, val, seen, false)?;
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
    Ok(Dim {
        group: Some(group.get_ref().to_string()),
        axes,
        weights: Vec::new(),
    })
}

/// The `drop` filters, compiled against the axes the sweep actually varies (`dims`, after the
/// overrides).
pub(super) fn filters(
    cx: &Cx,
    root: &DeTable,
    op: OpKind,
    dims: &[Dim],
) -> Result<Vec<Filter>, SpecError> {
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
    let Some(drop) = root.get("drop") else {
        return Ok(filters);
    };
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
                filter_error(cx, op, &axis_slots, span, msg)
            },
        )?;
        filters.push(f);
    }
    Ok(filters)
}

/// A filter's compile error at `span`: a name the op has but the sweep does not vary says so,
/// and an unknown name gets the sweep's axes as help.
fn filter_error(
    cx: &Cx,
    op: OpKind,
    axis_slots: &[(String, usize)],
    span: Range<usize>,
    msg: String,
) -> SpecError {
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
}

/// The fixed `[env]` values, in file order.
pub(super) fn env(cx: &Cx, root: &DeTable) -> Result<Vec<(String, String)>, SpecError> {
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
    Ok(env)
}

/// `text` with the value of every `[env]` and `[env_axes]` variable whose name looks like a
/// credential's replaced by its label (a TOML string, so the text still parses and expands to
/// the same combinations, by label); None when there is none.
pub(super) fn masked_text(root: &DeTable, text: &str) -> Option<String> {
    use super::secret::{is_secret, sweep_secret_label};
    let mut spans: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for section in ["env", "env_axes"] {
        let Some(DeValue::Table(t)) = root.get(section).map(|v| v.get_ref()) else {
            continue;
        };
        for (key, val) in t.iter() {
            if !is_secret(key.get_ref()) {
                continue;
            }
            let items: Vec<&Sp> = match val.get_ref() {
                DeValue::Array(items) => items.iter().collect(),
                _ => vec![val],
            };
            for item in items {
                if let DeValue::String(s) = item.get_ref() {
                    spans.push((item.span(), format!("\"{}\"", sweep_secret_label(s))));
                }
            }
        }
    }
    if spans.is_empty() {
        return None;
    }
    spans.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut out = text.to_string();
    for (r, label) in spans {
        if r.end <= out.len() && out.is_char_boundary(r.start) && out.is_char_boundary(r.end) {
            out.replace_range(r, &label);
        }
    }
    Some(out)
}

/// The `[env_axes]`, in file order: none also a fixed `env` value, and at most
/// `MAX_ENV_COMBOS` combinations of them all.
pub(super) fn env_axes(
    cx: &Cx,
    root: &DeTable,
    env: &[(String, String)],
) -> Result<Vec<(String, Vec<String>)>, SpecError> {
    let mut env_axes = Vec::new();
    let Some(t) = root.get("env_axes") else {
        return Ok(env_axes);
    };
    for (key, val) in cx.table(t, "env_axes")?.iter() {
        let name = cx.env_name(key)?;
        if env.iter().any(|(n, _)| *n == name) {
            return Err(cx.err(
                key.span(),
                format!("`{name}` is both a fixed [env] value and an env axis"),
            ));
        }
        let values = env_axis_values(cx, &name, val)?;
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
    Ok(env_axes)
}

/// The values of env axis `name`: a string or an array of them, at least one, none twice.
fn env_axis_values(cx: &Cx, name: &str, val: &Sp) -> Result<Vec<String>, SpecError> {
    let values: Vec<String> = match val.get_ref() {
        DeValue::Array(items) => items
            .iter()
            .map(|v| cx.env_value(v, name))
            .collect::<Result<_, _>>()?,
        _ => vec![cx.env_value(val, name)?],
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
    Ok(values)
}

/// `[limits]`, `[timing]` and `[verify]`, then the `--set` overrides over them; `rotating_mib`
/// is refused for any op but gemm.
pub(super) fn policies(
    cx: &Cx,
    root: &DeTable,
    op: OpKind,
    overrides: &[String],
) -> Result<(Limits, TimingPolicy, VerifyPolicy), SpecError> {
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
    Ok((limits, timing, verify))
}
