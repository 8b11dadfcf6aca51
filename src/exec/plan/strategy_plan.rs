//! The strategy of a run (`--strategy prune|bisect`, `--along`, `--confirm`, `--confirm-seed`)
//! resolved against its sweep, and strategy.json, where a run directory keeps it so that
//! `--resume` replays the same search.

use crate::error::CmdError;
use crate::exec::plan::options::RunOptions;
use crate::exec::plan::strategy::{Along, Kind, StrategyInfo};
use crate::spec::Sweep;
use std::path::Path;

/// Where a run directory records its strategy (absent: grid), so `--resume` replays it.
pub const STRATEGY_FILE: &str = "strategy.json";
/// A strategy other than grid, resolved against the sweep.
#[derive(Clone, Debug)]
pub struct Plan {
    pub kind: Kind,
    pub along: Along,
    pub confirm: u64,
    pub seed: u64,
}

impl Plan {
    pub fn info(&self) -> StrategyInfo {
        StrategyInfo {
            name: self.kind.name().to_string(),
            along: self.along.name.clone(),
            confirm: self.confirm,
            seed: self.seed,
        }
    }
}

/// The strategy of a new run (from the options) or of a resumed one (from its strategy.json);
/// `None` is grid. A bad combination of options or axis is bad input (exit code 2).
pub fn resolve(opts: &RunOptions, sweep: &Sweep) -> Result<Option<Plan>, CmdError> {
    if let Some(dir) = &opts.resume {
        let path = dir.join(STRATEGY_FILE);
        let text = match crate::results::rundir::read_text(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(CmdError::BadInput(crate::results::rundir::describe(
                    &path, &e,
                )));
            }
        };
        let bad = |what: String| CmdError::BadInput(format!("{}: {what}", path.display()));
        let info: StrategyInfo =
            serde_json::from_str(&text).map_err(|e| bad(format!("malformed: {e}")))?;
        let kind = Kind::parse(&info.name)
            .ok_or_else(|| bad(format!("unknown strategy `{}`", info.name)))?;
        if kind == Kind::Grid {
            return Ok(None);
        }
        let along = Along::choose(sweep, Some(&info.along)).map_err(bad)?;
        return Ok(Some(Plan {
            kind,
            along,
            confirm: info.confirm,
            seed: info.seed,
        }));
    }
    match opts.strategy {
        Kind::Grid => {
            if let Some(a) = &opts.along {
                return Err(CmdError::BadInput(format!(
                    "--along {a} needs --strategy prune or bisect (grid runs every unit)"
                )));
            }
            if opts.confirm > 0 {
                return Err(CmdError::BadInput(
                    "--confirm needs --strategy bisect (only bisect infers units)".into(),
                ));
            }
            Ok(None)
        }
        kind => {
            if kind == Kind::Prune && opts.confirm > 0 {
                return Err(CmdError::BadInput(
                    "--confirm needs --strategy bisect (prune infers nothing: its skipped units would hang)"
                        .into(),
                ));
            }
            let along = Along::choose(sweep, opts.along.as_deref()).map_err(CmdError::BadInput)?;
            Ok(Some(Plan {
                kind,
                along,
                confirm: opts.confirm,
                seed: opts.confirm_seed.unwrap_or_else(clock_seed),
            }))
        }
    }
}

/// A seed nobody chose: the clock's nanoseconds. It is recorded, so the pick can be repeated.
fn clock_seed() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.as_secs()
        .wrapping_mul(1_000_000_007)
        .wrapping_add(u64::from(now.subsec_nanos()))
        % 1_000_000_000
}

/// Writes strategy.json (temp file + rename).
pub fn record(dir: &Path, plan: &Plan) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(&plan.info()).map_err(std::io::Error::other)?;
    crate::results::atomic::write(&dir.join(STRATEGY_FILE), format!("{text}\n"))
}
