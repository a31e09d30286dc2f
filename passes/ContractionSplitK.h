//===- ContractionSplitK.h - A contraction's k loop over several blocks ---===//
//
// A launch that tile-mma (passes/TileMma.h) and tile-contraction
// (passes/TileContraction.h) add beside their others (knob split_k). A
// product with few output tiles and a long k loop (M of 1 to 64 against N
// and K in the thousands: a decoder's token against its weights; or M and
// N of a few hundred against K of tens of thousands) leaves most SMs idle,
// and each busy block walks all of k alone. There the k tiles are cut into
// Count equal runs, one block each: it adds its run's products into f32
// (i32) accumulators from zero and stores them to a global temporary of
// partials, P[split, batch, m, n]. A second launch, a thread per output,
// starts from the nest's init, adds the Count partials in order and runs
// the epilogue. The sums differ from one block's only by the reassociation
// of +, exact where the terms are (--exact-inputs). Not a pass: a piece
// both passes build their launches from.
//
// With T output tiles of the split launch's block (tile-mma's
// MmaSmallBlock, narrowed for siblings; tile-contraction's own block; the
// batch counted) and KT k tiles:
//   Count = min(SplitKMaxBlocks, KT / SplitKMinKTiles,
//               ceil(SplitKTargetBlocks / T)),
// so that each block has at least SplitKMinKTiles k tiles to pipeline
// (SplitKTargetBlocks and SplitKMaxTiles count blocks of eight warps; a
// split launch of smaller blocks, tile-contraction's short rows, scales
// both by 256 / its threads);
// the split runs where T < SplitKMaxTiles, KT >= 2 * SplitKMinKTiles
// and the partials' traffic (8 * Count * M * N bytes) is at most an
// eighth of the operands' times (SplitKTargetBlocks - T) / T: the fewer
// the tiles, the more a split gains, and the more it may spend on
// partials. On the H200 (bench/RESULTS.md) a split of 64 x 4096 x 4096
// (T = 64, partials a quarter of the operands' bytes) gained 40%, one of
// 128 x 4096 x 4096 (T = 128, a quarter too) lost 21%, and one of
// 16 x 11008 x 4096 (T = 172, 3%) gained 28%. tile-contraction's
// f32 FMAs are bound by the SMs' arithmetic, not by the operands' bytes:
// there the partials' bytes, each worth SplitKFlopsPerByte FLOPs, are
// weighed against the FLOPs the idle SMs would do, 2 M N K (SplitKTargetBlocks
// - T) / SplitKTargetBlocks (on the H100 a split of 1024 x 1024 x 4096, T =
// 64, where the operands' rule refuses it; bench/RESULTS.md).
//
// Test: test/passes/tile-mma-split.test, test/passes/tile-contraction-split.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_CONTRACTIONSPLITK_H
#define TDSL_PASSES_CONTRACTIONSPLITK_H

#include "passes/ContractionMatch.h"
#include "passes/PassUtils.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tdsl {

/// Blocks the split aims at: two blocks of eight warps per SM of an H200
/// (132 SMs), rounded.
constexpr int64_t SplitKTargetBlocks = 256;
/// From this many output tiles up, no split.
constexpr int64_t SplitKMaxTiles = 256;
/// The fewest k tiles a block of the split walks.
constexpr int64_t SplitKMinKTiles = 16;
/// What one byte of memory traffic costs in f32 FMA FLOPs (an H200's or
/// H100's f32 rate, about 67 TFLOP/s, over its bandwidth, 3.4 to 4.8 TB/s).
constexpr int64_t SplitKFlopsPerByte = 16;
/// The most blocks one output tile is split over.
constexpr int64_t SplitKMaxBlocks = 64;

class ContractionSplitK {
public:
  /// The test on sizes under which N, tiled by BlockM x BlockN blocks with
  /// k tiles of TileK, is split; null where it never is (constant sizes
  /// that rule it out). ComputeBound: the partials weighed against the
  /// FLOPs, not the operands' bytes (CUDA-core FMAs). Scale: the split
  /// launch's blocks hold 1 / Scale of the warps the constants count
  /// (eight), so it aims at Scale times the blocks and tiles.
  static ir::Expr when(const ContractionNest &N, int64_t BlockM, int64_t BlockN, int64_t TileK,
                       bool ComputeBound = false, int64_t Scale = 1);
  /// What the pass's remark says of the split when() tests.
  static std::string why(int64_t BlockM, int64_t BlockN, bool ComputeBound, int64_t Scale = 1);

  /// The split of N, its count from BlockM x BlockN tiles, the split
  /// launch's own blocks, as when()'s; When is that test (null: always).
  ContractionSplitK(const ContractionNest &N, int64_t BlockM, int64_t BlockN, int64_t TileK,
                    ir::Expr When, NameTable &Names, int64_t Scale = 1);

  /// Splits per output tile (at sizes where the split runs).
  const ir::Expr &count() const { return Count; }
  /// The k tiles of each block but the last, and the number of k tiles
  /// of the block that starts at k tile First.
  ir::Expr tilesPerSplit() const;
  ir::Expr tilesFrom(const ir::Expr &First, const ir::Expr &PerSplit) const;
  /// Every accumulator's element at Acc[AccIdx] stored to its partials
  /// for block Split, flat batch BZ (unused without a batch), output row
  /// GM and column GN (from 0).
  ir::Stmt storePartials(const ir::Expr &Split, const ir::Expr &BZ, const ir::Expr &GM,
                         const ir::Expr &GN, const std::vector<ir::Expr> &AccIdx,
                         unsigned Line) const;
  /// The partials' buffers, one per accumulator: global, empty where the
  /// split does not run.
  const std::vector<ir::Buffer> &partials() const { return Parts; }
  /// The second launch's body: a thread per output, its partials added
  /// to the nest's init, then the epilogue; a grid empty where the split
  /// does not run. Pass names the pass in its note.
  ir::Stmt sum(NameTable &Names, const char *Pass, unsigned Line) const;

private:
  const ContractionNest &N;
  ir::Expr When, Count, KTiles;
  std::vector<ir::Buffer> Parts;

  std::vector<ir::Expr> at(const ir::Expr &Split, const ir::Expr &BZ, const ir::Expr &GM,
                           const ir::Expr &GN) const;
};

} // namespace tdsl

#endif // TDSL_PASSES_CONTRACTIONSPLITK_H
