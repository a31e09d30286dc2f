//===- RowChain.cpp - One block per row for a chain of row reductions -----===//
//
// The mapping of a chain (passes/RowChain.h): which threads take a row,
// the versions by the row's layout and length, and the launch. Which
// launches a chain gets is in passes/RowChainLaunches.cpp, the code of
// each phase in passes/RowChainPhases.cpp, what a launch says about itself
// in passes/RowChainNote.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/Match.h"
#include "ir/Printer.h"
#include "ir/Simplify.h"
#include "passes/RowChainMapper.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>

namespace tdsl {
namespace rowchain {

void ChainMapper::takeNames() {
  Row = Names.fresh("row");
  RowOfWarp = Names.fresh("rw");
  RowOfRange = Names.fresh("rr");
  Warp = Names.fresh("warp");
  Lane = Names.fresh("lane");
  Tid = Names.fresh("tid");
  Step = Names.fresh("j");
  Start = Names.fresh("c0");
  V = Names.fresh("v");
  Col = Names.fresh("c");
  Val = Names.fresh("val");
  RunMax = Names.fresh("run_max");
  MaxRef = Names.fresh("max_ref");
  OtherMax = Names.fresh("max_o");
  OtherSum = Names.fresh("sum_o");
  Head = Names.fresh("head");
  NumRuns = Names.fresh("runs");
}

void ChainMapper::plan() {
  planRuns();
  // Short rows get a group of lanes each (8, 16 or 32; 32 elements a
  // lane), several rows a block: a block would leave most of its threads
  // idle. A row length known only at run time gets every mapping, chosen
  // by the launch; a known one the narrowest that holds it; a pinned
  // reduce_threads asks for a block. Groups of 16 only where rows move in
  // runs (Width): rows that go an element at a time ran slower on half a
  // warp than on a whole one (rmsnorm, bench/RESULTS.md).
  LaneGroups.clear();
  if (ThreadsPinned || Long || Held)
    return;
  std::optional<int64_t> C = asConstInt(simplifyExpr(Cols));
  for (int64_t G : {int64_t(8), int64_t(16), WarpSize}) {
    if (G == 16 && !Width)
      continue;
    if (!C) {
      LaneGroups.push_back(G);
    } else if (*C <= G * RowChainCacheElements) {
      LaneGroups.push_back(G);
      break;
    }
  }
}

void ChainMapper::planRuns() {
  KeepName.assign(Phases.size(), "");
  FollowsMax.assign(Phases.size(), false);
  for (size_t J = 1; OnlineOn && J < Phases.size(); ++J)
    FollowsMax[J] = followsMax(J - 1, J);
  Staged.clear();
  PeelByElement.clear();
  Cached.clear();
  RunName.clear();
  CacheName.clear();
  Width = 0;
  WideCond = CachedCond = PeelCond = PeelHead = nullptr;
  SharedRows = false;
  auto Stageable = [](DType T) { return dtypeBytes(T) == 4 || dtypeBytes(T) == 2; };
  bool Odd = false;
  int64_t Narrowest = 0;
  std::vector<std::string> Wide;
  std::vector<unsigned> Uses;
  for (const RowPhase &P : Phases) {
    if (P.Kind == RowPhaseKind::Row)
      continue;
    std::vector<size_t> Seen;
    for (const Expr &L : loadsOf(P.reads())) {
      const auto &N = static_cast<const LoadNode &>(*L);
      if (!usesAnyVar(L, {Col}))
        continue;
      const Buffer *B = findTensor(F, N.Buffer);
      if (!B || !contiguousIn(N.Indices, Col) || !Stageable(B->Type)) {
        Odd = true;
        continue;
      }
      auto It = llvm::find_if(Staged, [&](const Expr &X) { return structurallyEqual(X, L); });
      size_t K = It - Staged.begin();
      if (It == Staged.end()) {
        Staged.push_back(L);
        Uses.push_back(0);
      }
      if (!llvm::is_contained(Seen, K)) {
        Seen.push_back(K);
        ++Uses[K];
      }
      Narrowest =
          Narrowest ? std::min<int64_t>(Narrowest, dtypeBytes(B->Type)) : dtypeBytes(B->Type);
      if (!llvm::is_contained(Wide, N.Buffer))
        Wide.push_back(N.Buffer);
    }
    if (P.Kind == RowPhaseKind::Element) {
      const Buffer *B = findTensor(F, P.Out);
      if (!contiguousIn(P.OutIdx, Col) || !Stageable(B->Type))
        Odd = true;
      Narrowest =
          Narrowest ? std::min<int64_t>(Narrowest, dtypeBytes(B->Type)) : dtypeBytes(B->Type);
      if (!llvm::is_contained(Wide, P.Out))
        Wide.push_back(P.Out);
    }
  }
  // Held values live across a division's slow path, a subroutine call,
  // and 32 4-byte ones a thread spill there: a 4-byte tensor that a
  // dividing phase reads is not held (re-read in runs instead).
  for (const RowPhase &P : Phases) {
    if (P.Kind == RowPhaseKind::Row || !dividesFloat(P.reads()))
      continue;
    for (size_t K = 0; K < Staged.size(); ++K)
      if (dtypeBytes(Staged[K]->Type) == 4 && contains(P.reads(), Staged[K]))
        Uses[K] = std::min(Uses[K], 1u);
  }
  std::optional<int64_t> C = asConstInt(simplifyExpr(Cols));
  // A known length that is not whole runs takes runs of 4 where it is a
  // multiple of 4 (every row then starts 8-byte aligned); a row of halves
  // of another length only peeled runs (PeelOnly: every row's head
  // differs), or none where planPeel declines.
  const bool Peels = (!Held || HeldPeelOnly) && knobEnabled(F, "peel_rows", true);
  bool PeelOnly = false;
  if (!Odd && Narrowest) {
    Width = 16 / Narrowest;
    if (C && *C % Width) {
      PeelOnly = *C % 4 && Width == 8 && Peels;
      Width = *C % 4 == 0 && Width > 4 ? 4 : PeelOnly ? Width : 0;
    }
  }
  // A row length known at compile time gets the fewest threads, up to
  // 1024, that hold it in registers: a long row then is read once, and
  // its block keeps more loads in flight (a row of 131072 elements takes
  // 1024 threads and is re-read). A length known only at run time takes
  // reduce_threads, which all its mappings share as the launch's block.
  // A held launch of a capacity past RowChainLongThreads holds its rows at
  // more elements a thread (heldThreads).
  const int64_t PerThread = Held > RowChainLongThreads
                                ? RowChainCacheElements * Held / heldThreads(Held)
                                : RowChainCacheElements;
  Block = Long ? RowChainLongThreads : Held ? heldThreads(Held) : Threads;
  if (!ThreadsPinned && C)
    while (Block < 1024 && *C > Block * PerThread)
      Block *= 2;
  PerBlock =
      ThreadsPinned || Long || Held || (!C && !PeeledHeld) || (C && *C > WarpSize * PerThread);
  if (!Width)
    return;
  RunBytes = Width * Narrowest;
  std::optional<Expr> Test = runTest(
      F, Cols, Wide, Width, [&](DType T) { return pieceOf(T) * dtypeBytes(T); }, PeelOnly);
  if (!Test) {
    Width = 0;
    return;
  }
  WideCond = *Test;
  if ((!C || PeelOnly) && Peels)
    planPeel();
  if (PeelOnly) {
    WideCond = nullptr; // no row is whole runs
    if (!PeelCond) {
      Width = 0;
      return;
    }
  }
  WideWhy.clear();
  PeelWhy.clear();
  ByElementWhy.clear();
  for (const std::string &B : Wide) {
    WideWhy += (WideWhy.empty() ? "" : ", ") + B;
    std::string &Why = readByElement(B) ? ByElementWhy : PeelWhy;
    Why += (Why.empty() ? "" : ", ") + B;
  }
  for (size_t K = 0; K < Staged.size(); ++K) {
    const std::string &B = static_cast<const LoadNode &>(*Staged[K]).Buffer;
    RunName.push_back(Names.fresh(B + "_run"));
    CacheName.push_back(Names.fresh(B + "_row"));
    Cached.push_back(Uses[K] > 1);
  }
  Runs = std::max<int64_t>(1, PerThread / Width);
  int64_t Fit = Block * Width * Runs;
  // The long launch re-reads: held, a row takes over 32 registers a
  // thread, one block a SM, and ran slower (bench/RESULTS.md).
  if (llvm::is_contained(Cached, true) && !Long) {
    if (!C)
      CachedCond = land(WideCond, le(Cols, intImm(Fit)));
    else if (*C <= Fit)
      CachedCond = WideCond;
  }
  SharedRows = CachedCond && sharedRows(Held > RowChainLongThreads ? Held : Block);
  // A held launch, or one holding rows in shared memory, computes the
  // terms again: kept, they took a register an element beside the row's,
  // which at 512 and 1024 threads left one block a SM (bench/RESULTS.md).
  for (size_t I = 0; I < Phases.size(); ++I)
    if (!Held && !SharedRows && WideCond && keepsTerm(I))
      KeepName[I] = Names.fresh(Phases[I].Acc->Buf.Name + "_terms");
}

int64_t ChainMapper::heldBytes(int64_t B) const {
  int64_t Bytes = 0;
  for (size_t K = 0; K < Staged.size(); ++K)
    if (Cached[K])
      Bytes += B * RowChainCacheElements * dtypeBytes(Staged[K]->Type);
  return Bytes;
}

// Beside the row, a block's shared memory holds the reductions' warp totals
// (a few hundred bytes); an SM keeps 1 KB of its own a block beyond the
// most a block may take (F.MaxSharedBytes).
constexpr int64_t RowChainBlockExtraBytes = 1024;

bool ChainMapper::sharedRows(int64_t B) const {
  int64_t Bytes = heldBytes(B);
  if (B == RowChainLongThreads)
    return Bytes <= RowChainSharedRowBytes;
  return B > RowChainLongThreads && Bytes <= RowChainSharedWideRowBytes &&
         Bytes + RowChainBlockExtraBytes <= F.MaxSharedBytes;
}

int64_t ChainMapper::heldBlocks(int64_t B) const {
  // Two blocks an SM each take half its shared memory, less their own.
  const int64_t Half = (F.MaxSharedBytes + RowChainBlockExtraBytes) / 2;
  return heldBytes(B) + 2 * RowChainBlockExtraBytes <= Half ? 2 : 1;
}

std::vector<int64_t> ChainMapper::wideCapacities() {
  // Rows of more than 32 elements a thread, in whole runs a thread:
  // capacities in steps of Step. The most that leave two blocks an SM
  // overlap one row's loads with the other's sweeps; a block of half
  // RowChainLongThreads each, as many registers a thread as the long
  // launch's (at RowChainLongThreads, two blocks leave ptxas 32 registers,
  // and it spilled). Past them, one block of RowChainLongThreads holds up to
  // twice its 32 elements a thread, where the long launch re-read them.
  std::vector<int64_t> Out;
  WideThreads.clear();
  if (!Width)
    return Out;
  const int64_t Step = RowChainLongThreads / RowChainCacheElements * Width;
  int64_t Two = RowChainLongThreads;
  while (Two + Step < 2 * RowChainLongThreads && heldBlocks(Two + Step) == 2)
    Two += Step;
  for (int64_t B : {Two, 2 * RowChainLongThreads})
    if (B > RowChainLongThreads && sharedRows(B)) {
      Out.push_back(B);
      WideThreads[B] = heldBlocks(B) == 2 ? RowChainLongThreads / 2 : RowChainLongThreads;
    }
  return Out;
}

Buffer ChainMapper::heldBuffer(size_t K) const {
  std::vector<Expr> Shape = {intImm(Runs), intImm(Width)};
  if (SharedRows)
    Shape.insert(Shape.begin() + 1, intImm(Block));
  return tempBuffer(CacheName[K], Staged[K]->Type, Shape,
                    SharedRows ? MemScope::Shared : MemScope::Register);
}

Stmt ChainMapper::version(Mode M, const std::vector<std::string> &Totals, unsigned Line) {
  Kept.Map.clear();
  std::vector<Stmt> Out;
  std::vector<bool> Filled(Staged.size(), false);
  for (size_t I = 0; I < Phases.size(); ++I) {
    const RowPhase &P = Phases[I];
    switch (P.Kind) {
    case RowPhaseKind::Row:
      Out.push_back(byOwner(P.Row));
      break;
    case RowPhaseKind::Reduction: {
      // Held rows gain nothing from one sweep (measured a little slower).
      std::vector<size_t> Members = M == Mode::Cached ? std::vector<size_t>{I} : sweepGroup(I);
      Out.push_back(reduce(M, Members, Totals, Filled));
      I = Members.back();
      break;
    }
    case RowPhaseKind::Element:
      Out.push_back(elementwise(M, P, Filled));
      break;
    }
  }
  Kept.Map.clear();
  Stmt Body = block(std::move(Out), Line);
  if (M == Mode::Cached)
    for (size_t I = Phases.size(); I-- > 0;)
      if (!KeepName[I].empty())
        Body = allocate(tempBuffer(KeepName[I], Phases[I].Term->Type, {intImm(Runs), intImm(Width)},
                                   MemScope::Register),
                        Body, Line);
  if (M == Mode::Cached && !SharedRows) // else around the warps (build)
    for (size_t K = Staged.size(); K-- > 0;)
      if (Cached[K] && !byElement(K))
        Body = allocate(heldBuffer(K), Body, Line);
  return Body;
}

Stmt ChainMapper::versions(const std::vector<std::string> &Totals, bool WarpEach, unsigned Line) {
  Stmt Body = version(Mode::Scalar, Totals, Line);
  if (!Width)
    return Body;
  bool Holds = llvm::is_contained(Cached, true);
  // The peeled launch holds what it peels; the main one's groups of lanes
  // leave such rows to it.
  if (WarpEach && PeeledHeld)
    return PeelCond && !(Block == WarpSize && byElementWide())
               ? ifThen(PeelCond, peeled(Mode::Cached, Totals, Line), Body, Line)
               : Body;
  if (PeelCond && !(WarpEach && PeeledWhen))
    Body = ifThen(PeelCond, peeled(HeldPeelOnly ? Mode::Cached : Mode::Wide, Totals, Line), Body,
                  Line);
  if (HeldPeelOnly)
    return Body;
  if (!WideCond)
    return Body;
  if (WarpEach)
    return ifThen(WideCond, version(Holds ? Mode::Cached : Mode::Wide, Totals, Line), Body, Line);
  // A held launch runs only on rows it holds (rewriteNest), where
  // CachedCond is WideCond: no re-read version, whose registers ptxas
  // would count (it spilled softmax's held kernels).
  if (!Held)
    Body = ifThen(WideCond, version(Mode::Wide, Totals, Line), Body, Line);
  if (CachedCond)
    Body = ifThen(CachedCond, version(Mode::Cached, Totals, Line), Body, Line);
  return Body;
}

Stmt ChainMapper::build(unsigned Line, const LoopRun &Run) {
  int64_t Warps = Block / WarpSize;
  std::vector<std::string> Totals(Phases.size());
  std::vector<Buffer> Shared;
  for (size_t I = 0; I < Phases.size(); ++I)
    if (Phases[I].Kind == RowPhaseKind::Reduction && PerBlock && Warps > 1) {
      const Buffer &A = Phases[I].Acc->Buf;
      Totals[I] = Names.fresh(A.Name + "_warps");
      Shared.push_back(tempBuffer(Totals[I], A.Type, {intImm(Warps)}, MemScope::Shared));
      Shared.back().ExtentNames = {"warps"};
    }
  for (size_t K = 0; SharedRows && K < Staged.size(); ++K)
    if (Cached[K])
      Shared.push_back(heldBuffer(K));
  Expr Rows = flatExtent(Run.Loops);
  auto Hold = [&](Stmt Body) {
    for (auto It = Nest.Held.rbegin(); It != Nest.Held.rend(); ++It)
      Body = allocate((*It)->Buf, Body, (*It)->SrcLine);
    return Body;
  };
  // 1. A block per row: thread tid = warp * 32 + lane of row `row`.
  Stmt Body;
  Expr Grid;
  if (PerBlock) {
    Body = Hold(versions(Totals, false, Line));
    Body = letStmt(Tid, add(mul(var(Warp), intImm(WarpSize)), lane()), Body, Line);
    Body = bindFlatIndex(Run.Loops, var(Row), Body);
    Grid = Rows;
  }
  // 2. Groups of G lanes per row, widest first so that the narrowest
  //    test comes first: lane tid = lane % G of row rw = row * (8 * 32 /
  //    G) + warp * (32 / G) + lane / G. No barrier: a warp's rows past
  //    the end skip the body when a row is a warp; with several rows a
  //    warp, their lanes compute on the last row and store nothing.
  for (auto It = LaneGroups.rbegin(); It != LaneGroups.rend(); ++It) {
    int64_t G = *It, PerWarpRows = WarpSize / G;
    int64_t Saved = Block;
    Block = G;
    Expr Exists = lt(var(RowOfWarp), Rows);
    Guard = G < WarpSize ? Exists : nullptr;
    Stmt ByGroup = Hold(versions(Totals, true, Line));
    Block = Saved;
    ByGroup = letStmt(Tid, G < WarpSize ? imod(lane(), intImm(G)) : lane(), ByGroup, Line);
    if (Guard) {
      ByGroup = bindFlatIndex(Run.Loops, var(RowOfRange), ByGroup);
      ByGroup = letStmt(RowOfRange, binary(BinaryOp::Min, var(RowOfWarp), sub(Rows, intImm(1))),
                        ByGroup, Line);
    } else {
      ByGroup = ifThen(Exists, bindFlatIndex(Run.Loops, var(RowOfWarp), ByGroup), nullptr, Line);
    }
    Guard = nullptr;
    Expr First = add(mul(var(Row), intImm(ReduceRowsPerBlock * PerWarpRows)),
                     PerWarpRows > 1 ? mul(var(Warp), intImm(PerWarpRows)) : var(Warp));
    if (PerWarpRows > 1)
      First = add(First, idiv(lane(), intImm(G)));
    ByGroup = letStmt(RowOfWarp, First, ByGroup, Line);
    Expr Blocks = ceilDiv(Rows, ReduceRowsPerBlock * PerWarpRows);
    if (Body) {
      Expr Fits = le(Cols, intImm(G * RowChainCacheElements));
      if (Expr Sizes = G == 16 ? runSizes() : nullptr)
        Fits = land(Fits, Sizes);
      Body = ifThen(Fits, ByGroup, Body, Line);
      Grid = select(Fits, Blocks, Grid);
    } else {
      Body = ByGroup;
      Grid = Blocks;
    }
  }
  int64_t WarpsPerBlock = PerBlock ? Warps : ReduceRowsPerBlock;
  Body = forLoop(Warp, intImm(0), intImm(WarpsPerBlock), ForKind::Warp,
                 forLoop(Lane, intImm(0), intImm(WarpSize), ForKind::Lane, Body, Line), Line);
  for (auto It = Shared.rbegin(); It != Shared.rend(); ++It)
    Body = allocate(*It, Body, Line);

  // 3. The note and the remark (RowChainNote.cpp).
  const std::string What = describe(Line, Warps);
  // One launch runs at any sizes: the others' grids are empty where this
  // one's is not.
  Expr Own = Long ? LongWhen : PeeledHeld ? PeeledWhen : nullptr;
  for (const auto &[B, When] : HeldPeelOnly ? HeldPeelRanges : HeldRanges)
    if (Held == B)
      Own = When;
  Expr Others;
  for (const Expr &When : {HeldWhen, PeeledWhen, LongWhen})
    if (When)
      Others = Others ? binary(BinaryOp::Or, Others, When) : When;
  if (Own)
    Grid = gridWhen(Grid, Own, true);
  else if (Others)
    Grid = gridWhen(Grid, Others, false);
  return forLoop(Row, intImm(0), Grid, ForKind::BlockX,
                 block({note(What, Line), Body}, Line), Line);
}

} // namespace rowchain

void rowChain(ir::Func &F) {
  rowchain::ChainMapper M(F);
  launchNestVariants(F, ir::LaunchClass::RowReduction,
                     [&](const ir::Stmt &S, std::vector<ir::Knob> &Knobs) {
                       std::vector<LaunchVariant> Body = M.rewriteNest(S);
                       // Kept terms live across the quotients that read them, where
                       // CUDA's '/' may call a subroutine, and they would spill
                       // there: the launch divides inline (tdsl_fdiv).
                       if (!Body.empty() && M.keptTerms())
                         chooseKnob(F, Knobs, "fdiv", {}, "inline", "row-chain");
                       return Body;
                     });
}

} // namespace tdsl
