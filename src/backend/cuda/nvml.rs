//! NVML (libnvidia-ml), loaded at run time: the SM clock and temperature of the worker's device,
//! found by its PCI bus id (NVML's indices ignore CUDA_VISIBLE_DEVICES).

use crate::backend::engine::ffi::api;
use crate::backend::telemetry::{Monitor, Reading};
use std::ffi::{CString, c_char, c_int, c_uint, c_void};
use std::sync::Arc;

type Handle = *mut c_void;

const NVML_CLOCK_SM: c_int = 1;
const NVML_TEMPERATURE_GPU: c_int = 0;

api! {
    pub struct NvmlApi {
        required {
            nvmlInit_v2: fn() -> c_int;
            nvmlDeviceGetHandleByPciBusId_v2: fn(*const c_char, *mut Handle) -> c_int;
            nvmlDeviceGetClockInfo: fn(Handle, c_int, *mut c_uint) -> c_int;
            nvmlDeviceGetTemperature: fn(Handle, c_int, *mut c_uint) -> c_int;
        }
        optional {}
    }
}

pub struct Nvml {
    api: NvmlApi,
    device: Handle,
}

impl Nvml {
    /// Opens NVML and finds the device with this PCI bus id ("0000:18:00.0").
    pub fn open(pci_bus_id: &str) -> Result<Nvml, String> {
        // SAFETY: loading NVIDIA's management library runs its initialisers; the worker process
        // is expendable if it misbehaves.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
            .map_err(|e| format!("NVML (libnvidia-ml.so.1) not loaded: {e}"))?;
        let api = NvmlApi::load(Arc::new(lib)).map_err(|e| format!("NVML: {e}"))?;
        // SAFETY: plain calls with out-pointers to live values and a NUL-terminated id.
        unsafe {
            let rc = (api.nvmlInit_v2)();
            if rc != 0 {
                return Err(format!("NVML: nvmlInit_v2 returned {rc}"));
            }
            let id = CString::new(pci_bus_id).map_err(|_| "NVML: bad PCI bus id".to_string())?;
            let mut device: Handle = std::ptr::null_mut();
            let rc = (api.nvmlDeviceGetHandleByPciBusId_v2)(id.as_ptr(), &mut device);
            if rc != 0 || device.is_null() {
                return Err(format!("NVML: no device at PCI bus id {pci_bus_id} ({rc})"));
            }
            Ok(Nvml { api, device })
        }
    }
}

impl Monitor for Nvml {
    fn read(&self) -> Reading {
        let (mut mhz, mut c): (c_uint, c_uint) = (0, 0);
        let api = &self.api;
        // SAFETY: a live handle from NVML and out-pointers to live ints.
        let clock = (unsafe { (api.nvmlDeviceGetClockInfo)(self.device, NVML_CLOCK_SM, &mut mhz) }
            == 0)
            .then_some(f64::from(mhz));
        // SAFETY: as above.
        let temp =
            (unsafe { (api.nvmlDeviceGetTemperature)(self.device, NVML_TEMPERATURE_GPU, &mut c) }
                == 0)
                .then_some(f64::from(c));
        Reading {
            clock_mhz: clock,
            temp_c: temp,
        }
    }
}
