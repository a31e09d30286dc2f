//===- Siblings.h - Contractions over one operand, one launch -------------===//
//
// The siblings rule of the fusion stage (graph/Fuse.h). Contractions that
// read the same operand over the same index space, such as a gated MLP's
//
//   g[t, f] += X[t, d] * Wg[d, f]
//   u[t, f] += X[t, d] * Wu[d, f]
//
// are computed in one launch, the first one's: each keeps its own
// accumulators, and the operand they share (X[t, d]) is staged once for
// all of them. A later contraction joins an earlier one when
//   - both are GEMMs the tile passes take (output indices batch..., m, n;
//     one reduced index k; each factor using k with exactly one of m and
//     n), over output and reduced indices of the same ranges, position by
//     position (u's t and f are g's t and f, its d g's d);
//   - one of its reads is one of a member's, the same tensor at the same
//     subscripts with its indices renamed so;
//   - its result has the first one's dtype, and each of its factors that
//     uses k has the shared operand's;
//   - it reads nothing written at or after the earlier one (it moves up
//     to that launch);
//   - its product has the form of the earlier one's (the same casts around
//     the same dtypes, as many factors), so that one tiling takes both:
//     tf32(X) * tf32(W) beside X * V would take the pair off the tensor
//     cores;
//   - with the prologue rule on, every operand of both is a plain read (one
//     computed from reads, such as relu(X[t, d]), has a prologue of its
//     own, graph/Prologue.h);
//   - the group has fewer than four members (each one's accumulators take
//     registers in every thread).
// The maps that read the group's results then form its epilogue as one
// contraction's do (every member's result at the group's own element),
// computed on all the accumulators: g * sigmoid(g) * u needs no
// temporary. A contraction does not join when the group's epilogue would
// then be refused though the group, or the contraction alone, would take
// one: sharing a tile never costs a stored result. A contraction that shares a read at the
// same positions but cannot join says why.
//
// Knob: `fuse_siblings = off` keeps each contraction in its own launch.
//
// Test: test/graph/fuse-siblings.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_GRAPH_SIBLINGS_H
#define TDSL_GRAPH_SIBLINGS_H

#include "graph/Graph.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace tdsl::graph {

/// The most contractions one launch computes together.
constexpr size_t MaxSiblings = 4;

/// Each contraction that others join, with those others in order.
struct SiblingGroup {
  unsigned First = 0;
  std::vector<unsigned> Others;
};

/// The sibling groups of G; FactoredOut names the contractions whose
/// factors free of the reduced indices leave the sum (the factor rule,
/// graph/Fuse.h), HasPrologue marks those the prologue rule gives one
/// (none when it is off), and EpilogueWhyNot of a
/// contraction and its siblings is "" when the epilogue rule takes the
/// maps reading their results, else why not. Why gets the reason of each
/// decision (appended to what is there), and Refused marks the refusals.
std::vector<SiblingGroup>
findSiblings(const KernelGraph &G, const std::set<std::string> &FactoredOut,
             const std::vector<bool> &HasPrologue,
             const std::function<std::string(const std::vector<unsigned> &)> &EpilogueWhyNot,
             std::vector<std::string> &Why, std::vector<bool> &Refused);

} // namespace tdsl::graph

#endif // TDSL_GRAPH_SIBLINGS_H
