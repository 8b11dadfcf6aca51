//! `rocsweep import FILE... --out DIR`: the convolutions and GEMMs a model really runs, read from
//! vendor logs and profiler traces, written as one ordinary sweep file per op (a `[[cases]]`
//! table per distinct problem, weighted by the calls the sources saw) and a summary of what was
//! read, skipped and why. Nothing is written unless every file could be read and each yielded
//! at least one problem.

mod blas;
mod cublaslt;
mod cudnn;
mod flags;
mod hipblaslt;
mod ledger;
mod miopen;
pub mod problem;
mod rocblas;
mod sequence;
mod torch_trace;
mod tunableop;
mod write;
mod yaml;

use crate::error::CmdError;
use ledger::{FileTally, Ledger};
use problem::Found;
use std::path::{Path, PathBuf};

/// Reads `files` and writes the sweeps and summary.md into `out`; returns the summary's text.
pub fn command(files: &[PathBuf], out: &Path) -> Result<String, CmdError> {
    crate::results::rundir::check_free(out)?;
    let mut ledger = Ledger::default();
    for path in files {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|e| CmdError::BadInput(format!("cannot read {shown}: {e}")))?;
        let text = String::from_utf8_lossy(&bytes);
        let tally = read_file(&shown, &text, &mut ledger)?;
        if tally.problems == 0 {
            return Err(CmdError::BadInput(format!(
                "{shown}: nothing to import ({}); rocsweep import reads MIOpen, hipBLASLt, rocBLAS, cuBLASLt and cuDNN logs, PyTorch profiler traces and TunableOp CSVs (docs/commands.md, \"Map your own model\")",
                tally.describe()
            )));
        }
        ledger.files.push(tally);
    }
    write::publish(&ledger, out)
}

/// Reads one file into the ledger: a profiler trace as a whole, anything else line by line.
fn read_file(shown: &str, text: &str, ledger: &mut Ledger) -> Result<FileTally, CmdError> {
    let mut tally = FileTally::new(shown);
    if torch_trace::is_trace(text) {
        let events =
            torch_trace::events(text).map_err(|e| CmdError::BadInput(format!("{shown}: {e}")))?;
        tally.lines = 0;
        for ev in events {
            ledger.add(
                &mut tally,
                &format!("event {}", ev.index),
                &ev.text,
                ev.found,
            );
        }
        return Ok(tally);
    }
    for (i, line) in text.lines().enumerate() {
        tally.lines += 1;
        // A `#` line is a comment (pasted logs, fixtures), never a log line.
        let found = if line.trim_start().starts_with('#') {
            None
        } else {
            recognise(line)
        };
        match found {
            Some(found) => ledger.add(&mut tally, &format!("{}", i + 1), line, found),
            None => tally.other += 1,
        }
    }
    Ok(tally)
}

/// The first format that claims the line.
fn recognise(line: &str) -> Option<Found> {
    if let Some(map) = yaml::flow_map(line) {
        return Some(match map {
            Err(why) => Found::new("YAML profile", problem::Parsed::Malformed(why)),
            Ok(m) => rocblas::profile(&m).or_else(|| hipblaslt::profile(&m))?,
        });
    }
    miopen::line(line)
        .or_else(|| hipblaslt::bench_line(line))
        .or_else(|| rocblas::bench_line(line))
        .or_else(|| cublaslt::line(line))
        .or_else(|| cudnn::line(line))
        .or_else(|| tunableop::line(line))
}
