//===- TileTranspose.h - Stage transposed reads through a shared tile -----===//
//
// Requires: valid IR; runs on top-level nests without GPU loops (the naive
//   lowering), whose outer serial loops are parallel (map-to-gpu's rule).
// Matches: at least two outer serial loops, the last two the row j and the
//   column i (any above them are batch loops), around one store whose last
//   index uses i (writes along i are coalesced when consecutive threads take
//   consecutive i) and whose value reads a load, the T-load, whose last
//   index uses j and not i (so the same mapping reads it with a stride).
// Ensures: the nest becomes one launch of T x 8 threads per block (knob
//   transpose_tile, default 32) over ceil(M/T) x ceil(N/T) tiles of i and j
//   (block.x, block.y) and the flattened batch loops (block.z). Phase 1
//   reads the T-load into an unpadded shared tile with consecutive threads
//   on consecutive j; after a barrier, phase 2 writes the store with
//   consecutive threads on consecutive i, the T-load replaced by the tile
//   read across. Both phases are guarded by the loop bounds; each thread
//   does T/8 rows. Other loads stay where they are. A nest that does not
//   match is left unchanged (with a remark when it looked like a permute).
// Why here: before map-to-gpu, which would map the nest one thread per
//   output (strided reads); before pad-shared, which pads the tile's rows
//   because phase 2 reads it by columns.
//
//   for j in 0..N serial {           for by in 0..(N + 31) / 32 block.y { for bx ... block.x {
//     for i in 0..M serial {    ->     alloc tile: f32[32, 32] shared {
//       Y[j, i] = X[i, j]                ... tile[ty + 8 * r, tx] = X[i, j]  (i: ty, j: tx)
//     }                                  barrier
//   }                                    ... Y[j, i] = tile[tx, ty + 8 * r] } } }  (j: ty, i: tx)
//
// Test: test/passes/tile-transpose.tir
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_TILETRANSPOSE_H
#define TDSL_PASSES_TILETRANSPOSE_H

#include "ir/IR.h"

namespace tdsl {

/// Turns each transposing top-level nest of F into a shared-memory tiled
/// launch; leaves every other nest alone.
void tileTranspose(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_TILETRANSPOSE_H
