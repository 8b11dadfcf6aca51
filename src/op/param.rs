//! An op's parameters as the sweep names them: what values each accepts ([`ParamKind`]), its
//! default, and the values of one case read by name ([`ParamSlice`]).

use crate::dtype::DType;
use crate::op::value::Value;

/// What values a parameter accepts.
#[derive(Clone, Copy, Debug)]
pub enum ParamKind {
    /// An integer no smaller than `min`.
    Int {
        min: i64,
    },
    Float {
        min: f64,
    },
    Bool,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// One of the listed element types.
    DType(&'static [DType]),
}

#[derive(Clone, Copy, Debug)]
pub enum Default {
    Int(i64),
    Float(f64),
    Str(&'static str),
    Bool(bool),
    /// Takes the value of another parameter of the same case (e.g. `w` follows `h`).
    SameAs(&'static str),
}

#[derive(Clone, Copy, Debug)]
pub struct ParamDef {
    pub name: &'static str,
    pub kind: ParamKind,
    pub default: Default,
    pub doc: &'static str,
}

impl ParamDef {
    /// Checks one value against this parameter's kind; the error says what was expected.
    pub fn check(&self, v: &Value) -> Result<(), String> {
        match (self.kind, v) {
            (ParamKind::Int { min }, Value::Int(i)) => {
                if *i < min {
                    Err(format!("`{}` must be at least {min}, found {i}", self.name))
                } else {
                    Ok(())
                }
            }
            (ParamKind::Float { min }, Value::Float(_) | Value::Int(_)) => {
                let f = v.as_f64().unwrap_or(f64::NAN);
                if !f.is_finite() || f < min {
                    Err(format!(
                        "`{}` must be a finite number of at least {min}, found {f}",
                        self.name
                    ))
                } else {
                    Ok(())
                }
            }
            (ParamKind::Bool, Value::Bool(_)) => Ok(()),
            (ParamKind::Choice(words), Value::Str(s)) => {
                if words.contains(&s.as_str()) {
                    Ok(())
                } else {
                    Err(format!(
                        "unknown {} `{s}`, expected one of: {}",
                        self.name,
                        words.join(", ")
                    ))
                }
            }
            (ParamKind::DType(types), Value::Str(s)) => {
                let allowed = types
                    .iter()
                    .map(|d| d.name())
                    .collect::<Vec<_>>()
                    .join(", ");
                match DType::parse(s) {
                    Some(d) if types.contains(&d) => Ok(()),
                    Some(_) => Err(format!(
                        "dtype `{s}` is not allowed for `{}`, expected one of: {allowed}",
                        self.name
                    )),
                    None => Err(format!(
                        "unknown dtype `{s}` for `{}`, expected one of: {allowed}",
                        self.name
                    )),
                }
            }
            (kind, v) => {
                // A range written bare (`7..9`) reads as a string: name the generators.
                let hint = match (kind, v) {
                    (ParamKind::Int { .. }, Value::Str(t)) if t.contains("..") => format!(
                        "; a range is written range({t}) (every integer; range(a..=b, step=s)) or pow2({t}) (powers of two)"
                    ),
                    _ => String::new(),
                };
                Err(format!(
                    "`{}` expects {}, found {}{hint}",
                    self.name,
                    kind_name(kind),
                    v.type_name()
                ))
            }
        }
    }
}

fn kind_name(k: ParamKind) -> &'static str {
    match k {
        ParamKind::Int { .. } => "an integer",
        ParamKind::Float { .. } => "a number",
        ParamKind::Bool => "a boolean",
        ParamKind::Choice(_) | ParamKind::DType(_) => "a string",
    }
}

/// Values of one case looked up by parameter name; the typed `from_params` constructors use it.
pub struct ParamSlice<'a> {
    pub(super) defs: &'static [ParamDef],
    pub(super) values: &'a [Value],
}

impl ParamSlice<'_> {
    fn get(&self, name: &str) -> Result<&Value, String> {
        self.defs
            .iter()
            .position(|d| d.name == name)
            .and_then(|i| self.values.get(i))
            .ok_or_else(|| format!("parameter `{name}` is missing"))
    }

    pub fn usize(&self, name: &str) -> Result<usize, String> {
        let v = self.get(name)?;
        v.as_i64()
            .and_then(|i| usize::try_from(i).ok())
            .ok_or_else(|| format!("`{name}` must be a non-negative integer, found {v}"))
    }

    pub fn f64(&self, name: &str) -> Result<f64, String> {
        let v = self.get(name)?;
        v.as_f64()
            .ok_or_else(|| format!("`{name}` must be a number, found {v}"))
    }

    pub fn bool(&self, name: &str) -> Result<bool, String> {
        let v = self.get(name)?;
        v.as_bool()
            .ok_or_else(|| format!("`{name}` must be a boolean, found {v}"))
    }

    pub fn str(&self, name: &str) -> Result<&str, String> {
        let v = self.get(name)?;
        v.as_str()
            .ok_or_else(|| format!("`{name}` must be a string, found {v}"))
    }

    pub fn dtype(&self, name: &str) -> Result<DType, String> {
        let s = self.str(name)?;
        DType::parse(s).ok_or_else(|| format!("`{name}`: unknown dtype `{s}`"))
    }
}
