//===- ContractionStaging.cpp - One operand of a CUDA-core contraction ---===//
#include "passes/ContractionStaging.h"

#include <algorithm>

namespace tdsl {

using namespace ir;

namespace {

Expr c(int64_t V) { return intImm(V); }

/// Where copy round C of thread tx puts its run of O's tile: (kk, x) of
/// the run's first element, whose O.Run elements follow along the fast
/// index: k when k is the operand's contiguous index, its row or column
/// otherwise. Consecutive threads take consecutive runs, so a warp reads
/// consecutive global addresses. When the threads cover whole lines of the
/// tile, the split is done on tx once (fast = tx % lanes, slow = tx /
/// lanes + C * threads / lanes, lanes = runs per line) instead of on the
/// run number; Guard is then null, else "run < runs in the tile".
struct CopyCoords {
  Expr KK, X, Guard;
};

CopyCoords copyCoords(const ContractionSchedule &S, const CoreOperandStage &O,
                      const std::string &TX, const std::string &C) {
  int64_t BX = O.RowSide ? S.BlockM : S.BlockN, Runs = S.TileK * BX / O.Run,
          Threads = S.threads();
  int64_t Lanes = (O.KFastest ? S.TileK : BX) / O.Run;
  CopyCoords R;
  Expr Fast, Slow;
  if (Threads % Lanes == 0 && Runs % Threads == 0) {
    Fast = Lanes == 1 ? c(0) : imod(var(TX), c(Lanes));
    Expr Step = Threads == Lanes ? var(C) : mul(var(C), c(Threads / Lanes));
    Slow = add(Lanes == 1 ? var(TX) : idiv(var(TX), c(Lanes)), Step);
  } else {
    Expr L = add(var(TX), mul(var(C), c(Threads)));
    Fast = imod(L, c(Lanes));
    Slow = idiv(L, c(Lanes));
    if (Runs % Threads)
      R.Guard = lt(L, c(Runs));
  }
  if (O.Run > 1 && Lanes > 1)
    Fast = mul(Fast, c(O.Run));
  R.KK = O.KFastest ? Fast : Slow;
  R.X = O.KFastest ? Slow : Fast;
  return R;
}

} // namespace

int64_t CoreOperandStage::copiesPerThread(const ContractionSchedule &S) const {
  int64_t Runs = S.TileK * (RowSide ? S.BlockM : S.BlockN) / Run, Threads = S.threads();
  return (Runs + Threads - 1) / Threads * Run;
}

/// With copy_runs = on, runs of 4 elements for a 4-byte operand read along
/// its fast index from a row-major tensor, when the tile's lines hold
/// whole runs and every thread gets whole rounds of them. A run is one
/// 16-byte load under WideCond (rows a multiple of 4, the tensor 16-byte
/// aligned) and the same 4 elements one at a time elsewhere, so the
/// prefetch registers are laid out alike on every path and storeNext
/// needs no branch. Off by default: slower on the H200 (bench/RESULTS.md).
/// Never for f16 and bf16: runs of 8 halves, unpacked from the 16-byte
/// load and stored to shared memory one by one, were slower still.
void CoreOperandStage::chooseRun(const Func &F, const ContractionSchedule &S) {
  const auto &N = static_cast<const LoadNode &>(*Load);
  const ForNode *Fast = KFastest ? Red : XLoop;
  const Buffer *B = findTensor(F, N.Buffer);
  Run = 1;
  WideCond = nullptr;
  // A merged index read along k: the thread's copies are one run along k
  // of a single line (its quotients and remainders hoisted out of the k
  // loop by nvcc, not one set per copy), loaded an element at a time.
  int64_t BX = RowSide ? S.BlockM : S.BlockN, Threads = S.threads();
  if (Merged && KFastest && (S.TileK * BX) % Threads == 0) {
    int64_t R = S.TileK * BX / Threads;
    if (R > 1 && R <= S.TileK && S.TileK % R == 0)
      Run = R;
    return;
  }
  if (!S.CopyRuns || !B || B->Type != N.Type || dtypeBytes(N.Type) != 4 ||
      asConstInt(Fast->Min) != 0 || !contiguousIn(N.Indices, Fast->Var))
    return;
  // Whole runs in each line of the tile, and whole rounds of runs (no
  // thread idle while others copy).
  int64_t R = 4;
  if ((KFastest ? S.TileK : BX) % R || (S.TileK * BX / R) % Threads)
    return;
  Run = R;
  std::vector<Expr> First(B->rank(), c(0));
  WideCond = call(Intrinsic::Aligned, {load(B->Type, B->Name, First), c(16)});
  if (B->rank() > 1)
    WideCond = land(binary(BinaryOp::Eq, imod(B->Shape.back(), c(R)), c(0)), WideCond);
}

/// A block whose tile lies inside the tensor (all but the edge blocks and
/// the last partial k tile) takes a copy without bounds checks, and under
/// WideCond a copy whose runs vectorize makes single 16-byte loads.
Stmt CoreOperandStage::copy(NameTable &Names, const ContractionSchedule &S, const std::string &TX,
                            const Expr &KBase, const Expr &Stage, bool ToRegs,
                            unsigned Line) const {
  const CoreOperandStage &O = *this;
  int64_t BX = RowSide ? S.BlockM : S.BlockN, Copies = copiesPerThread(S);
  auto Copy = [&](bool Checked) {
    std::string C = Names.fresh("c"), KK = Names.fresh("kk"), X = Names.fresh("x");
    std::string V = Run > 1 ? Names.fresh("e") : "";
    CopyCoords CC = copyCoords(S, O, TX, C);
    // Element e of the run: base + e, the form vectorize recognizes.
    auto Along = [&](Expr Base, bool Fast) { return Run > 1 && Fast ? add(Base, var(V)) : Base; };
    Expr GX = Along(add(BlockOffset, var(X)), !KFastest);
    Expr GK = Along(fromMin(KBase, var(KK)), KFastest);
    Expr Value = substitute(Load, XLoop->Var, fromMin(XLoop->Min, GX));
    Value = substitute(Value, Red->Var, fromMin(Red->Min, GK));
    auto Dest = [&](Expr Val) {
      Expr Slot = Run > 1 ? add(mul(var(C), c(Run)), var(V)) : var(C);
      return ToRegs ? store(Next, {Slot}, Val, Line)
                    : store(Tile,
                            stagedAt(Stage, Along(var(KK), KFastest), Along(var(X), !KFastest)),
                            Val, Line);
    };
    Stmt Body = Checked ? ifThen(land(lt(GX, XLoop->Extent), lt(GK, Red->Extent)), Dest(Value),
                                 Dest(zeroOf(Type)), Line)
                        : Dest(Value);
    if (Run > 1)
      Body = forLoop(V, c(0), c(Run), ForKind::Serial, Body, Line);
    Body = letStmt(KK, CC.KK, letStmt(X, CC.X, Body, Line), Line);
    if (CC.Guard)
      Body = ifThen(CC.Guard, Body, nullptr, Line);
    return forLoop(C, c(0), c(Copies / Run), ForKind::Serial, Body, Line);
  };
  Expr Inside = land(le(add(BlockOffset, c(BX)), XLoop->Extent),
                     le(add(KBase, c(S.TileK)), Red->Extent));
  // One after another: the order of the fresh names is fixed.
  Stmt Checked = Copy(true);
  Stmt Unchecked = Copy(false);
  if (WideCond)
    Unchecked = ifThen(WideCond, Copy(false), Unchecked, Line);
  return ifThen(Inside, Unchecked, Checked, Line);
}

Stmt CoreOperandStage::storeNext(NameTable &Names, const ContractionSchedule &S,
                                 const std::string &TX, const Expr &Stage, unsigned Line) const {
  int64_t Copies = copiesPerThread(S);
  std::string C = Names.fresh("c"), V = Run > 1 ? Names.fresh("e") : "";
  CopyCoords CC = copyCoords(S, *this, TX, C);
  Stmt Body;
  if (Run > 1) {
    Expr KK = KFastest ? fromMin(CC.KK, var(V)) : CC.KK;
    Expr X = KFastest ? CC.X : fromMin(CC.X, var(V));
    Body = forLoop(V, c(0), c(Run), ForKind::Serial,
                   store(Tile, stagedAt(Stage, KK, X),
                         load(Type, Next, {add(mul(var(C), c(Run)), var(V))}), Line),
                   Line);
  } else {
    Body = store(Tile, stagedAt(Stage, CC.KK, CC.X), load(Type, Next, {var(C)}), Line);
  }
  if (CC.Guard)
    Body = ifThen(CC.Guard, Body, nullptr, Line);
  return forLoop(C, c(0), c(Copies / Run), ForKind::Serial, Body, Line);
}

std::string fitSiblings(const Func &F, size_t Accs, const std::vector<CoreOperandStage> &Ops,
                        ContractionSchedule &S) {
  if (Accs > 1 && !findKnob(F, "thread_tile")) {
    size_t RowOps = std::count_if(Ops.begin(), Ops.end(),
                                  [](const CoreOperandStage &O) { return O.RowSide; });
    bool Rows = RowOps > Ops.size() - RowOps, Block = !findKnob(F, "block_tile");
    // A pinned block tile keeps its size and takes more threads, if it can.
    auto Halve = [&](bool R) {
      int64_t &T = R ? S.ThreadM : S.ThreadN, &B = R ? S.BlockM : S.BlockN;
      if (T <= 4 || (!Block && S.threads() * (T / 4) > 1024))
        return;
      if (Block)
        B = B * 4 / T;
      T = 4;
    };
    Halve(Rows);
    if (Accs >= 4)
      Halve(!Rows);
  }
  // (Padding adds at most a few elements per row: 16 leaves room.)
  auto TileBytes = [&] {
    int64_t B = 0;
    for (const CoreOperandStage &O : Ops)
      B += S.Stages * S.TileK * ((O.RowSide ? S.BlockM : S.BlockN) + 16) * dtypeBytes(O.Type);
    return B;
  };
  if (TileBytes() > F.MaxSharedBytes && S.Stages > 1 && !findKnob(F, "stages"))
    S.Stages = 1;
  if (TileBytes() <= F.MaxSharedBytes)
    return "";
  return "the shared tiles of its " + std::to_string(Ops.size()) + " operands need " +
         std::to_string(TileBytes()) + " bytes; the target allows " +
         std::to_string(F.MaxSharedBytes);
}

} // namespace tdsl
