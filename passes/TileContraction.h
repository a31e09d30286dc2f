//===- TileContraction.h - Block, thread and register tiles for GEMMs -----===//
//
// Requires: valid IR; the nests it rewrites are naive (no GPU loops):
//   two or more outer serial loops (batch..., m, n: the last two are the
//   output tile's rows and columns) around `alloc ACC: T[1] register`
//   holding init stores to ACC[0] (no loads), ONE serial reduction loop k
//   whose body is the single store ACC[0] = f(ACC[0], operands), and an
//   epilogue. Every load in f other than ACC[0] is an operand: it uses k
//   and exactly one of m and n (A[m, k], B[k, n], X[b, m, k], W[k, n] ...).
//   Anything else (a load of neither side, a second reduction loop, a
//   reduction loop whose bounds depend on m or n) is declined, with a
//   remark, and left to map-to-gpu.
// Ensures: the same results bit for bit (every output still accumulates
//   its k terms in k order) from one launch per nest:
//   - block tiles of BM x BN outputs (block.y over m, block.x over n,
//     block.z over the flattened batch loops) of (BM/TM) x (BN/TN) threads;
//   - each thread owns TM x TN outputs in registers, VW consecutive ones
//     per group and groups strided across the threads, so that a warp's
//     shared-memory reads of a k step are contiguous (VW-wide vectors after
//     vectorize) and free of bank conflicts;
//   - each operand's k tile (BK x BM or BK x BN values) staged in shared
//     memory by a cooperative copy in which consecutive threads read
//     consecutive global addresses (k fastest when the operand's last index
//     is k, its row or column otherwise), zero outside the tensor. With
//     copy_runs = on (off by default: measured 0.9% slower at 4096^3 f32
//     on the H200), each thread copies runs of 4 elements along that index
//     when the operand is a 4-byte tensor indexed by it last and alone,
//     and every thread gets whole runs (not f16/bf16: runs of 8 halves
//     measured 3-4% slower); inside the tensor and under
//     `if Rows % Run == 0 && aligned(A[0, 0], 16)` vectorize makes a run
//     one load, and the edge and unaligned copies take the same runs one
//     element at a time, so the prefetch registers are laid out alike on
//     every path (storeNextToTile does not branch);
//   - with prefetch = on, the next k tile is loaded into registers while
//     the current one is computed (register double buffering), and with
//     stages = 2 as well it is stored into a second shared buffer, one
//     barrier per tile; both are on by default;
//   - two resident blocks per SM: unless min_blocks is pinned, the pass
//     adds `min_blocks = 2 by "tile-contraction"` to the schedule when the
//     tile state (accumulators, fragments, prefetched values) fits in 96
//     registers, so that ptxas keeps to 128 and the prefetch registers do
//     not cost the second block (4096^3 f32 0.87x cuBLAS with it on the
//     H200, 0.79x without: bench/RESULTS.md);
//   - boundary predication: full k tiles run a constant-trip loop (unrolled
//     later), the last partial one a guarded loop; outputs beyond M or N
//     are computed from zeros and never stored.
//   Knobs (passes/Schedule.h): block_tile, k_tile, thread_tile,
//   thread_vector, lane_cols, prefetch, stages, copy_runs, min_blocks. A note at the
//   top of the launch records the schedule and why.
// Why here: first in the pipeline, on the naive nests, where the
//   contraction's structure is still plain; map-to-gpu then maps what it
//   declined, and vectorize, pad-shared and unroll refine the tiles it
//   made (wide shared reads, conflict-free stores, registers).
//
// Test: test/passes/tile-contraction.tir, test/passes/tile-contraction-cuda.test
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
