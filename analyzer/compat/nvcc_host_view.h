// What nvcc's host pass declares and clang 19's CUDA wrapper
// (__clang_cuda_runtime_wrapper.h) does not. gpulint force-includes this
// header (-include, after the wrapper) in CUDA mode only, so code written for
// nvcc parses as nvcc sees it. Declarations only: gpulint parses, it never
// generates code. Checked against clang 19's __clang_cuda_*.h; re-check them
// before widening the version test.
#pragma once

#if defined(__clang__) && __clang_major__ == 19 && defined(__CUDA__) && !defined(__CUDA_ARCH__) && \
    defined(__CLANG_CUDA_RUNTIME_WRAPPER_H__)

// nvcc's crt/common_functions.h includes <time.h> and <assert.h>, and
// crt/math_functions.h includes <math.h>: code calls clock(), assert() and
// an unqualified isfinite() without including them. clang's wrapper brings
// only <cmath>, <cstdlib>, <stdlib.h> and <string.h>.
#include <assert.h>
#include <math.h>
#include <time.h>

// Cache-hint loads and stores, sm_32_intrinsics.h (static __device__
// __inline__, the same 30 types for each). clang 19 defines
// __SM_32_INTRINSICS_H__ to keep that header out and implements only __ldg.
#define GPULINT_SM32_TYPES(X)                                                                                \
  X(long) X(unsigned long) X(char) X(signed char) X(short) X(int) X(long long) X(char2) X(char4) X(short2) \
  X(short4) X(int2) X(int4) X(longlong2) X(unsigned char) X(unsigned short) X(unsigned int)                \
  X(unsigned long long) X(uchar2) X(uchar4) X(ushort2) X(ushort4) X(uint2) X(uint4) X(ulonglong2) X(float) \
  X(double) X(float2) X(float4) X(double2)
#define GPULINT_SM32_LOADS_STORES(T)                  \
  static __device__ __inline__ T __ldcg(const T* ptr); \
  static __device__ __inline__ T __ldca(const T* ptr); \
  static __device__ __inline__ T __ldcs(const T* ptr); \
  static __device__ __inline__ T __ldlu(const T* ptr); \
  static __device__ __inline__ T __ldcv(const T* ptr); \
  static __device__ __inline__ void __stwb(T* ptr, T value); \
  static __device__ __inline__ void __stcg(T* ptr, T value); \
  static __device__ __inline__ void __stcs(T* ptr, T value); \
  static __device__ __inline__ void __stwt(T* ptr, T value);
GPULINT_SM32_TYPES(GPULINT_SM32_LOADS_STORES)
#undef GPULINT_SM32_LOADS_STORES
#undef GPULINT_SM32_TYPES

// min/max: crt/math_functions.hpp defines them __host__ __device__ (int from
// its __HELPER_FUNC_LINKAGE block, the other pairs as __MATH_FUNCTIONS_DECL__).
// clang 19 includes that header with __host__ poisoned, so they, and its own
// min(int, int) in __clang_cuda_math.h, are __device__ only. These are the
// host halves; the device pass keeps clang's.
#define GPULINT_HOST_MIN_MAX(R, A, B) \
  static inline __host__ R min(const A a, const B b); \
  static inline __host__ R max(const A a, const B b);
GPULINT_HOST_MIN_MAX(int, int, int)
GPULINT_HOST_MIN_MAX(unsigned int, unsigned int, unsigned int)
GPULINT_HOST_MIN_MAX(unsigned int, int, unsigned int)
GPULINT_HOST_MIN_MAX(unsigned int, unsigned int, int)
GPULINT_HOST_MIN_MAX(long int, long int, long int)
GPULINT_HOST_MIN_MAX(unsigned long int, unsigned long int, unsigned long int)
GPULINT_HOST_MIN_MAX(unsigned long int, long int, unsigned long int)
GPULINT_HOST_MIN_MAX(unsigned long int, unsigned long int, long int)
GPULINT_HOST_MIN_MAX(long long int, long long int, long long int)
GPULINT_HOST_MIN_MAX(unsigned long long int, unsigned long long int, unsigned long long int)
GPULINT_HOST_MIN_MAX(unsigned long long int, long long int, unsigned long long int)
GPULINT_HOST_MIN_MAX(unsigned long long int, unsigned long long int, long long int)
GPULINT_HOST_MIN_MAX(float, float, float)
GPULINT_HOST_MIN_MAX(double, double, double)
GPULINT_HOST_MIN_MAX(double, float, double)
GPULINT_HOST_MIN_MAX(double, double, float)
#undef GPULINT_HOST_MIN_MAX

// Surface-object reads and writes, surface_indirect_functions.h, which
// clang 19's wrapper does not include (its texture handler has no surface
// operations). Only the forms real code was seen to call; the header's
// __nv_isurf_trait<T>::type return (void for the supported types) is void.
#if !defined(__SURFACE_INDIRECT_FUNCTIONS_H__)
template <typename T>
static __device__ void surf1Dwrite(T val, cudaSurfaceObject_t obj, int x,
                                   cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap);
template <typename T>
static __device__ void surf2Dwrite(T val, cudaSurfaceObject_t obj, int x, int y,
                                   cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap);
template <typename T>
static __device__ void surf3Dwrite(T val, cudaSurfaceObject_t obj, int x, int y, int z,
                                   cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap);
template <typename T>
static __device__ void surf2DLayeredwrite(T val, cudaSurfaceObject_t obj, int x, int y, int layer,
                                          cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap);
template <typename T>
static __device__ void surf2Dread(T* ptr, cudaSurfaceObject_t obj, int x, int y,
                                  cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap);
template <class T>
static __device__ T surf2Dread(cudaSurfaceObject_t surfObject, int x, int y,
                               cudaSurfaceBoundaryMode boundaryMode = cudaBoundaryModeTrap);
#endif

// CUDA 13's cuda_runtime_api.h takes a struct cudaMemLocation where CUDA 12's
// cudaMemAdvise took an int device (cudaCpuDeviceId or an ordinal); code
// written for CUDA 12 still parses, and the call keeps its name for the checks.
#if defined(CUDART_VERSION) && CUDART_VERSION >= 13000
__host__ cudaError_t cudaMemAdvise(const void* devPtr, size_t count, enum cudaMemoryAdvise advice, int device);
#endif

#endif
