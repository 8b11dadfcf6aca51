//! What the fake hipRTC checks in a program before "compiling" it, following the real rules:
//! - conditionals (`#if`, `#ifdef`, `#ifndef`, `#elif`, `#else`, `#endif`) are evaluated, with
//!   `__HIPCC_RTC__` and the built-in runtime header's macros defined, so only lines the real
//!   compiler would see are checked;
//! - a program may include only the headers given to hiprtcCreateProgram ("fatal error: 'X'
//!   file not found", as the real one says when no HIP headers are on the default path);
//!   `__has_include` is true only for those headers;
//! - the built-in header already defines the half types (every release) and, from ROCm 5.5, the
//!   legacy `hip_bfloat16` class with its include guard `_HIP_BFLOAT16_H_`: defining them again is
//!   "redefinition". No released built-in header (5.2 through 7.2) carries amd_hip_bf16.h's
//!   `__hip_bfloat16`, so the fake never defines its guard either.
//!
//! The expression evaluator handles what kernel sources use: `defined(X)`, `defined X`,
//! `__has_include(<h>)`, integers, `!`, `&&`, `||` and parentheses. An identifier it does not
//! know is 0, as in C.

use std::collections::HashSet;

/// The macros the built-in runtime header defines for a HIP release (major, minor).
pub fn builtin_macros(hip: (u32, u32)) -> HashSet<String> {
    let mut m: HashSet<String> = [
        "__HIPCC_RTC__",
        "__HIP__",
        "__HIP_PLATFORM_AMD__",
        "__HIP_PLATFORM_HCC__",
        "__HIPCC__",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if has_legacy_bf16(hip) {
        m.insert(LEGACY_BF16_GUARD.to_string());
    }
    m
}

/// The include guard of hip_bfloat16.h (the legacy `hip_bfloat16` class).
pub const LEGACY_BF16_GUARD: &str = "_HIP_BFLOAT16_H_";

/// Whether the built-in header of HIP `hip` carries the legacy hip_bfloat16 class (from 5.5,
/// read from Debian's libhiprtc-builtins 5.2.3, 5.7.1, 6.4.3 and 7.2.4 and clr's HIPRTC.cmake).
pub fn has_legacy_bf16(hip: (u32, u32)) -> bool {
    hip >= (5, 5)
}

/// A compile error, formatted as the real compiler's log line.
#[derive(Debug, PartialEq)]
pub struct Error {
    pub line: usize,
    pub message: String,
}

/// The lines the compiler sees (1-based number, text), or the first error.
pub fn active_lines(
    src: &str,
    provided: &[String],
    defined: &HashSet<String>,
) -> Result<Vec<(usize, String)>, Error> {
    let mut defs = defined.clone();
    // Per open conditional: (this branch active, some branch already taken, parent active).
    let mut stack: Vec<(bool, bool, bool)> = Vec::new();
    let mut out = Vec::new();
    let active = |s: &Vec<(bool, bool, bool)>| s.last().is_none_or(|t| t.0);
    for (i, line) in src.lines().enumerate() {
        let n = i + 1;
        let t = line.trim_start();
        let Some(d) = t.strip_prefix('#').map(str::trim_start) else {
            if active(&stack) {
                out.push((n, line.to_string()));
            }
            continue;
        };
        let (word, rest) = split_word(d);
        let on = active(&stack);
        let eval = |e: &str, defs: &HashSet<String>| Expr::new(e, provided, defs).eval();
        match word {
            "if" => {
                let v = on && eval(rest, &defs) != 0;
                stack.push((v, v, on));
            }
            "ifdef" | "ifndef" => {
                let is = defs.contains(split_word(rest).0);
                let v = on && (is == (word == "ifdef"));
                stack.push((v, v, on));
            }
            "elif" => {
                if let Some(top) = stack.last_mut() {
                    let v = top.2 && !top.1 && Expr::new(rest, provided, &defs).eval() != 0;
                    *top = (v, top.1 || v, top.2);
                }
            }
            "else" => {
                if let Some(top) = stack.last_mut() {
                    let v = top.2 && !top.1;
                    *top = (v, true, top.2);
                }
            }
            "endif" => {
                stack.pop();
            }
            "define" if on => {
                defs.insert(split_word(rest).0.trim_end_matches('(').to_string());
                out.push((n, line.to_string()));
            }
            "undef" if on => {
                defs.remove(split_word(rest).0);
            }
            "include" if on => {
                let name = rest.trim().trim_matches(|c| matches!(c, '<' | '>' | '"'));
                if !provided.iter().any(|p| p == name) {
                    return Err(Error {
                        line: n,
                        message: format!("fatal error: '{name}' file not found"),
                    });
                }
            }
            _ if on => out.push((n, line.to_string())),
            _ => {}
        }
    }
    Ok(out)
}

/// Names the built-in header defines that an active line defines again.
pub fn redefinition(lines: &[(usize, String)], defined: &HashSet<String>) -> Option<Error> {
    let mut builtin = vec!["__half_raw", "__half2_raw", "__half", "__half2"];
    if defined.contains(LEGACY_BF16_GUARD) {
        builtin.push("hip_bfloat16");
    }
    for (n, l) in lines {
        let Some(defined_name) = declared_name(l) else {
            continue;
        };
        for name in &builtin {
            if defined_name == *name {
                return Some(Error {
                    line: *n,
                    message: format!("error: redefinition of '{name}'"),
                });
            }
        }
    }
    None
}

/// The type a line defines: `struct NAME {`, `typedef ... NAME;`.
fn declared_name(l: &str) -> Option<&str> {
    let words: Vec<&str> = l
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    match words.first()? {
        &"struct" | &"class" | &"union" if l.contains('{') => words.get(1).copied(),
        &"typedef" => l.split(';').next().and_then(|d| {
            d.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .rfind(|w| !w.is_empty())
        }),
        _ => None,
    }
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// A recursive-descent evaluator over the directive's text.
struct Expr<'a> {
    s: &'a [u8],
    i: usize,
    provided: &'a [String],
    defs: &'a HashSet<String>,
}

impl<'a> Expr<'a> {
    fn new(s: &'a str, provided: &'a [String], defs: &'a HashSet<String>) -> Expr<'a> {
        let s = s.split("//").next().unwrap_or("");
        Expr {
            s: s.as_bytes(),
            i: 0,
            provided,
            defs,
        }
    }

    fn eval(&mut self) -> i64 {
        self.or()
    }

    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, t: &str) -> bool {
        self.ws();
        let ok = self.s[self.i..].starts_with(t.as_bytes());
        if ok {
            self.i += t.len();
        }
        ok
    }

    fn or(&mut self) -> i64 {
        let mut v = self.and();
        while self.eat("||") {
            let r = self.and();
            v = i64::from(v != 0 || r != 0);
        }
        v
    }

    fn and(&mut self) -> i64 {
        let mut v = self.unary();
        while self.eat("&&") {
            let r = self.unary();
            v = i64::from(v != 0 && r != 0);
        }
        v
    }

    fn unary(&mut self) -> i64 {
        if self.eat("!") {
            return i64::from(self.unary() == 0);
        }
        if self.eat("(") {
            let v = self.or();
            self.eat(")");
            return v;
        }
        self.ws();
        let start = self.i;
        while self
            .s
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            self.i += 1;
        }
        let word = String::from_utf8_lossy(&self.s[start..self.i]).to_string();
        match word.as_str() {
            "defined" => {
                let paren = self.eat("(");
                self.ws();
                let (name, _) = split_word(std::str::from_utf8(&self.s[self.i..]).unwrap_or(""));
                self.i += name.len();
                if paren {
                    self.eat(")");
                }
                i64::from(self.defs.contains(name))
            }
            "__has_include" => {
                self.eat("(");
                self.ws();
                let rest = std::str::from_utf8(&self.s[self.i..]).unwrap_or("");
                let close = rest.find(')').unwrap_or(rest.len());
                self.i += close;
                self.eat(")");
                let name = rest[..close]
                    .trim()
                    .trim_matches(|c| matches!(c, '<' | '>' | '"'));
                i64::from(self.provided.iter().any(|p| p == name))
            }
            w => w.parse().unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(hip: (u32, u32)) -> HashSet<String> {
        builtin_macros(hip)
    }

    #[test]
    fn an_include_of_an_unprovided_header_is_file_not_found() {
        let src = "#pragma once\n#include <hip/hip_fp16.h>\n";
        let e = active_lines(src, &[], &defs((5, 2))).unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(e.message, "fatal error: 'hip/hip_fp16.h' file not found");
    }

    #[test]
    fn a_provided_header_may_be_included() {
        let src = "#include \"mine.h\"\nint x;\n";
        let lines = active_lines(src, &["mine.h".into()], &defs((5, 2))).unwrap();
        assert_eq!(lines, vec![(2, "int x;".to_string())]);
    }

    #[test]
    fn includes_behind_a_false_condition_are_not_seen() {
        let src =
            "#if !defined(__HIPCC_RTC__)\n#include <hip/hip_runtime.h>\n#else\nint rtc;\n#endif\n";
        let lines = active_lines(src, &[], &defs((6, 2))).unwrap();
        assert_eq!(lines, vec![(4, "int rtc;".to_string())]);
    }

    #[test]
    fn has_include_is_true_only_for_provided_headers() {
        let src =
            "#if __has_include(<hip/hip_bf16.h>)\n#include <hip/hip_bf16.h>\n#endif\nint y;\n";
        assert!(active_lines(src, &[], &defs((6, 2))).is_ok());
    }

    #[test]
    fn the_builtin_bf16_guard_follows_the_release() {
        let src = "#if defined(_HIP_INCLUDE_HIP_AMD_DETAIL_HIP_BF16_H_)\nint hip_bf16;\n#elif defined(_HIP_BFLOAT16_H_)\nint vendor;\n#else\nint by_hand;\n#endif\n";
        let old = active_lines(src, &[], &defs((5, 2))).unwrap();
        let new = active_lines(src, &[], &defs((7, 2))).unwrap();
        assert_eq!(old, vec![(6, "int by_hand;".to_string())]);
        assert_eq!(new, vec![(4, "int vendor;".to_string())]);
    }

    #[test]
    fn redefining_the_builtin_half_type_is_an_error() {
        let lines = vec![(3, "struct __half_raw { unsigned short x; };".to_string())];
        let e = redefinition(&lines, &defs((5, 2))).unwrap();
        assert_eq!(e.message, "error: redefinition of '__half_raw'");
        let again = [(1, "typedef unsigned short __half;".to_string())];
        assert!(redefinition(&again, &defs((5, 2))).is_some());
        let uses = [(1, "typedef __half rs_half;".to_string())];
        assert!(redefinition(&uses, &defs((5, 2))).is_none());
    }
}
