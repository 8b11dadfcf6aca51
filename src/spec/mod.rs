//! Sweep files: parsing with spans, CLI axis overrides, and streaming expansion into cases.
//!
//! Every error names the file, line and column of the offending text and what was expected; a
//! sweep that loads is valid all the way down (axis values checked against the op's parameters,
//! filters type-checked), so expansion itself cannot fail.

pub mod axis;
pub mod cases;
pub mod code_vars;
pub mod error;
pub mod expand;
pub mod filter;
mod load;
pub mod model;
mod overrides;
pub mod policy;
mod reader;
pub mod secret;
pub mod sequence;
pub mod sets;

use error::SpecError;
use overrides::apply_overrides;
use reader::Cx;
use std::path::Path;
use std::sync::Arc;

pub use model::*;

/// Reads a sweep file from disk; an unreadable file is reported against its path.
pub fn load(path: &Path, overrides: &[String]) -> Result<Sweep, SpecError> {
    let (shown, text) = read_file(path)?;
    load_str(&shown, &text, overrides)
}

/// A sweep or sequence file's text, refused when it is not a regular file or is too large.
pub fn read_file(path: &Path) -> Result<(String, String), SpecError> {
    let shown = path.display().to_string();
    let fail = |why: String| SpecError::whole_file(&shown, why);
    // Checked before opening: a FIFO or a device would block or never end.
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read sweep file: {e}")))?;
    if !meta.is_file() {
        return Err(fail(
            "cannot read sweep file: not a regular file (a directory, FIFO or device)".into(),
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(fail(format!(
            "the sweep file is {} bytes, more than the limit of {MAX_FILE_BYTES} (4 MiB)",
            meta.len()
        )));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| {
            use std::io::Read;
            // Bounded even if the file grows between the check and the read.
            f.take(MAX_FILE_BYTES + 1).read_to_string(&mut text)
        })
        .map_err(|e| fail(format!("cannot read sweep file: {e}")))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(fail(format!(
            "the sweep file grew past the limit of {MAX_FILE_BYTES} bytes while it was read"
        )));
    }
    Ok((shown, text))
}

/// Parses and validates sweep text; `path` is only used in messages and the manifest.
pub fn load_str(path: &str, text: &str, overrides: &[String]) -> Result<Sweep, SpecError> {
    let src = Arc::new(text.to_string());
    let cx = Cx {
        file: path,
        text: &src,
    };
    let root = cx.parse()?;
    let root_span = root.span();
    let root = root.into_inner();
    cx.deny_unknown(&root, TOP_KEYS, "top level")?;

    let load::Header {
        name,
        description,
        op,
        backends,
    } = load::header(&cx, &root, root_span)?;
    let backend = backends.first().cloned().unwrap_or_else(|| "auto".into());
    let rocm = load::rocm_trees(&cx, &root)?;
    let mut dims = load::dims(&cx, &root, op)?;
    let axis_overrides: Vec<String> = overrides
        .iter()
        .filter(|o| sets::as_set(o).is_none())
        .cloned()
        .collect();
    apply_overrides(op, &mut dims, &axis_overrides)?;
    // Filters resolve names against the axes the sweep actually varies (after overrides).
    let filters = load::filters(&cx, &root, op, &dims)?;
    let env = load::env(&cx, &root)?;
    let env_axes = load::env_axes(&cx, &root, &env)?;
    let (limits, timing, verify) = load::policies(&cx, &root, op, overrides)?;
    let masked_text = load::masked_text(&root, text);

    Ok(Sweep {
        name,
        description,
        op,
        backend,
        backends,
        rocm,
        dims,
        filters,
        env,
        env_axes,
        limits,
        timing,
        verify,
        source: Source::new(path, src.clone()),
        overrides: overrides.to_vec(),
        masked_text,
    })
}
