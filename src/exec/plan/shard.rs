//! Which shard this task of an array job runs: `--shard-from-env` reads a Slurm array's or a
//! Kubernetes indexed Job's variables (the shard itself is results/shard.rs).

pub use crate::results::shard::{Shard, ShardRecord};

/// The shard of this task of an array job, from the scheduler's environment:
/// - Slurm: `SLURM_ARRAY_TASK_ID` with `SLURM_ARRAY_TASK_COUNT` (index = (ID - MIN) / STEP, with
///   `SLURM_ARRAY_TASK_MIN` and `SLURM_ARRAY_TASK_STEP` when set); the array must be a range
///   (`--array=0-3`, `--array=1-8:2`), not a list;
/// - Kubernetes indexed Job: `JOB_COMPLETION_INDEX` (0-based) with `count` from `--shard-count`.
///
/// `get` reads one variable (the process environment, or a map in tests).
pub fn from_env(
    get: impl Fn(&str) -> Option<String>,
    count: Option<u32>,
) -> Result<ShardRecord, String> {
    let num = |name: &str| number(&get, name);
    if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
        return from_slurm(id, &num, count);
    }
    if let Some(index) = num("JOB_COMPLETION_INDEX")? {
        return from_kubernetes(index, count);
    }
    Err(
        "--shard-from-env: neither SLURM_ARRAY_TASK_ID (a Slurm array job) nor JOB_COMPLETION_INDEX \
         (a Kubernetes indexed Job) is set; pass --shard I/N instead"
            .into(),
    )
}

/// The variable `name` as a whole number, None when it is not set.
fn number(get: &impl Fn(&str) -> Option<String>, name: &str) -> Result<Option<u64>, String> {
    match get(name) {
        None => Ok(None),
        Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
            format!("--shard-from-env: {name}={v:?} is not a non-negative whole number")
        }),
    }
}

/// The shard of Slurm array task `id` (`SLURM_ARRAY_TASK_ID`); `num` reads the array's other
/// variables.
fn from_slurm(
    id: u64,
    num: &dyn Fn(&str) -> Result<Option<u64>, String>,
    count: Option<u32>,
) -> Result<ShardRecord, String> {
    let Some(n) = num("SLURM_ARRAY_TASK_COUNT")? else {
        return Err(
            "--shard-from-env: SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not; \
             pass --shard I/N instead"
                .into(),
        );
    };
    let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
    let step = num("SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
    let from = format!(
        "SLURM_ARRAY_TASK_ID={id} (SLURM_ARRAY_TASK_MIN={min}, SLURM_ARRAY_TASK_STEP={step}, SLURM_ARRAY_TASK_COUNT={n})"
    );
    if let Some(c) = count
        && u64::from(c) != n
    {
        return Err(format!(
            "--shard-from-env: --shard-count {c} disagrees with SLURM_ARRAY_TASK_COUNT={n}"
        ));
    }
    let not_range = || {
        format!(
            "--shard-from-env: {from} is not a task of a contiguous array; \
             submit the array as a range (sbatch --array=0-{}) or pass --shard I/N",
            n.saturating_sub(1)
        )
    };
    if id < min || !(id - min).is_multiple_of(step) {
        return Err(not_range());
    }
    if let Some(max) = num("SLURM_ARRAY_TASK_MAX")?
        && (max < min || (max - min) / step + 1 != n)
    {
        return Err(not_range());
    }
    let index = (id - min) / step;
    if index >= n {
        return Err(not_range());
    }
    record(to_u32(index + 1)?, to_u32(n)?, from)
}

/// The shard of Kubernetes indexed Job completion `index` (`JOB_COMPLETION_INDEX`, 0-based),
/// of `--shard-count` shards.
fn from_kubernetes(index: u64, count: Option<u32>) -> Result<ShardRecord, String> {
    let Some(n) = count else {
        return Err(format!(
            "--shard-from-env: JOB_COMPLETION_INDEX={index} is set but the shard count is not; \
             pass --shard-count N (the Job's completions)"
        ));
    };
    let from = format!("JOB_COMPLETION_INDEX={index} (--shard-count {n})");
    if index >= u64::from(n) {
        return Err(format!(
            "--shard-from-env: {from}: the index must be below the count (0-based)"
        ));
    }
    record(to_u32(index + 1)?, n, from)
}

/// Shard `index` (1-based) of `count`, recording where it came from.
fn record(index: u32, count: u32, from: String) -> Result<ShardRecord, String> {
    let shard = Shard::new(index, count).map_err(|e| format!("--shard-from-env: {from}: {e}"))?;
    Ok(ShardRecord {
        index: shard.index,
        count: shard.count,
        from,
    })
}

fn to_u32(v: u64) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("--shard-from-env: {v} shards is too many"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn slurm_ids_are_offset_by_min_and_divided_by_step() {
        let r = from_env(
            env(&[
                ("SLURM_ARRAY_TASK_ID", "7"),
                ("SLURM_ARRAY_TASK_MIN", "5"),
                ("SLURM_ARRAY_TASK_MAX", "8"),
                ("SLURM_ARRAY_TASK_COUNT", "4"),
            ]),
            None,
        )
        .unwrap();
        assert_eq!((r.index, r.count), (3, 4));
        assert!(r.from.contains("SLURM_ARRAY_TASK_ID=7"));
        let r = from_env(
            env(&[
                ("SLURM_ARRAY_TASK_ID", "4"),
                ("SLURM_ARRAY_TASK_MIN", "0"),
                ("SLURM_ARRAY_TASK_MAX", "6"),
                ("SLURM_ARRAY_TASK_STEP", "2"),
                ("SLURM_ARRAY_TASK_COUNT", "4"),
            ]),
            None,
        )
        .unwrap();
        assert_eq!((r.index, r.count), (3, 4));
        // --array=0,2,7: not a range.
        let e = from_env(
            env(&[
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_ARRAY_TASK_MIN", "0"),
                ("SLURM_ARRAY_TASK_MAX", "7"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
            ]),
            None,
        )
        .unwrap_err();
        assert!(e.contains("contiguous"), "{e}");
        let e = from_env(env(&[("SLURM_ARRAY_TASK_ID", "1")]), None).unwrap_err();
        assert!(e.contains("SLURM_ARRAY_TASK_COUNT"), "{e}");
        let e = from_env(
            env(&[
                ("SLURM_ARRAY_TASK_ID", "x"),
                ("SLURM_ARRAY_TASK_COUNT", "2"),
            ]),
            None,
        )
        .unwrap_err();
        assert!(e.contains("SLURM_ARRAY_TASK_ID=\"x\""), "{e}");
        let e = from_env(
            env(&[
                ("SLURM_ARRAY_TASK_ID", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "2"),
            ]),
            Some(3),
        )
        .unwrap_err();
        assert!(e.contains("disagrees"), "{e}");
    }

    #[test]
    fn kubernetes_index_needs_a_count() {
        let r = from_env(env(&[("JOB_COMPLETION_INDEX", "0")]), Some(3)).unwrap();
        assert_eq!((r.index, r.count), (1, 3));
        let e = from_env(env(&[("JOB_COMPLETION_INDEX", "0")]), None).unwrap_err();
        assert!(e.contains("--shard-count"), "{e}");
        let e = from_env(env(&[("JOB_COMPLETION_INDEX", "3")]), Some(3)).unwrap_err();
        assert!(e.contains("below the count"), "{e}");
        let e = from_env(env(&[]), Some(3)).unwrap_err();
        assert!(e.contains("neither"), "{e}");
    }
}
