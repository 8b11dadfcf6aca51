//! Typed reading of TOML values with their spans: every wrong key, type or value becomes a
//! SpecError pointing at the text.

use super::error::SpecError;
use super::policy::{
    Limits, MAX_BUFFER_MIB, MAX_MAX_SAMPLES, MAX_SAMPLES, MAX_WARMUP, TimingPolicy, VerifyPolicy,
};
use super::{
    axis,
    model::{Axis, TOP_KEYS, axis_names, check_value, line_col, slot_of},
};
use crate::op::value::Value;
use crate::op::{OpKind, ParamKind};
use std::ops::Range;
use std::sync::Arc;
use toml::de::{DeTable, DeValue};

pub(super) type Sp<'a> = toml::Spanned<DeValue<'a>>;

/// Error context: the file name and text every span points into.
pub(super) struct Cx<'a> {
    pub(super) file: &'a str,
    pub(super) text: &'a Arc<String>,
}

impl Cx<'_> {
    /// The file's text as a TOML document; a parse error points where it breaks.
    pub(super) fn parse(&self) -> Result<toml::Spanned<DeTable<'_>>, SpecError> {
        DeTable::parse(self.text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            self.err(span, format!("invalid TOML: {}", e.message().trim()))
        })
    }

    pub(super) fn err(&self, span: Range<usize>, msg: impl Into<String>) -> SpecError {
        SpecError::at(self.file, self.text, span, msg)
    }

    pub(super) fn type_err(&self, v: &Sp, key: &str, expected: &str) -> SpecError {
        self.err(
            v.span(),
            format!("`{key}` expects {expected}, found {}", de_type(v.get_ref())),
        )
    }

    pub(super) fn deny_unknown(
        &self,
        t: &DeTable,
        known: &[&str],
        place: &str,
    ) -> Result<(), SpecError> {
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

    pub(super) fn string(&self, v: &Sp, key: &str) -> Result<String, SpecError> {
        match v.get_ref() {
            DeValue::String(s) => Ok(s.to_string()),
            _ => Err(self.type_err(v, key, "a string")),
        }
    }

    pub(super) fn table<'t>(&self, v: &'t Sp<'t>, key: &str) -> Result<&'t DeTable<'t>, SpecError> {
        match v.get_ref() {
            DeValue::Table(t) => Ok(t),
            _ => Err(self.type_err(v, key, &format!("a table ([{key}])"))),
        }
    }

    /// Byte offset of a basic string's content when the file spells it without escapes, so that
    /// errors inside it can point at the exact character.
    pub(super) fn string_content_offset(&self, v: &Sp, content: &str) -> Option<usize> {
        let span = v.span();
        let raw = self.text.get(span.clone())?;
        let inner = raw.get(1..raw.len().checked_sub(1)?)?;
        (inner == content).then_some(span.start + 1)
    }

    pub(super) fn scalar(&self, v: &Sp, key: &str) -> Result<Value, SpecError> {
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

    pub(super) fn snippet(&self, v: &Sp) -> String {
        self.text.get(v.span()).unwrap_or("").to_string()
    }

    /// Values of one item: a scalar, or a generator string expanded to integers.
    pub(super) fn items(
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

    /// An axis; `distinct` refuses a value given twice (a plain axis: it would make the same
    /// case twice; an axis of a zip group may repeat values, its rows may not).
    pub(super) fn axis(
        &self,
        op: OpKind,
        key: &toml::Spanned<std::borrow::Cow<str>>,
        v: &Sp,
        seen: &[(String, Range<usize>)],
        distinct: bool,
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
        if distinct && let Some((_, j)) = super::model::first_duplicate(&values) {
            return Err(self.err(
                v.span(),
                format!(
                    "axis `{name}` has the value {} more than once (a list item and a generator may overlap); each value may appear once",
                    values[j]
                ),
            ));
        }
        Ok(Axis { name, slot, values })
    }

    pub(super) fn env_name(
        &self,
        key: &toml::Spanned<std::borrow::Cow<str>>,
    ) -> Result<String, SpecError> {
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

    pub(super) fn env_value(&self, v: &Sp, name: &str) -> Result<String, SpecError> {
        match v.get_ref() {
            DeValue::String(s) if s.contains('\0') => {
                Err(self.err(v.span(), format!("value of `{name}` contains a NUL byte")))
            }
            DeValue::String(s) if s.contains(';') => Err(self.err(
                v.span(),
                format!(
                    "value of `{name}` contains `;`, which separates variables in the `env` column and unit ids (two combinations could read the same)"
                ),
            )),
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

    pub(super) fn number(&self, v: &Sp, key: &str) -> Result<f64, SpecError> {
        match self.scalar(v, key)? {
            Value::Int(i) => Ok(i as f64),
            Value::Float(f) if f.is_finite() => Ok(f),
            _ => Err(self.type_err(v, key, "a finite number")),
        }
    }

    pub(super) fn positive_seconds(&self, v: &Sp, key: &str) -> Result<f64, SpecError> {
        let n = self.number(v, key)?;
        if n <= 0.0 {
            return Err(self.err(
                v.span(),
                format!("`{key}` must be a positive number of seconds, found {n}"),
            ));
        }
        // Durations past this overflow the clock arithmetic; no phase needs longer than a year.
        const MAX_SECONDS: f64 = 31_536_000.0;
        if n > MAX_SECONDS {
            return Err(self.err(
                v.span(),
                format!("`{key}` must be at most {MAX_SECONDS} seconds (one year), found {n:e}"),
            ));
        }
        Ok(n)
    }

    pub(super) fn count(&self, v: &Sp, key: &str, min: i64) -> Result<u32, SpecError> {
        match self.scalar(v, key)? {
            Value::Int(i) if i >= min && i <= u32::MAX as i64 => Ok(i as u32),
            Value::Int(i) => Err(self.err(
                v.span(),
                format!("`{key}` must be an integer of at least {min}, found {i}"),
            )),
            _ => Err(self.type_err(v, key, "an integer")),
        }
    }

    /// `count` with an upper bound (docs/sweep-files.md "Limits"): a setting past it is a mistake that would
    /// show up as every unit crashing or hanging, blamed on the library.
    pub(super) fn count_at_most(
        &self,
        v: &Sp,
        key: &str,
        min: i64,
        max: u32,
    ) -> Result<u32, SpecError> {
        let n = self.count(v, key, min)?;
        if n > max {
            return Err(self.err(
                v.span(),
                format!("`{key}` must be at most {max}, found {n}"),
            ));
        }
        Ok(n)
    }

    pub(super) fn boolean(&self, v: &Sp, key: &str) -> Result<bool, SpecError> {
        match v.get_ref() {
            DeValue::Boolean(b) => Ok(*b),
            _ => Err(self.type_err(v, key, "a boolean (true or false)")),
        }
    }

    pub(super) fn timing(&self, t: Option<&Sp>) -> Result<TimingPolicy, SpecError> {
        let mut p = TimingPolicy::default();
        if let Some(t) = t {
            self.timing_into(&mut p, t)?;
        }
        Ok(p)
    }

    /// `[timing] cache`: "cold" (flush before each sample) is true, "warm" false.
    fn cache_state(&self, v: &Sp) -> Result<bool, SpecError> {
        match self.string(v, "cache")?.as_str() {
            "cold" => Ok(true),
            "warm" => Ok(false),
            other => Err(self.err(
                v.span(),
                format!("[timing] `cache` is \"cold\" (caches flushed before each sample, the default) or \"warm\", not \"{other}\""),
            )),
        }
    }

    /// Sets the keys `t` (a `[timing]` table) names on `p`, leaving the others as they are.
    pub(super) fn timing_into(&self, p: &mut TimingPolicy, t: &Sp) -> Result<(), SpecError> {
        let table = self.table(t, "timing")?;
        let keys = [
            "enabled",
            "warmup",
            "min_samples",
            "max_samples",
            "target_noise",
            "max_time",
            "cache",
            "flush_cache",
            "flush_mib",
            "rotating_mib",
            "trials",
            "processes",
        ];
        self.deny_unknown(table, &keys, "[timing]")?;
        for (key, v) in table.iter() {
            let k = key.get_ref().as_ref();
            match k {
                "enabled" => p.enabled = self.boolean(v, k)?,
                "warmup" => p.warmup = self.count_at_most(v, k, 0, MAX_WARMUP)?,
                "min_samples" => p.min_samples = self.count_at_most(v, k, 1, MAX_SAMPLES)?,
                "max_samples" => p.max_samples = self.count_at_most(v, k, 1, MAX_MAX_SAMPLES)?,
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
                "flush_mib" => p.flush_mib = self.count_at_most(v, k, 0, MAX_BUFFER_MIB)?,
                "rotating_mib" => p.rotating_mib = self.count_at_most(v, k, 0, MAX_BUFFER_MIB)?,
                "trials" => p.trials = self.count_at_most(v, k, 1, super::policy::MAX_TRIALS)?,
                "processes" => {
                    p.processes = self.count_at_most(v, k, 2, super::policy::MAX_TRIALS)?
                }
                "cache" => p.flush_cache = self.cache_state(v)?,
                _ => p.flush_cache = self.boolean(v, k)?,
            }
        }
        // `flush_cache` is the older spelling of `cache`: both may stand only if they agree.
        if let (Some(c), Some(f)) = (table.get("cache"), table.get("flush_cache"))
            && Some(self.cache_state(c)?) != f.get_ref().as_bool()
        {
            return Err(self.err(
                c.span(),
                "[timing] `cache` and `flush_cache` disagree (`flush_cache` is the older spelling: `flush_cache = true` is `cache = \"cold\"`); keep one",
            ));
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
        Ok(())
    }

    pub(super) fn verify(&self, t: Option<&Sp>) -> Result<VerifyPolicy, SpecError> {
        let mut p = VerifyPolicy::default();
        if let Some(t) = t {
            self.verify_into(&mut p, t)?;
        }
        Ok(p)
    }

    /// Sets the keys `t` (a `[verify]` table) names on `p`, leaving the others as they are.
    pub(super) fn verify_into(&self, p: &mut VerifyPolicy, t: &Sp) -> Result<(), SpecError> {
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
        Ok(())
    }

    /// Sets the phase limits `t` (a `[limits]` table) names on `limits`.
    pub(super) fn limits_into(&self, limits: &mut Limits, t: &Sp) -> Result<(), SpecError> {
        for (key, val) in self.table(t, "limits")?.iter() {
            let slot = limits.get_mut(key.get_ref()).ok_or_else(|| {
                self.err(
                    key.span(),
                    format!(
                        "unknown key `{}` at [limits], expected one of: {}, grace",
                        key.get_ref(),
                        super::policy::PHASES.join(", ")
                    ),
                )
            })?;
            *slot = self.positive_seconds(val, key.get_ref())?;
        }
        Ok(())
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
