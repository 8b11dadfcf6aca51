// Shared prelude: the same kernel files compile under NVRTC (CUDA) and hipRTC (ROCm).
// Kernels take and return raw 16-bit patterns for half types, so their signatures are the same
// on both sides, and convert with the vendor's own intrinsics (the code paths users depend on).
#pragma once
#if defined(__HIPCC_RTC__) || defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>  // hipRTC provides it; hipcc (offline code objects) needs it
#endif
#include <hip/hip_fp16.h>
typedef __half rs_half;
#define RS_HALF_FROM_BITS(b) __ushort_as_half(b)
#define RS_HALF_TO_BITS(h) __half_as_ushort(h)
#if __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>
#define RS_BF16_BITS_TO_FLOAT(b) __bfloat162float(__ushort_as_bfloat16(b))
#define RS_FLOAT_TO_BF16_BITS(v) __bfloat16_as_ushort(__float2bfloat16_rn(v))
#else
// HIP before 5.7 (Debian's 5.2) ships no __hip_bfloat16: convert by bits, round to nearest even
// with NaN kept quiet, which is what the vendor header does.
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
#define RS_HALF_FROM_BITS(b) __ushort_as_half(b)
#define RS_HALF_TO_BITS(h) __half_as_ushort(h)
#define RS_BF16_BITS_TO_FLOAT(b) __bfloat162float(__ushort_as_bfloat16(b))
#define RS_FLOAT_TO_BF16_BITS(v) __bfloat16_as_ushort(__float2bfloat16_rn(v))
#endif

typedef unsigned short rs_u16;
#define RS_INDEX (blockIdx.x * (size_t)blockDim.x + threadIdx.x)
