// GPU check of tdsl/device.cuh's tdsl_pack_rn (how the backend stores a run
// of f16 or bf16 values it kept as f32: two values rounded in one
// conversion): for every one of the 2^32 floats x, paired with its
// neighbour above and with -x, bit for bit the pair that rounding each value
// alone (__float2half_rn, __float2bfloat16_rn) packs in tdsl_pack's order;
// NaN for NaN. Prints one line per type; exit status 1 on any difference.
#include "float_sweep.cuh"
#include <tdsl/device.cuh>

namespace {

struct Stats {
  SweepFailures F16, BF16;
};
__device__ Stats S;

template <typename T> __device__ bool isNaN(T H) { return H != H; }

template <typename T> __device__ void checkPair(float Lo, float Hi, SweepFailures *F) {
  using namespace tdsl_generated;
  const uint32_t Got = tdsl_pack_rn<T>(Lo, Hi);
  const T A = tdsl_unpack<T>(Got, 0), B = tdsl_unpack<T>(Got, 1);
  const T WantA = T(Lo), WantB = T(Hi); // the conversions round to nearest even
  const bool Ok = (tdsl_bits(A) == tdsl_bits(WantA) || (isNaN(A) && isNaN(WantA))) &&
                  (tdsl_bits(B) == tdsl_bits(WantB) || (isNaN(B) && isNaN(WantB)));
  if (!Ok)
    sweepFail(F, Lo);
}

__global__ void sweep() {
  sweepEveryFloat([](float X) {
    const float Up = __uint_as_float(__float_as_uint(X) + 1u);
    checkPair<__half>(X, Up, &S.F16);
    checkPair<__half>(X, -X, &S.F16);
    checkPair<__nv_bfloat16>(X, Up, &S.BF16);
    checkPair<__nv_bfloat16>(X, -X, &S.BF16);
  });
}

} // namespace

int main() {
  Stats R;
  if (int Err = runSweep("pack", sweep, S, R))
    return Err;
  std::printf("pack_rn f16: %llu wrong (witness %a)\n", R.F16.Count, double(R.F16.Witness));
  std::printf("pack_rn bf16: %llu wrong (witness %a)\n", R.BF16.Count, double(R.BF16.Witness));
  return R.F16.Count || R.BF16.Count;
}
