//! Progress: a bar with done/total, ETA and failure counts on a terminal; plain lines otherwise.

use crate::results::status::Status;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::io::IsTerminal;

pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    done: u64,
    counts: BTreeMap<Status, u64>,
    plain: bool,
}

impl Progress {
    /// `quiet` turns off both the bar and the plain lines.
    pub fn new(total: u64, quiet: bool) -> Progress {
        let terminal = std::io::stdout().is_terminal();
        let bar = (terminal && !quiet).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stdout());
            let style = ProgressStyle::with_template(
                "{bar:30} {pos}/{len} [{elapsed_precise} eta {eta}] {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        Progress {
            bar,
            total,
            done: 0,
            counts: BTreeMap::new(),
            plain: !terminal && !quiet,
        }
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

    /// Records one finished unit; `line` describes it for the plain output.
    pub fn unit_done(&mut self, status: Status, line: impl FnOnce() -> String) {
        self.done += 1;
        *self.counts.entry(status).or_default() += 1;
        if let Some(bar) = &self.bar {
            bar.set_position(self.done);
            bar.set_message(self.failure_text());
        } else if self.plain {
            println!(
                "[{}/{}] {:<11} {}",
                self.done,
                self.total,
                status.name(),
                line()
            );
        }
    }

    /// One trial of a unit that runs more (`[timing] trials`): the bar moves, nothing is
    /// counted or printed.
    pub fn trial_done(&mut self) {
        self.done += 1;
        if let Some(bar) = &self.bar {
            bar.set_position(self.done);
        }
    }

    /// `n` trials that will not run (their unit already has its row).
    pub fn skip_trials(&mut self, n: u64) {
        self.total = self.total.saturating_sub(n);
        if let Some(bar) = &self.bar {
            bar.set_length(self.total);
        }
    }

    /// A `solver = "all"` unit turned out to be `n` units.
    pub fn expand_one(&mut self, n: u64) {
        self.total = (self.total + n).saturating_sub(1);
        if let Some(bar) = &self.bar {
            bar.set_length(self.total);
        }
    }

    pub fn println(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => println!("{text}"),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
