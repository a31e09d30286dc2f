// GPU check of tdsl/device.cuh's f32 activations over all 2^32 floats,
// each against the function computed in double; exit status 1 on any
// result outside its bound, and the largest errors printed.
// - gelu (tdsl_gelu, one erfc tail and ex2.approx), against
//   x erfc(-x / sqrt 2) / 2 (the erf form without its cancellation for
//   x < 0): within 4e-7 max(1, |gelu(x)|), and 5e-6 relative where
//   x > -5.6 and gelu(x) is a normal float (x below -5.657 gives 0 or -0
//   against a value under 5e-8); NaN for NaN and for -inf (as the erf
//   form's -inf * 0), -0 for -0, inf for +inf.
// - sigmoid (tdsl_sigmoid, ex2.approx and rcp.approx), against
//   1 / (1 + e^-x): 2e-6 relative for x >= -20 and 8e-6 below (the
//   rounding of x log2 e), within FLT_MIN where the result is under it;
//   NaN for NaN, 1 for +inf, 0 for -inf.
#include "float_sweep.cuh"
#include <tdsl/device.cuh>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace {

struct Stats {
  float GeluMixed, GeluRel, SigmoidRel20, SigmoidRelAll;
  float GeluWorstMixed, GeluWorstRel, SigmoidWorst20, SigmoidWorstAll;
  SweepFailures GeluBad, SigmoidBad;
};
__device__ Stats S;

__device__ void checkGelu(float X) {
  const float Got = tdsl_generated::tdsl_gelu(X);
  if (X != X || isinf(X) || X == 0.0f) {
    const bool Ok =
        X != X || X == -INFINITY
            ? Got != Got
            : (X == INFINITY ? Got == INFINITY : Got == 0.0f && signbit(Got) == signbit(X));
    if (!Ok)
      sweepFail(&S.GeluBad, X);
    return;
  }
  const double Exact = 0.5 * double(X) * erfc(-double(X) * 0.70710678118654752440);
  const double Err = fabs(double(Got) - Exact);
  const float Mixed = float(Err / fmax(1.0, fabs(Exact)));
  if (!(Mixed <= 4e-7f))
    sweepFail(&S.GeluBad, X);
  sweepMax(&S.GeluMixed, Mixed, &S.GeluWorstMixed, X);
  if (X > -5.6f && fabs(Exact) >= double(FLT_MIN)) {
    const float Rel = float(Err / fabs(Exact));
    if (!(Rel <= 5e-6f))
      sweepFail(&S.GeluBad, X);
    sweepMax(&S.GeluRel, Rel, &S.GeluWorstRel, X);
  }
}

__device__ void checkSigmoid(float X) {
  const float Got = tdsl_generated::tdsl_sigmoid(X);
  if (X != X || isinf(X)) {
    if (!(X != X ? Got != Got : Got == (X > 0.0f ? 1.0f : 0.0f)))
      sweepFail(&S.SigmoidBad, X);
    return;
  }
  const double Exact = 1.0 / (1.0 + exp(-double(X)));
  const double Err = fabs(double(Got) - Exact);
  if (Exact < double(FLT_MIN)) {
    if (!(Err <= double(FLT_MIN)))
      sweepFail(&S.SigmoidBad, X);
    return;
  }
  const float Rel = float(Err / Exact);
  if (!(Rel <= (X >= -20.0f ? 2e-6f : 8e-6f)))
    sweepFail(&S.SigmoidBad, X);
  if (fabsf(X) <= 20.0f)
    sweepMax(&S.SigmoidRel20, Rel, &S.SigmoidWorst20, X);
  sweepMax(&S.SigmoidRelAll, Rel, &S.SigmoidWorstAll, X);
}

__global__ void sweep() {
  sweepEveryFloat([](float X) {
    checkGelu(X);
    checkSigmoid(X);
  });
}

} // namespace

int main() {
  Stats R;
  if (int Error = runSweep("activations", sweep, S, R))
    return Error;
  const bool GeluOk = R.GeluBad.Count == 0, SigmoidOk = R.SigmoidBad.Count == 0;
  std::printf("gelu: 2^32 floats: max error %.3g of max(1, |gelu|) (at x = %.9g); max relative "
              "error %.3g for x > -5.6 (at x = %.9g); %llu outside the bound (e.g. x = %.9g): "
              "%s\n",
              R.GeluMixed, R.GeluWorstMixed, R.GeluRel, R.GeluWorstRel, R.GeluBad.Count,
              R.GeluBad.Witness, GeluOk ? "ok" : "FAIL");
  std::printf("sigmoid: 2^32 floats: max relative error %.3g for |x| <= 20 (at x = %.9g), %.3g "
              "over the range (at x = %.9g); %llu outside the bound (e.g. x = %.9g): %s\n",
              R.SigmoidRel20, R.SigmoidWorst20, R.SigmoidRelAll, R.SigmoidWorstAll,
              R.SigmoidBad.Count, R.SigmoidBad.Witness, SigmoidOk ? "ok" : "FAIL");
  return GeluOk && SigmoidOk ? 0 : 1;
}
