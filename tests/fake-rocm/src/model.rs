//! The fault model: device, library versions, solver lists and fault rules, read once from the
//! TOML file named by FAKE_ROCM_MODEL (built-in healthy defaults without it). A file that cannot
//! be read or parsed is kept as an error that every library call reports.

use crate::faults::{self, Rule};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

pub const ENV: &str = "FAKE_ROCM_MODEL";

#[derive(Debug, Deserialize, Clone)]
#[serde(default, deny_unknown_fields)]
pub struct Device {
    pub count: i32,
    pub name: String,
    pub arch: String,
    pub memory_gib: u64,
    pub cus: i32,
    pub clock_khz: i32,
}

impl Default for Device {
    fn default() -> Self {
        Device {
            count: 1,
            name: "AMD Radeon RX 7900 XTX".into(),
            arch: "gfx1100".into(),
            memory_gib: 24,
            cus: 96,
            clock_khz: 2482000,
        }
    }
}

#[derive(Debug, Deserialize, Clone)]
#[serde(default, deny_unknown_fields)]
struct RawVersions {
    hip: String,
    miopen: String,
    hipblaslt: String,
    hipblaslt_git: String,
    rocblas: String,
    hiprand: Option<String>,
}

impl Default for RawVersions {
    fn default() -> Self {
        RawVersions {
            hip: "6.2.41133".into(),
            miopen: "3.2.0".into(),
            hipblaslt: "0.8.0".into(),
            hipblaslt_git: "fake0a1".into(),
            rocblas: "4.2.0".into(),
            hiprand: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    pub fn parse(s: &str) -> Result<Version, String> {
        let parts: Vec<&str> = s.trim().split('.').collect();
        if parts.is_empty() || parts.len() > 3 {
            return Err(format!("version `{s}` is not MAJOR.MINOR.PATCH"));
        }
        let mut v = [0u32; 3];
        for (slot, p) in v.iter_mut().zip(&parts) {
            *slot = p
                .parse()
                .map_err(|_| format!("version `{s}` is not MAJOR.MINOR.PATCH"))?;
        }
        Ok(Version {
            major: v[0],
            minor: v[1],
            patch: v[2],
        })
    }
}

#[derive(Debug, Clone)]
pub struct Versions {
    pub hip: Version,
    pub miopen: Version,
    pub hipblaslt: Version,
    /// hipblasLtGetGitRevision's answer (the override file's `Git Version`).
    pub hipblaslt_git: String,
    pub rocblas: String,
    pub hiprand: Version,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(default, deny_unknown_fields)]
pub struct Miopen {
    pub fwd: Vec<u64>,
    pub bwd_data: Vec<u64>,
    pub bwd_weights: Vec<u64>,
    pub workspace_bytes: u64,
}

impl Default for Miopen {
    fn default() -> Self {
        Miopen {
            fwd: vec![85, 11, 53, 91, 9999],
            bwd_data: vec![86, 97],
            bwd_weights: vec![87, 102],
            workspace_bytes: 1 << 20,
        }
    }
}

#[derive(Debug, Deserialize, Clone)]
#[serde(default, deny_unknown_fields)]
pub struct Hipblaslt {
    pub algos: i32,
    /// Times the GEMM is computed by the algorithm at each rank (a slower solution costs real
    /// time); ranks past the list compute it once.
    pub repeat: Vec<u32>,
}

impl Default for Hipblaslt {
    fn default() -> Self {
        Hipblaslt {
            algos: 4,
            repeat: Vec::new(),
        }
    }
}

/// rocBLAS's Tensile solutions (`rocblas_gemm_ex_get_solutions`).
#[derive(Debug, Deserialize, Clone)]
#[serde(default, deny_unknown_fields)]
pub struct Rocblas {
    pub solutions: i32,
    /// Times the GEMM is computed by the solution at each rank (rank 0 is rocBLAS's own pick).
    pub repeat: Vec<u32>,
}

impl Default for Rocblas {
    fn default() -> Self {
        Rocblas {
            solutions: 3,
            repeat: Vec::new(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    pub lib: String,
    pub action: String,
    pub phase: Option<String>,
    #[serde(default)]
    pub when: BTreeMap<String, toml::Value>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub solvers: Option<Vec<u64>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct Raw {
    device: Device,
    versions: RawVersions,
    miopen: Miopen,
    hipblaslt: Hipblaslt,
    rocblas: Rocblas,
    fault: Vec<RawRule>,
}

#[derive(Debug)]
pub struct Model {
    pub device: Device,
    pub versions: Versions,
    pub miopen: Miopen,
    pub hipblaslt: Hipblaslt,
    pub rocblas: Rocblas,
    pub rules: Vec<Rule>,
}

impl Model {
    pub fn parse(text: &str) -> Result<Model, String> {
        let raw: Raw = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
        let v = &raw.versions;
        let hip = Version::parse(&v.hip).map_err(|e| format!("versions.hip: {e}"))?;
        let hiprand = match &v.hiprand {
            Some(s) => Version::parse(s).map_err(|e| format!("versions.hiprand: {e}"))?,
            // hipRAND's own numbering per ROCm release (2.10.16 in 5.7, 2.11 in 6.2, 3.x in 7).
            None => match hip.major {
                0..=5 => Version::parse("2.10.16")?,
                6 => Version::parse("2.11.0")?,
                _ => Version::parse("3.1.0")?,
            },
        };
        let versions = Versions {
            hip,
            miopen: Version::parse(&v.miopen).map_err(|e| format!("versions.miopen: {e}"))?,
            hipblaslt: Version::parse(&v.hipblaslt)
                .map_err(|e| format!("versions.hipblaslt: {e}"))?,
            hipblaslt_git: v.hipblaslt_git.clone(),
            rocblas: v.rocblas.clone(),
            hiprand,
        };
        if raw.device.count < 0 {
            return Err("device.count must be >= 0".into());
        }
        if raw.rocblas.solutions < 0 {
            return Err("rocblas.solutions must be >= 0".into());
        }
        if raw.hipblaslt.algos < 0 {
            return Err("hipblaslt.algos must be >= 0".into());
        }
        let rules = raw
            .fault
            .into_iter()
            .enumerate()
            .map(|(i, r)| faults::compile(i, r).map_err(|e| format!("[[fault]] #{}: {e}", i + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Model {
            device: raw.device,
            versions,
            miopen: raw.miopen,
            hipblaslt: raw.hipblaslt,
            rocblas: raw.rocblas,
            rules,
        })
    }

    /// hipBLASLt 0.6.0 (ROCm 6.0) changed its type enums to hipDataType and
    /// hipblasComputeType_t: the library's own version decides, as in the real one.
    pub fn hipblaslt_hipdatatype(&self) -> bool {
        let v = &self.versions.hipblaslt;
        (v.major, v.minor) >= (0, 6)
    }
}

static MODEL: OnceLock<Result<Model, String>> = OnceLock::new();

fn load() -> Result<Model, String> {
    let Some(path) = std::env::var_os(ENV) else {
        return Model::parse("");
    };
    let shown = path.to_string_lossy().into_owned();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("fake-rocm cannot read its model file {shown} ({ENV}): {e}"))?;
    Model::parse(&text)
        .map_err(|e| format!("fake-rocm cannot parse its model file {shown} ({ENV}): {e}"))
}

/// The model, read on first use; Err carries the message every error string repeats.
pub fn get() -> Result<&'static Model, &'static str> {
    match MODEL.get_or_init(load) {
        Ok(m) => Ok(m),
        Err(e) => Err(e.as_str()),
    }
}

/// For error-string functions: the model's problem, if it has one.
pub fn problem() -> Option<&'static str> {
    get().err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_healthy() {
        let m = Model::parse("").unwrap();
        assert_eq!(m.device.count, 1);
        assert_eq!(m.device.arch, "gfx1100");
        assert_eq!(m.versions.hip.major, 6);
        assert!(m.hipblaslt_hipdatatype());
        assert_eq!(m.miopen.fwd, vec![85, 11, 53, 91, 9999]);
        assert_eq!(m.hipblaslt.algos, 4);
        assert!(m.rules.is_empty());
    }

    #[test]
    fn full_file_parses() {
        let m = Model::parse(
            r#"
[device]
count = 2
name = "AMD Radeon RX 5700 XT"
arch = "gfx1010:xnack-"
memory_gib = 8
[versions]
hip = "5.7.31921"
miopen = "2.20.0"
hipblaslt = "0.3.0"
[miopen]
fwd = [91]
[[fault]]
lib = "miopen"
action = "hang"
phase = "compile"
when = { c_in = "16", c_out = 32, h = ">32", dtype = "f16" }
env = { HSA_OVERRIDE_GFX_VERSION = "10.3.0" }
solvers = [53, 91]
"#,
        )
        .unwrap();
        assert_eq!(m.device.count, 2);
        assert_eq!(m.device.cus, 96, "unset keys keep their defaults");
        assert_eq!(
            m.versions.hip,
            Version {
                major: 5,
                minor: 7,
                patch: 31921
            }
        );
        assert!(!m.hipblaslt_hipdatatype());
        assert_eq!(m.versions.hiprand.major, 2);
        assert_eq!(m.miopen.bwd_data, vec![86, 97]);
        assert_eq!(m.rules.len(), 1);
    }

    #[test]
    fn mistakes_are_errors_with_context() {
        let e = Model::parse("[device]\ncount = \"one\"\n").unwrap_err();
        assert!(e.contains("count"), "{e}");
        let e = Model::parse("[devcie]\ncount = 1\n").unwrap_err();
        assert!(e.contains("devcie"), "{e}");
        let e = Model::parse("[versions]\nhip = \"six\"\n").unwrap_err();
        assert!(e.contains("versions.hip"), "{e}");
        let e = Model::parse("[[fault]]\nlib = \"miopen\"\naction = \"explode\"\n").unwrap_err();
        assert!(e.contains("#1") && e.contains("explode"), "{e}");
        let e = Model::parse(
            "[[fault]]\nlib = \"hiprand\"\naction = \"zeros\"\nwhen = { m = \"3\" }\n",
        )
        .unwrap_err();
        assert!(e.contains("`m`"), "{e}");
    }

    #[test]
    fn shipped_models_parse() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/models");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let m = Model::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(m.device.count, 1, "{}", path.display());
            n += 1;
        }
        assert!(n >= 3);
    }
}
