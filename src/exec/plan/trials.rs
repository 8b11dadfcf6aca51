//! Trials: each unit runs `[timing] trials` times, once per pass over the plan and each time in
//! a worker process of its own (exec/pool.rs). An ok trial that is not the last is journaled;
//! the last one, or the first that is not ok, makes the unit's row through [`combine`].

use crate::exec::worker::unit::Outcome;
use crate::results::status::Status;

/// The row of a unit from its earlier ok trials and the trial that ends it (`last`, trial
/// number `last_trial` of `planned`):
/// - all ok: the row is the median trial's (by its median time; the lower one of an even
///   count), so every column of the row comes from one real measurement;
/// - `last` not ok: the row is `last`, its error saying which trial failed and how many ok
///   trials came before (a unit that fails one trial in three is flaky, not safe).
///
/// Either way `trials` counts the trials run and `trial_medians` holds the timed trials'
/// medians in trial order.
pub fn combine(
    earlier: Vec<(u32, Outcome)>,
    last_trial: u32,
    last: Outcome,
    planned: u32,
) -> Outcome {
    let mut all = earlier;
    all.retain(|(t, o)| *t != last_trial && o.status == Status::Ok);
    let ok_before = all.len();
    let runs = ok_before as u32 + 1;
    let failed = last.status != Status::Ok;
    if !failed {
        all.push((last_trial, last.clone()));
    }
    all.sort_by_key(|(t, _)| *t);
    let medians: Vec<f64> = all
        .iter()
        .filter_map(|(_, o)| o.stats.as_ref().map(|s| s.median))
        .collect();
    let mut row = if failed {
        let mut o = last;
        if planned > 1 && ok_before > 0 {
            o.error = format!(
                "{} (in trial {last_trial} of {planned}; {ok_before} earlier trial{} ok)",
                o.error,
                if ok_before == 1 { " was" } else { "s were" }
            );
        }
        o
    } else {
        let mut by_time: Vec<usize> = (0..all.len())
            .filter(|&i| all[i].1.stats.is_some())
            .collect();
        by_time.sort_by(|&a, &b| {
            let m = |i: usize| all[i].1.stats.as_ref().map_or(0.0, |s| s.median);
            m(a).total_cmp(&m(b))
        });
        match by_time.len() {
            0 => last,
            n => all.swap_remove(by_time[(n - 1) / 2]).1,
        }
    };
    row.trials = runs;
    row.trial_medians = medians;
    row
}

/// Whether the processes a unit ran in (its trials, in trial order) agree, and if not, what
/// differed: the status, the output's bits (where it was read back) or the library's choice.
/// `--processes` (issue 43): a library that picks per process (hipBLASLt's solution), or a
/// replay that corrupts its output in some processes, shows here and nowhere else. The
/// `stable` column (`yes` / `no`) and what differed; None with fewer than two processes.
pub fn stability(trials: &[&Outcome]) -> Option<(&'static str, String)> {
    if trials.len() < 2 {
        return None;
    }
    let mut why = Vec::new();
    let n = trials.len();
    let spread = |what: &str, values: Vec<&str>| -> Option<String> {
        let mut seen: Vec<(&str, usize)> = Vec::new();
        for v in values {
            match seen.iter_mut().find(|(x, _)| *x == v) {
                Some((_, c)) => *c += 1,
                None => seen.push((v, 1)),
            }
        }
        (seen.len() > 1).then(|| {
            let parts: Vec<String> = seen
                .iter()
                .map(|(v, c)| format!("`{}` in {c} of {n}", if v.is_empty() { "-" } else { v }))
                .collect();
            format!("{what} {}", parts.join(", "))
        })
    };
    why.extend(spread(
        "status",
        trials.iter().map(|o| o.status.name()).collect(),
    ));
    let outputs: std::collections::BTreeSet<&str> =
        trials.iter().map(|o| o.output_digest.as_str()).collect();
    if outputs.len() > 1 && !outputs.contains("") {
        why.push(format!(
            "output bits differ: {} distinct outputs in {n} processes",
            outputs.len()
        ));
    }
    if let Some(c) = spread("chose", trials.iter().map(|o| o.chosen.as_str()).collect()) {
        // How far apart the choices' times are, where each was timed.
        let times: Vec<f64> = trials
            .iter()
            .filter_map(|o| o.stats.as_ref().map(|s| s.median))
            .collect();
        let slow = match (
            times.iter().copied().reduce(f64::min),
            times.iter().copied().reduce(f64::max),
        ) {
            (Some(lo), Some(hi)) if lo > 0.0 && times.len() == n => {
                format!("; the slowest process {:.2}x the fastest", hi / lo)
            }
            _ => String::new(),
        };
        why.push(format!("{c}{slow}"));
    }
    let stable = if why.is_empty() { "yes" } else { "no" };
    Some((stable, why.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::Stats;

    fn ok(median: f64) -> Outcome {
        let mut o = Outcome::failed(Status::Ok, "", "");
        o.stats = Some(Stats {
            median,
            ..Stats::default()
        });
        o.wall_s = median; // marks which trial the row came from
        o
    }

    #[test]
    fn the_row_is_the_median_trial_and_keeps_every_median_in_trial_order() {
        let row = combine(vec![(1, ok(3.0)), (2, ok(1.0))], 3, ok(2.0), 3);
        assert_eq!(row.status, Status::Ok);
        assert_eq!(row.trials, 3);
        assert_eq!(row.trial_medians, vec![3.0, 1.0, 2.0]);
        assert_eq!(row.stats.map(|s| s.median), Some(2.0));
        assert_eq!(row.wall_s, 2.0);
        // An even count takes the lower median.
        let row = combine(vec![(1, ok(4.0))], 2, ok(1.0), 2);
        assert_eq!(row.stats.map(|s| s.median), Some(1.0));
    }

    #[test]
    fn a_failing_trial_makes_the_row_and_says_which_trial_failed() {
        let hang = Outcome::failed(Status::Hang, "run", "no progress for 5 s");
        let row = combine(vec![(1, ok(1.0))], 2, hang, 3);
        assert_eq!(row.status, Status::Hang);
        assert_eq!(row.trials, 2);
        assert_eq!(row.trial_medians, vec![1.0]);
        assert_eq!(
            row.error,
            "no progress for 5 s (in trial 2 of 3; 1 earlier trial was ok)"
        );
        // The first trial failing needs no note.
        let crash = Outcome::failed(Status::Crash, "run", "SIGSEGV");
        let row = combine(Vec::new(), 1, crash, 3);
        assert_eq!((row.error.as_str(), row.trials), ("SIGSEGV", 1));
    }
}
