//! GEMM through a heuristic matmul library (cuBLASLt, hipBLASLt), written once: the
//! column-major view of the row-major product, the workspace offered to the heuristic, the
//! heuristic's list as solver names (`<prefix><rank><tag><id>`) and the algorithm a name picks,
//! and the scalars alpha = 1, beta = 0. The libraries' calls stay the backends'.

use crate::backend::UnitError;
use crate::op::gemm::Gemm;
use std::ffi::c_void;

/// Workspace offered to the heuristic, as frameworks do.
pub const WORKSPACE: u64 = 64 << 20;

/// The column-major (rows, cols) of A' = B and of B' = A: row-major C = op(A) op(B) is computed
/// as the column-major C^T = op(B)^T op(A)^T, which needs no copies; C' is (n, m).
pub fn col_major(p: &Gemm) -> ((usize, usize), (usize, usize)) {
    let a = if p.trans_b { (p.k, p.n) } else { (p.n, p.k) };
    let b = if p.trans_a { (p.m, p.k) } else { (p.k, p.m) };
    (a, b)
}

/// How a library's heuristic algorithms are named as solvers, and its messages.
pub struct Heuristic {
    /// The library as messages name it ("cuBLASLt").
    pub library: &'static str,
    /// Before the rank ("lt#").
    pub prefix: &'static str,
    /// Between the rank and the algorithm's id ("-algo").
    pub tag: &'static str,
    /// The solver names that pick the heuristic's first algorithm.
    pub first: &'static [&'static str],
    /// The solvers a message suggests ("heuristic, all or lt#N").
    pub usage: &'static str,
    /// The library's status name for a problem it does not support.
    pub not_supported: &'static str,
    /// What an id is ("algo"), and how the solver's id is introduced ("algo ").
    pub id_noun: &'static str,
    pub named: &'static str,
}

impl Heuristic {
    /// The heuristic's algorithms (best first) as solver names.
    pub fn names<H>(&self, hs: &[H], id: impl Fn(&H) -> i32) -> Vec<String> {
        let (prefix, tag) = (self.prefix, self.tag);
        hs.iter()
            .enumerate()
            .map(|(i, h)| format!("{prefix}{i}{tag}{}", id(h)))
            .collect()
    }

    /// The algorithm `solver` names among the heuristic's `hs`: rank 0 for the `first` names,
    /// else the `N` of `<prefix>N`; an id after the tag must still be the algorithm at that rank
    /// (a row must time the algorithm it names, even if the heuristic's order changed since).
    pub fn pick<H: Copy>(
        &self,
        hs: &[H],
        solver: &str,
        id: impl Fn(&H) -> i32,
    ) -> Result<H, UnitError> {
        let rank = if self.first.contains(&solver) {
            0
        } else {
            solver
                .strip_prefix(self.prefix)
                .and_then(|r| r.split('-').next())
                .and_then(|r| r.parse::<usize>().ok())
                .ok_or_else(|| {
                    UnitError::Unsupported(format!(
                        "{} has no solver `{solver}` (use {})",
                        self.library, self.usage
                    ))
                })?
        };
        let Some(algo) = hs.get(rank).copied() else {
            return Err(UnitError::Unsupported(format!(
                "{} (the heuristic returned {} algorithms, none at rank {rank})",
                self.not_supported,
                hs.len()
            )));
        };
        if let Some(want) = solver
            .split(self.tag)
            .nth(1)
            .and_then(|s| s.parse::<i32>().ok())
            && id(&algo) != want
        {
            return Err(UnitError::Unsupported(format!(
                "the heuristic's rank {rank} is now {} {} (the solver names {}{want})",
                self.id_noun,
                id(&algo),
                self.named
            )));
        }
        Ok(algo)
    }
}

/// alpha = 1 and beta = 0 in both scale types a GEMM takes.
pub struct Scalars {
    a32: f32,
    b32: f32,
    a16: half::f16,
    b16: half::f16,
}

impl Scalars {
    pub const ONE: Scalars = Scalars {
        a32: 1.0,
        b32: 0.0,
        a16: half::f16::ONE,
        b16: half::f16::ZERO,
    };

    /// The addresses of alpha and beta: f16 values for an f16 scale type, else f32. They point
    /// into `self`: keep it alive (a local, not the constant) until the call has read them.
    pub fn ptrs(&self, f16: bool) -> (*const c_void, *const c_void) {
        if f16 {
            (
                (&self.a16 as *const half::f16).cast(),
                (&self.b16 as *const half::f16).cast(),
            )
        } else {
            (
                (&self.a32 as *const f32).cast(),
                (&self.b32 as *const f32).cast(),
            )
        }
    }
}
