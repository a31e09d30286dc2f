//===- Graph.h - A kernel's statements as a graph of nodes ----------------===//
//
// The level above the loop IR where fusion is decided (graph/Fuse.h) and
// shown (`tdslc --emit=graph`). Each statement of a checked kernel is a
// node over its index domain: its output indices, the indices it reduces
// and its combiner, the affine map of every tensor it reads, and a class:
//   map          no reduced index, `=`: one value per output element
//   permute      a map whose value is one read of a tensor at its output
//                indices in another order (a transpose)
//   reduction    reduced indices and any value (a row sum, a max)
//   contraction  reduced indices and a product of two or more reads, each
//                using a reduced index (a GEMM, batched or not); but a
//                product whose reads of output indices read all of them,
//                the reduced index last, beside weights of the reduced
//                index alone (X[r, c] * w[c], a GEMV), is a reduction
// Edges run from the statement that writes an intermediate to each that
// reads it. Built from the AST after sema; nothing here changes it.
//
// Test: test/graph/graph.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_GRAPH_GRAPH_H
#define TDSL_GRAPH_GRAPH_H

#include "frontend/AST.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tdsl::graph {

enum class NodeClass { Map, Permute, Reduction, Contraction };
const char *nodeClassName(NodeClass C);

/// One read of a tensor in a statement's value: T[Map...] (Map empty for a
/// scalar), and the node that writes T (-1 for a parameter).
struct Read {
  std::string Tensor;
  std::vector<ast::Affine> Map;
  int Producer = -1;
};

struct Node {
  unsigned Id = 0;
  const ast::Stmt *S = nullptr;
  unsigned Line = 0;
  std::vector<std::string> Domain;  ///< the output indices, in order
  std::vector<std::string> Reduced; ///< the reduced indices
  NodeClass Class = NodeClass::Map;
  std::vector<Read> Reads;          ///< in the order the value reads them
  std::vector<unsigned> Consumers;  ///< nodes that read the target, in order
  const std::string &target() const { return S->TargetName; }
  bool writesIntermediate() const {
    return S->Target && S->Target->Role == ast::TensorRole::Intermediate;
  }
};

struct KernelGraph {
  const ast::Kernel *K = nullptr;
  std::vector<Node> Nodes; ///< in statement order
};

/// The graph of checked kernel K; LineOf maps locations to .tdsl lines.
KernelGraph buildGraph(const ast::Kernel &K, const std::function<unsigned(llvm::SMLoc)> &LineOf);

/// "T[i, k + 1]".
std::string readText(const Read &R);

/// Whether subscripts Map use any of the index names Names.
bool usesAny(const std::vector<ast::Affine> &Map, const std::vector<std::string> &Names);

/// Index names and the affine forms that replace them.
using IndexSub = std::map<std::string, ast::Affine>;

/// A read of a node's value, through the maps it reads that are computed
/// where they are read: the tensor read and its subscripts as affine forms
/// of the node's indices.
struct FlatRead {
  const Read *R;
  std::vector<ast::Affine> Map;
};

/// The reads of node E's value (its indices renamed by Map), through the
/// nodes Inlined marks, appended to Out in evaluation order.
void flatReads(const KernelGraph &G, const Node &E, const std::vector<bool> &Inlined,
               const IndexSub &Map, std::vector<FlatRead> &Out);

} // namespace tdsl::graph

#endif // TDSL_GRAPH_GRAPH_H
