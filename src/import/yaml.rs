//! The one-line YAML mappings rocBLAS (`ROCBLAS_LAYER=4`) and hipBLASLt (`HIPBLASLT_LOG_MASK=64`)
//! print per problem: `- { rocblas_function: "rocblas_hgemm", M: 128, ..., call_count: 3 }`.

use std::collections::HashMap;

/// The keys and values of a `- { key: value, ... }` line (quotes removed), or `None` when the
/// line is not one. An unclosed brace (a truncated line) is `Some(Err)`.
pub fn flow_map(text: &str) -> Option<Result<HashMap<String, String>, String>> {
    let t = text.trim_start();
    let body = t.strip_prefix('-')?.trim_start().strip_prefix('{')?;
    let Some(body) = body.trim_end().strip_suffix('}') else {
        return Some(Err("no closing `}` (truncated line?)".into()));
    };
    let mut map = HashMap::new();
    for item in split_top(body) {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some((k, v)) = item.split_once(':') else {
            return Some(Err(format!("`{item}` is not `key: value`")));
        };
        let unquote = |s: &str| s.trim().trim_matches(|c| c == '"' || c == '\'').to_string();
        map.insert(unquote(k), unquote(v));
    }
    Some(Ok(map))
}

/// Splits at commas outside quotes.
fn split_top(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quote) = (0, None);
    for (i, c) in body.char_indices() {
        match (c, quote) {
            ('"' | '\'', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            (',', None) => {
                out.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&body[start..]);
    out
}

/// Reads a map's entries by any of their names (`M` or `m`).
pub struct Entries<'a>(pub &'a HashMap<String, String>);

impl Entries<'_> {
    pub fn text(&self, names: &[&str]) -> Option<&str> {
        names
            .iter()
            .find_map(|n| self.0.get(*n))
            .map(String::as_str)
    }

    pub fn int(&self, names: &[&str], default: Option<i64>) -> Result<i64, String> {
        match self.text(names) {
            None => default.ok_or_else(|| format!("no `{}`", names[0])),
            Some(v) => v
                .parse()
                .map_err(|_| format!("`{}: {v}` is not an integer", names[0])),
        }
    }

    /// `call_count`, at least one call.
    pub fn calls(&self) -> Result<f64, String> {
        let n = self.int(&["call_count"], Some(1))?;
        if n < 1 {
            return Err(format!("call_count {n} is not a count of calls"));
        }
        Ok(n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_quoted_values_and_commas_inside_quotes() {
        let m = flow_map(r#"- { rocblas_function: "rocblas_hgemm", transA: 'N', M: 128, note: "a, b", call_count: 3 }"#)
            .expect("a map")
            .expect("well formed");
        assert_eq!(m["rocblas_function"], "rocblas_hgemm");
        assert_eq!(m["transA"], "N");
        assert_eq!(m["note"], "a, b");
        assert_eq!(Entries(&m).calls(), Ok(3.0));
        assert!(flow_map("- { M: 1, N: 2").expect("a map").is_err());
        assert!(flow_map("M: 1").is_none());
    }
}
