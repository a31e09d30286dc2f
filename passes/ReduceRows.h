//===- ReduceRows.h - One warp or one block per row of a row reduction ----===//
//
// Requires: valid IR; nests without GPU loops (the naive lowering).
// Ensures: each nest of outer serial loops (the rows, rectangular) around
//   `alloc ACC: T[1] register { ACC[0] = init...  for c serial { ACC[0] =
//   ACC[0] OP E }  epilogue... }`, with OP one of + * max min, T one of i32
//   i64 f32 f64, E not reading ACC and every load of E that moves with c
//   contiguous along c, becomes one `launch NAME row_reduction` that gives each row one warp
//   (rows_per_block rows a block) or one block (reduce_threads threads):
//   threads stride the row, shfl_xor butterflies combine their partials, a
//   block's warp totals meet in shared memory. Results differ from the
//   serial loop only by the reassociation of OP (none for integers, max and
//   min) and are the same on every run. The note says which mapping and
//   why (block_per_row, else the row length and count). A row length open
//   at compile time that the launcher can evaluate gets both mappings, as
//   two launches whose grids the sizes leave empty but for one (NAME and
//   NAME_warp). A reduction to a
//   scalar is one row. First, reductions with few outputs (column sums,
//   sums over several indices, long vectors to a scalar) are split in two
//   through a temporary of partials (passes/SplitReduce.h), and the pieces
//   mapped as any nest. Other reductions are declined with a remark and
//   left to map-to-gpu.
// Why here: after tile-contraction, which takes the contractions this pass
//   could also match (Q . K^T is contiguous along k); before map-to-gpu,
//   whose one thread per row would read its row alone, serially.
//
//   for r in 0..R serial {              for rb in 0..(R + 7) / 8 block.x {
//     alloc s: f32[1] register {          for warp in 0..8 warp { for lane in 0..32 lane {
//       s[0] = 0.0                  ->      let row = rb * 8 + warp { if row < R { ...
//       for c in 0..C serial {                s[0] = 0.0; for cc ... { c = lane + cc * 32 ... }
//         s[0] = s[0] + X[r, c] }             s[0] = s[0] + shfl_xor(s[0], 16_i32)  (8, 4, 2, 1)
//       Y[r] = s[0] } }                       if lane == 0 { Y[r] = s[0] } } } } } }
//
// Test: test/passes/reduce-rows.tir, test/passes/reduce-rows-cuda.test,
//   test/passes/reduce-rows-choice.tdsl, test/passes/split-reduce.tir,
//   test/passes/split-reduce.test
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
/// elements for each of 256 threads (and where the row is read in runs
/// of 16 bytes, a run for each: 2048 f16, 4096 i8).
constexpr int64_t ReduceBlockRowLength = 1024;

/// Fewer constant rows than this get a block each when every thread of
/// the block has an element: below the SM count of a large GPU (132 on an
/// H200), where one warp per row would leave most SMs idle.
constexpr int64_t ReduceFewRows = 128;

/// Maps each row reduction of F to one warp or one block per row.
void reduceRows(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_REDUCEROWS_H
