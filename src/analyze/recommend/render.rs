//! recommend.md and the shell profile from a [`Recommendation`](super::recommend::Recommendation):
//! text only, no files.

use super::answer::{ComboReport, PROFILE_NAME, Recommendation};
use crate::analyze::boundary::{self, Boundary};
use crate::analyze::boundary_render::{self, Show};
use crate::analyze::tree;
use crate::markup::markdown::{code, escape as md, table};
use crate::markup::shell;
use crate::markup::table::{Cell, Table};
use crate::results::status::Status;
use std::fmt::Write as _;

/// The shell profile (sourced from /etc/profile.d) with the winning combination.
pub fn profile(r: &Recommendation) -> String {
    let mut lines: Vec<String> = vec![
        format!(
            "{PROFILE_NAME}: environment recommended by `rocsweep recommend` from run {} (sweep {}, sha256 {}),",
            r.run_label,
            r.sweep,
            r.sha256.get(..12).unwrap_or(&r.sha256)
        ),
        format!(
            "backend {} on {}, host {}, started {}.",
            r.backend,
            r.devices.join(", "),
            r.host,
            r.started_at
        ),
        format!("Install: sudo install -m 644 {PROFILE_NAME} /etc/profile.d/{PROFILE_NAME}"),
        "It applies to every login shell; on a machine with several GPUs, guard it with a check for this card.".into(),
    ];
    let mut exports: Vec<(String, String)> = Vec::new();
    match r.combos.first() {
        None => lines.push("The run has no units, so there is nothing to recommend.".into()),
        Some(best) => {
            lines.push(String::new());
            lines.push(format!(
                "Ranked 1 of {}: {}, {} of {} units ok.",
                r.combos.len(),
                best.failure_summary(),
                best.ok,
                best.units
            ));
            let with_solver = several_solvers(&best.boundaries);
            for b in best.boundaries.iter().filter(|b| b.fails_from().is_some()) {
                lines.push(format!(
                    "Still fails: {}",
                    boundary_render::sentence(b, &r.axes, with_solver)
                ));
            }
            if best.boundaries.is_empty() {
                for rule in &best.fail_rules {
                    lines.push(format!("Still {}", rule.text()));
                }
            }
            if best.vars.is_empty() {
                lines.push("The sweep set no environment variables: nothing to export.".into());
            }
            for d in &r.decisions {
                if d.export && crate::results::manifest::is_masked(&d.value) {
                    // A credential the sweep set: its value was never written, so neither is it
                    // here (issue 40, S5).
                    exports.push((
                        d.why.clone(),
                        format!(
                            "# {} was set by the sweep; its value (a credential's) is not recorded: export it yourself",
                            shell::comment(&d.name)
                        ),
                    ));
                } else if d.export {
                    exports.push((d.why.clone(), shell::export_line(&d.name, &d.value)));
                } else {
                    exports.push((d.why.clone(), String::new()));
                }
            }
        }
    }
    let mut s = String::from("#!/bin/sh\n");
    for l in lines {
        let _ = writeln!(
            s,
            "#{}{}",
            if l.is_empty() { "" } else { " " },
            shell::comment(&l)
        );
    }
    for (why, export) in exports {
        let _ = writeln!(s, "\n# {}", shell::comment(&why));
        if !export.is_empty() {
            let _ = writeln!(s, "{export}");
        }
    }
    s
}

fn fmt_throughput(t: Option<f64>) -> String {
    t.map_or("-".into(), |v| format!("{v:.2}"))
}

/// recommend.md.
pub fn markdown(r: &Recommendation) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Recommend: {}\n", md(&r.run_label));
    answer(&mut s, r);
    let _ = writeln!(
        s,
        "Run {}: {}\n",
        code(&r.run_label),
        md(&format!(
            "sweep {} (sha256 {}), backend {} on {}, host {}, started {}.",
            r.sweep,
            r.sha256.get(..12).unwrap_or(&r.sha256),
            r.backend,
            r.devices.join(", "),
            r.host,
            r.started_at
        ))
    );
    ranking(&mut s, r);
    effects(&mut s, r);
    failures(&mut s, r);
    let _ = writeln!(s, "## Profile ({PROFILE_NAME})\n\n```sh\n{}```", profile(r));
    s
}

/// What to set, what not to, and the best combination.
fn answer(s: &mut String, r: &Recommendation) {
    let Some(best) = r.combos.first() else {
        s.push_str("The run has no units.\n\n");
        return;
    };
    let set: Vec<String> = r
        .decisions
        .iter()
        .filter(|d| d.export && r.varied_vars.contains(&d.name))
        .map(|d| format!("{}={}", d.name, d.value))
        .collect();
    let none: Vec<&str> = r
        .decisions
        .iter()
        .filter(|d| !d.export)
        .map(|d| d.name.as_str())
        .collect();
    if r.varied_vars.is_empty() {
        s.push_str("No env variable varies in this run: nothing to choose.\n\n");
    } else if set.is_empty() {
        s.push_str("**Set nothing**: no varied variable made a difference beyond noise.\n\n");
    } else {
        let _ = writeln!(s, "**Set {}**.\n", code(&set.join(" ")));
    }
    if !none.is_empty() {
        let _ = writeln!(
            s,
            "Not exported (no measurable or a mixed effect): {}.\n",
            none.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "Best combination {}: {}, {} of {} units ok (ranked 1 of {}).\n",
        code(&r.label(best)),
        best.failure_summary(),
        best.ok,
        best.units,
        r.combos.len()
    );
}

/// The combinations ranked, as a table.
fn ranking(s: &mut String, r: &Recommendation) {
    s.push_str("## Ranking\n\n");
    s.push_str(
        "Fewest failures (hang, crash, mismatch, zeros, nonfinite, error) first, then the most `ok` units, \
         then the geometric mean throughput over the units that are ok in every combination.\n\n",
    );
    let inferred = r
        .combos
        .iter()
        .any(|c| c.count(Status::InferredOk) + c.count(Status::InferredFail) > 0);
    if inferred {
        s.push_str(
            "Units a boundary search inferred instead of running (`--strategy bisect`) count as \
             what they were inferred to be: `inferred-fail` as a failure, `inferred-ok` as ok.\n\n",
        );
    }
    let metric = r.metric.unwrap_or("throughput");
    let geomean = format!("geomean {metric} over {} common units", r.common_units);
    // Each combination's device, when they differ (an env variable can change it).
    let devices_differ = r
        .combos
        .iter()
        .map(|c| c.device.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        > 1;
    let mut cols: Vec<(&str, bool)> = vec![("rank", true), ("combination", false)];
    if devices_differ {
        cols.push(("device", false));
    }
    cols.extend([
        ("units", true),
        ("failures", true),
        ("hang", true),
        ("crash", true),
        ("wrong results", true),
        ("error", true),
        ("ok", true),
        (&geomean, true),
    ]);
    let mut t = Table::new(&cols);
    for (i, c) in r.combos.iter().enumerate() {
        let wrong = c.count(Status::Mismatch) + c.count(Status::Zeros) + c.count(Status::Nonfinite);
        let mut cells = vec![Cell::num(i + 1), Cell::Code(r.label(c))];
        if devices_differ {
            cells.push(Cell::text(c.device.clone()));
        }
        cells.extend([
            Cell::num(c.units),
            Cell::num(c.failures),
            Cell::num(c.count(Status::Hang)),
            Cell::num(c.count(Status::Crash)),
            Cell::num(wrong),
            Cell::num(c.count(Status::Error)),
            Cell::num(c.ok),
            Cell::Num(fmt_throughput(c.throughput)),
        ]);
        t.push(cells);
    }
    s.push_str(&table(&t, usize::MAX));
    s.push_str(
        "\nThe throughput column is not a verdict: differences within run-to-run noise are ties. \
         The next section says which differences are beyond noise.\n",
    );
}

/// Each varied variable's paired effect, then what was decided about it.
fn effects(s: &mut String, r: &Recommendation) {
    s.push_str("\n## What each variable changed\n\n");
    let _ = writeln!(
        s,
        "Units that differ only in one variable are paired, for each pair of its values. {}\n\n\
         A speed difference is the variable's effect only when more units are called one way than the rule's \
         false calls explain (P(Binomial(n, {:.0} %) >= k) < {:.0} %).\n",
        crate::analyze::noise::RULE,
        crate::analyze::effect::FALSE_CALL_RATE * 100.0,
        crate::analyze::effect::SIGNIFICANCE * 100.0
    );
    if r.effects.is_empty() {
        s.push_str("No variable takes more than one value.\n");
    }
    for e in &r.effects {
        let verdict = if e.status_effect() {
            "changes statuses"
        } else if e.mixed() {
            "mixed speed effect"
        } else if e.any() {
            "changes speed"
        } else {
            "no measurable effect"
        };
        let _ = writeln!(s, "### {}: {verdict}\n", e.name);
        for p in &e.pairs {
            let _ = writeln!(s, "- {}", p.text(&e.name));
        }
        s.push('\n');
    }
    for d in r.decisions.iter() {
        let _ = writeln!(
            s,
            "- {} {}: {}",
            if d.export { "export" } else { "not exported:" },
            code(&format!("{}={}", d.name, d.value)),
            d.why
        );
    }
}

/// Whether the lines run several solvers (then a line's name says which).
fn several_solvers(lines: &[Boundary]) -> bool {
    lines
        .iter()
        .map(|l| l.solver.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        > 1
}

/// Per combination, the boundary table along the ordered axis, then the rules of where it fails
/// and where it is safe.
fn failures(s: &mut String, r: &Recommendation) {
    s.push_str("\n## Where each combination fails\n\n");
    if let Some(along) = r.axes.along.as_deref()
        && r.combos
            .iter()
            .any(|c| boundary::worth_a_table(&c.boundaries))
    {
        let _ = writeln!(
            s,
            "First, per combination, the boundary along {} as measured. {}\n",
            code(along),
            boundary_render::explanation(along)
        );
    }
    let feats = if r.features.is_empty() {
        "none (no parameter varies)".to_string()
    } else {
        r.features.join(", ")
    };
    let _ = writeln!(
        s,
        "Then rules: the leaves of a decision tree (Gini splits on the parameters that vary: {feats}; a zip group is one \
         category; each failing status is a class of its own), fitted per combination. The tree starts at depth {} and goes \
         deeper (up to {}) while that makes every leaf pure, as long as it keeps at most {} leaves; a leaf that still \
         mixes outcomes is written \"mostly\" and names its exceptions. Skipped and interrupted units are left out.\n",
        tree::MAX_DEPTH,
        tree::MAX_PURE_DEPTH,
        tree::MAX_LEAVES
    );
    for (i, c) in r.combos.iter().enumerate() {
        let _ = writeln!(s, "### {}. {}\n", i + 1, code(&r.label(c)));
        if let Some(model) = &c.model {
            let _ = writeln!(s, "Weighted by the model's calls: {}.\n", md(model));
        }
        boundary_table(s, r, c);
        if c.failures == 0 {
            let rest = if c.ok == c.units {
                String::new()
            } else {
                format!(
                    " ({} ok, the rest unsupported, skipped or interrupted)",
                    c.ok
                )
            };
            let _ = writeln!(
                s,
                "No failures in {} units: safe across the whole sweep{rest}.\n",
                c.units
            );
            continue;
        }
        let _ = writeln!(s, "{} in {} units. Fails:\n", c.failure_summary(), c.units);
        for rule in &c.fail_rules {
            let _ = writeln!(s, "- {}", rule.text());
        }
        if !c.ok_rules.is_empty() {
            s.push_str("\nSafe:\n\n");
            for rule in &c.ok_rules {
                let _ = writeln!(s, "- {}", rule.text());
            }
        }
        s.push('\n');
    }
}

/// The combination's boundary table, when a line has two values to compare.
fn boundary_table(s: &mut String, r: &Recommendation, c: &ComboReport) {
    let Some(along) = r.axes.along.as_deref() else {
        return;
    };
    if !boundary::worth_a_table(&c.boundaries) {
        return;
    }
    let show = Show {
        env: None,
        solver: several_solvers(&c.boundaries),
    };
    let _ = writeln!(s, "Boundary along {}:\n", code(along));
    s.push_str(&table(
        &boundary_render::table(&c.boundaries, &r.axes, &show),
        usize::MAX,
    ));
    s.push('\n');
}
