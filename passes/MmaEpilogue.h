//===- MmaEpilogue.h - A tensor-core block's outputs through shared memory ===//
//
// tile-mma's epilogue (passes/TileMma.h). An mma accumulator fragment
// leaves each lane two adjacent elements of a row per 8 columns: stored as
// they are, a warp's store touches 8 rows with 4-byte pieces, and a GEMM
// whose k loop is short (K = 64 or 128: attention scores, batched heads)
// spends most of its time there. So, where it can, the epilogue computes
// each output element as before but writes it to a shared tile of the
// block's outputs (with no bounds test where it reads only registers and
// tiles: the tile holds every element of the block, and the copy tests the
// tensor's bounds), and after a barrier the block copies that tile to the
// tensor row by row, each thread 16 bytes (vectorize makes the copy one
// access where a run-time test proves the rows and the tensor aligned;
// else one element a thread, consecutive threads on consecutive elements).
// The tile takes the operand tiles' bytes (ir::LaunchShape stacks sibling
// scopes), after a barrier that ends the k loop's reads of them.
// A tensor the epilogue reads at the outputs' own index (a residual
// R[m, n]) comes in the same way, reversed: the block copies its part of
// the tensor to a shared tile a row at a time (16-byte cp.async where
// aligned, zeros outside the tensor), and each element reads the tile.
// Read per element from memory, a lane's 128 loads touch 8 rows in 4-byte
// pieces, each behind its element's bounds test; from the tile, they are
// shared loads of the lane's registers' kind, so the epilogue's values can
// be computed before the stores (passes/MmaEpilogueValues.h). Not a pass:
// a piece tile-mma builds its launch from.
//
// Test: test/passes/tile-mma-epilogue.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_MMAEPILOGUE_H
#define TDSL_PASSES_MMAEPILOGUE_H

#include "passes/ContractionMatch.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include <string>
#include <vector>

namespace tdsl {

class MmaEpilogue {
public:
  MmaEpilogue(const ir::Func &F, const ContractionNest &N, const MmaSchedule &S)
      : F(F), N(N), S(S) {}

  /// The contraction's own index where N's loops are merged (a plain
  /// product's, SideMerge::Index): each output loop's index in the merged
  /// nest, in the nest's order. Empty: [batch..., m, n].
  std::vector<ir::Expr> OwnIndex;

  /// Whether the outputs go through shared tiles: unless stage_epilogue =
  /// off, when every store of the epilogue, none under an if, writes a global tensor at
  /// exactly [batch..., m, n], each tensor once and none read back, and
  /// the tiles take no more than the operand tiles' TileBytes or the
  /// target's shared memory over Resident, the blocks an SM is meant to
  /// hold (two for the default block: both stay possible). Names the
  /// tiles; why not is in why(). Then the input tensors the epilogue reads
  /// at that same index, each once, get tiles where all fit.
  bool plan(NameTable &Names, int64_t TileBytes, int64_t Resident);
  const std::string &why() const { return Why; }

  /// Epi (one accumulator element's epilogue) with its stores going to
  /// the shared tiles at block row R, column C, and its reads of staged
  /// inputs coming from theirs.
  ir::Stmt toTiles(const ir::Stmt &Epi, const ir::Expr &R, const ir::Expr &C) const;

  /// Whether Epi (toTiles's result) touches no tensor but scalars: it
  /// reads registers and shared tiles and writes the tiles, which hold
  /// every element of the block, so it needs no bounds test (the copies
  /// to the tensors test them).
  bool tilesOnly(const ir::Stmt &Epi) const;

  /// The staged epilogue: Values (null: none; the values of every element
  /// a lane holds, passes/MmaEpilogueValues.h), a barrier, PerElement
  /// (every element's toTiles), a barrier, each tile copied to its tensor
  /// by the block's threads TX; inside the tiles' allocations. With staged
  /// inputs, their copies, a wait for them and a barrier come before
  /// Values, which read them. BlockRow and BlockCol: the block's first
  /// output.
  ir::Stmt build(NameTable &Names, ir::Stmt Values, ir::Stmt PerElement, const std::string &TX,
                 const ir::Expr &BlockRow, const ir::Expr &BlockCol, unsigned Line) const;

  /// The note that says what build did.
  std::string note() const;

private:
  /// A staged tensor: an output, or an input read at the outputs' index.
  struct StagedTile {
    std::string Tensor, Tile;
    DType Type;
    std::vector<ir::Expr> Indices; ///< the epilogue's store's: [batch..., m, n]
    unsigned Line;                 ///< and its line, which its copy keeps
  };
  const ir::Func &F;
  const ContractionNest &N;
  const MmaSchedule &S;
  std::vector<StagedTile> Outs, Ins;
  std::string Why;

  /// The index a staged tensor is accessed at: OwnIndex, or the batch
  /// loops' variables, then m, then n.
  std::vector<ir::Expr> outputIndex() const;

  /// Tile O.Tile copied to its tensor (In: from it) by the block's threads.
  ir::Stmt copy(NameTable &Names, const StagedTile &O, bool In, const std::string &TX,
                const ir::Expr &BlockRow, const ir::Expr &BlockCol) const;
  ir::Buffer tileBuffer(const StagedTile &O) const;
  static int64_t tileBytes(const MmaSchedule &S, const StagedTile &O) {
    return S.BlockM * (S.BlockN + pad(O.Type)) * dtypeBytes(O.Type);
  }
  /// The tile's padding: 16 bytes a row, so that the 8 rows of an
  /// accumulator fragment's store fall in 8 different bank groups.
  static int64_t pad(DType T) { return std::max<int64_t>(1, 16 / dtypeBytes(T)); }
};

} // namespace tdsl

#endif // TDSL_PASSES_MMAEPILOGUE_H
