//===- Vectorize.h - 8- and 16-byte shared, global and register accesses --===//
//
// Requires: valid IR with launches (after the kernel-class passes and
//   map-to-gpu).
// Ensures: the same results (only loop kinds change). A serial copy loop
//   `for v in 0..W { D[..., base_d + v] = S[..., base_s + v] }` of 8 or 16
//   bytes (W = 2 or 4 elements of 4 bytes, 4 or 8 of 2 bytes; 4, 8 or 16
//   of 1 byte) becomes
//   `vectorize` when every memory side is provably aligned: a shared side
//   by its constant row length and its base; a global side (a parameter or
//   a temporary the launcher allocates) only inside an enclosing
//   `if ... && aligned(X[0, 0], W * E) && R % W == 0 ...` (map-elementwise
//   and tile-contraction write such tests), or under `aligned(X[0, 0], W *
//   E)` alone where the element's row-major offset is a multiple of W
//   modulo W (row-chain's peeled rows: r * C + head + 8 t with head =
//   (8 - r * C % 8) % 8); a register side always. The
//   backend emits the memory side as ONE float4 / float2 (int4 / int2; uint4
//   / uint2 holding halves; uint4 / uint2 / uint1 holding bytes) access. A side not proven aligned stays scalar,
//   with a remark.
// Why here: after every pass that creates loops; before pad-shared, which
//   must keep the vectorized rows aligned, and unroll, which would otherwise
//   make the loop `unroll`.
//
//   if N % 4 == 0 && aligned(X[0], 16) ... {        if N % 4 == 0 && aligned(X[0], 16) ... {
//     let t: i64 = (...) * 4 { let i: i64 = t {  ->   let t: i64 = (...) * 4 { let i: i64 = t {
//       for v in 0..4 serial {                          for v in 0..4 vectorize {
//         X_run[u, v] = X[i + v] } } } }                  X_run[u, v] = X[i + v] } } } }
//
// Test: test/passes/vectorize.tir
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_VECTORIZE_H
#define TDSL_PASSES_VECTORIZE_H

#include "ir/IR.h"

namespace tdsl {

/// Marks F's provably aligned short copy loops `vectorize`: those
/// ir::vectorCopy (ir/Match.h) matches, the matcher the backend emits
/// them by.
void vectorize(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_VECTORIZE_H
