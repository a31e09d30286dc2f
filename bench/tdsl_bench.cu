// tdsl-bench: the suite kernels of bench/suite/, compiled by tdslc, checked and
// timed against cuBLAS (GEMMs) or a copy kernel moving the same bytes
// (memory-bound kernels), in one run; prints one table and writes JSON.
//
//   tdsl-bench [--quick] [--filter SUBSTR] [--json FILE] [--budget-s S]
//              [--target-s S] [--ablation NAME=LIB.so,...] [--ablation-type f32|f16]
//              [--self-test]
//
// Every measurement: random inputs (never zeros), outputs poisoned with NaN
// bytes, one launch checked against an f64 CPU reference on sampled rows
// (TARGETS.md tolerances), then CUDA-event timing of single launches until
// about --target-s seconds (at least 3, at most 200), median. A kernel whose
// one launch takes over --budget-s is reported as skipped, not timed.
// Exit status: 0 when every check passed, 1 when one failed, 2 without a GPU.
#include "attention.h"
#include "bgemm_f16.h"
#include "cross_entropy.h"
#include "elementwise.h"
#include "elementwise_f16.h"
#include "gemm_bf16.h"
#include "gated_mlp.h"
#include "gemm_bias_gelu.h"
#include "gemm_bias_relu.h"
#include "gemm_f16.h"
#include "gemm_f32.h"
#include "gemm_scaled.h"
#include "gemm_i8.h"
#include "gemm_tf32.h"
#include "layernorm.h"
#include "rmsnorm.h"
#include "rowsum.h"
#include "softmax.h"
#include "transpose.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <type_traits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

//===-- Options and results -----------------------------------------------===//

struct Options {
  bool quick = false, selfTest = false;
  std::string filter, jsonPath = "bench.json", ablation, ablationType = "f32";
  double budgetS = 4.0;  // one launch over this: skipped
  double targetS = 0.5;  // timed launches stop after about this long
};
Options opts;

struct Row {
  std::string kernel, shape, dtype, peer, status = "ok";
  double tdslMs = NAN, peerMs = NAN, flops = 0, bytes = 0, maxErr = NAN, peerErr = NAN;
  bool computeBound = false;
};
std::vector<Row> rows;
bool anyFailure = false;
bool peerRan = false;  // the current case's peer ran: its output may be checked

std::string fmtShape(std::initializer_list<long> dims, const char *sep = "x") {
  std::string s;
  for (long d : dims)
    s += (s.empty() ? "" : sep) + std::to_string(d);
  return s;
}

// An error string ("" when fine) from each kind of status.
std::string cudaErr(cudaError_t e, const char *what) {
  return e == cudaSuccess ? "" : std::string(what) + ": " + cudaGetErrorString(e);
}
std::string tdslErr(tdsl_status s) {
  if (s == TDSL_SUCCESS) {
    cudaError_t e = cudaGetLastError();
    return cudaErr(e, "after the tdslc launch");
  }
  std::string m = std::string("tdslc launcher: ") + tdsl_status_string(s);
  if (tdsl_last_cuda_error() != cudaSuccess)
    m += std::string(" (") + cudaGetErrorString(tdsl_last_cuda_error()) + ")";
  return m;
}
std::string blasErr(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? "" : std::string("cuBLAS: ") + cublasGetStatusString(s);
}
#define CUDA_OR_DIE(call)                                                                \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "tdsl-bench: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

//===-- Device buffers, random fill, host copies --------------------------===//

enum class DType { F16, BF16, F32, I8, I32 };
size_t sizeOf(DType t) {
  return t == DType::F16 || t == DType::BF16 ? 2 : t == DType::I8 ? 1 : 4;
}

struct Buf {
  void *p = nullptr;
  size_t n = 0;
  DType t = DType::F32;
  Buf(size_t n_, DType t_) : n(n_), t(t_) { CUDA_OR_DIE(cudaMalloc(&p, std::max<size_t>(bytes(), 1))); }
  ~Buf() { cudaFree(p); }
  Buf(const Buf &) = delete;
  size_t bytes() const { return n * sizeOf(t); }
  template <typename T> T *as() const { return static_cast<T *>(p); }
  void poison() { CUDA_OR_DIE(cudaMemset(p, 0xFF, bytes())); }
};

__device__ unsigned hash32(unsigned long long i, unsigned seed) {
  unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31; x *= 0x94D049BB133111EBull; x ^= x >> 29;
  return unsigned(x >> 32);
}
// Uniform in [-1, 1) for floats, integers in [-4, 4] for i8 (exact GEMMs).
template <typename T> __global__ void fillKernel(T *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = hash32(i, seed);
    if constexpr (std::is_same<T, int8_t>::value) {
      p[i] = int8_t(int(h % 9u) - 4);
    } else {
      float u = (h >> 8) * (2.0f / 16777216.0f) - 1.0f;
      if (u == 0.0f) u = 0.5f;  // never zeros
      p[i] = T(u);
    }
  }
}
unsigned nextSeed = 1;
void fill(Buf &b) {
  unsigned seed = nextSeed++;
  dim3 grid(1024), block(256);
  switch (b.t) {
  case DType::F16: fillKernel<<<grid, block>>>(b.as<__half>(), b.n, seed); break;
  case DType::BF16: fillKernel<<<grid, block>>>(b.as<__nv_bfloat16>(), b.n, seed); break;
  case DType::F32: fillKernel<<<grid, block>>>(b.as<float>(), b.n, seed); break;
  case DType::I8: fillKernel<<<grid, block>>>(b.as<int8_t>(), b.n, seed); break;
  case DType::I32: break;
  }
  CUDA_OR_DIE(cudaGetLastError());
}

// Elements [first, first + count) of b as doubles.
std::vector<double> host(const Buf &b, size_t first = 0, size_t count = SIZE_MAX) {
  count = std::min(count, b.n - first);
  std::vector<unsigned char> raw(count * sizeOf(b.t));
  CUDA_OR_DIE(cudaMemcpy(raw.data(), static_cast<char *>(b.p) + first * sizeOf(b.t), raw.size(),
                         cudaMemcpyDeviceToHost));
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i) {
    const unsigned char *q = raw.data() + i * sizeOf(b.t);
    switch (b.t) {
    case DType::F16: { __half h; std::memcpy(&h, q, 2); v[i] = __half2float(h); break; }
    case DType::BF16: { __nv_bfloat16 h; std::memcpy(&h, q, 2); v[i] = __bfloat162float(h); break; }
    case DType::F32: { float f; std::memcpy(&f, q, 4); v[i] = f; break; }
    case DType::I8: v[i] = double(*reinterpret_cast<const int8_t *>(q)); break;
    case DType::I32: { int32_t x; std::memcpy(&x, q, 4); v[i] = x; break; }
    }
  }
  return v;
}

// gpu_check.py's rule: |out - ref| <= tol * (|ref| + mean |ref|); NaN fails.
// Returns the largest error; *bad is set on the first mismatch.
// The error of out against ref relative to each element plus the mean
// magnitude; differences up to absTol (the spacing of the output dtype's
// subnormals, where a correctly rounded result moves that much) count as none.
double compare(const std::vector<double> &ref, const std::vector<double> &out, double tol,
               std::string *bad, double absTol = 0) {
  double scale = 0;
  for (double r : ref) scale += std::fabs(r);
  scale = ref.empty() || scale == 0 ? 1e-30 : scale / ref.size();
  double maxErr = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double err = std::isnan(out[i]) ? INFINITY
                                    : std::max(0.0, std::fabs(out[i] - ref[i]) - absTol) /
                                          (std::fabs(ref[i]) + scale);
    maxErr = std::max(maxErr, err);
    if (!(err <= tol) && bad->empty()) {
      char m[160];
      std::snprintf(m, sizeof m, "sample %zu: %g, expected %g (tolerance %g)", i, out[i], ref[i], tol);
      *bad = m;
    }
  }
  return maxErr;
}

//===-- Timing ------------------------------------------------------------===//

using Launch = std::function<std::string()>;

double eventMs(const Launch &f, std::string *err) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  *err = f();
  cudaEventRecord(b);
  cudaError_t e = cudaEventSynchronize(b);
  if (err->empty()) *err = cudaErr(e, "kernel execution");
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms;
}

// Median time of one launch, after the launch that was checked warmed it up.
double timeMedian(const Launch &f, double firstMs, std::string *err) {
  if (firstMs < 20) eventMs(f, err);  // a second warm-up where it is cheap
  int iters = int(std::clamp(opts.targetS * 1e3 / std::max(firstMs, 1e-3), 3.0, 200.0));
  std::vector<double> t;
  for (int i = 0; i < iters && err->empty(); ++i) t.push_back(eventMs(f, err));
  if (t.empty()) return NAN;
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

//===-- One measurement: check, then time both -----------------------------===//

struct Case {
  Row row;
  Launch tdsl, peer;
  Buf *out = nullptr, *peerOut = nullptr;       // poisoned before the checked launch
  std::function<std::string(double *, double *)> check;  // "" if right; errors of tdsl, peer
};

bool selected(const std::string &kernel) {
  return opts.filter.empty() || kernel.find(opts.filter) != std::string::npos;
}

void runCase(Case &c) {
  Row &r = c.row;
  std::fprintf(stderr, "  %-16s %-22s %-5s ...", r.kernel.c_str(), r.shape.c_str(), r.dtype.c_str());
  std::string err;
  if (c.out) c.out->poison();
  double first = eventMs(c.tdsl, &err);
  if (!err.empty()) {
    r.status = "FAIL: " + err;
  } else if (first > opts.budgetS * 1e3) {
    char m[120];
    std::snprintf(m, sizeof m, "skipped: naive kernel over time budget (one launch %.2f s > %.1f s)",
                  first / 1e3, opts.budgetS);
    r.status = m;
  }
  std::string peerStatus;
  double peerFirst = NAN;
  if (c.peer && r.status == "ok") {
    if (c.peerOut) c.peerOut->poison();
    peerFirst = eventMs(c.peer, &peerStatus);
  }
  peerRan = c.peer && peerStatus.empty() && !std::isnan(peerFirst);
  if (r.status == "ok" && c.check) {
    std::string bad = c.check(&r.maxErr, &r.peerErr);
    if (!bad.empty()) r.status = "FAIL: " + bad;
  }
  if (r.status == "ok") r.tdslMs = timeMedian(c.tdsl, first, &err);
  if (!err.empty()) r.status = "FAIL: " + err;
  if (c.peer && peerStatus.empty() && !std::isnan(peerFirst)) r.peerMs = timeMedian(c.peer, peerFirst, &peerStatus);
  if (!peerStatus.empty()) {
    r.peer += " (failed: " + peerStatus + ")";
    cudaGetLastError();
  }
  if (r.status.rfind("FAIL", 0) == 0) anyFailure = true;
  std::fprintf(stderr, " %s\n", r.status.c_str());
  rows.push_back(r);
}

//===-- Peers: cuBLAS and a copy kernel ------------------------------------===//

cublasHandle_t blas;

__global__ void copyKernel(const float4 *__restrict__ in, float4 *__restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}
// A copy that reads and writes bytes/2 each: the bandwidth peer of a kernel
// moving `bytes` (its inputs read once plus its outputs written once).
struct CopyPeer {
  Buf src, dst;
  // bytes / 2 of f32 elements each way, rounded up to whole float4s.
  explicit CopyPeer(double bytes) : src((size_t(bytes / 2 / 16) + 1) * 4, DType::F32), dst(src.n, DType::F32) {}
  Launch launch() {
    size_t n = src.n / 4;  // float4s
    return [this, n] {
      copyKernel<<<132 * 8, 512>>>(src.as<float4>(), dst.as<float4>(), n);
      return cudaErr(cudaGetLastError(), "copy kernel");
    };
  }
};

cudaDataType blasType(DType t) {
  switch (t) {
  case DType::F16: return CUDA_R_16F;
  case DType::BF16: return CUDA_R_16BF;
  case DType::I8: return CUDA_R_8I;
  case DType::I32: return CUDA_R_32I;
  default: return CUDA_R_32F;
  }
}

// Row-major C[b] (MxN) = A[b] (MxK) @ B[b] (KxN), as column-major
// C^T = B^T A^T: cuBLAS sees B first.
Launch blasGemm(const Buf &A, const Buf &B, Buf &C, long batch, long M, long N, long K,
                cublasComputeType_t compute, float alphaF = 1) {
  return [&, batch, M, N, K, compute, alphaF] {
    static const float zeroF = 0;
    static const int32_t oneI = 1, zeroI = 0;
    const void *alpha = compute == CUBLAS_COMPUTE_32I ? (const void *)&oneI : &alphaF;
    const void *beta = compute == CUBLAS_COMPUTE_32I ? (const void *)&zeroI : &zeroF;
    return blasErr(cublasGemmStridedBatchedEx(
        blas, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K), alpha, B.p, blasType(B.t), int(N),
        K * N, A.p, blasType(A.t), int(K), M * K, beta, C.p, blasType(C.t), int(N), M * N, int(batch),
        compute, CUBLAS_GEMM_DEFAULT));
  };
}

//===-- The suite ----------------------------------------------------------===//

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

// Sampled rows of C[b] = epi(alpha A[b] @ B[b] + bias) against f64; the
// peer's against alpha A[b] @ B[b].
std::string checkGemm(const Buf &A, const Buf &B, const Buf *bias, const Buf &C, const Buf *peerC,
                      long batch, long M, long N, long K, int epi, double tol, double *err,
                      double *peerErr, double alpha = 1) {
  std::vector<double> biasH = bias ? host(*bias) : std::vector<double>();
  std::string bad, peerBad;
  *err = *peerErr = 0;
  for (long b = 0; b < batch; b += std::max(1L, batch - 1)) {
    std::vector<double> Bh = host(B, size_t(b) * K * N, size_t(K) * N);
    for (long m : {0L, 1L, M / 2, M - 1}) {
      std::vector<double> Ah = host(A, (size_t(b) * M + m) * K, K), ref(N, 0.0), bare(N, 0.0);
      for (long k = 0; k < K; ++k)
        for (long n = 0; n < N; ++n) bare[n] += Ah[k] * Bh[size_t(k) * N + n];
      for (long n = 0; n < N; ++n) {
        bare[n] *= alpha;
        double v = bare[n] + (bias ? biasH[n] : 0.0);
        ref[n] = epi == 1 ? std::max(v, 0.0) : epi == 2 ? gelu(v) : v;
      }
      size_t off = (size_t(b) * M + m) * N;
      *err = std::max(*err, compare(ref, host(C, off, N), tol, &bad));
      if (peerC && peerRan) *peerErr = std::max(*peerErr, compare(bare, host(*peerC, off, N), tol, &peerBad));
    }
  }
  if (!peerC || !peerRan) *peerErr = NAN;
  if (!peerBad.empty()) std::fprintf(stderr, " [peer check: %s]", peerBad.c_str());
  return bad;
}

struct GemmSpec {
  const char *kernel, *dtype;
  DType in, out;
  cublasComputeType_t compute;
  double tol;
  std::function<tdsl_status(void *, void *, void *, long, long, long)> launch;
};

void gemmCase(const GemmSpec &g, long M, long N, long K) {
  Buf A(size_t(M) * K, g.in), B(size_t(K) * N, g.in), C(size_t(M) * N, g.out), P(size_t(M) * N, g.out);
  fill(A), fill(B);
  Case c;
  c.row = {g.kernel, fmtShape({M, N, K}), g.dtype, "cuBLAS"};
  c.row.flops = 2.0 * M * N * K;
  c.row.bytes = double(A.bytes() + B.bytes() + C.bytes());
  c.row.computeBound = true;
  c.tdsl = [&] { return tdslErr(g.launch(A.p, B.p, C.p, M, K, N)); };
  c.peer = blasGemm(A, B, P, 1, M, N, K, g.compute);
  c.out = &C, c.peerOut = &P;
  double tol = g.tol * (g.out == DType::F32 ? std::max(1.0, K / 256.0) : 1.0);
  c.check = [&, tol](double *e, double *pe) { return checkGemm(A, B, nullptr, C, &P, 1, M, N, K, 0, tol, e, pe); };
  runCase(c);
}

void suiteGemms() {
  std::vector<GemmSpec> specs = {
      {"gemm", "f16", DType::F16, DType::F16, CUBLAS_COMPUTE_32F, 1e-2,
       [](void *a, void *b, void *c, long M, long K, long N) {
         return tdsl_gemm_f16((const tdsl_f16 *)a, (const tdsl_f16 *)b, (tdsl_f16 *)c, M, K, N, 0); }},
      {"gemm", "bf16", DType::BF16, DType::BF16, CUBLAS_COMPUTE_32F, 1.6e-2,
       [](void *a, void *b, void *c, long M, long K, long N) {
         return tdsl_gemm_bf16((const tdsl_bf16 *)a, (const tdsl_bf16 *)b, (tdsl_bf16 *)c, M, K, N, 0); }},
      {"gemm", "f32", DType::F32, DType::F32, CUBLAS_COMPUTE_32F, 1e-5,
       [](void *a, void *b, void *c, long M, long K, long N) {
         return tdsl_gemm_f32((const float *)a, (const float *)b, (float *)c, M, K, N, 0); }},
      {"gemm", "tf32", DType::F32, DType::F32, CUBLAS_COMPUTE_32F_FAST_TF32, 5e-3,
       [](void *a, void *b, void *c, long M, long K, long N) {
         return tdsl_gemm_tf32((const float *)a, (const float *)b, (float *)c, M, K, N, 0); }},
      {"gemm", "i8", DType::I8, DType::I32, CUBLAS_COMPUTE_32I, 0,
       [](void *a, void *b, void *c, long M, long K, long N) {
         return tdsl_gemm_i8((const int8_t *)a, (const int8_t *)b, (int32_t *)c, M, K, N, 0); }},
  };
  std::vector<std::array<long, 3>> shapes;
  if (opts.quick) shapes = {{256, 256, 256}, {255, 257, 127}};
  else shapes = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}, {4095, 4097, 1023}};
  for (auto &g : specs) {
    if (!selected(std::string("gemm_") + g.dtype)) continue;
    for (auto &s : shapes) gemmCase(g, s[0], s[1], s[2]);
  }
}

void suiteGemmVariants() {
  long M = opts.quick ? 256 : 4096, N = M, K = M, NB = opts.quick ? 2 : 32, BM = opts.quick ? 128 : 1024;
  if (selected("bgemm")) {
    Buf A(size_t(NB) * BM * BM, DType::F16), B(A.n, DType::F16), C(A.n, DType::F16), P(A.n, DType::F16);
    fill(A), fill(B);
    Case c;
    c.row = {"bgemm", fmtShape({NB, BM, BM, BM}), "f16", "cuBLAS"};
    c.row.flops = 2.0 * NB * BM * BM * BM;
    c.row.bytes = 3.0 * A.bytes();
    c.row.computeBound = true;
    c.tdsl = [&] { return tdslErr(tdsl_bgemm_f16(A.as<tdsl_f16>(), B.as<tdsl_f16>(), C.as<tdsl_f16>(), NB, BM, BM, BM, 0)); };
    c.peer = blasGemm(A, B, P, NB, BM, BM, BM, CUBLAS_COMPUTE_32F);
    c.out = &C, c.peerOut = &P;
    c.check = [&](double *e, double *pe) { return checkGemm(A, B, nullptr, C, &P, NB, BM, BM, BM, 0, 1e-2, e, pe); };
    runCase(c);
  }
  for (int epi : {1, 2}) {
    const char *name = epi == 1 ? "gemm_bias_relu" : "gemm_bias_gelu";
    if (!selected(name)) continue;
    Buf A(size_t(M) * K, DType::F16), B(size_t(K) * N, DType::F16), bias(N, DType::F32),
        C(size_t(M) * N, DType::F16), P(size_t(M) * N, DType::F16);
    fill(A), fill(B), fill(bias);
    Case c;
    c.row = {name, fmtShape({M, N, K}), "f16", "cuBLAS GEMM, no epilogue"};
    c.row.flops = 2.0 * M * N * K;
    c.row.bytes = double(A.bytes() + B.bytes() + bias.bytes() + C.bytes());
    c.row.computeBound = true;
    c.tdsl = [&, epi] {
      return tdslErr(epi == 1 ? tdsl_gemm_bias_relu(A.as<tdsl_f16>(), B.as<tdsl_f16>(), bias.as<float>(), C.as<tdsl_f16>(), M, K, N, 0)
                              : tdsl_gemm_bias_gelu(A.as<tdsl_f16>(), B.as<tdsl_f16>(), bias.as<float>(), C.as<tdsl_f16>(), M, K, N, 0));
    };
    c.peer = blasGemm(A, B, P, 1, M, N, K, CUBLAS_COMPUTE_32F);
    c.out = &C, c.peerOut = &P;
    c.check = [&, epi](double *e, double *pe) { return checkGemm(A, B, &bias, C, &P, 1, M, N, K, epi, 1e-2, e, pe); };
    runCase(c);
  }
}

// alpha * A @ B written with the factor inside the product (PolyBench's
// 2mm): the fusion stage pulls alpha out of the sum, so it should run as
// the plain GEMM does. Peer: cuBLAS with the same alpha.
void suiteScaledGemm() {
  long M = opts.quick ? 256 : 4096, N = M, K = M;
  if (!selected("gemm_scaled")) return;
  const float alpha = 0.5f;
  Buf A(size_t(M) * K, DType::F16), B(size_t(K) * N, DType::F16), C(size_t(M) * N, DType::F16),
      P(size_t(M) * N, DType::F16);
  fill(A), fill(B);
  Case c;
  c.row = {"gemm_scaled", fmtShape({M, N, K}), "f16", "cuBLAS, alpha = 0.5"};
  c.row.flops = 2.0 * M * N * K;
  c.row.bytes = double(A.bytes() + B.bytes() + C.bytes());
  c.row.computeBound = true;
  c.tdsl = [&] { return tdslErr(tdsl_gemm_scaled(A.as<tdsl_f16>(), B.as<tdsl_f16>(), alpha, C.as<tdsl_f16>(), M, K, N, 0)); };
  c.peer = blasGemm(A, B, P, 1, M, N, K, CUBLAS_COMPUTE_32F, alpha);
  c.out = &C, c.peerOut = &P;
  c.check = [&](double *e, double *pe) { return checkGemm(A, B, nullptr, C, &P, 1, M, N, K, 0, 1e-2, e, pe, alpha); };
  runCase(c);
}

// A Llama-style gated MLP, Y = silu(X Wg) * (X Wu), at T = 4096 tokens, D =
// 4096, F = 11008. Peer: the two GEMMs alone by cuBLAS (f16 out), the sum
// of its parts without the elementwise product and silu.
void suiteGatedMlp() {
  long T = opts.quick ? 256 : 4096, D = opts.quick ? 256 : 4096, F = opts.quick ? 384 : 11008;
  if (!selected("gated_mlp")) return;
  Buf X(size_t(T) * D, DType::F16), Wg(size_t(D) * F, DType::F16), Wu(size_t(D) * F, DType::F16),
      Y(size_t(T) * F, DType::F16), G(size_t(T) * F, DType::F16), U(size_t(T) * F, DType::F16);
  fill(X), fill(Wg), fill(Wu);
  Case c;
  c.row = {"gated_mlp", fmtShape({T, D, F}), "f16", "cuBLAS, its two GEMMs"};
  c.row.flops = 4.0 * T * D * F;
  c.row.bytes = double(X.bytes() + Wg.bytes() + Wu.bytes() + Y.bytes());
  c.row.computeBound = true;
  c.tdsl = [&] {
    return tdslErr(tdsl_gated_mlp(X.as<tdsl_f16>(), Wg.as<tdsl_f16>(), Wu.as<tdsl_f16>(), Y.as<tdsl_f16>(), T, D, F, 0));
  };
  Launch g = blasGemm(X, Wg, G, 1, T, F, D, CUBLAS_COMPUTE_32F), u = blasGemm(X, Wu, U, 1, T, F, D, CUBLAS_COMPUTE_32F);
  c.peer = [g, u] {
    std::string e = g();
    return e.empty() ? u() : e;
  };
  c.out = &Y;
  c.check = [&](double *e, double *pe) {
    std::string bad;
    *e = 0, *pe = NAN;
    std::vector<double> Wgh = host(Wg), Wuh = host(Wu);
    for (long t : {0L, T / 2, T - 1}) {
      std::vector<double> Xh = host(X, size_t(t) * D, D), gs(F, 0.0), us(F, 0.0), ref(F);
      for (long d = 0; d < D; ++d)
        for (long f = 0; f < F; ++f) {
          gs[f] += Xh[d] * Wgh[size_t(d) * F + f];
          us[f] += Xh[d] * Wuh[size_t(d) * F + f];
        }
      for (long f = 0; f < F; ++f) ref[f] = gs[f] / (1 + std::exp(-gs[f])) * us[f];
      *e = std::max(*e, compare(ref, host(Y, size_t(t) * F, F), 1e-2, &bad));
    }
    return bad;
  };
  runCase(c);
}

// A memory-bound case: peer is the copy kernel moving the same bytes.
// ref(row) gives the f64 reference of output row `row` (length rowLen).
void memCase(const char *kernel, std::string shape, const char *dtype, Launch tdsl, Buf &out,
             double bytes, double flops, std::vector<long> sampleRows, size_t rowLen, double tol,
             std::function<std::vector<double>(long)> ref) {
  CopyPeer copy(bytes);
  Case c;
  c.row = {kernel, shape, dtype, "copy kernel, same bytes"};
  c.row.bytes = bytes, c.row.flops = flops;
  c.tdsl = tdsl;
  c.peer = copy.launch();
  c.out = &out;
  c.check = [&](double *e, double *pe) {
    std::string bad;
    *e = 0, *pe = NAN;
    double absTol = out.t == DType::F16 ? std::ldexp(1.0, -24) : 0.0;
    for (long r : sampleRows)
      *e = std::max(*e, compare(ref(r), host(out, size_t(r) * rowLen, rowLen), tol, &bad, absTol));
    return bad;
  };
  runCase(c);
}

void suiteMemoryBound() {
  long R = opts.quick ? 257 : 8192, Cn = opts.quick ? 300 : 8192;
  std::vector<long> sample = {0, 1, R / 2, R - 1};
  if (selected("elementwise")) {
    long ER = opts.quick ? R : 16384, EC = opts.quick ? Cn : 16384;
    Buf X(size_t(ER) * EC, DType::F32), a(EC, DType::F32), b(EC, DType::F32), Y(X.n, DType::F32);
    fill(X), fill(a), fill(b);
    const float scale = 0.75f;
    auto ah = host(a), bh = host(b);
    memCase("elementwise", fmtShape({ER, EC}), "f32",
            [&] { return tdslErr(tdsl_elementwise(X.as<float>(), a.as<float>(), b.as<float>(), scale, Y.as<float>(), ER, EC, 0)); },
            Y, 2.0 * X.bytes(), 3.0 * X.n, {0, 1, ER / 2, ER - 1}, EC, 1e-5, [&](long r) {
              auto x = host(X, size_t(r) * EC, EC);
              for (long c = 0; c < EC; ++c) x[c] = std::max(ah[c] * x[c] + bh[c], 0.0) * scale;
              return x;
            });
  }
  if (selected("elementwise_f16")) {
    long ER = opts.quick ? R : 16384, EC = opts.quick ? Cn : 16384;
    Buf X(size_t(ER) * EC, DType::F16), a(EC, DType::F16), b(EC, DType::F16), Y(X.n, DType::F16);
    fill(X), fill(a), fill(b);
    auto ah = host(a), bh = host(b);
    memCase("elementwise_f16", fmtShape({ER, EC}), "f16",
            [&] { return tdslErr(tdsl_elementwise_f16(X.as<tdsl_f16>(), a.as<tdsl_f16>(), b.as<tdsl_f16>(), Y.as<tdsl_f16>(), ER, EC, 0)); },
            Y, 2.0 * X.bytes(), 3.0 * X.n, {0, 1, ER / 2, ER - 1}, EC, 1e-2, [&](long r) {
              auto x = host(X, size_t(r) * EC, EC);
              for (long c = 0; c < EC; ++c) x[c] = std::max(ah[c] * x[c] + bh[c], 0.0);
              return x;
            });
  }
  if (selected("transpose")) {
    Buf X(size_t(R) * Cn, DType::F32), Y(X.n, DType::F32);
    fill(X);
    memCase("transpose", fmtShape({R, Cn}), "f32",
            [&] { return tdslErr(tdsl_transpose(X.as<float>(), Y.as<float>(), R, Cn, 0)); }, Y, 2.0 * X.bytes(), 0,
            {0, 1, Cn / 2, Cn - 1}, R, 0, [&](long j) {  // row j of Y is column j of X
              std::vector<double> col(R);
              for (long i = 0; i < R; ++i) col[i] = host(X, size_t(i) * Cn + j, 1)[0];
              return col;
            });
  }
  if (selected("rowsum")) {
    Buf X(size_t(R) * Cn, DType::F32), Y(R, DType::F32);
    fill(X);
    memCase("rowsum", fmtShape({R, Cn}), "f32", [&] { return tdslErr(tdsl_rowsum(X.as<float>(), Y.as<float>(), R, Cn, 0)); },
            Y, double(X.bytes() + Y.bytes()), double(X.n), {0}, R, 1e-5 * std::max(1.0, Cn / 256.0), [&](long) {
              std::vector<double> ref;
              for (long r = 0; r < R; ++r) {
                auto x = host(X, size_t(r) * Cn, Cn);
                double s = 0;
                for (double v : x) s += v;
                ref.push_back(s);
              }
              return ref;
            });
  }
}

// The row-wise chains (softmax, layernorm, rmsnorm, cross-entropy) at the
// suite's square shape and at long rows (a 32000-word vocabulary, 131072)
// and short ones (64), each against the copy kernel moving its bytes.
void suiteRows() {
  std::vector<std::array<long, 2>> shapes = {{8192, 8192}, {2048, 32000}, {128, 131072}, {262144, 64}};
  if (opts.quick) shapes = {{257, 300}};
  for (const auto &Shape : shapes) {
  const long R = Shape[0], Cn = Shape[1];
  std::vector<long> sample = {0, 1, R / 2, R - 1};
  if (selected("softmax")) {
    Buf X(size_t(R) * Cn, DType::F16), Y(X.n, DType::F16);
    fill(X);
    memCase("softmax", fmtShape({R, Cn}), "f16", [&] { return tdslErr(tdsl_softmax(X.as<tdsl_f16>(), Y.as<tdsl_f16>(), R, Cn, 0)); },
            Y, 2.0 * X.bytes(), 4.0 * X.n, sample, Cn, 1e-3, [&](long r) {
              auto x = host(X, size_t(r) * Cn, Cn);
              double mx = *std::max_element(x.begin(), x.end()), s = 0;
              for (double &v : x) s += (v = std::exp(v - mx));
              for (double &v : x) v /= s;
              return x;
            });
  }
  if (selected("layernorm")) {
    Buf X(size_t(R) * Cn, DType::F16), g(Cn, DType::F32), b(Cn, DType::F32), Y(X.n, DType::F16);
    fill(X), fill(g), fill(b);
    auto gh = host(g), bh = host(b);
    memCase("layernorm", fmtShape({R, Cn}), "f16",
            [&] { return tdslErr(tdsl_layernorm(X.as<tdsl_f16>(), g.as<float>(), b.as<float>(), Y.as<tdsl_f16>(), R, Cn, 0)); },
            Y, 2.0 * X.bytes() + g.bytes() + b.bytes(), 8.0 * X.n, sample, Cn, 1e-2, [&](long r) {
              auto x = host(X, size_t(r) * Cn, Cn);
              double mean = 0, var = 0;
              for (double v : x) mean += v;
              mean /= Cn;
              for (double v : x) var += (v - mean) * (v - mean);
              double rstd = 1 / std::sqrt(var / Cn + 1e-5);
              for (long c = 0; c < Cn; ++c) x[c] = (x[c] - mean) * rstd * gh[c] + bh[c];
              return x;
            });
  }
  if (selected("rmsnorm")) {
    Buf X(size_t(R) * Cn, DType::F16), w(Cn, DType::F16), Y(X.n, DType::F16);
    fill(X), fill(w);
    auto wh = host(w);
    memCase("rmsnorm", fmtShape({R, Cn}), "f16",
            [&] { return tdslErr(tdsl_rmsnorm(X.as<tdsl_f16>(), w.as<tdsl_f16>(), Y.as<tdsl_f16>(), R, Cn, 0)); },
            Y, 2.0 * X.bytes() + w.bytes(), 4.0 * X.n, sample, Cn, 1e-2, [&](long r) {
              auto x = host(X, size_t(r) * Cn, Cn);
              double ss = 0;
              for (double v : x) ss += v * v;
              double inv = 1 / std::sqrt(ss / Cn + 1e-6);
              for (long c = 0; c < Cn; ++c) x[c] = x[c] * inv * wh[c];
              return x;
            });
  }
  if (selected("cross_entropy")) {
    Buf X(size_t(R) * Cn, DType::F16), label(R, DType::I32), loss(R, DType::F32);
    fill(X);
    std::vector<int32_t> lh(R);
    for (long r = 0; r < R; ++r) lh[r] = int32_t((r * 7919) % Cn);
    CUDA_OR_DIE(cudaMemcpy(label.p, lh.data(), label.bytes(), cudaMemcpyHostToDevice));
    memCase("cross_entropy", fmtShape({R, Cn}), "f16",
            [&] { return tdslErr(tdsl_cross_entropy(X.as<tdsl_f16>(), label.as<int32_t>(), loss.as<float>(), R, Cn, 0)); },
            loss, double(X.bytes() + label.bytes() + loss.bytes()), 4.0 * X.n, {0}, R,
            1e-4 * std::max(1.0, std::log(double(Cn))), [&](long) {
              std::vector<double> ref;
              for (long r = 0; r < R; ++r) {
                auto x = host(X, size_t(r) * Cn, Cn);
                double mx = *std::max_element(x.begin(), x.end()), s = 0;
                for (double v : x) s += std::exp(v - mx);
                ref.push_back(std::log(s) + mx - x[lh[r]]);
              }
              return ref;
            });
  }
  }
}

void suiteAttention() {
  if (!selected("attention")) return;
  long Bn = opts.quick ? 1 : 4, H = opts.quick ? 2 : 16, S = opts.quick ? 128 : 4096;
  for (long D : {64L, 128L}) {
    size_t n = size_t(Bn) * H * S * D;
    Buf Q(n, DType::F16), K(n, DType::F16), V(n, DType::F16), O(n, DType::F16);
    fill(Q), fill(K), fill(V);
    const float scale = float(1 / std::sqrt(double(D)));
    Case c;
    c.row = {"attention", "b" + std::to_string(Bn) + " h" + std::to_string(H) + " s" + std::to_string(S) + " d" + std::to_string(D),
             "f16", "SDPA (Python side)"};
    c.row.flops = 4.0 * Bn * H * S * S * D;
    c.row.bytes = 4.0 * Q.bytes();
    c.row.computeBound = true;
    c.tdsl = [&] {
      return tdslErr(tdsl_attention(Q.as<tdsl_f16>(), K.as<tdsl_f16>(), V.as<tdsl_f16>(), scale, O.as<tdsl_f16>(), Bn, H, S, D, S, 0));
    };
    c.out = &O;
    c.check = [&](double *e, double *pe) {  // rows of the first and the last head
      std::string bad;
      *e = 0, *pe = NAN;
      for (size_t head : {size_t(0), size_t(Bn) * H - 1}) {
        auto Kh = host(K, head * S * D, S * D), Vh = host(V, head * S * D, S * D);
        for (long s : {0L, S / 2, S - 1}) {
          auto q = host(Q, (head * S + s) * D, D);
          std::vector<double> p(S), o(D, 0.0);
          double mx = -INFINITY, l = 0;
          for (long t = 0; t < S; ++t) {
            double acc = 0;
            for (long d = 0; d < D; ++d) acc += q[d] * Kh[t * D + d];
            mx = std::max(mx, p[t] = acc * scale);
          }
          for (double &v : p) l += (v = std::exp(v - mx));
          for (long t = 0; t < S; ++t)
            for (long d = 0; d < D; ++d) o[d] += p[t] / l * Vh[t * D + d];
          *e = std::max(*e, compare(o, host(O, (head * S + s) * D, D), 1e-2, &bad));
        }
      }
      return bad;
    };
    runCase(c);
  }
}

//===-- Ablation: the same GEMM built with the pipeline cut after each pass --===//

void suiteAblation() {
  if (opts.ablation.empty()) return;
  // Each library holds the same kernel (bench/suite/gemm_<type>.tdsl) built
  // another way: a rung of the pass ladder or a schedule variant.
  bool f32 = opts.ablationType == "f32";
  DType t = f32 ? DType::F32 : DType::F16;
  std::string symbol = std::string("tdsl_gemm_") + (f32 ? "f32" : "f16");
  double tol = f32 ? 1e-5 : 1e-2;
  long M = opts.quick ? 256 : 4096;
  Buf A(size_t(M) * M, t), B(A.n, t), C(A.n, t), P(A.n, t);
  fill(A), fill(B);
  size_t start = 0;
  std::string list = opts.ablation + ",";
  for (size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1) {
    std::string item = list.substr(start, comma - start), name = item.substr(0, item.find('=')),
                path = item.substr(item.find('=') + 1);
    if (item.empty()) continue;
    Case c;
    c.row = {"ablation:" + name, fmtShape({M, M, M}), f32 ? "f32" : "f16", "cuBLAS"};
    c.row.flops = 2.0 * M * M * M;
    c.row.bytes = 3.0 * A.bytes();
    c.row.computeBound = true;
    void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    using Fn = tdsl_status (*)(const void *, const void *, void *, int64_t, int64_t, int64_t, cudaStream_t);
    Fn fn = lib ? reinterpret_cast<Fn>(dlsym(lib, symbol.c_str())) : nullptr;
    if (!fn) {
      c.row.status = "FAIL: cannot load " + symbol + " from " + path + ": " + (lib ? "no symbol" : dlerror());
      anyFailure = true;
      rows.push_back(c.row);
      continue;
    }
    c.tdsl = [&, fn] {
      tdsl_status s = fn(A.p, B.p, C.p, M, M, M, 0);
      return s == TDSL_SUCCESS ? cudaErr(cudaGetLastError(), "after the launch")
                               : std::string("launcher status ") + std::to_string(int(s));
    };
    c.peer = blasGemm(A, B, P, 1, M, M, M, CUBLAS_COMPUTE_32F);
    c.out = &C, c.peerOut = &P;
    c.check = [&](double *e, double *pe) { return checkGemm(A, B, nullptr, C, &P, 1, M, M, M, 0, tol, e, pe); };
    runCase(c);
  }
}

//===-- Report --------------------------------------------------------------===//

double copyPeakTBs = NAN;

void measureCopyPeak() {
  CopyPeer copy(2.0 * (1ull << 30));  // 1 GiB read + 1 GiB written
  std::string err;
  Launch f = copy.launch();
  double first = eventMs(f, &err);
  double ms = timeMedian(f, first, &err);
  copyPeakTBs = err.empty() ? 2.0 * (1ull << 30) / (ms * 1e-3) / 1e12 : NAN;
}

std::string jsonEscape(const std::string &s) {
  std::string o;
  for (char ch : s) o += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
  return o;
}
std::string num(double v) {
  if (std::isnan(v) || std::isinf(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

void report(const cudaDeviceProp &prop) {
  // Matrix peaks: the best cuBLAS rate per dtype measured in this run.
  auto rate = [](const Row &r, double ms) { return r.computeBound ? r.flops / (ms * 1e-3) / 1e12 : r.bytes / (ms * 1e-3) / 1e12; };
  auto peakOf = [&](const std::string &dtype) {
    double best = NAN;
    for (auto &r : rows)
      if (r.dtype == dtype && r.computeBound && r.peer == "cuBLAS" && !std::isnan(r.peerMs))
        best = std::isnan(best) ? rate(r, r.peerMs) : std::max(best, rate(r, r.peerMs));
    return best;
  };
  std::printf("\ntdsl-bench on %s (%d SMs); copy peak %.2f TB/s (1 GiB, read + write)\n", prop.name,
              prop.multiProcessorCount, copyPeakTBs);
  std::printf("matrix peaks (best cuBLAS in this run, TFLOP/s): f16 %.0f, bf16 %.0f, tf32 %.0f, f32 %.1f, i8 %.0f (TOPS)\n\n",
              peakOf("f16"), peakOf("bf16"), peakOf("tf32"), peakOf("f32"), peakOf("i8"));
  std::printf("| kernel | shape | dtype | tdslc ms | peer | peer ms | ratio (peer/tdslc) | tdslc rate | fraction of peak | max err | status |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  FILE *js = std::fopen(opts.jsonPath.c_str(), "w");
  if (js) std::fprintf(js, "{\"device\": \"%s\", \"copy_peak_TBs\": %s, \"rows\": [\n", jsonEscape(prop.name).c_str(), num(copyPeakTBs).c_str());
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row &r = rows[i];
    double tRate = std::isnan(r.tdslMs) ? NAN : rate(r, r.tdslMs);
    double peak = r.computeBound ? peakOf(r.dtype) : copyPeakTBs;
    char tdslS[32] = "-", peerS[32] = "-", ratioS[32] = "-", rateS[40] = "-", fracS[32] = "-", errS[32] = "-";
    if (!std::isnan(r.tdslMs)) std::snprintf(tdslS, sizeof tdslS, "%.3f", r.tdslMs);
    if (!std::isnan(r.peerMs)) std::snprintf(peerS, sizeof peerS, "%.3f", r.peerMs);
    if (!std::isnan(r.tdslMs) && !std::isnan(r.peerMs)) std::snprintf(ratioS, sizeof ratioS, "%.4f", r.peerMs / r.tdslMs);
    if (!std::isnan(tRate)) std::snprintf(rateS, sizeof rateS, r.computeBound ? "%.2f TFLOP/s" : "%.3f TB/s", tRate);
    if (!std::isnan(tRate) && !std::isnan(peak)) std::snprintf(fracS, sizeof fracS, "%.4f", tRate / peak);
    if (!std::isnan(r.maxErr)) std::snprintf(errS, sizeof errS, "%.2e", r.maxErr);
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.kernel.c_str(), r.shape.c_str(),
                r.dtype.c_str(), tdslS, r.peer.c_str(), peerS, ratioS, rateS, fracS, errS, r.status.c_str());
    if (js)
      std::fprintf(js,
                   "  {\"kernel\": \"%s\", \"shape\": \"%s\", \"dtype\": \"%s\", \"peer\": \"%s\", \"status\": \"%s\", "
                   "\"tdsl_ms\": %s, \"peer_ms\": %s, \"flops\": %s, \"bytes\": %s, \"compute_bound\": %s, "
                   "\"max_err\": %s, \"peer_err\": %s, \"peak\": %s}%s\n",
                   jsonEscape(r.kernel).c_str(), jsonEscape(r.shape).c_str(), r.dtype.c_str(), jsonEscape(r.peer).c_str(),
                   jsonEscape(r.status).c_str(), num(r.tdslMs).c_str(), num(r.peerMs).c_str(), num(r.flops).c_str(),
                   num(r.bytes).c_str(), r.computeBound ? "true" : "false", num(r.maxErr).c_str(), num(r.peerErr).c_str(),
                   num(peak).c_str(), i + 1 < rows.size() ? "," : "");
  }
  if (js) {
    std::fprintf(js, "]}\n");
    std::fclose(js);
    std::printf("\nJSON: %s\n", opts.jsonPath.c_str());
  }
}

int usage() {
  std::fprintf(stderr, "usage: tdsl-bench [--quick] [--self-test] [--filter SUBSTR] [--json FILE] [--budget-s S] "
                       "[--target-s S] [--ablation NAME=LIB.so,...] [--ablation-type f32|f16]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--quick") opts.quick = true;
    else if (a == "--self-test") opts.selfTest = opts.quick = true;
    else if (a == "--filter") opts.filter = value();
    else if (a == "--json") opts.jsonPath = value();
    else if (a == "--budget-s") opts.budgetS = std::atof(value().c_str());
    else if (a == "--target-s") opts.targetS = std::atof(value().c_str());
    else if (a == "--ablation") opts.ablation = value();
    else if (a == "--ablation-type") opts.ablationType = value();
    else return usage();
  }
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("tdsl-bench: no CUDA device present (%s); nothing was checked or timed\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 2;
  }
  cudaDeviceProp prop;
  CUDA_OR_DIE(cudaGetDeviceProperties(&prop, 0));
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "tdsl-bench: cublasCreate failed\n");
    return 1;
  }
  if (opts.selfTest) opts.targetS = 0.01;
  std::fprintf(stderr, "tdsl-bench: %s%s\n", prop.name, opts.quick ? " (quick shapes)" : "");
  measureCopyPeak();
  suiteGemms();
  suiteGemmVariants();
  suiteScaledGemm();
  suiteGatedMlp();
  suiteMemoryBound();
  suiteRows();
  suiteAttention();
  suiteAblation();
  report(prop);
  cublasDestroy(blas);
  return anyFailure ? 1 : 0;
}
