//! The evidence a tuning writes beside its files: tune.md (what to set, and per shape the
//! default's time against the best's, which files carry it, what verification found) and
//! tune.csv (the same, one row per tuned shape).

use super::model::Tuned;
use super::verify::Check;
use super::{hipblaslt, rocblas, tunableop};
use crate::analyze::default_best::{self, Pair};
use crate::error::CmdError;
use crate::markup::markdown::{escape as md, table};
use crate::markup::shell;
use crate::markup::table::{Cell, Table};
use crate::results::rundata::RunData;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const FILES: [(&str, &str); 3] = [
    (hipblaslt::FILE, hipblaslt::VAR),
    (rocblas::FILE, rocblas::VAR),
    (tunableop::FILE, "PYTORCH_TUNABLEOP_FILENAME"),
];

/// Rows of a file (shapes it carries).
fn rows_in(tuned: &[Tuned], file: &str) -> usize {
    tuned
        .iter()
        .filter(|t| matches!(t.files.get(file), Some(Ok(()))))
        .count()
}

fn verified(tuned: &[Tuned]) -> (usize, usize) {
    let checked = tuned.iter().filter(|t| !t.checks.is_empty()).count();
    let held = tuned
        .iter()
        .filter(|t| {
            !t.checks.is_empty()
                && t.checks
                    .values()
                    .all(|c| matches!(c, Check::Verified { .. }))
        })
        .count();
    (held, checked)
}

/// The line `tune` prints.
pub fn headline(pairs: &[Pair], tuned: &[Tuned], verify: bool) -> String {
    let files: Vec<String> = FILES
        .iter()
        .map(|(f, _)| (f, rows_in(tuned, f)))
        .filter(|(_, n)| *n > 0)
        .map(|(f, n)| format!("{f} ({n} rows)"))
        .collect();
    let mut s = format!(
        "tune: {} of {} shapes have a best solution beyond noise; {}",
        tuned.len(),
        pairs.len(),
        if files.is_empty() {
            "no file written".to_string()
        } else {
            files.join(", ")
        }
    );
    let (held, checked) = verified(tuned);
    if verify && checked > 0 {
        let _ = write!(s, "; verified {held} of {checked}");
    }
    s
}

/// What each file needs set to be read.
fn how_to_load(out: &Path, tuned: &[Tuned]) -> String {
    let mut s = String::new();
    let abs = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    for (file, var) in FILES {
        let n = rows_in(tuned, file);
        if n == 0 {
            continue;
        }
        let path = abs.join(file).display().to_string();
        if file == tunableop::FILE {
            let named = abs.join(tunableop::NAME).display().to_string();
            let _ = writeln!(
                s,
                "- `{file}` ({n} rows), PyTorch TunableOp: `PYTORCH_TUNABLEOP_ENABLED=1 PYTORCH_TUNABLEOP_TUNING=0 PYTORCH_TUNABLEOP_FILENAME={}` (PyTorch puts the device's ordinal before the dot: device 0 reads `{file}`; copy it as `{}` for device 1)",
                shell::quote(&named),
                tunableop::NAME.replace(".csv", "1.csv")
            );
        } else {
            let _ = writeln!(
                s,
                "- `{file}` ({n} rows): `export {var}={}`",
                shell::quote(&path)
            );
        }
    }
    s
}

fn file_cell(t: &Tuned, file: &str) -> String {
    match t.files.get(file) {
        Some(Ok(())) => "yes".into(),
        Some(Err(why)) => format!("no: {why}"),
        None => "-".into(),
    }
}

fn check_cell(t: &Tuned) -> String {
    let parts: Vec<String> = t
        .checks
        .iter()
        .map(|(file, c)| match c {
            Check::Verified {
                before_ms,
                after_ms,
            } => format!(
                "{file}: verified, {before_ms:.4} ms before, {after_ms:.4} ms with it ({:.2}x)",
                before_ms / after_ms
            ),
            Check::Dropped(why) => format!("{file}: dropped: {why}"),
        })
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join("; ")
    }
}

/// Writes tune.md and tune.csv into `out`; the path of tune.md.
pub fn write(
    run: &RunData,
    pairs: &[Pair],
    tuned: &[Tuned],
    out: &Path,
    verify: bool,
) -> Result<PathBuf, CmdError> {
    std::fs::create_dir_all(out)
        .map_err(|e| CmdError::Failure(format!("{}: {e}", out.display())))?;
    let put = |name: &str, text: String| {
        let p = out.join(name);
        crate::results::atomic::write(&p, text)
            .map_err(|e| CmdError::Failure(format!("{}: {e}", p.display())))
            .map(|()| p)
    };
    put("tune.csv", csv_text(tuned)?)?;
    put("tune.md", markdown(run, pairs, tuned, out, verify))
}

fn markdown(run: &RunData, pairs: &[Pair], tuned: &[Tuned], out: &Path, verify: bool) -> String {
    let mut s = format!(
        "# rocsweep tune: {}\n\nFrom run `{}`: {}.\n\n{}\n",
        md(&run.manifest.sweep.name),
        md(&run.dir.display().to_string()),
        md(&default_best::tally(pairs).line()),
        md(&headline(pairs, tuned, verify))
    );
    s.push_str("\n## Files\n\n");
    let load = how_to_load(out, tuned);
    if tuned.is_empty() {
        s.push_str("None written: on no shape does a named solution beat the library's default beyond noise.\n");
    } else if load.is_empty() {
        s.push_str("None written: no tuned shape could be named by a file (the table says why).\n");
    } else {
        s.push_str(&load);
        s.push_str("\nOnly shapes whose best solution beats the library's default beyond the run-to-run noise (the rule `compare` uses) are rows.");
        if verify {
            s.push_str(" Each library file was applied in fresh processes (`verify-*/`, an ordinary run of the tuned shapes with the file's variable set): a row stays only where the library ran the named solution (`chosen`) and the time moved beyond noise.");
        } else {
            s.push_str(" Not verified: `tune --verify` applies each file in fresh processes and drops rows that do not hold.");
        }
        s.push('\n');
    }
    s.push_str("\n## Tuned shapes\n\n");
    if tuned.is_empty() {
        s.push_str("None: the default is the best solution within noise on every shape.\n");
        return s;
    }
    let mut t = Table::new(&[
        ("case", false),
        ("env", false),
        ("default picks", false),
        ("default ms", true),
        ("best", false),
        ("best ms", true),
        ("default / best", true),
        (hipblaslt::FILE, false),
        (rocblas::FILE, false),
        (tunableop::FILE, false),
        ("verification", false),
    ]);
    for x in tuned {
        let d = x.pair.default;
        t.push(vec![
            Cell::Text(d.params_text()),
            Cell::or_dash(d.env.to_string()),
            Cell::or_dash(d.chosen.to_string()),
            Cell::Num(format!("{:.4}", d.median_ms.unwrap_or(0.0))),
            Cell::Text(x.pair.best.solver.to_string()),
            Cell::Num(format!("{:.4}", x.pair.best.median_ms.unwrap_or(0.0))),
            Cell::Num(format!("{:.3}", x.pair.ratio)),
            Cell::Text(file_cell(x, hipblaslt::FILE)),
            Cell::Text(file_cell(x, rocblas::FILE)),
            Cell::Text(file_cell(x, tunableop::FILE)),
            Cell::Text(check_cell(x)),
        ]);
    }
    s.push_str(&table(&t, 500));
    s
}

fn csv_text(tuned: &[Tuned]) -> Result<String, CmdError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| CmdError::Failure(format!("tune.csv: {e}"));
    w.write_record([
        "case_id",
        "params",
        "env",
        "default_chosen",
        "default_ms",
        "best_solver",
        "best_ms",
        "ratio",
        "hipblaslt_file",
        "rocblas_file",
        "tunableop_file",
        "verification",
    ])
    .map_err(err)?;
    for x in tuned {
        let d = x.pair.default;
        w.write_record([
            d.case_id.as_str(),
            &d.params_text(),
            &d.env,
            &d.chosen,
            &format!("{:.6}", d.median_ms.unwrap_or(0.0)),
            &x.pair.best.solver,
            &format!("{:.6}", x.pair.best.median_ms.unwrap_or(0.0)),
            &format!("{:.4}", x.pair.ratio),
            &file_cell(x, hipblaslt::FILE),
            &file_cell(x, rocblas::FILE),
            &file_cell(x, tunableop::FILE),
            &check_cell(x),
        ])
        .map_err(err)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| CmdError::Failure(format!("tune.csv: {e}")))?;
    String::from_utf8(bytes).map_err(|e| CmdError::Failure(format!("tune.csv: {e}")))
}
