//===- PassUtils.h - What every loop-nest pass needs ----------------------===//
//
// Fresh names, the walk over a function's top-level nests (one launch
// each), variable-use queries, and remarks: the line a pass gives when it
// takes a nest (and how) or declines it (and why), so that a user learns
// which pass shaped each statement and why a fast path was not taken
// (shown with --remarks; lit tests turn them on). A pass with nothing to
// do for a nest says nothing.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_PASSUTILS_H
#define TDSL_PASSES_PASSUTILS_H

#include "ir/IR.h"
#include "ir/Match.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tdsl {

/// Replaces every subexpression structurally equal to a From of Map by its
/// To (the first match wins; a replacement is not searched again).
class ExprReplacer : public ir::IRMutator {
public:
  std::vector<std::pair<ir::Expr, ir::Expr>> Map;
  ir::Expr mutate(const ir::Expr &E) override;
  using ir::IRMutator::mutate;
};

/// ExprReplacer that also moves a scalar accumulator: loads of Acc become
/// loads of Acc[AccIndices...] and stores to Acc stores there (the
/// contraction lowerings' ACC[0] -> a thread's or a warp's tile of them).
class AccReplacer : public ExprReplacer {
public:
  std::string Acc;
  std::vector<ir::Expr> AccIndices;

protected:
  ir::Expr visitLoad(const ir::LoadNode &N, const ir::Expr &E) override;
  ir::Stmt visitStore(const ir::StoreNode &N, const ir::Stmt &S) override;
};

/// Stmts with the scalar accumulator Acc moved to Acc[Indices...], as one
/// block: a contraction's init or epilogue, run per element of a tile.
ir::Stmt withAccumulatorAt(const std::vector<ir::Stmt> &Stmts, const std::string &Acc,
                           std::vector<ir::Expr> Indices);

/// Every name a function uses (sizes, buffers, loop and let variables), so
/// that a pass's new names never shadow or capture one.
class NameTable {
public:
  explicit NameTable(const ir::Func &F);
  /// Base, or Base1, Base2, ...: a name nothing in the function uses yet;
  /// it is taken from then on.
  std::string fresh(const std::string &Base);

private:
  llvm::StringSet<> Used;
};

/// Rewrites each top-level nest of F (a statement under the top-level
/// block and global allocations: one launch each) with Rewrite, which
/// returns its argument when it leaves the nest alone.
void rewriteNests(ir::Func &F, const std::function<ir::Stmt(const ir::Stmt &)> &Rewrite);

/// The kernel-class passes' walk: calls Map on each top-level nest of F
/// that is not a launch yet. Map returns the nest itself to decline it,
/// else the body of the launch it makes of it, and may add to Knobs the
/// values it chose for that launch (Knob::SetBy). The launch is named after
/// the tensor the nest writes (unique in F) and has class Class. Its loop
/// and let variables are then renamed to the shortest names their scope
/// allows (c11 -> c where no other c is visible), so that sibling loops
/// and sibling launches share short names (test/passes/scoped-names.test).
void launchNests(ir::Func &F, ir::LaunchClass Class,
                 const std::function<ir::Stmt(const ir::Stmt &Nest,
                                              std::vector<ir::Knob> &Knobs)> &Map);

/// One launch of a nest that a pass writes as several, each for the sizes
/// where its grid is not empty (a select on sizes whose other arm is 0):
/// the launcher then runs the one whose grid has blocks. Suffix names it
/// beside the first ("" for the first: C, C_small).
struct LaunchVariant {
  std::string Suffix;
  ir::Stmt Body;
  /// Global temporaries its launches share with later ones (tile-mma's
  /// split partials): allocated around all of the nest's launches, so
  /// their shapes must be empty at sizes where the variant does not run.
  std::vector<ir::Buffer> Temps = {};
  /// Values the pass chose for this launch alone, beside those it chose
  /// for all of the nest's launches (Knob::SetBy).
  std::vector<ir::Knob> Knobs = {};
};

/// A variant's grid: Blocks where When is RunsWhen, else none (no When:
/// Blocks).
ir::Expr gridWhen(const ir::Expr &Blocks, const ir::Expr &When, bool RunsWhen);

/// launchNests for passes that may write a nest as several launches: Map
/// returns none to decline the nest, else the launches in the order they
/// run.
void launchNestVariants(
    ir::Func &F, ir::LaunchClass Class,
    const std::function<std::vector<LaunchVariant>(const ir::Stmt &Nest,
                                                   std::vector<ir::Knob> &Knobs)> &Map);

/// True if S holds a loop bound to blocks, threads, warps or lanes.
bool hasGPULoops(const ir::Stmt &S);
/// True if E (or S) mentions any of Names as a variable.
bool usesAnyVar(const ir::Expr &E, const std::vector<std::string> &Names);
bool usesAnyVar(const ir::Stmt &S, const std::vector<std::string> &Names);
/// True if E reads any buffer.
bool hasLoads(const ir::Expr &E);
/// Every load in E, nested ones (in indices) included, in visiting order;
/// not the element aligned() takes the address of.
std::vector<ir::Expr> loadsOf(const ir::Expr &E);
/// True if S has a path that rests on aligned() (a wide global access).
bool testsAlignment(const ir::Stmt &S);

/// The statements of S with nested blocks spliced in.
std::vector<ir::Stmt> flattenBlocks(const ir::Stmt &S);
/// One block: First's statements (nested blocks spliced in), then Then.
ir::Stmt prepended(const ir::Stmt &First, ir::Stmt Then, unsigned Line);


/// The perfect run of serial loops at the top of S whose bounds use no
/// variable of the run (rectangular), and the statement inside them.
struct LoopRun {
  std::vector<const ir::ForNode *> Loops;
  ir::Stmt Inner;
};
LoopRun outerSerialLoops(const ir::Stmt &S);

/// e_1 * ... * e_n, the extents of Loops, spelled as bindFlatIndex
/// builds it (1 for no loops).
ir::Expr flatExtent(const std::vector<const ir::ForNode *> &Loops);

/// The global tensor Name of F: a parameter, or a temporary allocated at
/// the top of F's body (the launcher allocates it, and passes it to the
/// kernels as it passes a parameter). Null if there is none.
const ir::Buffer *findTensor(const ir::Func &F, const std::string &Name);

/// The row-major offset of element Idx of a tensor of shape Shape:
/// ((i_0 * s_1 + i_1) * s_2 + ...) + i_n.
ir::Expr linearIndex(const std::vector<ir::Expr> &Shape, const std::vector<ir::Expr> &Idx);

/// The last index of L that can move: the trailing dimensions of L's
/// tensor (a parameter or a temporary of F) whose extent is the constant 1,
/// a column vector's `B: f32[K, 1]`, hold element 0 whatever they are
/// indexed with, so consecutive values of the index before them address
/// consecutive elements. L's last index where the tensor is not found.
/// L has at least one index.
const ir::Expr &lastMovingIndex(const ir::LoadNode &L, const ir::Func &F);

/// Whether E is the variable Name.
bool isVarNamed(const ir::Expr &E, const std::string &Name);

/// True if Idx is [..., V] with V nowhere else: consecutive values of V
/// address consecutive elements of a row-major tensor.
bool contiguousIn(const std::vector<ir::Expr> &Idx, const std::string &V);

/// Body under lets that recover each loop of Loops from the flat index
/// Flat, innermost fastest, as a row-major walk of the loops would count,
/// outermost first with one division each:
///   v_k = (Flat - sum_{j<k} (v_j - min_j) * s_j) / s_k + min_k,
///   s_k = e_{k+1} * ... * e_n
/// (no division on the innermost; no "/ 1" or "+ 0", since -O0 code is
/// read too). Flat must be below flatExtent(Loops).
ir::Stmt bindFlatIndex(const std::vector<const ir::ForNode *> &Loops, const ir::Expr &Flat,
                       ir::Stmt Body);

/// Index arithmetic as the tiling passes build it (simplify folds it).
inline ir::Expr cInt(int64_t V) { return ir::intImm(V); }
inline ir::Expr idiv(ir::Expr A, ir::Expr B) {
  return ir::binary(ir::BinaryOp::Div, std::move(A), std::move(B));
}
inline ir::Expr imod(ir::Expr A, ir::Expr B) {
  return ir::binary(ir::BinaryOp::Mod, std::move(A), std::move(B));
}
inline ir::Expr land(ir::Expr A, ir::Expr B) {
  return ir::binary(ir::BinaryOp::And, std::move(A), std::move(B));
}
inline ir::Expr le(ir::Expr A, ir::Expr B) {
  return ir::binary(ir::BinaryOp::Le, std::move(A), std::move(B));
}
inline ir::Expr ceilDiv(ir::Expr A, int64_t B) {
  return idiv(ir::add(std::move(A), cInt(B - 1)), cInt(B));
}
/// Min + X, without the "0 +" of the usual loop that starts at 0.
inline ir::Expr fromMin(const ir::Expr &Min, ir::Expr X) {
  return ir::asConstInt(Min) == 0 ? X : ir::add(Min, std::move(X));
}

/// The run-time test under which runs of Width elements along the
/// innermost index of Tensors are single aligned accesses (what vectorize
/// proves its wide accesses by): Extent and each tensor's rows multiples
/// of Width, each tensor's first element aligned to AlignBytes(its dtype);
/// each condition once, in that order, a constant needing none. None when
/// a constant rules runs out. AlignedOnly: the alignment tests alone (runs
/// that start where the rows allow, as row-chain's peeled rows do).
std::optional<ir::Expr> runTest(const ir::Func &F, const ir::Expr &Extent,
                                const std::vector<std::string> &Tensors, int64_t Width,
                                const std::function<int64_t(DType)> &AlignBytes,
                                bool AlignedOnly = false);

/// A pass's own buffer (a temporary: shared tile, registers), unpadded.
ir::Buffer tempBuffer(const std::string &Name, DType T, std::vector<ir::Expr> Shape,
                      ir::MemScope Scope);

/// A zero of type T (false for bool).
ir::Expr zeroOf(DType T);

/// Combining threads' partials reassociates Op, so only the four
/// associative and commutative ones spread a reduction over threads.
bool isReductionOp(ir::BinaryOp Op);
/// x Op x == x: folding a value in twice (init in every thread's partial,
/// a repeated warp total) leaves the result alone (max, min).
bool isIdempotent(ir::BinaryOp Op);
/// The value x with x Op y == y for every y, for + and * (0 and 1).
ir::Expr identityOf(ir::BinaryOp Op, DType T);

/// What a pass says about a statement: that it took it (and how), or why
/// it declined it. Line is the statement's .tdsl line (0: none).
struct Remark {
  const char *Pass;
  unsigned Line;
  std::string Message;
};
/// Where remarks go: the program decides how to locate and print them
/// (tdslc and tdsl-opt --remarks). Without a handler they are dropped.
void setRemarkHandler(std::function<void(const Remark &)> Handler);
/// Hands one remark to the handler, if any.
void remark(const char *Pass, unsigned Line, const llvm::Twine &Message);

} // namespace tdsl

#endif // TDSL_PASSES_PASSUTILS_H
