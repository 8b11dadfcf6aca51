//! compare.csv and compare.md from a [`Comparison`](super::compare::Comparison): text only, no
//! files, so golden tests read exactly what `compare` writes.

use super::compare::{Comparison, Outcome, RunInfo, Timing, UnitCmp, VERDICT_RULE, Verdict, short};
use crate::error::CmdError;
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

/// Plain text in a cell (`markup::md`), `-` when there is none.
fn cell(s: &str) -> String {
    if s.is_empty() {
        "-".into()
    } else {
        crate::markup::md(s)
    }
}

/// Markdown already made from escaped parts, `-` when there is none.
fn or_dash(s: String) -> String {
    if s.is_empty() { "-".into() } else { s }
}

/// The first line of an error (CSV cells join lines with ` | `), cut to a table-friendly length;
/// the run's own results.csv keeps the whole text.
fn brief(err: &str) -> String {
    let first = err.split(" | ").next().unwrap_or(err);
    if first.chars().count() > 160 {
        format!("{}...", first.chars().take(160).collect::<String>())
    } else {
        first.to_string()
    }
}

/// The unit as Markdown: its id as code, the rest as escaped text.
fn unit_label(u: &UnitCmp) -> String {
    let env = if u.env.is_empty() {
        String::new()
    } else {
        format!(" [{}]", u.env)
    };
    format!(
        "{} {}",
        crate::markup::md_code(&u.unit_id),
        crate::markup::md(&format!("{} solver={}{env}", u.params, u.solver))
    )
}

fn status_cell(o: &Option<Outcome>) -> String {
    match o {
        None => "-".into(),
        Some(o) if o.phase.is_empty() => o.status.name().into(),
        Some(o) => format!("{} ({})", o.status, o.phase),
    }
}

/// compare.md. `plot` names the ratio plot when one was drawn.
pub fn markdown(c: &Comparison, plot: Option<&str>) -> String {
    let mut s = String::new();
    let t = c.tally();
    let _ = writeln!(s, "# Compare: {} vs {}\n", c.a.label, c.b.label);
    let _ = writeln!(s, "{}\n", c.headline());
    if let Some(why) = &c.sweep_mismatch {
        let _ = writeln!(
            s,
            "**Compared with --force although the runs are of different sweeps**: {why}. Only units with the same id are matched.\n"
        );
    }
    s.push_str("| | A | B |\n|---|---|---|\n");
    type Fact = fn(&RunInfo) -> String;
    let rows: [(&str, Fact); 7] = [
        ("run", |r| crate::markup::md_code(&r.label)),
        ("sweep", |r| {
            cell(&format!("{} (sha256 {})", r.sweep, short(&r.sha256)))
        }),
        ("overrides", |r| cell(&r.overrides.join(" "))),
        ("backend", |r| {
            cell(&format!("{}: {}", r.backend, r.devices.join(", ")))
        }),
        ("started", |r| cell(&r.started_at)),
        ("rocsweep", |r| cell(&r.rocsweep)),
        ("units", |r| r.units.to_string()),
    ];
    for (name, f) in rows {
        let _ = writeln!(
            s,
            "| {name} | {} | {} |",
            or_dash(f(&c.a)),
            or_dash(f(&c.b))
        );
    }

    s.push_str("\n## Status transitions\n\n");
    let changed: Vec<&UnitCmp> = c
        .units
        .iter()
        .filter(|u| matches!((&u.a, &u.b), (Some(a), Some(b)) if a.status != b.status))
        .collect();
    if changed.is_empty() {
        s.push_str("No matched unit changed status.\n");
    } else {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for u in &changed {
            *counts.entry(u.transition()).or_default() += 1;
        }
        s.push_str("| transition | units |\n|---|---|\n");
        for (k, n) in &counts {
            // Made of status names and `->`: nothing to escape.
            let _ = writeln!(s, "| {k} | {n} |");
        }
        s.push_str("\n| unit | A | B | error in B |\n|---|---|---|---|\n");
        for u in changed.iter().take(MD_ROWS) {
            let err = u.b.as_ref().map(|o| o.error.as_str()).unwrap_or("");
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                unit_label(u),
                status_cell(&u.a),
                status_cell(&u.b),
                cell(&brief(err))
            );
        }
        if changed.len() > MD_ROWS {
            let _ = writeln!(
                s,
                "\n... and {} more in compare.csv.",
                changed.len() - MD_ROWS
            );
        }
    }

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
    s.push_str("| verdict | units |\n|---|---|\n");
    for v in Verdict::ALL {
        let _ = writeln!(s, "| {} | {} |", v.name(), t.count(v));
    }
    if let Some(g) = t.geomean() {
        let how = if c.weighted {
            ", weighted by the model's calls per case (the sweep's `weight`)"
        } else {
            ""
        };
        let _ = writeln!(s, "\nGeometric mean of the ratios{how}: {g:.3}.");
    }
    let mut timed: Vec<&UnitCmp> = c.units.iter().filter(|u| u.ratio.is_some()).collect();
    // Most changed first (in either direction), then by id for a stable order.
    timed.sort_by(|x, y| {
        let m = |u: &UnitCmp| u.ratio.map_or(0.0, |(r, _)| r.ln().abs());
        m(y).total_cmp(&m(x))
            .then_with(|| x.unit_id.cmp(&y.unit_id))
    });
    if !timed.is_empty() {
        s.push_str(
            "\n| unit | median ms A | median ms B | trial spread A (trials) | trial spread B (trials) | ratio | verdict |\n|---|---|---|---|---|---|---|\n",
        );
        for u in timed.iter().take(MD_ROWS) {
            let ta = u.a.as_ref().and_then(|o| o.timing);
            let tb = u.b.as_ref().and_then(|o| o.timing);
            let (r, v) = u.ratio.unwrap_or((f64::NAN, Verdict::Ambiguous));
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {r:.3} | {} |",
                unit_label(u),
                ms(ta),
                ms(tb),
                spread(ta),
                spread(tb),
                v.name()
            );
        }
        if timed.len() > MD_ROWS {
            let _ = writeln!(
                s,
                "\n... and {} more in compare.csv.",
                timed.len() - MD_ROWS
            );
        }
    }
    if let Some(p) = plot {
        let _ = writeln!(s, "\nDistribution of log2(ratio): ![ratios]({p})");
    }

    s.push_str("\n## Per op and solver\n\n");
    s.push_str("| op | solver | matched | newly failing | fixed | faster | slower | same | ambiguous | geomean ratio |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for ((op, solver), t) in c.by_op_solver() {
        let _ = writeln!(
            s,
            "| {op} | {solver} | {} | {} | {} | {} | {} | {} | {} | {} |",
            t.matched,
            t.regressed_status,
            t.fixed,
            t.count(Verdict::Faster),
            t.count(Verdict::Slower),
            t.count(Verdict::Same),
            t.count(Verdict::Ambiguous),
            t.geomean().map_or("-".into(), |g| format!("{g:.3}"))
        );
    }

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
            let _ = writeln!(s, "- {} ({})", unit_label(u), status_cell(o));
        }
        if only.len() > MD_ROWS {
            let _ = writeln!(s, "- ... and {} more in compare.csv", only.len() - MD_ROWS);
        }
        s.push('\n');
    }
    s
}
