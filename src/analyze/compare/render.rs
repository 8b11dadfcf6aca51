//! compare.csv and compare.md from a [`Comparison`](super::comparison::Comparison): text only, no
//! files, so golden tests read exactly what `compare` writes.

use super::comparison::{
    Comparison, Outcome, RunInfo, Timing, UnitCmp, VERDICT_RULE, Verdict, short,
};
use crate::error::CmdError;
use crate::markup::markdown::{escape as md, table};
use crate::markup::table::{Cell, Span, Table};
use std::collections::BTreeMap;
use std::fmt::Write as _;

fn ms(t: Option<Timing>) -> String {
    t.map(|t| format!("{:.6}", t.median_ms)).unwrap_or_default()
}

/// The trials' max/min - 1, as a percentage, with the number of trials.
fn spread(t: Option<Timing>) -> String {
    match t {
        Some(Timing {
            spread: Some(s),
            trials,
            ..
        }) => format!("{:.1} % ({trials})", (s.exp() - 1.0) * 100.0),
        Some(t) if t.trials > 0 => format!("- ({})", t.trials),
        _ => "-".into(),
    }
}

fn spread_csv(t: Option<Timing>) -> String {
    t.and_then(|t| t.spread)
        .map(|s| format!("{:.4}", s.exp() - 1.0))
        .unwrap_or_default()
}

/// compare.csv: one row per unit matched or present in only one run.
pub fn csv_text(c: &Comparison) -> Result<String, CmdError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| CmdError::Failure(format!("compare.csv: {e}"));
    w.write_record([
        "unit_id",
        "op",
        "params",
        "solver",
        "env",
        "status_a",
        "status_b",
        "transition",
        "median_ms_a",
        "median_ms_b",
        "ratio",
        "verdict",
        "trials_a",
        "trials_b",
        "trial_spread_a",
        "trial_spread_b",
        "chosen_a",
        "chosen_b",
    ])
    .map_err(err)?;
    for u in &c.units {
        let st = |o: &Option<Outcome>| o.as_ref().map(|o| o.status.name()).unwrap_or("");
        let t = |o: &Option<Outcome>| o.as_ref().and_then(|o| o.timing);
        w.write_record([
            u.unit_id.as_str(),
            &u.op,
            &u.params,
            &u.solver,
            &u.env,
            st(&u.a),
            st(&u.b),
            &u.transition(),
            &ms(t(&u.a)),
            &ms(t(&u.b)),
            &u.ratio.map(|(r, _)| format!("{r:.4}")).unwrap_or_default(),
            u.ratio.map(|(_, v)| v.name()).unwrap_or(""),
            &t(&u.a).map(|t| t.trials.to_string()).unwrap_or_default(),
            &t(&u.b).map(|t| t.trials.to_string()).unwrap_or_default(),
            &spread_csv(t(&u.a)),
            &spread_csv(t(&u.b)),
            u.a.as_ref().map_or("", |o| o.chosen.as_str()),
            u.b.as_ref().map_or("", |o| o.chosen.as_str()),
        ])
        .map_err(err)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| CmdError::Failure(format!("compare.csv: {e}")))?;
    String::from_utf8(bytes).map_err(|e| CmdError::Failure(format!("compare.csv: {e}")))
}

/// Rows listed in compare.md per section; compare.csv has them all.
const MD_ROWS: usize = 40;

/// The unit: its id as code, then its parameters, solver and env.
fn unit_cell(u: &UnitCmp) -> Cell {
    let env = if u.env.is_empty() {
        String::new()
    } else {
        format!(" [{}]", u.env)
    };
    Cell::Spans(vec![
        Span::Code(u.unit_id.to_string()),
        Span::Text(format!(" {} solver={}{env}", u.params, u.solver)),
    ])
}

fn status_text(o: &Option<Outcome>) -> String {
    match o {
        None => "-".into(),
        Some(o) if o.phase.is_empty() => o.status.name().into(),
        Some(o) => format!("{} ({})", o.status, o.phase),
    }
}

/// compare.md. `plot` names the ratio plot when one was drawn.
pub fn markdown(c: &Comparison, plot: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Compare: {} vs {}\n", md(&c.a.label), md(&c.b.label));
    let _ = writeln!(s, "{}\n", c.headline());
    if let Some(why) = &c.sweep_mismatch {
        let _ = writeln!(
            s,
            "**Compared with --force although the runs are of different sweeps**: {}. Only units with the same id are matched.\n",
            md(why)
        );
    }
    s.push_str(&table(&runs(c), MD_ROWS));
    transitions(&mut s, c);
    throughput(&mut s, c, plot);
    choices(&mut s, c);
    s.push_str("\n## Per op and solver\n\n");
    s.push_str(&table(&per_op_solver(c), MD_ROWS));
    only_in_one(&mut s, c);
    s.truncate(s.trim_end().len());
    s.push('\n');
    s.push_str(&c.libraries);
    s
}

/// The two runs side by side.
fn runs(c: &Comparison) -> Table {
    let mut t = Table::facts(&["", "A", "B"]);
    type Fact = fn(&RunInfo) -> Cell;
    let facts: [(&str, Fact); 7] = [
        ("run", |r| Cell::Code(r.label.clone())),
        ("sweep", |r| {
            Cell::or_dash(format!("{} (sha256 {})", r.sweep, short(&r.sha256)))
        }),
        ("overrides", |r| Cell::or_dash(r.overrides.join(" "))),
        ("backend", |r| {
            Cell::or_dash(format!("{}: {}", r.backend, r.devices.join(", ")))
        }),
        ("started", |r| Cell::or_dash(r.started_at.clone())),
        ("rocsweep", |r| Cell::or_dash(r.rocsweep.clone())),
        ("units", |r| Cell::num(r.units)),
    ];
    for (name, f) in facts {
        t.fact(name, vec![f(&c.a), f(&c.b)]);
    }
    t
}

/// Matched units whose status changed: counted per transition, then listed.
fn transitions(s: &mut String, c: &Comparison) {
    s.push_str("\n## Status transitions\n\n");
    let changed: Vec<&UnitCmp> = c
        .units
        .iter()
        .filter(|u| matches!((&u.a, &u.b), (Some(a), Some(b)) if a.status != b.status))
        .collect();
    if changed.is_empty() {
        s.push_str("No matched unit changed status.\n");
        return;
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for u in &changed {
        *counts.entry(u.transition()).or_default() += 1;
    }
    let mut t = Table::new(&[("transition", false), ("units", true)]).rest_in("compare.csv");
    for (k, n) in &counts {
        t.push(vec![Cell::Code(k.clone()), Cell::num(n)]);
    }
    s.push_str(&table(&t, MD_ROWS));
    let mut t = Table::new(&[
        ("unit", false),
        ("A", false),
        ("B", false),
        ("error in B", false),
    ])
    .rest_in("compare.csv");
    for u in &changed {
        let err = u.b.as_ref().map(|o| o.error.as_str()).unwrap_or("");
        t.push_up_to(MD_ROWS, || {
            vec![
                unit_cell(u),
                Cell::Text(status_text(&u.a)),
                Cell::Text(status_text(&u.b)),
                if err.is_empty() {
                    Cell::text("-")
                } else {
                    Cell::Error(err.to_string())
                },
            ]
        });
    }
    s.push('\n');
    s.push_str(&table(&t, MD_ROWS));
}

/// The verdicts on B's speed over A's, the noise floors they rest on, and the most changed units.
fn throughput(s: &mut String, c: &Comparison, plot: Option<&str>) {
    let t = c.tally();
    s.push_str("\n## Throughput, B over A\n\n");
    let _ = writeln!(s, "{VERDICT_RULE}\n");
    let floor = |f: Option<f64>| {
        f.map_or("unknown (no unit has two trials)".to_string(), |f| {
            format!("{:.1} %", (f.exp() - 1.0) * 100.0)
        })
    };
    let _ = writeln!(
        s,
        "Noise floors (median trial spread, max/min - 1): A {}, B {}.\n",
        floor(c.floors.0),
        floor(c.floors.1)
    );
    let mut verdicts = Table::new(&[("verdict", false), ("units", true)]);
    for v in Verdict::ALL {
        verdicts.push(vec![Cell::text(v.name()), Cell::num(t.count(v))]);
    }
    // Only runs with `--processes` can have these: other runs' tables stay as they were.
    if t.count(Verdict::Unstable) > 0 {
        verdicts.push(vec![
            Cell::text(Verdict::Unstable.name()),
            Cell::num(t.count(Verdict::Unstable)),
        ]);
    }
    s.push_str(&table(&verdicts, MD_ROWS));
    if let Some(why) = c.slower_within_chance() {
        let _ = writeln!(s, "\n{why}.");
    }
    if let Some(g) = t.geomean() {
        let how = if c.weighted {
            ", weighted by the model's calls per case (the sweep's `weight`)"
        } else {
            ""
        };
        let _ = writeln!(s, "\nGeometric mean of the ratios{how}: {g:.3}.");
    }
    let timed = ratios(c);
    if !timed.rows.is_empty() {
        s.push('\n');
        s.push_str(&table(&timed, MD_ROWS));
    }
    if let Some(p) = plot {
        let _ = writeln!(s, "\nDistribution of log2(ratio): ![ratios]({p})");
    }
}

/// The timed units, most changed first (in either direction), then by id for a stable order.
fn ratios(c: &Comparison) -> Table {
    let mut timed: Vec<&UnitCmp> = c.units.iter().filter(|u| u.ratio.is_some()).collect();
    timed.sort_by(|x, y| {
        let m = |u: &UnitCmp| u.ratio.map_or(0.0, |(r, _)| r.ln().abs());
        m(y).total_cmp(&m(x))
            .then_with(|| x.unit_id.cmp(&y.unit_id))
    });
    let mut t = Table::new(&[
        ("unit", false),
        ("median ms A", true),
        ("median ms B", true),
        ("trial spread A (trials)", true),
        ("trial spread B (trials)", true),
        ("ratio", true),
        ("verdict", false),
    ])
    .rest_in("compare.csv");
    for u in timed {
        let ta = u.a.as_ref().and_then(|o| o.timing);
        let tb = u.b.as_ref().and_then(|o| o.timing);
        let (r, v) = u.ratio.unwrap_or((f64::NAN, Verdict::Ambiguous));
        t.push_up_to(MD_ROWS, || {
            vec![
                unit_cell(u),
                Cell::Num(ms(ta)),
                Cell::Num(ms(tb)),
                Cell::Num(spread(ta)),
                Cell::Num(spread(tb)),
                Cell::Num(format!("{r:.3}")),
                Cell::text(v.name()),
            ]
        });
    }
    t
}

/// Where the library's own pick changed between the runs (rocm-libraries#12126, TheRock#2485:
/// a release that stops choosing a solution), with the time effect, slower first.
fn choices(s: &mut String, c: &Comparison) {
    let changed = c.choice_changes();
    if changed.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## The library's choice changed\n\n{} units where the solver left the library the choice (`default`) ran another solution in B than in A; the ones that got slower (beyond noise) first.\n",
        changed.len()
    );
    let mut t = Table::new(&[
        ("unit", false),
        ("chosen in A", false),
        ("chosen in B", false),
        ("B / A throughput", true),
        ("verdict", false),
    ]);
    for u in changed.iter().take(MD_ROWS) {
        let chosen =
            |o: &Option<Outcome>| o.as_ref().map_or(String::new(), |o| o.chosen.to_string());
        t.push(vec![
            unit_cell(u),
            Cell::Text(chosen(&u.a)),
            Cell::Text(chosen(&u.b)),
            Cell::Text(
                u.ratio
                    .map(|(r, _)| format!("{r:.3}"))
                    .unwrap_or_else(|| "-".into()),
            ),
            Cell::Text(u.ratio.map_or("not timed", |(_, v)| v.name()).to_string()),
        ]);
    }
    s.push_str(&table(&t, MD_ROWS));
    if changed.len() > MD_ROWS {
        let _ = writeln!(
            s,
            "\n{} more in compare.csv (chosen_a, chosen_b).",
            changed.len() - MD_ROWS
        );
    }
}

fn per_op_solver(c: &Comparison) -> Table {
    let mut t = Table::new(&[
        ("op", false),
        ("solver", false),
        ("matched", true),
        ("newly failing", true),
        ("fixed", true),
        ("faster", true),
        ("slower", true),
        ("same", true),
        ("ambiguous", true),
        ("geomean ratio", true),
    ])
    .rest_in("compare.csv");
    for ((op, solver), n) in c.by_op_solver() {
        t.push(vec![
            Cell::text(op),
            Cell::text(solver),
            Cell::num(n.matched),
            Cell::num(n.regressed_status),
            Cell::num(n.fixed),
            Cell::num(n.count(Verdict::Faster)),
            Cell::num(n.count(Verdict::Slower)),
            Cell::num(n.count(Verdict::Same)),
            Cell::num(n.count(Verdict::Ambiguous)),
            Cell::Num(n.geomean().map_or("-".into(), |g| format!("{g:.3}"))),
        ]);
    }
    t
}

/// Units only one run has, listed per side.
fn only_in_one(s: &mut String, c: &Comparison) {
    s.push_str("\n## Units in only one run\n\n");
    for (side, name) in [(true, "A"), (false, "B")] {
        let only = c.only_in(side);
        if only.is_empty() {
            let _ = writeln!(s, "Only in {name}: none.\n");
            continue;
        }
        let _ = writeln!(s, "Only in {name}: {} units.\n", only.len());
        for u in only.iter().take(MD_ROWS) {
            let o = if side { &u.a } else { &u.b };
            let _ = writeln!(
                s,
                "- {} ({})",
                crate::markup::markdown::cell(&unit_cell(u)),
                md(&status_text(o))
            );
        }
        if only.len() > MD_ROWS {
            let _ = writeln!(s, "- ... and {} more in compare.csv", only.len() - MD_ROWS);
        }
        s.push('\n');
    }
}
