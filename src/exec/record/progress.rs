//! Progress: on a terminal, a bar with done/total, ETA and failure counts, and under it one
//! line per running unit (op and key parameters, its phase, seconds in the phase against the
//! phase's limit), redrawn every second, so a hanging unit is seen hanging; plain lines (one per
//! finished unit) otherwise.

use crate::results::status::Status;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::time::Duration;

const TICK: Duration = Duration::from_secs(1);

pub struct Progress {
    bar: Option<ProgressBar>,
    /// The bar and the running lines, drawn together.
    multi: Option<MultiProgress>,
    /// The running unit's line per device slot (`""` without `--devices`).
    running: HashMap<String, Running>,
    /// Units to finish in this session, and finished (a unit is done when its row is written:
    /// after its last trial, or its first that is not ok, or without running when it is
    /// recorded `skipped` or `interrupted`).
    units_total: u64,
    units_done: u64,
    /// Trials per unit, and the pass (trial number) running now.
    trials: u32,
    pass: u32,
    /// Trials to run and run (the bar's length and position, so its ETA follows the work).
    steps_total: u64,
    steps_done: u64,
    counts: BTreeMap<Status, u64>,
    plain: bool,
    /// Units the `solver = "all"` listings added to (or took from) the plan's count.
    grown: i64,
}
struct Running {
    line: ProgressBar,
    what: String,
    phase: String,
    /// Whether the line says the worker is silent.
    silent: bool,
}

/// A worker silent this long (it beats every half second) is said to be so on its line.
const SILENT_S: f64 = 2.0;

impl Progress {
    /// `units` to finish, each in `trials` trials, of which `kept` were kept by an earlier
    /// session. `quiet` turns off both the bar and the plain lines.
    pub fn new(units: u64, trials: u32, kept: u64, quiet: bool) -> Progress {
        let terminal = std::io::stdout().is_terminal();
        let steps_total = units
            .saturating_mul(u64::from(trials.max(1)))
            .saturating_sub(kept);
        let multi = (terminal && !quiet)
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stdout()));
        let bar = multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new(steps_total));
            let style =
                ProgressStyle::with_template("{bar:30} {msg} [{elapsed_precise} eta {eta}]")
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(TICK);
            bar
        });
        let p = Progress {
            bar,
            multi,
            running: HashMap::new(),
            units_total: units,
            units_done: 0,
            trials: trials.max(1),
            pass: 1,
            steps_total,
            steps_done: 0,
            counts: BTreeMap::new(),
            plain: !terminal && !quiet,
            grown: 0,
        };
        p.redraw();
        p
    }

    fn failure_text(&self) -> String {
        let v: Vec<String> = self
            .counts
            .iter()
            .filter(|(s, _)| **s != Status::Ok)
            .map(|(s, n)| format!("{n} {}", s.name()))
            .collect();
        v.join(", ")
    }

    /// `[pass 2/3] [12/24]`: where the run is, in units (and passes with trials).
    fn counter(&self) -> String {
        let units = format!("[{}/{}]", self.units_done, self.units_total);
        if self.trials > 1 {
            format!("[pass {}/{}] {units}", self.pass, self.trials)
        } else {
            units
        }
    }

    fn redraw(&self) {
        if let Some(bar) = &self.bar {
            bar.set_length(self.steps_total.max(self.steps_done));
            bar.set_position(self.steps_done);
            let mut msg = format!("units {}/{}", self.units_done, self.units_total);
            if self.trials > 1 {
                msg.push_str(&format!(" · pass {}/{}", self.pass, self.trials));
            }
            let failures = self.failure_text();
            if !failures.is_empty() {
                msg.push_str(&format!(" · {failures}"));
            }
            bar.set_message(msg);
        }
    }

    /// Records one finished unit; `line` describes it for the plain output.
    pub fn unit_done(&mut self, status: Status, line: impl FnOnce() -> String) {
        self.units_done += 1;
        // A unit recorded without running (skipped, interrupted) is done all the same: the
        // total never shrinks.
        self.units_total = self.units_total.max(self.units_done);
        self.steps_done += 1;
        *self.counts.entry(status).or_default() += 1;
        self.redraw();
        if self.plain {
            crate::sayln!("{} {:<11} {}", self.counter(), status.name(), line());
        }
    }

    /// One trial of a unit that runs more (`[timing] trials`): the bar moves, and piped, a
    /// line says it, so progress shows from the first pass on.
    pub fn trial_done(&mut self, trial: u32, line: impl FnOnce() -> String) {
        self.steps_done += 1;
        self.redraw();
        if self.plain {
            crate::sayln!(
                "{} {:<11} {} (trial {trial} of {} kept)",
                self.counter(),
                "trial-ok",
                line(),
                self.trials
            );
        }
    }

    /// `n` trials that will not run (their unit ended early): the bar's length shrinks, the
    /// count of units does not.
    pub fn skip_trials(&mut self, n: u64) {
        self.steps_total = self.steps_total.saturating_sub(n);
        self.redraw();
    }

    /// A `solver = "all"` unit turned out to be `n` units (none: it is not a unit at all).
    /// A `solver = "all"` case became `listed` units where the plan counted `counted`.
    pub fn expand_one(&mut self, listed: u64, counted: u64) {
        let trials = u64::from(self.trials);
        let grown = listed as i64 - counted as i64;
        self.grown += grown;
        if grown < 0 {
            let less = grown.unsigned_abs();
            self.units_total = self.units_total.saturating_sub(less).max(self.units_done);
            self.steps_total = self.steps_total.saturating_sub(less * trials);
        } else {
            self.units_total += grown as u64;
            self.steps_total += grown as u64 * trials;
        }
        self.redraw();
    }

    /// How many units the listings added to the plan's count (less where they took away).
    pub fn grown(&self) -> i64 {
        self.grown
    }

    /// The pass (trial number) a unit starts in.
    pub fn pass(&mut self, trial: u32) {
        if trial != self.pass {
            self.pass = trial;
            self.redraw();
        }
    }

    /// A unit started on `slot`: its line shows `what` and the phase.
    pub fn unit_started(&mut self, slot: &str, what: String, phase: &str, limit_s: f64) {
        let Some(multi) = &self.multi else {
            return;
        };
        let running = self.running.entry(slot.to_string()).or_insert_with(|| {
            let line = multi.add(ProgressBar::new_spinner());
            let style =
                ProgressStyle::with_template("  {spinner} {msg} {elapsed} (limit {prefix})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner());
            line.set_style(style);
            line.enable_steady_tick(TICK);
            Running {
                line,
                what: String::new(),
                phase: String::new(),
                silent: false,
            }
        });
        running.what = if slot.is_empty() {
            what
        } else {
            format!("device {slot}: {what}")
        };
        Self::show_phase(running, phase, limit_s);
    }

    /// The running unit on `slot` entered `phase`: its clock restarts.
    pub fn phase(&mut self, slot: &str, phase: &str, limit_s: f64) {
        if let Some(r) = self.running.get_mut(slot) {
            Self::show_phase(r, phase, limit_s);
        }
    }

    fn show_phase(r: &mut Running, phase: &str, limit_s: f64) {
        r.phase = phase.to_string();
        r.silent = false;
        r.line.set_prefix(format!("{limit_s} s"));
        r.line.set_message(format!("{}: {phase}", r.what));
        r.line.reset_elapsed();
        r.line.tick();
    }

    /// The running unit's worker has said nothing for `silent_s` seconds: past [`SILENT_S`]
    /// its line says so (a unit hanging in a library call still beats; a frozen process
    /// does not).
    pub fn heartbeat(&mut self, slot: &str, silent_s: f64) {
        let Some(r) = self.running.get_mut(slot) else {
            return;
        };
        let silent = silent_s >= SILENT_S;
        if silent {
            r.line.set_message(format!(
                "{}: {} (worker silent {silent_s:.0} s)",
                r.what, r.phase
            ));
        } else if r.silent {
            r.line.set_message(format!("{}: {}", r.what, r.phase));
        }
        r.silent = silent;
    }

    pub fn println(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => crate::sayln!("{text}"),
        }
    }

    pub fn finish(&self) {
        for r in self.running.values() {
            r.line.finish_and_clear();
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
