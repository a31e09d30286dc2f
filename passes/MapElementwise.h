//===- MapElementwise.h - Several elements per thread, loads before stores -===//
//
// Requires: valid IR; nests without GPU loops (the naive lowering). A nest it
//   takes is outer serial loops (rectangular) around one store, or a block
//   of stores (maps beside one another, graph/MapGroup.h), whose values
//   read none of the stored buffers: elementwise, broadcast and cast
//   kernels, and the elementwise stages of softmax or layernorm. Each
//   store has its own registers; the loads the values share are made once.
// Ensures: the same results bit for bit, from one `launch NAME elementwise`
//   per nest: blocks of
//   `threads` threads (default 256), several elements per thread in rounds
//   that read consecutive addresses across the block, every value of a
//   round computed into registers before its first store, so that several
//   loads per thread are in flight. Where every tensor accessed along the
//   innermost loop has 1-, 2- or 4-byte elements, the rounds take runs of
//   16 bytes of the widest (4 or 8 elements), or of the i8 ones (16, a
//   wider tensor in several 16-byte pieces), through copy loops that vectorize
//   makes single accesses, under a test that proves them aligned (the else
//   branch takes the same elements one at a time). Knobs: threads,
//   items_per_thread, max_blocks. Anything else is left to map-to-gpu.
// Why here: after tile-transpose (a permute is a store of one load too, and
//   the shared tile serves it better); before map-to-gpu, which maps what is
//   left one thread per output (and is all of -O0).
//
//   for i in 0..N serial {     for bx in 0..(N + 4095) / 4096 block.x { for tx in 0..256 thread.x {
//     Y[i] = X[i] * 2.0   ->     if N % 4 == 0 && aligned(X[0], 16) && aligned(Y[0], 16) {
//   }                              for u in 0..4 { let t = (bx * 1024 + u * 256 + tx) * 4 {
//                                    for v in 0..4 { X_run[u, v] = X[i + v] } ... val[u, v] ... }
//                                  for u in 0..4 { ... for v in 0..4 { Y[i + v] = val[u, v] } }
//                                } else { the same 16 elements, one at a time, rounds of 4 } } }
//
// Test: test/passes/map-elementwise.tir, test/passes/map-elementwise-cuda.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_MAPELEMENTWISE_H
#define TDSL_PASSES_MAPELEMENTWISE_H

#include "ir/IR.h"

namespace tdsl {

/// Most blocks of an elementwise launch unless the `max_blocks` knob says
/// otherwise; 0: one block per chunk, no grid-stride loop. Off by default:
/// the loop costs registers and is slower on the H200 (bench/RESULTS.md).
constexpr int64_t MapElementwiseMaxBlocks = 0;

/// Maps every elementwise nest of F to a launch of several elements per thread.
void mapElementwise(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_MAPELEMENTWISE_H
