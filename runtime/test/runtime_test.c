/* runtime_test.c - The runtime's unit test, in C to check the C ABI too.
 *
 * Needs no GPU: without one, tdsl_device_properties must say
 * TDSL_ERROR_DEVICE and the opt-in must fail the same way, never crash.
 * With one, properties are cached (same pointer twice) and the opt-in works
 * for a size the device allows. Prints one line per failure; exit 0 if none. */
#include "tdsl/runtime.h"

#include <stdio.h>
#include <string.h>

static int Failures = 0;

#define EXPECT(cond)                                                          \
  do {                                                                        \
    if (!(cond)) {                                                            \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                  \
      ++Failures;                                                             \
    }                                                                         \
  } while (0)

static void testStatusStrings(void) {
  static const struct { tdsl_status status; const char *text; } Expected[] = {
      {TDSL_SUCCESS, "success"},
      {TDSL_ERROR_NULL_POINTER, "null pointer"},
      {TDSL_ERROR_MISALIGNED_POINTER, "misaligned pointer"},
      {TDSL_ERROR_INVALID_SIZE, "invalid size"},
      {TDSL_ERROR_SIZE_MISMATCH, "size mismatch"},
      {TDSL_ERROR_TOO_LARGE, "problem too large for the kernel"},
      {TDSL_ERROR_OUT_OF_MEMORY, "out of device memory"},
      {TDSL_ERROR_DEVICE, "no suitable CUDA device"},
      {TDSL_ERROR_LAUNCH, "kernel launch failed"},
      {TDSL_ERROR_CUDA, "CUDA call failed"},
      {TDSL_ERROR_WORKSPACE_TOO_SMALL, "workspace too small"},
  };
  size_t N = sizeof Expected / sizeof Expected[0];
  EXPECT(N == (size_t)TDSL_ERROR_WORKSPACE_TOO_SMALL + 1); /* every code, none forgotten */
  for (size_t I = 0; I < N; ++I) {
    const char *S = tdsl_status_string(Expected[I].status);
    EXPECT(S != NULL && strcmp(S, Expected[I].text) == 0);
  }
  EXPECT(strcmp(tdsl_status_string((tdsl_status)1234), "unknown status") == 0);
}

static void testRecordCudaError(void) {
  EXPECT(tdsl_record_cuda_error(cudaSuccess, TDSL_ERROR_CUDA) == TDSL_SUCCESS);
  EXPECT(tdsl_record_cuda_error(cudaErrorMemoryAllocation, TDSL_ERROR_CUDA) ==
         TDSL_ERROR_OUT_OF_MEMORY);
  EXPECT(tdsl_last_cuda_error() == cudaErrorMemoryAllocation);
  EXPECT(tdsl_record_cuda_error(cudaErrorLaunchOutOfResources, TDSL_ERROR_CUDA) ==
         TDSL_ERROR_LAUNCH);
  EXPECT(tdsl_last_cuda_error() == cudaErrorLaunchOutOfResources);
  EXPECT(tdsl_record_cuda_error(cudaErrorInvalidValue, TDSL_ERROR_CUDA) == TDSL_ERROR_CUDA);
  EXPECT(tdsl_record_cuda_error(cudaErrorInvalidValue, TDSL_ERROR_LAUNCH) == TDSL_ERROR_LAUNCH);
  EXPECT(tdsl_record_cuda_error(cudaErrorInvalidValue, TDSL_SUCCESS) == TDSL_ERROR_CUDA);
  EXPECT(tdsl_last_cuda_error() == cudaErrorInvalidValue);
  /* A success does not erase the last error (it is the last *error*). */
  EXPECT(tdsl_record_cuda_error(cudaSuccess, TDSL_ERROR_CUDA) == TDSL_SUCCESS);
  EXPECT(tdsl_last_cuda_error() == cudaErrorInvalidValue);
}

static void testDevice(void) {
  int Count = 0;
  int HaveGpu = cudaGetDeviceCount(&Count) == cudaSuccess && Count > 0;
  const struct cudaDeviceProp *Props = (const struct cudaDeviceProp *)&Count;
  static const int Dummy = 0;
  EXPECT(tdsl_device_properties(NULL) == TDSL_ERROR_NULL_POINTER);
  EXPECT(tdsl_allow_dynamic_shared_memory(NULL, 100000) == TDSL_ERROR_NULL_POINTER);
  /* 48 KiB or less needs no opt-in and no device query. */
  EXPECT(tdsl_allow_dynamic_shared_memory(&Dummy, 48 * 1024) == TDSL_SUCCESS);
  if (!HaveGpu) {
    printf("no GPU: checking the failure paths\n");
    EXPECT(tdsl_device_properties(&Props) == TDSL_ERROR_DEVICE);
    EXPECT(Props == NULL);
    EXPECT(tdsl_last_cuda_error() != cudaSuccess);
    EXPECT(tdsl_allow_dynamic_shared_memory(&Dummy, 100000) == TDSL_ERROR_DEVICE);
    return;
  }
  printf("GPU present: checking the cache\n");
  const struct cudaDeviceProp *Again = NULL;
  EXPECT(tdsl_device_properties(&Props) == TDSL_SUCCESS);
  EXPECT(tdsl_device_properties(&Again) == TDSL_SUCCESS);
  EXPECT(Props != NULL && Props == Again);
  if (Props) {
    EXPECT(Props->sharedMemPerBlockOptin >= 48 * 1024);
    /* More than the device allows: refused before any CUDA call. */
    EXPECT(tdsl_allow_dynamic_shared_memory(&Dummy, Props->sharedMemPerBlockOptin + 1) ==
           TDSL_ERROR_DEVICE);
  }
}

/* Tensor maps: bad arguments are refused before the driver is asked;
 * without a driver (CI) a valid request says TDSL_ERROR_DEVICE; with a GPU,
 * a map of a real allocation succeeds (the driver checks the address). */
static void testTensorMap(void) {
  tdsl_tensor_map Map;
  const int64_t Dims[2] = {64, 64}, Box[2] = {16, 64}, Narrow[2] = {4, 6}, Wide[2] = {16, 300};
  const void *Base = (const void *)(uintptr_t)0x10000;
  const void *Odd = (const void *)(uintptr_t)0x10002;
  EXPECT(tdsl_make_tensor_map(NULL, Base, 2, 2, Dims, Box, 128) == TDSL_ERROR_NULL_POINTER);
  EXPECT(tdsl_make_tensor_map(&Map, Base, 2, 2, NULL, Box, 128) == TDSL_ERROR_NULL_POINTER);
  EXPECT(tdsl_make_tensor_map(&Map, Base, 2, 0, Dims, Box, 128) == TDSL_ERROR_INVALID_SIZE);
  EXPECT(tdsl_make_tensor_map(&Map, Base, 2, 6, Dims, Box, 128) == TDSL_ERROR_INVALID_SIZE);
  EXPECT(tdsl_make_tensor_map(&Map, Base, 3, 2, Dims, Box, 128) == TDSL_ERROR_INVALID_SIZE);
  EXPECT(tdsl_make_tensor_map(&Map, Base, 2, 2, Dims, Box, 48) == TDSL_ERROR_INVALID_SIZE);
  EXPECT(tdsl_make_tensor_map(&Map, Base, 2, 2, Dims, Wide, 0) == TDSL_ERROR_INVALID_SIZE);
  EXPECT(tdsl_make_tensor_map(&Map, Odd, 2, 2, Dims, Box, 128) == TDSL_ERROR_MISALIGNED_POINTER);
  /* Rows of 6 f16 elements are 12 bytes: not a multiple of 16. */
  EXPECT(tdsl_make_tensor_map(&Map, Base, 2, 2, Narrow, Narrow, 0) ==
         TDSL_ERROR_MISALIGNED_POINTER);
  int Count = 0;
  void *Real = NULL;
  if (cudaGetDeviceCount(&Count) == cudaSuccess && Count > 0 &&
      cudaMalloc(&Real, 64 * 64 * 2) == cudaSuccess) {
    EXPECT(tdsl_make_tensor_map(&Map, Real, 2, 2, Dims, Box, 128) == TDSL_SUCCESS);
    cudaFree(Real);
  } else {
    tdsl_status S = tdsl_make_tensor_map(&Map, Base, 2, 2, Dims, Box, 128);
    EXPECT(S == TDSL_ERROR_DEVICE || S == TDSL_ERROR_CUDA);
  }
}

int main(void) {
  testStatusStrings();
  testRecordCudaError();
  testDevice();
  testTensorMap();
  if (Failures) {
    printf("%d failure(s)\n", Failures);
    return 1;
  }
  printf("PASS\n");
  return 0;
}
