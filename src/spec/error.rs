//! Sweep-file and CLI-value errors that point at the offending text: file, line, column, what
//! was found and what was expected. Rendered with miette's graphical handler.

use miette::{Diagnostic, NamedSource, SourceSpan};
use std::ops::Range;
use std::sync::Arc;

#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{}", self.headline())]
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
    /// The file could not be read at all (missing, too large): no line or column to name. An
    /// empty file that was read has them (1:1).
    whole_file: bool,
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
            whole_file: false,
        }
    }

    /// An error about the file as a whole, which could not be read (missing, not a regular
    /// file, too large): named without a line or column.
    pub fn whole_file(file: &str, message: impl Into<String>) -> SpecError {
        SpecError {
            whole_file: true,
            ..SpecError::at(file, &Arc::new(String::new()), 0..0, message)
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

    /// A command-line argument (`--axis c_in=abc`) rather than a file: its "file" is the flag.
    fn is_argument(&self) -> bool {
        self.file.starts_with("--")
    }

    /// `sweep.toml:4:9: message`, or for an argument `--axis c_in=abc: message` (no invented
    /// file name or line for text the user typed on the command line).
    fn headline(&self) -> String {
        if self.is_long_argument() {
            format!("{}:1:{}: {}", self.file, self.arg_column(), self.message)
        } else if self.is_argument() {
            format!("{} {}: {}", self.file, self.src.inner(), self.message)
        } else if self.whole_file {
            // A file that could not be read at all: no line or column to name.
            format!("{}: {}", self.file, self.message)
        } else {
            format!("{}:{}:{}: {}", self.file, self.line, self.col, self.message)
        }
    }

    /// An argument too long to repeat whole: named by its column, shown cut around the error.
    fn is_long_argument(&self) -> bool {
        self.is_argument() && self.src.inner().chars().count() > MAX_SHOWN_ARGUMENT
    }

    /// The 1-based column (in characters) of the error in a command-line argument.
    fn arg_column(&self) -> usize {
        let text = self.src.inner();
        let at = self.span.offset().min(text.len());
        text.get(..at).map_or(0, |t| t.chars().count()) + 1
    }

    /// `  --axis:1:75 …1,1,1,xxxx…` with carets under the error: [`ARGUMENT_CONTEXT`]
    /// characters either side of it.
    fn cut_argument_excerpt(&self) -> String {
        let chars: Vec<char> = self.src.inner().chars().collect();
        let at = self.arg_column() - 1;
        let width = self.snippet().chars().count().clamp(1, ARGUMENT_CONTEXT);
        let from = at.saturating_sub(ARGUMENT_CONTEXT);
        let to = (at + width + ARGUMENT_CONTEXT).min(chars.len());
        let mut shown: String = if from > 0 {
            "…".into()
        } else {
            String::new()
        };
        let lead = shown.chars().count() + (at - from);
        shown.extend(&chars[from..to]);
        if to < chars.len() {
            shown.push('…');
        }
        let label = format!("{}:1:{}", self.file, at + 1);
        let pad = " ".repeat(label.chars().count() + 1 + lead);
        let mut out = format!("  {label} {shown}\n  {pad}{}", "^".repeat(width));
        if let Some(help) = &self.help {
            out.push_str(&format!("\n  help: {help}"));
        }
        out
    }

    /// The whole text the error points into (a sweep file's, or a command-line argument).
    pub fn source_text(&self) -> &str {
        self.src.inner()
    }

    /// The offending text itself.
    pub fn snippet(&self) -> String {
        let (o, l) = (self.span.offset(), self.span.len());
        self.src.inner().get(o..o + l).unwrap_or("").to_string()
    }

    /// The report as `main` prints it: with the source excerpt drawn in a box on a terminal,
    /// as plain lines (the source line and carets under the error) when stderr is a file or a
    /// pipe, so logs and CI output stay clean.
    pub fn render(&self) -> String {
        use std::io::IsTerminal as _;
        self.render_for(std::io::stderr().is_terminal())
    }

    /// `render` for a terminal or not. A line longer than [`MAX_SHOWN_LINE`] is not echoed
    /// (the renderer cannot draw past column 65535, and a 400 KB line helps nobody): the message
    /// and a short excerpt of the offending text.
    pub fn render_for(&self, terminal: bool) -> String {
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
        if self.is_long_argument() {
            return format!("error: {self}\n{}", self.cut_argument_excerpt());
        }
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
        // An argument is one line the user just typed: shown with carets under it, never in a
        // box headed by an invented `--axis:1:6` location.
        let excerpt = if terminal && !self.is_argument() {
            self.boxed_excerpt()
        } else {
            Some(self.plain_excerpt(
                text.get(line_start..line_end).unwrap_or(""),
                at - line_start,
            ))
        };
        match excerpt {
            Some(x) => format!("error: {self}\n{x}"),
            None => format!("error: {self}"),
        }
    }

    /// miette's drawing of the source, from its `╭─[` header on (the message is on the
    /// `error:` line already and is not repeated).
    fn boxed_excerpt(&self) -> Option<String> {
        let mut out = String::new();
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor());
        handler.render_report(&mut out, self).ok()?;
        let excerpt = out
            .find('\u{256d}')
            .and_then(|i| out[..i].rfind('\n').map(|l| &out[l + 1..]))
            .unwrap_or(&out);
        Some(excerpt.trim_end().to_string())
    }

    /// `  4 | c_in=[1,"a"]` (or for an argument `  --axis c_in=abc`) and carets under the error.
    fn plain_excerpt(&self, line: &str, offset_in_line: usize) -> String {
        let before = line.get(..offset_in_line).unwrap_or("");
        let indent: String = before
            .chars()
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let width = self
            .snippet()
            .lines()
            .next()
            .map_or(1, |l| l.chars().count().max(1));
        let carets = "^".repeat(width);
        let mut out = if self.is_argument() {
            let pad = " ".repeat(self.file.chars().count() + 1);
            format!("  {} {line}\n  {pad}{indent}{carets}", self.file)
        } else {
            let number = self.line.to_string();
            let pad = " ".repeat(number.len());
            format!("  {number} | {line}\n  {pad} | {indent}{carets}")
        };
        if let Some(help) = &self.help {
            out.push_str(&format!("\n  help: {help}"));
        }
        out
    }
}

/// A command-line argument longer than this (in characters) is not repeated whole: its error
/// names `--axis:1:COLUMN` and shows the text around the error.
pub const MAX_SHOWN_ARGUMENT: usize = 120;
/// Characters shown either side of the error in a long argument.
const ARGUMENT_CONTEXT: usize = 30;

/// Lines longer than this are not echoed in an error report.
pub const MAX_SHOWN_LINE: usize = 1000;
