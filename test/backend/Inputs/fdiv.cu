// Host check of tdsl_fdiv, the inline f32 division of tdsl/device.cuh,
// against the host's IEEE '/': bit for bit, or NaN for NaN. The fast path
// takes the correctly rounded 1/b here; with the device's estimate
// (rcp.approx, the instruction CUDA's '/' refines the same way) it is
// checked on the GPU by test/gpu/fdiv.cu. TDSL_DEVICE_HEADER
// names the header to test (the installed one, or the copy pasted into a
// --self-contained .cu).
#include TDSL_DEVICE_HEADER

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

long Checked = 0, Failed = 0;

uint32_t bitsOf(float X) {
  uint32_t U;
  std::memcpy(&U, &X, sizeof U);
  return U;
}

float fromBits(uint32_t U) {
  float X;
  std::memcpy(&X, &U, sizeof X);
  return X;
}

void report(const char *Path, float A, float B, float Got, float Want) {
  ++Checked;
  const bool Same = bitsOf(Got) == bitsOf(Want) || (Got != Got && Want != Want);
  if (!Same && Failed++ < 10)
    std::printf("FAILED (%s): %a / %a gave %a, want %a\n", Path, double(A), double(B), double(Got),
                double(Want));
}

long Quick = 0;

/// Both paths: tdsl_fdiv (the fast path where it applies) and the
/// wide path alone, which must be right for every pair; and
/// tdsl_fdiv_try's quotient wherever it leaves its flag set.
void check(float A, float B) {
  const float Want = A / B;
  report("fdiv", A, B, tdsl_generated::tdsl_fdiv(A, B), Want);
  report("wide", A, B, tdsl_generated::tdsl_fdiv_wide(A, B), Want);
  bool Flag = true;
  const float Got = tdsl_generated::tdsl_fdiv_try(A, B, Flag);
  if (Flag) {
    ++Quick;
    report("try", A, B, Got, Want);
  }
  // A cleared flag stays cleared.
  Flag = false;
  tdsl_generated::tdsl_fdiv_try(1.0f, 3.0f, Flag);
  if (Flag && Failed++ < 10)
    std::printf("FAILED (try): a cleared flag was set again\n");
}

} // namespace

int main() {
  // Edges: zeros, subnormals, the limits of the fast path's ranges and of
  // float, infinities and NaN, with either sign.
  std::vector<float> Edges = {0.0f, 1.0f, 3.0f, 0.1f, 7.0f / 3.0f, INFINITY, NAN};
  for (float X : {0x1p-149f, 0x1p-140f, 0x1.fffffcp-127f, 0x1p-126f})
    Edges.push_back(X);
  for (int E : {-126, -125, -124, -121, -120, -119, -103, -102, -101, -24, 0, 23, 119, 120, 121,
                124, 125, 126, 127})
    for (float M : {1.0f, 1.5f, 0x1.fffffep0f, 0x1.000002p0f})
      Edges.push_back(std::ldexp(M, E));
  Edges.push_back(FLT_MAX);
  const size_t Unsigned = Edges.size();
  for (size_t I = 0; I < Unsigned; ++I)
    Edges.push_back(-Edges[I]);
  for (float A : Edges)
    for (float B : Edges)
      check(A, B);
  // Random bit patterns (every exponent), then random significands at
  // exponents around the fast path's limits, where the two paths meet.
  std::mt19937 Rng(20261201);
  for (int I = 0; I < 2000000; ++I)
    check(fromBits(Rng()), fromBits(Rng()));
  std::uniform_int_distribution<int> Near(-6, 6);
  for (int I = 0; I < 2000000; ++I) {
    const int Ea = std::vector<int>{-149, -126, -102, 0, 120, 127}[I % 6] + Near(Rng);
    const int Eb = std::vector<int>{-149, -126, -125, 0, 125, 127}[(I / 6) % 6] + Near(Rng);
    const float A = std::ldexp(fromBits((Rng() & 0x7fffffu) | 0x3f800000u), Ea);
    const float B = std::ldexp(fromBits((Rng() & 0x7fffffu) | 0x3f800000u), Eb);
    check(Rng() & 1 ? -A : A, B);
  }
  // Quotients next to a rounding boundary: a = q * b + a few ulps.
  for (int I = 0; I < 1000000; ++I) {
    const float B = fromBits((Rng() & 0x7fffffu) | 0x3f800000u);
    const float Q = fromBits((Rng() & 0x7fffffu) | 0x3f800000u);
    float A = Q * B;
    for (int K = 0; K < 3; ++K) {
      check(A, B);
      A = std::nextafter(A, INFINITY);
    }
  }
  // Subnormal quotients on a midpoint of their grid (k * 2^-150, k odd:
  // ties to even), and an ulp of a either side of it.
  for (int I = 0; I < 1000000; ++I) {
    const float K = float((Rng() % 2048) | 1);
    const float B = std::ldexp(float(Rng() % 4096 + 4096), int(Rng() % 40) - 12);
    const float A = std::ldexp(K * B, -150);
    check(A, B);
    check(std::nextafter(A, 0.0f), B);
    check(std::nextafter(A, INFINITY), -B);
  }
  // Most pairs of random bits leave the fast path's range; the pairs near
  // a rounding boundary all lie inside it.
  std::printf("fdiv: %ld divisions, %ld wrong\n", Checked, Failed);
  std::printf("fdiv_try: %ld fast quotients\n", Quick);
  return Failed != 0;
}
