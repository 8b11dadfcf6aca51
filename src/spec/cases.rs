//! `[[cases]]`: a list of problems, one table each, as `rocsweep import` writes them. The cases
//! form one dimension (like a zip group whose rows are written one per table), and each may
//! carry the model's weight: `weight` (how many calls the source saw) and `traced_ms` (the time
//! the source traced for them), which reports use to say what share of the model's calls (and
//! time) falls in each status.

use super::error::SpecError;
use super::model::{Axis, Dim, Weight};
use super::reader::{Cx, Sp};
use crate::op::OpKind;
use crate::op::value::Value;
use std::borrow::Cow;
use std::ops::Range;
use toml::de::DeValue;

/// Keys of a case that are not op parameters.
pub const WEIGHT: &str = "weight";
pub const TRACED_MS: &str = "traced_ms";

/// Reads `[[cases]]` into one dimension. Every case gives the same parameters, one value each;
/// `weight` is given by every case or by none, and so is `traced_ms` (which needs `weight`).
pub(super) fn read(
    cx: &Cx,
    op: OpKind,
    v: &Sp,
    seen: &mut Vec<(String, Range<usize>)>,
) -> Result<Dim, SpecError> {
    let DeValue::Array(items) = v.get_ref() else {
        return Err(cx.type_err(
            v,
            "cases",
            "an array of tables ([[cases]], one per problem)",
        ));
    };
    if items.is_empty() {
        return Err(cx.err(
            v.span(),
            "`cases` is empty, expected at least one [[cases]]",
        ));
    }
    let mut acc = Collected {
        axes: Vec::new(),
        weights: Vec::new(),
        outer_seen: seen.len(),
    };
    for (i, item) in items.iter().enumerate() {
        read_case(cx, op, i, item, seen, &mut acc)?;
    }
    finish(cx, v, items, acc)
}

/// The cases read so far: one axis per parameter, holding a value per case, and each case's
/// weight.
struct Collected {
    axes: Vec<Axis>,
    weights: Vec<Option<Weight>>,
    /// How many names `seen` held before the cases (those of [axes] and [zip]).
    outer_seen: usize,
}

/// Reads case `i` (from 0): its parameters join the axes, its weight joins the weights.
fn read_case(
    cx: &Cx,
    op: OpKind,
    i: usize,
    item: &Sp,
    seen: &mut Vec<(String, Range<usize>)>,
    acc: &mut Collected,
) -> Result<(), SpecError> {
    let DeValue::Table(table) = item.get_ref() else {
        return Err(cx.type_err(item, "cases", "a table of parameters"));
    };
    let mut names: Vec<String> = Vec::new();
    let mut weight = None;
    let mut traced = None;
    for (key, val) in table.iter() {
        match key.get_ref().as_ref() {
            WEIGHT => weight = Some(positive(cx, val, WEIGHT)?),
            TRACED_MS => traced = Some(non_negative(cx, val, TRACED_MS)?),
            _ => names.push(read_param(cx, op, i, key, val, seen, acc)?),
        }
    }
    check_case(cx, i, item, &names, weight, traced, acc)?;
    acc.weights.push(weight.map(|calls| Weight {
        calls,
        traced_ms: traced,
    }));
    Ok(())
}

/// Reads one parameter of case `i`: one value, which starts its axis in case 1 and extends the
/// axis of the same name after. Returns the parameter's name.
fn read_param(
    cx: &Cx,
    op: OpKind,
    i: usize,
    key: &toml::Spanned<Cow<str>>,
    val: &Sp,
    seen: &mut Vec<(String, Range<usize>)>,
    acc: &mut Collected,
) -> Result<String, SpecError> {
    if matches!(val.get_ref(), DeValue::Array(_)) {
        return Err(cx.err(
            val.span(),
            format!(
                "case {}: `{}` is a list; a case gives one value per parameter (values to vary go under [axes])",
                i + 1,
                key.get_ref()
            ),
        ));
    }
    // Names may repeat across cases, not within one or with [axes]/[zip].
    let axis = cx.axis(op, key, val, &seen[..acc.outer_seen], true)?;
    if axis.values.len() != 1 {
        return Err(cx.err(
            val.span(),
            format!(
                "case {}: `{}` makes {} values; a case gives one value per parameter",
                i + 1,
                axis.name,
                axis.values.len()
            ),
        ));
    }
    let name = axis.name.clone();
    if i == 0 {
        seen.push((axis.name.clone(), key.span()));
        acc.axes.push(axis);
    } else {
        let Some(a) = acc.axes.iter_mut().find(|a| a.name == axis.name) else {
            return Err(cx.err(
                key.span(),
                format!(
                    "case {} gives `{}`, which case 1 does not; every case gives the same parameters",
                    i + 1,
                    axis.name
                ),
            ));
        };
        a.values.extend(axis.values);
    }
    Ok(name)
}

/// Refuses case `i` when it gives `traced_ms` without `weight`, leaves out a parameter that
/// case 1 gives, or gives `weight` where case 1 does not (or the other way round).
fn check_case(
    cx: &Cx,
    i: usize,
    item: &Sp,
    names: &[String],
    weight: Option<f64>,
    traced: Option<f64>,
    acc: &Collected,
) -> Result<(), SpecError> {
    if traced.is_some() && weight.is_none() {
        return Err(cx.err(
            item.span(),
            format!(
                "case {}: `traced_ms` needs `weight` (the calls it was traced over)",
                i + 1
            ),
        ));
    }
    if let Some(missing) = acc.axes.iter().find(|a| !names.contains(&a.name)) {
        return Err(cx.err(
            item.span(),
            format!(
                "case {} does not give `{}`, which case 1 gives; every case gives the same parameters",
                i + 1,
                missing.name
            ),
        ));
    }
    if i > 0 && weight.is_some() != acc.weights[0].is_some() {
        return Err(cx.err(
            item.span(),
            format!(
                "case {} {} `weight` and case 1 {}; give it in every case or in none",
                i + 1,
                if weight.is_some() {
                    "gives"
                } else {
                    "does not give"
                },
                if acc.weights[0].is_some() {
                    "does"
                } else {
                    "does not"
                }
            ),
        ));
    }
    Ok(())
}

/// Checks the cases as a whole (some parameter, `traced_ms` in all or none, no problem twice)
/// and makes the dimension; the weights stay only when every case has one.
fn finish(cx: &Cx, v: &Sp, items: &[Sp], acc: Collected) -> Result<Dim, SpecError> {
    let Collected { axes, weights, .. } = acc;
    if axes.is_empty() {
        return Err(cx.err(
            v.span(),
            "the cases give no parameter; each case names the problem's parameters (e.g. c_in = 64)",
        ));
    }
    if let Some(name) = traced_mixed(&weights) {
        return Err(cx.err(v.span(), name));
    }
    let rows: Vec<Vec<&Value>> = (0..items.len())
        .map(|r| axes.iter().map(|a| &a.values[r]).collect())
        .collect();
    if let Some((i, j)) = super::model::first_duplicate(&rows) {
        return Err(cx.err(
            items[j].span(),
            format!(
                "cases {} and {} are the same problem; each may appear once (add their weights)",
                i + 1,
                j + 1
            ),
        ));
    }
    let weights = if weights.iter().all(Option::is_some) {
        weights.into_iter().flatten().collect()
    } else {
        Vec::new()
    };
    Ok(Dim {
        group: Some("cases".into()),
        axes,
        weights,
    })
}

/// `traced_ms` is given by every weighted case or by none.
fn traced_mixed(weights: &[Option<Weight>]) -> Option<String> {
    let with = weights
        .iter()
        .flatten()
        .filter(|w| w.traced_ms.is_some())
        .count();
    let all = weights.iter().flatten().count();
    (with > 0 && with < all).then(|| {
        format!("`traced_ms` is given in {with} of {all} cases; give it in every case or in none")
    })
}

fn positive(cx: &Cx, v: &Sp, key: &str) -> Result<f64, SpecError> {
    let x = cx.number(v, key)?;
    if x > 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(cx.err(
            v.span(),
            format!("`{key}` must be a positive number (the calls of this problem), found {x}"),
        ))
    }
}

fn non_negative(cx: &Cx, v: &Sp, key: &str) -> Result<f64, SpecError> {
    let x = cx.number(v, key)?;
    if x >= 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(cx.err(
            v.span(),
            format!("`{key}` must be a number of milliseconds, zero or more, found {x}"),
        ))
    }
}
