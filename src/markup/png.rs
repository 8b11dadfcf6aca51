//! PNG, as every picture rocsweep writes is saved (the report's plots, compare's histogram):
//! drawn by plotters into an RGB buffer, then encoded here at zlib's default level with adaptive
//! filters. plotters' own writer compresses at the fastest level, which left a large map 3.3
//! times the size (h200-gemm's heatmap re-rendered: 1.67 MB against 0.51, the same pixels).

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Draws a `size` picture with `draw` (on a drawing area over an RGB buffer) and writes it to
/// `path` as a PNG. `err` turns plotters' errors into the caller's.
pub fn draw_to<E: From<std::io::Error>>(
    path: &Path,
    size: (u32, u32),
    err: impl Fn(&dyn std::fmt::Display) -> E,
    draw: impl FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), E>,
) -> Result<(), E> {
    let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        draw(&root)?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(write_rgb(path, &rgb, size)?)
}

/// Writes 8-bit RGB pixels to `path` as a PNG.
pub fn write_rgb(path: &Path, rgb: &[u8], (w, h): (u32, u32)) -> std::io::Result<()> {
    use image::ImageEncoder;
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    PngEncoder::new_with_quality(file, CompressionType::Default, FilterType::Adaptive)
        .write_image(rgb, w, h, image::ColorType::Rgb8)
        .map_err(std::io::Error::other)
}
