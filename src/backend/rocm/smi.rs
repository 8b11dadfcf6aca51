//! ROCm SMI (librocm_smi64), loaded at run time: the system (shader) clock and temperature of the
//! worker's device, found by its PCI id (SMI's indices ignore HIP_VISIBLE_DEVICES).
//!
//! rsmi_frequencies_t changed in ROCm 6.0 (library 7.0): a `bool has_deep_sleep` came first and
//! the array grew from 32 to 33 entries; the layout is picked from rsmi_version_get's major.

use crate::backend::engine::ffi::api;
use crate::backend::telemetry::{Monitor, Reading};
use std::ffi::{c_int, c_void};

const SONAMES: &[&str] = &[
    "librocm_smi64.so.7",
    "librocm_smi64.so.6",
    "librocm_smi64.so.5",
    "librocm_smi64.so.1",
    "librocm_smi64.so",
];

const RSMI_CLK_TYPE_SYS: c_int = 0;
const RSMI_TEMP_CURRENT: c_int = 0;
/// Edge first; junction (hotspot) where the edge sensor is not supported.
const SENSORS: [u32; 2] = [0, 1];

api! {
    pub struct SmiApi {
        required {
            rsmi_init: fn(u64) -> c_int;
            rsmi_num_monitor_devices: fn(*mut u32) -> c_int;
            rsmi_dev_pci_id_get: fn(u32, *mut u64) -> c_int;
            rsmi_version_get: fn(*mut c_void) -> c_int;
            rsmi_dev_gpu_clk_freq_get: fn(u32, c_int, *mut c_void) -> c_int;
            rsmi_dev_temp_metric_get: fn(u32, u32, c_int, *mut i64) -> c_int;
        }
        optional {}
    }
}

pub struct Smi {
    api: SmiApi,
    device: u32,
    new_layout: bool,
}

/// The current clock in MHz from an rsmi_frequencies_t (`buf`), in the old or new layout.
pub fn current_mhz(buf: &[u8], new_layout: bool) -> Option<f64> {
    let (current_at, freqs_at, max) = if new_layout { (8, 16, 33) } else { (4, 8, 32) };
    let word = |o: usize| {
        buf.get(o..o + 4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let current = word(current_at)? as usize;
    if current >= max {
        return None;
    }
    let o = freqs_at + 8 * current;
    let hz = u64::from_ne_bytes(buf.get(o..o + 8)?.try_into().ok()?);
    (hz > 0).then(|| hz as f64 / 1e6)
}

/// The PCI id ROCm SMI uses (domain << 32 | bus << 8 | device << 3 | function) of a bus id
/// string as HIP gives it ("0000:03:00.0").
pub fn bdfid(pci_bus_id: &str) -> Option<u64> {
    let (domain, rest) = pci_bus_id.trim().split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (dev, func) = rest.split_once('.')?;
    let h = |s: &str| u64::from_str_radix(s, 16).ok();
    Some(h(domain)? << 32 | h(bus)? << 8 | h(dev)? << 3 | h(func)?)
}

/// Bits 31:28 of a ROCm SMI BDFID: the partition of a partitioned device (ROCm 6.1+), which a
/// PCI bus id from HIP does not carry.
const PARTITION_BITS: u64 = 0xF << 28;

/// The SMI index whose BDFID (None: SMI could not say) is `want`: an exact match first, else
/// the first device at that PCI address whatever its partition.
pub fn pick(ids: &[Option<u64>], want: u64) -> Option<u32> {
    let at_address = |id: &Option<u64>| id.is_some_and(|id| id & !PARTITION_BITS == want);
    ids.iter()
        .position(|id| *id == Some(want))
        .or_else(|| ids.iter().position(at_address))
        .map(|i| i as u32)
}

impl Smi {
    pub fn open(pci_bus_id: &str) -> Result<Smi, String> {
        let l =
            super::loader::open(SONAMES).map_err(|e| format!("ROCm SMI (librocm_smi64) {e}"))?;
        let want =
            bdfid(pci_bus_id).ok_or_else(|| format!("ROCm SMI: bad PCI bus id {pci_bus_id:?}"))?;
        let api = SmiApi::load(l.lib).map_err(|e| format!("ROCm SMI ({}): {e}", l.path))?;
        // SAFETY: plain calls with out-pointers to live values.
        unsafe {
            let rc = (api.rsmi_init)(0);
            if rc != 0 {
                return Err(format!("ROCm SMI: rsmi_init returned {rc}"));
            }
            let mut v = [0u32; 8];
            let new_layout = (api.rsmi_version_get)(v.as_mut_ptr().cast()) == 0 && v[0] >= 7;
            let mut n = 0u32;
            if (api.rsmi_num_monitor_devices)(&mut n) != 0 {
                return Err("ROCm SMI: rsmi_num_monitor_devices failed".into());
            }
            let ids: Vec<Option<u64>> = (0..n)
                .map(|i| {
                    let mut id = 0u64;
                    ((api.rsmi_dev_pci_id_get)(i, &mut id) == 0).then_some(id)
                })
                .collect();
            let device = pick(&ids, want).ok_or_else(|| {
                format!("ROCm SMI: no device at PCI bus id {pci_bus_id} ({n} devices)")
            })?;
            Ok(Smi {
                api,
                device,
                new_layout,
            })
        }
    }
}

impl Monitor for Smi {
    fn read(&self) -> Reading {
        let mut buf = [0u8; 512];
        // SAFETY: the buffer is larger than either layout of rsmi_frequencies_t.
        let clock = (unsafe {
            (self.api.rsmi_dev_gpu_clk_freq_get)(
                self.device,
                RSMI_CLK_TYPE_SYS,
                buf.as_mut_ptr().cast(),
            )
        } == 0)
            .then(|| current_mhz(&buf, self.new_layout))
            .flatten();
        let temp = SENSORS.iter().find_map(|&sensor| {
            let mut milli = 0i64;
            // SAFETY: out-pointer to a live i64.
            (unsafe {
                (self.api.rsmi_dev_temp_metric_get)(
                    self.device,
                    sensor,
                    RSMI_TEMP_CURRENT,
                    &mut milli,
                )
            } == 0)
                .then_some(milli as f64 / 1000.0)
        });
        Reading {
            clock_mhz: clock,
            temp_c: temp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian's real ROCm SMI 5.2 (librocm-smi64-1, which .ci/run installs) on a machine with no
    /// AMD GPU: opening it is an error that says why, never a panic, and the backend records it
    /// as a note ("telemetry: none (...)").
    #[test]
    fn debians_rocm_smi_without_a_gpu_is_a_note() {
        let present = std::path::Path::new("/usr/lib/librocm_smi64.so.1").exists();
        if !present {
            assert!(
                std::env::var("CI").map_or(true, |v| v != "true"),
                "librocm-smi64-1 is missing, but .ci/run installs it"
            );
            return;
        }
        let e = Smi::open("0000:03:00.0").err().unwrap_or_default();
        assert!(
            e.contains("rsmi_init returned") || e.contains("no device at PCI bus id"),
            "{e}"
        );
    }

    #[test]
    fn pci_ids_as_rocm_smi_numbers_them() {
        assert_eq!(bdfid("0000:03:00.0"), Some(0x300));
        assert_eq!(bdfid("0001:c1:00.1"), Some(1 << 32 | 0xc1 << 8 | 1));
        assert_eq!(bdfid("nonsense"), None);
    }

    /// A partitioned device (bits 31:28 of SMI's BDFID) is found by its PCI address alone; an
    /// exact match wins; an index SMI could not read is skipped.
    #[test]
    fn the_device_is_picked_by_pci_address_whatever_its_partition() {
        let want = bdfid("0000:c1:00.0").unwrap_or_default();
        let ids = [
            None,
            Some(0x300),
            Some(want | 1 << 28),
            Some(want | 2 << 28),
        ];
        assert_eq!(pick(&ids, want), Some(2));
        let exact = [Some(want | 1 << 28), Some(want)];
        assert_eq!(pick(&exact, want), Some(1));
        assert_eq!(pick(&[Some(0x300), None], want), None);
    }

    #[test]
    fn both_layouts_of_the_frequency_table() {
        // ROCm 5.x: num_supported, current, frequency[32].
        let mut old = [0u8; 264];
        old[4..8].copy_from_slice(&1u32.to_ne_bytes());
        old[16..24].copy_from_slice(&2_100_000_000u64.to_ne_bytes());
        assert_eq!(current_mhz(&old, false), Some(2100.0));
        // ROCm 6+: has_deep_sleep first, frequency[33] at 16.
        let mut new = [0u8; 280];
        new[8..12].copy_from_slice(&2u32.to_ne_bytes());
        new[32..40].copy_from_slice(&1_500_000_000u64.to_ne_bytes());
        assert_eq!(current_mhz(&new, true), Some(1500.0));
        new[8..12].copy_from_slice(&40u32.to_ne_bytes());
        assert_eq!(
            current_mhz(&new, true),
            None,
            "an index past the table is no reading"
        );
    }
}
