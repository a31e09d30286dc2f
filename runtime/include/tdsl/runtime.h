/*===- tdsl/runtime.h - The thin launch runtime of tdslc kernels ----------===*
 *
 * What the launchers that tdslc emits call, and what a program calling
 * them may use: status codes, the last CUDA error, a device-properties
 * cache, the >48 KiB dynamic shared-memory opt-in, tensor maps. C ABI. Nothing here
 * exits, prints or synchronizes; the stream is always the caller's.
 *
 *===----------------------------------------------------------------------===*/
#ifndef TDSL_RUNTIME_H
#define TDSL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 16-bit float elements as launchers take them: layout-compatible with
 * CUDA's __half and __nv_bfloat16 (pass those with a reinterpret_cast),
 * distinct types so an f16 tensor cannot be passed where bf16 is expected. */
typedef struct tdsl_f16 { uint16_t bits; } tdsl_f16;
typedef struct tdsl_bf16 { uint16_t bits; } tdsl_bf16;

typedef enum tdsl_status {
  TDSL_SUCCESS = 0,
  TDSL_ERROR_NULL_POINTER = 1,       /* a tensor pointer is NULL while its tensor has elements */
  TDSL_ERROR_MISALIGNED_POINTER = 2, /* a pointer lacks the alignment the kernel relies on */
  TDSL_ERROR_INVALID_SIZE = 3,       /* a size is < 1 or a dimension comes out < 1 */
  TDSL_ERROR_SIZE_MISMATCH = 4,      /* reserved: size symbols that must agree do not */
  TDSL_ERROR_TOO_LARGE = 5,          /* the grid or an index exceeds what the kernel supports */
  TDSL_ERROR_OUT_OF_MEMORY = 6,      /* a temporary buffer could not be allocated */
  TDSL_ERROR_DEVICE = 7,             /* no device, or the device lacks what the kernel needs */
  TDSL_ERROR_LAUNCH = 8,             /* the launch failed; tdsl_last_cuda_error() says why */
  TDSL_ERROR_CUDA = 9,               /* another CUDA call failed; tdsl_last_cuda_error() says why */
  TDSL_ERROR_WORKSPACE_TOO_SMALL = 10 /* less workspace than _workspace_size reported */
} tdsl_status;

/* A short English description of a status ("misaligned pointer"). */
const char *tdsl_status_string(tdsl_status status);

/* The CUDA error behind the last TDSL_ERROR_LAUNCH / TDSL_ERROR_CUDA /
 * TDSL_ERROR_OUT_OF_MEMORY returned on this thread (cudaSuccess if none). */
cudaError_t tdsl_last_cuda_error(void);

/* Records err as this thread's last CUDA error and maps it to a status
 * (cudaErrorMemoryAllocation -> TDSL_ERROR_OUT_OF_MEMORY, launch errors ->
 * TDSL_ERROR_LAUNCH, others -> TDSL_ERROR_CUDA; cudaSuccess -> SUCCESS). */
tdsl_status tdsl_record_cuda_error(cudaError_t err, tdsl_status on_error);

/* Properties of the current device, read once per device and cached
 * (thread-safe). *props stays valid for the life of the process. */
tdsl_status tdsl_device_properties(const struct cudaDeviceProp **props);

/* Allows `kernel` (a __global__ function's address) to use `bytes` of
 * dynamic shared memory when that is over the 48 KiB default: checks the
 * device's opt-in limit and sets cudaFuncAttributeMaxDynamicSharedMemorySize
 * once per kernel and device. */
tdsl_status tdsl_allow_dynamic_shared_memory(const void *kernel, size_t bytes);

/* A tensor map of the bulk tensor copy engine (sm_90; CUDA's CUtensorMap,
 * whose 128 bytes it holds): what a kernel's tensor_copy reads through,
 * made by the launcher and passed by value. */
typedef struct tdsl_tensor_map {
#ifdef __cplusplus
  alignas(128)
#else
  _Alignas(128)
#endif
      uint64_t opaque[16];
} tdsl_tensor_map;

/* Makes *map describe boxes of box[0] x ... x box[rank - 1] elements of the
 * row-major tensor at base, dims[0] x ... x dims[rank - 1] elements of
 * elem_bytes each (dims[0] outermost), landing in shared memory in the
 * engine's swizzle of swizzle_bytes (0, 32, 64 or 128); elements outside
 * the tensor read as zero. The engine needs base 16-byte aligned and each
 * row's bytes a multiple of 16 (TDSL_ERROR_MISALIGNED_POINTER otherwise);
 * TDSL_ERROR_DEVICE where the driver has no tensor maps (before CUDA 12). */
tdsl_status tdsl_make_tensor_map(tdsl_tensor_map *map, const void *base, int elem_bytes, int rank,
                                 const int64_t *dims, const int64_t *box, int swizzle_bytes);

/* How one launch of a kernel is shaped (a .tdsl kernel may need several
 * launches: see the _launch_info query each launcher comes with). */
typedef struct tdsl_launch_info {
  unsigned grid[3];
  unsigned block[3];
  size_t shared_bytes;
} tdsl_launch_info;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TDSL_RUNTIME_H */
