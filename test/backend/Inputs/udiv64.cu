// Host check of tdsl_udiv64, the inline 64-bit division of tdsl/device.cuh,
// and of tdsl_quo / tdsl_rem built on it, against C's '/' and '%'.
// TDSL_DEVICE_HEADER names the header to test (the installed one, or the
// copy pasted into a --self-contained .cu). The GPU's reciprocal (__fdividef) may be a few ulps from
// 1/b, so every unsigned pair is divided with 1/b moved 0 to 4 ulps either
// way.
#include TDSL_DEVICE_HEADER

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace {

long Checked = 0, Failed = 0;

void check(uint64_t A, uint64_t B) {
  const float Exact = 1.0f / float(B);
  for (int Ulps = -4; Ulps <= 4; ++Ulps) {
    float Inv = Exact;
    for (int K = 0; K < std::abs(Ulps); ++K)
      Inv = std::nextafter(Inv, Ulps < 0 ? 0.0f : INFINITY);
    const uint64_t Got = tdsl_generated::tdsl_udiv64(A, B, Inv);
    ++Checked;
    if (Got != A / B && Failed++ < 10)
      std::printf("FAILED: %llu / %llu (1/b %+d ulps) gave %llu, want %llu\n",
                  (unsigned long long)A, (unsigned long long)B, Ulps, (unsigned long long)Got,
                  (unsigned long long)(A / B));
  }
}

/// tdsl_quo and tdsl_rem truncate as C does, for a of either sign.
void checkSigned(int64_t A, int64_t B) {
  for (int64_t X : {A, int64_t(uint64_t(0) - uint64_t(A))}) {
    const int64_t Q = tdsl_generated::tdsl_quo<int64_t>(X, B);
    const int64_t R = tdsl_generated::tdsl_rem<int64_t>(X, B);
    ++Checked;
    if ((Q != X / B || R != X % B) && Failed++ < 10)
      std::printf("FAILED: %lld / %lld gave %lld rem %lld, want %lld rem %lld\n", (long long)X,
                  (long long)B, (long long)Q, (long long)R, (long long)(X / B),
                  (long long)(X % B));
  }
}

} // namespace

int main() {
  const uint64_t Top = uint64_t(1) << 63;
  // Edges: powers of two and their neighbours, up to a = 2^63.
  std::vector<uint64_t> Edges = {0, 1, 2, 3, 5, 7, 255, 256, 1000, 4095, 4096, 65535};
  for (int S = 16; S <= 63; ++S)
    for (int64_t D : {-1, 0, 1})
      Edges.push_back((uint64_t(1) << S) + uint64_t(D));
  Edges.push_back(Top - 1);
  for (uint64_t A : Edges)
    for (uint64_t B : Edges)
      if (B > 0 && B < Top && A < Top) {
        check(A, B);
        checkSigned(int64_t(A), int64_t(B));
      }
  for (uint64_t B : Edges)
    if (B > 0 && B < Top)
      checkSigned(INT64_MIN, int64_t(B));
  // Random lengths of a and b, and a next to multiples of b (where an
  // estimate off by one shows).
  std::mt19937_64 Rng(20261130);
  for (int I = 0; I < 400000; ++I) {
    const uint64_t B = (Rng() >> (1 + Rng() % 63)) | 1;
    const uint64_t A = Rng() >> (1 + Rng() % 63);
    check(A, B);
    checkSigned(int64_t(A), int64_t(B));
    const uint64_t Q = A / B;
    for (int64_t D : {-1, 0, 1}) {
      const uint64_t Near = Q * B + uint64_t(D);
      if (Near < Top)
        check(Near, B);
    }
  }
  std::printf("udiv64: %ld divisions, %ld wrong\n", Checked, Failed);
  return Failed != 0;
}
