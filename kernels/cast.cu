// Element type conversions with round-to-nearest-even, one thread per element.
// 16-bit types travel as raw bit patterns (see prelude.h).

static __device__ float rs_load_f32(const void* p, size_t i) { return ((const float*)p)[i]; }
static __device__ float rs_load_f16(const void* p, size_t i) { return __half2float(RS_HALF_FROM_BITS(((const rs_u16*)p)[i])); }
static __device__ float rs_load_bf16(const void* p, size_t i) { return RS_BF16_BITS_TO_FLOAT(((const rs_u16*)p)[i]); }
static __device__ void rs_store_f32(void* p, size_t i, float v) { ((float*)p)[i] = v; }
static __device__ void rs_store_f16(void* p, size_t i, float v) { ((rs_u16*)p)[i] = RS_HALF_TO_BITS(__float2half_rn(v)); }
static __device__ void rs_store_bf16(void* p, size_t i, float v) { ((rs_u16*)p)[i] = RS_FLOAT_TO_BF16_BITS(v); }

#define RS_CAST(FROM, TO) \
  extern "C" __global__ void cast_##FROM##_##TO(const void* in, void* out, size_t n) { \
    size_t i = RS_INDEX; \
    if (i < n) rs_store_##TO(out, i, rs_load_##FROM(in, i)); \
  }

RS_CAST(f32, f16)
RS_CAST(f32, bf16)
RS_CAST(f16, f32)
RS_CAST(bf16, f32)
RS_CAST(f16, bf16)
RS_CAST(bf16, f16)
RS_CAST(f32, f32)
RS_CAST(f16, f16)
RS_CAST(bf16, bf16)

// ReLU in place, the elementwise step of the graph op.
#define RS_RELU(T) \
  extern "C" __global__ void relu_##T(void* x, size_t n) { \
    size_t i = RS_INDEX; \
    if (i < n) { float v = rs_load_##T(x, i); rs_store_##T(x, i, v > 0.0f ? v : 0.0f); } \
  }

RS_RELU(f32)
RS_RELU(f16)
RS_RELU(bf16)

// TEST-ONLY: a kernel that never ends (reached only through ROCSWEEP_TEST_FAULT). The volatile
// read keeps the compiler from proving the loop empty.
extern "C" __global__ void spin_forever(volatile int* flag) {
  while (flag[0] == 0) { }
}
