// Shared prelude: the same kernel files compile under NVRTC (CUDA) and hipRTC (ROCm).
// Kernels take and return raw 16-bit patterns for half types, so their signatures are the same
// on both sides, and convert with the vendor's own intrinsics (the code paths users depend on).
#pragma once
#if defined(__HIPCC_RTC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_fp16.h>
#include <hip/hip_bf16.h>
typedef __half rs_half;
typedef __hip_bfloat16 rs_bf16;
#define RS_HALF_FROM_BITS(b) __ushort_as_half(b)
#define RS_HALF_TO_BITS(h) __half_as_ushort(h)
#define RS_BF16_FROM_BITS(b) __ushort_as_bfloat16(b)
#define RS_BF16_TO_BITS(h) __bfloat16_as_ushort(h)
#else
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef __half rs_half;
typedef __nv_bfloat16 rs_bf16;
#define RS_HALF_FROM_BITS(b) __ushort_as_half(b)
#define RS_HALF_TO_BITS(h) __half_as_ushort(h)
#define RS_BF16_FROM_BITS(b) __ushort_as_bfloat16(b)
#define RS_BF16_TO_BITS(h) __bfloat16_as_ushort(h)
#endif

typedef unsigned short rs_u16;
#define RS_INDEX (blockIdx.x * (size_t)blockDim.x + threadIdx.x)
