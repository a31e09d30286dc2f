//===- Epilogue.h - The maps a contraction's launch computes at its end ---===//
//
// The epilogue rule of the fusion stage (graph/Fuse.h): the elementwise
// maps that read a contraction's result (or its siblings', graph/
// Siblings.h) at its own indices run in its launch on the accumulators.
// What is here says whether they may, and which maps join them:
//
//   acc[m, n] += A[m, k] * B[k, n]     acc, h: never stored
//   h[m, n] = gelu(acc[m, n] + b[n])   h is computed where it is read, so
//   C[m, n] = h[m, n] + R[m, n]        C reads acc through it: C joins
//   D[m, n] = relu(C[m, n])            D reads a map that joined: it joins
//
// Every map that reads the results, directly or through maps computed
// where they are read, must join, or none does and the results are
// stored. A map that reads what joined maps write (at the same element,
// and nothing written after the contraction) joins too; otherwise it
// reads that from memory in its own launch. A result that is a kernel
// output is stored by the launch too.
//
// Test: test/graph/fuse-epilogue.test, test/graph/fuse-siblings.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_GRAPH_EPILOGUE_H
#define TDSL_GRAPH_EPILOGUE_H

#include "graph/Graph.h"

#include <string>
#include <vector>

namespace tdsl::graph {

/// The maps computed on the accumulators of a contraction and its
/// siblings, and where each runs.
struct EpilogueMaps {
  /// Why the maps reading the results cannot run on the accumulators, or
  /// "" when they do.
  std::string Refusal;
  /// The maps that do, in statement order.
  std::vector<unsigned> Maps;
  /// Per map (as Maps): for each of its output indices, the position of
  /// the contraction's output index it runs at.
  std::vector<std::vector<unsigned>> At;
  /// Elementwise maps that read what joined maps write but keep their
  /// own launch, with why.
  std::vector<std::pair<unsigned, std::string>> Apart;
};

/// The epilogue of contraction P and its siblings (Members, P first), or
/// why it has none (Refusal): every map reading their results, through
/// the nodes Inlined marks as computed where they are read, must be a map
/// of its own launch that reads them only at P's indices (plain, in any
/// order, over the same ranges), every member at the same element, and
/// read nothing else written after P. Where nothing reads them, no maps
/// and no refusal.
EpilogueMaps planEpilogue(const KernelGraph &G, const std::vector<unsigned> &Members,
                          const std::vector<bool> &Inlined);

} // namespace tdsl::graph

#endif // TDSL_GRAPH_EPILOGUE_H
