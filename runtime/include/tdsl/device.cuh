//===- tdsl/device.cuh - The helpers every tdslc-generated .cu includes ---===//
//
// They give the GPU the semantics of ir/Interpreter.cpp where CUDA's own
// differ or are undefined, and the host code of the launchers what it has
// in common. A generated .cu includes this header (tdslc --self-contained
// pastes it instead). Everything is inline or a template in a named
// namespace: ODR-safe when several generated files are linked together, and
// nvcc does not warn about the helpers a file happens not to use. The
// generated file says `using namespace tdsl_generated;`; nothing here is
// meant for code that tdslc did not write.
//
// It compiles for sm_75 and newer, with 32- and 64-bit indices, and with
// -DTDSL_ALWAYS_INDEX64 (see kAlwaysIndex64).
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_DEVICE_CUH
#define TDSL_DEVICE_CUH

#include <tdsl/runtime.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <float.h>
#include <initializer_list>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>

namespace tdsl_generated {

//===-- Launch bounds -----------------------------------------------------===//

// The most threads an SM holds on the architecture being compiled. A
// __launch_bounds__ asking for more resident blocks than that is an error
// of ptxas, so a launch whose blocks might not fit asks through
// tdsl_min_blocks for as many as do: a block of 1024 threads that wants
// two an SM gets two on sm_80 and sm_90, one on sm_75, sm_86 and sm_89.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
constexpr int tdsl_sm_threads = 1024;
#elif defined(__CUDA_ARCH__) &&                                                                    \
    (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890 || __CUDA_ARCH__ >= 1200)
constexpr int tdsl_sm_threads = 1536;
#else
constexpr int tdsl_sm_threads = 2048;
#endif
constexpr int tdsl_min_blocks(int threads, int blocks) {
  return blocks * threads <= tdsl_sm_threads ? blocks : tdsl_sm_threads / threads;
}

/// The blocks a launch of 1024 threads asks for where no knob chose: none
/// for a 32-bit Index (0 writes no .minnctapersm, as if unasked); one for
/// a 64-bit Index, whose addresses take two registers each, where ptxas
/// unasked may hold the launch to two blocks' 32 registers and spill.
template <typename Index> constexpr int tdsl_index_blocks() { return sizeof(Index) == 8 ? 1 : 0; }

//===-- Device helpers: the semantics of ir/Interpreter.cpp ---------------===//

template <typename T> struct tdsl_int_limits;
template <> struct tdsl_int_limits<int8_t> {
  static constexpr int8_t lowest = INT8_MIN, highest = INT8_MAX;
};
template <> struct tdsl_int_limits<int32_t> {
  static constexpr int32_t lowest = INT32_MIN, highest = INT32_MAX;
};
template <> struct tdsl_int_limits<int64_t> {
  static constexpr int64_t lowest = INT64_MIN, highest = INT64_MAX;
};

// Integer division and remainder truncate as in C, but dividing by zero
// gives 0 and INT_MIN / -1 wraps (the IR defines both; C leaves them
// undefined).
template <typename T> __host__ __device__ __forceinline__ T tdsl_div(T a, T b) {
  using U = typename std::make_unsigned<T>::type;
  return b == 0 ? T(0) : b == T(-1) ? T(U(0) - U(a)) : T(a / b);
}
template <typename T> __host__ __device__ __forceinline__ T tdsl_mod(T a, T b) {
  return b == 0 || b == T(-1) ? T(0) : T(a % b);
}
// a / b and a % b, truncating as in C, for a divisor b > 0 known only at
// run time. A 64-bit division is a subroutine call on the GPU: about 70
// instructions, and registers live across the call are saved to the stack.
// tdsl_udiv64 divides inline with the float reciprocal instead: each step
// q += floor(r * (1/b)), r = a - q * b gains about 21 bits of the quotient,
// so three steps leave q off by at most one, which the last comparison
// fixes. Exact for a < 2^63 and 0 < b < 2^63 with inv within a few ulps
// of 1/b (test/backend/udiv64.test: on the host, inv up to 4 ulps off).
__host__ __device__ __forceinline__ uint64_t tdsl_udiv64(uint64_t a, uint64_t b, float inv) {
#ifdef __CUDA_ARCH__
  auto floorToInt = [](float x) { return __float2ll_rd(x); };
#else
  auto floorToInt = [](float x) { return static_cast<long long>(floorf(x)); };
#endif
  // The first estimate is at least 0 and below 2^64; the remainders fit in
  // int64_t, and the corrections are added modulo 2^64.
  uint64_t q = uint64_t(floorf(float(a) * inv));
  int64_t r = int64_t(a - q * b);
  q += uint64_t(floorToInt(float(r) * inv));
  r = int64_t(a - q * b);
  q += uint64_t(floorToInt(float(r) * inv));
  r = int64_t(a - q * b);
  return q - (r < 0) + (r >= int64_t(b));
}
template <typename T> __host__ __device__ __forceinline__ T tdsl_quo(T a, T b) { return a / b; }
template <typename T> __host__ __device__ __forceinline__ T tdsl_rem(T a, T b) { return a % b; }
template <> __host__ __device__ __forceinline__ int64_t tdsl_quo(int64_t a, int64_t b) {
#ifdef __CUDA_ARCH__
  const float inv = __fdividef(1.0f, float(b));
#else
  const float inv = 1.0f / float(b);
#endif
  // |a| as unsigned; the quotient's sign is a's. |INT64_MIN| = 2^63 is
  // one b more than a number tdsl_udiv64 takes.
  const uint64_t m = a < 0 ? uint64_t(0) - uint64_t(a) : uint64_t(a);
  const uint64_t top = m >> 63;
  const uint64_t q = tdsl_udiv64(m - top * uint64_t(b), uint64_t(b), inv) + top;
  return a < 0 ? int64_t(uint64_t(0) - q) : int64_t(q);
}
template <> __host__ __device__ __forceinline__ int64_t tdsl_rem(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) - uint64_t(tdsl_quo(a, b)) * uint64_t(b));
}
template <typename T> __host__ __device__ __forceinline__ T tdsl_min(T a, T b) {
  return b < a ? b : a;
}
template <typename T> __host__ __device__ __forceinline__ T tdsl_max(T a, T b) {
  return a < b ? b : a;
}
template <typename T> __device__ __forceinline__ T tdsl_iabs(T a) {
  using U = typename std::make_unsigned<T>::type;
  return a < 0 ? T(U(0) - U(a)) : a;
}

// Integer narrowing saturates (i64 -> i32, i32 -> i8).
template <typename To, typename From> __device__ __forceinline__ To tdsl_sat(From x) {
  return x < From(tdsl_int_limits<To>::lowest)    ? tdsl_int_limits<To>::lowest
         : x > From(tdsl_int_limits<To>::highest) ? tdsl_int_limits<To>::highest
                                                  : To(x);
}

// Float to integer: round to nearest even, saturate, NaN -> 0.
__device__ __forceinline__ float tdsl_rint(float x) { return rintf(x); }
__device__ __forceinline__ double tdsl_rint(double x) { return rint(x); }
template <typename To, typename From> __device__ __forceinline__ To tdsl_f2i(From x) {
  if (x != x)
    return To(0);
  const From r = tdsl_rint(x);
  // 2^(bits - 1), exact in float and double.
  const From limit = From(tdsl_int_limits<To>::highest) + From(1);
  if (r >= limit)
    return tdsl_int_limits<To>::highest;
  if (r < -limit)
    return tdsl_int_limits<To>::lowest;
  return To(r);
}

// tf32: f32 rounded to 10 mantissa bits, to nearest with ties away from
// zero (cvt.rna, one instruction from sm_80; the same bits before it);
// stored as f32.
__device__ __forceinline__ float tdsl_round_tf32(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
#else
  uint32_t u = __float_as_uint(x);
  if ((u & 0x7f800000u) == 0x7f800000u)
    return x; // inf and NaN stay
  return __uint_as_float((u + 0x1000u) & 0xffffe000u);
#endif
}

// x as an operand of a tf32 mma: tf32(x) for the tensor core, which reads
// an operand's sign, exponent and top 10 mantissa bits and drops the other
// 13. Adding half of x's tf32 spacing (2^(e - 11), in x's sign) first makes
// that truncation round to nearest with ties away from zero, as cvt.rna:
// one logic operation and one fma where cvt.rna takes three (a compare, an
// add, a mask), of which a fragment holds one per element. Infinities stay,
// a NaN stays a NaN (cvt.rna keeps the sign of an input NaN and
// turns a NaN whose payload lies in those 13 bits into infinity), and a
// subnormal x is truncated (its exponent field, 0, adds nothing): a
// difference under 2^-136. The low bits are left: such a value is read
// only by the mma.
__device__ __forceinline__ float tdsl_tf32_operand(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return fmaf(__uint_as_float(__float_as_uint(x) & 0xff800000u), 0x1p-11f, x);
#else
  return tdsl_round_tf32(x);
#endif
}

// N registers of tf32 fragment from an f32 tile, made operands in place
// (what ldmatrix into a tf32 fragment does: the mma would otherwise
// truncate).
template <int N> __device__ __forceinline__ void tdsl_tf32_operands(float *regs) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    regs[i] = tdsl_tf32_operand(regs[i]);
}

// f32 division a / b, correctly rounded as IEEE's and the interpreter's,
// with no subroutine call: how a kernel of the knob fdiv = inline spells
// '/'. CUDA's '/' runs the same fast path, but calls a subroutine for
// operands outside its range, and registers live across a call are saved
// to the stack (a row held in registers across a softmax's quotient
// spilled there). It costs more code at each division than '/', whose slow
// path is shared. tdsl_fdiv takes:
// - where a, b and the quotient are far from overflow and underflow, CUDA's
//   fast path (tdsl_fdiv_fast);
// - elsewhere tdsl_fdiv_wide, which also takes zeros, infinities and NaN.
// nvcc computes the terms of b once where b is the same for many a (a
// row's sum), leaving three fmas and the range test for each quotient.
// Checked bit for bit against '/': on the host by test/backend/fdiv.test
// (with the correctly rounded 1/b for rcp.approx), on the GPU by
// test/gpu/fdiv.cu.
/// x's bits as a To of the same size (memcpy: a register move on the device).
template <typename To, typename From> __host__ __device__ __forceinline__ To tdsl_bit_cast(From x) {
  static_assert(sizeof(To) == sizeof(From), "tdsl_bit_cast: sizes differ");
  To y;
  memcpy(&y, &x, sizeof y);
  return y;
}
__host__ __device__ __forceinline__ float tdsl_rcp_estimate(float b) {
#ifdef __CUDA_ARCH__
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  return r;
#else
  return 1.0f / b;
#endif
}
/// a / b from r0, the estimate of 1/b that rcp.approx gives, as CUDA's '/'
/// computes it: r0 refined by one Newton step, then the quotient a * r
/// corrected by its residual, which the fma computes exactly (Markstein).
/// Correctly rounded where no step overflows or underflows.
__host__ __device__ __forceinline__ float tdsl_fdiv_fast(float a, float b, float r0) {
  const float r = fmaf(r0, fmaf(-b, r0, 1.0f), r0);
  const float q0 = a * r;
  return fmaf(r, fmaf(-b, q0, a), q0);
}
/// |x| = m * 2^e with m in [1, 2), for x finite and nonzero.
__host__ __device__ __forceinline__ float tdsl_frexp1(float x, int &e) {
  const bool tiny = fabsf(x) < FLT_MIN; // subnormal: scaled up first
  const uint32_t u = tdsl_bit_cast<uint32_t>(tiny ? x * 0x1p24f : x);
  e = int((u >> 23) & 0xffu) - 127 - (tiny ? 24 : 0);
  return tdsl_bit_cast<float>((u & 0x7fffffu) | 0x3f800000u);
}
// a / b for every a and b. With |a| = ma * 2^ea and |b| = mb * 2^eb (ma, mb
// in [1, 2)), the fast path is exact on ma / mb: q = RN(ma / mb), and the
// sign of its exact residual ma - mb * q says on which side of q the
// quotient lies (less than half an ulp away). q * 2^(ea - eb) is the
// result where it is a normal float; where it is subnormal, its
// significand is rounded to the coarser grid by hand, the residual
// breaking the one case q cannot (q on a midpoint of that grid: the
// quotient is above, below, or a tie to even).
__host__ __device__ __forceinline__ float tdsl_fdiv_wide(float a, float b) {
  if (a != a || b != b)
    return a + b; // NaN
  const uint32_t sign = (tdsl_bit_cast<uint32_t>(a) ^ tdsl_bit_cast<uint32_t>(b)) & 0x80000000u;
  const float xa = fabsf(a), xb = fabsf(b);
  const bool za = xa == 0.0f, zb = xb == 0.0f, ia = xa > FLT_MAX, ib = xb > FLT_MAX;
  if ((za && zb) || (ia && ib))
    return tdsl_bit_cast<float>(0x7fffffffu); // 0 / 0 and inf / inf: NaN
  if (za || ib)
    return tdsl_bit_cast<float>(sign); // 0
  if (zb || ia)
    return tdsl_bit_cast<float>(sign | 0x7f800000u); // inf
  int ea, eb;
  const float ma = tdsl_frexp1(xa, ea), mb = tdsl_frexp1(xb, eb);
  const float q = tdsl_fdiv_fast(ma, mb, tdsl_rcp_estimate(mb));
  const float rem = fmaf(-mb, q, ma);
  // |a / b| is about m * 2^(e - 23), m the 24-bit significand of q.
  const uint32_t u = tdsl_bit_cast<uint32_t>(q);
  const int e = int(u >> 23) - 127 + ea - eb;
  const uint32_t m = (u & 0x7fffffu) | 0x800000u;
  if (e > 127)
    return tdsl_bit_cast<float>(sign | 0x7f800000u); // overflow: inf
  if (e >= -126)
    return tdsl_bit_cast<float>(sign | (uint32_t(e + 127) << 23) | (m & 0x7fffffu));
  // Subnormal: m * 2^(e - 23) on the grid of 2^-149, s bits coarser.
  const int s = -126 - e < 31 ? -126 - e : 31;
  const uint32_t kept = m >> s, rest = m & ((1u << s) - 1u), half = 1u << (s - 1);
  const bool up =
      rest > half || (rest == half && (rem > 0.0f || (rem == 0.0f && (kept & 1u))));
  return tdsl_bit_cast<float>(sign | (kept + (up ? 1u : 0u))); // a carry gives FLT_MIN
}
/// Whether q, tdsl_fdiv_fast's quotient of a by b, is a / b as IEEE rounds
/// it: no step overflowed or underflowed, and the residual was exact. b's
/// test is folded into a's lower bound: one float where b is the same for
/// many a, not a predicate register held across them (a row chain's guards
/// of its runs hold those). a's upper bound needs no test: an infinite a
/// makes the residual, so q, NaN (and a NaN a fails a >= lo). The tests
/// are joined by & so that they compile to chained compares, no branch.
__host__ __device__ __forceinline__ bool tdsl_fdiv_fast_holds(float a, float b, float q) {
  const float xa = fabsf(a), xb = fabsf(b), xq = fabsf(q);
  const float lo = xb >= 0x1p-125f && xb <= 0x1p125f ? 0x1p-102f : INFINITY;
  return (xa >= lo) & (xq >= 0x1p-120f) & (xq <= 0x1p120f);
}
__host__ __device__ __forceinline__ float tdsl_fdiv(float a, float b) {
  const float q = tdsl_fdiv_fast(a, b, tdsl_rcp_estimate(b));
  return tdsl_fdiv_fast_holds(a, b, q) ? q : tdsl_fdiv_wide(a, b);
}
/// tdsl_fdiv's fast path alone: its quotient, with quick cleared where that
/// is not a / b as IEEE rounds it. A run of quotients (an unrolled loop the
/// backend may compute twice) tests quick once and computes the run again
/// by tdsl_fdiv_wide where it is false, where each tdsl_fdiv would branch
/// around its wide path, three instructions a quotient.
__host__ __device__ __forceinline__ float tdsl_fdiv_try(float a, float b, bool &quick) {
  const float q = tdsl_fdiv_fast(a, b, tdsl_rcp_estimate(b));
  quick &= tdsl_fdiv_fast_holds(a, b, q);
  return q;
}

/// e^x as 2^(x log2 e) by the SFU's ex2.approx.f32 (subnormal results
/// kept): two instructions where CUDA's expf takes about ten, which bounds
/// exp-heavy row chains (softmax, cross-entropy) at memory speed. The
/// rounding of x log2 e adds |x| 2^-24 ln 2 of relative error to ex2's 2
/// ulp: under 2e-6 for |x| <= 20 (every term a softmax keeps in range)
/// and 6e-6 up to overflow, inside f32's 1e-5 (the knob fexp = ex2).
__device__ __forceinline__ float tdsl_exp(float x) {
  float r;
  asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x * 1.44269504088896341f));
  return r;
}

/// e^x as 2^(x log2 e / 2) squared, by ex2.approx.ftz.f32 (the knob
/// fexp = ex2sq, the default): three instructions where tdsl_exp takes
/// five, two of them the test for a subnormal result and its fix, which the
/// square makes needless: 2^h is normal wherever (2^h)^2 is not 0, and
/// ptxas spells tdsl_exp's subnormal results this same way. x log2 e / 2
/// rounds as x log2 e does, halved, so the argument adds the same |x|
/// 2^-24 ln 2 of relative error, to twice ex2's 2 ulp: within tdsl_exp's
/// bounds.
__device__ __forceinline__ float tdsl_exp_sq(float x) {
  float h;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(h) : "f"(x * 0.721347520444481703680f));
  return h * h;
}

// The activations. The f64 ones are spelled as the interpreter computes
// them; the f32 sigmoid and gelu approximate them (below). gelu
// scales by 1/sqrt(2) rounded, as torch does, rather than dividing by
// sqrt(2): a division is a subroutine on the device, and a GEMM epilogue
// takes 128 of them a thread (one rounding more, far inside the
// tolerances).

/// 1 / (1 + e^-x) by ex2.approx and rcp.approx, where expf and the IEEE
/// division take a subroutine each and branches: a gated MLP's epilogue
/// runs 128 of them a thread. The rounding of -x log2 e bounds the error,
/// as in tdsl_exp: |x| 2^-24 ln 2 relative, plus the approximations' few
/// ulp. Unlike tdsl_exp, ex2 flushes subnormals: they vanish in 1 + E.
/// A result under FLT_MIN (x below about -87) is 0 (ftz); NaN
/// propagates, +inf gives 1 and -inf 0.
__device__ __forceinline__ float tdsl_sigmoid(float x) {
  float E, R;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(E) : "f"(x * -1.44269504088896341f));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(R) : "f"(1.0f + E));
  return R;
}
__device__ __forceinline__ double tdsl_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/// gelu(x) = x Phi(x), Phi(x) = erfc(-x / sqrt(2)) / 2, from one tail:
/// with t = |x| / sqrt(2) and E = erfc(t), gelu is x E / 2 for x < 0 and
/// x - x E / 2 for x >= 0. E is 2^(t p(t)), p of degree 8 fitted (minimax
/// of the exponent's error) to log2(erfc(t)) / t on [0, 4], and 0 past
/// t = 4 (E < 2e-8 there; erff-based gelu is 0 from x = -5.5 too).
/// Straight-line code of about 17 instructions where 1 + erff(x / sqrt(2))
/// takes about 26 and a branch: a GEMM epilogue runs 128 of them a thread
/// after its last k step. It also keeps its relative accuracy for x < 0,
/// where 1 + erff cancels (the bounds: test/gpu/activations.cu).
__device__ __forceinline__ float tdsl_gelu(float x) {
  const float T = fabsf(x) * 0.70710678118654752440f;
  float P = 1.6218252767430386e-06f;
  P = fmaf(P, T, -3.027901766472496e-05f);
  P = fmaf(P, T, 2.146014739992097e-04f);
  P = fmaf(P, T, -4.924552049487829e-04f);
  P = fmaf(P, T, -2.8649205341935158e-03f);
  P = fmaf(P, T, 3.060966543853283e-02f);
  P = fmaf(P, T, -1.4988891780376434e-01f);
  P = fmaf(P, T, -9.180198907852173e-01f);
  P = fmaf(P, T, -1.627946138381958f);
  // E / 2 as 2^(t p(t) - 1): the exponent is in [-28, -1], so the
  // result is normal and ftz changes nothing.
  float HalfE;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(HalfE) : "f"(fmaf(P, T, -1.0f)));
  // x (1 - E / 2) needs no cancellation (E / 2 <= 1/2). NaN propagates
  // (the compares are false), +inf stays inf, -0 stays -0, and -inf gives
  // NaN as the erf form's -inf * 0 does (torch agrees).
  const float H = T > 4.0f ? 0.0f : HalfE;
  return x * (x >= 0.0f ? 1.0f - H : H);
}
__device__ __forceinline__ double tdsl_gelu(double x) {
  return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
}

// 16-bit elements travel in 32-bit words (uint2, uint4), the lower half
// first: bits in and out of registers, never through memory.
__device__ __forceinline__ unsigned short tdsl_bits(__half h) { return __half_as_ushort(h); }
__device__ __forceinline__ unsigned short tdsl_bits(__nv_bfloat16 h) {
  return __bfloat16_as_ushort(h);
}
template <typename T> __device__ __forceinline__ uint32_t tdsl_pack(T lo, T hi) {
  return uint32_t(tdsl_bits(lo)) | (uint32_t(tdsl_bits(hi)) << 16);
}
// Two f32 values rounded to T (to nearest even, as __float2half_rn) in one
// conversion and packed as tdsl_pack packs them: a run of 16-bit results
// kept as f32 until its store (two instructions fewer per pair than
// rounding each, then packing).
template <typename T>
__host__ __device__ __forceinline__ uint32_t tdsl_pack_rn(float lo, float hi);
template <> __host__ __device__ __forceinline__ uint32_t tdsl_pack_rn<__half>(float lo, float hi) {
  return tdsl_bit_cast<uint32_t>(__floats2half2_rn(lo, hi)); // .x, lo, in the low half
}
template <>
__host__ __device__ __forceinline__ uint32_t tdsl_pack_rn<__nv_bfloat16>(float lo, float hi) {
  return tdsl_bit_cast<uint32_t>(__floats2bfloat162_rn(lo, hi));
}
// 1-byte elements travel four to a 32-bit word (uint1, uint2, uint4), the
// lowest byte first.
__device__ __forceinline__ uint32_t tdsl_pack4(int8_t a, int8_t b, int8_t c, int8_t d) {
  return uint32_t(uint8_t(a)) | (uint32_t(uint8_t(b)) << 8) | (uint32_t(uint8_t(c)) << 16) |
         (uint32_t(uint8_t(d)) << 24);
}
__device__ __forceinline__ int8_t tdsl_unpack_byte(uint32_t w, int i) {
  return static_cast<int8_t>(w >> (8 * i));
}
template <typename T> __device__ __forceinline__ T tdsl_unpack(uint32_t w, int half);
// Through the pair type, not a shift: ptxas then knows the halves as the
// word's, and a pair of them made again (__halves2half2, a run's max by
// max.f16x2) is the word itself, where a shift cost a shift and a permute.
template <> __device__ __forceinline__ __half tdsl_unpack<__half>(uint32_t w, int half) {
  const __half2 p = tdsl_bit_cast<__half2>(w);
  return half ? __high2half(p) : __low2half(p);
}
template <>
__device__ __forceinline__ __nv_bfloat16 tdsl_unpack<__nv_bfloat16>(uint32_t w, int half) {
  const __nv_bfloat162 p = tdsl_bit_cast<__nv_bfloat162>(w);
  return half ? __high2bfloat16(p) : __low2bfloat16(p);
}

//===-- Tensor cores and asynchronous copies (sm_80 and newer) ------------===//
//
// One helper per IR statement: async_copy, async_commit, async_wait,
// ldmatrix and mma (ir/IR.h gives their semantics, ir/Fragment.h the
// fragment layouts). Fragments of 8- and 16-bit elements live in uint32_t
// registers, as the instructions take them; tdsl_frag_get and tdsl_frag_set
// reach one element of such a register. tdslc emits these only for sm_80 and
// newer; on an older GPU they trap.

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define TDSL_NEEDS_SM80() __trap()
#else
#define TDSL_NEEDS_SM80() (void)0
#endif

// The dynamic shared memory of a kernel whose tiles pass the default 48 KiB:
// it carves them from here at the offsets of ir/Launch.h's analysis.
extern __shared__ __align__(16) unsigned char tdsl_smem[];

__device__ __forceinline__ uint32_t tdsl_smem_addr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// cp.async of Bytes (4, 8 or 16) from global to shared memory; where valid is
// false nothing is read and the destination gets zeros (src-size 0). 16-byte
// copies bypass L1 (.cg): a staged tile is read from shared memory only.
template <int Bytes>
__device__ __forceinline__ void tdsl_cp_async(void *dst, const void *src, bool valid) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  int src_bytes = valid ? Bytes : 0;
  if constexpr (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(tdsl_smem_addr(dst)),
                 "l"(src), "r"(src_bytes));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(tdsl_smem_addr(dst)),
                 "l"(src), "n"(Bytes), "r"(src_bytes));
#else
  TDSL_NEEDS_SM80();
#endif
}

__device__ __forceinline__ void tdsl_cp_async_commit() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int Pending> __device__ __forceinline__ void tdsl_cp_async_wait() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
}

// mbarriers (ir/IR.md, `mbarrier`): an 8-byte word of shared memory that
// counts a phase's arrivals and, from sm_90 on, the bytes of bulk tensor
// copies still to land. The init is made visible to the copy engine by the
// fence and to the other threads by the barrier the IR puts after it.
__device__ __forceinline__ void tdsl_mbarrier_init(uint64_t *bar, int count) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(tdsl_smem_addr(bar)), "r"(count)
               : "memory");
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
#else
  TDSL_NEEDS_SM80();
#endif
}

__device__ __forceinline__ void tdsl_mbarrier_arrive(uint64_t *bar) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(tdsl_smem_addr(bar)) : "memory");
#else
  TDSL_NEEDS_SM80();
#endif
}

// One arrival for the warp, after it converges: __syncwarp() orders every
// lane's accesses before lane 0's arrival.
__device__ __forceinline__ void tdsl_mbarrier_arrive_warp(uint64_t *bar) {
  __syncwarp();
  uint32_t lane;
  asm volatile("mov.u32 %0, %%laneid;\n" : "=r"(lane));
  if (lane == 0)
    tdsl_mbarrier_arrive(bar);
}

__device__ __forceinline__ void tdsl_mbarrier_expect_tx(uint64_t *bar, int bytes) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   tdsl_smem_addr(bar)),
               "r"(bytes)
               : "memory");
#else
  __trap(); // transaction bytes are sm_90's
#endif
}

// Spins until the phase of the given parity has completed.
__device__ __forceinline__ void tdsl_mbarrier_wait(uint64_t *bar, int parity) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  asm volatile("{\n .reg .pred p;\n TDSL_WAIT_%=:\n"
               " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               " @!p bra TDSL_WAIT_%=;\n}\n" ::"r"(tdsl_smem_addr(bar)),
               "r"(parity)
               : "memory");
#elif __CUDA_ARCH__ >= 800
  asm volatile("{\n .reg .pred p;\n TDSL_WAIT_%=:\n"
               " mbarrier.test_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               " @!p bra TDSL_WAIT_%=;\n}\n" ::"r"(tdsl_smem_addr(bar)),
               "r"(parity)
               : "memory");
#else
  TDSL_NEEDS_SM80();
#endif
}

// The bulk tensor copy engine (sm_90, ir/IR.md `tensor_copy`): the box of the
// tensor behind map (the launcher's tensor map, a __grid_constant__
// parameter) at coordinates c, innermost first, lands at dst (aligned to
// 1024 bytes where swizzled), zeros outside the tensor; its bytes count on
// the mbarrier bar.
template <typename... Coord>
__device__ __forceinline__ void tdsl_tensor_copy(void *dst, const tdsl_tensor_map *map, uint64_t *bar,
                                                 Coord... c) {
  constexpr int Rank = sizeof...(Coord);
  static_assert(Rank >= 1 && Rank <= 5, "the engine copies boxes of 1 to 5 dimensions");
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  const int x[5] = {int(c)...};
  const uint32_t d = tdsl_smem_addr(dst), b = tdsl_smem_addr(bar);
  const uint64_t m = reinterpret_cast<uint64_t>(map);
  if constexpr (Rank == 1)
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2}], [%3];\n" ::"r"(d), "l"(m), "r"(x[0]), "r"(b)
                 : "memory");
  else if constexpr (Rank == 2)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(d), "l"(m), "r"(x[0]), "r"(x[1]), "r"(b)
                 : "memory");
  else if constexpr (Rank == 3)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(d), "l"(m), "r"(x[0]), "r"(x[1]),
                 "r"(x[2]), "r"(b)
                 : "memory");
  else if constexpr (Rank == 4)
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(d), "l"(m), "r"(x[0]), "r"(x[1]),
                 "r"(x[2]), "r"(x[3]), "r"(b)
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n" ::"r"(d), "l"(m), "r"(x[0]),
                 "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(x[4]), "r"(b)
                 : "memory");
#else
  __trap(); // the copy engine is sm_90's
#endif
}

// A pointer to the first byte at or after p whose shared-memory address is
// a multiple of Align: the tiles of a launch with tensor copies start there
// (ir/Launch.h reserves the slack).
// The compiler is told the alignment, so that it still merges neighbouring
// tile accesses into wide ones (as it does on the aligned extern array).
template <int Align> __device__ __forceinline__ unsigned char *tdsl_align_shared(unsigned char *p) {
  const uint32_t a = tdsl_smem_addr(p);
  return static_cast<unsigned char *>(__builtin_assume_aligned(p + ((Align - a % Align) % Align), Align));
}

// ldmatrix of Count 8x8 b16 matrices into Count registers from regs on.
template <int Count, bool Trans>
__device__ __forceinline__ void tdsl_ldmatrix(uint32_t *regs, const void *row) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  uint32_t a = tdsl_smem_addr(row);
  if constexpr (Count == 1 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                 : "=r"(regs[0]) : "r"(a));
  else if constexpr (Count == 1)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(regs[0]) : "r"(a));
  else if constexpr (Count == 2 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(regs[0]), "=r"(regs[1]) : "r"(a));
  else if constexpr (Count == 2)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(regs[0]), "=r"(regs[1]) : "r"(a));
  else if constexpr (!Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3]) : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3]) : "r"(a));
#else
  TDSL_NEEDS_SM80();
#endif
}

// ldmatrix .trans of Count 8x8 b16 matrices of byte pairs, regrouped by
// column (ir/IR.md): each register of .trans holds, of matrix m, the lane's
// byte column pair (c, c + 1) in rows r and r + 1 (bytes: r.c, r.c+1,
// r+1.c, r+1.c+1); a byte permute per two registers takes column c of two
// matrices into one register (selector 0x6420: bytes 0 and 2 of each) and
// column c + 1 into another (0x7531).
template <int Count>
__device__ __forceinline__ void tdsl_ldmatrix_bytes_trans(uint32_t *regs, const void *row) {
  uint32_t r[Count];
  tdsl_ldmatrix<Count, true>(r, row);
  if constexpr (Count == 1) {
    regs[0] = __byte_perm(r[0], 0, 0x3120);
  } else {
#pragma unroll
    for (int p = 0; p < Count / 2; ++p) {
      regs[p] = __byte_perm(r[2 * p], r[2 * p + 1], 0x6420);
      regs[Count / 2 + p] = __byte_perm(r[2 * p], r[2 * p + 1], 0x7531);
    }
  }
}

// c += a * b for one m16n8k16 tile: a 4 registers of f16 (or bf16) pairs, b
// 2, c 4 floats.
template <typename T>
__device__ __forceinline__ void tdsl_mma_m16n8k16(float *c, const uint32_t *a, const uint32_t *b) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, __half>)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  TDSL_NEEDS_SM80();
#endif
}

// c += a * b for one m16n8k8 tile of tf32 values (already rounded).
__device__ __forceinline__ void tdsl_mma_m16n8k8(float *c, const float *a, const float *b) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])),
                 "r"(__float_as_uint(a[2])), "r"(__float_as_uint(a[3])),
                 "r"(__float_as_uint(b[0])), "r"(__float_as_uint(b[1])));
#else
  TDSL_NEEDS_SM80();
#endif
}

// c += a * b for one m16n8k32 tile: a 4 registers of four s8, b 2, c 4 s32.
__device__ __forceinline__ void tdsl_mma_m16n8k32(int32_t *c, const uint32_t *a,
                                                  const uint32_t *b) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  TDSL_NEEDS_SM80();
#endif
}

// Element i of a fragment of 8- or 16-bit T packed into registers.
template <typename T> __device__ __forceinline__ uint32_t tdsl_elem_bits(T x) {
  if constexpr (sizeof(T) == 1)
    return static_cast<uint8_t>(x);
  else
    return tdsl_bits(x);
}
template <typename T, typename I>
__device__ __forceinline__ void tdsl_frag_set(uint32_t *regs, I i, T x) {
  constexpr int kBits = 8 * sizeof(T), kPerReg = 32 / kBits;
  int shift = kBits * int(i % kPerReg);
  uint32_t mask = ((1u << kBits) - 1) << shift;
  regs[i / kPerReg] = (regs[i / kPerReg] & ~mask) | (tdsl_elem_bits(x) << shift);
}
template <typename T, typename I>
__device__ __forceinline__ T tdsl_frag_get(const uint32_t *regs, I i) {
  constexpr int kBits = 8 * sizeof(T), kPerReg = 32 / kBits;
  uint32_t bits = regs[i / kPerReg] >> (kBits * int(i % kPerReg));
  if constexpr (sizeof(T) == 1)
    return static_cast<T>(static_cast<int8_t>(bits & 0xff));
  else
    return tdsl_unpack<T>(bits & 0xffff, 0);
}

// The storage offset of row-major offset o in a buffer swizzled (Bits, Base,
// Shift): bits [Base, Base + Bits) XORed with bits [Base + Shift, ...). Shared
// offsets fit 32 bits, so the 64-bit-index kernels compute them in 32 bits
// too (fewer registers).
template <int Bits, int Base, int Shift>
__device__ __forceinline__ int32_t tdsl_swizzle(int32_t o) {
  return o ^ (((o >> (Base + Shift)) & ((1 << Bits) - 1)) << Base);
}

//===-- Host helpers of the launchers -------------------------------------===//

// Sizes above 2^48 are refused, so that no dimension expression (affine in
// the sizes, small coefficients) can overflow int64_t.
inline constexpr int64_t kMaxSize = int64_t(1) << 48;
// 32-bit indices when every tensor and launch stays below this: a block may
// form an index past the end before its bounds check (an elementwise block
// covers up to 2^16 elements), so the last 2^20 below 2^31 use 64 bits.
inline constexpr int64_t kIndex32Limit = INT32_MAX - (int64_t(1) << 20);
// Compiled with -DTDSL_ALWAYS_INDEX64, launchers take the 64-bit-index
// kernels at every size (the GPU suite's --index64 runs them).
#ifdef TDSL_ALWAYS_INDEX64
inline constexpr bool kAlwaysIndex64 = true;
#else
inline constexpr bool kAlwaysIndex64 = false;
#endif

// The product of dims, false if it overflows (or its bytes would).
inline bool tdsl_element_count(std::initializer_list<int64_t> dims, int64_t *count) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n))
      return false;
  *count = n;
  return n <= INT64_MAX / 16;
}

// Grid limits of every architecture tdslc targets; a negative extent is an
// empty launch.
inline bool tdsl_set_launch(tdsl_launch_info *info, int64_t gx, int64_t gy, int64_t gz,
                            unsigned bx, unsigned by, unsigned bz, size_t shared_bytes) {
  if (gx > INT32_MAX || gy > 65535 || gz > 65535)
    return false;
  info->grid[0] = gx > 0 ? unsigned(gx) : 0u;
  info->grid[1] = gy > 0 ? unsigned(gy) : 0u;
  info->grid[2] = gz > 0 ? unsigned(gz) : 0u;
  info->block[0] = bx;
  info->block[1] = by;
  info->block[2] = bz;
  info->shared_bytes = shared_bytes;
  return true;
}

// The same for a kernel whose block loops along y and z step by the grid's
// size (backend/CudaEmitter.cpp): past 65535 blocks there the grid stops
// and each block runs several steps.
inline bool tdsl_set_stepped_launch(tdsl_launch_info *info, int64_t gx, int64_t gy, int64_t gz,
                                    unsigned bx, unsigned by, unsigned bz, size_t shared_bytes) {
  return tdsl_set_launch(info, gx, gy < 65535 ? gy : 65535, gz < 65535 ? gz : 65535, bx, by, bz,
                         shared_bytes);
}

// Threads a launch runs: its flattened index space.
inline int64_t tdsl_thread_count(const tdsl_launch_info &info) {
  return int64_t(info.grid[0]) * info.grid[1] * info.grid[2] * info.block[0] *
         info.block[1] * info.block[2];
}

// Also the launcher's answer to each aligned(X[0], 16) of a kernel, passed
// to it as a bool: the test in front of a path of wide global accesses.
inline bool tdsl_is_aligned(const void *p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

inline __half tdsl_as_half(tdsl_f16 v) {
  __half_raw r;
  r.x = v.bits;
  return __half(r);
}
inline __nv_bfloat16 tdsl_as_bfloat16(tdsl_bf16 v) {
  __nv_bfloat16_raw r;
  r.x = v.bits;
  return __nv_bfloat16(r);
}

// Launches kernel on stream as info says (nothing for an empty grid),
// opting in to more than 48 KiB of dynamic shared memory when needed.
template <typename... Params, typename... Args>
inline tdsl_status tdsl_launch(void (*kernel)(Params...), const tdsl_launch_info &info,
                        cudaStream_t stream, Args... args) {
  if (info.grid[0] == 0 || info.grid[1] == 0 || info.grid[2] == 0)
    return TDSL_SUCCESS;
  if (info.shared_bytes > 48 * 1024) {
    tdsl_status status =
        tdsl_allow_dynamic_shared_memory(reinterpret_cast<const void *>(kernel), info.shared_bytes);
    if (status != TDSL_SUCCESS)
      return status;
  }
  kernel<<<dim3(info.grid[0], info.grid[1], info.grid[2]),
           dim3(info.block[0], info.block[1], info.block[2]), info.shared_bytes, stream>>>(
      args...);
  return tdsl_record_cuda_error(cudaGetLastError(), TDSL_ERROR_LAUNCH);
}

// A launcher's temporaries sit in one workspace (the caller's, or one
// allocation of the launcher's) at offsets aligned as cudaMalloc aligns, so
// each is as aligned as the workspace: the 16-byte paths stay open.
inline constexpr size_t kWorkspaceAlignment = 256;

// Places a temporary of `bytes` at the end of the workspace: its offset and
// the workspace's new size; false if that overflows size_t.
inline bool tdsl_workspace_append(size_t bytes, size_t *offset, size_t *workspace_bytes) {
  const size_t rounded = (bytes + (kWorkspaceAlignment - 1)) / kWorkspaceAlignment *
                         kWorkspaceAlignment;
  if (rounded < bytes || rounded > SIZE_MAX - *workspace_bytes)
    return false;
  *offset = *workspace_bytes;
  *workspace_bytes += rounded;
  return true;
}

// An empty temporary (a launch variant's, at sizes where it does not run)
// costs no call.
inline tdsl_status tdsl_malloc_async(void **p, size_t bytes, cudaStream_t stream) {
  if (!bytes) {
    *p = nullptr;
    return TDSL_SUCCESS;
  }
  return tdsl_record_cuda_error(cudaMallocAsync(p, bytes, stream), TDSL_ERROR_OUT_OF_MEMORY);
}

inline tdsl_status tdsl_free_async(void **p, cudaStream_t stream) {
  cudaError_t err = *p ? cudaFreeAsync(*p, stream) : cudaSuccess;
  *p = nullptr;
  return tdsl_record_cuda_error(err, TDSL_ERROR_CUDA);
}

// After a failed launcher step: frees the temporaries still allocated and
// returns the status that stopped it.
inline tdsl_status tdsl_free_all(void **temps, int n, cudaStream_t stream, tdsl_status status) {
  for (int i = 0; i < n; ++i)
    tdsl_free_async(&temps[i], stream);
  return status;
}

} // namespace tdsl_generated

#endif // TDSL_DEVICE_CUH
