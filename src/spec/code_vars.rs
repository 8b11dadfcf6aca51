//! Variables that make a process load or run code of the value's choosing (issue 40, S1): a
//! sweep file that sets them is code, like a Makefile, and `run` names each before its first
//! unit.

use super::expand::EnvCombo;

/// The dynamic loader's, Python's and other interpreters' start-up hooks.
const PREFIXES: &[&str] = &["LD_", "DYLD_", "PYTHON", "PERL5", "RUBY"];
/// The programs libraries start (a browser, an editor), shells' start-up files, and the GPU
/// runtimes' tool libraries.
const NAMES: &[&str] = &[
    "BROWSER",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "BASH_ENV",
    "ENV",
    "NODE_OPTIONS",
    "JAVA_TOOL_OPTIONS",
    "GCONV_PATH",
    "OPENSSL_CONF",
    "HSA_TOOLS_LIB",
    "ROCP_TOOL_LIBRARIES",
    "ROCPROFILER_LIBRARY",
    "CUDA_INJECTION64_PATH",
    "NVTX_INJECTION64_PATH",
];

/// Whether `name` makes a process load or run code of the value's choosing.
pub fn loads_code(name: &str) -> bool {
    NAMES.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Every such variable the combinations set, once each, as `NAME=VALUE` (the value
/// shell-quoted, a credential's masked), in the sweep's order.
pub fn set_by(combos: &[EnvCombo]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for c in combos {
        for (k, v) in &c.vars {
            if loads_code(k) {
                let shown = format!(
                    "{k}={}",
                    crate::markup::shell::quote(crate::results::manifest::shown(k, v))
                );
                if !seen.contains(&shown) {
                    seen.push(shown);
                }
            }
        }
    }
    seen
}
