//! The engine over a third runtime: host memory and host clocks, with no GPU. It shows that a
//! runtime is an implementation of `Runtime` and nothing more, and tests what the engine itself
//! decides (uploads checked, implausible intervals refused, flushes and graphs bookkept).

use super::device::{Dev, Device};
use super::mem::{DevMem, Tensor};
use super::runtime::{CopyKind, Program, Ptr, Runtime};
use crate::backend::UnitError;
use crate::dtype::DType;
use crate::tensor::HostData;
use crate::timing::Batch;
use std::alloc::Layout;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::c_void;
use std::time::Instant;

/// Faults the host runtime can be told to have.
#[derive(Default)]
struct HostRt {
    /// Host-to-device copies arrive as zeros (seed 001).
    zeroing_copies: Cell<bool>,
    /// Every event interval is zero (seen with MIOpen on gfx1151).
    zero_intervals: bool,
    sizes: RefCell<HashMap<usize, usize>>,
    events: RefCell<HashMap<usize, Instant>>,
    next: Cell<usize>,
    launched: RefCell<Vec<String>>,
}

impl HostRt {
    fn handle(&self) -> Ptr {
        self.next.set(self.next.get() + 8);
        self.next.get() as Ptr
    }

    fn host_alloc(&self, bytes: usize) -> Result<Ptr, UnitError> {
        let layout = Layout::from_size_align(bytes.max(1), 8)
            .map_err(|_| UnitError::Unsupported("size".into()))?;
        // SAFETY: a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        self.sizes.borrow_mut().insert(p as usize, bytes.max(1));
        Ok(p.cast())
    }

    fn host_free(&self, p: Ptr) {
        if let Some(n) = self.sizes.borrow_mut().remove(&(p as usize))
            && let Ok(layout) = Layout::from_size_align(n, 8)
        {
            // SAFETY: allocated by host_alloc with this layout.
            unsafe { std::alloc::dealloc(p.cast(), layout) };
        }
    }
}

impl Runtime for HostRt {
    const LIBRARY: &'static str = "host";
    const COMPILER: &'static str = "no compiler";
    const ELAPSED_CALL: &'static str = "Instant::duration_since";
    const GRAPHED_TIMING: bool = true;
    const BLOCK: u32 = 64;

    fn alloc(&self, bytes: usize) -> Result<Ptr, UnitError> {
        self.host_alloc(bytes)
    }
    unsafe fn free(&self, ptr: Ptr) {
        self.host_free(ptr)
    }
    fn alloc_host(&self, bytes: usize, _mapped: bool) -> Result<Ptr, UnitError> {
        self.host_alloc(bytes)
    }
    unsafe fn free_host(&self, ptr: Ptr) {
        self.host_free(ptr)
    }
    unsafe fn mapped_device_ptr(&self, host: Ptr) -> Result<Ptr, UnitError> {
        Ok(host)
    }
    unsafe fn copy_async(
        &self,
        dst: Ptr,
        src: *const c_void,
        bytes: usize,
        kind: CopyKind,
    ) -> Result<(), UnitError> {
        // SAFETY: the engine's contract: both sides hold `bytes` bytes.
        unsafe {
            if self.zeroing_copies.get() && kind == CopyKind::HostToDevice {
                std::ptr::write_bytes(dst.cast::<u8>(), 0, bytes);
            } else {
                std::ptr::copy_nonoverlapping(src.cast::<u8>(), dst.cast::<u8>(), bytes);
            }
        }
        Ok(())
    }
    unsafe fn memset_async(&self, ptr: Ptr, bytes: usize) -> Result<(), UnitError> {
        // SAFETY: the engine's contract.
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, bytes) };
        Ok(())
    }
    fn sync(&self) -> Result<(), UnitError> {
        Ok(())
    }
    fn create_event(&self) -> Result<Ptr, UnitError> {
        Ok(self.handle())
    }
    unsafe fn destroy_event(&self, event: Ptr) {
        self.events.borrow_mut().remove(&(event as usize));
    }
    unsafe fn record_event(&self, event: Ptr) -> Result<(), UnitError> {
        self.events
            .borrow_mut()
            .insert(event as usize, Instant::now());
        Ok(())
    }
    unsafe fn elapsed_ms(&self, start: Ptr, end: Ptr) -> Result<f32, UnitError> {
        let ev = self.events.borrow();
        let (Some(a), Some(b)) = (ev.get(&(start as usize)), ev.get(&(end as usize))) else {
            return Err(UnitError::Unsupported("an event never recorded".into()));
        };
        if self.zero_intervals {
            return Ok(0.0);
        }
        // At least a nanosecond: the host clock may not tick between two records.
        Ok((b.duration_since(*a).as_secs_f32() * 1e3).max(1e-6))
    }
    fn begin_capture(&self) -> Result<(), UnitError> {
        Ok(())
    }
    fn end_capture(&self) -> Result<Ptr, UnitError> {
        Ok(self.handle())
    }
    unsafe fn instantiate(&self, _graph: Ptr) -> Result<Ptr, UnitError> {
        Ok(self.handle())
    }
    unsafe fn upload_graph(&self, _exec: Ptr) -> Result<(), UnitError> {
        Ok(())
    }
    unsafe fn launch_graph(&self, _exec: Ptr) -> Result<(), UnitError> {
        self.launched.borrow_mut().push("graph".into());
        Ok(())
    }
    unsafe fn destroy_graph(&self, _graph: Ptr) {}
    unsafe fn destroy_exec(&self, _exec: Ptr) {}
    fn compile(&self, program: &Program) -> Result<Vec<u8>, UnitError> {
        Ok(program.name.as_bytes().to_vec())
    }
    fn load_module(&self, _image: &[u8]) -> Result<Ptr, UnitError> {
        Ok(self.handle())
    }
    unsafe fn function(&self, _module: Ptr, name: &str) -> Result<Ptr, UnitError> {
        self.launched.borrow_mut().push(format!("looked up {name}"));
        Ok(self.handle())
    }
    unsafe fn unload_module(&self, _module: Ptr) {}
    unsafe fn launch(
        &self,
        _f: Ptr,
        _grid: u32,
        _block: u32,
        _args: &mut [*mut c_void],
        what: &str,
    ) -> Result<(), UnitError> {
        // The blocking kernel does not block here: the calls run as they are queued.
        self.launched.borrow_mut().push(what.to_string());
        Ok(())
    }
    fn default_flush_bytes(&self) -> usize {
        4096
    }
}

fn dev(rt: HostRt) -> Dev<HostRt> {
    Device::new(rt)
}

#[test]
fn a_tensor_goes_up_and_comes_back_through_any_runtime() {
    let d = dev(HostRt::default());
    let h = HostData::F32(vec![1.0, -2.5, 3.25]);
    let t: Tensor<HostRt> = d.upload(&h).expect("upload");
    assert_eq!(t.download().expect("download"), h);
    let z = d.zeros(DType::F16, 5).expect("zeros");
    assert_eq!(
        z.download().expect("download"),
        HostData::zeros(DType::F16, 5)
    );
}

#[test]
fn an_upload_that_arrives_as_zeros_is_an_error_of_its_own() {
    let d = dev(HostRt {
        zeroing_copies: Cell::new(true),
        ..HostRt::default()
    });
    let Err(UnitError::Library {
        library,
        code,
        message,
    }) = d.upload(&HostData::F32(vec![1.0, 2.0]))
    else {
        panic!("a corrupted upload must fail");
    };
    assert_eq!(
        (library.as_str(), code.as_str()),
        ("host", "INPUT_UPLOAD_CORRUPTED")
    );
    assert!(
        message.ends_with("3 of 8 bytes differ (all zeros)"),
        "{message}"
    );
}

#[test]
fn uploads_share_one_staging_buffer_and_each_is_checked_over_its_own_length() {
    let d = dev(HostRt::default());
    let big = HostData::F32((0..1000).map(|i| i as f32).collect());
    let small = HostData::from_f32(DType::Bf16, &[7.0, -1.5, 0.25]);
    let t = d.upload(&big).expect("upload");
    assert_eq!(t.download().expect("download"), big);
    // The staging buffer is now 4000 bytes and still holds the big tensor's bytes past 6.
    let t = d.upload(&small).expect("upload");
    assert_eq!(t.download().expect("download"), small);
    // A copy that arrives as zeros is caught through the larger buffer too.
    d.zeroing_copies.set(true);
    let Err(UnitError::Library { code, message, .. }) = d.upload(&small) else {
        panic!("a corrupted upload must fail");
    };
    assert_eq!(code, "INPUT_UPLOAD_CORRUPTED");
    assert!(message.contains("of 6 bytes differ"), "{message}");
}

#[test]
fn an_upload_larger_than_the_stage_goes_in_pieces_and_is_checked_whole() {
    let rt = std::rc::Rc::new(HostRt::default());
    let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut stage = None;
    // 1000 bytes through a 96-byte stage: 11 pieces, the last one short.
    let m = DevMem::upload_via(&rt, &bytes, &mut stage, 96).expect("upload");
    assert_eq!(stage.as_ref().map(|s| s.bytes), Some(96));
    assert_eq!(m.read().expect("read"), bytes);
    // Every piece is checked: a zeroing copy path is named with the whole upload's count.
    rt.zeroing_copies.set(true);
    let Err(UnitError::Library { message, .. }) = DevMem::upload_via(&rt, &bytes, &mut stage, 96)
    else {
        panic!("a corrupted upload must fail");
    };
    let nonzero = bytes.iter().filter(|&&b| b != 0).count();
    assert!(
        message.ends_with(&format!("{nonzero} of 1000 bytes differ (all zeros)")),
        "{message}"
    );
}

#[test]
fn a_sample_is_timed_behind_the_blocking_kernel_or_as_a_graph() {
    let d = dev(HostRt::default());
    let calls = Cell::new(0);
    let s = d
        .timed(Batch::Single, || {
            calls.set(calls.get() + 1);
            Ok(())
        })
        .expect("a sample");
    assert!(s.device > 0.0 && s.call > 0.0, "{s:?}");
    // One call with its launch, one behind the blocking kernel (a cold sample is not captured).
    assert_eq!(calls.get(), 2);
    let launched = d.rt.launched.borrow().clone();
    assert!(launched.contains(&"rs_block".to_string()), "{launched:?}");
    d.timed(Batch::Auto, || Ok(())).expect("a warm sample");
    assert!(d.rt.launched.borrow().contains(&"graph".to_string()));
}

#[test]
fn an_interval_of_zero_is_an_error_never_a_sample() {
    let d = dev(HostRt {
        zero_intervals: true,
        ..HostRt::default()
    });
    let Err(UnitError::Library { code, message, .. }) = d.timed(Batch::Auto, || Ok(())) else {
        panic!("a zero interval must fail");
    };
    assert_eq!(code, "invalid elapsed time");
    assert_eq!(message, "Instant::duration_since gave an interval of 0 ms");
}

#[test]
fn a_flush_keeps_its_buffer_and_grows_it_only_when_asked_for_more() {
    let d = dev(HostRt::default());
    d.flush_cache(0);
    d.flush_cache(1024);
    assert_eq!(d.flush.borrow().as_ref().map(|m| m.bytes), Some(4096));
    d.flush_cache(8192);
    assert_eq!(d.flush.borrow().as_ref().map(|m| m.bytes), Some(8192));
    let m = DevMem::alloc(&d.rt, 16).expect("alloc");
    assert_eq!(d.rt.sizes.borrow().get(&(m.ptr as usize)), Some(&16));
}
