//! hipBLASLt's `HIPBLASLT_TUNING_OVERRIDE_FILE` (from hipBLASLt 0.12, ROCm 6.4): the file
//! `hipblaslt-bench` writes when tuning and the library reads at every heuristic query
//! (rocblaslt's UserDrivenTuningParser). Its first line must be exactly `Git Version: <the
//! library's git revision>` (hipblasLtGetGitRevision), else the library turns the override off
//! for the process; then per problem a header row and a row of 37 values: the bench's arguments,
//! its perf columns and the solution index (hipblaslt_ext::getIndexFromAlgo, what rocsweep's
//! `hipblaslt#R-solN` names). 0.12 drops the header rows (they do not parse as numbers); later
//! releases' bench writes such header/value pairs and their reader takes each value row after its
//! header, by column name (read from source, never run here). 0.12 matches
//! transA, transB, batch_count, m, n, k, a_type, c_type and compute_type (`f32_r`; a TF32
//! problem maps to it too, so TF32 rows are not written: they would apply to f32 as well).

use super::shape::{Blas, type_name};
use crate::dtype::DType;
use std::fmt::Write as _;

pub const VAR: &str = "HIPBLASLT_TUNING_OVERRIDE_FILE";
pub const FILE: &str = "hipblaslt_override.txt";

/// The header row, as hipblaslt-bench names its columns.
pub const HEADER: &str = "transA,transB,grouped_gemm,batch_count,m,n,k,alpha,lda,stride_a,beta,ldb,stride_b,ldc,stride_c,ldd,stride_d,a_type,b_type,c_type,d_type,compute_type,scaleA,scaleB,scaleC,scaleD,amaxD,activation_type,bias_vector,bias_type,rotating_buffer,hipblaslt-Gflops,hipblaslt-GB/s,us,solution_index,gcnArchName,CUs";

/// What the file needs of the library, from the run's manifest: its version (0.12 or later)
/// and git revision.
pub fn library(versions: &std::collections::BTreeMap<String, String>) -> Result<String, String> {
    let version = versions.get("hipBLASLt").map(String::as_str).unwrap_or("");
    let number = version.split_whitespace().next().unwrap_or("");
    let mut parts = number.split('.').map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next().flatten(), parts.next().flatten());
    match (major, minor) {
        (Some(ma), Some(mi)) if (ma, mi) >= (0, 12) => {}
        (Some(ma), Some(mi)) => {
            return Err(format!(
                "the run's hipBLASLt is {ma}.{mi}: its override file (HIPBLASLT_TUNING_OVERRIDE_FILE) exists from hipBLASLt 0.12 (ROCm 6.4)"
            ));
        }
        _ => {
            return Err(format!(
                "the run's manifest names no hipBLASLt version ({version:?}), so no override file can be written for it"
            ));
        }
    }
    versions
        .get(crate::backend::rocm::HIPBLASLT_GIT)
        .filter(|g| !g.is_empty() && !g.contains(['\n', '\r']))
        .cloned()
        .ok_or_else(|| {
            "the run's hipBLASLt gave no git revision (hipblasLtGetGitRevision), which the override file's first line must carry".into()
        })
}

/// Why a problem cannot be a row of the file; None when it can.
pub fn unsupported(dtype: DType, out: DType, compute: DType) -> Option<String> {
    if compute != DType::F32 {
        return Some(format!(
            "compute = {}: hipBLASLt 0.12's override file names only f32_r compute, which an f32 problem of this shape would match too",
            compute.name()
        ));
    }
    if type_name(dtype).is_none() || type_name(out).is_none() {
        return Some(format!(
            "types {} -> {} have no hipBLASLt name",
            dtype.name(),
            out.name()
        ));
    }
    None
}

/// One row to write.
pub struct Row {
    pub blas: Blas,
    pub dtype: DType,
    pub out: DType,
    pub index: i64,
    /// The solution's time (microseconds) and rate, as the bench records them.
    pub us: f64,
    pub gflops: f64,
}

/// The file's text. `arch` and `cus` fill the bench's device columns (not matched).
pub fn text(git: &str, arch: &str, cus: &str, rows: &[Row]) -> String {
    let mut s = format!("Git Version: {git}\n");
    for r in rows {
        let _ = writeln!(s, "    {HEADER}");
        let b = &r.blas;
        let (a, c) = (
            type_name(r.dtype).unwrap_or("f32_r"),
            type_name(r.out).unwrap_or("f32_r"),
        );
        let l = Blas::letter;
        let _ = writeln!(
            s,
            "    {},{},0,{},{},{},{},1,{},{},0,{},{},{},{},{},{},{a},{a},{c},{c},f32_r,0,0,0,0,0,none,0,f32_r,512,{:.1},0,{:.3},{},{},{}",
            l(b.trans_a),
            l(b.trans_b),
            b.batch,
            b.m,
            b.n,
            b.k,
            b.lda,
            b.stride_a,
            b.ldb,
            b.stride_b,
            b.ldc,
            b.stride_c,
            b.ldc,
            b.stride_c,
            r.gflops,
            r.us,
            r.index,
            plain(arch),
            plain(cus),
        );
    }
    s
}

/// A value from the manifest as one field (no separator or line end of its own).
fn plain(v: &str) -> String {
    let v: String = v.chars().filter(|c| *c != ',' && !c.is_control()).collect();
    if v.is_empty() { "0".into() } else { v }
}

/// The file for the tuned shapes whose best is a hipBLASLt solution (a shape a verification
/// dropped left out); records per shape whether it is a row or why not. None: no row.
pub fn build(
    versions: &std::collections::BTreeMap<String, String>,
    tuned: &mut [super::model::Tuned],
) -> Option<String> {
    use super::tunableop::Lib;
    let lib = library(versions);
    let mut rows = Vec::new();
    for t in tuned.iter_mut() {
        let Some((Lib::Hipblaslt, index)) = t.target else {
            continue;
        };
        let g = &t.gemm;
        let r = match (&lib, t.checks.get(FILE)) {
            (Err(why), _) => Err(why.clone()),
            (_, Some(super::verify::Check::Dropped(why))) => Err(format!("verification: {why}")),
            (Ok(_), _) => match unsupported(g.dtype, g.out_dtype, g.compute) {
                Some(why) => Err(why),
                None => {
                    let best = t.pair.best;
                    rows.push(Row {
                        blas: t.blas,
                        dtype: g.dtype,
                        out: g.out_dtype,
                        index,
                        us: best.median_ms.unwrap_or(0.0) * 1000.0,
                        gflops: best.gflops.unwrap_or(0.0),
                    });
                    Ok(())
                }
            },
        };
        t.files.insert(FILE, r);
    }
    let git = lib.ok()?;
    let get = |k: &str| versions.get(k).map(String::as_str).unwrap_or("");
    (!rows.is_empty()).then(|| text(&git, get("gcnArchName"), get("compute units"), &rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::gemm::Gemm;

    /// A parser written from hipBLASLt 0.12's documented format: exactly 37 fields, leading
    /// spaces stripped, `Git Version` and comma-free lines skipped; the key fields and index.
    fn parse(text: &str) -> (Option<String>, Vec<Vec<String>>) {
        let git = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("Git Version: "))
            .map(str::to_string);
        let rows = text
            .lines()
            .map(str::trim_start)
            .filter(|l| !l.contains("Git Version") && l.contains(','))
            .map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>())
            .filter(|f| f.len() == 37 && f[4].parse::<i64>().is_ok())
            .collect();
        (git, rows)
    }

    #[test]
    fn rows_round_trip_through_the_format_hipblaslt_reads() {
        let g = Gemm {
            m: 512,
            n: 1024,
            k: 256,
            trans_a: false,
            trans_b: true,
            batch: 1,
            dtype: DType::Bf16,
            out_dtype: DType::Bf16,
            compute: DType::F32,
        };
        let row = Row {
            blas: Blas::of(&g),
            dtype: g.dtype,
            out: g.out_dtype,
            index: 1234,
            us: 12.5,
            gflops: 900.0,
        };
        let t = text("d3f1a2b", "gfx942:sramecc+:xnack-", "304", &[row]);
        let (git, rows) = parse(&t);
        assert_eq!(git.as_deref(), Some("d3f1a2b"));
        assert_eq!(rows.len(), 1, "{t}");
        // Each value row follows its own header row, as later releases' readers take them.
        let lines: Vec<&str> = t.lines().map(str::trim_start).collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert_eq!((lines[1], lines[2].split(',').count()), (HEADER, 37));
        let f = &rows[0];
        // transA is our trans_b; m and n swap.
        assert_eq!((f[0].as_str(), f[1].as_str()), ("T", "N"));
        assert_eq!(
            (f[3].as_str(), f[4].as_str(), f[5].as_str(), f[6].as_str()),
            ("1", "1024", "512", "256")
        );
        assert_eq!(
            (f[17].as_str(), f[19].as_str(), f[21].as_str()),
            ("bf16_r", "bf16_r", "f32_r")
        );
        assert_eq!(f[34], "1234");
        assert_eq!(HEADER.split(',').count(), 37);
    }

    #[test]
    fn versions_before_0_12_and_tf32_problems_are_refused_with_why() {
        let mut v = std::collections::BTreeMap::new();
        v.insert(
            "hipBLASLt".to_string(),
            "0.8.0 (/opt/rocm/lib/libhipblaslt.so.0)".to_string(),
        );
        let e = library(&v).unwrap_err();
        assert!(
            e.contains("0.8") && e.contains("from hipBLASLt 0.12"),
            "{e}"
        );
        v.insert("hipBLASLt".to_string(), "0.12.1 (/x)".to_string());
        assert!(library(&v).unwrap_err().contains("git revision"));
        v.insert(
            crate::backend::rocm::HIPBLASLT_GIT.to_string(),
            "abc".to_string(),
        );
        assert_eq!(library(&v).as_deref(), Ok("abc"));
        assert!(unsupported(DType::F32, DType::F32, DType::Tf32).is_some());
        assert!(unsupported(DType::F16, DType::F16, DType::F32).is_none());
    }
}
