//===- MmaEpilogueValues.h - An epilogue's values before its stores -------===//
//
// tile-mma's epilogue (passes/TileMma.h) runs per accumulator element, each
// element under its own bounds test: 128 branches a lane at a 64x64 warp
// tile, with the element's whole computation between two of them. ptxas
// does not move instructions across those branches, so a function's chain
// (gelu's polynomial, sigmoid's ex2 and rcp) runs one element after
// another at the latency of each step; after a short k loop that is much
// of the kernel. So, where the epilogue is one store of a value of an
// accumulator's type computed from the lane's registers alone (the
// accumulators, the line reads' arrays of passes/MmaLineReads.h, scalars),
// the lane first computes that value for every element it holds, with no
// test, into the accumulator (each element reads only its own); then the
// stores, each under its test, write the accumulators. The arithmetic and
// its order are unchanged. A value that reads a tensor per element (a
// residual R[m, n]) keeps the per-element form: its 128 loads in flight at
// once spilled registers beside the accumulators. Not a pass: a piece
// tile-mma builds its launch from.
//
// Test: test/passes/tile-mma-epilogue.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_MMAEPILOGUEVALUES_H
#define TDSL_PASSES_MMAEPILOGUEVALUES_H

#include "passes/ContractionMatch.h"

#include <optional>
#include <vector>

namespace tdsl {

struct MmaEpilogueValues {
  ir::Stmt Values; ///< the value into an accumulator at At
  ir::Stmt Stores; ///< the epilogue storing that accumulator instead
};

/// Epi (one element's epilogue, its accumulators read at At, inside the
/// lets of N's row and column variables) split in two, or nothing where
/// Epi is not one store, its value (under at most a cast) is not of an
/// accumulator's type and reading one, reads a tensor other than a scalar,
/// or is only an accumulator's read.
std::optional<MmaEpilogueValues> splitEpilogueValues(const ir::Func &F, const ContractionNest &N,
                                                     const ir::Stmt &Epi,
                                                     const std::vector<ir::Expr> &At);

} // namespace tdsl

#endif // TDSL_PASSES_MMAEPILOGUEVALUES_H
