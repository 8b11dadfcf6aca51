//! What the library picked where the solver left it the choice (`chosen` of `default` units),
//! run against run: rocm-libraries#12126 and TheRock#2485 are a release that stops choosing a
//! solution. The units whose pick changed, the slower first; render.rs writes them into
//! compare.md.

use super::comparison::{Comparison, UnitCmp, Verdict};

impl Comparison {
    /// Units where the library's own pick (`chosen`, recorded where the solver left it the
    /// choice: `default`) differs between the runs, the ones that got slower first (then by
    /// ratio, slowest first; untimed ones last).
    pub fn choice_changes(&self) -> Vec<&UnitCmp> {
        let mut v: Vec<&UnitCmp> = self
            .units
            .iter()
            .filter(|u| match (&u.a, &u.b) {
                (Some(a), Some(b)) => {
                    !a.chosen.is_empty() && !b.chosen.is_empty() && a.chosen != b.chosen
                }
                _ => false,
            })
            .collect();
        let key = |u: &UnitCmp| {
            let slower = matches!(u.ratio, Some((_, Verdict::Slower)));
            (!slower, u.ratio.map_or(f64::INFINITY, |(r, _)| r))
        };
        v.sort_by(|x, y| {
            let (a, b) = (key(x), key(y));
            a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
        });
        v
    }
}

#[cfg(test)]
mod tests {
    use crate::analyze::compare::comparison::UnitCmp;
    use crate::analyze::compare::comparison::tests::comparison;

    fn with_choice(u: &mut UnitCmp, a: &str, b: &str) {
        if let Some(o) = u.a.as_mut() {
            o.chosen = a.into();
        }
        if let Some(o) = u.b.as_mut() {
            o.chosen = b.into();
        }
    }

    /// Issue 44: the library's pick per unit in each run, listed where it changed, the ones that
    /// got slower first; a unit whose pick stayed, or that has no pick, is not listed.
    #[test]
    fn units_whose_library_choice_changed_are_listed_slower_first() {
        // u0, u1 quiet; u2 slower; u3 twice as slow.
        let mut c = comparison(2, 1, 1, 0);
        with_choice(&mut c.units[0], "hipblaslt#0-sol7", "hipblaslt#0-sol7");
        with_choice(&mut c.units[1], "hipblaslt#0-sol7", "hipblaslt#0-sol9");
        with_choice(&mut c.units[2], "hipblaslt#0-sol7", "hipblaslt#0-sol8");
        with_choice(&mut c.units[3], "hipblaslt#0-sol7", "hipblaslt#0-sol3");
        let ids: Vec<&str> = c
            .choice_changes()
            .iter()
            .map(|u| u.unit_id.as_str())
            .collect();
        assert_eq!(ids, ["u3", "u2", "u1"]);
        let md = crate::analyze::compare::markdown(&c, None);
        assert!(md.contains("## The library's choice changed"), "{md}");
        assert!(
            md.contains("3 units where the solver left the library the choice"),
            "{md}"
        );
        let at = |needle: &str| md.find(needle).unwrap_or(usize::MAX);
        assert!(at("hipblaslt#0-sol3") < at("hipblaslt#0-sol8"), "{md}");
        let csv = crate::analyze::compare::csv_text(&c).unwrap_or_default();
        assert!(
            csv.lines()
                .next()
                .unwrap_or("")
                .ends_with("chosen_a,chosen_b")
        );
        assert!(csv.contains("hipblaslt#0-sol7,hipblaslt#0-sol3"), "{csv}");
        // No change anywhere: no section.
        let quiet = comparison(3, 0, 0, 0);
        assert!(quiet.choice_changes().is_empty());
        assert!(!crate::analyze::compare::markdown(&quiet, None).contains("choice changed"));
    }
}
