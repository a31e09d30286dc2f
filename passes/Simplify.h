//===- Simplify.h - Constant folding and algebraic cleanup ----------------===//
//
// Requires: valid IR (the verifier passes); any stage of lowering.
// Ensures:  the same results bit for bit, with
//   - integer and bool operations on constants folded (integers wrap at
//     their width; division by zero and overflowing divisions are kept);
//   - f32/f64 +, -, *, /, comparisons, min/max on constants folded with
//     the dtype's rounding (convertValue), only where IEEE gives the value
//     the target computes (no NaN-sensitive min/max, no float %, no math
//     library calls); casts of constants folded as CastNode defines them;
//   - x+0, x-0, x*1, x/1, x*0, x-x, x%1 on integers; x*1.0, x/1.0, x-0.0 and
//     x+(-0.0) on floats (exact in IEEE; x+0.0 is not, -0.0+0.0 is +0.0);
//     (x+c1)+c2 -> x+(c1+c2) on integers; never a float reassociation;
//   - selects and ifs with constant conditions resolved; serial, unrolled
//     and vectorized loops removed when their extent is <= 0 or their body
//     empty, and replaced by their body with the variable substituted when
//     their extent is 1; ifs, lets and allocs with empty bodies removed;
//     blocks flattened. Loops bound to blocks, warps, lanes or threads are
//     never removed: their extents size the launch (thread.x of extent 1
//     still means "thread 0 only", an empty thread.x loop of 256 still makes
//     the block 256 threads wide).
//   Nodes that do not change keep their pointers.
// Why here: last in the pipeline, so every lowering pass may emit naive
//   index math (tile * 0 + i, extent-1 loops) and rely on it being cleaned
//   up before the backend; other passes and the backend call ir::simplifyExpr()
//   (ir/Simplify.h) directly.
//
//   for i in 0..1 serial {                 A[j + 3] = 6
//     A[j + 1 + 2 + i] = 2 * 3      ->     B[0] = x[] + 0.0
//   }                                      (x + 0.0 stays: it turns
//   if 1 < 2 {                              -0.0 into +0.0)
//     B[0] = x[] * 1.0 + 0.0
//   }
//
// Test: test/passes/simplify.tir
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_SIMPLIFY_H
#define TDSL_PASSES_SIMPLIFY_H

#include "ir/Simplify.h"

namespace tdsl {
/// Folds constants and simplifies index arithmetic in F (parameter shapes
/// and body): ir::simplifyFunc as a pass.
void simplify(ir::Func &F);
using ir::simplifyExpr;
using ir::simplifyStmt;
} // namespace tdsl

#endif // TDSL_PASSES_SIMPLIFY_H
