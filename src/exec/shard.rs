//! Shards: `--shard I/N` runs a deterministic slice of a sweep, so N machines (a Slurm array, a
//! Kubernetes indexed Job) can share it and `rocsweep merge` can join their run directories.
//!
//! The slice is taken over the plan's (env combination, case) entries in run order: shard I of N
//! takes entries I-1, I-1+N, I-1+2N, ... The order depends only on the sweep text and its
//! `--axis` overrides, so every task of an array computes the same split without talking to the
//! others, and neighbouring (often similar-cost) cases land on different shards. All solvers of
//! a `solver = "all"` case run in the same shard: they are known only at run time.
//!
//! Indices are 1-based (`1/4` .. `4/4`), as in GNU split's `-n l/K/N` and CI_NODE_INDEX; the
//! 0-based ids of schedulers are converted by [`from_env`].

use serde::{Deserialize, Serialize};
use std::fmt;

/// Shard `index` of `count`, 1 <= index <= count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    pub fn new(index: u32, count: u32) -> Result<Shard, String> {
        if count == 0 {
            return Err("the shard count N must be at least 1".into());
        }
        if index == 0 {
            return Err(format!(
                "shard indices are 1-based: use 1/{count} .. {count}/{count}"
            ));
        }
        if index > count {
            return Err(format!(
                "shard {index} does not exist in a split into {count}: use 1/{count} .. {count}/{count}"
            ));
        }
        Ok(Shard { index, count })
    }

    /// Parses `I/N` (clap calls this for `--shard`, so a bad value names the flag).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| "expected I/N, e.g. 2/4 (shard 2 of 4; 1-based)".to_string())?;
        let num = |s: &str, what: &str| {
            s.trim().parse::<u32>().map_err(|_| {
                format!("{what} `{s}` is not a whole number; expected I/N, e.g. 2/4 (1-based)")
            })
        };
        Shard::new(num(i, "the shard index")?, num(n, "the shard count")?)
    }

    /// Whether the plan entry at 0-based `position` belongs to this shard.
    pub fn contains(&self, position: u64) -> bool {
        position % u64::from(self.count) == u64::from(self.index - 1)
    }

    /// How many of `total` plan entries this shard takes.
    pub fn size_of(&self, total: u64) -> u64 {
        let n = u64::from(self.count);
        total / n + u64::from(u64::from(self.index - 1) < total % n)
    }

    /// `-shard-2-of-4`, for default run directory names (array tasks start in the same second).
    pub fn suffix(&self) -> String {
        format!("-shard-{}-of-{}", self.index, self.count)
    }
}

/// A shard as the manifest records it: which, and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    pub index: u32,
    pub count: u32,
    /// `--shard`, or the environment variables it was derived from.
    pub from: String,
}

impl ShardRecord {
    pub fn shard(&self) -> Result<Shard, String> {
        Shard::new(self.index, self.count)
    }
}

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
    let num = |name: &str| -> Result<Option<u64>, String> {
        match get(name) {
            None => Ok(None),
            Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
                format!("--shard-from-env: {name}={v:?} is not a non-negative whole number")
            }),
        }
    };
    if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
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
        if id < min || (id - min) % step != 0 {
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
        let shard = Shard::new(to_u32(index + 1)?, to_u32(n)?)
            .map_err(|e| format!("--shard-from-env: {from}: {e}"))?;
        return Ok(ShardRecord {
            index: shard.index,
            count: shard.count,
            from,
        });
    }
    if let Some(index) = num("JOB_COMPLETION_INDEX")? {
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
        let shard = Shard::new(to_u32(index + 1)?, n)
            .map_err(|e| format!("--shard-from-env: {from}: {e}"))?;
        return Ok(ShardRecord {
            index: shard.index,
            count: shard.count,
            from,
        });
    }
    Err(
        "--shard-from-env: neither SLURM_ARRAY_TASK_ID (a Slurm array job) nor JOB_COMPLETION_INDEX \
         (a Kubernetes indexed Job) is set; pass --shard I/N instead"
            .into(),
    )
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
    fn parse_is_one_based_and_names_what_is_wrong() {
        assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(Shard::parse("1/1"), Ok(Shard { index: 1, count: 1 }));
        assert!(Shard::parse("0/4").unwrap_err().contains("1-based"));
        assert!(Shard::parse("5/4").unwrap_err().contains("does not exist"));
        assert!(Shard::parse("1/0").unwrap_err().contains("at least 1"));
        assert!(Shard::parse("a/4").unwrap_err().contains("`a`"));
        assert!(Shard::parse("3").unwrap_err().contains("I/N"));
        assert!(Shard::parse("-1/4").is_err());
    }

    #[test]
    fn shards_partition_every_position_and_sizes_add_up() {
        for n in 1..7u32 {
            for total in 0..20u64 {
                let shards: Vec<Shard> = (1..=n).map(|i| Shard::new(i, n).unwrap()).collect();
                for p in 0..total {
                    assert_eq!(shards.iter().filter(|s| s.contains(p)).count(), 1);
                }
                for s in &shards {
                    assert_eq!(
                        s.size_of(total),
                        (0..total).filter(|&p| s.contains(p)).count() as u64
                    );
                }
            }
        }
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
