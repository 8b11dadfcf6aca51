//! A bounded fuzz of the sweep loader, the filter parser and `--axis` overrides (proptest, run
//! by CI like every test): the corpus is tests/malformed plus the committed sweeps, mutated by
//! byte flips, insertions, deletions and truncations, and filters and overrides built from the
//! grammar's own tokens. Nothing may panic or overflow the stack (an overflow aborts the test
//! binary); every input is either a sweep or a located error.

use proptest::prelude::*;
use rocsweep::spec;
use std::path::Path;

fn corpus() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["tests/malformed", "sweeps"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                files.push(std::fs::read(&p).unwrap());
            }
        }
    }
    files.sort();
    assert!(files.len() >= 80, "the corpus holds {} files", files.len());
    files
}

/// Loads `text` and, when it loads, expands a few cases (filters are evaluated there).
fn load(text: &str, overrides: &[String]) {
    // A text with [[step]] tables is a sequence (issue 43): its loader gets the same input.
    if spec::sequence::is_sequence(text) {
        match spec::sequence::load_str("fuzz.toml", text, overrides) {
            Ok(seq) => {
                assert!(!seq.steps.is_empty() && seq.order().len() <= spec::sequence::MAX_STEPS)
            }
            Err(e) => assert!(e.line >= 1 && e.col >= 1, "{e}"),
        }
    }
    match spec::load_str("fuzz.toml", text, overrides) {
        Ok(sweep) => {
            let _ = sweep.env_combo_count();
            for c in sweep.cases().take(8) {
                let _ = c;
            }
        }
        Err(e) => {
            assert!(e.line >= 1 && e.col >= 1, "{e}");
            let _ = e.render();
        }
    }
}

#[derive(Clone, Debug)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Delete),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    "!",
    "-",
    "+",
    "*",
    "/",
    "%",
    "&&",
    "||",
    "and",
    "or",
    "not",
    "<",
    "<=",
    ">",
    ">=",
    "==",
    "!=",
    "c_in",
    "c_out",
    "h",
    "w",
    "dtype",
    "solver",
    "0",
    "1",
    "16",
    "9223372036854775807",
    "1e308",
    "\"f16\"",
    "\"",
    "true",
    " ",
    "m",
    "n",
    "k",
];

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 4000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mutated_sweep_files_load_or_fail_with_a_place(
        pick in any::<usize>(),
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let files = corpus();
        let mut bytes = files[pick % files.len()].clone();
        for e in edits {
            let n = bytes.len().max(1);
            match e {
                Edit::Flip(i, b) if !bytes.is_empty() => bytes[i % n] = b,
                Edit::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
                Edit::Delete(i) if !bytes.is_empty() => {
                    bytes.remove(i % n);
                }
                Edit::Truncate(i) => bytes.truncate(i % (bytes.len() + 1)),
                _ => {}
            }
        }
        if let Ok(text) = String::from_utf8(bytes) {
            load(&text, &[]);
        }
    }

    #[test]
    fn filters_from_grammar_tokens_compile_or_fail_with_a_place(
        toks in proptest::collection::vec(0..TOKENS.len(), 0..80),
    ) {
        let filter: String = toks.iter().map(|&i| TOKENS[i]).collect::<Vec<_>>().join(" ");
        let text = format!(
            "name = \"f\"\nop = \"conv2d\"\nbackend = \"cpu\"\ndrop = [{filter:?}]\n[axes]\nc_in = [1, 16]\nc_out = [8, 16]\nh = [4, 8]\n"
        );
        load(&text, &[]);
    }

    #[test]
    fn overrides_from_grammar_tokens_apply_or_fail_with_a_place(
        name in 0..TOKENS.len(),
        values in proptest::collection::vec(
            prop_oneof![
                Just("pow2(1..=64)".to_string()),
                Just("range(1..=9, step=2)".to_string()),
                Just("99999999999999999999".to_string()),
                "[a-z0-9(),.=_ -]{0,12}",
            ],
            0..5,
        ),
    ) {
        let arg = format!("{}={}", TOKENS[name], values.join(","));
        let text = "name = \"o\"\nop = \"conv2d\"\nbackend = \"cpu\"\n[axes]\nc_in = [16, 32]\n[zip.s]\nh = [8, 16]\nkernel = [1, 3]\n";
        load(text, &[arg]);
    }
}
