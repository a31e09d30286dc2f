// tensor_copy.cu - The copy engine's IR kernels (test/gpu/tensor_copy.tir)
// on the GPU, through the launchers tdsl-opt --emit-cuda writes: the tensor
// maps the launchers make, tiles at 1024-byte aligned offsets, mbarriers.
// Checks every output element against the box semantics (zeros past the
// tensor); exit 0 when all match, 1 otherwise, 2 without a CUDA device.
#include <tdsl/runtime.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

extern "C" tdsl_status tdsl_ring(const float *A, float *Out, float *Echo, int64_t R,
                                 cudaStream_t stream);
extern "C" tdsl_status tdsl_swz(const tdsl_f16 *A, tdsl_f16 *Out, int64_t R, cudaStream_t stream);

static int report(const char *Name, tdsl_status S, int Wrong) {
  cudaError_t E = cudaDeviceSynchronize();
  bool Ok = S == TDSL_SUCCESS && E == cudaSuccess && Wrong == 0;
  std::printf("%s: %s (status %s, %s, %d wrong)\n", Name, Ok ? "ok" : "FAILED", tdsl_status_string(S),
              cudaGetErrorString(E), Wrong);
  return Ok ? 0 : 1;
}

// Out[r, c] = A[r, c] for r < R, 0 for R <= r < 48 (three boxes of 16 rows);
// Echo, A's first 40 rows copied by plain loads.
static int ring(int64_t R) {
  std::vector<float> A(R * 8), Out(48 * 8), Echo(R * 8);
  for (size_t I = 0; I < A.size(); ++I)
    A[I] = float(I % 97) + 0.5f;
  float *DA, *DOut, *DEcho;
  cudaMalloc(&DA, A.size() * 4);
  cudaMalloc(&DOut, Out.size() * 4);
  cudaMalloc(&DEcho, Echo.size() * 4);
  cudaMemcpy(DA, A.data(), A.size() * 4, cudaMemcpyHostToDevice);
  cudaMemset(DOut, 0xff, Out.size() * 4);
  cudaMemset(DEcho, 0, Echo.size() * 4); // rows past 40 stay unwritten (initcheck)
  tdsl_status S = tdsl_ring(DA, DOut, DEcho, R, nullptr);
  cudaDeviceSynchronize();
  cudaMemcpy(Out.data(), DOut, Out.size() * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(Echo.data(), DEcho, Echo.size() * 4, cudaMemcpyDeviceToHost);
  int Wrong = 0;
  for (int64_t Row = 0; Row < 48; ++Row)
    for (int C = 0; C < 8; ++C) {
      Wrong += Out[Row * 8 + C] != (Row < R ? A[Row * 8 + C] : 0.0f);
      if (Row < R && Row < 40) // the kernel echoes the first 40 rows
        Wrong += Echo[Row * 8 + C] != A[Row * 8 + C];
    }
  cudaFree(DA);
  cudaFree(DOut);
  cudaFree(DEcho);
  char Name[32];
  std::snprintf(Name, sizeof Name, "ring R=%lld", static_cast<long long>(R));
  return report(Name, S, Wrong);
}

// Out[r, c] = A[R - 20 + r, c], 0 past the tensor (a box of 32 rows).
static int swz(int64_t R) {
  std::vector<__half> A(R * 64), Out(32 * 64);
  for (size_t I = 0; I < A.size(); ++I)
    A[I] = __float2half(float(I % 1000));
  __half *DA, *DOut;
  cudaMalloc(&DA, A.size() * 2);
  cudaMalloc(&DOut, Out.size() * 2);
  cudaMemcpy(DA, A.data(), A.size() * 2, cudaMemcpyHostToDevice);
  tdsl_status S = tdsl_swz(reinterpret_cast<const tdsl_f16 *>(DA), reinterpret_cast<tdsl_f16 *>(DOut), R,
                           nullptr);
  cudaDeviceSynchronize();
  cudaMemcpy(Out.data(), DOut, Out.size() * 2, cudaMemcpyDeviceToHost);
  int Wrong = 0;
  for (int64_t Row = 0; Row < 32; ++Row)
    for (int C = 0; C < 64; ++C) {
      int64_t Src = R - 20 + Row;
      float Want = Src < R ? __half2float(A[Src * 64 + C]) : 0.0f;
      Wrong += __half2float(Out[Row * 64 + C]) != Want;
    }
  cudaFree(DA);
  cudaFree(DOut);
  char Name[32];
  std::snprintf(Name, sizeof Name, "swz R=%lld", static_cast<long long>(R));
  return report(Name, S, Wrong);
}

int main() {
  int Count = 0;
  if (cudaGetDeviceCount(&Count) != cudaSuccess || Count == 0) {
    std::printf("no CUDA device\n");
    return 2;
  }
  int Failed = 0;
  for (int64_t R : {40, 48, 1})
    Failed += ring(R);
  for (int64_t R : {50, 20, 64})
    Failed += swz(R);
  std::printf("%s\n", Failed ? "FAILED" : "all passed");
  return Failed ? 1 : 0;
}
