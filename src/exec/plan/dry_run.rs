//! `run --dry-run`: the plan printed (one line per case, or a shard's own units), nothing run
//! and nothing written.

use crate::error::CmdError;
use crate::exec::plan::options::RunReport;
use crate::exec::plan::shard::Shard;
use crate::exec::plan::units;
use crate::exec::record::events::Unit;
use crate::spec::Sweep;
use crate::spec::expand::EnvCombo;
use std::io::Write;

pub fn print(
    sweep: &Sweep,
    combos: &[EnvCombo],
    shard: Option<Shard>,
) -> Result<RunReport, CmdError> {
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    match shard {
        Some(shard) => print_shard(&mut w, sweep, combos, shard),
        None => print_cases(&mut w, sweep, combos.len()),
    }
    .and_then(|()| w.flush())
    .map_err(|e| CmdError::Failure(format!("writing to stdout: {e}")))?;
    Ok(RunReport::nothing(None))
}

/// The shard's own entries, with their env combination: exactly what it would run, and how
/// many of the sweep's units that is.
fn print_shard(
    w: &mut impl Write,
    sweep: &Sweep,
    combos: &[EnvCombo],
    shard: Shard,
) -> std::io::Result<()> {
    let (mut total, mut taken) = (0u64, 0u64);
    for (i, (_, env_key, case)) in units::cases(sweep, combos).enumerate() {
        total += 1;
        if shard.contains(i as u64) {
            taken += 1;
            let unit = Unit {
                id: &case.id,
                case: &case,
                solver: &case.solver,
                env_key: &env_key,
            };
            writeln!(w, "{} {}", case.id, unit.describe())?;
        }
    }
    writeln!(
        w,
        "shard {shard}: {taken} of {total} units (case x env combination)"
    )
}

/// Every valid case once (not per env combination), then the count: cases, units, the invalid
/// combinations dropped.
fn print_cases(w: &mut impl Write, sweep: &Sweep, combos: usize) -> std::io::Result<()> {
    let mut count = units::PlanCount::default();
    for case in sweep.cases() {
        match case {
            Ok(case) => {
                count.cases += 1;
                let text = crate::op::canonical_text(sweep.op, &case.values);
                writeln!(w, "{} {text} solver={}", case.id, case.solver)?;
            }
            Err(reason) => {
                count.invalid += 1;
                count.invalid_example.get_or_insert(reason);
            }
        }
    }
    writeln!(
        w,
        "{} cases x {} env combination(s) = {} units ({} invalid combinations dropped{}){}",
        count.cases,
        combos,
        count.cases * combos as u64,
        count.invalid,
        count
            .invalid_example
            .map(|e| format!(", e.g. {e}"))
            .unwrap_or_default(),
        if expands_at_run_time(sweep) {
            "; solver = \"all\" expands further at run time"
        } else {
            ""
        }
    )
}

/// Whether an axis lists `all` (solvers), known only when a worker enumerates them.
fn expands_at_run_time(sweep: &Sweep) -> bool {
    sweep.dims.iter().any(|d| {
        d.axes
            .iter()
            .any(|a| a.values.iter().any(|v| v.as_str() == Some("all")))
    })
}
