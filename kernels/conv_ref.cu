// Direct forward convolution with f64 accumulation: the reference for problems too large for
// the CPU reference. One thread per output element; slow but independent of every library.
// Layout flag: 0 = NCHW with KCRS filters, 1 = NHWC with KRSC filters (as the case stores them).

#define RS_CONV_REF(T) \
  extern "C" __global__ void conv_fwd_ref_##T(const void* x, const void* w, double* y, \
      int n, int c_in, int c_out, int h, int wd, int kh, int kw, int pad_h, int pad_w, \
      int stride_h, int stride_w, int dil_h, int dil_w, int groups, int oh, int ow, int nhwc) { \
    size_t i = RS_INDEX; \
    size_t total = (size_t)n * c_out * oh * ow; \
    if (i >= total) return; \
    int b, co, oy, ox; \
    if (nhwc) { co = i % c_out; size_t r = i / c_out; ox = r % ow; r /= ow; oy = r % oh; b = r / oh; } \
    else { ox = i % ow; size_t r = i / ow; oy = r % oh; r /= oh; co = r % c_out; b = r / c_out; } \
    int cpg = c_in / groups, opg = c_out / groups, g = co / opg; \
    double acc = 0.0; \
    for (int c = 0; c < cpg; ++c) { \
      int ci = g * cpg + c; \
      for (int ky = 0; ky < kh; ++ky) { \
        int iy = oy * stride_h - pad_h + ky * dil_h; \
        if (iy < 0 || iy >= h) continue; \
        for (int kx = 0; kx < kw; ++kx) { \
          int ix = ox * stride_w - pad_w + kx * dil_w; \
          if (ix < 0 || ix >= wd) continue; \
          size_t xi = nhwc ? (((size_t)b * h + iy) * wd + ix) * c_in + ci \
                           : (((size_t)b * c_in + ci) * h + iy) * wd + ix; \
          size_t wi = nhwc ? (((size_t)co * kh + ky) * kw + kx) * cpg + c \
                           : (((size_t)co * cpg + c) * kh + ky) * kw + kx; \
          acc += (double)rs_load_##T(x, xi) * (double)rs_load_##T(w, wi); \
        } \
      } \
    } \
    y[i] = acc; \
  }

RS_CONV_REF(f32)
RS_CONV_REF(f16)
RS_CONV_REF(bf16)
