//===- MmaEpilogueValues.h - An epilogue's values before its stores -------===//
//
// A piece of tile-mma (passes/TileMma.h), not a pass of its own.
// Requires: one accumulator element's epilogue, its accumulators read at
//   the element's fragment position, inside the lets of the row and column
//   variables, after the line reads' arrays (passes/MmaLineReads.h) hold
//   0 outside the tensor and the stores and reads at the outputs' index
//   go to shared tiles (passes/MmaEpilogue.h).
// Ensures: where that epilogue is one store of a value of an accumulator's
//   type computed from the lane's registers and the block's shared tiles
//   alone (the accumulators, the line reads' arrays, scalars, staged
//   inputs), two statements: the value into that
//   accumulator, which tile-mma runs for every element a lane holds with no
//   bounds test, and the store of the accumulator, which keeps its test
//   unless it goes to a shared tile (passes/MmaEpilogue.h: tilesOnly).
//   The arithmetic and its order are unchanged; each element reads only
//   its own accumulator. Otherwise nothing, and the per-element form stays.
// Why: each element's test is a branch, 128 a lane at a 64x64 warp tile,
//   with the element's whole computation between two of them. ptxas does
//   not move instructions across those branches, so a function's chain
//   (gelu's polynomial, sigmoid's ex2 and rcp) ran one element after
//   another at the latency of each step; after a short k loop that is much
//   of the kernel. A value that reads a tensor per element from memory
//   keeps the per-element form: a residual R[m, n]'s 128 loads in flight
//   at once spilled registers beside the accumulators. Staged in a shared
//   tile first (passes/MmaEpilogue.h), its reads are short and split well.
// Why here: tile-mma builds the epilogue per element; this decides its
//   shape before the stores are moved to shared tiles (passes/MmaEpilogue.h).
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
