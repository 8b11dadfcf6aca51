//! The CPU backend: always present, runs every op in the working precision (f32 arithmetic for
//! f32/f16/bf16 data) on the `gemm` crate and `half`, and is timed like any other backend.

use super::{Backend, BackendInfo, PhaseSink, Prepared, UnitError};
use crate::dtype::{self, DType};
use crate::op::conv2d::{self, Conv2d};
use crate::op::copy::{self, Copy, CopyDir};
use crate::op::gemm::{self, Gemm};
use crate::op::graph::{self, Graph};
use crate::op::{Inputs, OpKind, Problem, cast, rng};
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use rand::SeedableRng;
use rand_distr::Distribution;
use std::collections::BTreeMap;
use std::time::Instant;

pub fn solver_names(op: OpKind) -> &'static [&'static str] {
    match op {
        OpKind::Conv2d => conv2d::CPU_SOLVERS,
        OpKind::Gemm => gemm::CPU_SOLVERS,
        OpKind::Rng => rng::CPU_SOLVERS,
        OpKind::Copy => copy::CPU_SOLVERS,
        OpKind::Cast => cast::CPU_SOLVERS,
        OpKind::Graph => graph::CPU_SOLVERS,
    }
}

#[derive(Default)]
pub struct CpuBackend;

impl CpuBackend {
    pub fn new() -> CpuBackend {
        CpuBackend
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn info(&self) -> BackendInfo {
        let mut versions = BTreeMap::new();
        for (k, v) in crate::build_info::DEPENDENCY_VERSIONS {
            versions.insert(k.to_string(), v.to_string());
        }
        BackendInfo {
            backend: "cpu".into(),
            available: true,
            missing: None,
            devices: vec![format!(
                "{} ({} threads)",
                cpu_model(),
                rayon::current_num_threads()
            )],
            device_count: test_device_count(),
            versions,
            ..BackendInfo::default()
        }
    }

    fn solvers(&self, problem: &Problem) -> Vec<String> {
        solver_names(problem.kind())
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn prepare(
        &mut self,
        problem: &Problem,
        solver: &str,
        inputs: &Inputs,
        phases: &mut dyn PhaseSink,
    ) -> Result<Box<dyn Prepared>, UnitError> {
        check_supported(problem, solver)?;
        phases.phase("alloc");
        prepared(problem, inputs)
    }
}

/// Refuses what the cpu backend cannot run: a solver it does not have, an f16-accumulating GEMM.
fn check_supported(problem: &Problem, solver: &str) -> Result<(), UnitError> {
    let names = solver_names(problem.kind());
    if solver != "default" && !names.contains(&solver) {
        return Err(UnitError::Unsupported(format!(
            "the cpu backend has no solver `{solver}` for {} (it has: {})",
            problem.kind().name(),
            names.join(", ")
        )));
    }
    if let Problem::Gemm(p) = problem
        && p.compute == DType::F16
    {
        return Err(UnitError::Unsupported(
            "the cpu backend has no f16-accumulating GEMM (use compute = \"f32\")".into(),
        ));
    }
    Ok(())
}

/// The run of a problem on its inputs, in f32 working precision (inputs of another problem are
/// an internal error).
fn prepared(problem: &Problem, inputs: &Inputs) -> Result<Box<dyn Prepared>, UnitError> {
    let mismatch = || UnitError::Library {
        library: "rocsweep".into(),
        code: "INPUT_MISMATCH".into(),
        message: "inputs do not belong to this problem".into(),
    };
    Ok(match (problem, inputs) {
        (Problem::Conv2d(p), Inputs::Conv2d(i)) => Box::new(ConvRun {
            p: p.clone(),
            a: i.a.to_f32_vec(),
            b: i.b.to_f32_vec(),
            out: Vec::new(),
        }),
        (Problem::Gemm(p), Inputs::Gemm(i)) => Box::new(GemmRun::new(p, i)?),
        (Problem::Rng(p), Inputs::Rng { seed }) => Box::new(RngRun::new(p, *seed)?),
        (Problem::Copy(p), _) if p.mmap => {
            return Err(UnitError::Unsupported(
                crate::op::copy::MMAP_TORCH_ONLY.into(),
            ));
        }
        (Problem::Copy(p), Inputs::Copy(src)) => Box::new(CopyRun::new(p, src.to_f32_vec())),
        (Problem::Cast(p), Inputs::Cast(src)) => Box::new(CastRun {
            to: p.to,
            src: src.clone(),
            out: HostData::zeros(p.to, src.len()),
        }),
        (Problem::Graph(p), Inputs::Graph(i)) => Box::new(GraphRun {
            p: p.clone(),
            mix: i.mix.to_f32_vec(),
            filter: i.filter.to_f32_vec(),
            acts: i.activations.iter().map(HostData::to_f32_vec).collect(),
            next: 0,
            outs: Vec::new(),
        }),
        _ => return Err(mismatch()),
    })
}

/// Wall time of one call: on the CPU, device time and per-call time are the same figure.
fn timed(f: impl FnOnce()) -> Sample {
    let t = Instant::now();
    f();
    Sample::wall(t.elapsed().as_secs_f64())
}

struct ConvRun {
    p: Conv2d,
    a: Vec<f32>,
    b: Vec<f32>,
    out: Vec<f32>,
}

impl Prepared for ConvRun {
    fn run(&mut self, _batch: Batch) -> Result<Sample, UnitError> {
        Ok(timed(|| self.out = self.p.compute::<f32>(&self.a, &self.b)))
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        Ok(HostData::from_f32(self.p.dtype, &self.out))
    }
    fn chosen(&self) -> String {
        format!("im2col threads={}", rayon::current_num_threads())
    }
    fn workspace_bytes(&self) -> u64 {
        // The im2col buffer of one image per thread.
        let g = &self.p.geom;
        let per = (g.c_in / g.groups) * g.kh * g.kw * g.out_h() * g.out_w() * 4;
        (per * rayon::current_num_threads().min(g.n)) as u64
    }
}

struct GemmRun {
    p: Gemm,
    a: Vec<f32>,
    b: Vec<f32>,
    out: Vec<f32>,
    /// Copies of (a, b) that consecutive calls use in turn (`rotate_inputs`), and the next one.
    rotating: Vec<(Vec<f32>, Vec<f32>)>,
    next: usize,
}

impl GemmRun {
    /// The operands in f32, rounded to TF32 first where the compute type is TF32.
    fn new(p: &Gemm, i: &gemm::GemmInputs) -> Result<GemmRun, UnitError> {
        if p.compute == DType::F16 {
            return Err(UnitError::Unsupported(
                "the cpu backend has no f16-accumulating GEMM (use compute = \"f32\")".into(),
            ));
        }
        let (mut a, mut b) = (i.a.to_f32_vec(), i.b.to_f32_vec());
        if p.compute == DType::Tf32 {
            a.iter_mut().for_each(|x| *x = dtype::round_f32_to_tf32(*x));
            b.iter_mut().for_each(|x| *x = dtype::round_f32_to_tf32(*x));
        }
        Ok(GemmRun {
            p: p.clone(),
            a,
            b,
            out: Vec::new(),
            rotating: Vec::new(),
            next: 0,
        })
    }
}

impl Prepared for GemmRun {
    fn run(&mut self, _batch: Batch) -> Result<Sample, UnitError> {
        let threads = rayon::current_num_threads();
        let i = self.next % (self.rotating.len() + 1);
        self.next += 1;
        let (a, b) = match i {
            0 => (&self.a, &self.b),
            _ => (&self.rotating[i - 1].0, &self.rotating[i - 1].1),
        };
        let (p, out) = (&self.p, &mut self.out);
        Ok(timed(|| *out = p.compute::<f32>(a, b, threads)))
    }
    fn rotate_inputs(&mut self, bytes: u64) -> Result<(), UnitError> {
        let set = 4 * (self.a.len() + self.b.len()) as u64;
        let n = crate::timing::rotating_sets(bytes, set);
        self.rotating = (1..n).map(|_| (self.a.clone(), self.b.clone())).collect();
        Ok(())
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        Ok(HostData::from_f32(self.p.out_dtype, &self.out))
    }
    fn chosen(&self) -> String {
        format!("blocked threads={}", rayon::current_num_threads())
    }
}

struct RngRun {
    dtype: DType,
    dist: rand_distr::Normal<f32>,
    gen_: rand_pcg::Pcg64Mcg,
    out: Vec<f32>,
}

impl RngRun {
    /// A normal distribution with the problem's mean and deviation, drawn from a seeded PCG.
    fn new(p: &rng::Rng, seed: u64) -> Result<RngRun, UnitError> {
        Ok(RngRun {
            dtype: p.dtype,
            dist: rand_distr::Normal::new(p.mean as f32, p.std as f32).map_err(|e| {
                UnitError::Library {
                    library: "rand_distr".into(),
                    code: "NormalError".into(),
                    message: e.to_string(),
                }
            })?,
            gen_: rand_pcg::Pcg64Mcg::seed_from_u64(seed),
            out: vec![0.0; p.count],
        })
    }
}

impl Prepared for RngRun {
    fn run(&mut self, _batch: Batch) -> Result<Sample, UnitError> {
        let (dist, g) = (&self.dist, &mut self.gen_);
        Ok(timed(|| {
            self.out.iter_mut().for_each(|x| *x = dist.sample(g))
        }))
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        Ok(HostData::from_f32(self.dtype, &self.out))
    }
}

/// "Host" and "device" are both host memory here; the copy direction picks source and destination.
struct CopyRun {
    dir: CopyDir,
    host: Vec<f32>,
    dev: Vec<f32>,
    dev2: Vec<f32>,
}

impl CopyRun {
    fn new(p: &Copy, src: Vec<f32>) -> CopyRun {
        let n = src.len();
        match p.direction {
            CopyDir::H2d => CopyRun {
                dir: p.direction,
                host: src,
                dev: vec![0.0; n],
                dev2: Vec::new(),
            },
            CopyDir::D2h => CopyRun {
                dir: p.direction,
                host: vec![0.0; n],
                dev: src,
                dev2: Vec::new(),
            },
            CopyDir::D2d => CopyRun {
                dir: p.direction,
                host: Vec::new(),
                dev: src,
                dev2: vec![0.0; n],
            },
        }
    }
}

impl Prepared for CopyRun {
    fn run(&mut self, _batch: Batch) -> Result<Sample, UnitError> {
        Ok(timed(|| match self.dir {
            CopyDir::H2d => self.dev.copy_from_slice(&self.host),
            CopyDir::D2h => self.host.copy_from_slice(&self.dev),
            CopyDir::D2d => self.dev2.copy_from_slice(&self.dev),
        }))
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        Ok(HostData::F32(match self.dir {
            CopyDir::H2d => self.dev.clone(),
            CopyDir::D2h => self.host.clone(),
            CopyDir::D2d => self.dev2.clone(),
        }))
    }
}

struct CastRun {
    to: DType,
    src: HostData,
    out: HostData,
}

impl CastRun {
    /// Slice conversions from `half` (vectorised with F16C where the CPU has it); the reference
    /// goes element by element, so the two paths check each other.
    fn convert(&mut self) {
        let wide: Vec<f32>;
        let src: &[f32] = match &self.src {
            HostData::F32(v) => v,
            HostData::F16(v) => {
                let mut w = vec![0.0f32; v.len()];
                v.convert_to_f32_slice(&mut w);
                wide = w;
                &wide
            }
            HostData::Bf16(v) => {
                let mut w = vec![0.0f32; v.len()];
                v.convert_to_f32_slice(&mut w);
                wide = w;
                &wide
            }
        };
        self.out = match self.to {
            DType::F16 => {
                let mut o = vec![f16::ZERO; src.len()];
                o.convert_from_f32_slice(src);
                HostData::F16(o)
            }
            DType::Bf16 => {
                let mut o = vec![bf16::ZERO; src.len()];
                o.convert_from_f32_slice(src);
                HostData::Bf16(o)
            }
            _ => HostData::F32(src.to_vec()),
        };
    }
}

impl Prepared for CastRun {
    fn run(&mut self, _batch: Batch) -> Result<Sample, UnitError> {
        let t = Instant::now();
        self.convert();
        Ok(Sample::wall(t.elapsed().as_secs_f64()))
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        Ok(self.out.clone())
    }
}

/// The CPU's "graph" replays the fixed sequence eagerly; each replay takes the next activation.
struct GraphRun {
    p: Graph,
    mix: Vec<f32>,
    filter: Vec<f32>,
    acts: Vec<Vec<f32>>,
    next: usize,
    outs: Vec<Vec<f32>>,
}

impl Prepared for GraphRun {
    fn run(&mut self, _batch: Batch) -> Result<Sample, UnitError> {
        let i = self.next % self.acts.len().max(1);
        let t = Instant::now();
        let y = self.p.eager(&self.mix, &self.filter, &self.acts[i]);
        let secs = t.elapsed().as_secs_f64();
        if self.outs.len() < self.acts.len() {
            self.outs.push(y);
        } else if !self.p.keep_outputs {
            self.outs[i] = y;
        }
        self.next += 1;
        Ok(Sample::wall(secs))
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        // Verification wants every replay's output: run the replays not run yet.
        while self.outs.len() < self.acts.len() {
            self.run(Batch::Single)?;
        }
        let all: Vec<f32> = self.outs.iter().flatten().copied().collect();
        Ok(HostData::from_f32(self.p.dtype, &all))
    }
}

/// TEST-ONLY: how many devices the CPU backend says it has. One CPU is one device, so
/// `--devices 0,1` is refused on it; the tests of multi-device pools set
/// `ROCSWEEP_TEST_CPU_DEVICES=2` (read from the rocsweep process's own environment, like
/// `ROCSWEEP_TEST_FAULT`: sweep files cannot set `ROCSWEEP_` variables) to run two pools on it.
fn test_device_count() -> usize {
    std::env::var("ROCSWEEP_TEST_CPU_DEVICES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| (1..=16).contains(n))
        .unwrap_or(1)
}
