//! The histogram of log2 throughput ratios that `compare` draws: at a glance, whether B moved
//! everything a little, a few units a lot, or nothing.

use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};
use std::path::Path;
use std::sync::OnceLock;

/// Bins are a tenth of a doubling wide: 7 % steps, finer than anyone reads off a bar chart.
const BIN: f64 = 0.1;

/// Counts of log2(ratio) per bin: (bin start, count), covering at least [-0.5, 0.5] so that a
/// run compared with itself still shows where zero is.
pub fn bins(ratios: &[f64]) -> Vec<(f64, u32)> {
    let logs: Vec<f64> = ratios
        .iter()
        .filter(|r| r.is_finite() && **r > 0.0)
        .map(|r| r.log2())
        .collect();
    let lo = logs.iter().copied().fold(-0.5, f64::min);
    let hi = logs.iter().copied().fold(0.5, f64::max);
    let first = (lo / BIN).floor() as i64;
    let last = (hi / BIN).floor() as i64;
    let mut counts = vec![0u32; (last - first + 1).max(1) as usize];
    for l in logs {
        let i = ((l / BIN).floor() as i64 - first).clamp(0, counts.len() as i64 - 1) as usize;
        counts[i] += 1;
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, n)| ((first + i as i64) as f64 * BIN, n))
        .collect()
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
pub fn draw(path: &Path, ratios: &[f64]) -> Result<(), String> {
    ensure_font()?;
    let bins = bins(ratios);
    let (x0, x1) = (
        bins.first().map_or(-0.5, |b| b.0),
        bins.last().map_or(0.5, |b| b.0 + BIN),
    );
    let top = bins.iter().map(|b| b.1).max().unwrap_or(0) + 1;
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let root = BitMapBackend::new(path, (800, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("throughput ratio B / A, {} units", ratios.len()),
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
    chart
        .draw_series(bins.iter().filter(|b| b.1 > 0).map(|&(start, n)| {
            let color = if start + BIN / 2.0 < 0.0 {
                RGBColor(200, 60, 50)
            } else {
                RGBColor(50, 110, 190)
            };
            let gap = BIN * 0.08;
            Rectangle::new(
                [(start + gap, 0), (start + BIN - gap, n)],
                color.mix(0.8).filled(),
            )
        }))
        .map_err(|e| fail(&e))?;
    chart
        .draw_series(LineSeries::new(
            [(0.0, 0), (0.0, top)],
            BLACK.stroke_width(1),
        ))
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_zero_and_count_everything() {
        let b = bins(&[1.0, 1.0, 2.0, 0.5]);
        assert_eq!(b.iter().map(|x| x.1).sum::<u32>(), 4);
        assert!(b.first().is_some_and(|x| x.0 <= -0.5));
        assert!(b.last().is_some_and(|x| x.0 + BIN >= 1.0));
    }
}
