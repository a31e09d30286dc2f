//===- Simplify.h - Constant folding and algebraic cleanup ----------------===//
//
// Requires: valid IR, at any stage of lowering.
// Ensures: the same results bit for bit; nodes that do not change keep their
//   pointers. Folded: integer and bool operations on constants (wrapping at
//   their width; division by zero and overflowing divisions kept); f32/f64
//   + - * /, comparisons and min/max on constants, with the dtype's
//   rounding, where IEEE gives what the target computes (no NaN-sensitive
//   min/max, no float %, no library calls); casts of constants. On integers
//   x+0, x-0, x*1, x/1, x*0, x-x, x%1 and (x+c1)+c2 -> x+(c1+c2); on floats
//   only the exact x*1.0, x/1.0, x-0.0 and x+(-0.0), never a reassociation.
//   Selects and ifs on constant conditions resolved; serial, unrolled and
//   vectorized loops removed when empty or of extent <= 0, inlined when of
//   extent 1; empty ifs, lets and allocs removed; blocks flattened. Loops
//   bound to blocks, warps, lanes or threads are never removed: their
//   extents size the launch.
// Why here: last, so every lowering pass may emit naive index math (tile *
//   0 + i, extent-1 loops) and rely on it being cleaned up before the
//   backend; passes and the backend also call ir::simplifyExpr()
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

#include "ir/IR.h"

namespace tdsl {
/// Folds constants and simplifies index arithmetic in F (parameter shapes
/// and body): ir::simplifyFunc as a pass.
void simplify(ir::Func &F);
} // namespace tdsl

#endif // TDSL_PASSES_SIMPLIFY_H
