//! One GPU engine for the CUDA and ROCm backends, written once over a small runtime interface
//! (`runtime::Runtime`, implemented beside each backend: `backend::cuda::runtime::CudaRt` over
//! cudarc and `backend::rocm::runtime::HipRt` over the
//! dlopen'd HIP runtime; HIP mirrors CUDA call for call). What the engine does on the H100 it
//! does on AMD:
//! - `backend`: the `Backend` trait written once (`GpuBackend<V>`) over a `Vendor`, which makes
//!   the library calls: cuDNN and MIOpen, cuBLASLt, hipBLASLt and rocBLAS, cuRAND and hipRAND;
//! - `timer`: launch-free device time behind the blocking kernel (and through graphs where the
//!   runtime times that way) and per-call time; `Device::flush_cache`: cold samples;
//! - `mem`: device and pinned memory, checked uploads and downloads;
//! - `run`: a library call's unit (GEMM, convolution) with rotating operands; `gemm`: what GEMM
//!   through cuBLASLt and hipBLASLt shares (the column-major view, the heuristic's solver names);
//! - `kernels`: the project's own kernels (compiled by NVRTC or hipRTC behind
//!   `Runtime::compile`), `graph`: capture and the graph op's replay bookkeeping, `probes`: the
//!   copy, rng and cast probes;
//! - `ffi`: the tables of raw symbols of libraries opened at run time (`api!`: the ROCm
//!   libraries, ROCm SMI, NVML) and the C strings they return.
//!
//! The backends keep only what is truly vendor-specific: the libraries above, the compilers'
//! options and checks, NVML and ROCm SMI, and where the libraries are found.

pub mod backend;
pub mod device;
pub mod ffi;
pub mod gemm;
pub mod graph;
pub mod kernels;
pub mod mem;
pub mod probes;
pub mod run;
pub mod runtime;
pub mod timer;

pub use device::*;

#[cfg(test)]
mod tests;
