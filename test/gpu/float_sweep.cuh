// What the GPU checks over all 2^32 floats (exp.cu, activations.cu) share: the
// grid-stride loop over every bit pattern, the largest error with a witness
// argument, and the failure count with one failing argument.
#ifndef TDSL_TEST_GPU_FLOAT_SWEEP_CUH
#define TDSL_TEST_GPU_FLOAT_SWEEP_CUH

#include <cstdint>
#include <cstdio>

struct SweepFailures {
  unsigned long long Count;
  float Witness;
};

/// *Max = max(*Max, V) for V >= 0, with *Arg = X when V raised it (the
/// race only picks among the largest).
__device__ inline void sweepMax(float *Max, float V, float *Arg, float X) {
  // Non-negative floats order as their bits.
  unsigned Old = atomicMax(reinterpret_cast<unsigned *>(Max), __float_as_uint(V));
  if (__uint_as_float(Old) < V)
    *Arg = X;
}

__device__ inline void sweepFail(SweepFailures *F, float X) {
  atomicAdd(&F->Count, 1ull);
  F->Witness = X;
}

/// Check(x) for every float x, the grid's threads striding over the bits.
template <typename Fn> __device__ void sweepEveryFloat(Fn Check) {
  const uint64_t Stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t I = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; I < (uint64_t(1) << 32);
       I += Stride)
    Check(__uint_as_float(uint32_t(I)));
}

/// Zeroes Stats, runs Kernel over every float and copies Stats back into
/// Result: 0, or 2 (a message printed) on a CUDA error.
template <typename T> int runSweep(const char *Name, void (*Kernel)(), const T &Stats, T &Result) {
  T Zero = {};
  cudaMemcpyToSymbol(Stats, &Zero, sizeof Zero);
  Kernel<<<1024, 256>>>();
  if (cudaDeviceSynchronize() != cudaSuccess ||
      cudaMemcpyFromSymbol(&Result, Stats, sizeof Result) != cudaSuccess) {
    std::printf("%s: CUDA error: %s\n", Name, cudaGetErrorString(cudaGetLastError()));
    return 2;
  }
  return 0;
}

#endif // TDSL_TEST_GPU_FLOAT_SWEEP_CUH
