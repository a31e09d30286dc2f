// mma-peak: the ceiling of the mma.sync instruction family on this GPU.
//
// Every warp runs back-to-back mma.sync on operands held in registers,
// eight independent accumulator chains deep so that the tensor pipes never
// wait on a result; no memory is touched inside the timed loop. This is the
// rate tile-mma's GEMMs are measured against (bench/RESULTS.md), one figure
// per shape and dtype. A second table runs tile-mma's f16 inner loop from
// shared memory, alone and with its copies, so that a GEMM's gap to the
// ceiling splits into what the loop, the copies' issue and the copies'
// traffic each cost. A third table holds the ceiling for seconds with
// operands that change from one mma to the next, as a GEMM's do: a GEMM that
// long draws the board's power limit, and the clock it runs at falls with
// it. Usage: tdsl-mma-peak [iterations [warps per SM]]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
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

//===-- Sustained: seconds of mma.sync on varied operands ------------------===//
//
// peak<K> multiplies the same two fragments of ones and zeros again and
// again, for milliseconds: few bits toggle, and the clock stays at its
// maximum. A GEMM's operands differ at every mma, and a large one runs long
// enough to reach the board's power limit. sustained<K> gives each chain its
// own fragments of random signs and mantissas (magnitudes in [0.5, 1)) and
// rotates them between the chains every iteration; launches of about half a
// second run back to back for about three seconds, and the last one's rate
// and its SM clock (clock64 over %globaltimer, thread 0 of block 0) are
// reported.
__device__ __forceinline__ uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}
__device__ __forceinline__ uint64_t globalNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <Kind K> __global__ void sustained(int iters, uint32_t seed, float *out) {
  // Sign, exponent of 0.5, random mantissa: f16 and bf16 keep theirs apart.
  const uint32_t Keep = K == Kind::BF16 ? 0x807f807fu : 0x83ff83ffu;
  const uint32_t Half = K == Kind::BF16 ? 0x3f003f00u : 0x38003800u;
  uint32_t a[kChains][4], b[kChains][2];
  uint32_t h = mix(seed * 0x9e3779b9u + blockIdx.x * blockDim.x + threadIdx.x);
#pragma unroll
  for (int ch = 0; ch < kChains; ++ch) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      a[ch][i] = ((h = mix(h)) & Keep) | Half;
    b[ch][0] = ((h = mix(h)) & Keep) | Half;
    b[ch][1] = ((h = mix(h)) & Keep) | Half;
  }
  float c[kChains][4] = {};
  bool timer = blockIdx.x == 0 && threadIdx.x == 0;
  long long c0 = clock64();
  uint64_t t0 = timer ? globalNs() : 0;
  for (int it = 0; it < iters; ++it) {
    // Chain ch takes fragment set (ch + it) % kChains: unrolled by kChains
    // iterations so that every register index is constant.
#pragma unroll
    for (int r = 0; r < kChains; ++r)
#pragma unroll
      for (int ch = 0; ch < kChains; ++ch)
        mma<K>(c[ch], a[(ch + r) % kChains], b[(ch + r) % kChains]);
  }
  if (timer) {
    out[1] = float(clock64() - c0);
    out[2] = float(globalNs() - t0);
  }
  float s = 0;
#pragma unroll
  for (int ch = 0; ch < kChains; ++ch)
    s += c[ch][0] + c[ch][1] + c[ch][2] + c[ch][3];
  if (s == 12345.0f) // never true; keeps the chains alive
    out[0] = s;
}

// The fastest of five timed launches, in ms; launch(rep) issues one.
template <typename Launch> float bestMs(Launch launch) {
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  float best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    cudaEventRecord(t0);
    launch(rep);
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    float ms;
    cudaEventElapsedTime(&ms, t0, t1);
    best = rep == 0 ? ms : std::min(best, ms);
  }
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  return best;
}

//===-- From shared memory: tile-mma's inner loop, and what its copies cost --===//
//
// A block of 4 warps runs the loop of tile-mma's default f16 kernel on a
// 128x32 A tile and a 32x128 B tile in shared memory, swizzled as tile-mma
// swizzles them: each warp keeps 64x64 outputs (4x8 mma tiles) and per k
// tile of 32 issues 64 mma on fragments that ldmatrix loaded (.trans for B)
// one k step ahead, with the k tile's barrier. Copies::None touches no
// global memory: the ceiling of the loop itself. Copies::Resident adds the
// GEMM's 16-byte cp.async of each k tile (8 a thread) into a 4-stage ring,
// waited for two tiles later, always from the same 32 KB (in L2): what
// issuing them costs. Copies::Matrices reads them from 4096^2 matrices as
// a block of a 4096^3 GEMM would: what moving them costs too.
enum class Copies { None, Resident, Matrices };

__device__ __forceinline__ uint32_t smemAddr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void ldsm4(uint32_t *r, const void *p, bool trans) {
  if (trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smemAddr(p)));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smemAddr(p)));
}
// tdsl_swizzle<Bits, Base, Shift> of tdsl/device.cuh.
template <int Bits, int Base, int Shift> __device__ __forceinline__ int swizzle(int o) {
  return o ^ (((o >> (Base + Shift)) & ((1 << Bits) - 1)) << Base);
}
constexpr int kFedDim = 4096; // the matrices of Copies::Matrices
constexpr int kFedSmem = 2 * 16384 + 4 * 16384; // the fragments' tiles, the copies' ring

template <Copies C, int MinBlocks>
__global__ void __launch_bounds__(128, MinBlocks)
fedPeak(int iters, float *out, const __half *GA, const __half *GB) {
  extern __shared__ __align__(16) unsigned char smem[];
  auto *As = reinterpret_cast<__half(*)[128 * 32]>(smem);
  auto *Bs = reinterpret_cast<__half(*)[32 * 128]>(smem + 16384);
  auto *Ring = reinterpret_cast<__half(*)[2 * 4096]>(smem + 32768);
  for (int i = threadIdx.x; i < 2 * 128 * 32; i += 128) {
    As[0][i] = __float2half(float((i * 7 + threadIdx.x) % 5 - 2) / 64.0f);
    Bs[0][i] = __float2half(float((i * 3 + 1) % 5 - 2) / 64.0f);
  }
  __syncthreads();
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float c[4][8][4] = {};
  uint32_t a[2][4][4], b[2][4][4];
  auto load = [&](int buf, int stage, int ks) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      ldsm4(a[buf][i],
            &As[stage][swizzle<2, 3, 3>((warp / 2 * 64 + i * 16 + lane % 16) * 32 + ks * 16 +
                                        lane / 16 * 8)],
            false);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      ldsm4(b[buf][j],
            &Bs[stage][swizzle<3, 3, 4>((ks * 16 + lane % 16) * 128 + warp % 2 * 64 + j * 16 +
                                        lane / 16 * 8)],
            true);
  };
  auto mmas = [&](int buf) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j)
        mma<Kind::F16>(c[i][j], a[buf][i], &b[buf][j / 2][j % 2 * 2]);
  };
  // Block (tm, tn) of a 4096^3 GEMM's 32x32 tiles: k tile kt of its A rows
  // and B columns.
  int tm = blockIdx.x / 32 % 32, tn = blockIdx.x % 32;
  auto copy = [&](int it) {
    if (C == Copies::None)
      return;
    bool moving = C == Copies::Matrices;
    int kt = moving ? it % (kFedDim / 32) : 0, stage = it % 4;
    const __half *a0 = GA + (moving ? size_t(tm) * 128 * kFedDim : 0);
    const __half *b0 = GB + (moving ? tn * 128 : 0);
#pragma unroll
    for (int part = 0; part < 4; ++part) {
      int q = threadIdx.x + part * 128;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                       smemAddr(&Ring[stage][q / 4 * 32 + q % 4 * 8])),
                   "l"(a0 + size_t(q / 4) * kFedDim + kt * 32 + q % 4 * 8));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                       smemAddr(&Ring[stage][4096 + q / 16 * 128 + q % 16 * 8])),
                   "l"(b0 + size_t(kt * 32 + q / 16) * kFedDim + q % 16 * 8));
    }
    asm volatile("cp.async.commit_group;\n");
  };
  load(0, 0, 0);
  for (int it = 0; it < 3; ++it)
    copy(it);
  for (int it = 0; it < iters; ++it) {
    load(1, it & 1, 1);
    copy(it + 3);
    mmas(0);
    if (C != Copies::None)
      asm volatile("cp.async.wait_group 2;\n");
    __syncthreads();
    load(0, (it + 1) & 1, 0);
    mmas(1);
  }
  asm volatile("cp.async.wait_all;\n");
  float s = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      s += c[i][j][0] + c[i][j][1] + c[i][j][2] + c[i][j][3];
  if (s == 12345.0f) // never true; keeps the accumulators alive
    out[0] = s;
}

template <Copies C, int Blocks>
void runFed(const char *name, int iters, int sms, const __half *GA, const __half *GB) {
  float *out;
  cudaMalloc(&out, sizeof(float));
  auto kernel = fedPeak<C, Blocks>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kFedSmem);
  int blocks = sms * Blocks;
  kernel<<<blocks, 128, kFedSmem>>>(16, out, GA, GB); // warm-up
  float ms = bestMs([&](int) { kernel<<<blocks, 128, kFedSmem>>>(iters, out, GA, GB); });
  double best = double(blocks) * 4 * iters * 64 * (2.0 * 16 * 8 * 16) / (ms * 1e-3) / 1e12;
  cudaError_t err = cudaGetLastError();
  std::printf("| %-34s | %d blocks/SM | %8.1f |%s\n", name, Blocks, best,
              err ? cudaGetErrorString(err) : "");
  cudaFree(out);
}

void runFedAll(int iters, int sms) {
  size_t n = size_t(kFedDim) * kFedDim;
  __half *GA, *GB;
  cudaMalloc(&GA, n * sizeof(__half));
  cudaMalloc(&GB, n * sizeof(__half));
  cudaMemset(GA, 0x11, n * sizeof(__half)); // small normal halves, not zeros
  cudaMemset(GB, 0x12, n * sizeof(__half));
  std::printf("| f16, 64x64 warps from shared memory | blocks | TFLOP/s |\n");
  runFed<Copies::None, 2>("inner loop", iters, sms, GA, GB);
  runFed<Copies::Resident, 2>("+ cp.async copies (resident)", iters, sms, GA, GB);
  runFed<Copies::Matrices, 2>("+ cp.async copies (4096^2 matrices)", iters, sms, GA, GB);
  runFed<Copies::None, 1>("inner loop", iters, sms, GA, GB);
  runFed<Copies::Matrices, 1>("+ cp.async copies (4096^2 matrices)", iters, sms, GA, GB);
  cudaFree(GA);
  cudaFree(GB);
}

int warpsPerSM = 32;

template <Kind K> double run(const char *name, double flopsPerMma, int iters, int sms) {
  float *out;
  cudaMalloc(&out, sizeof(float));
  int threads = 256, blocks = sms * warpsPerSM / 8;
  peak<K><<<blocks, threads>>>(16, 1u, out); // warm-up
  float ms = bestMs([&](int rep) { peak<K><<<blocks, threads>>>(iters, 1u + rep, out); });
  double mmas = double(blocks) * (threads / 32) * iters * kChains;
  double best = mmas * flopsPerMma / (ms * 1e-3) / 1e12;
  cudaError_t err = cudaGetLastError();
  std::printf("| %-18s | %8.1f |%s\n", name, best, err ? cudaGetErrorString(err) : "");
  cudaFree(out);
  return best;
}

template <Kind K> void runSustained(const char *name, int sms) {
  float *out;
  cudaMalloc(&out, 3 * sizeof(float));
  int threads = 256, blocks = sms * warpsPerSM / 8;
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  auto timed = [&](int iters, uint32_t seed) {
    cudaEventRecord(t0);
    sustained<K><<<blocks, threads>>>(iters, seed, out);
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    float ms;
    cudaEventElapsedTime(&ms, t0, t1);
    return ms;
  };
  // Each iteration is kChains^2 mma a warp; about 0.5 s a launch.
  int iters = 64;
  float ms = timed(iters, 1u);
  while (ms < 50.0f && iters < (1 << 24)) {
    iters *= 4;
    ms = timed(iters, 1u);
  }
  iters = int(std::min(double(1 << 28), iters * 500.0 / ms));
  double elapsed = 0;
  for (uint32_t rep = 2; elapsed < 3000.0; ++rep)
    elapsed += ms = timed(iters, rep);
  float clocks[3];
  cudaMemcpy(clocks, out, sizeof(clocks), cudaMemcpyDeviceToHost);
  double mmas = double(blocks) * (threads / 32) * iters * kChains * kChains;
  double rate = mmas * (2.0 * 16 * 8 * 16) / (ms * 1e-3) / 1e12;
  cudaError_t err = cudaGetLastError();
  std::printf("| %-18s | %8.1f | %6.0f | %5.1f |%s\n", name, rate, clocks[1] / clocks[2] * 1e3,
              elapsed / 1e3, err ? cudaGetErrorString(err) : "");
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaFree(out);
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
  runFedAll(iters / 5, p.multiProcessorCount);
  std::printf("| sustained, varied operands | TFLOP/s | SM MHz | seconds |\n");
  runSustained<Kind::F16>("m16n8k16 f16", p.multiProcessorCount);
  runSustained<Kind::BF16>("m16n8k16 bf16", p.multiProcessorCount);
  return 0;
}
