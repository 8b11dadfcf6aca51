//! Axis value syntax: `pow2(16..=256)`, `range(16..=224, step=16)` and comma lists from `--axis`.
//! Errors are (byte span, message) pairs relative to the text they came from; the caller turns
//! them into file:line:col errors.

use crate::op::value::Value;
use std::ops::Range;

pub type Located = (Range<usize>, String);

/// No axis may expand to more values than this (the product cap guards the whole sweep).
pub const MAX_AXIS_LEN: u64 = 1_000_000;

/// True when `text` is written as a generator call, so it is not taken as a plain string value.
pub fn is_generator(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("pow2(") || t.starts_with("range(")
}

/// Expands a generator. `base` is the byte offset of `text` in its source, for error spans.
pub fn expand_generator(text: &str, base: usize) -> Result<Vec<i64>, Located> {
    let whole = base..base + text.len();
    let lead = text.len() - text.trim_start().len();
    let (name, inner, inner_base) = split_call(text, base)?;
    let (range_text, step_text) = match inner.split_once(',') {
        Some((r, s)) => (r, Some((s, inner_base + r.len() + 1))),
        None => (inner, None),
    };
    let (lo, hi, inclusive) = parse_range(range_text, inner_base)?;
    let step = match step_text {
        None => 1,
        Some((s, s_base)) => parse_step(name, s, s_base)?,
    };
    let last = last_value(lo, hi, inclusive, &whole)?;
    match name {
        "range" => expand_range(lo, last, step, whole),
        "pow2" => expand_pow2(lo, last, whole),
        other => Err((
            base + lead..base + lead + other.len(),
            format!("unknown generator `{other}`, expected pow2(a..=b) or range(a..=b, step=s)"),
        )),
    }
}

/// Splits `name(inner)` into the name, the text between the parentheses and that text's byte
/// offset in the source.
fn split_call(text: &str, base: usize) -> Result<(&str, &str, usize), Located> {
    let whole = base..base + text.len();
    let trimmed = text.trim();
    let lead = text.len() - text.trim_start().len();
    let (name, rest) = trimmed
        .split_once('(')
        .ok_or_else(|| (whole.clone(), "expected `(`".to_string()))?;
    let inner = rest.strip_suffix(')').ok_or_else(|| {
        (
            whole.clone(),
            format!("`{name}(...)` is missing its closing `)`"),
        )
    })?;
    Ok((name, inner, base + lead + name.len() + 1))
}

/// Reads the `step=N` of generator `name` (found at byte `base`): a positive integer, and only
/// for `range`.
fn parse_step(name: &str, s: &str, base: usize) -> Result<i64, Located> {
    let span = trimmed_span(s, base);
    if name == "pow2" {
        return Err((span, "pow2(...) takes no step; it doubles".into()));
    }
    let st = s.trim();
    let val = st
        .strip_prefix("step")
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix('='));
    let val = val.ok_or_else(|| (span.clone(), format!("expected `step=N`, found `{st}`")))?;
    let step = parse_int(val.trim(), span.clone())?;
    if step <= 0 {
        return Err((
            span,
            format!("step must be a positive integer, found {step}"),
        ));
    }
    Ok(step)
}

/// The last value the range `lo..hi` (or `lo..=hi`) holds; refuses an empty or inverted range.
fn last_value(lo: i64, hi: i64, inclusive: bool, whole: &Range<usize>) -> Result<i64, Located> {
    let last = if inclusive {
        Some(hi)
    } else {
        hi.checked_sub(1)
    };
    let inverted = match last {
        Some(last) => lo > last,
        None => true,
    };
    if inverted {
        if !inclusive && lo == hi {
            return Err((
                whole.clone(),
                format!(
                    "empty range {lo}..{hi} holds no values (write {lo}..={hi} to include {hi})"
                ),
            ));
        }
        let op = if inclusive { "..=" } else { ".." };
        return Err((
            whole.clone(),
            format!("inverted range {lo}{op}{hi}: the start must not be past the end"),
        ));
    }
    Ok(last.unwrap_or(lo))
}

/// `range(lo..=last, step)`: every `step`-th integer, at most [`MAX_AXIS_LEN`] of them.
fn expand_range(lo: i64, last: i64, step: i64, whole: Range<usize>) -> Result<Vec<i64>, Located> {
    let count = ((last as i128 - lo as i128) / step as i128 + 1) as u64;
    if count > MAX_AXIS_LEN {
        return Err((
            whole,
            format!("range has {count} values, more than the {MAX_AXIS_LEN} an axis may hold"),
        ));
    }
    Ok((0..count as i64).map(|i| lo + i * step).collect())
}

/// `pow2(lo..=last)`: the powers of two from `lo` to `last`, at least one.
fn expand_pow2(lo: i64, last: i64, whole: Range<usize>) -> Result<Vec<i64>, Located> {
    if lo < 1 {
        return Err((
            whole,
            format!("pow2 needs a start of at least 1, found {lo}"),
        ));
    }
    let mut v = Vec::new();
    let mut p: i64 = 1;
    while p <= last {
        if p >= lo {
            v.push(p);
        }
        p = match p.checked_mul(2) {
            Some(next) => next,
            None => break,
        };
    }
    if v.is_empty() {
        return Err((whole, format!("pow2({lo}..={last}) holds no power of two")));
    }
    Ok(v)
}

fn parse_range(text: &str, base: usize) -> Result<(i64, i64, bool), Located> {
    let span = base..base + text.len();
    let (lo, hi, inclusive) = if let Some((a, b)) = text.split_once("..=") {
        (a, b, true)
    } else if let Some((a, b)) = text.split_once("..") {
        (a, b, false)
    } else {
        return Err((
            span,
            format!(
                "expected a range `a..=b` or `a..b`, found `{}`",
                text.trim()
            ),
        ));
    };
    let hi_start = base + lo.len() + if inclusive { 3 } else { 2 };
    Ok((
        parse_int(lo.trim(), trimmed_span(lo, base))?,
        parse_int(hi.trim(), trimmed_span(hi, hi_start))?,
        inclusive,
    ))
}

/// Span of `text` (found at byte `base`) without its surrounding whitespace.
fn trimmed_span(text: &str, base: usize) -> Range<usize> {
    let start = base + text.len() - text.trim_start().len();
    start..start + text.trim().len()
}

fn parse_int(text: &str, span: Range<usize>) -> Result<i64, Located> {
    let clean = text.replace('_', "");
    clean.parse::<i64>().map_err(|e| {
        let what = if matches!(
            e.kind(),
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow
        ) {
            format!("integer `{text}` overflows a 64-bit signed integer")
        } else {
            format!("expected an integer, found `{text}`")
        };
        (span, what)
    })
}

/// Splits a `--axis` value list on commas outside parentheses: `16,range(32..=64, step=16)`.
/// Returns each item with its byte offset in `text`.
pub fn split_items(text: &str) -> Vec<(usize, &str)> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, ch) in text.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                items.push((start, &text[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push((start, &text[start..]));
    items
}

/// Reads one plain `--axis` item: integer, float, boolean or word (quotes optional).
pub fn parse_scalar(text: &str) -> Value {
    let t = text.trim();
    if let Ok(i) = t.replace('_', "").parse::<i64>() {
        return Value::Int(i);
    }
    if t.contains(['.', 'e', 'E'])
        && !t
            .chars()
            .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        && let Ok(f) = t.parse::<f64>()
    {
        return Value::Float(f);
    }
    match t {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::Str(t.trim_matches(|c| c == '"' || c == '\'').to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow2_inclusive_and_exclusive() {
        assert_eq!(
            expand_generator("pow2(16..=256)", 0).unwrap(),
            vec![16, 32, 64, 128, 256]
        );
        assert_eq!(
            expand_generator("pow2(16..256)", 0).unwrap(),
            vec![16, 32, 64, 128]
        );
        assert_eq!(expand_generator("pow2(3..=20)", 0).unwrap(), vec![4, 8, 16]);
    }

    #[test]
    fn range_with_step() {
        let v = expand_generator("range(16..=224, step=16)", 0).unwrap();
        assert_eq!(v.len(), 14);
        assert_eq!((v[0], v[13]), (16, 224));
        assert_eq!(expand_generator("range(1..4)", 0).unwrap(), vec![1, 2, 3]);
        assert_eq!(
            expand_generator(" range( 0 ..= 10 , step = 5 ) ", 0).unwrap(),
            vec![0, 5, 10]
        );
    }

    #[test]
    fn errors_point_at_the_bad_part() {
        let (span, msg) = expand_generator("range(1..=9, step=0)", 10).unwrap_err();
        assert!(msg.contains("step must be a positive integer"), "{msg}");
        assert_eq!(span.start, 10 + "range(1..=9,".len() + 1);
        let (_, msg) = expand_generator("range(9..=1)", 0).unwrap_err();
        assert!(msg.contains("inverted range 9..=1"), "{msg}");
        let (span, msg) = expand_generator("pow2(1..=99999999999999999999)", 0).unwrap_err();
        assert!(msg.contains("overflows"), "{msg}");
        assert_eq!(span.start, "pow2(1..=".len());
        let (_, msg) = expand_generator("range(0..=5000000)", 0).unwrap_err();
        assert!(msg.contains("more than the 1000000"), "{msg}");
        let (_, msg) = expand_generator("pow2(5..=7)", 0).unwrap_err();
        assert!(msg.contains("no power of two"), "{msg}");
    }

    #[test]
    fn pow2_near_i64_max_does_not_overflow() {
        let v = expand_generator("pow2(1..=9223372036854775807)", 0).unwrap();
        assert_eq!(v.len(), 63);
    }

    #[test]
    fn cli_items_split_outside_parentheses() {
        let items: Vec<&str> = split_items("16,range(32..=64, step=16),f16")
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        assert_eq!(items, vec!["16", "range(32..=64, step=16)", "f16"]);
        assert_eq!(parse_scalar("2.5"), Value::Float(2.5));
        assert_eq!(parse_scalar("true"), Value::Bool(true));
        assert_eq!(parse_scalar("bf16"), Value::Str("bf16".into()));
        assert_eq!(parse_scalar("1e3"), Value::Float(1000.0));
    }
}
