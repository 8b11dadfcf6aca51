//! Text that is never cut: wrapping to a width, and figure titles and subtitles drawn as the
//! lines they wrap to.

use super::canvas::{CENTER, Canvas, DrawResult, SUBTLE, bold, font, text_width};
use plotters::prelude::*;

/// Breaks `text` into lines of at most `max_w` pixels, so that nothing is cut: first between
/// the parts of a title (` · `, which then starts the next line), then between words where a
/// part is too wide, and between characters where a word is. No character but the spaces at
/// the breaks is lost.
pub fn wrap(f: &FontDesc, text: &str, max_w: u32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for (i, part) in text.split(" · ").enumerate() {
        let sep = if i == 0 { "" } else { "· " };
        let joined = if line.is_empty() {
            format!("{sep}{part}")
        } else {
            format!("{line} {sep}{part}")
        };
        if text_width(f, &joined) <= max_w {
            line = joined;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        let alone = format!("{sep}{part}");
        let mut pieces = wrap_words(f, &alone, max_w);
        line = pieces.pop().unwrap_or_default();
        lines.extend(pieces);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `wrap` within one part: between words, and between characters where a word is too wide.
fn wrap_words(f: &FontDesc, text: &str, max_w: u32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut words = text.split(' ').filter(|w| !w.is_empty()).peekable();
    while let Some(first) = words.next() {
        // A separator stays with the word after it: no line ends on `·`.
        let word = match (first, words.peek()) {
            ("·", Some(next)) => {
                let w = format!("· {next}");
                words.next();
                w
            }
            _ => first.to_string(),
        };
        let word = word.as_str();
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if text_width(f, &candidate) <= max_w {
            line = candidate;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        for ch in word.chars() {
            line.push(ch);
            if text_width(f, &line) > max_w && line.chars().count() > 1 {
                line.pop();
                lines.push(std::mem::take(&mut line));
                line.push(ch);
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Each line of a wrapped figure title past the first moves everything below down this much.
pub const TITLE_LINE_H: u32 = 26;
/// Likewise for each subtitle line past the first.
pub const SUBTITLE_LINE_H: u32 = 20;
const TITLE_PX: f64 = 20.0;
const SUBTITLE_PX: f64 = 14.0;

/// A figure title as the lines it takes in a figure `width` pixels wide.
pub fn title_lines(text: &str, width: u32) -> Vec<String> {
    wrap(&bold(TITLE_PX), text, width.saturating_sub(20))
}

/// A subtitle line as the lines it takes in a figure `width` pixels wide.
pub fn subtitle_lines(text: &str, width: u32) -> Vec<String> {
    wrap(&font(SUBTITLE_PX), text, width.saturating_sub(40))
}

/// Extra height a wrapped title and subtitle take over one line each.
pub fn head_extra(title: &str, subtitle: &str, width: u32) -> u32 {
    TITLE_LINE_H * (title_lines(title, width).len() as u32).saturating_sub(1)
        + SUBTITLE_LINE_H * (subtitle_lines(subtitle, width).len() as u32).saturating_sub(1)
}

/// The figure's title lines (from the top, 26 pixels apart) and its subtitle lines under them.
pub fn head<DB: DrawingBackend>(
    c: &Canvas<DB>,
    title: &[String],
    subtitle: &[String],
    width: u32,
) -> DrawResult<DB> {
    let (tf, sf) = (bold(TITLE_PX), font(SUBTITLE_PX));
    let x = width as i32 / 2;
    for (i, line) in title.iter().enumerate() {
        let y = 22 + (TITLE_LINE_H as usize * i) as i32;
        c.text(line, (x, y), &tf, &BLACK, CENTER)?;
    }
    let below = (TITLE_LINE_H as usize * title.len().saturating_sub(1)) as i32;
    for (i, line) in subtitle.iter().enumerate() {
        let y = 50 + below + (SUBTITLE_LINE_H as usize * i) as i32;
        c.text(line, (x, y), &sf, &SUBTLE, CENTER)?;
    }
    Ok(())
}

/// The figure's title, centred in the top 40 pixels, wrapped where it is wider than the figure
/// (with one line, as `head` draws it).
pub fn title<DB: DrawingBackend>(c: &Canvas<DB>, text: &str, width: u32) -> DrawResult<DB> {
    head(c, &title_lines(text, width), &[], width)
}

#[cfg(test)]
mod tests {
    use super::super::ensure_fonts;
    use super::*;

    #[test]
    fn wrap_keeps_every_word_and_fits_every_line() {
        ensure_fonts().unwrap_or_else(|e| panic!("{e}"));
        let f = bold(15.0);
        let text =
            "MIOPEN_DEBUG_CONV_GEMM=0 MIOPEN_FIND_MODE=NORMAL · solver ConvBinWinogradRxSf2x3g1";
        for width in [120, 200, 350, 2000] {
            let lines = wrap(&f, text, width);
            for l in &lines {
                assert!(text_width(&f, l) <= width, "`{l}` in {width} px");
                assert!(
                    !l.ends_with('·'),
                    "a line does not end on its separator: {l}"
                );
            }
            let joined: String = lines.concat().chars().filter(|c| *c != ' ').collect();
            let want: String = text.chars().filter(|c| *c != ' ').collect();
            assert_eq!(joined, want, "{width} px: {lines:?}");
        }
        assert_eq!(wrap(&f, text, 2000), vec![text.to_string()]);
        assert_eq!(wrap(&f, "", 100), vec![String::new()]);
    }
}
