//===- ReduceRows.h - One warp or one block per row of a row reduction ----===//
//
// Requires: valid IR whose nests are the naive lowering (no GPU loops).
// Ensures: each top-level nest of the form
//     outer serial loops (the rows, rectangular) {
//       alloc ACC: T[1] register { ACC[0] = init...
//         for c serial { ACC[0] = ACC[0] OP E }   (or E OP ACC[0])
//         epilogue... } }
//   with OP one of + * max min, T one of i32 i64 f32 f64, E not reading
//   ACC, and E's loads contiguous along c (c in the last index of every
//   load that uses it), becomes one launch that gives each row either one
//   warp or one block:
//   - warp per row: a block.x loop of ceil(rows / W) blocks, a warp loop of
//     W (knob rows_per_block, default 8) and a lane loop of 32. Lane l
//     folds c = l, l + 32, ... into its own ACC, a shfl_xor butterfly
//     (16 .. 1) gives every lane the total, and lane 0 runs the epilogue.
//     Rows beyond the end skip the whole body; that test is uniform per
//     warp, so every shuffle runs on the full warp.
//   - block per row: a block.x loop of one block per row, N threads (knob
//     reduce_threads, default 256, W = N / 32 warps). Thread t folds c = t,
//     t + N, ...; a butterfly per warp, lane 0 of each warp stores the
//     warp's total in a shared ACC_warps[W], one barrier, then warp 0 loads
//     the W totals (lanes past W: OP's identity, or a repeat for max and
//     min), a butterfly over the next power of 2 >= W, and its lane 0 runs
//     the epilogue.
//   Every thread starts from init; threads other than 0 start from OP's
//   identity when init may not be one. The result differs from the serial
//   loop only by the reassociation of OP (exact for integers, max and
//   min), and is the same on every run for a given thread count.
//   Which one, by the row length L (c's extent) and the row count R:
//     block_per_row = on | off pins it; a knob of one mapping pinned alone
//     (rows_per_block or reduce_threads) asks for that one; otherwise
//     L not a constant              -> block. Either wrong guess costs up to
//        N / 32 (8x) in threads per row: a block on rows shorter than N
//        leaves most of its threads idle, a warp on long rows, when they
//        are few, leaves most of the GPU idle. A length the program leaves
//        open is usually the long axis (the hidden size of softmax or
//        layernorm, thousands of elements), where a block also finishes
//        each row sooner; short axes are usually constants.
//     L >= 1024 (ReduceBlockRowLength) -> block: 4 or more elements for
//        each of 256 threads pay for the barrier and the second combine.
//     R < 128 constant (ReduceFewRows) and L >= N -> block: with so few
//        rows a warp each fills at most R / 8 of an H200's 132 SMs; a
//        block each puts N / 32 times the loads in flight per row.
//     else (a short constant row)   -> warp: many short rows keep the GPU
//        busy with warps alone, and need no shared memory or barrier.
//   The launch's note says which, and why.
//   Reductions it declines keep their nest, with a remark: along another
//   dimension (a column sum) or with E also moving along the innermost
//   row (a 1-D convolution), where one thread per output is coalesced
//   already; over several loops (conv2d); to a scalar (no rows); E
//   reading ACC; any other shape; a knob outside the range checkSchedule
//   enforces (only a caller that skipped it can pass one).
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
//   and with a block per row (block_per_row = on, or C unknown):
//     for row in 0..R block.x { let r = row { alloc s_warps: f32[8] shared {
//       for warp in 0..8 warp { for lane in 0..32 lane { let tid = warp * 32 + lane {
//         alloc s { s[0] = 0.0; for cc in 0..(C - tid + 255) / 256 { ... c = tid + cc * 256 }
//           butterfly 16 .. 1; if lane == 0 { s_warps[warp] = s[0] } } } } }
//       barrier
//       for warp in 0..1 warp { for lane in 0..32 lane { alloc s {
//         s[0] = s_warps[lane % 8]; butterfly 4, 2, 1; if lane == 0 { Y[r] = s[0] } } } } } } }
//
// Test: test/passes/reduce-rows.tir, test/passes/reduce-rows-cuda.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_REDUCEROWS_H
#define TDSL_PASSES_REDUCEROWS_H

#include "ir/IR.h"

#include <cstdint>

namespace tdsl {

/// Rows per block of the warp mapping when the schedule does not pin
/// rows_per_block: eight warps (256 threads), the occupancy sweet spot of
/// map-to-gpu too.
constexpr int64_t ReduceRowsPerBlock = 8;

/// Threads per block of one block per row when the schedule does not pin
/// reduce_threads.
constexpr int64_t ReduceBlockThreads = 256;

/// The shortest constant row that gets a block rather than a warp: 4
/// elements for each of 256 threads.
constexpr int64_t ReduceBlockRowLength = 1024;

/// Fewer constant rows than this get a block each when every thread of
/// the block has an element: below the SM count of a large GPU (132 on an
/// H200), where one warp per row would leave most SMs idle.
constexpr int64_t ReduceFewRows = 128;

/// Maps each row reduction of F to one warp or one block per row.
void reduceRows(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_REDUCEROWS_H
