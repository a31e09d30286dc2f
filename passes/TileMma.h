//===- TileMma.h - Contractions on tensor cores: mma.sync, ldmatrix -------===//
//
// Requires: valid IR; nests without GPU loops; F.MinSM >= 80.
// Takes: a contraction (passes/ContractionMatch.h) whose update is
//   ACC[0] + f32(A) * f32(B) with A and B both f16 or both bf16 (mma
//   m16n8k16), ACC[0] + f32(tf32(A)) * f32(tf32(B)) with A and B f32
//   (m16n8k8), both into an f32 ACC, or ACC[0] + i32(A) * i32(B) with A and
//   B i8 into an i32 ACC (m16n8k32), in either order of the operands, when
//   the tensor-core schedule allows it (passes/Schedule.h, MmaSchedule). Anything else is declined
//   with a remark and left to tile-contraction; with tensor_cores = on the remark also covers nests
//   that are no contraction at all, and says so. A reduction over a nest
//   of loops (a convolution) is taken as tile-contraction takes it: k
//   tiles of its k walked with the other reduced loops around them, the
//   output loops one side reads merged into one (mergeSideLoops); its
//   warps are 64x32, it takes no large block, and its small and split
//   launches ask for one resident block (min_blocks). A plain product's
//   batch loops that one side reads as one row index with its own loop (a
//   linear layer's X[b, s, d]) merge with that loop too (mergeSideLoops),
//   and the copy engine reads that operand's leading dimensions as one.
//   Reduced loops every access reads as one index (a reshaped k, heads
//   of an output projection) are first one k (mergeReducedLoops).
// Ensures: the same sums, each output adding its k terms in groups of 16
//   (the mma's own order within a group is unspecified, so results equal
//   the CUDA-core path's exactly when the sums are exact, as with
//   --exact-inputs). A `launch NAME contraction` per nest: a block per
//   BM x BN output tile, a warp per WM x WN part of it holding its
//   accumulators as mma fragments; the operands' k tiles pass through a ring
//   of `stages` shared buffers, filled by 16-byte async copies that read
//   zeros outside the tensor (plain guarded copies where the rows are not a
//   multiple of 16 bytes or the tensor is not 16-byte aligned), swizzled
//   so that the copies and the ldmatrix reads are free of bank conflicts;
//   fragments come from ldmatrix, with .trans for a 16-bit operand whose
//   contiguous index is not k (one shared load per element for such a 32-
//   or 8-bit operand), in the async-copy version one k step ahead in a
//   second buffer (double_buffer); tf32 fragments are rounded as tf32()
//   rounds. Every
//   size is counted in bytes: a 16-byte copy or ldmatrix row holds 8, 4 or
//   16 elements, and the k tile is 64 bytes of each operand row. On sm_90
//   (F.MinSM >= 90, copy_engine) the aligned version of a 16-bit product
//   in the default or large launch (a batched one's for long k loops)
//   fills its stages by the bulk tensor copy engine instead: k tiles of
//   128 bytes a row, 3 stages, tiles in the engine's swizzle, mbarriers in
//   place of block barriers (passes/MmaKLoop.h); the guarded version then
//   keeps tiles and a schedule of its own. The epilogue runs per accumulator element,
//   for the outputs inside the tensor, storing to a shared tile over the
//   operand tiles' bytes that the block then copies out in 16-byte runs
//   (passes/MmaEpilogue.h; stage_epilogue), else from the fragments. Notes say what was chosen and
//   why. Sibling contractions (several accumulators in one nest) stage each distinct operand once
//   and issue an mma per accumulator; each warp holds its part of every accumulator. Where the
//   sizes are open and may give fewer than MmaFewTiles output tiles, or at most MmaShortRows rows,
//   the nest is written as two launches, the second (NAME_small) of MmaSmallBlock tiles, each with
//   a grid that is empty at the other's sizes (few_tiles); on sm_90, where those small tiles are
//   MmaSmallEngineTiles or more and the rows fill one, a third
//   (NAME_small_engine) fills them by the copy engine; where
//   fewer still with a long k loop, two more split the k loop over blocks
//   (NAME_split, NAME_split_sum; passes/ContractionSplitK.h, split_k). A batched
//   nest's default block takes 64x32 warps, and 64x64 in a launch of its
//   own (NAME_wide) where k and the columns are long (MmaLongK). Sizes of
//   many output tiles and a long k loop (MmaLargeMinK) take MmaLargeBlock
//   blocks (NAME_large where open);
//   sizes of one wave of them (MmaOneWaveTiles), twice the warps
//   (NAME_wave where open); up to one and a half waves (MmaHalfTiles),
//   half blocks (NAME_half where open).
// Why here: before tile-contraction, which takes what this pass declines.
// What it takes is passes/MmaMatch.h's; the operands' staging (tile
// layout, swizzle, copies, fragment loads) is passes/MmaStaging.h; the k
// loop's forms passes/MmaKLoop.h; the outputs' staging
// passes/MmaEpilogue.h; the epilogue's reads along one side
// passes/MmaLineReads.h; its values before its stores
// passes/MmaEpilogueValues.h; the split k loop passes/ContractionSplitK.h. This
// pass builds the launches around them: their bodies in
// passes/TileMma.cpp, which launches a nest gets, their schedules and
// grids in passes/MmaLaunch.cpp (the builder both share:
// passes/MmaTiler.h).
//
//   for m, n { acc = 0; for k { acc += f32(A[m, k]) * f32(B[k, n]) }; C[m, n] = acc }
//     ->
//   launch C contraction { for by, bx block { for tx thread {
//     alloc A_tile: f16[4, 128, 32] shared swizzle(2, 3, 3) { ...
//       async_copy A_tile[s, r, c] <- A[m0 + r, k0 + c] x 8 when (...)
//       ldmatrix x4 A_frag[i, 0] <- A_tile[s, w0 + i * 16 + lane % 16, ...]
//       mma m16n8k16 acc[i, j, 0] += A_frag[i, 0] * B_frag[j, 0]
//       C[m, n] = acc[i, j, e] (m < M && n < N) } } } }
//
// Test: test/passes/tile-mma.tir, test/passes/tile-mma-cuda.test,
//   test/passes/tile-mma-split.test, test/passes/tile-mma-large.test,
//   test/passes/tile-mma-epilogue.test, test/passes/tile-mma-conv.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_TILEMMA_H
#define TDSL_PASSES_TILEMMA_H

#include "ir/IR.h"

namespace tdsl {

/// Fewer output tiles of the default block than this (the SM count of an
/// H200, 132, rounded down to a multiple of 4) and a product whose sizes
/// are open gets a second launch of MmaSmallBlock tiles for those sizes.
constexpr int64_t MmaFewTiles = 128;
/// That launch's block and warp tiles.
constexpr int64_t MmaSmallBlock[2] = {64, 64};
constexpr int64_t MmaSmallWarp[2] = {32, 32};
/// Products of at most this many rows (one row of small tiles: a
/// decoder's few tokens against its weights) are few whatever their tile
/// count: the default block's rows would be at least half empty, and its
/// mmas over them, wasted, bound such a product where the weights' bytes
/// should (a gated MLP of 16 tokens ran its 128-row blocks compute-bound).
constexpr int64_t MmaShortRows = MmaSmallBlock[0];
/// On sm_90, sizes that give at least this many tiles of MmaSmallBlock
/// (two an H200 SM) fill that launch's stages by the copy engine, in a
/// launch of its own where the sizes are open (NAME_small_engine), which
/// asks ptxas for MmaSmallMinBlocks resident blocks an SM: without a
/// minimum it gave the engine's small kernels spills. With one block an SM
/// and a long k loop the engine measured slower than cp.async
/// (bench/RESULTS.md), so fewer tiles keep cp.async; so do fewer rows
/// than one tile's (a decoder's tokens), whose boxes of A pass the last
/// row: there the engine measured slower at every size.
constexpr int64_t MmaSmallEngineTiles = 264;
constexpr int64_t MmaSmallMinBlocks = 3;
/// Sizes that give at least MmaLargeTiles tiles of MmaLargeBlock (about
/// three waves of an H200's SMs, one such block each) take that block: the
/// same 64x64 warps, twice as many a block, so each k tile's copies serve
/// twice the mmas and the operands' traffic per mma falls by a quarter;
/// with that many blocks the last wave idles little. A plain (one
/// accumulator, unbatched) product of 16-bit operands of a k loop of at
/// least MmaLargeMinK; where the sizes are open, a launch of its own
/// (NAME_large). With a shorter k loop the copies it saves weigh less than
/// each block's fill and epilogue, which two default blocks an SM overlap
/// with each other's k loop and its one block (its shared bytes) cannot:
/// it lost at k = 768 and won at 1023 (bench/RESULTS.md), so the bound is
/// halfway, 14 k tiles of 64.
constexpr int64_t MmaLargeTiles = 384;
constexpr int64_t MmaLargeMinK = 896;
constexpr int64_t MmaLargeBlock[2] = {256, 128};
/// From MmaFewTiles to this many output tiles of the default block (an
/// H200's SM count), each SM holds one block at most: four warps leave
/// each scheduler one, too few to hide the mma's fixed latency, so a plain
/// product of 16-bit operands takes eight warps of half the columns there;
/// where the sizes are open, in a launch of its own (NAME_wave).
constexpr int64_t MmaOneWaveTiles = 132;
/// Past that, up to this many (one and a half waves), some SMs would run
/// two tiles while the rest run one: a plain product of 16-bit operands
/// takes blocks of half the columns (MmaHalfBlock, four 64x32 warps), of
/// which no SM runs more than three; where the sizes are open, in a
/// launch of its own (NAME_half).
constexpr int64_t MmaHalfTiles = 198;
constexpr int64_t MmaHalfBlock[2] = {128, 64};
static_assert(MmaOneWaveTiles >= MmaFewTiles && MmaHalfTiles > MmaOneWaveTiles &&
              MmaHalfTiles < MmaLargeTiles);
/// A batched nest's k loop and columns from which its warps take 64x64
/// (passes/MmaMatch.h, fitWarpTile): a launch of its own where the sizes
/// are open.
constexpr int64_t MmaLongK = 512, MmaLongCols = 128;

/// Puts every f16, bf16, tf32() and i8 contraction nest of F on tensor cores.
void tileMma(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_TILEMMA_H
