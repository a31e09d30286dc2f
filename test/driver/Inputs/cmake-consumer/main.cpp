// Calls both libraries' softmax, the second on a workspace of its own:
// what test/driver/cmake-package.test links (it cannot run without a GPU).
#include "softmax.h"     // rowops: f16
#include "softmax_f32.h" // attn: f32

#include <cstdio>

int main() {
  const int64_t R = 4, C = 33;
  tdsl_f16 *X16 = nullptr, *Y16 = nullptr;
  float *X32 = nullptr, *Y32 = nullptr;
  void *Workspace = nullptr;
  size_t Bytes = 0;
  cudaStream_t Stream = nullptr;
  tdsl_status S = attn_softmax_workspace_size(R, C, &Bytes);
  if (S == TDSL_SUCCESS &&
      (cudaMalloc((void **)&X16, R * C * 2) != cudaSuccess ||
       cudaMalloc((void **)&Y16, R * C * 2) != cudaSuccess ||
       cudaMalloc((void **)&X32, R * C * 4) != cudaSuccess ||
       cudaMalloc((void **)&Y32, R * C * 4) != cudaSuccess ||
       cudaMalloc(&Workspace, Bytes) != cudaSuccess))
    S = TDSL_ERROR_OUT_OF_MEMORY;
  if (S == TDSL_SUCCESS)
    S = rowops_softmax(X16, Y16, R, C, Stream);
  if (S == TDSL_SUCCESS)
    S = attn_softmax_with_workspace(X32, Y32, R, C, Workspace, Bytes, Stream);
  if (S == TDSL_SUCCESS && cudaStreamSynchronize(Stream) != cudaSuccess)
    S = TDSL_ERROR_CUDA;
  std::printf("%s\n", tdsl_status_string(S));
  cudaFree(X16);
  cudaFree(Y16);
  cudaFree(X32);
  cudaFree(Y32);
  cudaFree(Workspace);
  return S == TDSL_SUCCESS ? 0 : 1;
}
