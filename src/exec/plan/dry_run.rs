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
    backend: &str,
) -> Result<RunReport, CmdError> {
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    match shard {
        Some(shard) => print_shard(&mut w, sweep, combos, shard),
        None => print_cases(&mut w, sweep, combos, backend),
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

/// Every valid case once (not per env combination), then the count: cases, units (a
/// `solver = "all"` case counted as its solvers where the backend lists them up front), the
/// invalid combinations dropped.
fn print_cases(
    w: &mut impl Write,
    sweep: &Sweep,
    combos: &[EnvCombo],
    backend: &str,
) -> std::io::Result<()> {
    let mut count = units::PlanCount::default();
    for case in sweep.cases() {
        match case {
            Ok(case) => {
                count.cases += 1;
                count.all_cases += u64::from(case.solver == "all");
                let text = crate::op::canonical_text(sweep.op, &case.values);
                writeln!(w, "{} {text} solver={}", case.id, case.solver)?;
            }
            Err(reason) => {
                count.invalid += 1;
                count.invalid_example.get_or_insert(reason);
            }
        }
    }
    let grows = count.all_cases > 0
        && combos.iter().any(|c| {
            let b = c.backend.as_deref().unwrap_or(backend);
            crate::backend::registry::solver_count_up_front(b, sweep.op).is_none()
        });
    writeln!(
        w,
        "{} cases x {} env combination(s) = {} units ({} invalid combinations dropped{}){}",
        count.cases,
        combos.len(),
        units::planned(&count, combos, backend, sweep.op),
        count.invalid,
        count
            .invalid_example
            .map(|e| format!(", e.g. {e}"))
            .unwrap_or_default(),
        if grows {
            "; solver = \"all\" expands further at run time"
        } else {
            ""
        }
    )
}
