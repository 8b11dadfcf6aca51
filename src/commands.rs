//! Text of the small informational commands: `probe` and `list-ops`.

use crate::backend;
use crate::op::{Default as D, OpKind, ParamKind};
use std::fmt::Write as _;

pub fn probe_text() -> String {
    let mut s = String::new();
    for info in backend::probe_all() {
        if info.available {
            let _ = writeln!(s, "{}: available", info.backend);
            for d in &info.devices {
                let _ = writeln!(s, "  device: {d}");
            }
            for (lib, v) in &info.versions {
                let _ = writeln!(s, "  {lib}: {v}");
            }
        } else {
            let _ = writeln!(
                s,
                "{}: unavailable ({})",
                info.backend,
                info.missing.as_deref().unwrap_or("unknown reason")
            );
        }
    }
    s
}

pub fn list_ops_text() -> String {
    let mut s = String::new();
    for op in OpKind::ALL {
        let _ = writeln!(s, "{}: {}", op.name(), op.summary());
        for p in op.params() {
            let kind = match p.kind {
                ParamKind::Int { min } => format!("integer >= {min}"),
                ParamKind::Float { .. } => "number".to_string(),
                ParamKind::Bool => "boolean".to_string(),
                ParamKind::Choice(words) => words.join("|"),
                ParamKind::DType(types) => {
                    types.iter().map(|t| t.name()).collect::<Vec<_>>().join("|")
                }
            };
            let default = match p.default {
                D::Int(i) => i.to_string(),
                D::Float(f) => f.to_string(),
                D::Str(t) => t.to_string(),
                D::Bool(b) => b.to_string(),
                D::SameAs(o) => format!("same as {o}"),
            };
            let _ = writeln!(
                s,
                "  {:<13} {:<24} default {:<12} {}",
                p.name, kind, default, p.doc
            );
        }
        let _ = writeln!(s, "  {:<13} {}", "solver", op.solver_names().join("|"));
    }
    s
}
