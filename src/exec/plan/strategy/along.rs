//! The `--along` axis of a boundary search and the lines it puts units on: units equal in
//! every parameter (and solver and env combination) but the axis, sorted by its value.

use crate::op::Case;
use crate::op::value::Value;
use crate::spec::Sweep;
use std::collections::HashMap;

/// The `--along` axis: which slot of a case it is and which dimension of the sweep it belongs
/// to (for a zip group, its other axes vary with it and are not part of a line's key).
#[derive(Clone, Debug, PartialEq)]
pub struct Along {
    pub name: String,
    dim: usize,
    slot: usize,
    /// Slots of every other dimension: equal values put units on one line.
    key_slots: Vec<usize>,
}

impl Along {
    /// Picks the axis: `requested` when given (it must be a numeric axis of the sweep with more
    /// than one value), else the op's size parameter when it is such an axis (conv2d `h`, gemm
    /// `m`, graph `size`, copy `bytes`, rng/cast `count`: the heatmap's x axis), else the last
    /// such axis in the sweep file. The error is a message for the user (exit code 2).
    pub fn choose(sweep: &Sweep, requested: Option<&str>) -> Result<Along, String> {
        let np = sweep.op.params().len();
        let numeric = |values: &[Value]| {
            values
                .iter()
                .all(|v| matches!(v, Value::Int(_) | Value::Float(_)))
        };
        let mut candidates: Vec<(usize, usize, &str)> = Vec::new();
        for (di, d) in sweep.dims.iter().enumerate() {
            for a in &d.axes {
                if a.slot < np && numeric(&a.values) && d.len() > 1 {
                    candidates.push((di, a.slot, a.name.as_str()));
                }
            }
        }
        let names = if candidates.is_empty() {
            "none".to_string()
        } else {
            candidates
                .iter()
                .map(|c| c.2)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let chosen = match requested {
            Some(name) => {
                let found =
                    sweep.dims.iter().enumerate().find_map(|(di, d)| {
                        d.axes.iter().find(|a| a.name == name).map(|a| (di, a))
                    });
                match found {
                    None => {
                        return Err(format!(
                            "--along {name}: `{name}` is not an axis of sweep {} (its numeric axes with more than one value: {names})",
                            sweep.source.path
                        ));
                    }
                    Some((_, a)) if a.slot >= np || !numeric(&a.values) => {
                        return Err(format!(
                            "--along {name}: `{name}` is not a numeric axis (a boundary search needs numbers to order by; numeric axes of this sweep: {names})"
                        ));
                    }
                    Some((di, _)) if sweep.dims[di].len() < 2 => {
                        return Err(format!(
                            "--along {name}: `{name}` has a single value, so there is nothing to search along (numeric axes with more than one value: {names})"
                        ));
                    }
                    Some((di, a)) => (di, a.slot, a.name.as_str()),
                }
            }
            None => {
                let preferred = sweep
                    .op
                    .size_params()
                    .iter()
                    .find_map(|p| candidates.iter().find(|c| c.2 == *p));
                match preferred.or(candidates.last()) {
                    Some(c) => *c,
                    None => {
                        return Err(format!(
                            "sweep {} has no numeric axis with more than one value for a boundary search to go along (give one with --along, or use --strategy grid)",
                            sweep.source.path
                        ));
                    }
                }
            }
        };
        let (dim, slot, name) = chosen;
        let key_slots = sweep
            .dims
            .iter()
            .enumerate()
            .filter(|(di, _)| *di != dim)
            .flat_map(|(_, d)| d.axes.iter().map(|a| a.slot))
            .collect();
        Ok(Along {
            name: name.to_string(),
            dim,
            slot,
            key_slots,
        })
    }

    /// The case's value on the axis (0 if it is not a number, which `choose` rules out).
    pub fn value(&self, case: &Case) -> f64 {
        case.values
            .get(self.slot)
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    }

    /// What puts units on one line: every other axis's value, then the unit's solver (a
    /// `solver = "all"` case becomes one unit per solver). Env combinations are kept apart by
    /// the caller.
    pub fn line_key(&self, case: &Case, solver: &str) -> String {
        let mut key = String::new();
        for &slot in &self.key_slots {
            match case.values.get(slot) {
                Some(v) => key.push_str(&v.to_string()),
                None => key.push_str(&case.solver),
            }
            key.push(';');
        }
        key.push_str(solver);
        key
    }

    /// The dimension of the sweep the axis belongs to (for tests and messages).
    pub fn dim(&self) -> usize {
        self.dim
    }
}

/// Groups units into lines: `points[i]` is unit i's (line key, value on the axis). Lines come in
/// the order their first unit appears; each is sorted by value (ties keep their order).
pub fn lines(points: &[(String, f64)]) -> Vec<Vec<usize>> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (i, (key, _)) in points.iter().enumerate() {
        let l = *index.entry(key.as_str()).or_insert_with(|| {
            out.push(Vec::new());
            out.len() - 1
        });
        out[l].push(i);
    }
    for line in &mut out {
        line.sort_by(|a, b| points[*a].1.total_cmp(&points[*b].1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_group_by_key_and_sort_by_value() {
        let pts: Vec<(String, f64)> = vec![
            ("a".into(), 3.0),
            ("b".into(), 1.0),
            ("a".into(), 1.0),
            ("a".into(), 2.0),
        ];
        assert_eq!(lines(&pts), vec![vec![2, 3, 0], vec![1]]);
    }
}
