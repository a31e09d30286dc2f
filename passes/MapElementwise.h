//===- MapElementwise.h - Several elements per thread, loads before stores -===//
//
// Requires: valid IR; the nests it maps are naive (no GPU loops): outer
//   serial loops (rectangular) around ONE store whose value does not read
//   the stored buffer: elementwise, broadcast and cast kernels, and the
//   elementwise stages of softmax or layernorm.
// Ensures: the same results bit for bit, from one launch per nest: blocks
//   of T threads (knob `threads`, default 256), U = knob `items_per_thread`
//   (default 4) rounds per thread, each round reading consecutive
//   addresses across the block (coalesced). All values are computed into
//   registers before the first store, so U independent loads of each
//   tensor per thread are in flight: a naive one-element thread leaves too
//   few bytes in flight to cover DRAM latency on an H200. Elements past
//   the end are skipped. Anything else is left to map-to-gpu.
//   Wide path: a round covers a run of W = 4 consecutive elements of the
//   innermost loop (run q of the nest starts at element t = 4q). Each
//   4-byte tensor read along that loop and nowhere else (its last index is
//   the loop variable) is copied into registers by a 4-iteration loop, the
//   value is computed from them, and a contiguous 4-byte output is written
//   by another: vectorize makes those loops single 16-byte accesses. The
//   path runs under `if Extent % 4 == 0 && Rows % 4 == 0 && aligned(X[0,
//   ...], 16) ...` for every such tensor, which is what proves the accesses
//   aligned; the else branch covers the same 4 * U * T elements per block
//   one at a time (tensors that start mid-allocation, odd row lengths). On
//   the H200 the wide path moves 16384^2 f32 at the copy kernel's rate,
//   where one element per access ran at 0.78 of it (bench/RESULTS.md).
//   Without such a tensor (f16, f64, strided accesses only) or with a
//   constant extent not a multiple of 4, only the scalar path, U per thread.
//   Grid-stride, when the `max_blocks` knob asks for it (off by default,
//   see MapElementwiseMaxBlocks): the grid has at most that many blocks;
//   block bx handles chunks bx, bx + grid, ... of 4 * U * T (or U * T)
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
