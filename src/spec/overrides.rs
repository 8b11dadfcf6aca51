//! `--axis NAME=VALUES` overrides: replace an axis, add one, select rows of a zip group by
//! values its axis has, replace a zipped axis with as many new values as the group has rows, or
//! replace the group's rows when every axis of the group is given.

use super::error::SpecError;
use super::reader::Cx;
use super::{
    axis,
    model::{Axis, Dim, axis_names, check_value, slot_of},
};
use crate::op::value::Value;
use crate::op::{OpKind, ParamKind};
use std::sync::Arc;

/// Applies the `--axis` overrides in order. When every axis of a zip group is given the same
/// number of values, those overrides replace the group's rows together (`--axis c_in=8,24
/// --axis c_out=8,48` makes the pairs 8 -> 8 and 24 -> 48). After each, refuses a value of a
/// plain axis, or a row of a zip group, that would appear twice (the same case planned twice).
pub(super) fn apply_overrides(
    op: OpKind,
    dims: &mut Vec<Dim>,
    args: &[String],
) -> Result<(), SpecError> {
    let parsed = args
        .iter()
        .map(|a| parse(op, a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut consumed = vec![false; parsed.len()];
    for d in dims.iter_mut().filter(|d| d.axes.len() > 1) {
        // The last override of each axis of the group, as the one-at-a-time rule would leave it.
        let given: Vec<usize> = d
            .axes
            .iter()
            .filter_map(|a| parsed.iter().rposition(|p| p.slot == a.slot))
            .collect();
        if given.len() != d.axes.len() {
            continue;
        }
        let counts: Vec<usize> = given.iter().map(|&i| parsed[i].values.len()).collect();
        if counts.iter().any(|&n| n != counts[0]) {
            let odd = given
                .iter()
                .map(|&i| &parsed[i])
                .find(|p| p.values.len() != counts[0])
                .unwrap_or(&parsed[given[0]]);
            return Err(odd.err_values(format!(
                "every axis of zip group `{}` is given, but with different numbers of values ({}); give each the same number to replace the group's rows",
                d.group.as_deref().unwrap_or(""),
                d.axes
                    .iter()
                    .zip(&counts)
                    .map(|(a, n)| format!("{} {n}", a.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for (a, &i) in d.axes.iter_mut().zip(&given) {
            a.values = parsed[i].values.clone();
        }
        // New rows are new problems: the model's weights were the old rows'.
        d.weights.clear();
        for (i, p) in parsed.iter().enumerate() {
            if d.axes.iter().any(|a| a.slot == p.slot) {
                consumed[i] = true;
            }
        }
        if let Some(&i) = given.last() {
            refuse_duplicates(d, &parsed[i])?;
        }
    }
    for (p, done) in parsed.iter().zip(consumed) {
        if !done {
            place(dims, p)?;
            if let Some(d) = dims
                .iter()
                .find(|d| d.axes.iter().any(|a| a.slot == p.slot))
            {
                refuse_duplicates(d, p)?;
            }
        }
    }
    Ok(())
}

/// Refuses the override when its dimension now holds a row (or value) twice.
fn refuse_duplicates(d: &Dim, p: &Parsed) -> Result<(), SpecError> {
    let name = p.name.as_str();
    let rows: Vec<Vec<&Value>> = (0..d.axes.first().map_or(0, |a| a.values.len()))
        .map(|r| d.axes.iter().map(|a| &a.values[r]).collect())
        .collect();
    let Some((_, j)) = super::model::first_duplicate(&rows) else {
        return Ok(());
    };
    let what: Vec<String> = d
        .axes
        .iter()
        .map(|a| format!("{} = {}", a.name, a.values[j]))
        .collect();
    Err(p.err_values(format!(
        "`{name}`: the value {} would appear more than once; each value may appear once",
        what.join(", ")
    )))
}

/// One `--axis NAME=VALUES`, checked against the op.
struct Parsed {
    arg: String,
    name: String,
    slot: usize,
    values: Vec<Value>,
}

impl Parsed {
    /// An error pointing at the argument's values (after `=`).
    fn err_values(&self, message: String) -> SpecError {
        let text = Arc::new(self.arg.clone());
        let cx = Cx {
            file: "--axis",
            text: &text,
        };
        let start = self.arg.find('=').map_or(0, |i| i + 1);
        cx.err(start..self.arg.len(), message)
    }
}

/// Reads one `--axis NAME=VALUES`: the name must be an axis of the op.
fn parse(op: OpKind, arg: &str) -> Result<Parsed, SpecError> {
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
    let values = parse_values(&cx, op, slot, name, list, base)?;
    Ok(Parsed {
        arg: arg.to_string(),
        name: name.to_string(),
        slot,
        values,
    })
}

/// Reads the comma list after `=` (at byte `base` of the argument): generators on an integer
/// axis and plain values, each checked against the axis.
fn parse_values(
    cx: &Cx,
    op: OpKind,
    slot: usize,
    name: &str,
    list: &str,
    base: usize,
) -> Result<Vec<Value>, SpecError> {
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
            let digits = item.trim().trim_start_matches(['-', '+']);
            if is_int_axis
                && matches!(v, Value::Str(_))
                && !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
            {
                return Err(cx.err(
                    span,
                    format!(
                        "integer `{}` overflows a 64-bit signed integer",
                        item.trim()
                    ),
                ));
            }
            check_value(op, slot, &v).map_err(|m| cx.err(span.clone(), m))?;
            values.push(v);
        }
    }
    Ok(values)
}

/// Applies one override on its own: replaces a plain axis or adds one; inside a zip group,
/// values the axis already has select those rows of the group (`--axis c_in=16` keeps the
/// 16 -> 32 pair), and other values must come for every axis of the group (`apply_overrides`).
fn place(dims: &mut Vec<Dim>, p: &Parsed) -> Result<(), SpecError> {
    let (name, slot, values) = (p.name.as_str(), p.slot, &p.values);
    let new_len = values.len();
    for d in dims.iter_mut() {
        if let Some(pos) = d.axes.iter().position(|a| a.slot == slot) {
            let have = &d.axes[pos].values;
            let all_known = values.iter().all(|v| have.contains(v));
            let rows: Vec<usize> = (0..have.len())
                .filter(|&r| values.contains(&have[r]))
                .collect();
            if (d.axes.len() > 1 || !d.weights.is_empty()) && all_known {
                for a in d.axes.iter_mut() {
                    a.values = rows.iter().map(|&r| a.values[r].clone()).collect();
                }
                if !d.weights.is_empty() {
                    d.weights = rows.iter().map(|&r| d.weights[r]).collect();
                }
                return Ok(());
            }
            if d.axes.len() > 1 && d.len() != new_len {
                let others: Vec<&str> = d
                    .axes
                    .iter()
                    .filter(|a| a.slot != slot)
                    .map(|a| a.name.as_str())
                    .collect();
                return Err(p.err_values(format!(
                    "`{name}` varies together with {} in zip group `{}` ({} values each), but the override gives {new_len}; to make new rows, give every axis of the group the same number of values (--axis {name}=... --axis {}=...)",
                    others.join(", "), d.group.as_deref().unwrap_or(""), d.len(), others.join("=... --axis ")
                )));
            }
            d.axes[pos].values = values.clone();
            d.weights.clear();
            return Ok(());
        }
    }
    dims.push(Dim {
        group: None,
        axes: vec![Axis {
            name: name.to_string(),
            slot,
            values: values.clone(),
        }],
        weights: Vec::new(),
    });
    Ok(())
}
