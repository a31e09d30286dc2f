//===- Epilogue.h - The maps a contraction's launch computes at its end ---===//
//
// The epilogue rule of the fusion stage (graph/Fuse.h): the elementwise
// maps that read a contraction's result (or its siblings', graph/
// Siblings.h) at its own indices run in its launch on the accumulators,
// and the result is never stored. What is here says whether they may.
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

/// The nodes that read any of Members, in order.
std::vector<unsigned> consumersOf(const KernelGraph &G, const std::vector<unsigned> &Members);

/// Why the maps reading the intermediates of contraction P and its
/// siblings (Members, P first) cannot run on their accumulators, or ""
/// when they all can: each must be a map of its own launch that reads them
/// only at P's indices (plain, in any order, over the same ranges), every
/// member at the same element, and read nothing else written after P.
/// Inlined marks the nodes computed where they are read.
std::string epilogueRefusal(const KernelGraph &G, const std::vector<unsigned> &Members,
                            const std::vector<bool> &Inlined);

} // namespace tdsl::graph

#endif // TDSL_GRAPH_EPILOGUE_H
