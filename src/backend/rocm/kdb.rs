//! The kernel gate: what a tree lacks for the device's target (`rocm_tree::kernels`) applied to
//! the opened libraries once the target is known.

use crate::rocm_tree::kernels::check;

/// rocBLAS and hipBLASLt without kernels for the device's `arch` become missing libraries: the
/// real ones would abort the worker at their first call.
pub(super) fn gate(libs: &mut super::libs::Libs, arch: &str) {
    let rb = libs.rocblas.as_ref().ok().and_then(|r| {
        check("rocBLAS", &r.path, "ROCBLAS_TENSILE_LIBPATH", arch)
            .err()
            .map(|why| format!("rocBLAS ({}) {why}", r.path))
    });
    if let Some(why) = rb {
        libs.rocblas = Err(why);
    }
    let lt = libs.hipblaslt.as_ref().ok().and_then(|l| {
        check("hipBLASLt", &l.path, "HIPBLASLT_TENSILE_LIBPATH", arch)
            .err()
            .map(|why| format!("hipBLASLt ({}) {why}", l.path))
    });
    if let Some(why) = lt {
        libs.hipblaslt = Err(why);
    }
}
