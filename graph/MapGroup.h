//===- MapGroup.h - Maps over one domain that read one tensor, one launch -===//
//
// The beside rule of the fusion stage (graph/Fuse.h). Consecutive launches
// that are elementwise maps over the same domain (the same ranges, index
// by index) and read a tensor at the same subscripts are one launch:
//
//   Y[r, c] = X[r, c] * 2.0 + b[c]     one nest over (r, c); X and b are
//   Z[r, c] = relu(X[r, c] + b[c])     read once, Y and Z both stored
//
// Each map's reads count through the maps computed where they are read.
// A map may read what an earlier member writes at its own element
// (H = X + res; Y = H * w): it computes that value again, rounded to its
// dtype as stored, since every member's loads run before the group's
// first store (passes/MapElementwise.h). One that reads it at another
// element, or whose combiner accumulates, starts a group of its own. The
// group lowers as a row chain whose rows are the whole domain
// (frontend/Lower.h): the members' stores in one nest.
//
// Test: test/graph/fuse-beside.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_GRAPH_MAPGROUP_H
#define TDSL_GRAPH_MAPGROUP_H

#include "graph/Graph.h"

#include <string>
#include <vector>

namespace tdsl::graph {

/// One group: its maps in order, and what members write that later ones
/// read at their own element (computed again there).
struct MapGroupNodes {
  std::vector<unsigned> Members;
  std::vector<std::string> Recomputed;
};

/// The groups of two or more maps among the launches Roots (in order);
/// Inlined marks the nodes computed where they are read. Why gets the
/// reason of each decision (appended to what is there), and Refused
/// marks a refusal.
std::vector<MapGroupNodes> findMapGroups(const KernelGraph &G,
                                        const std::vector<unsigned> &Roots,
                                        const std::vector<bool> &Inlined,
                                        std::vector<std::string> &Why, std::vector<bool> &Refused);

} // namespace tdsl::graph

#endif // TDSL_GRAPH_MAPGROUP_H
