//! What a tuning knows of each shape: the default's and the best's rows, the GEMM, which files
//! carry it (or why not) and what verification found. The files' writers read it, the command
//! fills it in.

use super::shape::Blas;
use super::tunableop::Lib;
use super::verify::Check;
use crate::analyze::default_best::Pair;
use crate::op::gemm::Gemm;
use std::collections::BTreeMap;

/// One shape whose best named solution beats the library's default beyond noise.
pub struct Tuned<'a> {
    pub pair: Pair<'a>,
    pub gemm: Gemm,
    pub blas: Blas,
    /// The library and solution index the best solver names (None: no file can name it).
    pub target: Option<(Lib, i64)>,
    /// Per file: written (Ok) or why the file leaves the shape out.
    pub files: BTreeMap<&'static str, Result<(), String>>,
    /// Per verified file: what the verification found.
    pub checks: BTreeMap<&'static str, Check>,
}

/// The library and solution index of a solver name (`hipblaslt#2-sol1002`, `rocblas#0-sol-1244`).
pub fn target_of(solver: &str) -> Option<(Lib, i64)> {
    let (lib, rest) = if let Some(r) = solver.strip_prefix("hipblaslt#") {
        (Lib::Hipblaslt, r)
    } else {
        (Lib::Rocblas, solver.strip_prefix("rocblas#")?)
    };
    let (_, index) = rest.split_once("-sol")?;
    Some((lib, index.parse().ok()?))
}

/// What `chosen` says when the library ran `index` as its own pick (the ROCm backend's text).
pub fn chosen_text(lib: Lib, index: i64) -> String {
    let name = match lib {
        Lib::Hipblaslt => "hipblaslt",
        Lib::Rocblas => "rocblas",
    };
    crate::backend::rocm::chosen_solution(name, index)
}
