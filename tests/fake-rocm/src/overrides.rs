//! The GEMM solution-override files, read the way the real libraries read them (so the fake never
//! takes a file the library would not):
//!
//! - hipBLASLt 0.12 (ROCm 6.4) `HIPBLASLT_TUNING_OVERRIDE_FILE` (rocblaslt's
//!   UserDrivenTuningParser.cpp): the first line must be exactly `Git Version: <the library's
//!   git revision>`, read at every heuristic query; a mismatch turns the override off for the rest
//!   of the process. Then one comma-separated row per problem, leading spaces stripped; lines with
//!   `Git Version` or without a comma are skipped; a row must split into exactly 37 fields (the
//!   bench's argument list, its perf columns and the index) and parse, else it is dropped. The key:
//!   transA, transB (anything but `N` is transposed), batch_count, m, n, k, a_type, c_type,
//!   compute_type (`f32_r`; the fast variants of 32F match it); index > 0. Rows are tried newest
//!   first. Not read before hipBLASLt 0.12.
//! - rocBLAS `ROCBLAS_TENSILE_GEMM_OVERRIDE_PATH` (Tensile's UserDrivenTuningParser, from rocBLAS
//!   3.1 / ROCm 5.7): read once per process; lines with `transA` (the header) or without a comma
//!   skipped; 15 fields (`transA,transB,M,N,batch_count,K,alpha,beta,lda,ldb,ldc,input_type,
//!   output_type,compute_type,solution_index`, strides taken as 1) or 18 (`stride_a,stride_b,
//!   stride_c` after ldc); the key: trans, types, m, n, k, batch, beta, ld and strides; the value
//!   is the Tensile solution index + 1 and must be > 0.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The env variables the libraries read.
pub const HIPBLASLT_VAR: &str = "HIPBLASLT_TUNING_OVERRIDE_FILE";
pub const ROCBLAS_VAR: &str = "ROCBLAS_TENSILE_GEMM_OVERRIDE_PATH";

/// A GEMM as the library sees it (column-major).
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    pub trans_a: bool,
    pub trans_b: bool,
    pub batch: usize,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a_type: &'static str,
    pub c_type: &'static str,
}

/// The hipBLASLt type names the parser knows (string_to_hip_datatype).
fn lt_type(s: &str) -> Option<&'static str> {
    [
        "f32_r", "f16_r", "bf16_r", "f64_r", "i8_r", "i32_r", "f8_r", "bf8_r",
    ]
    .into_iter()
    .find(|t| *t == s)
}

/// The override file's rows, parsed as hipBLASLt 0.12 parses them: (key, solution index).
pub fn parse_hipblaslt(text: &str) -> Vec<(Key, i32)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        if line.contains("Git Version") || !line.contains(',') {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 37 {
            continue;
        }
        let num = |i: usize| f[i].trim().parse::<i64>().ok();
        let (Some(batch), Some(m), Some(n), Some(k), Some(index)) =
            (num(3), num(4), num(5), num(6), num(34))
        else {
            continue;
        };
        let (Some(a_type), Some(c_type)) = (lt_type(f[17].trim()), lt_type(f[19].trim())) else {
            continue;
        };
        if f[21].trim() != "f32_r" || index <= 0 || batch < 0 || m < 0 || n < 0 || k < 0 {
            continue;
        }
        let Ok(index) = i32::try_from(index) else {
            continue;
        };
        out.push((
            Key {
                trans_a: f[0].trim() != "N",
                trans_b: f[1].trim() != "N",
                batch: batch as usize,
                m: m as usize,
                n: n as usize,
                k: k as usize,
                a_type,
                c_type,
            },
            index,
        ));
    }
    out
}

static LT_OFF: AtomicBool = AtomicBool::new(false);

/// The solution hipBLASLt's heuristic puts first for `key`, where the override file names one:
/// None without the variable, before 0.12, after a version mismatch (for good), or without a
/// matching row. `git` is the library's git revision.
pub fn hipblaslt(git: &str, version: (u32, u32), key: &Key) -> Option<i32> {
    let path = std::env::var_os(HIPBLASLT_VAR)?;
    if version < (0, 12) || LT_OFF.load(Ordering::Relaxed) {
        return None;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        LT_OFF.store(true, Ordering::Relaxed);
        return None;
    };
    if text.lines().next() != Some(&format!("Git Version: {git}")) {
        log(
            "hipBLASLt",
            "The hipBLASLt git version and the override file git version are not the same.",
        );
        LT_OFF.store(true, Ordering::Relaxed);
        return None;
    }
    let found = parse_hipblaslt(&text)
        .into_iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, i)| i);
    if let Some(i) = found {
        log("hipBLASLt", &format!("Find solution with index: {i}"));
    }
    found
}

/// A rocBLAS problem's key, with the parts the file's 15/18 columns name.
#[derive(Clone, Debug, PartialEq)]
pub struct RbKey {
    pub key: Key,
    pub beta: f64,
    pub ld: [i64; 3],
    pub stride: [i64; 3],
}

/// rocBLAS type names (`f32_r` or the one-letter forms).
fn rb_type(s: &str) -> Option<&'static str> {
    match s {
        "f32_r" | "s" => Some("f32_r"),
        "f16_r" | "h" => Some("f16_r"),
        "bf16_r" => Some("bf16_r"),
        "f64_r" | "d" => Some("f64_r"),
        _ => None,
    }
}

/// The rows as Tensile parses them: (key, Tensile solution index = file value - 1).
pub fn parse_rocblas(text: &str) -> Vec<(RbKey, i32)> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.contains("transA") || !line.contains(',') {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let strided = match f.len() {
            15 => false,
            18 => true,
            _ => continue,
        };
        let int = |i: usize| f[i].parse::<i64>().ok();
        let at = |i: usize| if strided { i + 3 } else { i };
        let (Some(m), Some(n), Some(batch), Some(k)) = (int(2), int(3), int(4), int(5)) else {
            continue;
        };
        let (Some(lda), Some(ldb), Some(ldc)) = (int(8), int(9), int(10)) else {
            continue;
        };
        let stride = if strided {
            match (int(11), int(12), int(13)) {
                (Some(a), Some(b), Some(c)) => [a, b, c],
                _ => continue,
            }
        } else {
            [1, 1, 1]
        };
        let (Some(a_type), Some(c_type)) = (rb_type(f[at(11)]), rb_type(f[at(12)])) else {
            continue;
        };
        let (Ok(beta), Some(value)) = (f[7].parse::<f64>(), int(at(14))) else {
            continue;
        };
        if value <= 0 || m < 0 || n < 0 || k < 0 || batch < 0 {
            continue;
        }
        let Ok(index) = i32::try_from(value - 1) else {
            continue;
        };
        out.push((
            RbKey {
                key: Key {
                    trans_a: f[0] != "N",
                    trans_b: f[1] != "N",
                    batch: batch as usize,
                    m: m as usize,
                    n: n as usize,
                    k: k as usize,
                    a_type,
                    c_type,
                },
                beta,
                ld: [lda, ldb, ldc],
                stride,
            },
            index,
        ));
    }
    out
}

/// The Tensile solution rocBLAS runs for `key` by its override file (read once per process),
/// if a row matches. `valid` says whether an index names one of the library's solutions; a row
/// naming none leaves the problem to the library's own choice.
pub fn rocblas(key: &RbKey, valid: impl Fn(i32) -> bool) -> Option<i32> {
    static ROWS: OnceLock<Vec<(RbKey, i32)>> = OnceLock::new();
    let rows = ROWS.get_or_init(|| {
        let Some(path) = std::env::var_os(ROCBLAS_VAR) else {
            return Vec::new();
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let rows = parse_rocblas(&text);
        if rows.is_empty() || rows.iter().any(|(_, i)| !valid(*i)) {
            eprintln!(
                "\nrocBLAS warning: One or more problem overrides failed to load from: {}",
                std::path::Path::new(&path).display()
            );
        }
        rows.into_iter().filter(|(_, i)| valid(*i)).collect()
    });
    let found = rows.iter().find(|(k, _)| k == key).map(|(_, i)| *i);
    if let Some(i) = found {
        log(
            "rocBLAS",
            &format!("Override found for problem: using solution {i}"),
        );
    }
    found
}

/// A log line on stderr, where the library's own logging is on (HIPBLASLT_LOG_LEVEL >= 4,
/// TENSILE_DB set).
fn log(lib: &str, what: &str) {
    let on = match lib {
        "hipBLASLt" => std::env::var("HIPBLASLT_LOG_LEVEL")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .is_some_and(|l| l >= 4),
        _ => std::env::var_os("TENSILE_DB").is_some(),
    };
    if on {
        eprintln!("[{lib}][Info] {what}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LT_ROW: &str = "    N,N,0,1,1024,512,256,1,1024,262144,0,256,131072,1024,524288,1024,524288,f32_r,f32_r,f32_r,f32_r,f32_r,0,0,0,0,0,none,0,f32_r,512,0,0,0,1234,gfx942:sramecc+:xnack-,304";

    #[test]
    fn hipblaslt_rows_parse_as_0_12_parses_them() {
        let header = "    transA,transB,grouped_gemm,batch_count,m,n,k,alpha,lda,stride_a,beta,ldb,stride_b,ldc,stride_c,ldd,stride_d,a_type,b_type,c_type,d_type,compute_type,scaleA,scaleB,scaleC,scaleD,amaxD,activation_type,bias_vector,bias_type,rotating_buffer,hipblaslt-Gflops,hipblaslt-GB/s,us,solution_index,gcnArchName,CUs";
        let text = format!("Git Version: abc\n{header}\n{LT_ROW}\n");
        let rows = parse_hipblaslt(&text);
        assert_eq!(rows.len(), 1, "the header row does not parse");
        assert_eq!(rows[0].1, 1234);
        assert_eq!((rows[0].0.m, rows[0].0.n, rows[0].0.k), (1024, 512, 256));
        // 36 fields, index 0, an xf32 compute type: each dropped.
        let short = LT_ROW.replacen(",304", "", 1);
        let zero = LT_ROW.replace(",1234,", ",0,");
        let xf32 = LT_ROW.replacen("f32_r,0,0,0,0,0", "xf32_r,0,0,0,0,0", 1);
        for bad in [short, zero, xf32] {
            assert!(parse_hipblaslt(&bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn rocblas_rows_of_15_and_18_columns_parse_and_the_value_is_the_index_plus_one() {
        let text = "transA,transB,M,N,batch_count,K,alpha,beta,lda,ldb,ldc,input_type,output_type,compute_type,solution_index\n\
                    N,N,1024,512,1,256,1,0,1024,256,1024,f32_r,f32_r,f32_r,1234\n\
                    N,T,64,64,4,64,1,0,64,64,64,4096,4096,4096,f16_r,f16_r,f32_r,7\n\
                    N,N,64,64,1,64,1,0,64,64,64,f32_r,f32_r,f32_r,-1244\n";
        let rows = parse_rocblas(text);
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[0].1, 1233);
        assert_eq!(rows[0].0.stride, [1, 1, 1]);
        assert_eq!(rows[1].0.stride, [4096, 4096, 4096]);
        assert!(rows[1].0.key.trans_b && rows[1].0.key.a_type == "f16_r");
    }
}
