//! The confirmation pass of `--strategy bisect --confirm N`: inferred units run for real, what
//! they found, the end-of-run lines, and confirm.csv.

use crate::results::status::Status;
use std::fmt::Write as _;
use std::path::Path;

/// The confirmation pass's table: one row per inferred unit run for real.
pub const CONFIRM_FILE: &str = "confirm.csv";

/// One inferred unit run for real.
#[derive(Clone, Debug)]
pub struct ConfirmRow {
    pub unit_id: String,
    pub case_id: String,
    pub params: String,
    pub solver: String,
    pub env: String,
    pub inferred: Status,
    pub inferred_from: String,
    pub measured: Status,
    pub phase: String,
    /// None: the measurement said nothing (skipped).
    pub agrees: Option<bool>,
}

/// What the confirmation pass found.
#[derive(Clone, Debug, Default)]
pub struct Confirmation {
    pub seed: u64,
    pub asked: u64,
    /// Inferred units there were to choose from.
    pub pool: usize,
    pub rows: Vec<ConfirmRow>,
    /// False when the run stopped (Ctrl-C, unhealthy device) before every chosen unit ran.
    pub complete: bool,
}

impl Confirmation {
    pub fn disagreements(&self) -> usize {
        self.rows.iter().filter(|r| r.agrees == Some(false)).count()
    }

    /// The end-of-run lines: one when all agree, a loud list when some do not.
    pub fn render(&self, axis: &str) -> String {
        let mut s = String::new();
        let n = self.disagreements();
        let ran = self.rows.len();
        let head = format!(
            "{ran} of {} inferred units run for real (--confirm {}, seed {}, along {axis})",
            self.pool, self.asked, self.seed
        );
        if n == 0 {
            let _ = writeln!(s, "confirm: {head}: no disagreement");
        } else {
            let _ = writeln!(
                s,
                "CONFIRM: {n} DISAGREEMENT{} among {head}: the map's monotone assumption does not hold here",
                if n == 1 { "" } else { "S" }
            );
            for r in self.rows.iter().filter(|r| r.agrees == Some(false)) {
                let phase = if r.phase.is_empty() {
                    String::new()
                } else {
                    format!(" in {}", r.phase)
                };
                let env = if r.env.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", r.env)
                };
                let _ = writeln!(
                    s,
                    "  {} {} solver={}{env}: inferred {}, measured {}{phase}",
                    r.unit_id, r.params, r.solver, r.inferred, r.measured
                );
            }
        }
        if !self.complete {
            let _ = writeln!(
                s,
                "confirm: stopped before every chosen unit ran; --resume finishes it"
            );
        }
        s
    }
}

/// confirm.csv: one row per inferred unit run for real (temp file + rename).
pub fn write_csv(dir: &Path, c: &Confirmation) -> std::io::Result<()> {
    crate::results::atomic::write_via(&dir.join(CONFIRM_FILE), |tmp| {
        let mut w = csv::Writer::from_path(tmp).map_err(std::io::Error::other)?;
        w.write_record([
            "unit_id",
            "case_id",
            "solver",
            "env",
            "params",
            "inferred",
            "measured",
            "phase",
            "agrees",
            "seed",
            "inferred_from",
        ])
        .map_err(std::io::Error::other)?;
        for r in &c.rows {
            let agrees = match r.agrees {
                Some(true) => "yes",
                Some(false) => "no",
                None => "unknown",
            };
            w.write_record([
                r.unit_id.as_str(),
                &r.case_id,
                &r.solver,
                &r.env,
                &r.params,
                r.inferred.name(),
                r.measured.name(),
                &r.phase,
                agrees,
                &c.seed.to_string(),
                &r.inferred_from,
            ])
            .map_err(std::io::Error::other)?;
        }
        w.flush()
    })
}
