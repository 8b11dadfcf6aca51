//! What reports are written in: one escaper per format (`html::escape`, `markdown::escape`,
//! `shell::quote`), used by every writer (report, compare, recommend, repro, import), and the
//! one table model (`table`) that the Markdown and HTML writers render. Text from libraries,
//! worker logs and run directories may contain anything.

pub mod html;
pub mod markdown;
pub mod shell;
pub mod table;
