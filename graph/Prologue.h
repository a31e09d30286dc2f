//===- Prologue.h - A contraction's operand functions computed first ------===//
//
// The prologue rule of the fusion stage (graph/Fuse.h). A contraction
// whose product has a side that is not one read of a tensor, such as
//     C[m, n] += relu(A[m, k]) * B[k, n]
//     C[m, n] += A[m, k] * s[k] * B[k, n]
//     C[m, n] += f16(Aq[m, k]) * B[k, n]
// or whose plain i8 side stands beside a 16-bit float one
//     C[m, n] += X[m, k] * Wq[k, n]          (Wq: i8, X: f16)
// computes that side (the factors that use k and m, with those of k
// alone; or k and n) first, into a temporary over its indices, in a launch
// of its own (map-elementwise's: one read and one write of the operand).
// The contraction then reads it as a plain operand, so tile-mma or
// tile-contraction tiles it like a plain GEMM, where it ran one thread per
// output or on CUDA cores before. The operand's functions cost one pass
// over it (M x K), against the product's M x N x K.
//
// The temporary's type: a 16-bit float that holds every value of the side
// exactly (relu, abs, negation, min, max and selects of 16-bit or i8 reads;
// the other side's type first, for the tensor cores); else, where every
// result is stored as a 16-bit float, the first such type the side reads
// (its rounding is of the order of the results'); else f32. A remark at
// the statement says what was computed first, and into what.
//
// Not taken (a remark says why): more than one reduced index, a factor
// over both m and n (no operand holds it), a factor free of the reduced indices left in the sum
// (fuse_factor = off), and integer sums. Contractions with a prologue do
// not share a launch as siblings (graph/Siblings.h): each computes its
// operand first. Applying the functions while the operand's tile is
// staged, with no temporary, is the step after this one.
//
// Test: test/graph/fuse-prologue.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_GRAPH_PROLOGUE_H
#define TDSL_GRAPH_PROLOGUE_H

#include "graph/Graph.h"
#include "ir/IR.h"

#include <string>
#include <vector>

namespace tdsl::graph {

/// What the prologue rule makes of a contraction: the reads of each side
/// it computes first (Staged, one text per side), or why it cannot
/// (Refusal); both empty when its operands are plain reads already.
struct PrologueChoice {
  std::vector<std::string> Staged;
  std::string Refusal;
};

/// The prologue of contraction node N; FactoredOut says whether the factor
/// rule takes its factors free of the reduced indices out of the sum.
PrologueChoice choosePrologue(const Node &N, bool FactoredOut);

/// A contraction lowered with a prologue: the line of its accumulation
/// and the tensor its nest stores first after the sum (its own result, or
/// its epilogue's first output).
struct PrologueSite {
  unsigned Line = 0;
  std::string Writes;
};

/// Computes the non-plain sides of the contraction nests of F at Sites
/// first, each into a global temporary that the nest then reads.
void stagePrologues(ir::Func &F, const std::vector<PrologueSite> &Sites);

} // namespace tdsl::graph

#endif // TDSL_GRAPH_PROLOGUE_H
