//! A run directory read back: the manifest and typed rows of results.csv. Every problem is a
//! message that names the file (and row and column) that is wrong.

use crate::error::CmdError;
use crate::results::csv::fixed_columns_of;
use crate::results::manifest::{self, Manifest};
use crate::results::status::Status;
pub use crate::results::text::{Interner, Text};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One row of results.csv, as the analyses read it: the columns they use (a run of 10^6 rows
/// is held whole by `report` and `recommend`, so a column nothing reads is not kept).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub unit_id: Text,
    pub case_id: Text,
    pub op: Text,
    pub backend: Text,
    pub device: Text,
    pub solver: Text,
    /// The unit's worker context: the CSV's `env`, with `backend=NAME;` in front in a run over
    /// several backends (`EnvCombo::context_key`), so that everything keyed on the env
    /// combination (the report's panels, compare, recommend) tells the backends apart.
    pub env: Text,
    /// The ROCm tree's label in a run over several trees (the `rocm` column; empty otherwise
    /// and in runs made before it existed).
    pub rocm: Text,
    pub status: Status,
    pub phase: Text,
    pub error: Text,
    pub reference: Text,
    pub max_abs_err: Option<f64>,
    pub max_rel_err: Option<f64>,
    pub median_ms: Option<f64>,
    pub samples: Option<u64>,
    /// Trials the row stands for (empty in runs made before trials existed).
    pub trials: Option<u64>,
    /// Each timed trial's median time, in trial order (`trial_ms`).
    pub trial_ms: Vec<f64>,
    pub gflops: Option<f64>,
    pub gbps: Option<f64>,
    pub workspace_bytes: Option<u64>,
    /// What the library chose (`chosen`), where it says.
    pub chosen: Text,
    /// `--processes`: `yes`, `no` (its processes disagreed: `unstable` says how) or empty.
    pub stable: Text,
    pub unstable: Text,
    pub flops: Option<f64>,
    pub bytes: Option<f64>,
    /// The op's parameters, in CSV column order: (name, value as written).
    pub params: Params,
}

/// A row's parameters: the run's parameter columns (one list shared by every row) and this
/// row's values as written, in the same order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    names: Arc<[Text]>,
    values: Box<[Text]>,
}

impl Params {
    /// `values[i]` is the value of `names[i]`; missing values read as empty.
    pub fn new(names: Arc<[Text]>, mut values: Vec<Text>) -> Params {
        values.resize(names.len(), Text::default());
        values.truncate(names.len());
        Params {
            names,
            values: values.into_boxed_slice(),
        }
    }

    /// Parameters from (name, value) pairs, in that order.
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Params {
        let (names, values): (Vec<Text>, Vec<Text>) = pairs
            .into_iter()
            .map(|(k, v)| (Text::from(k.as_ref()), Text::from(v.as_ref())))
            .unzip();
        Params::new(names.into(), values)
    }

    /// (name, value) in column order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.names
            .iter()
            .zip(self.values.iter())
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// Sets `name` to `value`, adding the parameter at the end when the row has none of that name.
    pub fn set(&mut self, name: &str, value: &str) {
        match self.names.iter().position(|k| k == name) {
            Some(i) => self.values[i] = Text::from(value),
            None => {
                let mut pairs: Vec<(String, String)> = self
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                pairs.push((name.to_string(), value.to_string()));
                *self = Params::from_pairs(pairs);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }
}

impl Row {
    /// An empty `ok` row for unit tests to fill in.
    #[cfg(test)]
    pub fn for_tests() -> Row {
        Row {
            unit_id: Default::default(),
            case_id: Default::default(),
            op: "gemm".into(),
            backend: Default::default(),
            device: Default::default(),
            solver: Default::default(),
            env: Default::default(),
            rocm: Default::default(),
            status: crate::results::status::Status::Ok,
            phase: Default::default(),
            error: Default::default(),
            reference: Default::default(),
            max_abs_err: None,
            max_rel_err: None,
            median_ms: None,
            samples: None,
            trials: None,
            trial_ms: Vec::new(),
            gflops: None,
            gbps: None,
            workspace_bytes: None,
            chosen: Default::default(),
            stable: Default::default(),
            unstable: Default::default(),
            flops: None,
            bytes: None,
            params: Params::from_pairs::<&str, &str>([]),
        }
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name)
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
        let (mut run, rows) = RunData::open(dir)?;
        for row in rows {
            run.rows.push(row?);
        }
        Ok(run)
    }

    /// The run's manifest and parameter columns (no rows yet) and a reader that gives its rows
    /// one at a time, for a command that need not hold them all (`compare` of 10^6 units).
    pub fn open(dir: &Path) -> Result<(RunData, Rows), CmdError> {
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
        let mut csv = csv::Reader::from_reader(file);
        let (header, fixed) = read_header(&mut csv, &path)?;
        let param_names: Vec<String> = header[fixed.len()..].to_vec();
        let combos = &manifest.env_combos;
        let rows = Rows {
            shared: Shared {
                names: param_names.iter().map(Text::from).collect(),
                texts: Interner::default(),
            },
            csv,
            record: csv::StringRecord::new(),
            path,
            columns: header.len(),
            fixed,
            line: 1,
            backends: crate::spec::expand::several_backends(combos),
            trees: crate::spec::expand::several_trees(combos),
        };
        let run = RunData {
            dir: dir.to_path_buf(),
            manifest,
            param_names,
            rows: Vec::new(),
        };
        Ok((run, rows))
    }
}

/// The rows of one results.csv, read one at a time; the first that does not read is the last
/// item.
pub struct Rows {
    shared: Shared,
    csv: csv::Reader<std::fs::File>,
    record: csv::StringRecord,
    path: PathBuf,
    /// Fields in the header: every record has as many.
    columns: usize,
    fixed: Vec<&'static str>,
    /// The line of the record last read.
    line: usize,
    /// A run over several backends or trees: each row's env gets them in front
    /// (`EnvCombo::context_key`).
    backends: bool,
    trees: bool,
}

impl Rows {
    fn next_row(&mut self) -> Result<Option<Row>, CmdError> {
        self.line += 1;
        let line = self.line;
        let more = self.csv.read_record(&mut self.record).map_err(|e| {
            CmdError::BadInput(format!("{}: line {line}: {e}", self.path.display()))
        })?;
        if !more {
            return Ok(None);
        }
        if self.record.len() != self.columns {
            return Err(CmdError::BadInput(format!(
                "{}: line {line}: {} fields, the header has {}",
                self.path.display(),
                self.record.len(),
                self.columns
            )));
        }
        let record = Record {
            path: &self.path,
            line,
            fixed: &self.fixed,
            rec: &self.record,
        };
        let mut row = record.row(&mut self.shared)?;
        if self.backends || self.trees {
            let key = crate::spec::expand::context_key_of(
                self.backends.then_some(row.backend.as_str()),
                self.trees.then_some(row.rocm.as_str()),
                &row.env,
            );
            row.env = self.shared.texts.get(&key);
        }
        Ok(Some(row))
    }
}

impl Iterator for Rows {
    type Item = Result<Row, CmdError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_row().transpose()
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
    csv: &mut csv::Reader<std::fs::File>,
    path: &Path,
) -> Result<(Vec<String>, Vec<&'static str>), CmdError> {
    let header: Vec<String> = csv
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

/// What every row of one results.csv shares: the parameter columns and the text seen so far.
struct Shared {
    names: Arc<[Text]>,
    texts: Interner,
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
    fn row(&self, reader: &mut Shared) -> Result<Row, CmdError> {
        let status = self.status()?;
        let texts = &mut reader.texts;
        let values = (0..reader.names.len())
            .map(|j| texts.get(self.rec.get(self.fixed.len() + j).unwrap_or("")))
            .collect();
        let params = Params::new(reader.names.clone(), values);
        let mut text = |name: &str| texts.get(self.field(name));
        let num = |name: &str| self.num(name);
        Ok(Row {
            // Unique per row: not worth a place in the shared set.
            unit_id: Text::from(self.field("unit_id")),
            case_id: Text::from(self.field("case_id")),
            op: text("op"),
            backend: text("backend"),
            device: text("device"),
            solver: text("solver"),
            env: text("env"),
            rocm: text("rocm"),
            status,
            phase: text("phase"),
            error: text("error"),
            reference: text("reference"),
            max_abs_err: num("max_abs_err")?,
            max_rel_err: num("max_rel_err")?,
            median_ms: num("median_ms")?,
            samples: num("samples")?.map(|v| v as u64),
            trials: num("trials")?.map(|v| v as u64),
            trial_ms: self.trial_ms()?,
            gflops: num("gflops")?,
            gbps: num("gbps")?,
            workspace_bytes: num("workspace_bytes")?.map(|v| v as u64),
            chosen: text("chosen"),
            stable: text("stable"),
            unstable: text("unstable"),
            flops: num("flops")?,
            bytes: num("bytes")?,
            params,
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
