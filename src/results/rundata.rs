//! A run directory read back: the manifest and typed rows of results.csv. Every problem is a
//! message that names the file (and row and column) that is wrong.

use crate::error::CmdError;
use crate::results::csv::fixed_columns_of;
use crate::results::manifest::{self, Manifest};
use crate::results::status::Status;
use std::path::{Path, PathBuf};

/// One row of results.csv.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub unit_id: String,
    pub case_id: String,
    pub op: String,
    pub backend: String,
    pub device: String,
    /// The device slot of `--devices` (empty without, and in runs made before it existed).
    pub device_index: String,
    pub solver: String,
    /// The unit's worker context: the CSV's `env`, with `backend=NAME;` in front in a run over
    /// several backends (`EnvCombo::context_key`), so that everything keyed on the env
    /// combination (the report's panels, compare, recommend) tells the backends apart.
    pub env: String,
    /// The ROCm tree's label in a run over several trees (the `rocm` column; empty otherwise
    /// and in runs made before it existed).
    pub rocm: String,
    pub status: Status,
    pub phase: String,
    pub error: String,
    pub reference: String,
    pub max_abs_err: Option<f64>,
    pub max_rel_err: Option<f64>,
    pub first_call_ms: Option<f64>,
    pub median_ms: Option<f64>,
    pub p10_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub samples: Option<u64>,
    /// Trials the row stands for (empty in runs made before trials existed).
    pub trials: Option<u64>,
    /// Each timed trial's median time, in trial order (`trial_ms`).
    pub trial_ms: Vec<f64>,
    pub gflops: Option<f64>,
    pub gbps: Option<f64>,
    pub workspace_bytes: Option<u64>,
    /// What the library chose (`chosen`), where it says.
    pub chosen: String,
    pub flops: Option<f64>,
    pub bytes: Option<f64>,
    /// The op's parameters, in CSV column order: (name, value as written).
    pub params: Vec<(String, String)>,
}

impl Row {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A numeric parameter, if it is one.
    pub fn param_f64(&self, name: &str) -> Option<f64> {
        self.param(name)?.parse().ok()
    }

    /// `k=v;...` of the parameters (the case's canonical text without the op name).
    pub fn params_text(&self) -> String {
        self.params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    }
}

#[derive(Clone, Debug)]
pub struct RunData {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// Names of the parameter columns (after the fixed columns), in order.
    pub param_names: Vec<String>,
    pub rows: Vec<Row>,
}

impl RunData {
    /// Loads a run directory; a missing or malformed file is bad input (exit code 2).
    pub fn load(dir: &Path) -> Result<RunData, CmdError> {
        if !dir.is_dir() {
            return Err(CmdError::BadInput(format!(
                "{}: not a run directory ({})",
                dir.display(),
                crate::error::path_problem(dir).unwrap_or_else(|| "not a directory".into())
            )));
        }
        let manifest = manifest::read(dir).map_err(CmdError::BadInput)?;
        check_env_names(dir, &manifest)?;
        let path = dir.join("results.csv");
        let file = super::rundir::open_file(&path)
            .map_err(|e| CmdError::BadInput(super::rundir::describe(&path, &e)))?;
        let mut rdr = csv::Reader::from_reader(file);
        let (header, fixed) = read_header(&mut rdr, &path)?;
        let param_names: Vec<String> = header[fixed.len()..].to_vec();
        let mut rows = Vec::new();
        for (i, rec) in rdr.records().enumerate() {
            let line = i + 2;
            let rec = rec
                .map_err(|e| CmdError::BadInput(format!("{}: line {line}: {e}", path.display())))?;
            if rec.len() != header.len() {
                return Err(CmdError::BadInput(format!(
                    "{}: line {line}: {} fields, the header has {}",
                    path.display(),
                    rec.len(),
                    header.len()
                )));
            }
            let record = Record {
                path: &path,
                line,
                fixed: &fixed,
                rec: &rec,
            };
            rows.push(record.row(&param_names)?);
        }
        let combos = &manifest.env_combos;
        let (backends, trees) = (
            crate::spec::expand::several_backends(combos),
            crate::spec::expand::several_trees(combos),
        );
        if backends || trees {
            for r in &mut rows {
                r.env = crate::spec::expand::context_key_of(
                    backends.then_some(r.backend.as_str()),
                    trees.then_some(r.rocm.as_str()),
                    &r.env,
                );
            }
        }
        Ok(RunData {
            dir: dir.to_path_buf(),
            manifest,
            param_names,
            rows,
        })
    }
}

/// Env names in a run's manifest that reach shells and sweep files (`repro`, `recommend`):
/// one with a control character (a newline would end a heredoc) or an `=` cannot be any
/// variable's name, so the run directory is refused (issue 40, S2).
fn check_env_names(dir: &Path, m: &manifest::Manifest) -> Result<(), CmdError> {
    let names = m
        .env_combos
        .iter()
        .flat_map(|c| c.vars.iter().map(|(k, _)| k))
        .chain(m.environment.keys());
    for name in names {
        if name.is_empty() || name.contains('=') || name.chars().any(char::is_control) {
            return Err(CmdError::BadInput(format!(
                "{}: manifest.json names an environment variable {name:?}, which no variable can \
                 be called (empty, or with `=` or a control character); the run directory was \
                 changed by hand",
                dir.join("manifest.json").display()
            )));
        }
    }
    Ok(())
}

/// The header of results.csv and the fixed columns it has, refused unless it starts with
/// those in order.
fn read_header(
    rdr: &mut csv::Reader<std::fs::File>,
    path: &Path,
) -> Result<(Vec<String>, Vec<&'static str>), CmdError> {
    let header: Vec<String> = rdr
        .headers()
        .map_err(|e| CmdError::BadInput(format!("{}: header: {e}", path.display())))?
        .iter()
        .map(String::from)
        .collect();
    // Older runs lack the optional columns; they read as empty.
    let fixed = fixed_columns_of(&header);
    for (i, want) in fixed.iter().enumerate() {
        if header.get(i).map(String::as_str) != Some(want) {
            return Err(CmdError::BadInput(format!(
                "{}: column {} should be `{want}`, found `{}` (not a rocsweep results.csv, or another version)",
                path.display(),
                i + 1,
                header.get(i).map(String::as_str).unwrap_or("")
            )));
        }
    }
    Ok((header, fixed))
}

/// One record of results.csv (on `line` of the file), read by column name.
struct Record<'a> {
    path: &'a Path,
    line: usize,
    /// The fixed columns the file has, in order; the parameters follow them.
    fixed: &'a [&'static str],
    rec: &'a csv::StringRecord,
}

impl Record<'_> {
    /// The record as a row; the first field that does not read is the error.
    fn row(&self, param_names: &[String]) -> Result<Row, CmdError> {
        let text = |name: &str| self.text(name);
        let num = |name: &str| self.num(name);
        let status = self.status()?;
        Ok(Row {
            unit_id: text("unit_id"),
            case_id: text("case_id"),
            op: text("op"),
            backend: text("backend"),
            device: text("device"),
            device_index: text("device_index"),
            solver: text("solver"),
            env: text("env"),
            rocm: text("rocm"),
            status,
            phase: text("phase"),
            error: text("error"),
            reference: text("reference"),
            max_abs_err: num("max_abs_err")?,
            max_rel_err: num("max_rel_err")?,
            first_call_ms: num("first_call_ms")?,
            median_ms: num("median_ms")?,
            p10_ms: num("p10_ms")?,
            p90_ms: num("p90_ms")?,
            samples: num("samples")?.map(|v| v as u64),
            trials: num("trials")?.map(|v| v as u64),
            trial_ms: self.trial_ms()?,
            gflops: num("gflops")?,
            gbps: num("gbps")?,
            workspace_bytes: num("workspace_bytes")?.map(|v| v as u64),
            chosen: text("chosen"),
            flops: num("flops")?,
            bytes: num("bytes")?,
            params: param_names
                .iter()
                .enumerate()
                .map(|(j, n)| {
                    (
                        n.clone(),
                        self.rec.get(self.fixed.len() + j).unwrap_or("").to_string(),
                    )
                })
                .collect(),
        })
    }

    /// The field of column `name`; empty when the file has no such column.
    fn field(&self, name: &str) -> &str {
        let col = self.fixed.iter().position(|c| *c == name);
        col.and_then(|i| self.rec.get(i)).unwrap_or("")
    }

    fn text(&self, name: &str) -> String {
        self.field(name).to_string()
    }

    /// A number, or `None` for an empty field.
    fn num(&self, name: &str) -> Result<Option<f64>, CmdError> {
        let s = self.field(name);
        if s.is_empty() {
            return Ok(None);
        }
        s.parse::<f64>().map(Some).map_err(|_| {
            CmdError::BadInput(format!(
                "{}: line {}, column `{name}`: expected a number, found `{s}`",
                self.path.display(),
                self.line
            ))
        })
    }

    fn status(&self) -> Result<Status, CmdError> {
        let status_text = self.text("status");
        Status::parse(&status_text).ok_or_else(|| {
            CmdError::BadInput(format!(
                "{}: line {}, column `status`: unknown status `{status_text}`",
                self.path.display(),
                self.line
            ))
        })
    }

    /// Each timed trial's median time: positive numbers separated by `;`.
    fn trial_ms(&self) -> Result<Vec<f64>, CmdError> {
        let t = self.text("trial_ms");
        let mut v = Vec::new();
        for part in t.split(';').filter(|p| !p.is_empty()) {
            match part.parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 => v.push(x),
                _ => {
                    return Err(CmdError::BadInput(format!(
                        "{}: line {}, column `trial_ms`: expected positive numbers separated by `;`, found `{t}`",
                        self.path.display(),
                        self.line
                    )));
                }
            }
        }
        Ok(v)
    }
}
