//===- runtime.cpp - The thin launch runtime of tdslc kernels -------------===//
//
// Implements tdsl/runtime.h. Compiled by the host compiler against cudart;
// it must link the same cudart as the kernels (static, nvcc's default):
// cudaFuncSetAttribute only knows kernels registered with its own copy.
//
//===----------------------------------------------------------------------===//
#include "tdsl/runtime.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <atomic>
#include <map>
#include <mutex>
#include <utility>

namespace {

// Launchers report the CUDA error behind a status per thread, like errno:
// two threads launching at once must not see each other's errors.
thread_local cudaError_t LastCudaError = cudaSuccess;

// The 48 KiB every device grants without an opt-in.
constexpr size_t DefaultDynamicSharedBytes = 48 * 1024;

// Devices are few and numbered densely from 0; past this we still work,
// through the slow path below, just without the lock-free read.
constexpr int FastDeviceSlots = 64;

std::mutex &cacheMutex() {
  static std::mutex *M = new std::mutex; // never destroyed: usable from atexit
  return *M;
}

std::atomic<const cudaDeviceProp *> FastSlots[FastDeviceSlots];

// Props of devices past the fast slots; entries are never freed, so the
// pointers handed out stay valid for the life of the process.
std::map<int, const cudaDeviceProp *> &slowSlots() {
  static auto *Slots = new std::map<int, const cudaDeviceProp *>;
  return *Slots;
}

// The dynamic shared memory each (kernel, device) was last allowed.
std::map<std::pair<const void *, int>, size_t> &optInDone() {
  static auto *Done = new std::map<std::pair<const void *, int>, size_t>;
  return *Done;
}

bool isLaunchError(cudaError_t Err) {
  switch (Err) {
  case cudaErrorLaunchFailure:
  case cudaErrorLaunchOutOfResources:
  case cudaErrorLaunchTimeout:
  case cudaErrorInvalidConfiguration:
  case cudaErrorInvalidDeviceFunction:
  case cudaErrorNoKernelImageForDevice:
  case cudaErrorCooperativeLaunchTooLarge:
  case cudaErrorSharedObjectInitFailed:
    return true;
  default:
    return false;
  }
}

// No device at all, or a driver that cannot run this runtime: the caller
// can do nothing about these by retrying, and "device" says so.
bool isNoDeviceError(cudaError_t Err) {
  switch (Err) {
  case cudaErrorNoDevice:
  case cudaErrorInsufficientDriver:
  case cudaErrorInvalidDevice:
  case cudaErrorDevicesUnavailable:
  case cudaErrorCompatNotSupportedOnDevice:
  case cudaErrorSystemDriverMismatch:
    return true;
  default:
    return false;
  }
}

tdsl_status recordDeviceError(cudaError_t Err) {
  if (isNoDeviceError(Err)) {
    LastCudaError = Err;
    return TDSL_ERROR_DEVICE;
  }
  return tdsl_record_cuda_error(Err, TDSL_ERROR_CUDA);
}

} // namespace

extern "C" {

const char *tdsl_status_string(tdsl_status Status) {
  switch (Status) {
  case TDSL_SUCCESS:
    return "success";
  case TDSL_ERROR_NULL_POINTER:
    return "null pointer";
  case TDSL_ERROR_MISALIGNED_POINTER:
    return "misaligned pointer";
  case TDSL_ERROR_INVALID_SIZE:
    return "invalid size";
  case TDSL_ERROR_SIZE_MISMATCH:
    return "size mismatch";
  case TDSL_ERROR_TOO_LARGE:
    return "problem too large for the kernel";
  case TDSL_ERROR_OUT_OF_MEMORY:
    return "out of device memory";
  case TDSL_ERROR_DEVICE:
    return "no suitable CUDA device";
  case TDSL_ERROR_LAUNCH:
    return "kernel launch failed";
  case TDSL_ERROR_CUDA:
    return "CUDA call failed";
  case TDSL_ERROR_WORKSPACE_TOO_SMALL:
    return "workspace too small";
  }
  return "unknown status";
}

cudaError_t tdsl_last_cuda_error(void) { return LastCudaError; }

// on_error is what an error that is neither out-of-memory nor a launch
// error becomes (TDSL_ERROR_LAUNCH after a launch, TDSL_ERROR_CUDA after
// any other call); a success status there would hide the error, so it
// falls back to TDSL_ERROR_CUDA.
tdsl_status tdsl_record_cuda_error(cudaError_t Err, tdsl_status OnError) {
  if (Err == cudaSuccess)
    return TDSL_SUCCESS;
  LastCudaError = Err;
  if (Err == cudaErrorMemoryAllocation)
    return TDSL_ERROR_OUT_OF_MEMORY;
  if (isLaunchError(Err))
    return TDSL_ERROR_LAUNCH;
  return OnError == TDSL_SUCCESS ? TDSL_ERROR_CUDA : OnError;
}

tdsl_status tdsl_device_properties(const struct cudaDeviceProp **Props) {
  if (!Props)
    return TDSL_ERROR_NULL_POINTER;
  *Props = nullptr;
  int Device = -1;
  if (cudaError_t Err = cudaGetDevice(&Device); Err != cudaSuccess)
    return recordDeviceError(Err);

  bool Fast = Device >= 0 && Device < FastDeviceSlots;
  if (Fast) {
    if (const cudaDeviceProp *P = FastSlots[Device].load(std::memory_order_acquire)) {
      *Props = P;
      return TDSL_SUCCESS;
    }
  }

  std::lock_guard<std::mutex> Lock(cacheMutex());
  // Another thread may have filled the slot while we waited.
  if (Fast) {
    if (const cudaDeviceProp *P = FastSlots[Device].load(std::memory_order_acquire)) {
      *Props = P;
      return TDSL_SUCCESS;
    }
  } else if (auto It = slowSlots().find(Device); It != slowSlots().end()) {
    *Props = It->second;
    return TDSL_SUCCESS;
  }

  auto *P = new cudaDeviceProp(); // cached for the life of the process
  if (cudaError_t Err = cudaGetDeviceProperties(P, Device); Err != cudaSuccess) {
    delete P;
    return recordDeviceError(Err);
  }
  if (Fast)
    FastSlots[Device].store(P, std::memory_order_release);
  else
    slowSlots()[Device] = P;
  *Props = P;
  return TDSL_SUCCESS;
}

tdsl_status tdsl_allow_dynamic_shared_memory(const void *Kernel, size_t Bytes) {
  if (!Kernel)
    return TDSL_ERROR_NULL_POINTER;
  if (Bytes <= DefaultDynamicSharedBytes)
    return TDSL_SUCCESS;
  const cudaDeviceProp *Props = nullptr;
  if (tdsl_status S = tdsl_device_properties(&Props); S != TDSL_SUCCESS)
    return S;
  if (Bytes > Props->sharedMemPerBlockOptin)
    return TDSL_ERROR_DEVICE;
  int Device = -1;
  if (cudaError_t Err = cudaGetDevice(&Device); Err != cudaSuccess)
    return recordDeviceError(Err);

  // The attribute is per kernel and device; setting it costs a driver call,
  // so it is set once, and again only if a larger amount is asked for.
  std::lock_guard<std::mutex> Lock(cacheMutex());
  size_t &Allowed = optInDone()[{Kernel, Device}];
  if (Allowed >= Bytes)
    return TDSL_SUCCESS;
  cudaError_t Err = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(Bytes));
  if (Err != cudaSuccess)
    return tdsl_record_cuda_error(Err, TDSL_ERROR_CUDA);
  Allowed = Bytes;
  return TDSL_SUCCESS;
}

tdsl_status tdsl_make_tensor_map(tdsl_tensor_map *Map, const void *Base, int ElemBytes, int Rank,
                                 const int64_t *Dims, const int64_t *Box, int SwizzleBytes) {
  static_assert(sizeof(tdsl_tensor_map) == sizeof(CUtensorMap) &&
                    alignof(tdsl_tensor_map) >= alignof(CUtensorMap),
                "tdsl_tensor_map holds a CUtensorMap");
  if (!Map || !Dims || !Box)
    return TDSL_ERROR_NULL_POINTER;
  if (Rank < 1 || Rank > 5)
    return TDSL_ERROR_INVALID_SIZE;
  // The engine only moves bytes (zeros outside): an unsigned type of the
  // element's size describes every dtype.
  CUtensorMapDataType Type;
  switch (ElemBytes) {
  case 1: Type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
  case 2: Type = CU_TENSOR_MAP_DATA_TYPE_UINT16; break;
  case 4: Type = CU_TENSOR_MAP_DATA_TYPE_UINT32; break;
  case 8: Type = CU_TENSOR_MAP_DATA_TYPE_UINT64; break;
  default: return TDSL_ERROR_INVALID_SIZE;
  }
  CUtensorMapSwizzle Swizzle;
  switch (SwizzleBytes) {
  case 0: Swizzle = CU_TENSOR_MAP_SWIZZLE_NONE; break;
  case 32: Swizzle = CU_TENSOR_MAP_SWIZZLE_32B; break;
  case 64: Swizzle = CU_TENSOR_MAP_SWIZZLE_64B; break;
  case 128: Swizzle = CU_TENSOR_MAP_SWIZZLE_128B; break;
  default: return TDSL_ERROR_INVALID_SIZE;
  }
  // CUDA lists dimensions innermost first; strides (bytes) from the second.
  cuuint64_t GlobalDims[5], Strides[4];
  cuuint32_t BoxDims[5], Step[5];
  uint64_t Stride = static_cast<uint64_t>(ElemBytes);
  for (int D = 0; D < Rank; ++D) {
    int64_t Dim = Dims[Rank - 1 - D], Extent = Box[Rank - 1 - D];
    if (Dim < 1 || Extent < 1 || Extent > 256)
      return TDSL_ERROR_INVALID_SIZE;
    GlobalDims[D] = static_cast<cuuint64_t>(Dim);
    BoxDims[D] = static_cast<cuuint32_t>(Extent);
    Step[D] = 1;
    if (D > 0)
      Strides[D - 1] = Stride;
    Stride *= static_cast<uint64_t>(Dim);
  }
  if (reinterpret_cast<uintptr_t>(Base) % 16 != 0 || (Rank > 1 && Strides[0] % 16 != 0))
    return TDSL_ERROR_MISALIGNED_POINTER;
  // The driver's entry point, found once (the runtime has no wrapper).
  static PFN_cuTensorMapEncodeTiled_v12000 Encode = [] {
    void *Fn = nullptr;
    cudaDriverEntryPointQueryResult Found;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &Fn, 12000, cudaEnableDefault,
                                         &Found) != cudaSuccess ||
        Found != cudaDriverEntryPointSuccess)
      Fn = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(Fn);
  }();
  if (!Encode)
    return TDSL_ERROR_DEVICE;
  CUresult Err = Encode(reinterpret_cast<CUtensorMap *>(Map), Type, static_cast<cuuint32_t>(Rank),
                        const_cast<void *>(Base), GlobalDims, Strides, BoxDims, Step,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, Swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return Err == CUDA_SUCCESS ? TDSL_SUCCESS : TDSL_ERROR_CUDA;
}

} // extern "C"
