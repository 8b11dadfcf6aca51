//! `--axis NAME=VALUES` overrides: replace an axis, add one, select rows of a zip group by
//! values its axis has, or replace a zipped axis with as many new values as the group has rows.

use super::error::SpecError;
use super::reader::Cx;
use super::value::Value;
use super::{Axis, Dim, axis, axis_names, check_value, slot_of};
use crate::op::{OpKind, ParamKind};
use std::sync::Arc;

/// Applies one override, then refuses it when it made a value of a plain axis, or a row of a
/// zip group, appear twice (the same case would be planned twice).
pub(super) fn apply_override(op: OpKind, dims: &mut Vec<Dim>, arg: &str) -> Result<(), SpecError> {
    apply(op, dims, arg)?;
    let name = arg.split_once('=').map_or("", |(n, _)| n.trim());
    let Some(d) = dims.iter().find(|d| d.axes.iter().any(|a| a.name == name)) else {
        return Ok(());
    };
    let rows: Vec<Vec<&Value>> = (0..d.axes.first().map_or(0, |a| a.values.len()))
        .map(|r| d.axes.iter().map(|a| &a.values[r]).collect())
        .collect();
    let Some((_, j)) = super::first_duplicate(&rows) else {
        return Ok(());
    };
    let what: Vec<String> = d
        .axes
        .iter()
        .map(|a| format!("{} = {}", a.name, a.values[j]))
        .collect();
    let text = Arc::new(arg.to_string());
    let cx = Cx {
        file: "--axis",
        text: &text,
    };
    let start = arg.find('=').map_or(0, |i| i + 1);
    Err(cx.err(
        start..arg.len(),
        format!(
            "`{name}`: the value {} would appear more than once; each value may appear once",
            what.join(", ")
        ),
    ))
}

fn apply(op: OpKind, dims: &mut Vec<Dim>, arg: &str) -> Result<(), SpecError> {
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
    let new_len = values.len();
    for d in dims.iter_mut() {
        if let Some(pos) = d.axes.iter().position(|a| a.slot == slot) {
            // Inside a zip group, values the axis already has select those rows of the group
            // (`--axis c_in=16` keeps the 16 -> 32 pair), so one pair can be pinned.
            let have = &d.axes[pos].values;
            let all_known = values.iter().all(|v| have.contains(v));
            let rows: Vec<usize> = (0..have.len())
                .filter(|&r| values.contains(&have[r]))
                .collect();
            if d.axes.len() > 1 && all_known {
                for a in d.axes.iter_mut() {
                    a.values = rows.iter().map(|&r| a.values[r].clone()).collect();
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
