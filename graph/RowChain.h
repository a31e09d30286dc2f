//===- RowChain.h - Row reductions and the maps over their rows, one launch ===//
//
// The row-chain rule of the fusion stage (graph/Fuse.h). A chain is a run
// of consecutive launches over the same rows: it starts at a reduction
// along one index (the columns), or at a map per element whose rows and
// columns a reduction after it takes (add + norm: H = X + res, stored,
// then normalized; later members compute H again where they read it at
// their own element), and takes each following statement that
// is another such reduction over the same rows and columns, a map per row
// (mean[r] = s[r] / C), or a map per element of a row (Y[r, c] = ...).
// softmax, layernorm, rmsnorm and log-softmax are chains. The chain
// lowers to one nest over the rows: the intermediates only the chain
// reads are held per row (one register each) and never stored, and
// reduce-rows gives each row a block that reads the row once
// (passes/ReduceRows.h).
//
// A statement ends the chain, with a remark where it reads the chain's
// values, when it is not one of those three kinds over the same rows and
// columns, reads a value of the chain at another row (m[b, a] in a chain
// over rows [a, b]), or reads what the chain writes per element (an
// output, or an intermediate stored for a later launch such as
// attention's P . V). A reduction that reads along its reduced index
// other than in a tensor's last subscript (a column sum, s[c] += X[r, c])
// neither heads a chain nor joins one: the lanes of a row would read it
// with a stride, where reduce-rows alone reads it coalesced. A value per
// row may be an output (log-softmax's
// log-sum-exp): it is held as well as stored, and so is an intermediate
// per row that a statement after the chain reads (softmax's max read by a
// column sum).
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_GRAPH_ROWCHAIN_H
#define TDSL_GRAPH_ROWCHAIN_H

#include "graph/Graph.h"

#include <string>
#include <vector>

namespace tdsl::graph {

/// One chain: its nodes in order (the first a reduction), the
/// intermediates held per row, and its outputs per row that later members
/// read (held as well as stored).
struct RowChainNodes {
  std::vector<unsigned> Members;
  size_t Rows = 0; ///< the row indices: the first Rows of the first member's
  std::vector<std::string> RowLocal;
  std::vector<std::string> HeldOutputs;
  /// Tensors a member writes per element that later members read at their
  /// own element: computed again there.
  std::vector<std::string> Recomputed;
};

/// The chains of G among the nodes that root a launch (Roots, in order);
/// Inlined marks the nodes computed where they are read. Why gets the
/// reason of each decision (appended to what is there).
std::vector<RowChainNodes> findRowChains(const KernelGraph &G, const std::vector<unsigned> &Roots,
                                         const std::vector<bool> &Inlined,
                                         std::vector<std::string> &Why,
                                         std::vector<bool> &Refused);

} // namespace tdsl::graph

#endif // TDSL_GRAPH_ROWCHAIN_H
