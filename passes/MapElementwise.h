//===- MapElementwise.h - Several elements per thread, loads before stores -===//
//
// Requires: valid IR; the nests it maps are naive (no GPU loops): outer
//   serial loops (rectangular) around ONE store whose value does not read
//   the stored buffer: elementwise, broadcast and cast kernels, and the
//   elementwise stages of softmax or layernorm.
// Ensures: the same results bit for bit, from one launch per nest: blocks
//   of T threads (knob `threads`, default 256) each handle U = knob
//   `items_per_thread` (default 4) elements; element u of thread tx in
//   block bx is t = bx * T * U + u * T + tx, so each of the U rounds reads
//   consecutive addresses across the block (coalesced). All U values are
//   computed into registers before the first store, so U independent
//   loads per thread are in flight: a naive one-element thread leaves too
//   few bytes in flight to cover DRAM latency on an H200. Elements past
//   the end are skipped. Anything else is left to map-to-gpu.
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

/// Maps every elementwise nest of F to a launch of several elements per thread.
void mapElementwise(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_MAPELEMENTWISE_H
