//===- TileTranspose.cpp - Stage transposed reads through a shared tile ---===//
#include "passes/TileTranspose.h"
#include "ir/Printer.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"
#include "ir/Simplify.h"

#include "llvm/ADT/STLExtras.h"

#include <string>
#include <vector>

namespace tdsl {

using namespace ir;

namespace {

const char *const PassName = "tile-transpose";

constexpr int64_t DefaultTile = 32;
/// Threads along y. Each covers Tile / RowThreads rows of the tile, so a
/// block stays at Tile x 8 threads and each thread has several loads in
/// flight.
constexpr int64_t RowThreads = 8;
/// The knob's range (checkSchedule enforces it for .tdsl schedules; hand-
/// written IR may still carry anything).
constexpr int64_t MaxTile = 64;

/// A load at the top of a stored value, and whether every evaluation of the
/// value reads it.
struct ValueLoad {
  Expr E;
  bool Conditional;
};

/// The loads of E outside other loads' indices. A load under a select
/// branch or an && / || operand may be guarded by the other operand (a
/// halo read `i + 1 < M ? X[i + 1, j] : 0`); staging it would read it for
/// every (i, j) of the tile, out of range.
void collectLoads(const Expr &E, bool Conditional, std::vector<ValueLoad> &Out) {
  switch (E->Kind) {
  case ExprKind::Load: Out.push_back({E, Conditional}); return;
  case ExprKind::Unary:
    collectLoads(static_cast<const UnaryNode &>(*E).A, Conditional, Out);
    return;
  case ExprKind::Cast: collectLoads(static_cast<const CastNode &>(*E).A, Conditional, Out); return;
  case ExprKind::Binary: {
    const auto &N = static_cast<const BinaryNode &>(*E);
    bool Guarded = Conditional || N.Op == BinaryOp::And || N.Op == BinaryOp::Or;
    collectLoads(N.A, Guarded, Out);
    collectLoads(N.B, Guarded, Out);
    return;
  }
  case ExprKind::Select: {
    const auto &N = static_cast<const SelectNode &>(*E);
    collectLoads(N.Cond, Conditional, Out);
    collectLoads(N.TrueValue, true, Out);
    collectLoads(N.FalseValue, true, Out);
    return;
  }
  case ExprKind::Call:
    for (const Expr &A : static_cast<const CallNode &>(*E).Args)
      collectLoads(A, Conditional, Out);
    return;
  default: return;
  }
}

/// Replaces every copy of one load with another expression.
class LoadReplacer : public IRMutator {
public:
  LoadReplacer(Expr From, Expr To) : From(std::move(From)), To(std::move(To)) {}

protected:
  Expr visitLoad(const LoadNode &N, const Expr &E) override {
    return structurallyEqual(E, From) ? To : IRMutator::visitLoad(N, E);
  }

private:
  Expr From, To;
};

class Tiler {
public:
  explicit Tiler(Func &F) : Names(F), Tile(knobInt(F, "transpose_tile", DefaultTile)) {}

  // 1. Match: the column loop, a store along it, its T-load and the row
  //    loop that load's last index follows (findTransposedLoad); decline
  //    with a remark otherwise.
  // 2. Stage the T-load through a shared tile (stage).
  Stmt tileNest(const Stmt &S) {
    LoopRun Run = outerSerialLoops(S);
    if (Run.Loops.size() < 2 || Run.Inner->Kind != StmtKind::Store)
      return S; // a reduction, a scan, a rank-1 map: not a permute
    const auto &St = static_cast<const StoreNode &>(*Run.Inner);
    const ForNode &Col = *Run.Loops.back();
    unsigned Line = S->SrcLine;
    auto Decline = [&](const llvm::Twine &Why) {
      remark(PassName, Line, Why + "; left to the passes after it");
      return S;
    };

    if (St.Indices.empty() || !usesAnyVar(St.Indices.back(), {Col.Var}))
      return Decline("the store to " + St.Buffer + " does not write along the innermost loop '" +
                     Col.Var + "' (no coalesced write to keep)");
    for (const ForNode *L : Run.Loops)
      if (!llvm::any_of(St.Indices, [&](const Expr &I) { return usesAnyVar(I, {L->Var}); }))
        return Decline("the store to " + St.Buffer + " does not use loop '" + L->Var +
                       "' (its iterations are not independent outputs)");

    std::string Why;
    const ForNode *Row = nullptr;
    Expr TLoad = findTransposedLoad(St, Run, Row, Why);
    if (!TLoad)
      return Decline(Why);
    if (Tile < RowThreads || Tile > MaxTile || Tile % RowThreads)
      return Decline("transpose_tile = " + llvm::Twine(Tile) +
                     " is not a multiple of 8 in [8, 64]");
    return stage(S, Run, St, TLoad, *Row);
  }

private:
  NameTable Names;
  int64_t Tile;

  /// The first load of the stored value whose last index follows one loop
  /// j of the nest other than the column loop i, while another index
  /// follows i: the read that goes with a stride when consecutive threads
  /// take consecutive i. j, the tile's row, may be any loop of the nest
  /// (NHWC to NCHW reads X[n, h, w, c] along c for Y[n, c, h, w]); the
  /// others are the batch. Null, with Why set, when there is none.
  Expr findTransposedLoad(const StoreNode &St, const LoopRun &Run, const ForNode *&Row,
                          std::string &Why) {
    const std::string &Col = Run.Loops.back()->Var;
    std::vector<ValueLoad> Loads;
    collectLoads(St.Value, false, Loads);
    for (const ValueLoad &VL : Loads) {
      const auto &L = static_cast<const LoadNode &>(*VL.E);
      if (L.Indices.empty() || usesAnyVar(L.Indices.back(), {Col}) ||
          !llvm::any_of(L.Indices, [&](const Expr &I) { return usesAnyVar(I, {Col}); }))
        continue; // coalesced along i, or the same element for every i
      std::string Text = toString(VL.E);
      std::vector<const ForNode *> Follows;
      for (size_t D = 0; D + 1 < Run.Loops.size(); ++D)
        if (usesAnyVar(L.Indices.back(), {Run.Loops[D]->Var}))
          Follows.push_back(Run.Loops[D]);
      if (Follows.size() != 1)
        Why = Why.empty() ? Text + " is strided along '" + Col + "' but its last index follows " +
                                (Follows.empty() ? "no loop" : "several loops") +
                                " of the nest"
                          : Why;
      else if (VL.Conditional)
        Why = Text + " is read under a condition; staging it would read it out of range";
      else if (L.Buffer == St.Buffer)
        Why = Text + " reads the buffer the nest writes";
      else {
        Row = Follows.front();
        return VL.E;
      }
    }
    if (Why.empty())
      Why = "no load in the value stored to " + St.Buffer + " is strided along '" + Col +
            "' (its reads are coalesced already)";
    return nullptr;
  }

  /// The launch: T x 8 threads (tx, ty) per T x T tile, each thread on T / 8
  /// rows of it (r), so that each has several loads in flight.
  Stmt stage(const Stmt &S, const LoopRun &Run, const StoreNode &St, const Expr &TLoad,
             const ForNode &Row) {
    unsigned Line = S->SrcLine;
    const ForNode &Col = *Run.Loops.back();
    std::vector<const ForNode *> Batch;
    for (size_t D = 0; D + 1 < Run.Loops.size(); ++D)
      if (Run.Loops[D] != &Row)
        Batch.push_back(Run.Loops[D]);
    std::string BX = Names.fresh("bx"), BY = Names.fresh("by");
    std::string BZ = Batch.empty() ? "" : Names.fresh("bz");
    std::string TX = Names.fresh("tx"), TY = Names.fresh("ty"), R = Names.fresh("r");
    std::string TileName = Names.fresh("tile");
    Expr T = intImm(Tile);
    Expr RowInTile = add(var(TY), mul(intImm(RowThreads), var(R)));

    // A loop variable at an offset within the tile that block Block owns.
    auto Coord = [&](const ForNode &L, const std::string &Block, const Expr &Offset) {
      Expr V = mul(var(Block), T);
      // Left-associated, so it prints without parentheses.
      if (Offset == RowInTile)
        V = add(add(V, var(TY)), mul(intImm(RowThreads), var(R)));
      else
        V = add(V, Offset);
      return asConstInt(L.Min) == 0 ? V : add(V, L.Min);
    };
    auto End = [](const ForNode &L) {
      return asConstInt(L.Min) == 0 ? L.Extent : simplifyExpr(add(L.Min, L.Extent));
    };
    // Binds j and i (the original names, so the store and the load read
    // as in the source) and keeps the tile's edge inside the loop bounds.
    auto Guarded = [&](const Expr &J, const Expr &I, const Stmt &Body) {
      Expr InRange = binary(BinaryOp::And, lt(var(Row.Var), End(Row)), lt(var(Col.Var), End(Col)));
      return letStmt(Row.Var, J, letStmt(Col.Var, I, ifThen(InRange, Body, nullptr, Line), Line),
                     Line);
    };
    auto EveryThread = [&](const Stmt &Body) {
      Stmt Rows = forLoop(R, intImm(0), intImm(Tile / RowThreads), ForKind::Unrolled, Body, Line);
      return forLoop(TY, intImm(0), intImm(RowThreads), ForKind::ThreadY,
                     forLoop(TX, intImm(0), T, ForKind::ThreadX, Rows, Line), Line);
    };

    // 1. Consecutive threads read consecutive j of the T-load into the
    //    tile, guarded by the loop bounds at the tile's edge.
    Stmt Read = EveryThread(Guarded(Coord(Row, BY, var(TX)), Coord(Col, BX, RowInTile),
                                    store(TileName, {RowInTile, var(TX)}, TLoad, Line)));
    // 2. After a barrier, consecutive threads write consecutive i, the
    //    T-load replaced by the tile read across (tile[tx, ...] holds i =
    //    tile origin + tx); the same guard.
    LoadReplacer FromTile(TLoad, load(TLoad->Type, TileName, {var(TX), RowInTile}));
    Stmt Write =
        EveryThread(Guarded(Coord(Row, BY, RowInTile), Coord(Col, BX, var(TX)),
                            store(St.Buffer, St.Indices, FromTile.mutate(St.Value), St.SrcLine)));
    Buffer TileBuf = tempBuffer(TileName, TLoad->Type, {T, T}, MemScope::Shared);
    TileBuf.ExtentNames = {"tile", "tile"};
    Stmt Body = allocate(TileBuf, block({Read, barrier(Line), Write}, Line), Line);

    // 3. The batch loops come back as lets of bz, innermost fastest; then
    //    the note and the block loops.
    Expr Stride = flatExtent(Batch);
    Body = bindFlatIndex(Batch, var(BZ), Body);

    const auto &Src = static_cast<const LoadNode &>(*TLoad);
    std::string Side = std::to_string(Tile);
    remark(PassName, Line,
           "took it: " + toString(TLoad) + " staged through a " + Side + "x" + Side +
               " shared tile, so reads and writes both go along threadIdx.x");
    Body = block({note("[tile-transpose] " + toString(TLoad) + " is read along " + Row.Var +
                           " but " + St.Buffer + " is written along " + Col.Var + ": a " + Side +
                           "x" + Side + " tile of " + Src.Buffer +
                           " in shared memory lets both go along threadIdx.x (coalesced); " + Side +
                           "x" + std::to_string(RowThreads) + " threads, " +
                           std::to_string(Tile / RowThreads) + " rows each",
                       Line),
                  Body},
                 Line);
    auto Tiles = [&](const ForNode &L) {
      return binary(BinaryOp::Div, add(L.Extent, intImm(Tile - 1)), T);
    };
    Body = forLoop(BX, intImm(0), Tiles(Col), ForKind::BlockX, Body, Line);
    Body = forLoop(BY, intImm(0), Tiles(Row), ForKind::BlockY, Body, Line);
    if (!Batch.empty())
      Body = forLoop(BZ, intImm(0), Stride, ForKind::BlockZ, Body, Line);
    return Body;
  }
};

} // namespace

void tileTranspose(Func &F) {
  Tiler T(F);
  launchNests(F, LaunchClass::Transpose,
              [&](const Stmt &S, std::vector<Knob> &) { return T.tileNest(S); });
}

} // namespace tdsl
