//! What the files yielded, gathered: each distinct problem once with its calls, time and the
//! places it was seen; what is not supported, by reason; malformed lines, by place; per file,
//! what was read.

use super::problem::{Found, Parsed, Problem};
use crate::op::OpKind;
use std::collections::BTreeMap;

/// One call's place in the ledger: its op and its case's index there.
pub type Call = (OpKind, usize);

/// Whether a format's lines are calls in the order the program made them.
pub fn ordered(format: &str) -> bool {
    ![
        super::tunableop::FORMAT,
        super::rocblas::PROFILE,
        super::hipblaslt::PROFILE,
        "YAML profile",
    ]
    .contains(&format)
}

/// How many source places a case keeps to quote in its comment.
pub const QUOTED: usize = 3;

/// One distinct problem.
pub struct Case {
    pub problem: Problem,
    /// Calls seen executing, and sightings that only prepared it (MIOpen's Find).
    pub calls: f64,
    pub prepared: f64,
    /// Traced device time, while every sighting had one.
    pub traced_ms: Option<f64>,
    pub quoted: Vec<String>,
    pub sightings: usize,
}

impl Case {
    /// The case's weight: its calls, or (seen only prepared) its preparations.
    pub fn weight(&self) -> f64 {
        if self.calls > 0.0 {
            self.calls
        } else {
            self.prepared
        }
    }
}

/// Per file: lines, what was recognised and what came of it.
pub struct FileTally {
    pub path: String,
    pub lines: usize,
    pub formats: BTreeMap<&'static str, usize>,
    pub problems: usize,
    pub unsupported: usize,
    pub malformed: usize,
    pub other: usize,
}

impl FileTally {
    pub fn new(path: &str) -> FileTally {
        FileTally {
            path: path.to_string(),
            lines: 0,
            formats: BTreeMap::new(),
            problems: 0,
            unsupported: 0,
            malformed: 0,
            other: 0,
        }
    }

    /// `1200 lines: 40 MIOpen command log, 3 not supported, 1 malformed, 1156 other`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.lines > 0 {
            parts.push(format!("{} lines", self.lines));
        }
        for (f, n) in &self.formats {
            // A trace's events are op calls; the logs' records are lines.
            let what = match (*f == super::torch_trace::FORMAT, *n == 1) {
                (true, true) => "op call",
                (true, false) => "op calls",
                (false, true) => "line",
                (false, false) => "lines",
            };
            parts.push(format!("{n} {f} {what}"));
        }
        if self.formats.is_empty() {
            parts.push("none in a format rocsweep reads".into());
        }
        parts.push(format!("{} problems", self.problems));
        if self.unsupported > 0 {
            parts.push(format!("{} not supported", self.unsupported));
        }
        if self.malformed > 0 {
            parts.push(format!("{} malformed", self.malformed));
        }
        if self.other > 0 {
            parts.push(format!("{} other lines skipped", self.other));
        }
        parts.join(", ")
    }
}

#[derive(Default)]
pub struct Ledger {
    /// Per op, by the problem's canonical text, in first-seen order.
    pub cases: BTreeMap<&'static str, Vec<Case>>,
    index: BTreeMap<String, (OpKind, usize)>,
    /// Reason -> (count, first place).
    pub unsupported: BTreeMap<String, (usize, String)>,
    /// (place, reason), in reading order.
    pub malformed: Vec<(String, String)>,
    pub files: Vec<FileTally>,
    /// Every call of a format that records call order, in the order read (sequence.rs).
    pub order: Vec<Call>,
}

impl Ledger {
    /// Adds what a line (or event) at `place` of the tallied file yielded.
    pub fn add(&mut self, tally: &mut FileTally, place: &str, text: &str, found: Found) {
        *tally.formats.entry(found.format).or_default() += 1;
        let at = format!("{}:{place}", tally.path);
        match found.parsed {
            Parsed::Problem(p) => match check(&p) {
                Ok(()) => {
                    tally.problems += 1;
                    let ordered = p.executes && ordered(found.format);
                    let call = self.add_problem(p, &at, text);
                    if ordered {
                        self.order.push(call);
                    }
                }
                Err(why) => {
                    tally.unsupported += 1;
                    self.add_unsupported(why, &at);
                }
            },
            Parsed::Unsupported(why) => {
                tally.unsupported += 1;
                self.add_unsupported(why, &at);
            }
            Parsed::Malformed(why) => {
                tally.malformed += 1;
                self.malformed.push((at, why));
            }
        }
    }

    fn add_unsupported(&mut self, why: String, at: &str) {
        let e = self.unsupported.entry(why).or_insert((0, at.to_string()));
        e.0 += 1;
    }

    /// Adds a sighting of `p`; returns its case's place.
    fn add_problem(&mut self, p: Problem, at: &str, text: &str) -> Call {
        let key = p.key();
        let quote = format!("{at}: {}", clip(text));
        if let Some(&(op, i)) = self.index.get(&key)
            && let Some(c) = self.cases.get_mut(op.name()).and_then(|v| v.get_mut(i))
        {
            if p.executes {
                c.calls += p.calls;
            } else {
                c.prepared += p.calls;
            }
            c.traced_ms = c.traced_ms.zip(p.traced_ms).map(|(a, b)| a + b);
            c.sightings += 1;
            if c.quoted.len() < QUOTED {
                c.quoted.push(quote);
            }
            return (op, i);
        }
        let list = self.cases.entry(p.op.name()).or_default();
        let call = (p.op, list.len());
        self.index.insert(key, call);
        list.push(Case {
            calls: if p.executes { p.calls } else { 0.0 },
            prepared: if p.executes { 0.0 } else { p.calls },
            traced_ms: p.traced_ms,
            quoted: vec![quote],
            sightings: 1,
            problem: p,
        });
        call
    }
}

/// Whether rocsweep's op forms this problem (e.g. a filter no larger than the padded input).
fn check(p: &Problem) -> Result<(), String> {
    let values: Vec<_> = p.params.iter().map(|(_, v)| v.clone()).collect();
    for ((name, v), def) in p.params.iter().zip(p.op.params()) {
        def.check(v)
            .map_err(|e| format!("{} {name}: {e}", p.op.name()))?;
    }
    p.op.build(&values)
        .map(|_| ())
        .map_err(|e| format!("{} that rocsweep cannot form: {e}", p.op.name()))
}

/// One line of source text for a comment: control characters out, at most 240 characters.
pub fn clip(text: &str) -> String {
    let clean: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if clean.chars().count() > 240 {
        format!("{}...", clean.chars().take(240).collect::<String>())
    } else {
        clean
    }
}
