// Shared prelude: the same kernel files compile under NVRTC (CUDA), hipRTC (ROCm, at run time)
// and hipcc (offline code objects in the tests). Kernels take and return raw 16-bit patterns for
// half types, so their signatures are the same on every side, and convert with the vendor's own
// code wherever the vendor provides it (the code paths users depend on; seed 002 is about them).
// kernels/README.md says which bf16 path each ROCm release takes.
#if defined(__HIPCC_RTC__)
// hipRTC: a program may include only the headers given to hiprtcCreateProgram (none here), and
// the built-in runtime header already defines __half with its conversions (every release) and,
// from ROCm 5.5, the legacy hip_bfloat16 class. Including a HIP header fails: "file not found",
// or "redefinition of '__half_raw'" where a distribution puts HIP headers on the default path.
#define RS_HIP 1
#elif defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <hip/hip_bfloat16.h>
#define RS_HIP 1
#endif

#if defined(RS_HIP)
typedef __half rs_half;
#define RS_HALF_FROM_BITS(b) __ushort_as_half(b)
#define RS_HALF_TO_BITS(h) __half_as_ushort(h)
#if defined(_HIP_INCLUDE_HIP_AMD_DETAIL_HIP_BF16_H_)
// __hip_bfloat16 (amd_hip_bf16.h) is in scope: hipRTC's built-in header after ROCm 7.2.
#define RS_BF16_PATH "__hip_bfloat16"
#define RS_BF16_BITS_TO_FLOAT(b) __bfloat162float(__ushort_as_bfloat16(b))
#define RS_FLOAT_TO_BF16_BITS(v) __bfloat16_as_ushort(__float2bfloat16(v))
#elif defined(_HIP_BFLOAT16_H_)
// The legacy hip_bfloat16 class: hipRTC's built-in header from ROCm 5.5 through 7.2, and
// hip/hip_bfloat16.h under hipcc. Its float constructor rounds to nearest even.
#define RS_BF16_PATH "hip_bfloat16"
static __device__ inline float rs_bf16_bits_to_float(unsigned short b) {
  hip_bfloat16 h;
  h.data = b;
  return (float)h;
}
static __device__ inline unsigned short rs_float_to_bf16_bits(float v) {
  return hip_bfloat16::round_to_bfloat16(v).data;
}
#define RS_BF16_BITS_TO_FLOAT(b) rs_bf16_bits_to_float(b)
#define RS_FLOAT_TO_BF16_BITS(v) rs_float_to_bf16_bits(v)
#else
// No bf16 type at all (hipRTC of HIP 5.2 to 5.4): by bits, rounding to nearest even with NaN
// kept quiet, as the vendor's code does.
#define RS_BF16_PATH "by-hand"
static __device__ inline float rs_bf16_bits_to_float(unsigned short b) {
  return __uint_as_float(((unsigned int)b) << 16);
}
static __device__ inline unsigned short rs_float_to_bf16_bits(float v) {
  unsigned int u = __float_as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
#define RS_BF16_BITS_TO_FLOAT(b) rs_bf16_bits_to_float(b)
#define RS_FLOAT_TO_BF16_BITS(v) rs_float_to_bf16_bits(v)
#endif
#else
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef __half rs_half;
#define RS_BF16_PATH "cuda_bf16"
#define RS_HALF_FROM_BITS(b) __ushort_as_half(b)
#define RS_HALF_TO_BITS(h) __half_as_ushort(h)
#define RS_BF16_BITS_TO_FLOAT(b) __bfloat162float(__ushort_as_bfloat16(b))
#define RS_FLOAT_TO_BF16_BITS(v) __bfloat16_as_ushort(__float2bfloat16_rn(v))
#endif

typedef unsigned short rs_u16;
#define RS_INDEX (blockIdx.x * (size_t)blockDim.x + threadIdx.x)

// Which bf16 conversions this build took, readable in the code object (`selftest` prints it).
extern "C" __device__ const char rs_bf16_path[] = RS_BF16_PATH;
