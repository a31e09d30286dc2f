//===- Unroll.h - Full and partial unrolling of inner loops ---------------===//
//
// Requires: valid IR, typically after the passes that create the loops.
// Ensures: the same results (only loop kinds and unroll factors change):
//   - every serial loop with a constant trip count of at most unroll_limit
//     (default 16) whose fully unrolled body is at most 4096 statements
//     becomes `unroll` (emitted with `#pragma unroll`): register-tile loops
//     must unroll completely, or the register arrays they index become
//     local memory;
//   - every innermost serial loop whose trip count is not a constant (a
//     reduction over K, a lane-strided row) gets the partial factor
//     `unroll` (default 4; 1 turns it off): several independent loads in
//     flight per thread.
//   Loops holding a barrier, and loops a pass marked to stay rolled
//   (`serial(1)`), are left alone. A remark gives the counts per launch.
// Why here: after the passes that create the loops, and after pad-shared,
//   whose model reads the accesses once rather than unrolled; before
//   simplify, which folds the constant index math unrolling exposes in the
//   backend's output (nvcc folds the rest).
//
//   for i in 0..8 serial {        for i in 0..8 unroll {
//     for j in 0..4 serial {  ->    for j in 0..4 unroll {
//       acc[i, j] = 0.0 } }            acc[i, j] = 0.0 } }
//   for k in 0..K serial { ... }  for k in 0..K serial(4) { ... }
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
