//! Sweep-file and CLI-value errors that point at the offending text: file, line, column, what
//! was found and what was expected. Rendered with miette's graphical handler.

use miette::{Diagnostic, NamedSource, SourceSpan};
use std::ops::Range;
use std::sync::Arc;

#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{file}:{line}:{col}: {message}")]
pub struct SpecError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
    #[source_code]
    src: NamedSource<Arc<String>>,
    #[label("{label}")]
    span: SourceSpan,
    label: String,
    #[help]
    pub help: Option<String>,
}

impl SpecError {
    /// An error at `span` (byte offsets into `text`). Line and column are 1-based; the column
    /// counts characters, as editors do.
    pub fn at(
        file: &str,
        text: &Arc<String>,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> SpecError {
        let start = span.start.min(text.len());
        let end = span.end.clamp(start, text.len());
        let before = text.get(..start).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = text
            .get(line_start..start)
            .map_or(1, |s| s.chars().count() + 1);
        let message = message.into();
        SpecError {
            file: file.to_string(),
            line,
            col,
            // The message is printed once, on the `error:` line; the excerpt only points.
            label: "here".into(),
            message,
            src: NamedSource::new(file, Arc::clone(text)),
            span: (start, end - start).into(),
            help: None,
        }
    }

    /// The same error, said to be in `file`: sweep text stored in a run's manifest is not the
    /// sweep file it came from (which may be fine, or gone).
    pub fn in_file(mut self, file: &str) -> SpecError {
        self.file = file.to_string();
        self.src = NamedSource::new(file, Arc::clone(self.src.inner()));
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> SpecError {
        self.help = Some(help.into());
        self
    }

    /// The offending text itself.
    pub fn snippet(&self) -> String {
        let (o, l) = (self.span.offset(), self.span.len());
        self.src.inner().get(o..o + l).unwrap_or("").to_string()
    }

    /// The full report with the source excerpt, for a terminal. A line longer than
    /// [`MAX_SHOWN_LINE`] is not echoed (the renderer cannot draw past column 65535, and a
    /// 400 KB line helps nobody): the message and a short excerpt of the offending text.
    pub fn render(&self) -> String {
        let text = self.src.inner().as_str();
        let at = self.span.offset().min(text.len());
        let line_start = text
            .get(..at)
            .and_then(|t| t.rfind('\n'))
            .map_or(0, |i| i + 1);
        let line_end = text
            .get(at..)
            .and_then(|t| t.find('\n'))
            .map_or(text.len(), |i| at + i);
        if line_end - line_start > MAX_SHOWN_LINE {
            let snippet: String = self.snippet().chars().take(80).collect();
            return format!(
                "error: {self}\n  (line {} is {} bytes long, not shown; the text at the error starts: {snippet:?})",
                self.line,
                line_end - line_start
            );
        }
        // A file-level error (cannot read it, too large) has no text to show.
        if text.is_empty() {
            return format!("error: {self}");
        }
        let mut out = String::new();
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor());
        if handler.render_report(&mut out, self).is_err() {
            return format!("error: {self}");
        }
        // One message: the `error:` line says it; of miette's report only the source excerpt
        // (from its `╭─[` header) follows, not the message again.
        let excerpt = out
            .find('\u{256d}')
            .and_then(|i| out[..i].rfind('\n').map(|l| &out[l + 1..]))
            .unwrap_or(&out);
        format!("error: {self}\n{}", excerpt.trim_end())
    }
}

/// Lines longer than this are not echoed in an error report.
pub const MAX_SHOWN_LINE: usize = 1000;
