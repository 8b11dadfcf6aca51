//! `rocsweep report RUN_DIR`: plots (PNG and SVG), report.html and summary.md, made from the
//! run directory alone (results.csv + manifest.json), never from a device.
//!
//! Files written into the run directory:
//! - heatmap.png/.svg: the safe-region map (see `heatmap` for the layout rules)
//! - throughput.png/.svg: throughput against problem size per solver
//! - counts.png/.svg: units per status for each env combination
//! - default_best.png/.svg: the library's default against its best solution per shape (only
//!   where the run timed both)
//! - report.html: everything above in one self-contained page
//! - summary.md: the same facts in Markdown

mod counts;
mod default_best;
mod draw;
mod facts;
mod heatmap;
mod html;
mod html_table;
mod map;
mod markdown;
mod provenance;
mod table;
mod throughput;

use crate::error::CmdError;
use crate::results::rundata::RunData;
use std::path::{Path, PathBuf};

/// Writes the report of a run (or merge) that just finished, and says where it is unless
/// `quiet`. The run directory stands without it: a failure is a warning naming `what` (`run`,
/// `merge`), never the command's failure.
pub fn write_after(dir: &Path, what: &str, quiet: bool) {
    match write(dir) {
        Ok(files) if !quiet => {
            if let Some(html) = files
                .iter()
                .find(|f| f.extension().is_some_and(|e| e == "html"))
            {
                crate::sayln!("report: {}", html.display());
            }
        }
        Ok(_) => {}
        Err(e) => crate::noteln!("warning: the {what} was written but its report was not: {e}"),
    }
}

/// Writes the report files into `dir` and returns their paths.
pub fn write(dir: &Path) -> Result<Vec<PathBuf>, CmdError> {
    let run = RunData::load(dir)?;
    draw::ensure_fonts()?;
    let f = facts::Facts::new(&run);
    let mut files = Vec::new();
    let mut plots = Vec::new();
    // Built once: drawn as heatmap.png/.svg and shown in report.html as HTML tables.
    let map = heatmap::build(&f);
    let write_map = |f: &facts::Facts, dir: &Path| heatmap::write(f, map.as_ref(), dir);
    // (heading, writer, caption, shown in report.html as a map of links instead of the image)
    let kinds: [(&'static str, &PlotFn<'_>, String, bool); 4] = [
        (
            "Safe region",
            &write_map,
            "Each cell is one unit (or the worst of several, as the subtitle says); H:phase marks a hang and the phase it hung in.".to_string(),
            true,
        ),
        (
            "Status counts",
            &counts::write,
            "Units per status for each env combination.".to_string(),
            false,
        ),
        (
            "Throughput",
            &throughput::write,
            format!(
                "{} of the median time against {}: a dot per ok unit, a line per solver (and env combination) and shape family (the numeric parameters other than the size held fixed, one marker shape each) through its best dot at each size, a panel per combination of the non-numeric parameters that vary (dtype, direction, ...), the best of all ringed.",
                f.metric.rate_unit(),
                f.metric.size_name()
            ),
            false,
        ),
        (
            default_best::HEADING,
            &default_best::write,
            "Each bar one shape: the library's default time over its best named solution's, the default's largest loss first; red where the best beats the default beyond noise, amber where the default is more than 10 % slower but the noise could explain it, grey within 10 %.".to_string(),
            false,
        ),
    ];
    for (heading, plot, caption, as_map) in kinds {
        let written = plot(&f, dir)?;
        if let [png, svg] = written.as_slice() {
            plots.push(html::Plot {
                heading,
                as_map,
                png: png.clone(),
                svg: svg.clone(),
                caption,
            });
        }
        files.extend(written);
    }
    files.push(html::write(&f, dir, &plots, map.as_ref())?);
    let md = markdown::write(&f, dir, &files)?;
    files.push(md);
    Ok(files)
}

type PlotFn<'a> = dyn Fn(&facts::Facts, &Path) -> Result<Vec<PathBuf>, CmdError> + 'a;
