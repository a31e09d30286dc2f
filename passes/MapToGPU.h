//===- MapToGPU.h - One launch per statement, one thread per output -------===//
//
// Requires: valid IR whose top-level statements are global allocs, launches
//   and statement nests without GPU loops (the naive lowering). The outer
//   serial loops of a nest must be parallel (each iteration writes its own
//   elements), which the lowering guarantees: they are the output indices.
// Ensures: every top-level statement is an alloc-global or a launch; each
//   nest becomes `launch NAME generic`, NAME the tensor it writes. Each
//   nest's maximal perfect run of outer serial loops (rectangular: no bound
//   depends on an outer loop of the run) is
//   flattened into a linear index t = bx * T + tx over a block.x loop of
//   ceil(total / T) blocks and a thread.x loop of T threads (knob threads,
//   default 256), guarded by `if t < total`; the loop variables come back
//   as lets, innermost fastest, so that consecutive threads touch
//   consecutive elements of a row-major output (coalesced). Reductions stay
//   serial loops inside the thread. A nest without outer loops (rank-0
//   output) becomes a 1x1 launch. A launch is left alone, silently.
//   Results are unchanged: each thread runs one iteration.
// Why here: after the kernel-class passes, to map every nest they declined,
//   and before the refining passes, which then see only launches. At -O0 it
//   is the whole pipeline, so naive code still runs on a GPU.
//
//   for m in 0..M serial @3 {            for bx in 0..(M * N + 255) / 256 block.x @3 {
//     for n in 0..N serial @3 {   ->       for tx in 0..256 thread.x @3 {
//       C[m, n] = A[m, n]                    let t: i64 = bx * 256 + tx { if t < M * N {
//     }                                        let m: i64 = t / N { let n: i64 = t - m * N {
//   }                                            C[m, n] = A[m, n] } } } } } }
//
// Test: test/passes/map-to-gpu.tir
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_MAPTOGPU_H
#define TDSL_PASSES_MAPTOGPU_H

#include "ir/IR.h"

#include <cstdint>

namespace tdsl {

/// Threads per block of the naive mapping (a multiple of the warp size, the
/// usual occupancy sweet spot; tiling passes choose their own).
constexpr int64_t MapToGPUThreads = 256;

/// Turns each top-level statement nest of F into one kernel launch.
void mapToGPU(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_MAPTOGPU_H
