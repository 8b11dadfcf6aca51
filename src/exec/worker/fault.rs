//! TEST-ONLY fault injection, read by the worker from `ROCSWEEP_TEST_FAULT` and nowhere else.
//! It lets the test suite make a real worker process really hang, segfault, abort or exit on
//! chosen units, or hand a corrupted output to verification. Sweep files cannot reach it: the
//! sweep loader refuses env names that start with `ROCSWEEP_`, so only the environment of the
//! `rocsweep` process itself can set it.
//!
//! Syntax: rules separated by `;`, each `MATCH:ACTION@PHASE`, where MATCH is `*`, `probe` (the
//! health probe), or conditions joined by `&`, each `name=value` (a parameter of the unit's case,
//! `solver=...`, or `backend=...`: the backend the worker was started with, as the sweep names
//! it, e.g. `auto`), `name>value`, `name>=value`, `name<value` or `name<=value` (a numeric
//! parameter compared as a number; a parameter that is not a number never matches), or
//! `env.NAME=value` (the worker's own environment, i.e. its env combination), or `prior_OP`
//! compared as a number (how many units or sequence steps of op OP this worker process ran
//! before this one, e.g. `prior_gemm>=2&c_in=64:zeros@verify`: a fault that needs earlier
//! calls in the same process, as in TheRock#5581); ACTION is `hang`,
//! `gpuhang` (a kernel that never ends, on GPU backends), `segv`, `abort`, `exit`, or `zeros` /
//! `nan` (the unit's output, once read back from the backend, is replaced by all zeros / all
//! NaN before it is verified, so the row says what the verifier says: `zeros`, `nonfinite` or
//! `mismatch`), or `jitter` (the lowest bit of the output's first element flips: bits that
//! differ, a verdict that does not); these three act only with PHASE `verify`; PHASE is enumerate, alloc, compile, run
//! or verify. The first rule that matches wins. The unit's match target is its canonical text
//! with `;solver=NAME;backend=NAME;prior_OP=N...` appended (an enumeration's: the problem's parameters with
//! `;backend=NAME`).
//! Examples: `c_in=16&env.MIOPEN_DEBUG_CONV_GEMM=1:hang@compile`; seed 004's RDNA1 table as
//! `c_in=16&h>32:hang@run;c_in=32&h>48:hang@run;c_in=64&h>64:hang@run`; one layer returning
//! zeros: `backend=torch&m=64:zeros@verify`.

pub const ENV: &str = "ROCSWEEP_TEST_FAULT";

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Hang,
    /// A device kernel that never ends (GPU backends); the CPU backend spins instead.
    GpuHang,
    Segv,
    Abort,
    Exit,
    /// The output, read back, becomes all zeros (applied by the worker before verification).
    Zeros,
    /// The output, read back, becomes all NaN (applied by the worker before verification).
    Nan,
    /// The lowest bit of the output's first element flips: different bits that verification
    /// still accepts (what `--processes` must catch between processes).
    Jitter,
}

impl Action {
    /// Whether the action corrupts the output instead of ending the worker.
    pub fn corrupts_output(&self) -> bool {
        matches!(self, Action::Zeros | Action::Nan | Action::Jitter)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    matcher: String,
    action: Action,
    phase: String,
}

impl Action {
    /// The action's name in the syntax above (and to the torch worker's Python side).
    pub fn name(&self) -> &'static str {
        match self {
            Action::Hang => "hang",
            Action::GpuHang => "gpuhang",
            Action::Segv => "segv",
            Action::Abort => "abort",
            Action::Exit => "exit",
            Action::Zeros => "zeros",
            Action::Nan => "nan",
            Action::Jitter => "jitter",
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Faults {
    rules: Vec<Rule>,
}

impl Faults {
    pub fn from_env() -> Faults {
        std::env::var(ENV)
            .map(|s| Faults::parse(&s))
            .unwrap_or_default()
    }

    /// Malformed rules are ignored: this is a test hook, not user input.
    pub fn parse(text: &str) -> Faults {
        let rules = text
            .split(';')
            .filter_map(|r| {
                let (matcher, rest) = r.trim().rsplit_once(':')?;
                let (action, phase) = rest.split_once('@')?;
                let action = match action {
                    "hang" => Action::Hang,
                    "gpuhang" => Action::GpuHang,
                    "segv" => Action::Segv,
                    "abort" => Action::Abort,
                    "exit" => Action::Exit,
                    "zeros" => Action::Zeros,
                    "nan" => Action::Nan,
                    "jitter" => Action::Jitter,
                    _ => return None,
                };
                Some(Rule {
                    matcher: matcher.to_string(),
                    action,
                    phase: phase.to_string(),
                })
            })
            .collect();
        Faults { rules }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// `canonical` is the case's canonical text (`op;k=v;...`) with `;solver=...` appended, or
    /// `probe` for the health probe.
    pub fn action(&self, canonical: &str, phase: &str) -> Option<Action> {
        // A whole-text matcher names the unit, not the counts of what ran before it.
        let unit = canonical.split(";prior_").next().unwrap_or(canonical);
        self.rules
            .iter()
            .find(|r| {
                r.phase == phase
                    && (r.matcher == "*"
                        || r.matcher == unit
                        || (canonical != "probe"
                            && r.matcher.split('&').all(|cond| holds(cond, canonical))))
            })
            .map(|r| r.action.clone())
    }
}

fn holds(cond: &str, canonical: &str) -> bool {
    if let Some((name, want)) = cond.strip_prefix("env.").and_then(|c| c.split_once('=')) {
        return std::env::var(name).is_ok_and(|v| v == want);
    }
    // Two-character operators first, so `h>=32` is not read as `h>` `=32`.
    let compare = ["<=", ">=", "<", ">"]
        .into_iter()
        .find_map(|op| cond.split_once(op).map(|(name, want)| (name, op, want)));
    match compare {
        Some((name, op, want)) => {
            let Ok(want) = want.trim().parse::<f64>() else {
                return false;
            };
            canonical
                .split(';')
                .filter_map(|kv| kv.split_once('='))
                .filter(|(k, _)| *k == name.trim())
                .filter_map(|(_, v)| v.parse::<f64>().ok())
                .any(|v| match op {
                    "<=" => v <= want,
                    ">=" => v >= want,
                    "<" => v < want,
                    _ => v > want,
                })
        }
        None => canonical.split(';').any(|kv| kv == cond),
    }
}

/// Replaces every element of `output` by zero (`Zeros`) or NaN (`Nan`); other actions leave it.
pub fn corrupt(action: &Action, output: &mut crate::tensor::HostData) {
    use crate::tensor::HostData;
    use half::{bf16, f16};
    match (action, output) {
        (Action::Zeros, HostData::F32(v)) => v.fill(0.0),
        (Action::Zeros, HostData::F16(v)) => v.fill(f16::ZERO),
        (Action::Zeros, HostData::Bf16(v)) => v.fill(bf16::ZERO),
        (Action::Nan, HostData::F32(v)) => v.fill(f32::NAN),
        (Action::Nan, HostData::F16(v)) => v.fill(f16::NAN),
        (Action::Nan, HostData::Bf16(v)) => v.fill(bf16::NAN),
        (Action::Jitter, HostData::F32(v)) => {
            if let Some(x) = v.first_mut() {
                *x = f32::from_bits(x.to_bits() ^ 1);
            }
        }
        (Action::Jitter, HostData::F16(v)) => {
            if let Some(x) = v.first_mut() {
                *x = f16::from_bits(x.to_bits() ^ 1);
            }
        }
        (Action::Jitter, HostData::Bf16(v)) => {
            if let Some(x) = v.first_mut() {
                *x = bf16::from_bits(x.to_bits() ^ 1);
            }
        }
        _ => {}
    }
}

/// Carries out a fault for real: spins forever, touches unmapped memory, aborts or exits. The
/// output-corrupting actions do nothing here (see [`corrupt`]).
pub fn trigger(action: Action) {
    match action {
        Action::Zeros | Action::Nan | Action::Jitter => {}
        Action::Hang | Action::GpuHang => {
            let mut x: u64 = 0;
            loop {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        Action::Segv => {
            // The signal a real invalid access delivers, without the undefined behaviour of making
            // one. Rust's runtime installs a SIGSEGV handler (stack-overflow detection) that
            // returns for a raised signal, so the default action is restored first. Test-only,
            // reached only through ENV.
            // SAFETY: signal(2) and raise(2) on our own process.
            unsafe {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                libc::raise(libc::SIGSEGV);
            }
        }
        Action::Abort => std::process::abort(),
        Action::Exit => std::process::exit(17),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_parameters_phases_and_the_probe() {
        let f = Faults::parse("c_in=16:hang@compile; probe:segv@run ;*:abort@verify;bad");
        let unit = "conv2d;direction=fwd;c_in=16;h=8;solver=im2col";
        assert_eq!(f.action(unit, "compile"), Some(Action::Hang));
        assert_eq!(f.action(unit, "run"), None);
        assert_eq!(f.action("conv2d;c_in=160", "compile"), None);
        assert_eq!(f.action("probe", "run"), Some(Action::Segv));
        assert_eq!(f.action("probe", "compile"), None);
        assert_eq!(f.action(unit, "verify"), Some(Action::Abort));
        let both =
            Faults::parse("c_in=16&h=8:exit@run;c_in=16&env.PATH_THAT_IS_NOT_SET_X=1:hang@run");
        assert_eq!(both.action(unit, "run"), Some(Action::Exit));
        assert_eq!(
            both.action("conv2d;c_in=16;h=9", "run"),
            None,
            "every condition must hold"
        );
    }

    #[test]
    fn prior_conditions_count_what_ran_before_in_the_process() {
        let f = Faults::parse("prior_gemm>=2&c_in=64:zeros@verify");
        let at = |gemms: u32| {
            format!("conv2d;c_in=64;solver=default;backend=cpu;prior_conv2d=0;prior_gemm={gemms}")
        };
        assert_eq!(f.action(&at(1), "verify"), None);
        assert_eq!(f.action(&at(2), "verify"), Some(Action::Zeros));
        // A whole-text matcher still names the unit whatever ran before it.
        let whole = Faults::parse("conv2d;c_in=64;solver=default;backend=cpu:exit@run");
        assert_eq!(whole.action(&at(5), "run"), Some(Action::Exit));
    }

    #[test]
    fn output_faults_parse_match_the_backend_and_corrupt_every_element() {
        let f = Faults::parse("backend=auto&m=64:zeros@verify;backend=cpu:nan@verify");
        let on = |b: &str| format!("gemm;m=64;n=8;k=8;solver=default;backend={b}");
        assert_eq!(f.action(&on("auto"), "verify"), Some(Action::Zeros));
        assert_eq!(f.action(&on("auto"), "run"), None);
        assert_eq!(f.action(&on("cpu"), "verify"), Some(Action::Nan));
        assert_eq!(f.action(&on("torch"), "verify"), None);
        assert!(Action::Zeros.corrupts_output() && !Action::Exit.corrupts_output());
        let mut out = crate::tensor::HostData::F32(vec![1.0, -2.5, 3.0]);
        corrupt(&Action::Nan, &mut out);
        assert!(matches!(&out, crate::tensor::HostData::F32(v) if v.iter().all(|x| x.is_nan())));
        corrupt(&Action::Zeros, &mut out);
        assert!(matches!(&out, crate::tensor::HostData::F32(v) if v.iter().all(|x| *x == 0.0)));
        let mut half = crate::tensor::HostData::Bf16(vec![half::bf16::ONE; 4]);
        corrupt(&Action::Zeros, &mut half);
        assert!(
            matches!(&half, crate::tensor::HostData::Bf16(v) if v.iter().all(|x| x.to_f32() == 0.0))
        );
    }

    #[test]
    fn numeric_comparisons_model_seed_004s_table() {
        let f = Faults::parse(
            "c_in=16&h>32:hang@run;c_in=32&h>=56:segv@run;c_in=64&h<=8:exit@run;c_in=3&h<16:abort@run",
        );
        let at = |c: u32, h: u32| {
            format!("conv2d;direction=fwd;n=1;c_in={c};c_out=8;h={h};w={h};solver=default")
        };
        assert_eq!(f.action(&at(16, 32), "run"), None, "> is strict");
        assert_eq!(f.action(&at(16, 40), "run"), Some(Action::Hang));
        assert_eq!(f.action(&at(16, 40), "compile"), None);
        assert_eq!(f.action(&at(32, 48), "run"), None);
        assert_eq!(
            f.action(&at(32, 56), "run"),
            Some(Action::Segv),
            ">= includes"
        );
        assert_eq!(f.action(&at(64, 8), "run"), Some(Action::Exit));
        assert_eq!(f.action(&at(64, 16), "run"), None);
        assert_eq!(f.action(&at(3, 8), "run"), Some(Action::Abort));
        assert_eq!(f.action(&at(3, 16), "run"), None, "< is strict");
        assert_eq!(
            f.action(&at(128, 400), "run"),
            None,
            "other channels never hang"
        );
        // A word never compares as a number, and a malformed bound matches nothing.
        let words = Faults::parse("dtype>1:hang@run;h>big:hang@run");
        assert_eq!(words.action("conv2d;dtype=f32;h=64", "run"), None);
    }
}
