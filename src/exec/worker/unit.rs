//! One unit from inputs to outcome: alloc/compile inside the backend, the first call, verification
//! against the reference, then timing. Plain data in and out, so it can run inside a worker.

// A step that fails ends the unit with its `Outcome` (the row it becomes); failures are the
// cold path.
#![allow(clippy::result_large_err)]

use crate::backend::telemetry::Span;
use crate::backend::{Backend, PhaseSink, Prepared, UnitError};
use crate::op::inputs::seed_from_id;
use crate::op::{Case, Inputs};
use crate::results::status::Status;
use crate::spec::policy::{Policies, TimingPolicy, VerifyPolicy};
use crate::timing::{self, Batch, Stats};
use crate::verify::{self, Reference, Verification};
use serde::{Deserialize, Serialize};
use std::time::Instant;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub status: Status,
    /// The phase a failure happened in (empty for `ok`).
    pub phase: String,
    /// The error text, or what verification found.
    pub error: String,
    /// Which reference the output was compared with: `cpu-f64`, `cpu-exact`, `statistical`, or
    /// `none (...)` with the reason verification was not done.
    pub reference: String,
    pub verification: Option<Verification>,
    pub first_call_s: Option<f64>,
    /// Compiling the solver before its first run with an empty cache (MIOpen: its own cache per
    /// env combination), and once more with the cache warm.
    #[serde(default)]
    pub compile_s: Option<f64>,
    #[serde(default)]
    pub compile_warm_s: Option<f64>,
    /// Launch-free device time per call (see `crate::timing`).
    pub stats: Option<Stats>,
    /// One call with its launch, as a framework sees it.
    #[serde(default)]
    pub call_stats: Option<Stats>,
    /// How the device figures were taken (`crate::timing::Method`'s names, the
    /// `timing_method` column); empty where nothing was timed.
    #[serde(default)]
    pub timing_method: String,
    /// The cache state of the samples (the `cache` column): `cold` (flushed before each),
    /// `rotated` (inputs rotated through copies), `warm`; empty where nothing was timed.
    #[serde(default)]
    pub cache: String,
    /// The device's clock and temperature before and after the samples, where readable.
    #[serde(default)]
    pub telemetry: Option<Span>,
    pub workspace_bytes: u64,
    /// What the library chose where it chooses (cuDNN's engine and knobs, cuBLASLt's and
    /// hipBLASLt's algorithm, MIOpen's solution, the CPU's kernel for `default`); empty where
    /// nothing was chosen or the library does not say.
    #[serde(default)]
    pub chosen: String,
    pub wall_s: f64,
    /// Trials this row stands for (1 without trials): set by the pool when it writes the row.
    #[serde(default)]
    pub trials: u32,
    /// Each timed trial's median (seconds), in trial order: the run-to-run spread.
    #[serde(default)]
    pub trial_medians: Vec<f64>,
    /// A hash of the output's bits as read back (empty where it was not read): what
    /// `--processes` compares between processes.
    #[serde(default)]
    pub output_digest: String,
    /// With `--processes`: `yes` when every process gave the same status, output bits and
    /// library choice, `no` otherwise (the `stable` column); empty without.
    #[serde(default)]
    pub stable: String,
    /// What differed between the processes, when `stable` is `no`.
    #[serde(default)]
    pub unstable: String,
}

impl Outcome {
    pub fn failed(status: Status, phase: &str, error: impl Into<String>) -> Outcome {
        Outcome {
            status,
            phase: phase.to_string(),
            error: error.into(),
            reference: String::new(),
            verification: None,
            first_call_s: None,
            compile_s: None,
            compile_warm_s: None,
            stats: None,
            call_stats: None,
            timing_method: String::new(),
            cache: String::new(),
            telemetry: None,
            workspace_bytes: 0,
            chosen: String::new(),
            wall_s: 0.0,
            trials: 0,
            trial_medians: Vec::new(),
            output_digest: String::new(),
            stable: String::new(),
            unstable: String::new(),
        }
    }
}

/// The inputs and the reference of the last case, reused when the next unit is the same case
/// with another solver (references cost more than the unit itself on the CPU, and generating the
/// inputs of a large convolution takes seconds). Neither is copied: each is taken out for the
/// unit and put back after it.
#[derive(Default)]
pub struct ReferenceCache {
    /// (case id, reference, name of the reference)
    entry: Option<(String, Reference, String)>,
    /// (case id, inputs)
    inputs: Option<(String, Inputs)>,
}

struct Tracker<'a> {
    current: &'static str,
    outer: &'a mut dyn PhaseSink,
}

impl PhaseSink for Tracker<'_> {
    fn phase(&mut self, phase: &'static str) {
        self.current = phase;
        self.outer.phase(phase);
    }

    fn before_verify(&mut self, output: &mut crate::tensor::HostData) {
        self.outer.before_verify(output);
    }
}

fn classify(e: UnitError, phase: &str) -> Outcome {
    match e {
        UnitError::Unsupported(why) => Outcome::failed(Status::Unsupported, phase, why),
        other => Outcome::failed(Status::Error, phase, other.to_string()),
    }
}

pub fn run_unit(
    backend: &mut dyn Backend,
    case: &Case,
    solver: &str,
    policies: &Policies,
    cache: &mut ReferenceCache,
    phases: &mut dyn PhaseSink,
) -> Outcome {
    let started = Instant::now();
    phases.phase("alloc");
    let inputs = match cache.inputs.take() {
        Some((id, inputs)) if id == case.id => inputs,
        // Dropped before the next case's inputs are made: one set in memory at a time.
        _ => case.problem.make_inputs(seed_from_id(&case.id)),
    };
    let mut out = run_inner(backend, case, solver, &inputs, policies, cache, phases);
    cache.inputs = Some((case.id.clone(), inputs));
    out.wall_s = started.elapsed().as_secs_f64();
    out
}

fn run_inner(
    backend: &mut dyn Backend,
    case: &Case,
    solver: &str,
    inputs: &Inputs,
    policies: &Policies,
    cache: &mut ReferenceCache,
    phases: &mut dyn PhaseSink,
) -> Outcome {
    let mut t = Tracker {
        current: "alloc",
        outer: phases,
    };
    let (mut prepared, first_call_s) = match first_call(backend, case, solver, inputs, &mut t) {
        Ok(p) => p,
        Err(failed) => return failed,
    };
    let mut outcome = prepared_outcome(prepared.as_ref(), first_call_s);

    let vp = &policies.verify;
    if !vp.enabled {
        outcome.reference = "none (verification disabled)".into();
    } else {
        t.phase("verify");
        let unit = (case, inputs);
        if let Err(failed) = verify_output(
            backend,
            unit,
            prepared.as_mut(),
            policies,
            cache,
            &mut outcome,
            &mut t,
        ) {
            return failed;
        }
    }

    // Wrong outputs are not timed: the time of a kernel that did not do its work means nothing.
    if outcome.status == Status::Ok && policies.timing.enabled {
        t.phase("run");
        if let Err(failed) = time(backend, prepared.as_mut(), &policies.timing, &mut outcome) {
            return failed;
        }
    }
    outcome
}

/// Prepares the unit (alloc and compile, inside the backend) and makes its first call: the
/// prepared unit and the first call's seconds.
fn first_call(
    backend: &mut dyn Backend,
    case: &Case,
    solver: &str,
    inputs: &Inputs,
    t: &mut Tracker<'_>,
) -> Result<(Box<dyn Prepared>, f64), Outcome> {
    t.phase("compile");
    // A combination no backend gives a meaning to is unsupported before any backend sees it.
    if let Some(why) = case.problem.unsupported() {
        return Err(classify(UnitError::Unsupported(why), t.current));
    }
    let mut prepared = match backend.prepare(&case.problem, solver, inputs, t) {
        Ok(p) => p,
        Err(e) => return Err(classify(e, t.current)),
    };
    t.phase("run");
    let first = Instant::now();
    let first_device = match prepared.run(Batch::Single) {
        Ok(s) => s.call,
        Err(e) => return Err(classify(e, "run")),
    };
    // The first call's wall time includes lazy compilation and first touch; keep the larger.
    let first_call_s = first.elapsed().as_secs_f64().max(first_device);
    Ok((prepared, first_call_s))
}

/// The outcome of a unit that ran once: `ok` so far, with what preparing it told (compile
/// times, workspace, what the library chose), before verification and timing.
fn prepared_outcome(prepared: &dyn Prepared, first_call_s: f64) -> Outcome {
    Outcome {
        status: Status::Ok,
        phase: String::new(),
        error: String::new(),
        reference: String::new(),
        verification: None,
        first_call_s: Some(first_call_s),
        compile_s: prepared.compile_seconds().map(|c| c.0),
        compile_warm_s: prepared
            .compile_seconds()
            .map(|c| c.1)
            .filter(|w| w.is_finite()),
        stats: None,
        call_stats: None,
        timing_method: String::new(),
        cache: String::new(),
        telemetry: None,
        workspace_bytes: prepared.workspace_bytes(),
        chosen: prepared.chosen(),
        wall_s: 0.0,
        trials: 0,
        trial_medians: Vec::new(),
        output_digest: String::new(),
        stable: String::new(),
        unstable: String::new(),
    }
}

/// Compares the output with a reference: sets the outcome's reference, verification and (when
/// the output is wrong) its status. Err when the output cannot be read. The output passes
/// through `phases.before_verify` first (the worker's test-only output faults).
fn verify_output(
    backend: &mut dyn Backend,
    (case, inputs): (&Case, &Inputs),
    prepared: &mut dyn Prepared,
    policies: &Policies,
    cache: &mut ReferenceCache,
    outcome: &mut Outcome,
    phases: &mut dyn PhaseSink,
) -> Result<(), Outcome> {
    let vp = &policies.verify;
    let mut output = match prepared.output() {
        Ok(o) => o,
        Err(e) => return Err(classify(e, "verify")),
    };
    phases.before_verify(&mut output);
    // Hashed only where `--processes` compares outputs between processes (in place, no copy).
    if policies.timing.processes > 0 {
        outcome.output_digest = crate::op::short_hash(output.le_bytes());
    }
    let check = case
        .problem
        .check(vp.tolerance_scale * prepared.tolerance_factor());
    match find_reference(backend, case, inputs, check, vp, cache) {
        Ok(Some((reference, name))) => {
            outcome.reference = name.clone();
            let v = verify::verify(&output, &reference, check);
            cache.entry = Some((case.id.clone(), reference, name));
            outcome.status = v.verdict.into();
            if outcome.status != Status::Ok {
                outcome.phase = "verify".into();
                outcome.error = v.detail.clone();
            }
            outcome.verification = Some(v);
        }
        Ok(None) => outcome.reference = "none".into(),
        Err(why) => outcome.reference = why,
    }
    Ok(())
}

/// The reference for the case and its name: the cached one when the last unit was the same
/// case, else computed on the CPU, or on the device when too large for the CPU. Err says why
/// there is none (the `reference` column).
fn find_reference(
    backend: &mut dyn Backend,
    case: &Case,
    inputs: &Inputs,
    check: verify::Check,
    vp: &VerifyPolicy,
    cache: &mut ReferenceCache,
) -> Result<Option<(Reference, String)>, String> {
    let ref_gflop = case.problem.reference_flops() / 1e9;
    let cached = match cache.entry.take() {
        Some((id, r, name)) if id == case.id => Some((r, name)),
        _ => None,
    };
    match cached {
        Some(hit) => Ok(Some(hit)),
        None if ref_gflop <= vp.max_reference_gflop => {
            let name = match check {
                verify::Check::Normal { .. } => "statistical",
                verify::Check::BitExact => "cpu-exact",
                verify::Check::Close(_) => "cpu-f64",
            };
            Ok(Some((
                case.problem
                    .reference(inputs)
                    .unwrap_or(Reference::Values(Vec::new())),
                name.to_string(),
            )))
        }
        // Too large for the CPU: a reference kernel on the device, where the backend has one.
        None => match backend.device_reference(&case.problem, inputs) {
            Some(Ok(r)) => Ok(Some(r)),
            Some(Err(e)) => Err(format!("none (the device reference failed: {e})")),
            None => Err(format!(
                "none (reference needs {ref_gflop:.1} GFLOP > max_reference_gflop {})",
                vp.max_reference_gflop
            )),
        },
    }
}

/// Times the unit (`[timing]`): sets the outcome's device and call statistics and the
/// telemetry around them. Err when rotating the inputs or a timed call fails.
fn time(
    backend: &mut dyn Backend,
    prepared: &mut dyn Prepared,
    tp: &TimingPolicy,
    outcome: &mut Outcome,
) -> Result<(), Outcome> {
    if tp.rotating_mib > 0
        && let Err(e) = prepared.rotate_inputs(u64::from(tp.rotating_mib) << 20)
    {
        return Err(classify(e, "alloc"));
    }
    let before = backend.telemetry();
    // Cold only if every measured sample's flush happened (the CPU has nothing to flush).
    let mut flushed = tp.flush_cache;
    let sample = |flush: bool| {
        if flush && prepared.flush_cache(u64::from(tp.flush_mib) << 20) {
            prepared.run(Batch::Single)
        } else {
            flushed &= !flush;
            prepared.run(Batch::Auto)
        }
    };
    match timing::measure(tp, sample) {
        Ok(m) => {
            outcome.cache = match (flushed, tp.rotating_mib > 0) {
                (true, _) => "cold",
                (false, true) => "rotated",
                (false, false) => "warm",
            }
            .to_string();
            outcome.timing_method = m.method;
            outcome.stats = Some(m.device);
            outcome.call_stats = Some(m.call);
            let span = Span {
                before,
                after: backend.telemetry(),
            };
            outcome.telemetry = (span != Span::default()).then_some(span);
            Ok(())
        }
        Err(e) => Err(classify(e, "run")),
    }
}
