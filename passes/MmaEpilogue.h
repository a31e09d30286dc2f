//===- MmaEpilogue.h - A tensor-core block's outputs through shared memory ===//
//
// tile-mma's epilogue (passes/TileMma.h). An mma accumulator fragment
// leaves each lane two adjacent elements of a row per 8 columns: stored as
// they are, a warp's store touches 8 rows with 4-byte pieces, and a GEMM
// whose k loop is short (K = 64 or 128: attention scores, batched heads)
// spends most of its time there. So, where it can, the epilogue computes
// each output element as before but writes it to a shared tile of the
// block's outputs, and after a barrier the block copies that tile to the
// tensor row by row, each thread 16 bytes (vectorize makes the copy one
// access where a run-time test proves the rows and the tensor aligned;
// else one element a thread, consecutive threads on consecutive elements).
// The tile takes the operand tiles' bytes (ir::LaunchShape stacks sibling
// scopes), after a barrier that ends the k loop's reads of them. Not a
// pass: a piece tile-mma builds its launch from.
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

  /// Whether the outputs go through shared tiles: unless stage_epilogue =
  /// off, when every store of the epilogue, none under an if, writes a global tensor at
  /// exactly [batch..., m, n], each tensor once and none read back, and
  /// the tiles take no more than the operand tiles' TileBytes or the
  /// target's shared memory over Resident, the blocks an SM is meant to
  /// hold (two for the default block: both stay possible). Names the
  /// tiles; why not is in why().
  bool plan(NameTable &Names, int64_t TileBytes, int64_t Resident);
  const std::string &why() const { return Why; }

  /// Epi (one accumulator element's epilogue) with its stores going to
  /// the shared tiles at block row R, column C.
  ir::Stmt toTiles(const ir::Stmt &Epi, const ir::Expr &R, const ir::Expr &C) const;

  /// The staged epilogue: a barrier, PerElement (every element's
  /// toTiles), a barrier, each tile copied to its tensor by the block's
  /// threads TX; inside the tiles' allocations. BlockRow and BlockCol: the
  /// block's first output.
  ir::Stmt build(NameTable &Names, ir::Stmt PerElement, const std::string &TX,
                 const ir::Expr &BlockRow, const ir::Expr &BlockCol, unsigned Line) const;

  /// The note that says what build did.
  std::string note() const;

private:
  struct Output {
    std::string Tensor, Tile;
    DType Type;
    std::vector<ir::Expr> Indices; ///< the epilogue's store's: [batch..., m, n]
    unsigned Line;                 ///< and its line, which its copy keeps
  };
  const ir::Func &F;
  const ContractionNest &N;
  const MmaSchedule &S;
  std::vector<Output> Outs;
  std::string Why;

  ir::Stmt copyOut(NameTable &Names, const Output &O, const std::string &TX,
                   const ir::Expr &BlockRow, const ir::Expr &BlockCol) const;
  /// The tile's padding: 16 bytes a row, so that the 8 rows of an
  /// accumulator fragment's store fall in 8 different bank groups.
  static int64_t pad(DType T) { return std::max<int64_t>(1, 16 / dtypeBytes(T)); }
};

} // namespace tdsl

#endif // TDSL_PASSES_MMAEPILOGUE_H
