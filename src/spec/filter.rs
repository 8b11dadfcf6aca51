//! `drop` expressions: a combination is dropped when any of them is true.
//! Grammar: `or`/`||`, `and`/`&&`, `not`/`!`, comparisons (== != < <= > >=), + - * / %,
//! integers, floats, quoted words ('f16'), `true`/`false` and axis names. Types are checked when
//! the sweep is loaded, so evaluation cannot fail.

use super::axis::Located;
use crate::op::value::Value;
use std::cmp::Ordering;
use std::ops::Range;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Num,
    Str,
    Bool,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Num => "a number",
            Ty::Str => "a string",
            Ty::Bool => "a boolean",
        }
    }
}

#[derive(Clone, Debug)]
enum Expr {
    Lit(Value),
    Slot(usize),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// A compiled filter; `text` is kept for messages and dry-run output.
#[derive(Clone, Debug)]
pub struct Filter {
    pub text: String,
    expr: Expr,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Num(Value),
    Str(String),
    Op(&'static str),
    LParen,
    RParen,
}

/// Splits a filter into tokens with their byte spans (`base` is the filter's offset in its
/// source).
fn lex(src: &str, base: usize) -> Result<Vec<(Tok, Range<usize>)>, Located> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let (tok, end) = if c.is_ascii_alphabetic() || c == '_' {
            lex_word(src, i)
        } else if c.is_ascii_digit() || (c == '.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            lex_number(src, i, base)?
        } else if c == '\'' || c == '"' {
            lex_string(src, i, c, base)?
        } else {
            lex_operator(src, i, c, base)?
        };
        out.push((tok, base + i..base + end));
        i = end;
    }
    Ok(out)
}

/// The word starting at byte `start`: a keyword (`and`, `or`, `not`, `true`, `false`) or an
/// axis name. Returns the token and the byte after it.
fn lex_word(src: &str, start: usize) -> (Tok, usize) {
    let b = src.as_bytes();
    let mut i = start;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    let word = &src[start..i];
    let tok = match word {
        "and" => Tok::Op("&&"),
        "or" => Tok::Op("||"),
        "not" => Tok::Op("!"),
        "true" => Tok::Num(Value::Bool(true)),
        "false" => Tok::Num(Value::Bool(false)),
        _ => Tok::Ident(word.to_string()),
    };
    (tok, i)
}

/// The integer or float starting at byte `start` (`_` separates digits). Returns the token
/// and the byte after it.
fn lex_number(src: &str, start: usize, base: usize) -> Result<(Tok, usize), Located> {
    let b = src.as_bytes();
    let mut i = start;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_') {
        i += 1;
    }
    let text = src[start..i].replace('_', "");
    let span = base + start..base + i;
    let v = if let Ok(n) = text.parse::<i64>() {
        Value::Int(n)
    } else if let Ok(f) = text.parse::<f64>() {
        Value::Float(f)
    } else {
        return Err((span, format!("bad number `{}`", &src[start..i])));
    };
    Ok((Tok::Num(v), i))
}

/// The word in `quote`s starting at byte `start` (`'f16'` or `"f16"`). Returns the token and
/// the byte after the closing quote.
fn lex_string(src: &str, start: usize, quote: char, base: usize) -> Result<(Tok, usize), Located> {
    let close = src[start + 1..].find(quote).ok_or_else(|| {
        (
            base + start..base + src.len(),
            "unterminated string literal".to_string(),
        )
    })?;
    let tok = Tok::Str(src[start + 1..start + 1 + close].to_string());
    Ok((tok, start + close + 2))
}

/// The operator or parenthesis at byte `i` (whose first byte is `c`), two characters before
/// one. Returns the token and the byte after it.
fn lex_operator(src: &str, i: usize, c: char, base: usize) -> Result<(Tok, usize), Located> {
    let two = src.get(i..i + 2).unwrap_or("");
    let op: Option<&'static str> = match two {
        "==" => Some("=="),
        "!=" => Some("!="),
        "<=" => Some("<="),
        ">=" => Some(">="),
        "&&" => Some("&&"),
        "||" => Some("||"),
        _ => None,
    };
    if let Some(op) = op {
        return Ok((Tok::Op(op), i + 2));
    }
    let tok = match c {
        '<' => Tok::Op("<"),
        '>' => Tok::Op(">"),
        '+' => Tok::Op("+"),
        '-' => Tok::Op("-"),
        '*' => Tok::Op("*"),
        '/' => Tok::Op("/"),
        '%' => Tok::Op("%"),
        '!' => Tok::Op("!"),
        '(' => Tok::LParen,
        ')' => Tok::RParen,
        '=' => {
            return Err((
                base + i..base + i + 1,
                "unexpected `=`, expected `==` to compare".into(),
            ));
        }
        _ => {
            // `c` is one byte; name the whole (possibly multi-byte) character.
            let other = src[i..].chars().next().unwrap_or(c);
            return Err((
                base + i..base + i + other.len_utf8(),
                format!("unexpected character `{other}`"),
            ));
        }
    };
    Ok((tok, i + 1))
}

/// The longest filter expression, in bytes (docs/sweep-files.md "Limits").
pub const MAX_LEN: usize = 1000;
/// The deepest nesting of `(`, `!` and unary `-` in a filter (docs/sweep-files.md "Limits"): parsing and
/// evaluating recurse, so the depth is bounded before the stack is.
pub const MAX_NESTING: usize = 32;

struct Parser<'a, F: Fn(&str) -> Option<(usize, Ty)>> {
    toks: Vec<(Tok, Range<usize>)>,
    pos: usize,
    end: usize,
    resolve: &'a F,
    depth: usize,
}

fn binding(op: &str) -> Option<(u8, BinOp)> {
    Some(match op {
        "||" => (1, BinOp::Or),
        "&&" => (2, BinOp::And),
        "==" => (3, BinOp::Eq),
        "!=" => (3, BinOp::Ne),
        "<" => (3, BinOp::Lt),
        "<=" => (3, BinOp::Le),
        ">" => (3, BinOp::Gt),
        ">=" => (3, BinOp::Ge),
        "+" => (4, BinOp::Add),
        "-" => (4, BinOp::Sub),
        "*" => (5, BinOp::Mul),
        "/" => (5, BinOp::Div),
        "%" => (5, BinOp::Rem),
        _ => return None,
    })
}

impl<F: Fn(&str) -> Option<(usize, Ty)>> Parser<'_, F> {
    fn peek(&self) -> Option<&(Tok, Range<usize>)> {
        self.toks.get(self.pos)
    }

    fn eof_span(&self) -> Range<usize> {
        self.end..self.end
    }

    fn expr(&mut self, min_bp: u8) -> Result<(Expr, Ty, Range<usize>), Located> {
        let (mut lhs, mut lty, mut lspan) = self.atom()?;
        while let Some((Tok::Op(op), span)) = self.peek().cloned() {
            let Some((bp, bin)) = binding(op) else { break };
            if bp < min_bp {
                break;
            }
            self.pos += 1;
            let (rhs, rty, rspan) = self.expr(bp + 1)?;
            let whole = lspan.start..rspan.end;
            let ty = match bin {
                BinOp::Or | BinOp::And => {
                    for (t, s) in [(lty, &lspan), (rty, &rspan)] {
                        if t != Ty::Bool {
                            return Err((
                                s.clone(),
                                format!("`{op}` needs booleans on both sides, found {}", t.name()),
                            ));
                        }
                    }
                    Ty::Bool
                }
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                    if lty != rty {
                        return Err((
                            whole,
                            format!("cannot compare {} with {}", lty.name(), rty.name()),
                        ));
                    }
                    Ty::Bool
                }
                _ => {
                    for (t, s) in [(lty, &lspan), (rty, &rspan)] {
                        if t != Ty::Num {
                            return Err((
                                s.clone(),
                                format!("`{op}` needs numbers, found {}", t.name()),
                            ));
                        }
                    }
                    Ty::Num
                }
            };
            let _ = span;
            lhs = Expr::Bin(bin, Box::new(lhs), Box::new(rhs));
            lty = ty;
            lspan = whole;
        }
        Ok((lhs, lty, lspan))
    }

    fn atom(&mut self) -> Result<(Expr, Ty, Range<usize>), Located> {
        let Some((tok, span)) = self.peek().cloned() else {
            return Err((
                self.eof_span(),
                "expression ends too early, expected a value".into(),
            ));
        };
        self.pos += 1;
        let nests = matches!(tok, Tok::LParen | Tok::Op("!") | Tok::Op("-"));
        if !nests {
            return self.atom_of(tok, span);
        }
        if self.depth >= MAX_NESTING {
            return Err((
                span,
                format!("the filter nests `(`, `!` or `-` more than {MAX_NESTING} deep"),
            ));
        }
        self.depth += 1;
        let atom = self.atom_of(tok, span);
        self.depth -= 1;
        atom
    }

    fn atom_of(
        &mut self,
        tok: Tok,
        span: Range<usize>,
    ) -> Result<(Expr, Ty, Range<usize>), Located> {
        match tok {
            Tok::Num(v) => {
                let ty = if matches!(v, Value::Bool(_)) {
                    Ty::Bool
                } else {
                    Ty::Num
                };
                Ok((Expr::Lit(v), ty, span))
            }
            Tok::Str(s) => Ok((Expr::Lit(Value::Str(s)), Ty::Str, span)),
            Tok::Ident(name) => match (self.resolve)(&name) {
                Some((slot, ty)) => Ok((Expr::Slot(slot), ty, span)),
                None => Err((span, format!("filter names unknown axis `{name}`"))),
            },
            Tok::Op("!") => {
                let (e, ty, s) = self.expr(6)?;
                if ty != Ty::Bool {
                    return Err((s, format!("`not` needs a boolean, found {}", ty.name())));
                }
                Ok((Expr::Not(Box::new(e)), Ty::Bool, span.start..s.end))
            }
            Tok::Op("-") => {
                let (e, ty, s) = self.expr(6)?;
                if ty != Ty::Num {
                    return Err((s, format!("`-` needs a number, found {}", ty.name())));
                }
                Ok((Expr::Neg(Box::new(e)), Ty::Num, span.start..s.end))
            }
            Tok::LParen => {
                let (e, ty, _) = self.expr(0)?;
                match self.peek().cloned() {
                    Some((Tok::RParen, close)) => {
                        self.pos += 1;
                        Ok((e, ty, span.start..close.end))
                    }
                    Some((_, s)) => Err((s, "expected `)`".into())),
                    // Point at the `(` left open: the end of the text is not where the fix goes.
                    None => Err((span, "missing `)` to close this `(`".into())),
                }
            }
            Tok::RParen | Tok::Op(_) => Err((span, "expected a value, an axis name or `(`".into())),
        }
    }
}

impl Filter {
    /// Compiles `text` (found at byte `base` of its source). `resolve` maps an axis name to its
    /// slot in a combination and its type, or None for a name that is not an axis of the sweep.
    pub fn compile(
        text: &str,
        base: usize,
        resolve: &impl Fn(&str) -> Option<(usize, Ty)>,
    ) -> Result<Filter, Located> {
        let end = base + text.len();
        if text.len() > MAX_LEN {
            return Err((
                base..base + 1,
                format!(
                    "the filter is {} bytes long, more than the limit of {MAX_LEN}",
                    text.len()
                ),
            ));
        }
        let toks = lex(text, base)?;
        if toks.is_empty() {
            return Err((base..end, "empty filter expression".into()));
        }
        let mut p = Parser {
            toks,
            pos: 0,
            end,
            resolve,
            depth: 0,
        };
        let (expr, ty, span) = p.expr(0)?;
        if let Some((_, s)) = p.peek() {
            return Err((s.clone(), "unexpected text after the expression".into()));
        }
        if ty != Ty::Bool {
            return Err((
                span,
                format!(
                    "a filter must be a condition (true/false), found {}",
                    ty.name()
                ),
            ));
        }
        Ok(Filter {
            text: text.to_string(),
            expr,
        })
    }

    pub fn matches(&self, slots: &[Value]) -> bool {
        matches!(eval(&self.expr, slots), Value::Bool(true))
    }
}

fn eval(e: &Expr, slots: &[Value]) -> Value {
    match e {
        Expr::Lit(v) => v.clone(),
        Expr::Slot(i) => slots.get(*i).cloned().unwrap_or(Value::Bool(false)),
        Expr::Not(x) => Value::Bool(!matches!(eval(x, slots), Value::Bool(true))),
        Expr::Neg(x) => match eval(x, slots) {
            Value::Int(i) => Value::Int(i.wrapping_neg()),
            Value::Float(f) => Value::Float(-f),
            other => other,
        },
        Expr::Bin(op, a, b) => {
            if *op == BinOp::And {
                return Value::Bool(
                    matches!(eval(a, slots), Value::Bool(true))
                        && matches!(eval(b, slots), Value::Bool(true)),
                );
            }
            if *op == BinOp::Or {
                return Value::Bool(
                    matches!(eval(a, slots), Value::Bool(true))
                        || matches!(eval(b, slots), Value::Bool(true)),
                );
            }
            let (x, y) = (eval(a, slots), eval(b, slots));
            let ord = x.compare(&y);
            match op {
                BinOp::Eq => Value::Bool(ord == Some(Ordering::Equal)),
                BinOp::Ne => Value::Bool(ord != Some(Ordering::Equal)),
                BinOp::Lt => Value::Bool(ord == Some(Ordering::Less)),
                BinOp::Le => Value::Bool(matches!(ord, Some(Ordering::Less | Ordering::Equal))),
                BinOp::Gt => Value::Bool(ord == Some(Ordering::Greater)),
                BinOp::Ge => Value::Bool(matches!(ord, Some(Ordering::Greater | Ordering::Equal))),
                _ => arith(*op, &x, &y),
            }
        }
    }
}

fn arith(op: BinOp, x: &Value, y: &Value) -> Value {
    if let (Value::Int(a), Value::Int(b)) = (x, y) {
        let r = match op {
            BinOp::Add => a.checked_add(*b),
            BinOp::Sub => a.checked_sub(*b),
            BinOp::Mul => a.checked_mul(*b),
            BinOp::Div => a.checked_div(*b),
            _ => a.checked_rem(*b),
        };
        // Overflow falls back to floats; division by zero gives NaN below, which compares false.
        if let Some(r) = r {
            return Value::Int(r);
        }
    }
    let (a, b) = (
        x.as_f64().unwrap_or(f64::NAN),
        y.as_f64().unwrap_or(f64::NAN),
    );
    Value::Float(match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div if b == 0.0 => f64::NAN,
        BinOp::Div => a / b,
        _ => a % b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(name: &str) -> Option<(usize, Ty)> {
        match name {
            "c_in" => Some((0, Ty::Num)),
            "c_out" => Some((1, Ty::Num)),
            "dtype" => Some((2, Ty::Str)),
            _ => None,
        }
    }

    fn f(text: &str) -> Filter {
        Filter::compile(text, 0, &resolve).unwrap()
    }

    #[test]
    fn comparisons_and_logic() {
        let row = [Value::Int(32), Value::Int(16), Value::Str("f16".into())];
        assert!(f("c_out < c_in").matches(&row));
        assert!(!f("c_out >= c_in").matches(&row));
        assert!(f("c_in >= 32 and dtype == 'f16'").matches(&row));
        assert!(f("not (c_in < 16) && c_out * 2 == c_in").matches(&row));
        assert!(f("c_in % 3 != 0 || false").matches(&row));
        assert!(!f("c_in / 0 > 1").matches(&row));
        assert!(f("-c_in < 0").matches(&row));
    }

    #[test]
    fn errors_name_the_problem_and_place() {
        let (span, msg) = Filter::compile("c_in > hw", 5, &resolve).unwrap_err();
        assert_eq!(msg, "filter names unknown axis `hw`");
        assert_eq!(span, 12..14);
        let (_, msg) = Filter::compile("c_in + 1", 0, &resolve).unwrap_err();
        assert!(msg.contains("must be a condition"), "{msg}");
        let (_, msg) = Filter::compile("dtype > 3", 0, &resolve).unwrap_err();
        assert!(
            msg.contains("cannot compare a string with a number"),
            "{msg}"
        );
        let (_, msg) = Filter::compile("c_in = 3", 0, &resolve).unwrap_err();
        assert!(msg.contains("expected `==`"), "{msg}");
        let (_, msg) = Filter::compile("(c_in > 3", 0, &resolve).unwrap_err();
        assert!(msg.contains("missing `)`"), "{msg}");
    }
}
