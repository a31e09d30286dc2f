//===- Lower.h - From the checked AST to the first, naive loop IR ---------===//
//
// Each statement becomes its own loop nest over its output elements, with
// its reduction as an inner serial loop into a register accumulator; each
// intermediate is a global buffer allocated around the statements that
// follow its definition. No schedule, no GPU binding: the passes do that.
//
//   C[m, n] += A[m, k] * B[k, n]        for m in 0..M serial @1 {
//                                        for n in 0..N serial @1 {
//                                   =>    alloc C_sum: f32[1] register @1 {
//                                           C_sum[0] = 0.0
//                                           for k in 0..K serial @1 {
//                                             C_sum[0] = C_sum[0] + A[m, k] * B[k, n]
//                                           }
//                                           C[m, n] = C_sum[0] ...
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_FRONTEND_LOWER_H
#define TDSL_FRONTEND_LOWER_H

#include "frontend/AST.h"
#include "ir/IR.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tdsl {

/// What the fusion stage (graph/Fuse.h) decided for lowering.
struct LowerPlan {
  /// Intermediates written by a map, computed where they are read instead:
  /// each read becomes the map's value at the read's subscripts, converted
  /// to the intermediate's dtype as its store would; the statement and its
  /// buffer are gone.
  std::set<std::string> Inlined;
  /// Contraction epilogues: for the intermediate a contraction writes, the
  /// maps that read it (at its own indices) computed in its nest on the
  /// accumulator instead; the intermediate is never stored (an output
  /// is), and each map leaves its own place.
  std::map<std::string, std::vector<const ast::Stmt *>> Epilogues;
  std::set<std::string> InEpilogue; ///< the targets of those maps
  /// Per epilogue map: for each of its output indices, the position of
  /// the contraction's output index it runs at. A map may read the
  /// results of those before it, which it takes as their values.
  std::map<const ast::Stmt *, std::vector<unsigned>> EpilogueAt;
  /// Sibling contractions (graph/Siblings.h): for the first one's
  /// intermediate, the later contractions computed in its nest, each with
  /// its own accumulator, their indices renamed to the first's by
  /// position; each leaves its own place. The first's epilogue (above)
  /// reads any of them.
  std::map<std::string, std::vector<const ast::Stmt *>> Siblings;
  std::set<std::string> InSiblings; ///< the targets of those later ones
  /// Contractions whose product has factors free of the reduced indices
  /// (alpha * A[m, k] * B[k, n]): the sum runs over the other factors and
  /// its result is multiplied by those once per output.
  std::set<std::string> FactorsOut;
  /// Row chains (graph/RowChain.h): statements over the same rows lowered
  /// as one nest over the rows, the first one's indices, each statement's
  /// row loops gone. RowLocal, the intermediates only the chain reads, are
  /// one-element registers inside the row loops, read and written at [0];
  /// HeldOutputs, outputs per row that later members read, are stored and
  /// also held in such a register, which those reads take.
  /// Recomputed, tensors a member writes per element, read by later
  /// members as the writer's value at their own element. Rows: how many of
  /// the first member's indices are the rows.
  struct RowChain {
    std::vector<const ast::Stmt *> Members;
    std::set<std::string> RowLocal;
    std::set<std::string> HeldOutputs;
    std::set<std::string> Recomputed;
    size_t Rows = 0;
  };
  std::vector<RowChain> RowChains;
};

/// Lowers one checked kernel. SourceLines maps AST locations to .tdsl lines
/// for provenance (pass the DiagEngine's lineOf).
ir::Func lowerKernel(const ast::Kernel &K,
                     const std::function<unsigned(llvm::SMLoc)> &LineOf,
                     const LowerPlan &Plan = {});

/// Lowers every kernel of a checked module, each under its own plan (none:
/// every statement on its own).
ir::Module lowerModule(const ast::Module &M,
                       const std::function<unsigned(llvm::SMLoc)> &LineOf,
                       const std::vector<LowerPlan> &Plans = {});

/// The IR expression (i64) of an affine form over names.
ir::Expr affineToIR(const ast::Affine &A);

} // namespace tdsl

#endif // TDSL_FRONTEND_LOWER_H
