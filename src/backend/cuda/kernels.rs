//! Kernels from kernels/ compiled once per worker by NVRTC for the device's architecture.

use super::buffers::Gpu;
use super::driver_err;
use crate::backend::UnitError;
use crate::dtype::DType;
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg, sys as dsys};
use cudarc::nvrtc::CompileOptions;

const PRELUDE: &str = include_str!("../../../kernels/prelude.h");
const CAST: &str = include_str!("../../../kernels/cast.cu");
const CONV_REF: &str = include_str!("../../../kernels/conv_ref.cu");

#[derive(Clone)]
pub struct Kernels {
    module: std::sync::Arc<cudarc::driver::CudaModule>,
}

fn include_paths() -> Vec<String> {
    let mut v = Vec::new();
    if let Ok(p) = std::env::var("CUDA_PATH").or_else(|_| std::env::var("CUDA_HOME")) {
        v.push(format!("{p}/include"));
    }
    v.push("/usr/local/cuda/include".into());
    v.push("/usr/local/cuda/targets/x86_64-linux/include".into());
    v.push("/usr/include".into());
    v
}

fn name(d: DType) -> &'static str {
    match d {
        DType::F16 => "f16",
        DType::Bf16 => "bf16",
        _ => "f32",
    }
}

impl Kernels {
    pub fn compile(gpu: &Gpu) -> Result<Kernels, UnitError> {
        let (major, minor) = gpu
            .ctx
            .compute_capability()
            .map_err(|e| driver_err("compute capability", e))?;
        // The prelude is pasted in rather than #included: NVRTC sees one self-contained source.
        let src = format!("{PRELUDE}\n{CAST}\n{CONV_REF}");
        let opts = CompileOptions {
            include_paths: include_paths(),
            options: vec![
                format!("--gpu-architecture=compute_{major}{minor}"),
                "--std=c++17".into(),
            ],
            name: Some("rocsweep_kernels.cu".into()),
            ..Default::default()
        };
        let ptx =
            cudarc::nvrtc::compile_ptx_with_opts(src, opts).map_err(|e| UnitError::Library {
                library: "nvrtc".into(),
                code: "NVRTC_ERROR_COMPILATION".into(),
                message: format!("{e:?}"),
            })?;
        let module = gpu
            .ctx
            .load_module(ptx)
            .map_err(|e| driver_err("loading the compiled kernels", e))?;
        Ok(Kernels { module })
    }

    fn function(&self, name: &str) -> Result<CudaFunction, UnitError> {
        self.module
            .load_function(name)
            .map_err(|e| driver_err(&format!("kernel {name}"), e))
    }

    /// out[i] = convert(in[i]) for `n` elements.
    pub fn cast(
        &self,
        gpu: &Gpu,
        from: DType,
        to: DType,
        input: dsys::CUdeviceptr,
        out: dsys::CUdeviceptr,
        n: usize,
    ) -> Result<(), UnitError> {
        let f = self.function(&format!("cast_{}_{}", name(from), name(to)))?;
        let cfg = LaunchConfig::for_num_elems(n as u32);
        let mut b = gpu.stream.launch_builder(&f);
        b.arg(&input).arg(&out).arg(&n);
        // SAFETY: the kernel reads n elements of `from` at input and writes n of `to` at out.
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(|e| driver_err("launching the cast kernel", e))
    }

    pub fn relu(
        &self,
        gpu: &Gpu,
        dtype: DType,
        x: dsys::CUdeviceptr,
        n: usize,
    ) -> Result<(), UnitError> {
        let f = self.function(&format!("relu_{}", name(dtype)))?;
        let cfg = LaunchConfig::for_num_elems(n as u32);
        let mut b = gpu.stream.launch_builder(&f);
        b.arg(&x).arg(&n);
        // SAFETY: the kernel touches n elements at x.
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(|e| driver_err("launching the relu kernel", e))
    }

    /// The direct f64 forward convolution into `y` (one f64 per output element).
    pub fn conv_fwd_ref(
        &self,
        gpu: &Gpu,
        p: &crate::op::conv2d::Conv2d,
        x: dsys::CUdeviceptr,
        w: dsys::CUdeviceptr,
        y: dsys::CUdeviceptr,
    ) -> Result<(), UnitError> {
        let g = &p.geom;
        let f = self.function(&format!("conv_fwd_ref_{}", name(p.dtype)))?;
        let total = g.n * g.c_out * g.out_h() * g.out_w();
        let cfg = LaunchConfig::for_num_elems(total as u32);
        let ints: [i32; 17] = [
            g.n as i32,
            g.c_in as i32,
            g.c_out as i32,
            g.h as i32,
            g.w as i32,
            g.kh as i32,
            g.kw as i32,
            g.pad_h as i32,
            g.pad_w as i32,
            g.stride_h as i32,
            g.stride_w as i32,
            g.dil_h as i32,
            g.dil_w as i32,
            g.groups as i32,
            g.out_h() as i32,
            g.out_w() as i32,
            (p.layout == crate::op::conv2d::Layout::Nhwc) as i32,
        ];
        let mut b = gpu.stream.launch_builder(&f);
        b.arg(&x).arg(&w).arg(&y);
        for v in &ints {
            b.arg(v);
        }
        // SAFETY: x, w hold the case's operands and y has one f64 per output element.
        unsafe { b.launch(cfg) }.map_err(|e| driver_err("launching conv_fwd_ref", e))?;
        gpu.stream
            .synchronize()
            .map_err(|e| driver_err("waiting for conv_fwd_ref", e))
    }

    /// TEST-ONLY: launches `spin_forever` and waits for it, which never happens.
    pub fn spin_forever(&self, gpu: &Gpu) -> Result<(), UnitError> {
        let f = self.function("spin_forever")?;
        let flag = gpu
            .stream
            .alloc_zeros::<i32>(1)
            .map_err(|e| driver_err("alloc", e))?;
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = gpu.stream.launch_builder(&f);
        b.arg(&flag);
        // SAFETY: the kernel reads one int that stays zero.
        unsafe { b.launch(cfg) }.map_err(|e| driver_err("launching spin_forever", e))?;
        gpu.stream
            .synchronize()
            .map_err(|e| driver_err("waiting for spin_forever", e))
    }
}
