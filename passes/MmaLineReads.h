//===- MmaLineReads.h - An epilogue's reads along one side, loaded once ---===//
//
// tile-mma's epilogue (passes/TileMma.h) runs per accumulator element: a
// lane holds two columns of each of its warp's WarpN / 8 mma tiles and two
// rows of each of its WarpM / 16, and an epilogue read that varies along
// one side only, such as bias[n] or a row scale s[m], is loaded again for
// every element, each load under that element's own guard, so the
// compiler cannot merge them: 128 loads a lane at a 64x64 warp tile where
// 16 values differ. With one block per SM the epilogue runs after the
// block's k loop with nothing to hide it (the profile of gemm + bias +
// relu showed the loads as its extra instructions), so each such read is
// loaded once per column (or row) the lane holds, into registers, before
// the per-element loop, and the epilogue reads the registers. Not a pass:
// a piece tile-mma builds its launch from.
//
// Test: test/passes/tile-mma-epilogue.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_MMALINEREADS_H
#define TDSL_PASSES_MMALINEREADS_H

#include "passes/ContractionMatch.h"
#include "passes/PassUtils.h"

#include <string>
#include <vector>

namespace tdsl {

/// At most this many reads are loaded ahead (at a 64x64 warp tile, 16
/// registers for a column's, 8 for a row's, live beside the accumulators);
/// further ones stay per element.
constexpr size_t MmaMaxLineReads = 4;

class MmaLineReads {
public:
  /// Finds in Epi (one element's epilogue, inside the lets of N's row and
  /// column variables) the reads of input tensors whose indices use the
  /// column variable and not the row's, or the reverse, and otherwise only
  /// batch variables and sizes; names a register array for each. Reads
  /// under an if, a select's arm or the right of && and || are left alone:
  /// loaded ahead they would run where the epilogue does not read them.
  MmaLineReads(const ir::Func &F, const ContractionNest &N, const ir::Stmt &Epi,
               int64_t TilesM, int64_t TilesN, NameTable &Names);
  bool empty() const { return Reads.empty(); }

  /// Epi reading the arrays instead: a column's at [J, E % 2], a row's at
  /// [I, E / 2] (the accumulator fragment's element E lies in column
  /// E % 2 and row E / 2 of its lane's pairs).
  ir::Stmt rewrite(const ir::Stmt &Epi, const ir::Expr &I, const ir::Expr &J,
                   const ir::Expr &E) const;

  /// Perform, after the arrays are loaded for the lane's columns and rows
  /// (0 for those outside the tensor), inside their allocations. GM and
  /// GN: an element's row and column, in the variables I, J and E.
  ir::Stmt wrap(ir::Stmt Perform, const ir::Expr &GM, const ir::Expr &GN, const std::string &I,
                const std::string &J, const std::string &E, unsigned Line) const;

private:
  struct Read {
    ir::Expr Load;
    bool Col; ///< along the columns (else the rows)
    std::string Array;
  };
  const ContractionNest &N;
  int64_t TilesM, TilesN;
  std::vector<Read> Reads;
};

} // namespace tdsl

#endif // TDSL_PASSES_MMALINEREADS_H
