//===- Fuse.h - Which statements of a kernel graph share a launch ---------===//
//
// The fusion stage: it groups the nodes of a kernel graph (graph/Graph.h);
// each group lowers to one launch, its root's, with the group's other
// nodes computed inside it (frontend/Lower.h, LowerPlan). The rule so far:
//
//   inline   A map that writes an intermediate is computed where it is read,
//            in every statement that reads it, and its temporary is gone,
//            when each of those reads takes one value per point of the
//            reader's domain (its subscripts, as affine maps of the
//            reader's output and reduced indices, are one to one), or the
//            map is cheap (no division, no function but casts, min, max,
//            abs, relu). A reader that takes each value of an expensive map
//            many times (Y[r, c] reading rsqrt(...)[r] at every c) would
//            recompute it as often: the map is staged instead, in its own
//            launch, and a remark says why. A contraction's operands are
//            never inlined: they must stay loads, staged as tiles (its
//            prologue is a rule of its own). Outputs are always written; a
//            transpose keeps its launch (tile-transpose stages it through
//            shared memory).
//
//   epilogue The maps that read a contraction's intermediate run in the
//            contraction's launch, on its accumulators (in registers, or
//            mma fragments), and the intermediate is never stored (no f32
//            temporary, one launch: bias, activation, residual, casts,
//            several outputs), when each reads it only at the
//            contraction's own indices (plain, in any order, over the same
//            ranges) and reads nothing written after the contraction;
//            readers count through inlined maps, a result that is an
//            output is stored there too, and maps reading only what the
//            epilogue writes, at the same element, join it
//            (graph/Epilogue.h). Otherwise the result goes through
//            memory, with a remark.
//
//   siblings Contractions that read one operand over the same index
//            space (a gated MLP's X . Wg and X . Wu) share a launch, each
//            with its own accumulators, the shared operand staged once
//            (graph/Siblings.h); the maps reading their results are the
//            group's epilogue, by the rule above, on every accumulator.
//
//   rows     A row reduction and the reductions and maps over the same rows
//            that follow it (softmax, layernorm) are one launch, the
//            values per row they alone read held in registers, never
//            stored (graph/RowChain.h).
//
//   factor   A contraction's factors free of the reduced indices (alpha in
//            alpha * A[m, k] * B[k, n]) multiply its sum once per output,
//            in the epilogue, so the tile passes see a product of two
//            operands (a prologue rule). The sum's rounding changes with
//            its order, within the dtype's tolerance; on small integers it
//            is exact.
//
//   beside   Consecutive maps over the same domain that read a tensor at
//            the same subscripts are one launch, each such tensor read
//            once (graph/MapGroup.h).
//
//   prologue A contraction's side that is a function of a tile operand
//            (relu(A[m, k]), A[m, k] * s[k], f16(Aq[m, k])) is computed
//            first, in a launch of its own, into a temporary that the
//            contraction reads as a plain operand (graph/Prologue.h).
//
// Fusion keeps every rounding: an inlined value is converted to the
// intermediate's dtype as the store did, and so is the accumulator an
// epilogue reads. Knobs: `fuse = off` lowers every statement on its own,
// as before this stage; `fuse_inline`, `fuse_epilogue`, `fuse_factor`,
// `fuse_prologue`, `fuse_siblings`, `fuse_rows` and `fuse_beside = off` turn
// one rule off.
//
// Requires: a checked kernel (sema has filled every field) and its graph.
// Ensures: a plan under which lowering computes what the unfused kernel
//   computes, every rounding kept (the factor rule reorders a sum: within
//   the dtype's tolerance, exact on small integers; a prologue rounds an
//   operand only to a type that holds it or to the results' type); fewer
//   launches and intermediates; a reason per decision, as a remark.
// Why here: between sema and lowering, where statements are still whole
//   (domains, reductions, affine reads) and each group can still become
//   one launch; the loop-IR passes then see fused nests of a known class.
//
// Test: test/graph/fuse-inline.test, test/graph/fuse-epilogue.test,
//   test/graph/fuse-factor.test, test/graph/fuse-prologue.test, test/graph/fuse-siblings.test,
//   test/graph/fuse-rows.test, test/graph/graph.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_GRAPH_FUSE_H
#define TDSL_GRAPH_FUSE_H

#include "frontend/Lower.h"
#include "graph/Graph.h"
#include "graph/Prologue.h"
#include "ir/IR.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace tdsl::graph {

struct FusionOptions {
  bool Enabled = true;  ///< fuse
  bool Inline = true;   ///< fuse_inline
  bool Epilogue = true; ///< fuse_epilogue
  bool Factor = true;   ///< fuse_factor
  bool Prologue = true; ///< fuse_prologue
  bool Siblings = true; ///< fuse_siblings
  bool Rows = true;     ///< fuse_rows
  bool Beside = true;   ///< fuse_beside
};
/// The options kernel K's schedule block and then CommandLine pin (the
/// last value of a key wins; an invalid one is checkSchedule's to report).
FusionOptions fusionOptions(const ast::Kernel &K, const std::vector<ir::Knob> &CommandLine);

/// One launch: its root node, the contractions computed beside it (its
/// siblings), the maps computed on its accumulators (a contraction's
/// epilogue), the statements after the root in its row chain, and the
/// nodes computed inside it (inlined); and the reads of each operand its
/// prologue computes first, in a launch before it.
struct Group {
  unsigned Root = 0;
  std::vector<unsigned> Siblings;
  std::vector<unsigned> Epilogue;
  std::vector<unsigned> Inlined;
  std::vector<unsigned> Chain;
  std::vector<unsigned> Beside; ///< maps over its domain in its launch
  std::vector<std::string> Prologue;
};

struct FusionPlan {
  std::vector<Group> Groups;       ///< in the order of their roots
  std::vector<int> GroupOf;        ///< per node: its group, -1 if inlined into several
  std::vector<std::string> Why;    ///< per node: why it was or was not fused ("" if no rule applied)
  std::vector<bool> Refused;       ///< per node: Why is a refusal (a remark)
  LowerPlan Lower;                 ///< what lowering follows
  std::vector<PrologueSite> Prologues; ///< what stagePrologues rewrites after it
};

/// The groups of G under O; a remark (pass "fuse") at each decision.
FusionPlan planFusion(const KernelGraph &G, const FusionOptions &O);

/// Kernel K lowered under its fusion plan (knobs from its schedule and
/// CommandLine; the plan's remarks too), its prologues computed first.
ir::Func lowerFused(const ast::Kernel &K, const std::function<unsigned(llvm::SMLoc)> &LineOf,
                    const std::vector<ir::Knob> &CommandLine);

/// Each kernel of M, in order, lowered so.
ir::Module lowerFused(const ast::Module &M, const std::function<unsigned(llvm::SMLoc)> &LineOf,
                      const std::vector<ir::Knob> &CommandLine);

/// What `tdslc --emit=graph` prints: the nodes with their domains, reads
/// and edges, then the groups and the reason for each decision.
void printGraph(const KernelGraph &G, const FusionPlan &P, llvm::raw_ostream &OS);

} // namespace tdsl::graph

#endif // TDSL_GRAPH_FUSE_H
