//! Process exit codes, documented in README.md and docs/outputs.md. `main` maps every error to
//! one of these.

/// The run finished (whatever statuses its units got), or the command succeeded.
pub const OK: i32 = 0;
/// An internal or I/O failure: the run could not be carried out.
pub const FAILURE: i32 = 1;
/// Bad input: a sweep file, a CLI value or a run directory. Nothing was written.
pub const BAD_INPUT: i32 = 2;
/// The run finished and `--fail-on-failure` was given and at least one unit failed
/// (mismatch, zeros, nonfinite, hang, crash or error).
pub const UNITS_FAILED: i32 = 3;
/// The run stopped early because the device stayed unhealthy after a hang or crash; the
/// remaining units are recorded `skipped`. Resume once the device is back.
pub const DEVICE_UNHEALTHY: i32 = 4;
/// `probe --backend NAME`: that backend cannot run here (a library is missing or no device is
/// present); the text says which.
pub const BACKEND_UNAVAILABLE: i32 = 5;
/// `merge`: the shards do not cover the sweep (a shard or units are missing, or a shard did not
/// finish); nothing was written unless `--allow-missing`.
pub const MERGE_INCOMPLETE: i32 = 6;
/// `run --strategy bisect --confirm N`: an inferred unit, run for real, disagreed with its
/// inference (the library is not monotone along the axis there); confirm.csv lists each one.
pub const CONFIRM_DISAGREED: i32 = 7;
/// The run was stopped by Ctrl-C; `--resume` continues it.
pub const INTERRUPTED: i32 = 130;
