//! `rocsweep compare RUN_A RUN_B`: the same sweep run twice (two ROCm releases, two drivers, two
//! machines), matched unit by unit. [`comparison`] builds a [`Comparison`] from the two runs'
//! rows (read one at a time), [`gate`] says what `--fail-on regression` fails on, [`render`]
//! writes compare.csv and compare.md, [`tree`] makes one ROCm tree of a run a side
//! (`RUN@LABEL`), [`libs`] lists the library files that differ; [`command`] only loads, writes
//! files and picks the exit code.

pub mod choices;
pub mod comparison;
pub mod gate;
pub mod libs;
pub mod render;
pub mod tree;

pub use crate::results::rundir::dir_label;
pub use comparison::*;
pub use gate::exit_code;
pub use render::{csv_text, markdown};

use crate::error::CmdError;
use crate::exit;
use std::path::{Path, PathBuf};

pub fn default_out(run_a: &Path, run_b: &Path) -> PathBuf {
    run_b.join(format!("compare-{}", dir_label(run_a)))
}

pub fn command(
    run_a: &Path,
    run_b: &Path,
    out: Option<&Path>,
    force: bool,
    fail_on_regression: bool,
) -> Result<i32, CmdError> {
    // Each side is a run directory, or `RUN@LABEL`: one ROCm tree of a run over several.
    let (side_a, side_b) = (tree::Side::parse(run_a), tree::Side::parse(run_b));
    let (a, rows_a) = side_a.open()?;
    let (b, rows_b) = side_b.open()?;
    if let Err(why) = check_same_sweep(&a, &b)
        && !force
    {
        return Err(CmdError::BadInput(format!(
            "{why}; pass --force to compare them anyway (units are matched by id)"
        )));
    }
    let mut c = compare_rows((&a, rows_a), (&b, rows_b))?;
    c.a.label = side_a.label();
    c.b.label = side_b.label();
    let dir = out.map_or_else(
        || side_b.dir.join(format!("compare-{}", side_a.file_label())),
        Path::to_path_buf,
    );
    std::fs::create_dir_all(&dir)
        .map_err(|e| CmdError::Failure(format!("{}: {e}", dir.display())))?;
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        crate::results::atomic::write(&p, text)
            .map_err(|e| CmdError::Failure(format!("{}: {e}", p.display())))
    };
    write("compare.csv", &csv_text(&c)?)?;
    let ratios: Vec<(f64, Verdict)> = c.units.iter().filter_map(|u| u.ratio).collect();
    let plot = if ratios.is_empty() {
        None
    } else {
        let drawn = crate::results::atomic::write_via(&dir.join("ratio.png"), |tmp| {
            super::ratio_plot::draw(tmp, &ratios)
        });
        match drawn {
            Ok(()) => Some("ratio.png"),
            Err(e) => {
                crate::noteln!("warning: the ratio plot was not drawn: {e}");
                None
            }
        }
    };
    write("compare.md", &markdown(&c, plot))?;
    crate::sayln!("{}", c.headline());
    crate::sayln!("written: {}", dir.join("compare.md").display());
    let code = exit_code(&c, fail_on_regression);
    if code != exit::OK {
        for line in c.regression_lines() {
            crate::noteln!("regression: {line}");
        }
    }
    if let Some(why) = c.slower_within_chance() {
        crate::noteln!("note: {why}");
    }
    Ok(code)
}
