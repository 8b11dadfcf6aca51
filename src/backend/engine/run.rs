//! A library call's unit, written once for GEMM and convolution on every runtime: the operands
//! uploaded, the output zeroed, samples timed by the engine's timer, cold samples behind the
//! engine's cache flush, and rotating operands (`rotate_inputs`, as hipblaslt-bench --rotating):
//! copies of the two inputs that consecutive calls, graph-captured ones too, use in turn, so
//! that a sample is not served from L2 by the call before it.

use super::device::{Dev, Device};
use super::mem::Tensor;
use super::runtime::{Ptr, Runtime};
use crate::backend::{Prepared, UnitError};
use crate::dtype::DType;
use crate::op::conv2d::{Conv2d, ConvInputs};
use crate::op::gemm::{Gemm, GemmInputs};
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};

/// Transform-domain convolution algorithms (FFT, Winograd) round in the transformed domain too;
/// their error is a known multiple of a direct product's, not a bug (cuDNN's and MIOpen's units
/// are checked with this factor).
pub const TRANSFORM_ERROR_FACTOR: f64 = 32.0;

/// A configured library call (descriptors, algorithm, workspace) the backend made.
pub trait Call {
    /// Queues one call reading `a` and `b` and writing `out` on the runtime's stream.
    fn launch(&mut self, a: Ptr, b: Ptr, out: Ptr) -> Result<(), UnitError>;
    /// As `Prepared::chosen`.
    fn chosen(&self) -> String;
    /// As `Prepared::workspace_bytes`.
    fn workspace_bytes(&self) -> u64;
    /// As `Prepared::tolerance_factor`.
    fn tolerance_factor(&self) -> f64 {
        1.0
    }
    /// As `Prepared::compile_seconds`.
    fn compile_seconds(&self) -> Option<(f64, f64)> {
        None
    }
}

/// A call's operands: its two inputs and its output.
pub type Operands<R> = (Tensor<R>, Tensor<R>, Tensor<R>);

struct CallRun<R: Runtime, C> {
    dev: Dev<R>,
    call: C,
    a: Tensor<R>,
    b: Tensor<R>,
    out: Tensor<R>,
    /// Copies of (a, b) that consecutive calls use in turn, and the next one.
    rotating: Vec<(Tensor<R>, Tensor<R>)>,
    next: usize,
}

/// The unit of `call` on the inputs `a` and `b` into `out`.
pub fn prepare<R: Runtime, C: Call + 'static>(
    dev: &Dev<R>,
    call: C,
    (a, b, out): Operands<R>,
) -> Box<dyn Prepared> {
    Box::new(CallRun {
        dev: dev.clone(),
        a,
        b,
        out,
        call,
        rotating: Vec::new(),
        next: 0,
    })
}

/// A convolution's operands: its two inputs and its output's zeros.
pub fn conv_operands<R: Runtime>(
    dev: &Device<R>,
    p: &Conv2d,
    i: &ConvInputs,
) -> Result<Operands<R>, UnitError> {
    operands(dev, &i.a, &i.b, p.dtype, p.output_len())
}

/// A GEMM's operands: its two inputs and its output's zeros (of its output type).
pub fn gemm_operands<R: Runtime>(
    dev: &Device<R>,
    p: &Gemm,
    i: &GemmInputs,
) -> Result<Operands<R>, UnitError> {
    operands(dev, &i.a, &i.b, p.out_dtype, p.output_len())
}

/// The operands of a call with inputs `a` and `b` and `out_len` zeros of `out_dtype` as output.
fn operands<R: Runtime>(
    dev: &Device<R>,
    a: &HostData,
    b: &HostData,
    out_dtype: DType,
    out_len: usize,
) -> Result<Operands<R>, UnitError> {
    Ok((
        dev.upload(a)?,
        dev.upload(b)?,
        dev.zeros(out_dtype, out_len)?,
    ))
}

impl<R: Runtime, C: Call> Prepared for CallRun<R, C> {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let d: &Device<R> = &self.dev;
        let out = self.out.ptr();
        let mut sets = vec![(self.a.ptr(), self.b.ptr())];
        sets.extend(self.rotating.iter().map(|(a, b)| (a.ptr(), b.ptr())));
        let mut next = self.next;
        let call = &mut self.call;
        let t = d.timed(batch, || {
            let (a, b) = sets[next % sets.len()];
            next += 1;
            call.launch(a, b, out)
        });
        self.next = next;
        t
    }

    fn rotate_inputs(&mut self, bytes: u64) -> Result<(), UnitError> {
        let (ha, hb) = (self.a.download()?, self.b.download()?);
        let set = (ha.byte_len() + hb.byte_len()) as u64;
        for _ in 1..crate::timing::rotating_sets(bytes, set) {
            self.rotating
                .push((self.dev.upload(&ha)?, self.dev.upload(&hb)?));
        }
        Ok(())
    }

    fn flush_cache(&mut self, bytes: u64) -> bool {
        self.dev.flush_cache(bytes)
    }

    fn output(&mut self) -> Result<HostData, UnitError> {
        self.out.download()
    }

    fn chosen(&self) -> String {
        self.call.chosen()
    }

    fn workspace_bytes(&self) -> u64 {
        self.call.workspace_bytes()
    }

    fn tolerance_factor(&self) -> f64 {
        self.call.tolerance_factor()
    }

    fn compile_seconds(&self) -> Option<(f64, f64)> {
        self.call.compile_seconds()
    }
}
