//! What the shards cover: the sweep re-planned from its text, the shards' rows in the unsharded
//! run's order, and what is missing.

use super::input::{Input, cell, column, id_column, show};
use crate::error::CmdError;
use crate::exec::plan::units;
use crate::op::unit_id;
use crate::spec;
use std::collections::{HashMap, HashSet};

/// A plan entry: a concrete unit, or a `solver = "all"` case whose solvers are known only from
/// its rows.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Unit(String),
    Case { case_id: String, env: String },
}

/// The full plan, from the sweep text the shards ran (every shard has the same).
pub(super) struct Plan {
    pub(super) sweep: spec::Sweep,
    /// Each entry's first position in the unsharded order.
    order: HashMap<Key, usize>,
    /// Every entry in order, with its text for messages.
    entries: Vec<(Key, String)>,
    /// Whether the run names several backends / trees (a row's context then includes its
    /// backend / tree).
    several_backends: bool,
    several_trees: bool,
}

impl Plan {
    pub(super) fn of(first: &Input) -> Result<Plan, CmdError> {
        let ms = &first.manifest.sweep;
        let sweep = spec::load_str(&ms.path, &ms.text, &ms.overrides).map_err(|e| {
            let stored = first.dir.join("manifest.json");
            e.in_file(&format!("{} (sweep.text, from {})", show(&stored), ms.path))
        })?;
        // A run over several backends keeps its contexts (env combination x backend) in the
        // manifest; a sweep text alone does not know a `--backend a,b` list.
        let stored = &first.manifest.env_combos;
        let combos =
            if spec::expand::several_backends(stored) || spec::expand::several_trees(stored) {
                first.manifest.env_combos.clone()
            } else {
                sweep.env_combos()
            };
        let several_backends = spec::expand::several_backends(&combos);
        let several_trees = spec::expand::several_trees(&combos);
        let mut order: HashMap<Key, usize> = HashMap::new();
        let mut entries: Vec<(Key, String)> = Vec::new();
        for (pos, (_, env_key, case)) in units::cases(&sweep, &combos).enumerate() {
            let key = if case.solver == "all" {
                Key::Case {
                    case_id: case.id.clone(),
                    env: env_key.clone(),
                }
            } else {
                Key::Unit(unit_id(&case.id, &case.solver, &env_key))
            };
            let env = if env_key.is_empty() {
                String::new()
            } else {
                format!(" [{env_key}]")
            };
            let text = format!(
                "{} {} solver={}{env}",
                case.id,
                crate::op::canonical_text(sweep.op, &case.values),
                case.solver
            );
            order.entry(key.clone()).or_insert(pos);
            entries.push((key, text));
        }
        Ok(Plan {
            sweep,
            order,
            entries,
            several_backends,
            several_trees,
        })
    }

    /// How many entries the plan has.
    pub(super) fn planned(&self) -> usize {
        self.entries.len()
    }
}

/// A merged row: its plan position (`usize::MAX` when the plan does not place it), its shard's
/// place in index order, its place in that shard, and its cells.
pub(super) type MergedRow = (usize, usize, usize, Vec<String>);

/// Every shard's rows in the unsharded run's order.
pub(super) struct Ordered<'a> {
    /// The shards in index order, so rows the plan does not place keep a stable order.
    pub(super) shards: Vec<&'a Input>,
    pub(super) rows: Vec<MergedRow>,
    /// The plan entries some row covers.
    have: HashSet<Key>,
}

impl<'a> Ordered<'a> {
    pub(super) fn of(inputs: &'a [Input], plan: &Plan) -> Ordered<'a> {
        let order = &plan.order;
        let (id_col, case_col, env_col) = (id_column(), column("case_id"), column("env"));
        let (backend_col, rocm_col) = (column("backend"), column("rocm"));
        let mut have: HashSet<Key> = HashSet::new();
        let mut rows: Vec<MergedRow> = Vec::new();
        let mut shards: Vec<&Input> = inputs.iter().collect();
        shards.sort_by_key(|i| i.shard.index);
        for (n, input) in shards.iter().enumerate() {
            for (k, r) in input.rows.iter().enumerate() {
                let unit = Key::Unit(cell(r, Some(id_col)));
                let env = cell(r, env_col);
                let backend = plan.several_backends.then(|| cell(r, backend_col));
                let rocm = plan.several_trees.then(|| cell(r, rocm_col));
                let env = spec::expand::context_key_of(backend.as_deref(), rocm.as_deref(), &env);
                let case = Key::Case {
                    case_id: cell(r, case_col),
                    env,
                };
                let pos = order
                    .get(&unit)
                    .or_else(|| order.get(&case))
                    .copied()
                    .unwrap_or(usize::MAX);
                have.insert(unit);
                have.insert(case);
                rows.push((pos, n, k, r.clone()));
            }
        }
        rows.sort_by_key(|(pos, n, k, _)| (*pos, *n, *k));
        Ordered { shards, rows, have }
    }
}

/// What the shards do not cover.
pub(super) struct Missing<'a> {
    /// Shards `I/N` with no directory.
    pub(super) shards: Vec<String>,
    /// One line per shard that did not finish.
    unfinished: Vec<String>,
    /// Planned units with no row, as the plan's texts.
    pub(super) units: Vec<&'a String>,
}

impl<'a> Missing<'a> {
    pub(super) fn find(count: u32, ordered: &Ordered, plan: &'a Plan) -> Missing<'a> {
        let shards = (1..=count)
            .filter(|i| !ordered.shards.iter().any(|s| s.shard.index == *i))
            .map(|i| format!("{i}/{count}"))
            .collect();
        let unfinished = ordered
            .shards
            .iter()
            .filter(|i| {
                i.manifest.finished_at.is_none()
                    || i.manifest
                        .stopped
                        .as_deref()
                        .is_some_and(|s| s.starts_with("interrupted"))
            })
            .map(|i| {
                format!(
                    "shard {} ({}) did not finish ({}); resume it with `rocsweep run --resume {}`, then merge again",
                    i.shard,
                    show(&i.dir),
                    i.manifest
                        .stopped
                        .as_deref()
                        .unwrap_or("no finish time: still running, or killed"),
                    show(&i.dir)
                )
            })
            .collect();
        let units = plan
            .entries
            .iter()
            .filter(|(k, _)| !ordered.have.contains(k))
            .map(|(_, t)| t)
            .collect();
        Missing {
            shards,
            unfinished,
            units,
        }
    }

    pub(super) fn complete(&self) -> bool {
        self.shards.is_empty() && self.unfinished.is_empty() && self.units.is_empty()
    }

    /// What is missing, one entry each (of `planned` units), for the error or the warning.
    pub(super) fn report(&self, planned: usize) -> Vec<String> {
        let mut report = Vec::new();
        for s in &self.shards {
            report.push(format!("shard {s} is missing"));
        }
        report.extend(self.unfinished.iter().cloned());
        if !self.units.is_empty() {
            let mut t = format!(
                "{} of {} planned units have no row in any shard, e.g.:",
                self.units.len(),
                planned
            );
            for m in self.units.iter().take(5) {
                t.push_str(&format!("\n    {m}"));
            }
            report.push(t);
        }
        report
    }
}
