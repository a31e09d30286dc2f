//===- ContractionMatch.h - Recognize a contraction nest ------------------===//
//
// The first step of both contraction lowerings (tile-mma on tensor cores,
// tile-contraction on CUDA cores): a nest that is two or more outer serial
// loops (batch..., m, n) around `alloc ACC: T[1] register` holding stores
// to ACC[0] that read nothing, ONE serial loop k (or, matched with Nests,
// a perfect nest of them: a convolution) whose bounds are free of
// the output indices and whose body is ACC[0] = f(ACC[0], operands), each
// operand a load that uses k and exactly one of m and n, and an epilogue
// that does not use k. Sibling contractions (graph/Siblings.h) are one
// such nest with several accumulators, allocated one inside the other,
// each updated once per k by its own store and read by no other update;
// an operand they share is one operand. What it finds, the lowerings
// tile; what it does not, it declines with a remark naming the pass that
// asked.
//
// Test: test/passes/tile-contraction.tir (the declines), test/passes/tile-mma.tir,
//   test/passes/tile-contraction-conv.test, test/passes/tile-mma-conv.test,
//   test/passes/vector-product.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_CONTRACTIONMATCH_H
#define TDSL_PASSES_CONTRACTIONMATCH_H

#include "ir/IR.h"

#include <optional>
#include <vector>

namespace tdsl {

class NameTable;

/// One tile operand: a load that uses k and exactly one output index.
struct ContractionOperand {
  ir::Expr Load;
  DType Type = DType::F32;
  bool RowSide = false;  ///< indexed by the output row (m); else by the column (n)
  bool KFastest = false; ///< its last index uses k
};

/// One accumulator: `alloc Name: Type[1] register`, set to Update in the
/// reduction loop.
struct ContractionAcc {
  std::string Name;
  DType Type = DType::F32;
  ir::Expr Update;   ///< the value stored to Name[0] in the reduction loop
  unsigned Line = 0; ///< that store's
};

struct ContractionNest {
  std::vector<const ir::ForNode *> Batch;
  const ir::ForNode *Row = nullptr, *Col = nullptr, *Red = nullptr;
  /// The other reduced loops of a nest (matched with Nests), outermost
  /// first: they run around the loop over Red's tiles.
  std::vector<const ir::ForNode *> Outer;
  std::vector<ContractionAcc> Accs; ///< in allocation order: one, or one per sibling
  std::vector<ir::Stmt> Init, Epilogue;
  std::vector<ContractionOperand> Operands; ///< the distinct loads of every update
  const ContractionAcc &acc() const { return Accs.front(); }
  bool accumulates(const std::string &Buffer) const {
    for (const ContractionAcc &A : Accs)
      if (A.Name == Buffer)
        return true;
    return false;
  }
};

/// Stmts with every accumulator of C read and written at Indices (its
/// per-thread or per-fragment element) instead of [0].
ir::Stmt withAccumulatorsAt(const ContractionNest &C, const std::vector<ir::Stmt> &Stmts,
                            const std::vector<ir::Expr> &Indices);

/// The contraction Nest is, or nothing; a nest that is almost one (a
/// reduction loop inside the accumulator) is declined with a remark of
/// Pass ending in "; left to the passes after it" (none if Pass is null),
/// and with ExplainAll any other nest too ("not a contraction: ...").
/// With Nests, the reduction may also run over a perfect nest of loops
/// (a convolution's c, r, s): k is then the innermost one every operand
/// reads as an index of its own, the others are Outer; and where the
/// nest's last two output loops do not split the operands into rows and
/// columns, another pair that does is taken (a convolution's output
/// channel and width), the rest being batch loops.
std::optional<ContractionNest> matchContraction(const ir::Stmt &Nest, const char *Pass,
                                                bool ExplainAll = false, bool Nests = false);

/// Nest with the output loops that only one side of C's operands reads
/// (a convolution's n, h and w: only X reads them; the side's own loop
/// and its batch loops) merged into one loop over their row-major
/// product, named by their names joined (fresh in Names), each index
/// recovered from it by a quotient and a remainder; null where C has no
/// such batch loop. In a nest (C has Outer loops) the merged loop runs
/// innermost, the other output loops around it in their order: so a
/// convolution is one product of N*H*W columns, as implicit GEMM makes
/// it, whose tiles a 7-wide image fills as a 56-wide one does. In a
/// plain product only where each operand of the side reads the merged
/// loops as one row index of its tensor (a linear layer's X[b, s, d]:
/// the quotients fold away in its addresses) and along k, and the merged
/// loop takes the side's own loop's place: so short sequences of a batch
/// fill the tiles together, as `x.view(-1, d) @ w` does.
/// Index, if given, gets the output loops' indices, in the nest's order,
/// as the merged nest computes them.
ir::Stmt mergeSideLoops(const ir::Func &F, const ir::Stmt &Nest, const ContractionNest &C,
                        NameTable &Names, std::vector<ir::Expr> *Index = nullptr);

/// Nest with C's reduced loops (its Outer loops and k) merged into one
/// loop over their row-major product, named by their names joined (fresh
/// in Names; Merged gets their names, then its), where every access of
/// the reduction reads them as one index, a run of whole dimensions in
/// the nest's order: a product over a reshaped k, `A[b, s, h, e] * Wo[h,
/// e, o]` (an attention's output projection over its heads), is then a
/// plain product over H * E, whose addresses fold the quotients. Null
/// where C has no Outer loops or an access reads them otherwise (a
/// convolution's X[.., h + r, ..]).
ir::Stmt mergeReducedLoops(const ir::Func &F, const ir::Stmt &Nest, const ContractionNest &C,
                           NameTable &Names, std::vector<std::string> &Merged);

/// mergeReducedLoops, then mergeSideLoops, of the nest a tiler is
/// matching, made once per nest, so each of its launches reads the same
/// merged indices.
struct SideMerge {
  ir::Stmt From; ///< the nest it was made from
  ir::Stmt Nest; ///< the merged nest (null: nothing merged)
  /// The names of the output loops merged, then the merged loop's.
  std::vector<std::string> Vars;
  /// Each output loop's index in the merged nest, in the nest's order.
  std::vector<ir::Expr> Index;
  /// The names of the reduced loops merged, then the merged loop's
  /// (empty: none).
  std::vector<std::string> Reduced;
  /// A plain product's merge: its operands' addresses fold the quotients.
  bool Folds = false;
  /// Makes it for Nest (matched as C) unless it was made for Nest.
  void update(const ir::Func &F, const ir::Stmt &Nest, const ContractionNest &C, NameTable &Names);
  /// Whether X is the merged loop.
  bool merges(const ir::ForNode *X) const { return Nest && !Vars.empty() && X->Var == Vars.back(); }
  /// Whether X is the merged loop and its operands' addresses take its
  /// quotients and remainders (a nest's), which their copies amortize.
  bool divides(const ir::ForNode *X) const { return merges(X) && !Folds; }
};
/// A launch note's account of C's reduction over a nest (its Outer loops
/// around the k tiles of k), of the reduced loops merged into one
/// (M.Reduced) and of the output loops merged into one (M.Vars), each
/// after "; "; Work names what the copies overlap ("FMAs", "mmas").
std::string nestNote(const ContractionNest &C, const SideMerge &M, const std::string &Work);

/// The elements C's reduction sums per output: k's extent times those of
/// its Outer loops.
ir::Expr reducedLength(const ContractionNest &C);
/// K tiles of BK elements over C's reduction: ceil(K / BK), for each
/// combination of its Outer loops (one index walks them all).
ir::Expr kTiles(const ContractionNest &C, int64_t BK);
/// K tile T's place among the k tiles of its combination of C's Outer
/// loops (T itself without them).
ir::Expr kTileWithin(const ContractionNest &C, int64_t BK, const ir::Expr &T);
/// Body with C's Outer loops' indices those of k tile T (its
/// combination, the innermost loop fastest).
ir::Stmt atKTile(const ContractionNest &C, int64_t BK, const ir::Expr &T, ir::Stmt Body);

/// Why C is better reduced a row per output than tiled, or "": one of its
/// output loops runs over one element and either every operand reads along
/// k contiguously (a matrix times a vector, `B: f32[K, 1]`, or a vector
/// times a matrix stored `W[n, k]`: reduce-rows gives each output a warp or
/// a block that reads its row at copy speed) or, with Columns, the matrix
/// reads along the other output index (a vector times `W[k, n]`: a column
/// reduction, which reduce-rows splits over k with a thread per output and
/// chunk). A CUDA-core tile spends all but 1/32 of its FMAs past the
/// vector; tensor-core tiles read a matrix along n at the copy rate, and
/// their idle rows cost a memory-bound product nothing, so tile-mma asks
/// for rows only. One accumulator of a type warps shuffle (reduce-rows'
/// own condition) only.
std::string vectorProduct(const ContractionNest &C, const ir::Func &F, bool Columns);

} // namespace tdsl

#endif // TDSL_PASSES_CONTRACTIONMATCH_H
