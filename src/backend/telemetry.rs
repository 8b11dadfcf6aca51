//! Clocks and temperature of a worker's device, read before and after a unit's samples through
//! the vendor's management library (NVML on CUDA, ROCm SMI on ROCm), loaded at run time like the
//! other libraries. A missing library is a note, never a failure. A unit whose clock fell during
//! its samples is flagged: its times are not the device's steady state.

use serde::{Deserialize, Serialize};

/// One reading of the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// The graphics / shader clock, MHz.
    pub clock_mhz: Option<f64>,
    /// The GPU's temperature, degrees C.
    pub temp_c: Option<f64>,
}

/// A vendor's management library opened for the worker's device (NVML, ROCm SMI).
pub trait Monitor {
    fn read(&self) -> Reading;
}

/// The manifest's `telemetry` line where NVML opened (cuda and torch on CUDA).
pub const NVML_READS: &str = "NVML (SM clock, temperature per unit)";
/// The same where ROCm SMI opened (rocm and torch on ROCm).
pub const SMI_READS: &str = "ROCm SMI (system clock, temperature per unit)";

/// A clock that fell by more than this fraction during the samples flags the unit.
pub const DROP: f64 = 0.05;

/// Readings before and after a unit's samples, as results.csv shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Span {
    pub before: Reading,
    pub after: Reading,
}

impl Span {
    /// The lower of the two clocks.
    pub fn clock_mhz(&self) -> Option<f64> {
        match (self.before.clock_mhz, self.after.clock_mhz) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The higher of the two temperatures.
    pub fn temp_c(&self) -> Option<f64> {
        match (self.before.temp_c, self.after.temp_c) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// "1980->1410 MHz" when the clock fell by more than `DROP` during the samples.
    pub fn clock_drop(&self) -> Option<String> {
        let (a, b) = (self.before.clock_mhz?, self.after.clock_mhz?);
        (a > 0.0 && b < a * (1.0 - DROP)).then(|| format!("{a:.0}->{b:.0} MHz"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(c: f64, t: f64) -> Reading {
        Reading {
            clock_mhz: Some(c),
            temp_c: Some(t),
        }
    }

    #[test]
    fn a_clock_that_falls_is_flagged_and_a_steady_one_is_not() {
        let fell = Span {
            before: r(1980.0, 40.0),
            after: r(1410.0, 83.0),
        };
        assert_eq!(fell.clock_drop().as_deref(), Some("1980->1410 MHz"));
        assert_eq!(fell.clock_mhz(), Some(1410.0));
        assert_eq!(fell.temp_c(), Some(83.0));
        let steady = Span {
            before: r(1980.0, 40.0),
            after: r(1965.0, 41.0),
        };
        assert_eq!(steady.clock_drop(), None);
        assert_eq!(
            Span::default().clock_drop(),
            None,
            "nothing read, nothing flagged"
        );
    }
}
