//! `run --dry-run`: the plan printed (one line per case, or a shard's own units), nothing run
//! and nothing written.

use super::events::Unit;
use super::plan;
use super::run::RunReport;
use super::shard::Shard;
use crate::error::CmdError;
use crate::spec::Sweep;

pub fn print(
    sweep: &Sweep,
    combos: &[crate::spec::expand::EnvCombo],
    shard: Option<Shard>,
) -> Result<RunReport, CmdError> {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let write_err = |e: std::io::Error| CmdError::Failure(format!("writing to stdout: {e}"));
    if let Some(shard) = shard {
        // The shard's own entries, with their env combination: exactly what it would run.
        let (mut total, mut taken) = (0u64, 0u64);
        for (i, (_, env_key, case)) in plan::cases(sweep, combos).enumerate() {
            total += 1;
            if shard.contains(i as u64) {
                taken += 1;
                let unit = Unit {
                    id: &case.id,
                    case: &case,
                    solver: &case.solver,
                    env_key: &env_key,
                };
                writeln!(w, "{} {}", case.id, unit.describe()).map_err(write_err)?;
            }
        }
        writeln!(
            w,
            "shard {shard}: {taken} of {total} units (case x env combination)"
        )
        .map_err(write_err)?;
        w.flush().map_err(write_err)?;
        return Ok(RunReport {
            dir: None,
            failures: 0,
            stopped: None,
            disagreements: 0,
        });
    }
    let mut count = plan::PlanCount::default();
    let combos = combos.len();
    for case in sweep.cases() {
        match case {
            Ok(case) => {
                count.cases += 1;
                let text = crate::op::canonical_text(sweep.op, &case.values);
                writeln!(w, "{} {text} solver={}", case.id, case.solver).map_err(write_err)?;
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
        if sweep.dims.iter().any(|d| d
            .axes
            .iter()
            .any(|a| a.values.iter().any(|v| v.as_str() == Some("all"))))
        {
            "; solver = \"all\" expands further at run time"
        } else {
            ""
        }
    )
    .map_err(write_err)?;
    w.flush().map_err(write_err)?;
    Ok(RunReport {
        dir: None,
        failures: 0,
        stopped: None,
        disagreements: 0,
    })
}
