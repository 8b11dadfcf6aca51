//! PyTorch TunableOp's results file (`PYTORCH_TUNABLEOP_FILENAME`), for PyTorch 2.5 to 2.11:
//! `Validator,NAME,VALUE` lines exactly as the target environment's
//! `torch.cuda.tunable.get_validators()` gives them (PyTorch rejects the whole file when a key or
//! value differs), then `OpSignature,ParamSignature,Solution,ms` rows:
//! - op: `GemmTunableOp_<T>_<A><B>` (`GemmStridedBatchedTunableOp_...` for a batch), T `float`
//!   (`tf32` from 2.8 where TF32 is allowed), `Half`, `BFloat16`, `double`; A and B the BLAS
//!   transpose letters of the column-major call (`shape::Blas`);
//! - params: `<a><b>_<m>_<n>_<k>` (2.5, 2.6) or `<a><b>_<m>_<n>_<k>_ld_<lda>_<ldb>_<ldc>` (2.7 on),
//!   `_B_<batch>` after k for a batch;
//! - solution: `Gemm_Hipblaslt_<index>` (2.7 on; `Gemm_Hipblaslt_<A><B>_<index>` in 2.5 and 2.6,
//!   the index hipblaslt_ext::getIndexFromAlgo's) or `Gemm_Rocblas_<index>` (rocBLAS's solution
//!   index). A CUDA build up to 2.11 registers only `Default`; a later one (2.15 read from its
//!   headers: validators `CUBLASLT_VERSION` and `CUDA_DEVICE`) also cuBLASLt's algorithms by
//!   their configuration (`Gemm_Cublaslt_id_<id>_tile_<t>_stages_<s>_splitk_<k>_red_<r>_...`),
//!   which rocsweep does not write: nothing it names here is a CUDA solution.

use super::shape::Blas;
use crate::dtype::DType;
use std::fmt::Write as _;
use std::process::Command;

/// The file as device 0 reads it: PyTorch puts the device's ordinal before the dot of
/// PYTORCH_TUNABLEOP_FILENAME's name ([`NAME`]).
pub const FILE: &str = "tunableop0.csv";
/// The name PYTORCH_TUNABLEOP_FILENAME gives.
pub const NAME: &str = "tunableop.csv";

/// The target environment's PyTorch, as its own Python says.
#[derive(Clone, Debug, PartialEq)]
pub struct Torch {
    pub version: String,
    pub validators: Vec<(String, String)>,
}

/// The library a row's solution belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lib {
    Hipblaslt,
    Rocblas,
}

const PROBE: &str = r#"import sys
if sys.path and sys.path[0] in ("", "."):
    del sys.path[0]
import json
out = {}
try:
    import torch
    out["version"] = torch.__version__
    out["validators"] = [[str(k), str(v)] for k, v in torch.cuda.tunable.get_validators()]
except Exception as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
"#;

/// Asks `python` for its torch's version and TunableOp validators.
pub fn read(python: &std::path::Path) -> Result<Torch, String> {
    let o = Command::new(python)
        .args(["-c", PROBE])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    let text = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = text
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            format!(
                "{} did not answer (exit {:?}): {}",
                python.display(),
                o.status.code(),
                String::from_utf8_lossy(&o.stderr).trim()
            )
        })?;
    let version = v["version"].as_str().unwrap_or("").to_string();
    if let Some(e) = v["error"].as_str() {
        // The first sentence of the exception: CUDA's run on for paragraphs.
        let e = e.lines().next().unwrap_or("");
        let e = e.split(" Search for ").next().unwrap_or(e);
        return Err(if version.is_empty() {
            format!("{} cannot import torch ({e})", python.display())
        } else {
            format!(
                "TunableOp's validators could not be read from the torch {version} of {} (a CPU build has no TunableOp; a GPU build needs its device): {e}",
                python.display()
            )
        });
    }
    let validators = v["validators"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|kv| Some((kv[0].as_str()?.to_string(), kv[1].as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Ok(Torch {
        version,
        validators,
    })
}

impl Torch {
    /// (major, minor) of the version.
    fn release(&self) -> (u32, u32) {
        let mut p = self
            .version
            .split(['.', '+'])
            .map(|x| x.parse::<u32>().unwrap_or(0));
        (p.next().unwrap_or(0), p.next().unwrap_or(0))
    }

    fn validator(&self, key: &str) -> Option<&str> {
        self.validators
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Why this PyTorch cannot load a row naming `lib`'s solutions measured with hipBLASLt git
    /// revision `git` (None: it can).
    pub fn refuses(&self, lib: Lib, git: Option<&str>) -> Option<String> {
        let (key, name) = match lib {
            Lib::Hipblaslt => ("HIPBLASLT_VERSION", "hipBLASLt"),
            Lib::Rocblas => ("ROCBLAS_VERSION", "rocBLAS"),
        };
        let Some(value) = self.validator(key) else {
            let keys: Vec<&str> = self.validators.iter().map(|(k, _)| k.as_str()).collect();
            // A CUDA build that validates cuBLASLt's version tunes cuBLASLt's algorithms too.
            let knows = if self.validator("CUBLASLT_VERSION").is_some() {
                "only `Default` and cuBLASLt's algorithms"
            } else {
                "only `Default`"
            };
            return Some(format!(
                "the target PyTorch {} is not a ROCm build (its TunableOp validators: {}): its TunableOp knows no {name} solution, {knows}",
                self.version,
                keys.join(", ")
            ));
        };
        if let (Lib::Hipblaslt, Some(git)) = (lib, git)
            && value.split('-').nth(1).is_some_and(|g| g != git)
        {
            return Some(format!(
                "the target PyTorch's hipBLASLt is {value}, the run measured git revision {git}: solution indices are one build's"
            ));
        }
        None
    }

    /// The file's type name for a problem, or why it has none.
    fn type_name(&self, dtype: DType, out: DType, compute: DType) -> Result<&'static str, String> {
        if out != dtype {
            return Err(format!(
                "out_dtype {} differs from dtype {}: torch.matmul writes its inputs' type",
                out.name(),
                dtype.name()
            ));
        }
        Ok(match (dtype, compute) {
            (DType::F32, DType::Tf32) if self.release() >= (2, 8) => "tf32",
            (DType::F32, DType::Tf32) => {
                return Err(format!(
                    "compute = tf32: TunableOp names TF32 problems from PyTorch 2.8 (this is {})",
                    self.version
                ));
            }
            (DType::F32, _) => "float",
            (DType::F16, _) => "Half",
            (DType::Bf16, _) => "BFloat16",
            (DType::F64, _) => "double",
            (DType::Tf32, _) => return Err("tf32 is not a storage type".into()),
        })
    }

    /// One results row, or why the problem cannot be one.
    pub fn row(
        &self,
        b: &Blas,
        (dtype, out, compute): (DType, DType, DType),
        lib: Lib,
        index: i64,
        ms: f64,
    ) -> Result<String, String> {
        let t = self.type_name(dtype, out, compute)?;
        let (la, lb) = (Blas::letter(b.trans_a), Blas::letter(b.trans_b));
        let op = if b.batch > 1 {
            format!("GemmStridedBatchedTunableOp_{t}_{la}{lb}")
        } else {
            format!("GemmTunableOp_{t}_{la}{lb}")
        };
        let mut params = format!(
            "{}{}_{}_{}_{}",
            la.to_ascii_lowercase(),
            lb.to_ascii_lowercase(),
            b.m,
            b.n,
            b.k
        );
        if b.batch > 1 {
            let _ = write!(params, "_B_{}", b.batch);
        }
        let new = self.release() >= (2, 7);
        if new {
            let _ = write!(params, "_ld_{}_{}_{}", b.lda, b.ldb, b.ldc);
        }
        let solution = match lib {
            Lib::Hipblaslt if new => format!("Gemm_Hipblaslt_{index}"),
            Lib::Hipblaslt => format!("Gemm_Hipblaslt_{la}{lb}_{index}"),
            Lib::Rocblas => format!("Gemm_Rocblas_{index}"),
        };
        Ok(format!("{op},{params},{solution},{}", six(ms)))
    }

    /// The whole file: the validators, then the rows.
    pub fn text(&self, rows: &[String]) -> String {
        let mut s = String::new();
        for (k, v) in &self.validators {
            let _ = writeln!(s, "Validator,{k},{v}");
        }
        for r in rows {
            let _ = writeln!(s, "{r}");
        }
        s
    }
}

/// A time with six significant digits, as PyTorch writes it.
fn six(ms: f64) -> String {
    let digits = 5 - ms.abs().log10().floor().clamp(-10.0, 5.0) as i32;
    let s = format!("{ms:.*}", digits.max(0) as usize);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::gemm::Gemm;

    fn rocm_torch(version: &str) -> Torch {
        Torch {
            version: version.into(),
            validators: vec![
                (
                    "PT_VERSION".into(),
                    version.split('+').next().unwrap_or("").into(),
                ),
                ("HIP_VERSION".into(), "701".into()),
                ("ROCBLAS_VERSION".into(), "5.1.0.abc".into()),
                ("HIPBLASLT_VERSION".into(), "100100-d3f1a2b".into()),
                ("GCN_ARCH_NAME".into(), "gfx942:sramecc+:xnack-".into()),
            ],
        }
    }

    /// A reader written from PyTorch's documented format: `Validator,K,V` lines, then
    /// `op,params,solution,time` with at least 4 fields.
    fn parse(text: &str) -> (Vec<(String, String)>, Vec<[String; 4]>) {
        let mut v = Vec::new();
        let mut rows = Vec::new();
        for line in text.lines().filter(|l| !l.is_empty()) {
            let f: Vec<&str> = line.split(',').collect();
            if f[0] == "Validator" && f.len() >= 3 {
                v.push((f[1].to_string(), f[2..].join(",")));
            } else if f.len() >= 4 {
                rows.push([f[0], f[1], f[2], f[3]].map(str::to_string));
            }
        }
        (v, rows)
    }

    fn matmul() -> Gemm {
        Gemm {
            m: 1024,
            n: 256,
            k: 512,
            trans_a: false,
            trans_b: false,
            batch: 1,
            dtype: DType::F32,
            out_dtype: DType::F32,
            compute: DType::F32,
        }
    }

    #[test]
    fn a_matmul_row_is_pytorchs_signature_and_round_trips_with_its_validators() {
        let t = rocm_torch("2.9.1+rocm7.0");
        let g = matmul();
        let types = (g.dtype, g.out_dtype, g.compute);
        let row = t
            .row(&Blas::of(&g), types, Lib::Hipblaslt, 1234, 0.0123456789)
            .unwrap();
        assert_eq!(
            row,
            "GemmTunableOp_float_NN,nn_256_1024_512_ld_256_512_256,Gemm_Hipblaslt_1234,0.0123457"
        );
        let text = t.text(&[row]);
        let (v, rows) = parse(&text);
        assert_eq!(v, t.validators);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0][2], "Gemm_Hipblaslt_1234");
        // 2.6 names hipBLASLt solutions with the layout and has no ld fields; a batch is a
        // strided-batched op.
        let old = rocm_torch("2.6.0+rocm6.2");
        let b = Blas::of(&Gemm {
            batch: 4,
            dtype: DType::Bf16,
            out_dtype: DType::Bf16,
            ..g
        });
        let r = old
            .row(
                &b,
                (DType::Bf16, DType::Bf16, DType::F32),
                Lib::Hipblaslt,
                7,
                1.5,
            )
            .unwrap();
        assert_eq!(
            r,
            "GemmStridedBatchedTunableOp_BFloat16_NN,nn_256_1024_512_B_4,Gemm_Hipblaslt_NN_7,1.5"
        );
    }

    /// PyTorch 2.11 on an H200 (reports/h200/tune/README.md), tuning a bf16 1024x512 @ 512x256
    /// torch.matmul itself, recorded `GemmTunableOp_BFloat16_NN` and
    /// `nn_256_1024_512_ld_256_512_256`: the op and params rocsweep writes for that GEMM.
    #[test]
    fn the_signature_is_the_one_pytorch_recorded_for_the_same_matmul_on_an_h200() {
        let g = Gemm {
            dtype: DType::Bf16,
            out_dtype: DType::Bf16,
            ..matmul()
        };
        let row = rocm_torch("2.11.0")
            .row(
                &Blas::of(&g),
                (g.dtype, g.out_dtype, g.compute),
                Lib::Hipblaslt,
                9,
                0.0143,
            )
            .unwrap();
        assert!(
            row.starts_with("GemmTunableOp_BFloat16_NN,nn_256_1024_512_ld_256_512_256,"),
            "{row}"
        );
    }

    #[test]
    fn a_cuda_build_or_another_hipblaslt_refuses_with_why() {
        let cuda = Torch {
            version: "2.11.0+cu130".into(),
            validators: vec![("PT_VERSION".into(), "2.11.0".into())],
        };
        let why = cuda.refuses(Lib::Hipblaslt, None).unwrap();
        assert!(
            why.contains("not a ROCm build")
                && why.contains("PT_VERSION")
                && why.ends_with("only `Default`"),
            "{why}"
        );
        // PyTorch 2.15's CUDA build (the validators it asked for on this machine) tunes
        // cuBLASLt's algorithms as well.
        let lt = Torch {
            version: "2.15.0+cu132".into(),
            validators: ["PT_VERSION", "CUDA_DEVICE", "CUBLASLT_VERSION"]
                .iter()
                .map(|k| (k.to_string(), String::new()))
                .collect(),
        };
        let why = lt.refuses(Lib::Rocblas, None).unwrap();
        assert!(
            why.contains("knows no rocBLAS solution, only `Default` and cuBLASLt's algorithms"),
            "{why}"
        );
        let t = rocm_torch("2.9.1");
        assert!(t.refuses(Lib::Hipblaslt, Some("d3f1a2b")).is_none());
        assert!(
            t.refuses(Lib::Hipblaslt, Some("0000000"))
                .unwrap()
                .contains("one build's")
        );
        let g = matmul();
        let e = rocm_torch("2.7.0").row(
            &Blas::of(&g),
            (DType::F32, DType::F32, DType::Tf32),
            Lib::Rocblas,
            3,
            1.0,
        );
        assert!(e.unwrap_err().contains("from PyTorch 2.8"));
    }

    #[test]
    fn times_have_six_significant_digits() {
        assert_eq!(six(0.0123456789), "0.0123457");
        assert_eq!(six(12.0), "12");
        assert_eq!(six(123456.7), "123457");
    }
}
