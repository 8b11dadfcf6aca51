//! The import graph of `src/` has no cycle (issue 41): every file's `crate::` / `super::` /
//! `self::` paths (in `use` lines and in code) are resolved to the file of the module they name,
//! and a loop of files that reach each other fails this test, naming the files and the imports
//! that tie them. Tests inside a file (`#[cfg(test)] mod ...`) and test-only files are left out:
//! a test may import what it checks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every library source file by its module path (`src/a/b.rs` and `src/a/b/mod.rs` are
/// `a::b`; `src/lib.rs` is the root, `[]`).
fn modules(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap();
            let mut segs: Vec<String> = rel
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            let file = segs.pop().unwrap();
            let stem = file.trim_end_matches(".rs");
            if segs.is_empty() && stem == "main" {
                continue; // the binary: it imports the library, never the other way round
            }
            if stem == "tests" || stem.ends_with("_tests") {
                continue;
            }
            if !(stem == "mod" || (segs.is_empty() && stem == "lib")) {
                segs.push(stem.to_string());
            }
            out.insert(segs, p);
        }
    }
    out
}

/// The file's text without comments and without its test modules.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("mod ") || n.contains(" mod "))
        {
            break;
        }
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The paths a use-tree names: `a::{b, c::{d, e}}` -> `a::b`, `a::c::d`, `a::c::e`.
fn flatten(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim().trim_end_matches("::");
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let base = join(prefix, head);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    flatten(&inner[start..i], &base, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        flatten(&inner[start..], &base, out);
    } else if !tree.is_empty() {
        let name = tree.split(" as ").next().unwrap_or(tree).trim();
        let name = if name == "self" { "" } else { name };
        out.push(join(prefix, name));
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}::{b}"),
    }
}

/// Every path in the code that starts at `crate`, `super` or `self`.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    // `use` statements, whole (they may span lines and hold groups).
    let mut rest = code;
    let mut plain = String::new();
    while let Some(i) = find_word(rest, "use ") {
        plain.push_str(&rest[..i]);
        let end = rest[i..].find(';').map_or(rest.len(), |e| i + e);
        flatten(&rest[i + 4..end], "", &mut out);
        rest = &rest[(end + 1).min(rest.len())..];
    }
    plain.push_str(rest);
    // Paths in code: `crate::a::b(..)`, `super::x::Y`, `child::f()`: a word followed by `::`
    // that does not itself follow `::` (absolute() keeps those that name a module of ours).
    let bytes = plain.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !ident(bytes[i]) || (i > 0 && (ident(bytes[i - 1]) || bytes[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let len = plain[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(plain.len() - i);
        let path = plain[i..i + len].trim_end_matches(':');
        if path.contains("::") {
            out.push(path.to_string());
        }
        i += len.max(1);
    }
    out
}

/// `word` at the start of a statement (after a line start, `pub`, or `pub(crate)`).
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(word).map(|i| from + i) {
        let before = text[..i].trim_end_matches([' ', '\t']);
        if before.is_empty()
            || before.ends_with('\n')
            || before.ends_with("pub")
            || before.ends_with(')')
            || before.ends_with('{')
            || before.ends_with(';')
        {
            return Some(i);
        }
        from = i + word.len();
    }
    None
}

/// A path's segments made absolute from `module` (the importing file's module path); None for
/// a path that does not start at `crate`, `super`, `self` or a child module of `module`
/// (another crate's, or a type's `Status::Ok`).
fn absolute(
    path: &str,
    module: &[String],
    mods: &BTreeMap<Vec<String>, PathBuf>,
) -> Option<Vec<String>> {
    let mut segs = path.split("::").filter(|s| !s.is_empty());
    let mut at: Vec<String> = match segs.next()? {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        child => {
            let mut m = module.to_vec();
            m.push(child.to_string());
            if !mods.contains_key(&m) {
                return None;
            }
            m
        }
    };
    for s in segs {
        if s == "super" {
            at.pop()?;
        } else {
            at.push(s.to_string());
        }
    }
    Some(at)
}

#[test]
fn no_two_files_of_src_import_each_other_through_any_loop() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    // file -> file it imports -> the paths that import it
    let mut edges: BTreeMap<&PathBuf, BTreeMap<&PathBuf, BTreeSet<String>>> = BTreeMap::new();
    for (module, file) in &mods {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for p in paths(&code) {
            let Some(abs) = absolute(&p, module, &mods) else {
                continue;
            };
            // The longest prefix that is a file; the crate root declares modules only.
            let target = (1..=abs.len())
                .rev()
                .find_map(|k| mods.get(&abs[..k]).filter(|_| k > 0));
            if let Some(t) = target
                && t != file
            {
                edges
                    .entry(file)
                    .or_default()
                    .entry(t)
                    .or_default()
                    .insert(p);
            }
        }
    }
    let cycles = strongly_connected(&edges);
    let rel = |p: &PathBuf| p.strip_prefix(&src).unwrap().display().to_string();
    let mut msg = String::new();
    for c in &cycles {
        msg.push_str(&format!(
            "\nloop of {} files: {}\n",
            c.len(),
            c.iter().map(|f| rel(f)).collect::<Vec<_>>().join(", ")
        ));
        for a in c {
            for (b, why) in edges.get(a).into_iter().flatten() {
                if c.contains(b) {
                    let why: Vec<&str> = why.iter().map(String::as_str).take(3).collect();
                    msg.push_str(&format!("  {} -> {}: {}\n", rel(a), rel(b), why.join(", ")));
                }
            }
        }
    }
    assert!(cycles.is_empty(), "src/ has import loops:{msg}");
}

/// Tarjan's strongly connected components of more than one file.
fn strongly_connected<'a>(
    edges: &BTreeMap<&'a PathBuf, BTreeMap<&'a PathBuf, BTreeSet<String>>>,
) -> Vec<Vec<&'a PathBuf>> {
    struct State<'a> {
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<&'a PathBuf>>,
    }
    fn visit<'a>(
        v: &'a PathBuf,
        edges: &BTreeMap<&'a PathBuf, BTreeMap<&'a PathBuf, BTreeSet<String>>>,
        s: &mut State<'a>,
    ) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        for w in edges.get(v).into_iter().flat_map(|m| m.keys()) {
            if !s.index.contains_key(w) {
                visit(w, edges, s);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(v, edges, &mut s);
        }
    }
    s.out
}

#[test]
fn the_parser_reads_grouped_uses_and_paths_in_code() {
    let code = "use crate::a::{b, c::{D, e as f}, self};\npub(crate) use super::g::H;\nfn x() { crate::i::j(); let y = super::k::L; }\n";
    let mut p = paths(code);
    p.sort();
    assert_eq!(
        p,
        vec![
            "crate::a",
            "crate::a::b",
            "crate::a::c::D",
            "crate::a::c::e",
            "crate::i::j",
            "super::g::H",
            "super::k::L"
        ]
    );
    let m = vec!["x".to_string(), "y".to_string()];
    let mut mods = BTreeMap::new();
    mods.insert(
        vec!["x".to_string(), "y".to_string(), "c".to_string()],
        PathBuf::new(),
    );
    assert_eq!(
        absolute("super::z::W", &m, &mods).unwrap(),
        vec!["x", "z", "W"]
    );
    assert_eq!(absolute("self::q", &m, &mods).unwrap(), vec!["x", "y", "q"]);
    assert_eq!(
        absolute("c::f", &m, &mods).unwrap(),
        vec!["x", "y", "c", "f"]
    );
    assert_eq!(absolute("Status::Ok", &m, &mods), None);
}
