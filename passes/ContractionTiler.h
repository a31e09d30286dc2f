//===- ContractionTiler.h - tile-contraction's tiler, shared by its files --===//
//
// The state tile-contraction (passes/TileContraction.h) keeps while it
// tiles one nest, split as tile-mma's is: TileContraction.cpp builds a
// launch's body (the register tile, the k loop in its three forms, the
// epilogue, the storage); ContractionLaunch.cpp chooses which launches a
// nest gets (the tiled one, the split's two, those over short rows' or few
// columns' tiles), each one's schedule, and the launch around the body.
// Not a public interface: only those two files include it.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_CONTRACTIONTILER_H
#define TDSL_PASSES_CONTRACTIONTILER_H

#include "ir/Simplify.h"
#include "passes/ContractionMatch.h"
#include "passes/ContractionSplitK.h"
#include "passes/ContractionStaging.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace tdsl::contraction {

using namespace ir;

inline Expr c(int64_t V) { return intImm(V); }

/// Rows of at most ShortRows (a decoder's tokens, a few heads' queries)
/// take a launch of ShortBlock-row tiles, ShortThread rows a thread: under
/// the default 128-row tile, 16 rows spend seven eighths of each block's
/// FMAs on rows past M, 64 rows half. So do columns of a constant count of
/// at most ShortRows (a matrix times a few vectors, a head's 64 columns).
constexpr int64_t ShortRows = 64;
constexpr int64_t ShortBlock = 32;
constexpr int64_t ShortThread = 4;

/// Which side of the output a launch's tiles are narrowed on.
enum class Narrow { None, Rows, Cols };

class Tiler {
public:
  explicit Tiler(Func &F) : F(F), Names(F) {}

  /// Nest's launches, none when it is not a contraction: the tiled
  /// launch and, where the sizes may give few output tiles and a long k
  /// loop, a launch that splits the k loop and one that adds its partials
  /// (passes/ContractionSplitK.h); where the rows may be at most
  /// ShortRows, those launches again over the short rows' tiles.
  std::vector<LaunchVariant> variants(const Stmt &Nest);

private:
  Func &F;
  NameTable Names;
  ContractionSchedule S;
  std::vector<Knob> *Chosen = nullptr; ///< the launch's knobs, while tiling
  /// Split: tile() builds the launch that splits the k loop; SplitWhen is
  /// the test on sizes under which it runs (null: never), which the first
  /// build sets.
  bool Split = false;
  Expr SplitWhen;
  /// Short: the side tile() narrows the launch's tiles on; RowsWhen is
  /// the test on the rows under which the launch being built runs (null:
  /// always).
  Narrow Short = Narrow::None;
  Expr RowsWhen;
  /// schedule()'s: the split's test where the sizes leave it open (null:
  /// always or never), and the one under which this launch runs (null:
  /// always).
  Expr OpenSplit, RunWhen;
  std::optional<ContractionSplitK> SplitK;

  // The nest being tiled.
  std::vector<const ForNode *> Batch;
  const ForNode *RowLoop = nullptr, *ColLoop = nullptr, *RedLoop = nullptr;
  ContractionNest Contraction; ///< what matchContraction found
  /// The nest last matched with its side's loops merged, which
  /// Contraction then points into.
  SideMerge Merge;
  std::vector<CoreOperandStage> Ops;
  // Names of the launch's variables.
  std::string BZ, BY, BX, TX, TR, TC, KT;
  // A split's: its index, the flat batch, k tiles per split, the block's
  // first k tile and its count of them.
  std::string SP, BF, KP, KF, KN;
  /// Which shared buffer the tile accesses being built use (two stages).
  Expr Stage;

  std::vector<Expr> tileIndex(Expr KK, Expr X) const {
    return stagedAt(S.Stages == 2 ? Stage : nullptr, std::move(KK), std::move(X));
  }

  /// The body of Nest's launch (Split: the split's), or Nest itself
  /// when it is not a contraction; Knobs receives what the tiling chose
  /// for the backend.
  Stmt tile(const Stmt &Nest, std::vector<Knob> &Knobs);
  bool match(const Stmt &Nest);
  /// The launch's schedule, the split's test and the one under which the
  /// launch runs (ContractionLaunch.cpp); false, with a remark, where the
  /// tiles do not fit.
  bool schedule(unsigned Line);
  /// Body, the block's work, wrapped in its thread coordinates, the
  /// split's run of k tiles, the note and the GPU loops
  /// (ContractionLaunch.cpp).
  Stmt launch(Stmt Body, unsigned Line);

  /// The short rows' blocks, of fewer threads than the default's 256,
  /// give an SM fewer warps: their split aims at proportionally more of
  /// them, and ptxas is asked to keep proportionally more resident.
  int64_t blockScale() const {
    return Short != Narrow::None ? std::max<int64_t>(1, 256 / S.threads()) : 1;
  }

  std::string shortSide() const { return Short == Narrow::Rows ? "rows" : "columns"; }

  int64_t threadsAlong(bool Row) const { return Row ? S.BlockM / S.ThreadM : S.BlockN / S.ThreadN; }
  /// The tile offset of a thread's I-th output along rows (or columns):
  /// groups of VW consecutive outputs, the groups strided by threads * VW.
  Expr outputOffset(bool Row, Expr I) const {
    int64_t VW = S.VectorWidth, Threads = threadsAlong(Row);
    Expr Thread = var(Row ? TR : TC);
    return simplifyExpr(
        add(add(mul(idiv(I, c(VW)), c(Threads * VW)), mul(Thread, c(VW))), imod(I, c(VW))));
  }
  /// The same for output G * VW + V of a thread (group G, lane V).
  Expr outputOffset(bool Row, const Expr &G, const Expr &V) const {
    int64_t VW = S.VectorWidth, Threads = threadsAlong(Row);
    return add(add(mul(G, c(Threads * VW)), mul(var(Row ? TR : TC), c(VW))), V);
  }
  Expr blockOffset(bool Row) const { return mul(var(Row ? BY : BX), c(Row ? S.BlockM : S.BlockN)); }
  /// Where k tile T starts along k (passes/ContractionMatch.h).
  Expr kBase(const Expr &T) const { return mul(kTileWithin(Contraction, S.TileK, T), c(S.TileK)); }
  Stmt atTile(const Expr &T, Stmt Body) const {
    return atKTile(Contraction, S.TileK, T, std::move(Body));
  }
  Stmt computeStep(Expr KBase, Expr Steps, bool Full, unsigned Line);
};

} // namespace tdsl::contraction

#endif // TDSL_PASSES_CONTRACTIONTILER_H
