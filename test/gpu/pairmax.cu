// GPU check of how the backend folds a run of f16 or bf16 values into an
// f32 max or min (FuncEmitter::emitPairedFold): max.f16x2 / min.f16x2 (and
// the bf16 forms) of two halves, widened, against fmaxf / fminf of the two
// widened, for every one of the 2^32 pairs of 16-bit values of each type.
// Equal floats, or both zeros (dsl/LANGUAGE.md lets max= give either zero
// of 0 and -0), or both NaN. Prints one line per type; exit status 1 on
// any difference.
#include "float_sweep.cuh"
#include <tdsl/device.cuh>

namespace {

struct Stats {
  SweepFailures F16, BF16;
};
__device__ Stats S;

__device__ bool same(float Got, float Want) {
  return Got == Want || (Got != Got && Want != Want); // +0 == -0
}

template <typename T, typename Pair>
__device__ void checkWord(uint32_t W, Pair (*Make)(T, T), SweepFailures *F) {
  using namespace tdsl_generated;
  const T A = tdsl_unpack<T>(W, 0), B = tdsl_unpack<T>(W, 1);
  const float FA = float(A), FB = float(B);
  const Pair P = Make(A, B), Q = Make(B, A);
  const Pair Mx = __hmax2(P, Q), Mn = __hmin2(P, Q);
  if (!same(__low2float(Mx), fmaxf(FA, FB)) || !same(__high2float(Mx), fmaxf(FA, FB)) ||
      !same(__low2float(Mn), fminf(FA, FB)) || !same(__high2float(Mn), fminf(FA, FB)))
    sweepFail(F, __uint_as_float(W));
}

__global__ void sweep() {
  sweepEveryFloat([](float X) {
    const uint32_t W = __float_as_uint(X);
    checkWord<__half, __half2>(W, __halves2half2, &S.F16);
    checkWord<__nv_bfloat16, __nv_bfloat162>(W, __halves2bfloat162, &S.BF16);
  });
}

} // namespace

int main() {
  Stats R;
  if (int Err = runSweep("pairmax", sweep, S, R))
    return Err;
  std::printf("pair max/min f16: %llu wrong (witness bits %08x)\n", R.F16.Count,
              R.F16.Count ? tdsl_generated::tdsl_bit_cast<uint32_t>(R.F16.Witness) : 0u);
  std::printf("pair max/min bf16: %llu wrong (witness bits %08x)\n", R.BF16.Count,
              R.BF16.Count ? tdsl_generated::tdsl_bit_cast<uint32_t>(R.BF16.Witness) : 0u);
  return R.F16.Count || R.BF16.Count;
}
