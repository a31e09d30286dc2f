//===- MapElementwise.h - Several elements per thread, loads before stores -===//
//
// Requires: valid IR; the nests it maps are naive (no GPU loops): outer
//   serial loops (rectangular) around ONE store whose value does not read
//   the stored buffer: elementwise, broadcast and cast kernels, and the
//   elementwise stages of softmax or layernorm.
// Ensures: the same results bit for bit, from one launch per nest: blocks
//   of T threads (knob `threads`, default 256), U rounds per thread, each
//   round reading consecutive addresses across the block (coalesced). All
//   values of a round are computed into registers before its first store,
//   so U independent loads of each tensor per thread are in flight: a
//   naive one-element thread leaves too few bytes in flight to cover DRAM
//   latency on an H200. Elements past the end are skipped. Anything else
//   is left to map-to-gpu.
//   Wide path: a round covers a run of W consecutive elements of the
//   innermost loop (run q of the nest starts at element t = W q), W = 16
//   bytes of the widest such tensor: 4 when one has 4-byte elements, 8
//   when all have 2. Each 2- or 4-byte tensor (a parameter or a
//   temporary) read along that loop and nowhere else (its last index is
//   the loop variable) is copied into registers by a W-iteration loop, the
//   value is computed from them, and a contiguous output is written by
//   another: vectorize makes those loops single accesses of up to 16 bytes.
//   Every tensor along the loop takes part, or there is no wide path: one
//   left out (f64, i8) would be accessed with a stride of W elements, up
//   to 8 times the memory transactions. U = knob `items_per_thread`, by
//   default 16 / W (16 elements a thread). The path runs under `if Extent
//   % W == 0 && Rows % W == 0 && aligned(X[0, ...], W * bytes) ...` for
//   every such tensor, which is what proves the accesses aligned; the else
//   branch covers the same W * U * T elements per block one at a time, in
//   a rolled loop of W U / 4 rounds of 4 (tensors that start mid-
//   allocation, odd row lengths): fully unrolled, the registers live
//   across the subroutine calls in its values (an f32 division's slow
//   path) spilled. On the H200 the wide path
//   moves 16384^2 f32 at the copy kernel's rate, where one element per
//   access ran at 0.78 of it (bench/RESULTS.md).
//   Without such a tensor (f64, i8, strided accesses only) or with a
//   constant extent not a multiple of 4, only the scalar path: U (default
//   4) elements per thread in one round.
//   Grid-stride, when the `max_blocks` knob asks for it (off by default,
//   see MapElementwiseMaxBlocks): the grid has at most that many blocks;
//   block bx handles chunks bx, bx + grid, ... of W * U * T (or U * T)
//   elements, so a tensor of any size runs on a bounded grid of
//   long-lived blocks.
// Why here: with the kernel-class passes, before map-to-gpu, which maps
//   what is left one thread per output (and is all of -O0).
//
// Test: test/passes/map-elementwise.tir
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_MAPELEMENTWISE_H
#define TDSL_PASSES_MAPELEMENTWISE_H

#include "ir/IR.h"

namespace tdsl {

/// Most blocks of an elementwise launch unless the `max_blocks` knob says
/// otherwise; 0: one block per chunk, no grid-stride loop. 0 by default: on
/// the H200 the loop (any cap from 1056 to 8192 blocks) took the 16384^2
/// f32 elementwise kernel from 40-44 to 59-63 registers and from 1.05 to
/// 0.93 of the copy kernel's speed (bench/RESULTS.md).
constexpr int64_t MapElementwiseMaxBlocks = 0;

/// Maps every elementwise nest of F to a launch of several elements per thread.
void mapElementwise(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_MAPELEMENTWISE_H
