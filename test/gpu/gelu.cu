// GPU check of tdsl/device.cuh's f32 gelu (tdsl_gelu, one erfc tail and
// ex2.approx): every one of the 2^32 floats against x erfc(-x / sqrt 2) / 2
// computed in double (the erf form without its cancellation for x < 0).
// Each result must be within 4e-7 max(1, |gelu(x)|) of it, and within
// 5e-6 relative where x > -5.6 and gelu(x) is a normal float (x below
// -5.657 gives 0 or -0 against a value under 5e-8); NaN for NaN and for
// -inf (as the erf form's -inf * 0), -0 for -0, inf for +inf. Reports the
// largest errors and the failures; exit status 1 on any.
#include "float_sweep.cuh"
#include <tdsl/device.cuh>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace {

struct Stats {
  float Mixed, Rel;
  float WorstMixed, WorstRel;
  SweepFailures Bad;
};
__device__ Stats S;

__global__ void sweep() {
  sweepEveryFloat([](float X) {
    const float Got = tdsl_generated::tdsl_gelu(X);
    if (X != X || isinf(X) || X == 0.0f) {
      const bool Ok =
          X != X || X == -INFINITY
              ? Got != Got
              : (X == INFINITY ? Got == INFINITY : Got == 0.0f && signbit(Got) == signbit(X));
      if (!Ok)
        sweepFail(&S.Bad, X);
      return;
    }
    const double Exact = 0.5 * double(X) * erfc(-double(X) * 0.70710678118654752440);
    const double Err = fabs(double(Got) - Exact);
    const float Mixed = float(Err / fmax(1.0, fabs(Exact)));
    if (!(Mixed <= 4e-7f))
      sweepFail(&S.Bad, X);
    sweepMax(&S.Mixed, Mixed, &S.WorstMixed, X);
    if (X > -5.6f && fabs(Exact) >= double(FLT_MIN)) {
      const float Rel = float(Err / fabs(Exact));
      if (!(Rel <= 5e-6f))
        sweepFail(&S.Bad, X);
      sweepMax(&S.Rel, Rel, &S.WorstRel, X);
    }
  });
}

} // namespace

int main() {
  Stats R;
  if (int Error = runSweep("gelu", sweep, S, R))
    return Error;
  const bool Ok = R.Bad.Count == 0;
  std::printf("gelu: 2^32 floats: max error %.3g of max(1, |gelu|) (at x = %.9g); max relative "
              "error %.3g for x > -5.6 (at x = %.9g); %llu outside the bound (e.g. x = %.9g): "
              "%s\n",
              R.Mixed, R.WorstMixed, R.Rel, R.WorstRel, R.Bad.Count, R.Bad.Witness,
              Ok ? "ok" : "FAIL");
  return Ok ? 0 : 1;
}
