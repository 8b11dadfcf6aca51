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

#[cfg(test)]
mod tests {
    use super::*;

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
}
