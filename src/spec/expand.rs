//! Streaming expansion: an odometer over the sweep's dimensions, filtered as it goes, so a
//! million-case sweep never sits in memory.

use super::model::{Sweep, Weight, slot_count};
use crate::op::value::Value;
use crate::op::{Case, Default as D};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One worker context: the fixed `[env]` values plus one value of each env axis and, when the
/// run names several backends, the backend. Each context runs in workers of its own; unit ids,
/// worker pools, caches, run order, shards and resume key on [`EnvCombo::context_key`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvCombo {
    pub vars: Vec<(String, String)>,
    /// The backend this context's workers open when the run names several (`None`: the run's
    /// one backend, as in every run before backend lists existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// The ROCm tree this context's workers open when the run names several (`None`: the one
    /// tree `--rocm`, `$ROCM_PATH` or the environment gives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rocm: Option<RocmTree>,
}

/// A ROCm tree of a run over several: its label (the path as the sweep or `--rocm` wrote it:
/// the CSV's `rocm` column) and the path its workers are given (`ROCSWEEP_ROCM`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RocmTree {
    pub label: String,
    pub path: String,
}

impl EnvCombo {
    /// Canonical text (`A=1;B=2`, sorted by name): the CSV's `env` column.
    pub fn key(&self) -> String {
        let mut v: Vec<String> = self
            .shown_vars()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        v.sort();
        v.join(";")
    }

    /// What unit ids (and the run's labels) key on: `key()` in a run of one backend and one
    /// tree, so ids are those of every earlier version; `backend=NAME` and `rocm=LABEL` in front
    /// of it when the run names several (`backend=cpu;A=1`, `rocm=/opt/rocm-5.7;A=1`).
    pub fn context_key(&self) -> String {
        context_key_of(
            self.backend.as_deref(),
            self.rocm.as_ref().map(|t| t.label.as_str()),
            &self.key(),
        )
    }
}

impl EnvCombo {
    /// The variables as a run directory holds them: a value set under a credential's name is
    /// its label (`spec::secret::sweep_secret_label`); one that is a label already (read
    /// back from a run directory) stays as it is.
    pub fn shown_vars(&self) -> Vec<(String, String)> {
        use super::secret::{is_masked, sweep_value_shown};
        self.vars
            .iter()
            .map(|(k, v)| {
                let shown = if is_masked(v) {
                    v.clone()
                } else {
                    sweep_value_shown(k, v).into_owned()
                };
                (k.clone(), shown)
            })
            .collect()
    }

    /// The same combination as a run directory holds it (see [`EnvCombo::shown_vars`]).
    pub fn shown(&self) -> EnvCombo {
        EnvCombo {
            vars: self.shown_vars(),
            ..self.clone()
        }
    }

    /// The context as variables, as analyses that vary one variable at a time see it:
    /// `backend` and `rocm` (where the run names several; not environment variables, see
    /// [`PSEUDO_VARS`]) first, then the env combination's variables.
    pub fn context_vars(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        if let Some(b) = &self.backend {
            v.push(("backend".to_string(), b.clone()));
        }
        if let Some(t) = &self.rocm {
            v.push(("rocm".to_string(), t.label.clone()));
        }
        v.extend(self.vars.iter().cloned());
        v
    }
}

/// The names a worker context's backend and ROCm tree take among its variables: chosen with
/// `--backend` / `--rocm`, never exported.
pub const PSEUDO_VARS: &[&str] = &["backend", "rocm"];

/// [`EnvCombo::context_key`] from its parts (a row's `backend`, `rocm` and `env` columns, where
/// the run names several backends or trees).
pub fn context_key_of(backend: Option<&str>, rocm: Option<&str>, env_key: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(b) = backend {
        parts.push(format!("backend={b}"));
    }
    if let Some(t) = rocm {
        parts.push(format!("rocm={t}"));
    }
    if !env_key.is_empty() {
        parts.push(env_key.to_string());
    }
    parts.join(";")
}

/// Whether a run's worker contexts name several backends (each context carries its backend).
pub fn several_backends(combos: &[EnvCombo]) -> bool {
    combos.iter().any(|c| c.backend.is_some())
}

/// Whether a run's worker contexts name several ROCm trees (each context carries its tree).
pub fn several_trees(combos: &[EnvCombo]) -> bool {
    combos.iter().any(|c| c.rocm.is_some())
}

/// The contexts of a run over several ROCm trees: every env combination once per tree (tree
/// outside), each marked with its tree; unchanged for fewer than two trees.
pub fn with_trees(combos: Vec<EnvCombo>, trees: &[RocmTree]) -> Vec<EnvCombo> {
    if trees.len() < 2 {
        return combos;
    }
    trees
        .iter()
        .flat_map(|t| {
            combos.iter().map(move |c| EnvCombo {
                rocm: Some(t.clone()),
                ..c.clone()
            })
        })
        .collect()
}

/// The worker contexts of a run: every context once per backend (backend outermost),
/// each marked with its backend; unchanged when the run names one backend.
pub fn with_backends(combos: Vec<EnvCombo>, backends: &[String]) -> Vec<EnvCombo> {
    if backends.len() < 2 {
        return combos;
    }
    backends
        .iter()
        .flat_map(|b| {
            combos.iter().map(move |c| EnvCombo {
                backend: Some(b.clone()),
                ..c.clone()
            })
        })
        .collect()
}

impl Sweep {
    /// Size of the full product before filters, per env combination (saturating).
    pub fn product_size(&self) -> u128 {
        self.dims
            .iter()
            .fold(1u128, |acc, d| acc.saturating_mul(d.len() as u128))
    }

    /// How many env combinations `env_combos` would build (saturating), without building them.
    pub fn env_combo_count(&self) -> u128 {
        self.env_axes
            .iter()
            .fold(1u128, |acc, (_, v)| acc.saturating_mul(v.len() as u128))
    }

    pub fn env_combos(&self) -> Vec<EnvCombo> {
        let mut combos = vec![EnvCombo {
            vars: self.env.clone(),
            ..EnvCombo::default()
        }];
        for (name, values) in &self.env_axes {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut vars = c.vars.clone();
                        vars.push((name.clone(), v.clone()));
                        EnvCombo {
                            vars,
                            ..EnvCombo::default()
                        }
                    })
                })
                .collect();
        }
        combos
    }

    /// Every combination that survives the filters: full slot vectors (op parameters, then solver).
    pub fn combinations(&self) -> Combinations<'_> {
        let n = slot_count(self.op);
        let params = self.op.params();
        let covered = |slot: usize| {
            self.dims
                .iter()
                .any(|d| d.axes.iter().any(|a| a.slot == slot))
        };
        let mut base = Vec::with_capacity(n);
        let mut same_as = Vec::new();
        for (slot, p) in params.iter().enumerate() {
            base.push(match p.default {
                D::Int(i) => Value::Int(i),
                D::Float(f) => Value::Float(f),
                D::Str(s) => Value::Str(s.to_string()),
                D::Bool(b) => Value::Bool(b),
                D::SameAs(other) => {
                    if !covered(slot)
                        && let Some(src) = params.iter().position(|q| q.name == other)
                    {
                        same_as.push((slot, src));
                    }
                    Value::Bool(false)
                }
            });
        }
        base.push(Value::Str("default".to_string()));
        let done = self.dims.iter().any(|d| d.is_empty());
        Combinations {
            sweep: self,
            base,
            same_as,
            idx: vec![0; self.dims.len()],
            done,
        }
    }

    /// Cases in expansion order. A combination that forms no valid problem (e.g. groups not
    /// dividing c_in) comes out as `Err` with the reason, so callers can count and show it.
    pub fn cases(&self) -> impl Iterator<Item = Result<Case, String>> + '_ {
        let np = self.op.params().len();
        self.combinations().map(move |mut slots| {
            let solver = match slots.pop() {
                Some(Value::Str(s)) => s,
                _ => "default".to_string(),
            };
            debug_assert_eq!(slots.len(), np);
            Case::new(self.op, slots, solver).map_err(|reason| reason.to_string())
        })
    }
}

impl Sweep {
    /// The model's weight of each case, by case id, when a `[[cases]]` list carries weights
    /// (`None` otherwise). A case crossed with other axes takes its row's weight in each.
    pub fn case_weights(&self) -> Option<HashMap<String, Weight>> {
        let wd = self.dims.iter().position(|d| !d.weights.is_empty())?;
        let weights = &self.dims[wd].weights;
        let mut it = self.combinations();
        let mut out = HashMap::new();
        while let Some((mut slots, rows)) = it.next_indexed() {
            slots.pop();
            let id = crate::op::case_id(self.op, &slots);
            if let Some(w) = weights.get(rows[wd]) {
                out.insert(id, *w);
            }
        }
        Some(out)
    }
}

pub struct Combinations<'a> {
    sweep: &'a Sweep,
    base: Vec<Value>,
    same_as: Vec<(usize, usize)>,
    idx: Vec<usize>,
    done: bool,
}

impl Combinations<'_> {
    fn current(&self) -> Vec<Value> {
        let mut slots = self.base.clone();
        for (d, &i) in self.sweep.dims.iter().zip(&self.idx) {
            for a in &d.axes {
                slots[a.slot] = a.values[i].clone();
            }
        }
        for &(slot, src) in &self.same_as {
            slots[slot] = slots[src].clone();
        }
        slots
    }

    fn advance(&mut self) {
        for k in (0..self.idx.len()).rev() {
            self.idx[k] += 1;
            if self.idx[k] < self.sweep.dims[k].len() {
                return;
            }
            self.idx[k] = 0;
        }
        self.done = true;
    }
}

impl Combinations<'_> {
    /// The next combination and the row of each dimension it took.
    fn next_indexed(&mut self) -> Option<(Vec<Value>, Vec<usize>)> {
        while !self.done {
            let slots = self.current();
            let rows = self.idx.clone();
            self.advance();
            if !self.sweep.filters.iter().any(|f| f.matches(&slots)) {
                return Some((slots, rows));
            }
        }
        None
    }
}

impl Iterator for Combinations<'_> {
    type Item = Vec<Value>;

    fn next(&mut self) -> Option<Vec<Value>> {
        self.next_indexed().map(|(slots, _)| slots)
    }
}
