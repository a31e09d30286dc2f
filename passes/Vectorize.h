//===- Vectorize.h - 8- and 16-byte shared, global and register accesses --===//
//
// Requires: valid IR with launches (after the tiling passes and map-to-gpu).
// Ensures: the same results (the loop kind changes, nothing else). A serial
//   loop `for v in 0..W` (8 or 16 bytes: W = 2 or 4 elements of 4 bytes,
//   W = 4 or 8 elements of 2 bytes, f16 and bf16) whose body is one
//   copy D[..., base_d + v] = S[..., base_s + v] becomes `vectorize` when
//   every shared-memory side is provably aligned: its buffer has a constant
//   shape whose innermost extent is a multiple of W (pad-shared keeps the
//   padding a multiple of W too) and base is a multiple of W by
//   construction (a sum of terms with a constant factor divisible by W,
//   through let-bound variables). Register sides need no alignment (the
//   backend moves the vector's components one by one). The backend emits
//   the shared or global side as ONE float4 / float2 (int4 / int2; uint4
//   / uint2 holding halves) access: a quarter (an eighth) of the load
//   instructions of the scalar loop, and for a warp reading contiguous
//   16-byte chunks no bank conflict.
//   A global side (a parameter or a temporary the launcher allocates) is
//   wide only inside `if ... && aligned(X[0, 0], W * E) && R % W == 0 ...`
//   (map-elementwise and tile-contraction write such tests): the test
//   proves the tensor's first element aligned, its rows (R, the innermost
//   extent of its shape) a multiple of W, and the base through the same
//   facts (c = t - r * R with t a multiple of W). A global side not proven
//   so is declined with a remark.
// Why here: after every pass that creates loops and before pad-shared,
//   which must keep the vectorized rows aligned, and unroll, which would
//   otherwise turn the loop into `unroll`.
//
// Test: test/passes/vectorize.tir
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_VECTORIZE_H
#define TDSL_PASSES_VECTORIZE_H

#include "ir/Match.h"

namespace tdsl {

/// Marks F's provably aligned short copy loops `vectorize`.
void vectorize(ir::Func &F);

/// The loops it marks are those ir::vectorCopy (ir/Match.h) matches, the
/// matcher the backend emits them by.
using ir::vectorCopy;

} // namespace tdsl

#endif // TDSL_PASSES_VECTORIZE_H
