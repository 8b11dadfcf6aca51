//! Which layer fails: in a run over the PyTorch layer (backend `torch`) and at least one other
//! backend (the direct library: rocm, cuda, cpu), every case run by both is a pair, and the
//! pair's verdict says where to report a failure:
//!
//! | direct library | through PyTorch | verdict        |
//! |----------------|-----------------|----------------|
//! | fails          | fails           | `library`      |
//! | works          | fails           | `pytorch`      |
//! | fails          | works           | `library only` |
//! | works          | works           | `neither`      |
//!
//! A side's status over its solvers (a case is one unit per solver): it **works** when at least
//! one solver ended `ok` (a working solver counts as the library working: the user's call can
//! be made to work), it **fails** when every solver that ran ended otherwise (mismatch, zeros,
//! nonfinite, hang, crash, error), and it was **not run** when no solver ran: `unsupported`,
//! `skipped`, `interrupted` and a boundary search's inferred rows are not runs. A pair with a
//! side not run has the verdict `not run`.
//!
//! The PyTorch layer gets one line per solver: each torch solver is another call a user makes
//! (`randn` or `randn_like`, `.to()` or `.float()`, eager or `torch.compile`), so one failing
//! call is never hidden by another that works. The direct library's side is over all its
//! solvers (its algorithms, any of which the framework may pick).
//!
//! Cases pair by case id and env combination (the solver aside: each side has its own). The
//! PyTorch layer's backend name is a parameter ([`PYTORCH_LAYER`] in reports), so the table is
//! tested without torch by naming another backend as that layer.

use crate::markup::shell;
use crate::markup::table::{Cell, RowKind, Span, Table};
use crate::markup::torch_script::torch_script;
use crate::results::rundata::Row;
use crate::results::status::Status;

/// The backend that is the PyTorch layer; every other backend is a direct library.
pub const PYTORCH_LAYER: &str = "torch";

/// How one side of a pair did over its solvers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Works,
    Fails,
    NotRun,
}

/// One side of a pair: a backend's rows for the case.
#[derive(Clone, Debug)]
pub struct Side<'a> {
    pub backend: String,
    pub rows: Vec<&'a Row>,
    pub outcome: Outcome,
}

impl<'a> Side<'a> {
    fn of(backend: &str, rows: Vec<&'a Row>) -> Side<'a> {
        let ran: Vec<&&Row> = rows.iter().filter(|r| ran(r.status)).collect();
        let outcome = if ran.is_empty() {
            Outcome::NotRun
        } else if ran.iter().any(|r| r.status == Status::Ok) {
            Outcome::Works
        } else {
            Outcome::Fails
        };
        Side {
            backend: backend.to_string(),
            rows,
            outcome,
        }
    }

    /// The unit a reporter should start from: the first that failed, else the first ok one,
    /// else the first row.
    pub fn representative(&self) -> Option<&'a Row> {
        let first =
            |want: &dyn Fn(Status) -> bool| self.rows.iter().copied().find(|r| want(r.status));
        first(&|s| ran(s) && s != Status::Ok)
            .filter(|_| self.outcome == Outcome::Fails)
            .or_else(|| first(&|s| s == Status::Ok))
            .or_else(|| self.rows.first().copied())
    }

    /// `ok`, `ok (1 of 3 solvers)`, `zeros`, `hang, crash (2 solvers)`, `not run (unsupported)`,
    /// `no row`.
    pub fn status_text(&self) -> String {
        if self.rows.is_empty() {
            return "no row".into();
        }
        let mut names: Vec<&str> = Vec::new();
        let ran_rows: Vec<&&Row> = self.rows.iter().filter(|r| ran(r.status)).collect();
        let pool: Vec<&&Row> = match self.outcome {
            Outcome::Works => ran_rows
                .iter()
                .copied()
                .filter(|r| r.status == Status::Ok)
                .collect(),
            Outcome::Fails => ran_rows.clone(),
            Outcome::NotRun => self.rows.iter().collect(),
        };
        for r in &pool {
            if !names.contains(&r.status.name()) {
                names.push(r.status.name());
            }
        }
        let text = names.join(", ");
        match self.outcome {
            Outcome::NotRun => format!("not run ({text})"),
            _ if ran_rows.len() < 2 => text,
            Outcome::Works => format!("{text} ({} of {} solvers)", pool.len(), ran_rows.len()),
            Outcome::Fails => format!("{text} ({} solvers)", ran_rows.len()),
        }
    }
}

/// Whether a status is a run of the unit (`unsupported`, `skipped`, `interrupted` and inferred
/// rows are not).
fn ran(s: Status) -> bool {
    !matches!(
        s,
        Status::Unsupported
            | Status::Skipped
            | Status::Interrupted
            | Status::InferredOk
            | Status::InferredFail
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Fails both ways: report it to the library.
    Library,
    /// Fails only through PyTorch: report it to PyTorch.
    Pytorch,
    /// Fails only in the direct call: PyTorch calls it in a way that works.
    LibraryOnly,
    Neither,
    /// A side did not run (unsupported, skipped, no row).
    NotRun,
}

impl Verdict {
    pub fn of(direct: Outcome, torch: Outcome) -> Verdict {
        match (direct, torch) {
            (Outcome::Fails, Outcome::Fails) => Verdict::Library,
            (Outcome::Works, Outcome::Fails) => Verdict::Pytorch,
            (Outcome::Fails, Outcome::Works) => Verdict::LibraryOnly,
            (Outcome::Works, Outcome::Works) => Verdict::Neither,
            _ => Verdict::NotRun,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Library => "library",
            Verdict::Pytorch => "pytorch",
            Verdict::LibraryOnly => "library only",
            Verdict::Neither => "neither",
            Verdict::NotRun => "not run",
        }
    }

    /// Lines with something to report come first.
    fn rank(self) -> u8 {
        match self {
            Verdict::Library => 0,
            Verdict::Pytorch => 1,
            Verdict::LibraryOnly => 2,
            Verdict::NotRun => 3,
            Verdict::Neither => 4,
        }
    }
}

/// One paired case: the direct library's side and the PyTorch layer's.
#[derive(Clone, Debug)]
pub struct Pair<'a> {
    pub case_id: String,
    /// The env combination (the CSV's `env`, without the backend).
    pub env: String,
    pub direct: Side<'a>,
    pub torch: Side<'a>,
    pub verdict: Verdict,
}

impl Pair<'_> {
    /// A row of the case (for its parameters): the torch side's, else the direct side's.
    pub fn any_row(&self) -> Option<&Row> {
        self.torch
            .representative()
            .or_else(|| self.direct.representative())
    }

    /// The stand-alone Python script of the torch side's call (see `torch_script`).
    pub fn script(&self) -> Option<String> {
        let row = self.any_row()?;
        let solver = self
            .torch
            .representative()
            .map_or("default", |r| r.solver.as_str());
        torch_script(&row.op, &row.params, solver)
    }
}

/// A row's env combination without the backend that a run over several backends puts in front
/// of it (`RunData` keys rows on the worker context, `backend=NAME;ENV`).
fn plain_env(r: &Row) -> &str {
    let prefix = format!("backend={}", r.backend);
    match r.env.strip_prefix(&prefix) {
        Some("") => "",
        Some(rest) => rest.strip_prefix(';').unwrap_or(&r.env),
        None => &r.env,
    }
}

/// The pairs of a run whose rows include the `pytorch` backend and at least one other (empty
/// otherwise): one per case, env combination and direct backend, most telling verdicts first
/// (library, pytorch, library only, not run, neither), in the rows' order within each.
pub fn pairs<'a>(rows: &'a [Row], pytorch: &str) -> Vec<Pair<'a>> {
    let mut backends: Vec<&str> = Vec::new();
    for r in rows {
        if !backends.contains(&r.backend.as_str()) {
            backends.push(&r.backend);
        }
    }
    if !backends.contains(&pytorch) || backends.len() < 2 {
        return Vec::new();
    }
    // Cases in the order their first row came, each with its rows.
    let mut cases: Vec<((&str, &str), Vec<&Row>)> = Vec::new();
    for r in rows {
        let key = (r.case_id.as_str(), plain_env(r));
        match cases.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => cases.push((key, vec![r])),
        }
    }
    let mut out = Vec::new();
    for ((case_id, env), case_rows) in &cases {
        let of = |b: &str| -> Vec<&'a Row> {
            case_rows
                .iter()
                .copied()
                .filter(|r| r.backend == b)
                .collect()
        };
        let torch_rows = of(pytorch);
        let mut solvers: Vec<&str> = Vec::new();
        for r in &torch_rows {
            if !solvers.contains(&r.solver.as_str()) {
                solvers.push(&r.solver);
            }
        }
        // One line per torch solver: each is another call a user makes. A solver that did not
        // run (another backend's name in a shared solver list) gets no line when one ran.
        let mut torch_sides: Vec<Side<'a>> = if solvers.is_empty() {
            vec![Side::of(pytorch, Vec::new())]
        } else {
            solvers
                .iter()
                .map(|s| {
                    let rows = torch_rows.iter().copied().filter(|r| r.solver == *s);
                    Side::of(pytorch, rows.collect())
                })
                .collect()
        };
        if torch_sides.iter().any(|t| t.outcome != Outcome::NotRun) {
            torch_sides.retain(|t| t.outcome != Outcome::NotRun);
        }
        for b in backends.iter().filter(|b| **b != pytorch) {
            let direct = Side::of(b, of(b));
            for torch in &torch_sides {
                if direct.rows.is_empty() && torch.rows.is_empty() {
                    continue;
                }
                out.push(Pair {
                    case_id: case_id.to_string(),
                    env: env.to_string(),
                    verdict: Verdict::of(direct.outcome, torch.outcome),
                    direct: direct.clone(),
                    torch: torch.clone(),
                });
            }
        }
    }
    out.sort_by_key(|p| p.verdict.rank());
    out
}

/// The which-layer table: case | direct library | through PyTorch | verdict | repro, with
/// `rocsweep repro DIR UNIT` for each side's representative unit (`dir` quoted for a shell).
/// `label` names a case (the report's short parameter text); `env` adds an env column.
pub fn table(pairs: &[Pair], dir: &str, label: &dyn Fn(&Row) -> String, env: bool) -> Table {
    let mut cols = vec![("case", false)];
    if env {
        cols.push(("env", false));
    }
    cols.extend([
        ("direct library", false),
        ("through PyTorch", false),
        ("verdict", false),
        ("repro", false),
    ]);
    let mut t = Table::new(&cols);
    for p in pairs {
        let mut row = vec![match p.any_row() {
            Some(r) => Cell::Titled {
                text: label(r),
                title: format!("case {} · {}", p.case_id, r.params_text()),
            },
            None => Cell::Text(p.case_id.clone()),
        }];
        if env {
            row.push(Cell::or_dash(p.env.clone()));
        }
        row.push(Cell::text(format!(
            "{}: {}",
            p.direct.backend,
            p.direct.status_text()
        )));
        row.push(Cell::text(match p.torch.rows.first() {
            Some(r) => format!("{}: {}", r.solver, p.torch.status_text()),
            None => p.torch.status_text(),
        }));
        row.push(Cell::Strong(p.verdict.name().to_string()));
        let mut spans = Vec::new();
        for side in [&p.direct, &p.torch] {
            if let Some(r) = side.representative() {
                if !spans.is_empty() {
                    spans.push(Span::Break);
                }
                spans.push(Span::Code(format!(
                    "rocsweep repro {dir} {}",
                    shell::quote(&r.unit_id)
                )));
            }
        }
        row.push(Cell::Spans(spans));
        t.push_as(row, RowKind::Plain, None);
    }
    t
}

/// The pairs counted per verdict, the telling ones first: "2 library · 1 pytorch · 40 neither"
/// (verdicts no pair has are left out), so that a table of dozens of `neither` rows still says
/// at once whether anything fails.
pub fn verdict_counts(pairs: &[Pair]) -> String {
    let all = [
        Verdict::Library,
        Verdict::Pytorch,
        Verdict::LibraryOnly,
        Verdict::NotRun,
        Verdict::Neither,
    ];
    let parts: Vec<String> = all
        .iter()
        .map(|v| (v, pairs.iter().filter(|p| p.verdict == *v).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(v, n)| format!("{n} {}", v.name()))
        .collect();
    let failing = pairs
        .iter()
        .filter(|p| {
            matches!(
                p.verdict,
                Verdict::Library | Verdict::Pytorch | Verdict::LibraryOnly
            )
        })
        .count();
    let lead = if failing == 0 {
        "No case fails in either layer".to_string()
    } else {
        format!(
            "{failing} of {} cases fail in some layer (listed first)",
            pairs.len()
        )
    };
    format!("{lead}: {}.", parts.join(" · "))
}

/// What the table's heading says under it: the rule for a side's status.
pub const EXPLANATION: &str = "Each case run by the direct library and through PyTorch (the \
`torch` backend). A side works when at least one of its solvers ended ok, fails when every \
solver that ran failed (mismatch, zeros, nonfinite, hang, crash, error); unsupported, skipped, \
interrupted and inferred units are not runs, and a pair with a side not run says `not run`. \
Verdict: `library` fails both ways, `pytorch` fails only through PyTorch, `library only` fails \
only in the direct call, `neither` works both ways. The first repro command is the direct \
library's unit, the second the PyTorch layer's; the Python scripts below make the torch call \
with nothing else.";

#[cfg(test)]
mod tests {
    use super::*;

    fn row(unit: &str, case: &str, backend: &str, solver: &str, status: Status) -> Row {
        Row {
            unit_id: unit.into(),
            case_id: case.into(),
            backend: backend.into(),
            solver: solver.into(),
            env: format!("backend={backend}").into(),
            status,
            params: crate::results::rundata::Params::from_pairs([
                ("m", "8"),
                ("n", "4"),
                ("k", "2"),
                ("dtype", "f32"),
                ("case", case),
            ]),
            ..Row::for_tests()
        }
    }

    /// `cpu` as the direct library and `lay` standing for the PyTorch layer.
    #[test]
    fn the_verdicts_are_counted_failing_first() {
        let rows = vec![
            row("1", "a", "cpu", "im2col", Status::Zeros),
            row("2", "a", "torch", "torch-default", Status::Ok),
            row("3", "b", "cpu", "im2col", Status::Ok),
            row("4", "b", "torch", "torch-default", Status::Ok),
            row("5", "c", "cpu", "im2col", Status::Ok),
            row("6", "c", "torch", "torch-default", Status::Ok),
        ];
        let p = pairs(&rows, PYTORCH_LAYER);
        assert_eq!(
            verdict_counts(&p),
            "1 of 3 cases fail in some layer (listed first): 1 library only · 2 neither."
        );
        assert_eq!(p[0].verdict, Verdict::LibraryOnly);
        assert_eq!(
            verdict_counts(&p[1..]),
            "No case fails in either layer: 2 neither."
        );
    }

    #[test]
    fn each_verdict_follows_the_rule_over_solvers() {
        use Status::*;
        let rows = vec![
            // case a: the library fails in every solver, the layer fails too -> library
            row("a1", "a", "cpu", "s1", Zeros),
            row("a2", "a", "cpu", "s2", Hang),
            row("a3", "a", "lay", "t", Nonfinite),
            // case b: one library solver works -> works; the layer fails -> pytorch
            row("b1", "b", "cpu", "s1", Crash),
            row("b2", "b", "cpu", "s2", Ok),
            row("b3", "b", "lay", "t", Zeros),
            // case c: the library fails, the layer works -> library only
            row("c1", "c", "cpu", "s1", Mismatch),
            row("c2", "c", "cpu", "s2", Unsupported),
            row("c3", "c", "lay", "t", Ok),
            // case d: both work -> neither
            row("d1", "d", "cpu", "s1", Ok),
            row("d2", "d", "lay", "t", Ok),
            // case e: the layer's only solver is unsupported -> not run
            row("e1", "e", "cpu", "s1", Error),
            row("e2", "e", "lay", "t", Unsupported),
        ];
        let p = pairs(&rows, "lay");
        let got: Vec<(&str, Verdict)> = p.iter().map(|p| (p.case_id.as_str(), p.verdict)).collect();
        assert_eq!(
            got,
            [
                ("a", Verdict::Library),
                ("b", Verdict::Pytorch),
                ("c", Verdict::LibraryOnly),
                ("e", Verdict::NotRun),
                ("d", Verdict::Neither),
            ]
        );
        assert_eq!(p[0].direct.status_text(), "zeros, hang (2 solvers)");
        assert_eq!(p[1].direct.status_text(), "ok (1 of 2 solvers)");
        assert_eq!(p[2].direct.status_text(), "mismatch");
        assert_eq!(p[3].torch.status_text(), "not run (unsupported)");
        // The repro starts from the failing unit of a failing side, the ok one of a working side.
        assert_eq!(
            p[0].direct.representative().map(|r| r.unit_id.as_str()),
            Some("a1")
        );
        assert_eq!(
            p[1].direct.representative().map(|r| r.unit_id.as_str()),
            Some("b2")
        );
        assert!(p[0].script().is_some_and(|s| s.contains("torch.matmul")));
    }

    #[test]
    fn each_torch_solver_is_a_line_of_its_own() {
        use Status::*;
        // Seed 003's shape: eager works through torch, reduce-overhead does not; the library's
        // graph works. The failing call must not hide behind the working one.
        let rows = vec![
            row("l1", "g", "cpu", "s1", Ok),
            row("t1", "g", "lay", "torch-eager", Ok),
            row("t2", "g", "lay", "torch-compile", Mismatch),
            // another backend's solver name in a shared list: no line of its own
            row("t3", "g", "lay", "s1", Unsupported),
        ];
        let p = pairs(&rows, "lay");
        let got: Vec<(&str, Verdict)> = p
            .iter()
            .map(|p| (p.torch.rows[0].solver.as_str(), p.verdict))
            .collect();
        assert_eq!(
            got,
            [
                ("torch-compile", Verdict::Pytorch),
                ("torch-eager", Verdict::Neither)
            ]
        );
        assert_eq!(p[0].torch.status_text(), "mismatch");
    }

    #[test]
    fn no_table_without_the_layer_or_without_a_direct_backend() {
        let only_cpu = vec![row("a1", "a", "cpu", "s", Status::Ok)];
        assert!(pairs(&only_cpu, "lay").is_empty());
        let only_layer = vec![row("a1", "a", "lay", "s", Status::Ok)];
        assert!(pairs(&only_layer, "lay").is_empty());
        // The real layer's name is `torch`.
        let both = vec![
            row("a1", "a", "cpu", "s", Status::Ok),
            row("a2", "a", "torch", "t", Status::Zeros),
        ];
        assert_eq!(pairs(&both, PYTORCH_LAYER)[0].verdict, Verdict::Pytorch);
    }

    #[test]
    fn pairs_keep_env_combinations_apart_and_the_table_names_both_repros() {
        let mut rows = vec![
            row("a1", "a", "cpu", "s", Status::Ok),
            row("a2", "a", "lay", "t", Status::Zeros),
            row("a3", "a", "cpu", "s", Status::Zeros),
            row("a4", "a", "lay", "t", Status::Zeros),
        ];
        rows[2].env = "backend=cpu;X=1".into();
        rows[3].env = "backend=lay;X=1".into();
        let p = pairs(&rows, "lay");
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].env.as_str(), p[0].verdict), ("X=1", Verdict::Library));
        assert_eq!((p[1].env.as_str(), p[1].verdict), ("", Verdict::Pytorch));
        let t = table(&p, "run", &|r: &Row| format!("case {}", r.case_id), true);
        let md = crate::markup::markdown::table(&t, usize::MAX);
        assert!(md.contains("rocsweep repro run a3"), "{md}");
        assert!(md.contains("rocsweep repro run a4"), "{md}");
        assert!(md.contains("cpu: zeros"), "{md}");
        assert!(md.contains("library"), "{md}");
    }
}
