//===- PadShared.h - Pad shared tiles' rows off bank conflicts ------------===//
//
// Requires: valid IR with launches (after the kernel-class passes,
//   map-to-gpu and vectorize).
// Ensures: the same results (padding adds storage, never elements). Each
//   shared buffer of rank >= 2 with a constant shape and no padding or
//   swizzle yet gets the padding p (0..8 elements) of its innermost
//   dimension that a bank model of warp 0's actual accesses prefers: the
//   fewest wavefronts over all of them, then the smallest p, and only a p
//   that keeps every wide access's rows aligned. A chosen p > 0 sets the
//   buffer's padding and puts a note saying why at the top of the alloc's
//   body. Knob padding: auto (default), off, or N to force N elements. A
//   buffer a call reads (an intrinsic with its own layout) is left alone;
//   every buffer left unpadded gets a remark saying why.
// Why here: after every pass that creates shared tiles and their accesses,
//   and after vectorize (the alignment its wide accesses need is known);
//   before unroll, which multiplies the accesses without changing their
//   pattern.
//
//   alloc tile: f32[32, 32] shared {         alloc tile: f32[32, 32] shared pad [0, 1] {
//     ...                              ->      note "[pad-shared] tile: pad 1: ..."
//     Y[j, i] = tile[tx, ty + 8 * r]           ...
//   }                                          Y[j, i] = tile[tx, ty + 8 * r] }
//   (lanes tx = 0..31 read one column: 32 words in bank 0; with rows of 33, one each)
//
// Test: test/passes/pad-shared.tir
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_PADSHARED_H
#define TDSL_PASSES_PADSHARED_H

#include "ir/IR.h"

namespace tdsl {

/// Pads the rows of F's shared buffers where the bank model finds it
/// removes conflicts.
void padShared(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_PADSHARED_H
