//===- TileContraction.h - Block, thread and register tiles for GEMMs -----===//
//
// Requires: valid IR; nests without GPU loops (the naive lowering). A nest it
//   takes is two or more outer serial loops (batch..., m, n) around
//   `alloc ACC: T[1] register` holding: stores to ACC[0] that read nothing;
//   ONE serial loop k, its bounds free of the output indices, whose body is
//   ACC[0] = f(ACC[0], operands), each operand a load that uses k and
//   exactly one of m and n; an epilogue. Or a perfect nest of reduced
//   loops (a convolution's c, r, s): k is the innermost one every operand
//   reads as an index of its own, the others run around the loop over
//   its k tiles (one index kt walks every k tile of each of their
//   combinations), and m and n may be any pair of the output loops that
//   splits the operands, the output loops that only one side reads (a
//   convolution's n, h, w) merged into one (ContractionMatch.h,
//   mergeSideLoops), the rest batch loops; in a plain product, batch
//   loops one side reads as one row index with its own loop (X[b, s, d])
//   merge with it; reduced loops every access reads as one index (a
//   reshaped k) are first one k (mergeReducedLoops). Other nests are
//   declined with
//   a remark and left to map-to-gpu.
// Ensures: the same results bit for bit where the k loop is not split and
//   is the only reduced loop (each output still adds its k terms in k
//   order; a nest adds them in the order of its k tiles), from `launch NAME
//   contraction` (NAME: the tensor it writes; min_blocks chosen on it,
//   below): a block per BM x BN output tile,
//   TM x TN outputs per thread in registers, each operand's k tile staged in
//   shared memory by a coalesced copy, by default prefetched into registers
//   and double-buffered, and `min_blocks = 2 by "tile-contraction"` added to
//   the schedule when the tile's registers leave room. A note records the
//   choices. Where the sizes may give few output tiles and a long k loop,
//   two more launches split each tile's k loop over blocks and add their
//   partials (passes/ContractionSplitK.h), the tiled launch's grid empty at
//   those sizes: the sums then differ only by the order of the additions.
//   Where the rows may be at most 64 (a decoder's tokens), those launches
//   again over 32x128 block tiles of 4x8 outputs a thread (NAME_short,
//   NAME_short_split...; the only ones where the rows always are), each
//   grid empty at the other's rows: 128-row tiles would spend half to
//   nearly all of their FMAs on rows past M. Columns of a constant count
//   of at most 64 (a matrix times a few vectors) take 128x32 tiles of 8x4
//   alone, where the rows are not so few.
//   Knobs: block_tile, k_tile, thread_tile, thread_vector, lane_cols,
//   prefetch, stages, copy_runs, split_k, few_tiles (passes/Schedule.h).
// The matcher is shared with tile-mma (passes/ContractionMatch.h); the
// operands' staging (copy coordinates, runs, the cooperative copies and
// the prefetch registers) is passes/ContractionStaging.h; this pass builds
// the launch around them: TileContraction.cpp the register tile, the k loop
// in its three forms and the epilogue; ContractionLaunch.cpp which launches
// a nest gets, each one's schedule, the thread coordinates and the grid
// (their shared state: passes/ContractionTiler.h).
// Why here: first, while the contraction is still a plain loop nest;
//   map-to-gpu maps what it declines; vectorize, pad-shared and unroll then
//   refine the tiles it made (wide shared reads, padding, register arrays).
//
//   for m in 0..M serial {               for by in 0..(M + 127) / 128 block.y {
//     for n in 0..N serial {               for bx in 0..(N + 127) / 128 block.x {
//       alloc acc: f32[1] register {   ->    for tx in 0..256 thread.x {
//         acc[0] = 0.0                          alloc A_tile: f32[2, 16, 128] shared { ...
//         for k in 0..K serial {                  alloc acc: f32[8, 8] register { ...
//           acc[0] = acc[0] + A[m, k] * B[k, n]     for kt in 0..(K + 15) / 16 serial { ... }
//         }                                       C[m, n] = acc[i, j] (m < M && n < N)
//         C[m, n] = acc[0] } } }              } } } } }
//
// Test: test/passes/tile-contraction.tir, test/passes/tile-contraction-cuda.test,
//   test/passes/tile-contraction-split.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_TILECONTRACTION_H
#define TDSL_PASSES_TILECONTRACTION_H

#include "ir/IR.h"

namespace tdsl {

/// Tiles every contraction nest of F for blocks, threads and registers.
void tileContraction(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_TILECONTRACTION_H
