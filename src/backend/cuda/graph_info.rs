//! What a captured sample graph holds, for the worker's log: with `ROCSWEEP_DEBUG_GRAPH` set,
//! each sample graph unlike the one before is described there (its nodes per call by type, the
//! kernels by name, grid and block), so that a library adding a memset or a second kernel per
//! call, or a kernel other than the one a peer runs, can be seen without a profiler. Reading
//! it never fails a sample: what the driver will not say is left out of the line.

use cudarc::driver::sys as dsys;
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::sync::{Mutex, OnceLock};

/// The environment variable that turns the description on.
pub const ENV: &str = "ROCSWEEP_DEBUG_GRAPH";

/// The last line written, so that a unit's samples (the same graph each time) log once.
static LAST: Mutex<String> = Mutex::new(String::new());

/// Writes `graph`'s description (`k` calls captured) to stderr when `ENV` was set at the first
/// call (read once per worker) and it differs from the last one written.
pub fn log(graph: dsys::CUgraph, k: usize) {
    static ON: OnceLock<bool> = OnceLock::new();
    if !*ON.get_or_init(|| std::env::var_os(ENV).is_some()) {
        return;
    }
    let line = describe(graph, k);
    let Ok(mut last) = LAST.lock() else {
        return;
    };
    if *last != line {
        crate::noteln!("{line}");
        *last = line;
    }
}

fn describe(graph: dsys::CUgraph, k: usize) -> String {
    let nodes = nodes(graph);
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut kernels: Vec<(String, usize)> = Vec::new();
    for &n in &nodes {
        let mut t = dsys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: a node of a live graph; `t` is written by the driver.
        if unsafe { dsys::cuGraphNodeGetType(n, &mut t) } != dsys::CUresult::CUDA_SUCCESS {
            continue;
        }
        let kind = format!("{t:?}")
            .replace("CU_GRAPH_NODE_TYPE_", "")
            .to_lowercase();
        *kinds.entry(kind).or_default() += 1;
        if t == dsys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL {
            let name = kernel(n);
            match kernels.iter_mut().find(|(k, _)| *k == name) {
                Some(e) => e.1 += 1,
                None => kernels.push((name, 1)),
            }
        }
    }
    let per_call = |c: usize| {
        if k > 0 && c.is_multiple_of(k) {
            format!("{}", c / k)
        } else {
            format!("{c}/{k}")
        }
    };
    let kinds: Vec<String> = kinds
        .iter()
        .map(|(t, c)| format!("{t} {}", per_call(*c)))
        .collect();
    let kernels: Vec<String> = kernels
        .iter()
        .map(|(name, c)| format!("{name} x{}", per_call(*c)))
        .collect();
    format!(
        "rocsweep graph: {k} calls, {} nodes; per call: {}; kernels per call: {}",
        nodes.len(),
        kinds.join(", "),
        kernels.join("; ")
    )
}

fn nodes(graph: dsys::CUgraph) -> Vec<dsys::CUgraphNode> {
    let mut n = 0usize;
    // SAFETY: a live graph; with a null array the driver writes the count only.
    if unsafe { dsys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut n) }
        != dsys::CUresult::CUDA_SUCCESS
    {
        return Vec::new();
    }
    let mut v: Vec<dsys::CUgraphNode> = vec![std::ptr::null_mut(); n];
    // SAFETY: `v` has room for `n` nodes; the driver writes at most `n` and updates `n`.
    if unsafe { dsys::cuGraphGetNodes(graph, v.as_mut_ptr(), &mut n) }
        != dsys::CUresult::CUDA_SUCCESS
    {
        return Vec::new();
    }
    v.truncate(n);
    v
}

/// A kernel node's kernel: its name (through its function, or its library kernel), grid and
/// block.
fn kernel(node: dsys::CUgraphNode) -> String {
    // SAFETY: a plain-data struct the driver fills; zeroed is a valid "nothing yet".
    let mut p: dsys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
    // SAFETY: a kernel node of a live graph; `p` is written by the driver.
    if unsafe { dsys::cuGraphKernelNodeGetParams_v2(node, &mut p) } != dsys::CUresult::CUDA_SUCCESS
    {
        return "?".into();
    }
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: the handles come from the driver; it writes a pointer to a string it owns.
    let rc = unsafe {
        if !p.func.is_null() {
            dsys::cuFuncGetName(&mut name, p.func)
        } else {
            dsys::cuKernelGetName(&mut name, p.kern)
        }
    };
    let name = if rc == dsys::CUresult::CUDA_SUCCESS && !name.is_null() {
        // SAFETY: a NUL-terminated string owned by the driver, alive with the module.
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    } else {
        "?".into()
    };
    format!(
        "{name} <<<{}x{}x{}, {}x{}x{}>>>",
        p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ
    )
}
