//! The canvas every figure draws on: the embedded font (registered for SVG, rasterised here for
//! PNG: plotters 0.3.7's ab_glyph path drops each glyph's left side bearing), text placement,
//! and the fonts, anchors and greys the figures share.

use crate::error::CmdError;
use ab_glyph::{Font, FontRef, PxScale, ScaleFont, point};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontDesc, FontStyle, register_font};
use std::sync::OnceLock;

pub const FONT: &str = "sans-serif";

pub type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Registers DejaVu Sans under the name plotters asks for: report machines (CI, laptops,
/// containers) often have no system fonts at all, and plotters would draw no text without one.
pub fn ensure_fonts() -> Result<(), CmdError> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok()
            && register_font(FONT, FontStyle::Bold, dejavu::sans::bold()).is_ok()
    });
    if ok && raster_fonts().is_some() {
        Ok(())
    } else {
        Err(CmdError::Failure(
            "the embedded DejaVu Sans font could not be loaded".to_string(),
        ))
    }
}

struct RasterFonts {
    regular: FontRef<'static>,
    bold: FontRef<'static>,
}

fn raster_fonts() -> Option<&'static RasterFonts> {
    static FONTS: OnceLock<Option<RasterFonts>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            Some(RasterFonts {
                regular: FontRef::try_from_slice(dejavu::sans::regular()).ok()?,
                bold: FontRef::try_from_slice(dejavu::sans::bold()).ok()?,
            })
        })
        .as_ref()
}

/// The whole image's drawing area, plus how its text is to be drawn.
pub struct Canvas<'a, DB: DrawingBackend> {
    pub area: &'a DrawingArea<DB, Shift>,
    raster: bool,
}

impl<'a, DB: DrawingBackend> Canvas<'a, DB> {
    pub fn new(area: &'a DrawingArea<DB, Shift>, raster: bool) -> Canvas<'a, DB> {
        Canvas { area, raster }
    }

    /// Text anchored at `pos` (pixels of the whole image) by `h` and `v`.
    pub fn text(
        &self,
        s: &str,
        pos: (i32, i32),
        f: &FontDesc,
        color: &RGBColor,
        (h, v): (HPos, VPos),
    ) -> DrawResult<DB> {
        self.text_impl(s, pos, f, color, (h, v), false)
    }

    /// Text reading bottom to top (a y axis title), centred on `pos`.
    pub fn text_up(
        &self,
        s: &str,
        pos: (i32, i32),
        f: &FontDesc,
        color: &RGBColor,
    ) -> DrawResult<DB> {
        self.text_impl(s, pos, f, color, (HPos::Center, VPos::Center), true)
    }

    fn text_impl(
        &self,
        s: &str,
        pos: (i32, i32),
        f: &FontDesc,
        color: &RGBColor,
        (h, v): (HPos, VPos),
        up: bool,
    ) -> DrawResult<DB> {
        let fonts = match raster_fonts() {
            Some(fonts) if self.raster => fonts,
            _ => {
                let f = if up {
                    f.transform(FontTransform::Rotate270)
                } else {
                    f.clone()
                };
                let style = f.color(color).pos(Pos::new(h, v));
                return self.area.draw(&Text::new(s.to_string(), pos, style));
            }
        };
        let font = if matches!(f.get_style(), FontStyle::Bold) {
            &fonts.bold
        } else {
            &fonts.regular
        };
        let sf = font.as_scaled(PxScale::from(f.get_size() as f32));
        let mut caret = 0f32;
        let mut prev = None;
        let mut glyphs = Vec::new();
        for ch in s.chars() {
            let id = sf.glyph_id(ch);
            if let Some(p) = prev {
                caret += sf.kern(p, id);
            }
            glyphs.push(id.with_scale_and_position(sf.scale(), point(caret, sf.ascent())));
            caret += sf.h_advance(id);
            prev = Some(id);
        }
        let height = sf.ascent() - sf.descent();
        let dx = match h {
            HPos::Left => 0.0,
            HPos::Center => -caret / 2.0,
            HPos::Right => -caret,
        };
        let dy = match v {
            VPos::Top => 0.0,
            VPos::Center => -height / 2.0,
            VPos::Bottom => -height,
        };
        // Whole-pixel offsets: rounding each pixel's fractional position instead would skip a
        // row where the coordinates change sign (round() goes away from zero).
        let (dx, dy) = (dx.round() as i32, dy.round() as i32);
        let mut pixels: Vec<(i32, i32, f32)> = Vec::new();
        for g in glyphs {
            if let Some(outline) = sf.outline_glyph(g) {
                let b = outline.px_bounds();
                outline.draw(|x, y, cov| {
                    let tx = b.min.x as i32 + x as i32 + dx;
                    let ty = b.min.y as i32 + y as i32 + dy;
                    pixels.push((tx, ty, cov.min(1.0)));
                });
            }
        }
        for (x, y, cov) in pixels {
            if cov <= 0.0 {
                continue;
            }
            let p = if up {
                (pos.0 + y, pos.1 - x)
            } else {
                (pos.0 + x, pos.1 + y)
            };
            self.area.draw_pixel(p, &color.mix(f64::from(cov)))?;
        }
        Ok(())
    }
}

pub fn font(size: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::Name(FONT), size, FontStyle::Normal)
}

pub fn bold(size: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::Name(FONT), size, FontStyle::Bold)
}

pub const CENTER: (HPos, VPos) = (HPos::Center, VPos::Center);
pub const LEFT: (HPos, VPos) = (HPos::Left, VPos::Center);
pub const RIGHT: (HPos, VPos) = (HPos::Right, VPos::Center);

pub const GREY: RGBColor = RGBColor(0x42, 0x42, 0x42);
pub const SUBTLE: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// Width of `text` in pixels; a rough estimate if the font cannot measure it, because layout
/// must not fail over a label.
pub fn text_width(f: &FontDesc, text: &str) -> u32 {
    f.box_size(text)
        .map(|(w, _)| w)
        .unwrap_or((text.chars().count() as f64 * f.get_size() * 0.6) as u32)
}
