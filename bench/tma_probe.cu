// tma-probe: how the operand tiles of tile-mma's f16 GEMM blocks reach
// shared memory, three ways, each timed as a whole GEMM against cuBLAS in
// the same run.
//
// Every form runs a block tile-mma emits for a plain f16 product: 256x128
// outputs in eight warps (its block for many output tiles, one an SM) or
// 128x128 in four (two an SM), warps of 64x64 (4x8 mma.sync m16n8k16 tiles
// each), fragments by ldmatrix (.trans for B) one k step ahead, f32
// accumulators, C written through a padded shared tile in 16-byte rows. The
// forms differ only in how each k tile of A[M, K] and B[K, N] arrives:
//
//   cp.async      every thread copies 16-byte pieces into a ring of 4 stages
//                 (k tile 32), waits for its own with wait_group, and a block
//                 barrier per k tile publishes them and frees the stage the
//                 next copies refill: the form tile-mma emits today.
//   tma           one thread asks the bulk tensor copy engine (sm_90) for the
//                 stage's A box and two B boxes (k tile 64, rows of 128 bytes
//                 in its 128-byte swizzle, 3 stages), which complete on the
//                 stage's mbarrier; every thread waits there; the block
//                 barrier per k tile stays.
//   tma+release   the same, with a second mbarrier per stage on which each
//                 warp arrives once it has loaded its last fragments from the
//                 stage; the thread that refills a stage waits there, so the
//                 k loop has no block barrier and the warps drift apart.
//
// The table has cp.async, tma and tma+release of the 256x128 block, then
// cp.async and tma+release of the 128x128 one. Offsets are 32-bit, as in
// tile-mma's kernels for tensors under 2^31 elements (the shapes must keep
// M K, K N and M N below that). All give bit-identical C (the same mma in
// the same order); the program checks that, and checks the first form
// against cuBLAS. The engine zero-fills a box's elements outside the
// tensor, so every M, N and K works wherever the rows are 16-byte aligned
// (K % 8 == 0, N % 8 == 0).
//
// Usage: tdsl-tma-probe [--check] [M N K]...   (default: a set of large
// shapes; --check: the checks without the timing, for the sanitizers)
#include <tdsl/runtime.h>
#include <tdsl/device.cuh>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace tdsl_generated; // the helpers tile-mma's kernels use

enum class Feed { CpAsync, Tma, TmaRelease };

constexpr int kBlockN = 128;
constexpr int kOutPitch = kBlockN + 8; // the output tile's padded row

// tdsl_swizzle of tdsl/device.cuh on element offsets of f16: (2, 3, 3) is
// the engine's 64-byte swizzle and (3, 3, 3) its 128-byte one, for buffers
// aligned to 512 and 1024 bytes.
template <int KT> __device__ __forceinline__ int swizzleA(int o) {
  if constexpr (KT == 32)
    return tdsl_swizzle<2, 3, 3>(o);
  else
    return tdsl_swizzle<3, 3, 3>(o);
}

// Shared memory of a form: S stages of A [256][KT] and B as two halves of
// [KT][64] (each warp's 64 columns one half, so both copy forms lay B out
// alike), then the mbarriers. The output tile reuses the stages.
__host__ __device__ constexpr int stageBytes(int BM, int KT) { return BM * KT * 2 + KT * kBlockN * 2; }
__host__ __device__ constexpr int smemBytes(int BM, int KT, int S) {
  return S * stageBytes(BM, KT) + 2 * S * 8;
}

// BM: 256 (eight warps, one block an SM) or 128 (four warps, two blocks an
// SM), the two blocks tile-mma emits; a thread a row of A.
template <Feed F, int KT, int S, int BM>
__global__ void __launch_bounds__(BM)
gemm(const __grid_constant__ tdsl_tensor_map mapA, const __grid_constant__ tdsl_tensor_map mapB, const __half *A,
     const __half *B, __half *C, int M, int K, int N) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) unsigned char smem[];
  constexpr int KS = KT / 16; // mma k steps a k tile
  constexpr int kBlockM = BM, kThreads = BM;
  constexpr int aBytes = kBlockM * KT * 2;
  auto *As = reinterpret_cast<__half(*)[kBlockM * KT]>(smem);
  auto *Bs = reinterpret_cast<__half(*)[2][KT * 64]>(smem + S * aBytes);
  uint64_t *full = reinterpret_cast<uint64_t *>(smem + S * stageBytes(BM, KT));
  uint64_t *freed = full + S;
  const int tx = threadIdx.x, lane = tx % 32, warp = tx / 32;
  // Output tiles in groups of 8 tile rows, as tile-mma orders them.
  const int tilesN = (N + kBlockN - 1) / kBlockN, pid = blockIdx.x;
  const int first = pid / (8 * tilesN) * 8;
  const int rowsLeft = (M + kBlockM - 1) / kBlockM - first, size = rowsLeft < 8 ? rowsLeft : 8;
  const int tm = first + pid % size, tn = pid % (8 * tilesN) / size;
  const int tiles = (K + KT - 1) / KT;

  auto fill = [&](int t) {
    const int s = t % S;
    if constexpr (F == Feed::CpAsync) {
#pragma unroll
      for (int c = 0; c < KT / 8; ++c) {
        const int q = tx + c * kThreads, r = q / (KT / 8), col = q % (KT / 8) * 8;
        tdsl_cp_async<16>(&As[s][swizzleA<KT>(r * KT + col)], &A[(tm * kBlockM + r) * K + t * KT + col],
                  tm * kBlockM + r < M && t * KT + col < K);
      }
#pragma unroll
      for (int c = 0; c < KT * 16 / kThreads; ++c) {
        const int q = tx + c * kThreads, r = q / 16, col = q % 16 * 8;
        tdsl_cp_async<16>(&Bs[s][col / 64][tdsl_swizzle<3, 3, 3>(r * 64 + col % 64)],
                  &B[(t * KT + r) * N + tn * kBlockN + col], tn * kBlockN + col < N && t * KT + r < K);
      }
    } else {
      tdsl_mbarrier_expect_tx(&full[s], stageBytes(BM, KT));
      tdsl_tensor_copy(As[s], &mapA, &full[s], t * KT, tm * kBlockM);
      tdsl_tensor_copy(Bs[s][0], &mapB, &full[s], tn * kBlockN, t * KT);
      tdsl_tensor_copy(Bs[s][1], &mapB, &full[s], tn * kBlockN + 64, t * KT);
    }
  };
  uint32_t fa[2][16], fb[2][16];
  auto load = [&](int buf, int s, int ks) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      tdsl_ldmatrix<4, false>(
          &fa[buf][i * 4],
          &As[s][swizzleA<KT>((warp / 2 * 64 + i * 16 + lane / 8 % 2 * 8 + lane % 8) * KT + ks * 16 + lane / 16 * 8)]);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      tdsl_ldmatrix<4, true>(
          &fb[buf][j * 4],
          &Bs[s][warp % 2][tdsl_swizzle<3, 3, 3>((ks * 16 + lane / 8 % 2 * 8 + lane % 8) * 64 + j * 16 + lane / 16 * 8)]);
  };
  // Waits until stage s holds k tile t.
  auto arrived = [&](int t) {
    if constexpr (F == Feed::CpAsync) {
      tdsl_cp_async_wait<S - 2>();
    } else {
      tdsl_mbarrier_wait(&full[t % S], t / S & 1);
    }
  };

  float acc[128];
#pragma unroll
  for (int e = 0; e < 128; ++e)
    acc[e] = 0.0f;
  if (F != Feed::CpAsync && tx == 0) {
    for (int s = 0; s < S; ++s) {
      tdsl_mbarrier_init(&full[s], 1);
      tdsl_mbarrier_init(&freed[s], kThreads / 32);
    }
  }
  __syncthreads();
  for (int t = 0; t < S - 1; ++t) {
    if (t < tiles && (F == Feed::CpAsync || tx == 0))
      fill(t);
    if (F == Feed::CpAsync)
      tdsl_cp_async_commit();
  }
  if (tiles > 0) {
    arrived(0);
    if (F == Feed::CpAsync)
      __syncthreads();
    load(0, 0, 0);
  }
  for (int kt = 0; kt < tiles; ++kt) {
    const int s = kt % S;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      if (ks + 1 < KS) {
        load((ks + 1) & 1, s, ks + 1);
        if (F == Feed::TmaRelease && ks + 2 == KS)
          tdsl_mbarrier_arrive_warp(&freed[s]); // this warp's last reads of stage s
      } else {
        if (kt + 1 < tiles || F == Feed::CpAsync)
          arrived(kt + 1);
        if (F != Feed::TmaRelease)
          __syncthreads();
        if (kt + 1 < tiles)
          load(0, (kt + 1) % S, 0);
      }
      if (ks == 0) {
        // Refill the stage k tile kt - 1 used: every warp has passed its
        // reads there (the barrier of step kt - 1, or its release).
        const int t = kt + S - 1;
        if (F == Feed::CpAsync) {
          if (t < tiles)
            fill(t);
          tdsl_cp_async_commit();
        } else if (tx == 0 && t < tiles) {
          if (F == Feed::TmaRelease && kt > 0)
            tdsl_mbarrier_wait(&freed[(kt - 1) % S], (kt - 1) / S & 1);
          fill(t);
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
          tdsl_mma_m16n8k16<__half>(&acc[(i * 8 + j) * 4], &fa[ks & 1][i * 4], &fb[ks & 1][j * 2]);
    }
  }
  if (F == Feed::CpAsync)
    tdsl_cp_async_wait<0>();
  auto *Out = reinterpret_cast<__half(*)[kOutPitch]>(smem);
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        Out[warp / 2 * 64 + i * 16 + lane / 4 + e / 2 * 8][warp % 2 * 64 + j * 8 + lane % 4 * 2 + e % 2] =
            __float2half_rn(acc[(i * 8 + j) * 4 + e]);
  __syncthreads();
#pragma unroll
  for (int c = 0; c < 16; ++c) {
    const int q = tx + c * kThreads, r = q / 16, col = q % 16 * 8;
    if (tm * kBlockM + r < M && tn * kBlockN + col < N)
      *reinterpret_cast<uint4 *>(&C[(tm * kBlockM + r) * N + tn * kBlockN + col]) =
          *reinterpret_cast<const uint4 *>(&Out[r][col]);
  }
#else
  __trap(); // the copy engine and mbarrier transactions are sm_90's
#endif
}

#define CHECK(x)                                                                                                 \
  do {                                                                                                           \
    if (auto e = (x); e != 0) {                                                                                  \
      std::fprintf(stderr, "tma-probe: %s failed (%d) at line %d\n", #x, int(e), __LINE__);                     \
      std::exit(1);                                                                                              \
    }                                                                                                            \
  } while (0)

// The map of a row-major f16 matrix of rows x cols, boxes of boxRows x
// boxCols landing in the engine's swizzle of swizzleBytes; zeros outside.
tdsl_tensor_map tensorMap(const __half *p, int rows, int cols, int boxRows, int boxCols, int swizzleBytes) {
  tdsl_tensor_map map;
  const int64_t dims[2] = {rows, cols}, box[2] = {boxRows, boxCols};
  CHECK(tdsl_make_tensor_map(&map, p, 2, 2, dims, box, swizzleBytes));
  return map;
}

// The median of 7 timings of reps back-to-back launches, in ms a launch.
template <typename Launch> float medianMs(Launch launch, int reps) {
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  std::vector<float> ms;
  for (int r = 0; r < 7; ++r) {
    cudaEventRecord(t0);
    for (int i = 0; i < reps; ++i)
      launch();
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    float t;
    cudaEventElapsedTime(&t, t0, t1);
    ms.push_back(t / reps);
  }
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  std::sort(ms.begin(), ms.end());
  return ms[3];
}

template <Feed F, int KT, int S, int BM> void prepare() {
  CHECK(cudaFuncSetAttribute(gemm<F, KT, S, BM>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             smemBytes(BM, KT, S)));
}

// The forms, in the table's order: name, and a launch on C.
constexpr int kForms = 5;
const char *const kFormNames[kForms] = {"cp.async", "tma", "tma+release", "cp.async", "tma+release"};

// Times one shape; returns false where a check failed.
bool probe(cublasHandle_t handle, int M, int N, int K, bool timed) {
  const size_t na = size_t(M) * K, nb = size_t(K) * N, nc = size_t(M) * N;
  std::vector<__half> ha(na), hb(nb);
  uint32_t seed = 12345;
  auto next = [&] { return (seed = seed * 1664525u + 1013904223u) >> 16; };
  for (auto &x : ha) // multiples of 1/8 in [-1, 1]: products and sums exact
    x = __float2half(float(int(next() % 17) - 8) / 8);
  for (auto &x : hb)
    x = __float2half(float(int(next() % 17) - 8) / 8);
  __half *A, *B, *C[kForms + 1]; // C[0]: cuBLAS's
  CHECK(cudaMalloc(&A, na * 2));
  CHECK(cudaMalloc(&B, nb * 2));
  for (auto &c : C)
    CHECK(cudaMalloc(&c, nc * 2));
  CHECK(cudaMemcpy(A, ha.data(), na * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(B, hb.data(), nb * 2, cudaMemcpyHostToDevice));
  // compute-sanitizer's initcheck reports every byte of cuBLAS's output as
  // never written unless it was set before: set it, so that a clean report
  // speaks for the forms here.
  CHECK(cudaMemset(C[0], 0, nc * 2));
  const tdsl_tensor_map a256 = tensorMap(A, M, K, 256, 64, 128);
  const tdsl_tensor_map a128 = tensorMap(A, M, K, 128, 64, 128);
  const tdsl_tensor_map b64 = tensorMap(B, K, N, 64, 64, 128);
  auto grid = [&](int BM) { return ((M + BM - 1) / BM) * ((N + kBlockN - 1) / kBlockN); };
  const float one = 1, zero = 0;
  auto cublas = [&] { // row-major C = A B is column-major C^T = B^T A^T
    cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, CUDA_R_16F, N, A, CUDA_R_16F, K, &zero, C[0],
                 CUDA_R_16F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  auto form = [&](int V) {
    __half *Out = C[V + 1];
    switch (V) {
    case 0:
      gemm<Feed::CpAsync, 32, 4, 256><<<grid(256), 256, smemBytes(256, 32, 4)>>>(a256, b64, A, B, Out, M, K, N);
      break;
    case 1:
      gemm<Feed::Tma, 64, 3, 256><<<grid(256), 256, smemBytes(256, 64, 3)>>>(a256, b64, A, B, Out, M, K, N);
      break;
    case 2:
      gemm<Feed::TmaRelease, 64, 3, 256><<<grid(256), 256, smemBytes(256, 64, 3)>>>(a256, b64, A, B, Out, M, K,
                                                                                      N);
      break;
    case 3:
      gemm<Feed::CpAsync, 32, 4, 128><<<grid(128), 128, smemBytes(128, 32, 4)>>>(a128, b64, A, B, Out, M, K, N);
      break;
    case 4:
      gemm<Feed::TmaRelease, 64, 3, 128><<<grid(128), 128, smemBytes(128, 64, 3)>>>(a128, b64, A, B, Out, M, K,
                                                                                      N);
      break;
    }
  };
  cublas();
  for (int V = 0; V < kForms; ++V)
    form(V);
  CHECK(cudaDeviceSynchronize());
  std::vector<__half> hc[kForms + 1];
  for (int V = 0; V <= kForms; ++V) {
    hc[V].resize(nc);
    CHECK(cudaMemcpy(hc[V].data(), C[V], nc * 2, cudaMemcpyDeviceToHost));
  }
  double worst = 0; // the first form against cuBLAS, relative to max(1, |C|)
  size_t differ[kForms] = {};
  for (size_t i = 0; i < nc; ++i) {
    const float ref = __half2float(hc[0][i]), first = __half2float(hc[1][i]);
    worst = std::max(worst, double(std::fabs(first - ref)) / std::max(1.0f, std::fabs(ref)));
    for (int V = 1; V < kForms; ++V)
      differ[V] += !(__half2float(hc[V + 1][i]) == first);
  }
  bool ok = worst <= 1e-2;
  for (int V = 1; V < kForms; ++V)
    ok = ok && differ[V] == 0;
  float ms[kForms + 1] = {};
  if (timed) {
    const int reps = std::max(3, int(4e11 / (2.0 * M * N * K)));
    for (int round = 0; round < 3; ++round) { // alternate; keep the last round
      ms[0] = medianMs(cublas, reps);
      for (int V = 0; V < kForms; ++V)
        ms[V + 1] = medianMs([&] { form(V); }, reps);
    }
  }
  const double flop = 2.0 * M * N * K;
  std::printf("%5d x %5d x %5d |", M, N, K);
  if (timed) {
    std::printf(" %8.4f |", ms[0]);
    for (int V = 0; V < kForms; ++V)
      std::printf(" %6.3f %4.0f |", ms[0] / ms[V + 1], flop / ms[V + 1] / 1e9);
  }
  std::printf(" %s\n", ok ? "ok" : "FAILED");
  if (!ok) {
    std::printf("  the first form against cuBLAS: %.3g; elements differing from it:", worst);
    for (int V = 1; V < kForms; ++V)
      std::printf(" %s %zu", kFormNames[V], differ[V]);
    std::printf("\n");
  }
  cudaFree(A);
  cudaFree(B);
  for (auto &c : C)
    cudaFree(c);
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    std::fprintf(stderr, "tma-probe: no CUDA device\n");
    return 2;
  }
  if (major < 9) {
    std::fprintf(stderr, "tma-probe: the bulk tensor copy engine needs sm_90 or newer\n");
    return 2;
  }
  const bool timed = !(argc > 1 && std::string(argv[1]) == "--check");
  std::vector<int> shapes;
  for (int i = timed ? 1 : 2; i + 2 < argc; i += 3)
    for (int j = 0; j < 3; ++j)
      shapes.push_back(std::atoi(argv[i + j]));
  if (shapes.empty())
    shapes = {4096, 4096, 4096, 8192, 8192, 8192, 4096, 11008, 4096, 4096, 4096, 1024, 8192, 3072, 768,
              3000, 5000, 1000, 1000, 3000, 776};
  for (size_t i = 0; i < shapes.size(); i += 3)
    if (shapes[i] < 1 || shapes[i + 1] % 8 || shapes[i + 2] % 8 || shapes[i + 1] < 8 || shapes[i + 2] < 8 ||
        int64_t(std::max({shapes[i], shapes[i + 1], shapes[i + 2]})) *
                std::max({std::min(shapes[i], shapes[i + 1]), std::min(shapes[i + 1], shapes[i + 2]),
                          std::min(shapes[i], shapes[i + 2])}) >=
            (int64_t(1) << 31)) {
      std::fprintf(stderr,
                   "tma-probe: %d x %d x %d: N and K must be positive multiples of 8 (rows of 16 bytes), and each "
                   "matrix under 2^31 elements\n",
                   shapes[i], shapes[i + 1], shapes[i + 2]);
      return 2;
    }
  prepare<Feed::CpAsync, 32, 4, 256>();
  prepare<Feed::Tma, 64, 3, 256>();
  prepare<Feed::TmaRelease, 64, 3, 256>();
  prepare<Feed::CpAsync, 32, 4, 128>();
  prepare<Feed::TmaRelease, 64, 3, 128>();
  cublasHandle_t handle;
  CHECK(cublasCreate(&handle));
  std::printf("f16 GEMM, C = A B, row-major; each form: cuBLAS ms / form ms, then TFLOP/s\n");
  std::printf("                      |           | 256x128 blocks                           | 128x128 blocks\n");
  std::printf("    M x     N x     K | cuBLAS ms | cp.async    | tma         | tma+release | cp.async    |"
              " tma+release | check\n");
  bool ok = true;
  for (size_t i = 0; i < shapes.size(); i += 3)
    ok = probe(handle, shapes[i], shapes[i + 1], shapes[i + 2], timed) && ok;
  cublasDestroy(handle);
  return ok ? 0 : 1;
}
