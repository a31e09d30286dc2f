//===- TileTranspose.h - Stage transposed reads through a shared tile -----===//
//
// Requires: valid IR; nests without GPU loops (the naive lowering), whose
//   outer serial loops are parallel (map-to-gpu's rule). A nest it takes has
//   two or more of them, the last the column i, around one store whose last
//   index uses i (writes are coalesced when consecutive threads take
//   consecutive i) and whose value reads a load, the T-load, whose last
//   index uses one other loop j, the row, and not i (the same threads would
//   read it with a stride). The row may be any loop above i (NHWC to NCHW,
//   Y[n, c, h, w] = X[n, h, w, c], has c two loops up); the rest are batch
//   loops.
// Ensures: the same results, from one `launch NAME transpose` of T x 8
//   threads a block (knob
//   transpose_tile = T, default 32) per T x T tile of j and i (block.y,
//   block.x; batch loops flattened into block.z): the T-load goes through a
//   shared tile, read along j and written along i, both coalesced. Other
//   loads stay where they are. A nest that does not match is left
//   unchanged, with a remark when it looked like a permute.
// Why here: before map-to-gpu, which would map the nest one thread per
//   output (strided reads); before pad-shared, which pads the tile's rows
//   because the second phase reads it by columns.
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
