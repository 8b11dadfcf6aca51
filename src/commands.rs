//! Text of the small informational commands: `probe`, `solvers` and `list-ops`.

use crate::error::CmdError;
use crate::op::{Default as D, OpKind, ParamKind};
use std::fmt::Write as _;

/// What `probe` prints, and whether the asked backend (or, without one, any backend) can run.
pub fn probe_text(only: Option<&str>) -> (String, bool) {
    let mut s = String::new();
    let mut available = false;
    for info in crate::exec::supervise::oneoff::probe_all(only) {
        available |= info.available;
        if info.available {
            let _ = writeln!(s, "{}: available", info.backend);
            for d in &info.devices {
                let _ = writeln!(s, "  device: {d}");
            }
        } else {
            let _ = writeln!(
                s,
                "{}: unavailable ({})",
                info.backend,
                info.missing.as_deref().unwrap_or("unknown reason")
            );
        }
        for (lib, v) in &info.versions {
            let _ = writeln!(s, "  {lib}: {v}");
        }
        if info.backend == "rocm" {
            s.push_str(&crate::probe_trees::text(&info));
        }
    }
    (s, available)
}

/// `rocsweep solvers`: MIOpen's solver table, and with conv2d parameters and a ROCm device, the
/// solvers MIOpen lists for that problem. The flag says whether everything asked for was shown.
pub fn solvers_text(params: &[String]) -> Result<(String, bool), CmdError> {
    use crate::backend::rocm::solvers;
    let mut s = String::new();
    let _ = writeln!(s, "{:>5}  {:<40} algorithm", "id", "name");
    for (id, name, algo) in solvers::TABLE {
        let _ = writeln!(s, "{id:>5}  {name:<40} {}", algo.name());
    }
    let _ = writeln!(
        s,
        "(ids not in this table are shown as solver#<id>; `find` runs MIOpen's find path)"
    );
    if params.is_empty() {
        return Ok((s, true));
    }
    let mut toml =
        String::from("name = \"solvers\"\nop = \"conv2d\"\nbackend = \"rocm\"\n[axes]\n");
    for p in params {
        let Some((k, v)) = p.split_once('=') else {
            return Err(CmdError::BadInput(format!(
                "solvers: `{p}` is not NAME=VALUE (e.g. c_in=16)"
            )));
        };
        let literal = if v.parse::<f64>().is_ok() || v == "true" || v == "false" {
            v.to_string()
        } else {
            format!("{v:?}")
        };
        let _ = writeln!(toml, "{} = {literal}", k.trim());
    }
    // The arguments became lines 5.. of a sweep; an error names the argument, not that sweep.
    let sweep = crate::spec::load_str("solvers", &toml, &[]).map_err(|e| {
        let arg = e
            .line
            .checked_sub(5)
            .and_then(|i| params.get(i))
            .map_or(String::new(), |p| format!(" `{p}`"));
        CmdError::BadInput(format!("solvers{arg}: {}", e.message))
    })?;
    let case = match sweep.cases().next() {
        Some(Ok(c)) => c,
        Some(Err(e)) => return Err(CmdError::BadInput(format!("solvers: {e}"))),
        None => {
            return Err(CmdError::BadInput(
                "solvers: the parameters form no case".into(),
            ));
        }
    };
    let what = crate::op::canonical_text(OpKind::Conv2d, &case.values);
    let listed = crate::exec::supervise::oneoff::OneOff::start("rocm").and_then(|mut w| {
        if w.info.available {
            w.solvers(&case.problem).map(Some)
        } else {
            Ok(None)
        }
        .map(|l| (l, w.info.missing.clone()))
    });
    match listed {
        Ok((Some(names), _)) => {
            let _ = writeln!(s, "\nMIOpen lists for {what}:");
            for name in names {
                let _ = writeln!(s, "  {name}");
            }
            Ok((s, true))
        }
        Ok((None, why)) => {
            let why = why.unwrap_or_else(|| "the rocm backend cannot run".into());
            let _ = writeln!(s, "\nno ROCm device, so no problem-specific list: {why}");
            Ok((s, false))
        }
        Err(why) => Err(CmdError::Failure(format!("solvers: {why}"))),
    }
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
        let _ = writeln!(s, "  {:<13} default|all (every backend)", "solver");
        let blas = format!(
            "torch-matmul+BLAS torch-linear+BLAS (BLAS: {})",
            crate::backend::torch::BLAS_PREFERENCES.join(" ")
        );
        let mut torch = crate::backend::torch::solver_names(op).to_vec();
        if op == crate::op::OpKind::Gemm {
            torch.push(&blas);
        }
        let by_backend: [(&str, Vec<&str>); 4] = [
            ("cpu", crate::backend::cpu::solver_names(op).to_vec()),
            ("cuda", crate::backend::cuda::solver_names(op).to_vec()),
            ("rocm", crate::backend::rocm::solver_names(op)),
            ("torch", torch),
        ];
        for (backend, names) in by_backend {
            let names: Vec<&str> = names
                .into_iter()
                .filter(|n| !matches!(*n, "default" | "all"))
                .collect();
            if !names.is_empty() {
                let _ = writeln!(s, "  {:<13} {backend}: {}", "", names.join(" "));
            }
        }
    }
    s
}
