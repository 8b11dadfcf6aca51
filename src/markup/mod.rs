//! What reports are written in: one escaper per format (`html::escape`, `markdown::escape`,
//! `shell::quote`, `toml::toml_string`), used by every writer (report, compare, recommend, repro,
//! import, a sequence's files), the one table model (`table`) that the Markdown and HTML writers
//! render, the stand-alone torch scripts (`torch_script`) and the PNG writer every picture goes
//! through (`png`). Text from libraries, worker logs
//! and run directories may contain anything.

pub mod html;
pub mod markdown;
pub mod png;
pub mod shell;
pub mod table;
pub mod toml;
pub mod torch_script;
