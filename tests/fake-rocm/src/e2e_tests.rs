//! Calls through the exported C functions, as rocsweep makes them, with the built-in healthy
//! model (these tests assume FAKE_ROCM_MODEL is unset).

use crate::capture::*;
use crate::hiprtc::*;
use crate::kernels::*;
use crate::memory::*;
use crate::miopen::*;
use crate::miopen_exports::*;
use std::ffi::{c_char, c_void};
use std::ptr::{null, null_mut};

type Ptr = *mut c_void;

fn dev(bytes: usize) -> Ptr {
    let mut p = null_mut();
    assert_eq!(unsafe { hipMalloc(&mut p, bytes) }, 0);
    p
}

fn upload(p: Ptr, v: &[f32]) {
    assert_eq!(
        unsafe { hipMemcpy(p, v.as_ptr().cast(), v.len() * 4, 1) },
        0
    );
}

fn download(p: Ptr, n: usize) -> Vec<f32> {
    let mut v = vec![0f32; n];
    assert_eq!(unsafe { hipMemcpy(v.as_mut_ptr().cast(), p, n * 4, 2) }, 0);
    v
}

#[test]
fn capture_records_and_replays() {
    unsafe {
        let mut s = null_mut();
        assert_eq!(hipStreamCreate(&mut s), 0);
        let (src, dst) = (dev(16), dev(16));
        upload(src, &[1.0, 2.0, 3.0, 4.0]);
        // Thread-local mode: other tests' synchronous calls on other threads do not interfere.
        assert_eq!(hipStreamBeginCapture(s, 1), 0);
        assert_eq!(hipMemcpyAsync(dst, src, 16, 3, s), 0);
        assert_eq!(
            std::slice::from_raw_parts(dst as *const f32, 4),
            [0.0; 4],
            "recorded, not run"
        );
        let mut g = null_mut();
        assert_eq!(hipStreamEndCapture(s, &mut g), 0);
        let mut exec = null_mut();
        assert_eq!(
            hipGraphInstantiate(&mut exec, g, null_mut(), null_mut(), 0),
            0
        );
        for r in 0..3 {
            upload(src, &[r as f32; 4]);
            assert_eq!(hipGraphLaunch(exec, s), 0);
            assert_eq!(
                download(dst, 4),
                vec![r as f32; 4],
                "replay {r} reads current contents"
            );
        }
        // A synchronous call during a capture fails and invalidates it.
        assert_eq!(hipStreamBeginCapture(s, 1), 0);
        assert_eq!(hipMemcpy(dst, src, 16, 3), 900);
        assert_eq!(hipStreamEndCapture(s, &mut g), 901);
        assert_eq!(hipStreamBeginCapture(s, 2), 0);
        assert_eq!(hipMemcpy(dst, src, 16, 3), 0, "relaxed mode allows it");
        assert_eq!(
            hipStreamSynchronize(s),
            900,
            "but never on the capturing stream"
        );
        let mut status = 0;
        assert_eq!(hipStreamIsCapturing(s, &mut status), 0);
        assert_eq!(status, 2);
        assert_eq!(hipStreamEndCapture(s, &mut g), 901);
        assert!(g.is_null());
        assert_eq!(hipGraphExecDestroy(exec), 0);
        assert_eq!(hipStreamDestroy(s), 0);
        assert_eq!(hipFree(src), 0);
        assert_eq!(hipFree(dst), 0);
        assert_eq!(hipFree(src), 1, "double free is an error, not a crash");
    }
}

#[test]
fn hiprtc_kernels_run_with_rounding_and_grid_limits() {
    let src = [
        include_str!("../../../kernels/prelude.h"),
        include_str!("../../../kernels/cast.cu"),
    ]
    .join("\n")
        + "\0";
    unsafe {
        let mut prog = null_mut();
        let src_ptr = src.as_ptr().cast::<c_char>();
        assert_eq!(
            hiprtcCreateProgram(&mut prog, src_ptr, null(), 0, null(), null()),
            0
        );
        assert_eq!(hiprtcCompileProgram(prog, 0, null()), 0);
        let mut n = 0;
        assert_eq!(hiprtcGetCodeSize(prog, &mut n), 0);
        let mut code = vec![0u8; n];
        assert_eq!(hiprtcGetCode(prog, code.as_mut_ptr().cast()), 0);
        let mut module = null_mut();
        assert_eq!(hipModuleLoadData(&mut module, code.as_ptr().cast()), 0);
        let mut f = null_mut();
        assert_eq!(
            hipModuleGetFunction(&mut f, module, c"cast_f32_f16".as_ptr()),
            0
        );
        assert_eq!(
            hipModuleGetFunction(&mut f, module, c"conv_fwd_ref_f32".as_ptr()),
            500
        );
        assert_eq!(
            hipModuleGetFunction(&mut f, module, c"cast_f32_f16".as_ptr()),
            0
        );
        let (x, y) = (dev(8 * 4), dev(8 * 2));
        // 1 + 2^-11 is a tie between two f16 values: nearest even is 1.0.
        upload(
            x,
            &[1.0 + 2f32.powi(-11), 2.0, -3.0, 65536.0, 5.0, 6.0, 7.0, 8.0],
        );
        let (mut xa, mut ya, mut na) = (x, y, 8usize);
        let mut params: [Ptr; 3] = [
            (&mut xa as *mut Ptr).cast(),
            (&mut ya as *mut Ptr).cast(),
            (&mut na as *mut usize).cast(),
        ];
        // A grid of 2 blocks of 2 threads covers only the first 4 elements.
        let p = params.as_mut_ptr();
        assert_eq!(
            hipModuleLaunchKernel(f, 2, 1, 1, 2, 1, 1, 0, null_mut(), p, null_mut()),
            0
        );
        let out = std::slice::from_raw_parts(y as *const u16, 8);
        let h = |v: f32| half::f16::from_f32(v).to_bits();
        assert_eq!(out[..4], [h(1.0), h(2.0), h(-3.0), h(f32::INFINITY)]);
        assert_eq!(out[4..], [0; 4], "outside the grid");
        assert_eq!(
            hipModuleLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, null_mut(), p, null_mut()),
            9
        );
        assert_eq!(hipModuleUnload(module), 0);
        assert_eq!(hiprtcDestroyProgram(&mut prog), 0);
        assert!(prog.is_null());
    }
}

fn tensor(dims: [i32; 4], strides: Option<[i32; 4]>) -> Ptr {
    let mut d = null_mut();
    unsafe {
        assert_eq!(miopenCreateTensorDescriptor(&mut d), 0);
        let s = strides.as_ref().map_or(null(), |s| s.as_ptr());
        assert_eq!(miopenSetTensorDescriptor(d, 1, 4, dims.as_ptr(), s), 0);
    }
    d
}

#[test]
fn miopen_immediate_writes_through_nhwc_strides() {
    unsafe {
        let mut h = null_mut();
        assert_eq!(miopenCreate(&mut h), 0);
        let mut cd = null_mut();
        assert_eq!(miopenCreateConvolutionDescriptor(&mut cd), 0);
        assert_eq!(miopenInitConvolutionDescriptor(cd, 0, 0, 0, 1, 1, 1, 1), 0);
        // x 1x1x3x3, w 2x1x2x2, y 1x2x2x2 stored NHWC.
        let xd = tensor([1, 1, 3, 3], None);
        let wd = tensor([2, 1, 2, 2], None);
        let yd = tensor([1, 2, 2, 2], Some([8, 1, 4, 2]));
        let (x, w, y) = (dev(36), dev(32), dev(32));
        let small = dev(16);
        upload(x, &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        upload(w, &[1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0]);
        let mut n = 0usize;
        assert_eq!(
            miopenConvolutionForwardGetSolutionCount(h, wd, xd, cd, yd, &mut n),
            0
        );
        assert_eq!(n, 5);
        let id = 85; // naive: no workspace
        let st =
            miopenConvolutionForwardImmediate(h, wd, small, xd, x, cd, yd, y, null_mut(), 0, id);
        assert_eq!(st, 3, "a filter buffer smaller than wDesc is refused");
        let st = miopenConvolutionForwardImmediate(h, wd, w, xd, x, cd, yd, y, null_mut(), 0, id);
        assert_eq!(st, 0);
        // Channel 0: x[i,j] + x[i+1,j+1]; channel 1: 2*x[i+1,j+1]. NHWC: (h, w, c).
        assert_eq!(
            download(y, 8),
            vec![4.0, 8.0, 6.0, 10.0, 10.0, 14.0, 12.0, 16.0]
        );
        let st = miopenConvolutionForwardImmediate(h, wd, w, xd, x, cd, yd, y, null_mut(), 0, 91);
        assert_eq!(st, 3, "solver 91 needs a workspace");
        assert_eq!(miopenDestroy(h), 0);
    }
}

/// conv_fwd_ref in NHWC with groups, stride, padding and dilation against the formula of
/// kernels/conv_ref.cu evaluated directly.
#[test]
fn conv_ref_kernel_nhwc() {
    let src = include_str!("../../../kernels/conv_ref.cu").to_string() + "\0";
    let [n, ci, co, h, wd, kh, kw, ph, pw, sh, sw, dh, dw, g] =
        [2, 4, 6, 5, 6, 2, 3, 1, 0, 2, 1, 1, 2, 2];
    let (oh, ow) = (
        (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1,
        (wd + 2 * pw - dw * (kw - 1) - 1) / sw + 1,
    );
    let cpg = ci / g;
    let x: Vec<f32> = (0..n * h * wd * ci)
        .map(|i| ((i * 5) % 7) as f32 - 3.0)
        .collect();
    let w: Vec<f32> = (0..co * kh * kw * cpg)
        .map(|i| ((i * 3) % 5) as f32 - 2.0)
        .collect();
    let total = n * co * oh * ow;
    let mut want = vec![0f64; total];
    for (i, slot) in want.iter_mut().enumerate() {
        let (c_o, r) = (i % co, i / co);
        let (ox, oy, b) = (r % ow, r / ow % oh, r / (ow * oh));
        let gi = c_o / (co / g);
        for c in 0..cpg {
            for ky in 0..kh {
                for kx in 0..kw {
                    let (iy, ix) = (
                        (oy * sh + ky * dh) as isize - ph as isize,
                        (ox * sw + kx * dw) as isize - pw as isize,
                    );
                    if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                        continue;
                    }
                    let xi = ((b * h + iy as usize) * wd + ix as usize) * ci + gi * cpg + c;
                    let wi = ((c_o * kh + ky) * kw + kx) * cpg + c;
                    *slot += x[xi] as f64 * w[wi] as f64;
                }
            }
        }
    }
    unsafe {
        let mut prog = null_mut();
        assert_eq!(
            hiprtcCreateProgram(&mut prog, src.as_ptr().cast(), null(), 0, null(), null()),
            0
        );
        assert_eq!(hiprtcCompileProgram(prog, 0, null()), 0);
        let mut size = 0;
        assert_eq!(hiprtcGetCodeSize(prog, &mut size), 0);
        let mut code = vec![0u8; size];
        assert_eq!(hiprtcGetCode(prog, code.as_mut_ptr().cast()), 0);
        let (mut module, mut f) = (null_mut(), null_mut());
        assert_eq!(hipModuleLoadData(&mut module, code.as_ptr().cast()), 0);
        assert_eq!(
            hipModuleGetFunction(&mut f, module, c"conv_fwd_ref_f32".as_ptr()),
            0
        );
        let (xd, wdv, yd) = (dev(x.len() * 4), dev(w.len() * 4), dev(total * 8));
        upload(xd, &x);
        upload(wdv, &w);
        let mut ptrs = [xd, wdv, yd];
        let mut ints = [
            n, ci, co, h, wd, kh, kw, ph, pw, sh, sw, dh, dw, g, oh, ow, 1,
        ]
        .map(|v| v as i32);
        let mut params: Vec<Ptr> = ptrs.iter_mut().map(|p| (p as *mut Ptr).cast()).collect();
        params.extend(ints.iter_mut().map(|v| (v as *mut i32).cast::<c_void>()));
        let blocks = total.div_ceil(64) as u32;
        let st = hipModuleLaunchKernel(
            f,
            blocks,
            1,
            1,
            64,
            1,
            1,
            0,
            null_mut(),
            params.as_mut_ptr(),
            null_mut(),
        );
        assert_eq!(st, 0);
        assert_eq!(
            std::slice::from_raw_parts(yd as *const f64, total),
            want.as_slice()
        );
    }
}

/// Compiles `src` with the given (include name, contents) headers; returns the status and log.
fn rtc_compile(src: &str, headers: &[(&str, &str)]) -> (i32, String) {
    let c = |s: &str| std::ffi::CString::new(s).unwrap();
    let src = c(src);
    let names: Vec<_> = headers.iter().map(|(n, _)| c(n)).collect();
    let texts: Vec<_> = headers.iter().map(|(_, t)| c(t)).collect();
    let name_ptrs: Vec<*const c_char> = names.iter().map(|s| s.as_ptr()).collect();
    let text_ptrs: Vec<*const c_char> = texts.iter().map(|s| s.as_ptr()).collect();
    unsafe {
        let mut prog = null_mut();
        assert_eq!(
            hiprtcCreateProgram(
                &mut prog,
                src.as_ptr(),
                c"k.hip".as_ptr(),
                headers.len() as i32,
                text_ptrs.as_ptr(),
                name_ptrs.as_ptr(),
            ),
            0
        );
        let rc = hiprtcCompileProgram(prog, 0, null());
        let mut n = 0;
        assert_eq!(hiprtcGetProgramLogSize(prog, &mut n), 0);
        let mut log = vec![0u8; n];
        assert_eq!(hiprtcGetProgramLog(prog, log.as_mut_ptr().cast()), 0);
        assert_eq!(hiprtcDestroyProgram(&mut prog), 0);
        let log = String::from_utf8_lossy(&log)
            .trim_end_matches('\0')
            .to_string();
        (rc, log)
    }
}

#[test]
fn hiprtc_refuses_a_header_it_was_not_given_as_the_real_one_does() {
    let src = "#include <hip/hip_fp16.h>\nextern \"C\" __global__ void k(int* p) {}\n";
    let (rc, log) = rtc_compile(src, &[]);
    assert_eq!(rc, 6, "HIPRTC_ERROR_COMPILATION: {log}");
    assert!(
        log.contains("k.hip:1: fatal error: 'hip/hip_fp16.h' file not found"),
        "{log}"
    );
    // The same include is fine when the header is handed to hiprtcCreateProgram.
    let (rc, log) = rtc_compile(src, &[("hip/hip_fp16.h", "// given\n")]);
    assert_eq!(rc, 0, "{log}");
    // Redefining what the built-in runtime header already defines is an error too.
    let (rc, log) = rtc_compile("struct __half_raw { unsigned short x; };\n", &[]);
    assert_eq!(rc, 6);
    assert!(log.contains("redefinition of '__half_raw'"), "{log}");
}

#[test]
fn hiprtc_accepts_the_project_kernels() {
    let src = [
        include_str!("../../../kernels/prelude.h"),
        include_str!("../../../kernels/cast.cu"),
        include_str!("../../../kernels/conv_ref.cu"),
    ]
    .join("\n");
    let (rc, log) = rtc_compile(&src, &[]);
    assert_eq!(rc, 0, "{log}");
}
