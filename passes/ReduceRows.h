//===- ReduceRows.h - One warp per row of a row reduction -----------------===//
//
// Requires: valid IR whose nests are the naive lowering (no GPU loops).
// Ensures: each top-level nest of the form
//     outer serial loops (the rows, rectangular) {
//       alloc ACC: T[1] register { ACC[0] = init...
//         for c serial { ACC[0] = ACC[0] OP E }   (or E OP ACC[0])
//         epilogue... } }
//   with OP one of + * max min, T one of i32 i64 f32 f64, E not reading
//   ACC, and E's loads contiguous along c (c in the last index of every
//   load that uses it), becomes one launch of one warp per row: a block.x
//   loop of ceil(rows / W) blocks, a warp loop of W (knob rows_per_block,
//   default 8) and a lane loop of 32. Lane l folds c = l, l + 32, ... into
//   its own ACC (starting from init; lanes other than 0 start from OP's
//   identity when init may not be one), a shfl_xor butterfly (16 .. 1)
//   gives every lane the total, and lane 0 runs the epilogue. Rows beyond
//   the end skip the whole body; that test is uniform per warp, so every
//   shuffle runs on the full warp. The result differs from the serial loop
//   only by the reassociation of OP (exact for integers, max and min).
//   Reductions it declines keep their nest, with a remark: along another
//   dimension (a column sum) or with E also moving along the innermost
//   row (a 1-D convolution), where one thread per output is coalesced
//   already; over several loops (conv2d); to a scalar (no rows); E
//   reading ACC; any other shape.
// Why here: before map-to-gpu, which maps whatever this pass leaves with
//   one thread per output; after tile-contraction, so that a contraction
//   this pass could also take (Q . K^T, contiguous along k) goes to tiling.
//
//   for r in 0..R serial {              for rb in 0..(R + 7) / 8 block.x {
//     alloc s: f32[1] register {          for warp in 0..8 warp { for lane in 0..32 lane {
//       s[0] = 0.0                          let row = rb * 8 + warp { if row < R {
//       for c in 0..C serial {       ->       let r = row { alloc s: f32[1] register {
//         s[0] = s[0] + X[r, c]                 s[0] = 0.0
//       }                                       for cc in 0..(C - lane + 31) / 32 serial {
//       Y[r] = s[0]                               let c = lane + cc * 32 { s[0] = s[0] + X[r, c] }
//     }                                         }
//   }                                           s[0] = s[0] + shfl_xor(s[0], 16_i32)  (8, 4, 2, 1)
//                                               if lane == 0 { Y[r] = s[0] } } } } } } } }
//
// Test: test/passes/reduce-rows.tir, test/passes/reduce-rows-cuda.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_REDUCEROWS_H
#define TDSL_PASSES_REDUCEROWS_H

#include "ir/IR.h"

#include <cstdint>

namespace tdsl {

/// Rows per block when the schedule does not pin rows_per_block: eight
/// warps (256 threads), the occupancy sweet spot of map-to-gpu too.
constexpr int64_t ReduceRowsPerBlock = 8;

/// Maps each row reduction of F to one warp per row.
void reduceRows(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_REDUCEROWS_H
