// GPU check of tdsl/device.cuh's f32 division: tdsl_fdiv (inline, through
// the device's rcp.approx) against the device's own IEEE '/', bit for bit
// (NaN for NaN), and tdsl_fdiv_try's quotient wherever it leaves its flag
// set (a NaN there counts as wrong: the flag must clear first). Every one of the 2^32 floats is divided by each of 1024
// divisors and divides each of 1024 dividends: edges (zeros, subnormals,
// the fast path's limits, powers of two and their neighbours, infinities,
// NaN) and random floats. Then 2^36 pairs of random bits. Prints one line;
// exit status 1 on any difference.
#include <tdsl/device.cuh>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

__device__ unsigned long long Count;
__device__ float Wrong[8];

__device__ void compare(float A, float B) {
  const float Got = tdsl_generated::tdsl_fdiv(A, B);
  const float Want = A / B;
  bool Quick = true;
  const float Tried = tdsl_generated::tdsl_fdiv_try(A, B, Quick);
  const bool TryWrong = Quick && __float_as_uint(Tried) != __float_as_uint(Want);
  if (TryWrong ||
      (__float_as_uint(Got) != __float_as_uint(Want) && !(Got != Got && Want != Want))) {
    const unsigned long long K = atomicAdd(&Count, 1ull);
    if (K < 4) {
      Wrong[2 * K] = A;
      Wrong[2 * K + 1] = B;
    }
  }
}

/// Every float against each of Fixed[0..N): as dividend (Side 0) or divisor.
__global__ void sweep(const float *Fixed, int N, int Side) {
  const uint64_t Stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t I = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; I < (uint64_t(1) << 32);
       I += Stride) {
    const float X = __uint_as_float(uint32_t(I));
    for (int K = 0; K < N; ++K)
      Side == 0 ? compare(Fixed[K], X) : compare(X, Fixed[K]);
  }
}

__device__ uint32_t mix(uint64_t X) {
  X ^= X >> 33;
  X *= 0xff51afd7ed558ccdull;
  X ^= X >> 33;
  X *= 0xc4ceb9fe1a85ec53ull;
  X ^= X >> 33;
  return uint32_t(X);
}

__global__ void pairs(uint64_t Seed, uint64_t Total) {
  const uint64_t Stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t I = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; I < Total; I += Stride)
    compare(__uint_as_float(mix(Seed + 2 * I)), __uint_as_float(mix(Seed + 2 * I + 1)));
}

float fromBits(uint32_t U) {
  float X;
  std::memcpy(&X, &U, sizeof X);
  return X;
}

} // namespace

int main() {
  std::vector<float> Fixed = {0.0f, 1.0f,    3.0f,      0.1f,      7.0f / 3.0f,      INFINITY,
                              NAN,  FLT_MAX, 0x1p-149f, 0x1p-140f, 0x1.fffffcp-127f, 0x1p-126f};
  for (int E : {-126, -125, -124, -121, -120, -119, -103, -102, -101, -24, 0, 23, 119, 120, 121,
                124, 125, 126, 127})
    for (float M : {1.0f, 1.5f, 0x1.fffffep0f, 0x1.000002p0f, 0x1.fffffcp0f})
      Fixed.push_back(std::ldexp(M, E));
  std::mt19937 Rng(20261201);
  while (Fixed.size() < 1024)
    Fixed.push_back(Fixed.size() % 2 ? fromBits(Rng())
                                     : fromBits((Rng() & 0x807fffffu) | 0x3f800000u));
  float *DF;
  cudaMalloc(&DF, Fixed.size() * sizeof(float));
  cudaMemcpy(DF, Fixed.data(), Fixed.size() * sizeof(float), cudaMemcpyHostToDevice);
  const uint64_t Pairs = uint64_t(1) << 36;
  for (int Side = 0; Side < 2; ++Side)
    sweep<<<132 * 16, 256>>>(DF, int(Fixed.size()), Side);
  pairs<<<132 * 16, 256>>>(20261201, Pairs);
  cudaError_t E = cudaDeviceSynchronize();
  if (E != cudaSuccess) {
    std::printf("fdiv gpu: CUDA error %s\n", cudaGetErrorString(E));
    return 2;
  }
  unsigned long long N = 0;
  float W[8];
  cudaMemcpyFromSymbol(&N, Count, sizeof N);
  cudaMemcpyFromSymbol(W, Wrong, sizeof W);
  for (unsigned long long K = 0; K < N && K < 4; ++K)
    std::printf("FAILED: %a / %a\n", double(W[2 * K]), double(W[2 * K + 1]));
  const double Total = 2.0 * double(Fixed.size()) * 4294967296.0 + double(Pairs);
  std::printf("fdiv gpu: %.4g divisions, %llu wrong\n", Total, N);
  return N != 0;
}
