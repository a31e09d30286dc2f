//===- Unroll.h - Full and partial unrolling of inner loops ---------------===//
//
// Requires: valid IR, typically after the tiling passes.
// Ensures: the same results (unrolling only changes the loop's kind):
//   - every serial loop with a constant trip count of at most unroll_limit
//     (default 16) whose fully unrolled body stays under 4096 statements
//     becomes `unroll` (emitted with `#pragma unroll`): register-tile
//     loops must unroll completely, or the register arrays they index
//     become local memory;
//   - every innermost serial loop whose trip count is not a constant
//     (a reduction over K, a lane-strided row) gets the partial factor
//     `unroll` (default 4; 1 turns it off): several independent loads in
//     flight per thread.
//   Loops holding a barrier are left alone (their bodies synchronize).
//   A note records the counts per launch.
// Why here: after the passes that create the loops and before simplify,
//   which folds the constant index math unrolling exposes in the backend's
//   output (nvcc folds the rest).
//
// Test: test/passes/unroll.tir
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_UNROLL_H
#define TDSL_PASSES_UNROLL_H

#include "ir/IR.h"

namespace tdsl {

/// Marks F's small constant loops for full unrolling and its inner
/// variable loops for partial unrolling.
void unroll(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_UNROLL_H
