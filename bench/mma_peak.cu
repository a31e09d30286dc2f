// mma-peak: the ceiling of the mma.sync instruction family on this GPU.
//
// Every warp runs back-to-back mma.sync on operands held in registers,
// eight independent accumulator chains deep so that the tensor pipes never
// wait on a result; no memory is touched inside the timed loop. This is the
// rate tile-mma's GEMMs are measured against (bench/RESULTS.md), one figure
// per shape and dtype. Usage: tdsl-mma-peak [iterations [warps per SM]]
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kChains = 8;

enum class Kind { F16, BF16, TF32, S8 };

// The accumulator type of each kind: f32, or s32 for s8.
template <Kind K> struct Acc { using type = float; };
template <> struct Acc<Kind::S8> { using type = int; };

template <Kind K>
__device__ __forceinline__ void mma(typename Acc<K>::type *c, const uint32_t *a, const uint32_t *b);

template <> __device__ __forceinline__ void mma<Kind::F16>(float *c, const uint32_t *a, const uint32_t *b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void mma<Kind::BF16>(float *c, const uint32_t *a, const uint32_t *b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void mma<Kind::TF32>(float *c, const uint32_t *a, const uint32_t *b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void mma<Kind::S8>(int *c, const uint32_t *a, const uint32_t *b) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <Kind K> __global__ void peak(int iters, uint32_t seed, float *out) {
  uint32_t a[4], b[2];
  for (int i = 0; i < 4; ++i)
    a[i] = seed * (threadIdx.x + 1) + i; // tiny values: no inf, no denormal traps
  b[0] = seed ^ threadIdx.x;
  b[1] = seed + threadIdx.x;
  for (int i = 0; i < 4; ++i)
    a[i] &= 0x3c003c00u;
  b[0] &= 0x3c003c00u;
  b[1] &= 0x3c003c00u;
  typename Acc<K>::type c[kChains][4] = {};
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int ch = 0; ch < kChains; ++ch)
      mma<K>(c[ch], a, b);
  }
  float s = 0;
#pragma unroll
  for (int ch = 0; ch < kChains; ++ch)
    s += float(c[ch][0]) + float(c[ch][1]) + float(c[ch][2]) + float(c[ch][3]);
  if (s == 12345.0f) // never true; keeps the chains alive
    out[0] = s;
}

int warpsPerSM = 32;

template <Kind K> double run(const char *name, double flopsPerMma, int iters, int sms) {
  float *out;
  cudaMalloc(&out, sizeof(float));
  int threads = 256, blocks = sms * warpsPerSM / 8;
  peak<K><<<blocks, threads>>>(16, 1u, out); // warm-up
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    cudaEventRecord(t0);
    peak<K><<<blocks, threads>>>(iters, 1u + rep, out);
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    float ms;
    cudaEventElapsedTime(&ms, t0, t1);
    double mmas = double(blocks) * (threads / 32) * iters * kChains;
    double tflops = mmas * flopsPerMma / (ms * 1e-3) / 1e12;
    best = tflops > best ? tflops : best;
  }
  cudaError_t err = cudaGetLastError();
  std::printf("| %-18s | %8.1f |%s\n", name, best, err ? cudaGetErrorString(err) : "");
  cudaFree(out);
  return best;
}

} // namespace

int main(int argc, char **argv) {
  int iters = argc > 1 ? std::atoi(argv[1]) : 20000;
  if (argc > 2)
    warpsPerSM = std::atoi(argv[2]);
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    std::fprintf(stderr, "tdsl-mma-peak: no CUDA device\n");
    return 1;
  }
  std::printf("%s, %d SMs; back-to-back mma.sync, %d chains per warp, %d warps per SM\n", p.name,
              p.multiProcessorCount, kChains, warpsPerSM);
  std::printf("| shape              | TFLOP/s (TOP/s for s8) |\n");
  run<Kind::F16>("m16n8k16 f16", 2.0 * 16 * 8 * 16, iters, p.multiProcessorCount);
  run<Kind::BF16>("m16n8k16 bf16", 2.0 * 16 * 8 * 16, iters, p.multiProcessorCount);
  run<Kind::TF32>("m16n8k8 tf32", 2.0 * 16 * 8 * 8, iters, p.multiProcessorCount);
  run<Kind::S8>("m16n8k32 s8", 2.0 * 16 * 8 * 32, iters, p.multiProcessorCount);
  return 0;
}
