// GPU check of tdsl/device.cuh's f32 exps (tdsl_exp, how the backend spells
// exp with fexp = ex2, the default, and tdsl_exp_sq, with fexp = ex2sq),
// each over every one of the 2^32 floats against
// e^x computed in double. Each result must be within T max(e^x, FLT_MIN)
// + 2^-149 of it (T = 2e-6 for |x| <= 20, 6e-6 beyond; a subnormal result
// keeps the absolute error of the smallest normal ones, and its rounding
// to the smallest subnormal, 2^-149), NaN for NaN, and infinite
// only where e^x passes the largest float or lies within 1e-5 of it (x
// log2 e may round up to 128 there). Reports the largest relative error
// where e^x is a normal float, for |x| <= 20 and over the range, the
// largest error in subnormal units below it, and the failures; exit status
// 1 on any.
#include "float_sweep.cuh"
#include <tdsl/device.cuh>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace {

struct Stats {
  float Rel20, RelAll, SubUnits;
  float WorstRel, WorstSub;
  unsigned long long NearOverflow;
  SweepFailures Bad;
};
__device__ Stats S;

template <bool Squared> __global__ void sweep() {
  sweepEveryFloat([](float X) {
    const float Got = Squared ? tdsl_generated::tdsl_exp_sq(X) : tdsl_generated::tdsl_exp(X);
    const double Exact = exp(double(X));
    if (X != X || Got != Got) {
      if ((X != X) != (Got != Got))
        sweepFail(&S.Bad, X);
      return;
    }
    if (isinf(Got) || Exact > double(FLT_MAX)) {
      if (isinf(Got) && Exact > double(FLT_MAX) * (1 - 1e-5) && Exact <= double(FLT_MAX))
        atomicAdd(&S.NearOverflow, 1ull);
      else if (!(isinf(Got) && Exact > double(FLT_MAX)))
        sweepFail(&S.Bad, X);
      return;
    }
    const double Err = fabs(double(Got) - Exact);
    if (Err > (fabsf(X) <= 20.0f ? 2e-6 : 6e-6) * fmax(Exact, double(FLT_MIN)) + 0x1p-149)
      sweepFail(&S.Bad, X);
    if (Exact >= double(FLT_MIN)) {
      const float Rel = float(Err / Exact);
      if (fabsf(X) <= 20.0f)
        sweepMax(&S.Rel20, Rel, &S.WorstRel, X);
      sweepMax(&S.RelAll, Rel, &S.WorstRel, X);
    } else {
      sweepMax(&S.SubUnits, float(Err / 0x1p-149), &S.WorstSub, X);
    }
  });
}

} // namespace

int main() {
  bool Ok = true;
  for (bool Squared : {false, true}) {
    const char *Name = Squared ? "exp_sq" : "exp";
    Stats R;
    if (int Error = runSweep(Name, Squared ? sweep<true> : sweep<false>, S, R))
      return Error;
    Ok &= R.Bad.Count == 0;
    std::printf("%s: 2^32 floats: max relative error %.3g for |x| <= 20, %.3g over the range "
                "(at x = %.9g); subnormal results within %.3g units (at x = %.9g); %llu infinite "
                "at the overflow threshold; %llu outside the bound (e.g. x = %.9g): %s\n",
                Name, R.Rel20, R.RelAll, R.WorstRel, R.SubUnits, R.WorstSub, R.NearOverflow,
                R.Bad.Count, R.Bad.Witness, R.Bad.Count == 0 ? "ok" : "FAIL");
  }
  return Ok ? 0 : 1;
}
