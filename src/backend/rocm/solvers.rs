//! MIOpen solver ids and names. No C call names a solver: ids are assigned in registration order
//! in MIOpen's solver registry, which is append-only, so the project keeps its own table (from
//! ../shared/ROCM-ABI.md). An id it does not know is shown as `solver#<id>`, never dropped.

/// MIOpen's miopenConvAlgorithm_t values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    Gemm,
    Direct,
    Fft,
    Winograd,
    ImplicitGemm,
    TransposeGemm,
}

impl Algo {
    pub fn from_raw(v: i32) -> Option<Algo> {
        Some(match v {
            0 => Algo::Gemm,
            1 => Algo::Direct,
            2 => Algo::Fft,
            3 => Algo::Winograd,
            4 => Algo::TransposeGemm,
            5 => Algo::ImplicitGemm,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Algo::Gemm => "GEMM",
            Algo::Direct => "Direct",
            Algo::Fft => "FFT",
            Algo::Winograd => "Winograd",
            Algo::ImplicitGemm => "ImplicitGEMM",
            Algo::TransposeGemm => "TransposeGEMM",
        }
    }

    /// FFT and Winograd transforms amplify rounding error (the engine's allowance, as on CUDA).
    pub fn tolerance_factor(self) -> f64 {
        match self {
            Algo::Fft | Algo::Winograd => crate::backend::engine::run::TRANSFORM_ERROR_FACTOR,
            _ => 1.0,
        }
    }
}

/// (id, name, algorithm) for every solver the project knows.
pub const TABLE: &[(u64, &str, Algo)] = &[
    (1, "ConvAsm3x3U", Algo::Direct),
    (2, "ConvAsm1x1U", Algo::Direct),
    (3, "ConvAsm1x1UV2", Algo::Direct),
    (11, "ConvOclDirectFwd", Algo::Direct),
    (13, "ConvOclDirectFwd1x1", Algo::Direct),
    (14, "ConvBinWinograd3x3U", Algo::Winograd),
    (15, "ConvBinWinogradRxS", Algo::Winograd),
    (26, "ConvHipImplicitGemmV4R1Fwd", Algo::ImplicitGemm),
    (34, "fft", Algo::Fft),
    (37, "ConvBinWinogradRxSf3x2", Algo::Winograd),
    (53, "ConvBinWinogradRxSf2x3", Algo::Winograd),
    (54, "ConvHipImplicitGemmV4R4Fwd", Algo::ImplicitGemm),
    (62, "ConvAsmImplicitGemmV4R1DynamicFwd", Algo::ImplicitGemm),
    (
        63,
        "ConvAsmImplicitGemmV4R1DynamicFwd_1x1",
        Algo::ImplicitGemm,
    ),
    (
        64,
        "ConvHipImplicitGemmForwardV4R4Xdlops",
        Algo::ImplicitGemm,
    ),
    (65, "ConvAsmImplicitGemmV4R1DynamicBwd", Algo::ImplicitGemm),
    (66, "ConvAsmImplicitGemmV4R1DynamicWrw", Algo::ImplicitGemm),
    (
        72,
        "ConvAsmImplicitGemmGTCDynamicWrwXdlops",
        Algo::ImplicitGemm,
    ),
    (
        74,
        "ConvAsmImplicitGemmGTCDynamicFwdXdlops",
        Algo::ImplicitGemm,
    ),
    (
        82,
        "ConvAsmImplicitGemmGTCDynamicBwdXdlops",
        Algo::ImplicitGemm,
    ),
    (84, "ConvBinWinogradRxSf2x3g1", Algo::Winograd),
    (85, "ConvDirectNaiveConvFwd", Algo::Direct),
    (86, "ConvDirectNaiveConvBwd", Algo::Direct),
    (87, "ConvDirectNaiveConvWrw", Algo::Direct),
    (88, "GemmFwd1x1_0_1", Algo::Gemm),
    (90, "GemmFwd1x1_0_2", Algo::Gemm),
    (91, "GemmFwdRest", Algo::Gemm),
    (95, "GemmBwd1x1_stride2", Algo::Gemm),
    (96, "GemmBwd1x1_stride1", Algo::Gemm),
    (97, "GemmBwdRest", Algo::Gemm),
    (98, "ConvMlirIgemmFwd", Algo::ImplicitGemm),
    (99, "ConvMlirIgemmBwd", Algo::ImplicitGemm),
    (100, "ConvMlirIgemmWrW", Algo::ImplicitGemm),
    (101, "GemmWrw1x1_stride1", Algo::Gemm),
    (102, "GemmWrwUniversal", Algo::Gemm),
    (114, "ConvCkIgemmFwdV6r1DlopsNchw", Algo::ImplicitGemm),
    (128, "ConvHipImplicitGemmFwdXdlops", Algo::ImplicitGemm),
    (129, "ConvHipImplicitGemmBwdXdlops", Algo::ImplicitGemm),
    (137, "ConvHipImplicitGemmGroupFwdXdlops", Algo::ImplicitGemm),
    (139, "ConvWinoFuryRxS<2-3>", Algo::Winograd),
    (155, "ConvHipImplicitGemmGroupBwdXdlops", Algo::ImplicitGemm),
    (156, "ConvHipImplicitGemmGroupWrwXdlops", Algo::ImplicitGemm),
    (185, "ConvDepthwiseFwd2D", Algo::Direct),
    (216, "ConvDepthwiseFwd3D", Algo::Direct),
    (217, "ConvHipDirectFwd", Algo::Direct),
];

/// Every named solver with its MIOpen id (what the manifest records for `repro`).
pub fn ids() -> std::collections::BTreeMap<String, u64> {
    TABLE.iter().map(|(i, n, _)| (n.to_string(), *i)).collect()
}

/// The name of a solver id: from the table, else `solver#<id>`.
pub fn name(id: u64) -> String {
    TABLE
        .iter()
        .find(|(i, _, _)| *i == id)
        .map(|(_, n, _)| n.to_string())
        .unwrap_or_else(|| format!("solver#{id}"))
}

/// The solver id a name stands for: a table name or `solver#<id>`.
pub fn id(name: &str) -> Option<u64> {
    TABLE
        .iter()
        .find(|(_, n, _)| *n == name)
        .map(|(i, _, _)| *i)
        .or_else(|| name.strip_prefix("solver#")?.parse().ok())
}

pub fn algo(id: u64) -> Option<Algo> {
    TABLE.iter().find(|(i, _, _)| *i == id).map(|(_, _, a)| *a)
}

/// The solver names a sweep may write for conv2d on ROCm (besides `solver#<id>`).
pub fn names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = TABLE.iter().map(|(_, n, _)| *n).collect();
    v.push(FIND);
    v
}

/// The find path (miopenFindConvolution*Algorithm then the algorithm it picked): what PyTorch does.
pub const FIND: &str = "find";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ids_are_kept() {
        assert_eq!(name(53), "ConvBinWinogradRxSf2x3");
        assert_eq!(id("ConvBinWinogradRxSf2x3"), Some(53));
        assert_eq!(name(9999), "solver#9999");
        assert_eq!(id("solver#9999"), Some(9999));
        assert_eq!(id("NoSuchSolver"), None);
        let mut ids: Vec<u64> = TABLE.iter().map(|t| t.0).collect();
        ids.dedup();
        assert_eq!(ids.len(), TABLE.len(), "ids are unique and sorted");
    }
}
