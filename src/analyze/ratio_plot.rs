//! The histogram of log2 throughput ratios that `compare` draws: at a glance, whether B moved
//! everything a little, a few units a lot, or nothing. Each bar is stacked by the units'
//! verdicts (faster, slower, same, ambiguous: judged against run-to-run noise, not by the
//! ratio's sign), so a bar left of zero whose units are all "same" is grey, not red.

use super::noise::Verdict;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};
use std::path::Path;
use std::sync::OnceLock;

/// Bins are a tenth of a doubling wide: 7 % steps, finer than anyone reads off a bar chart.
const BIN: f64 = 0.1;

/// The colour of a verdict's part of a bar; a sign says nothing the verdict does not.
pub fn verdict_color(v: Verdict) -> RGBColor {
    match v {
        Verdict::Faster => RGBColor(0x15, 0x65, 0xc0),
        Verdict::Slower => RGBColor(0xc6, 0x28, 0x28),
        Verdict::Same => RGBColor(0x9e, 0x9e, 0x9e),
        Verdict::Ambiguous | Verdict::Unstable => RGBColor(0xff, 0xcc, 0x80),
    }
}

/// Counts of log2(ratio) per bin and verdict: (bin start, count per `Verdict::ALL`), covering at
/// least [-0.5, 0.5] so that a run compared with itself still shows where zero is.
pub fn bins(ratios: &[(f64, Verdict)]) -> Vec<(f64, [u32; 4])> {
    let logs: Vec<(f64, usize)> = ratios
        .iter()
        .filter(|(r, _)| r.is_finite() && *r > 0.0)
        .map(|(r, v)| {
            (
                r.log2(),
                Verdict::ALL.iter().position(|x| x == v).unwrap_or(3),
            )
        })
        .collect();
    let lo = logs.iter().map(|l| l.0).fold(-0.5, f64::min);
    let hi = logs.iter().map(|l| l.0).fold(0.5, f64::max);
    let first = (lo / BIN).floor() as i64;
    let last = (hi / BIN).floor() as i64;
    let mut counts = vec![[0u32; 4]; (last - first + 1).max(1) as usize];
    for (l, v) in logs {
        let i = ((l / BIN).floor() as i64 - first).clamp(0, counts.len() as i64 - 1) as usize;
        counts[i][v] += 1;
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, n)| ((first + i as i64) as f64 * BIN, n))
        .collect()
}

/// The bars' rectangles: (verdict, bin start, bottom, top), stacked in `Verdict::ALL` order.
pub fn bars(bins: &[(f64, [u32; 4])]) -> Vec<(Verdict, f64, u32, u32)> {
    let mut out = Vec::new();
    for &(start, counts) in bins {
        let mut base = 0;
        for (v, n) in Verdict::ALL.iter().zip(counts) {
            if n > 0 {
                out.push((*v, start, base, base + n));
                base += n;
            }
        }
    }
    out
}

/// Plotters draws no text without a font, and report machines often have none installed.
fn ensure_font() -> Result<(), String> {
    static DONE: OnceLock<bool> = OnceLock::new();
    if *DONE.get_or_init(|| {
        register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular()).is_ok()
    }) {
        Ok(())
    } else {
        Err("the embedded DejaVu Sans font could not be loaded".into())
    }
}

/// Draws the histogram as a PNG.
pub fn draw(path: &Path, ratios: &[(f64, Verdict)]) -> std::io::Result<()> {
    ensure_font().map_err(std::io::Error::other)?;
    let bins = bins(ratios);
    let (x0, x1) = (
        bins.first().map_or(-0.5, |b| b.0),
        bins.last().map_or(0.5, |b| b.0 + BIN),
    );
    let top = bins
        .iter()
        .map(|b| b.1.iter().sum::<u32>())
        .max()
        .unwrap_or(0)
        + 1;
    let tally: Vec<String> = Verdict::ALL
        .iter()
        .map(|v| {
            let n = ratios.iter().filter(|(_, x)| x == v).count();
            format!("{n} {}", v.name())
        })
        .collect();
    let fail =
        |e: &dyn std::fmt::Display| std::io::Error::other(format!("{}: {e}", path.display()));
    crate::markup::png::draw_to(path, (800, 480), fail, |root| {
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!(
                    "throughput ratio B / A, {} units: {}",
                    ratios.len(),
                    tally.join(", ")
                ),
                ("sans-serif", 22),
            )
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(52)
            .build_cartesian_2d(x0..x1, 0u32..top)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc("log2(ratio): 1 = twice as fast in B, -1 = half as fast")
            .y_desc("units")
            .light_line_style(WHITE)
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(|e| fail(&e))?;
        let gap = BIN * 0.08;
        for v in Verdict::ALL {
            let color = verdict_color(v);
            chart
                .draw_series(bars(&bins).into_iter().filter(|b| b.0 == v).map(
                    |(_, start, lo, hi)| {
                        Rectangle::new([(start + gap, lo), (start + BIN - gap, hi)], color.filled())
                    },
                ))
                .map_err(|e| fail(&e))?
                .label(v.name())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 12, y + 6)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 14))
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(0xbd, 0xbd, 0xbd))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| fail(&e))?;
        chart
            .draw_series(LineSeries::new(
                [(0.0, 0), (0.0, top)],
                BLACK.stroke_width(1),
            ))
            .map_err(|e| fail(&e))?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_zero_and_count_everything() {
        let b = bins(&[
            (1.0, Verdict::Same),
            (1.0, Verdict::Same),
            (2.0, Verdict::Faster),
            (0.5, Verdict::Slower),
        ]);
        let total: u32 = b.iter().map(|x| x.1.iter().sum::<u32>()).sum();
        assert_eq!(total, 4);
        assert!(b.first().is_some_and(|x| x.0 <= -0.5));
        assert!(b.last().is_some_and(|x| x.0 + BIN >= 1.0));
    }

    /// Issue 31: a unit 4 % slower whose verdict is "same" is drawn grey, left of zero; only a
    /// "slower" verdict is red, only "faster" blue, whatever the sign.
    #[test]
    fn bars_take_the_colour_of_their_verdict_not_of_their_sign() {
        let ratios = [
            (0.96, Verdict::Same),
            (0.97, Verdict::Same),
            (1.03, Verdict::Ambiguous),
            (0.5, Verdict::Slower),
            (2.0, Verdict::Faster),
        ];
        let b = bars(&bins(&ratios));
        let mut left_of_zero: Vec<Verdict> = b
            .iter()
            .filter(|x| x.1 + BIN / 2.0 < 0.0)
            .map(|x| x.0)
            .collect();
        left_of_zero.sort();
        assert_eq!(left_of_zero, vec![Verdict::Slower, Verdict::Same]);
        assert_eq!(b.iter().map(|x| x.3 - x.2).sum::<u32>(), 5);
        let colors: std::collections::HashSet<(u8, u8, u8)> = Verdict::ALL
            .iter()
            .map(|v| {
                let c = verdict_color(*v);
                (c.0, c.1, c.2)
            })
            .collect();
        assert_eq!(colors.len(), 4, "one colour per verdict");
        let grey = verdict_color(Verdict::Same);
        assert!(grey.0 == grey.1 && grey.1 == grey.2, "same is neutral grey");
    }
}
