//! Command lines printed by the vendors' bench tools (`MIOpenDriver conv -n 32 ...`,
//! `hipblaslt-bench -m 64 ...`): flags with their values, read by name.

/// The flags of one command line, in order: (`-n`, `32`), (`--transA`, `N`) ...
pub struct Flags<'a> {
    pairs: Vec<(&'a str, Option<&'a str>)>,
}

impl<'a> Flags<'a> {
    /// Reads `tokens` as flags, each with the token after it as its value unless that token is
    /// itself a flag (a negative number is a value).
    pub fn parse(tokens: &[&'a str]) -> Flags<'a> {
        let is_flag = |t: &str| {
            t.starts_with('-')
                && t.len() > 1
                && !t[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.')
        };
        let mut pairs = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            let t = tokens[i];
            if is_flag(t) {
                let value = tokens.get(i + 1).copied().filter(|v| !is_flag(v));
                pairs.push((t, value));
                i += if value.is_some() { 2 } else { 1 };
            } else {
                i += 1;
            }
        }
        Flags { pairs }
    }

    /// Whether any of `names` is given (with or without a value).
    pub fn has(&self, names: &[&str]) -> bool {
        self.pairs.iter().any(|(f, _)| names.contains(f))
    }

    /// An integer flag; `default` when absent, an error naming the flag when given without a
    /// value or with one that is not an integer.
    pub fn int(&self, names: &[&str], default: Option<i64>) -> Result<i64, String> {
        let given = self.pairs.iter().rev().find(|(f, _)| names.contains(f));
        match given {
            None => default.ok_or_else(|| format!("missing {}", names[0])),
            Some((f, None)) => Err(format!("{f} has no value")),
            Some((f, Some(v))) => v
                .parse::<i64>()
                .map_err(|_| format!("{f} {v} is not an integer")),
        }
    }

    /// A text flag (`--transA N`); `default` when absent.
    pub fn text(&self, names: &[&str], default: Option<&'a str>) -> Result<&'a str, String> {
        let given = self.pairs.iter().rev().find(|(f, _)| names.contains(f));
        match given {
            None => default.ok_or_else(|| format!("missing {}", names[0])),
            Some((f, None)) => Err(format!("{f} has no value")),
            Some((_, Some(v))) => Ok(v),
        }
    }
}

/// `N`/`T`/`C` (and rocBLAS's `111`/`112`) as transposed or not.
pub fn transposed(v: &str) -> Result<bool, String> {
    match v.trim_matches('"').to_ascii_uppercase().as_str() {
        "N" | "111" | "OP_N" | "HIPBLAS_OP_N" => Ok(false),
        "T" | "C" | "112" | "113" | "OP_T" | "OP_C" | "HIPBLAS_OP_T" => Ok(true),
        other => Err(format!("transpose `{other}` is not N, T or C")),
    }
}
