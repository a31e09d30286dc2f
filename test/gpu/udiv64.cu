// GPU check of tdsl/device.cuh's 64-bit division: tdsl_quo and
// tdsl_rem (inline, through the float reciprocal __fdividef gives on the
// device) against the device's own '/' and '%' on edge and random signed
// operands with positive divisors. Prints one line; exit status 1 on
// any difference.
#include <tdsl/device.cuh>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

__global__ void divide(const int64_t *A, const int64_t *B, int64_t *Wrong, unsigned long long *Count,
                       int N) {
  int I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I >= N)
    return;
  const int64_t Q = tdsl_generated::tdsl_quo<int64_t>(A[I], B[I]);
  const int64_t R = tdsl_generated::tdsl_rem<int64_t>(A[I], B[I]);
  if (Q != A[I] / B[I] || R != A[I] % B[I]) {
    unsigned long long K = atomicAdd(Count, 1ull);
    if (K < 4) {
      Wrong[2 * K] = A[I];
      Wrong[2 * K + 1] = B[I];
    }
  }
}

int main() {
  std::vector<int64_t> A, B;
  const int64_t Top = INT64_MAX;
  std::vector<int64_t> Edges = {0, 1, 2, 3, 7, 255, 4096, Top, INT64_MIN, INT64_MIN + 1};
  for (int S = 16; S <= 62; ++S)
    for (int64_t D : {-1, 0, 1})
      Edges.push_back((int64_t(1) << S) + D);
  for (int64_t X : Edges)
    for (int64_t Y : Edges)
      if (Y > 0) {
        A.push_back(X);
        B.push_back(Y);
        A.push_back(-X);
        B.push_back(Y);
      }
  std::mt19937_64 Rng(20261130);
  while (A.size() < (size_t(1) << 24)) {
    const int64_t Y = int64_t((Rng() >> (1 + Rng() % 63)) | 1);
    int64_t X = int64_t(Rng() >> (1 + Rng() % 63));
    if (Rng() & 1)
      X = X / Y * Y + int64_t(Rng() % 3) - 1; // next to a multiple
    A.push_back(Rng() & 2 ? -X : X);
    B.push_back(Y);
  }
  const int N = int(A.size());
  int64_t *DA, *DB, *DW;
  unsigned long long *DC, Count = 0;
  cudaMalloc(&DA, N * sizeof(int64_t));
  cudaMalloc(&DB, N * sizeof(int64_t));
  cudaMalloc(&DW, 8 * sizeof(int64_t));
  cudaMalloc(&DC, sizeof(unsigned long long));
  cudaMemcpy(DA, A.data(), N * sizeof(int64_t), cudaMemcpyHostToDevice);
  cudaMemcpy(DB, B.data(), N * sizeof(int64_t), cudaMemcpyHostToDevice);
  cudaMemset(DC, 0, sizeof(unsigned long long));
  divide<<<(N + 255) / 256, 256>>>(DA, DB, DW, DC, N);
  cudaError_t E = cudaDeviceSynchronize();
  if (E != cudaSuccess) {
    std::printf("udiv64 gpu: CUDA error %s\n", cudaGetErrorString(E));
    return 2;
  }
  int64_t W[8];
  cudaMemcpy(&Count, DC, sizeof(Count), cudaMemcpyDeviceToHost);
  cudaMemcpy(W, DW, sizeof(W), cudaMemcpyDeviceToHost);
  for (unsigned long long K = 0; K < Count && K < 4; ++K)
    std::printf("FAILED: %lld / %lld\n", (long long)W[2 * K], (long long)W[2 * K + 1]);
  std::printf("udiv64 gpu: %d divisions, %llu wrong\n", N, Count);
  return Count != 0;
}
