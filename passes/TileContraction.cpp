//===- TileContraction.cpp - Block, thread and register tiles for GEMMs ---===//
#include "passes/TileContraction.h"
#include "passes/ContractionTiler.h"

#include "llvm/ADT/STLExtras.h"

namespace tdsl {

using namespace ir;

namespace contraction {

bool Tiler::match(const Stmt &Nest) {
  std::optional<ContractionNest> C =
      matchContraction(Nest, "tile-contraction", /*ExplainAll=*/false, /*Nests=*/true);
  if (!C)
    return false;
  // Output loops one side alone reads become one index (mergeSideLoops):
  // a convolution's n, h and w its columns, so few and small images fill
  // the tiles; a linear layer's b and s its rows, so short sequences do.
  Merge.update(F, Nest, *C, Names);
  if (Merge.Nest)
    C = matchContraction(Merge.Nest, nullptr, /*ExplainAll=*/false, /*Nests=*/true);
  if (!C)
    return false;
  if (std::string Why = vectorProduct(*C, F, /*Columns=*/true); !Why.empty()) {
    remark("tile-contraction", Nest->SrcLine, Why + "; left to reduce-rows");
    return false;
  }
  Contraction = std::move(*C);
  Batch = Contraction.Batch;
  RowLoop = Contraction.Row;
  ColLoop = Contraction.Col;
  RedLoop = Contraction.Red;
  Ops.clear();
  for (const ContractionOperand &M : Contraction.Operands) {
    CoreOperandStage O;
    O.Load = M.Load;
    O.Type = M.Type;
    O.RowSide = M.RowSide;
    O.KFastest = M.KFastest;
    O.XLoop = M.RowSide ? RowLoop : ColLoop;
    O.Red = RedLoop;
    O.Merged = Merge.divides(O.XLoop);
    Ops.push_back(std::move(O));
  }
  return true;
}

/// Steps k values of the staged tiles: each operand's registers from
/// shared memory, then every output of the thread updated. Full: Steps
/// is the constant BK (unrolled later); otherwise the partial last tile.
Stmt Tiler::computeStep(Expr KBase, Expr Steps, bool Full, unsigned Line) {
  std::string KK = Names.fresh(Full ? "kk" : "kr");
  std::vector<Stmt> Step;
  int64_t VW = S.VectorWidth;
  for (const CoreOperandStage &O : Ops) {
    // Groups of VW consecutive values, so vectorize can make each group
    // one wide shared-memory read.
    int64_t N = O.RowSide ? S.ThreadM : S.ThreadN;
    std::string G = Names.fresh(O.RowSide ? "ig" : "jg"), V = Names.fresh(O.RowSide ? "iv" : "jv");
    Expr I = add(mul(var(G), c(VW)), var(V));
    Stmt Read = store(O.Regs, {I},
                      load(O.Type, O.Tile, tileIndex(var(KK), outputOffset(O.RowSide, var(G), var(V)))),
                      Line);
    Step.push_back(forLoop(G, c(0), c(N / VW), ForKind::Serial,
                           forLoop(V, c(0), c(VW), ForKind::Serial, Read, Line), Line));
  }
  std::string I = Names.fresh("i"), J = Names.fresh("j");
  // Each accumulator's update (one, or one per sibling), its operands
  // read from the registers just filled.
  std::vector<Stmt> Updates;
  std::vector<Expr> Values;
  for (const ContractionAcc &A : Contraction.Accs) {
    AccReplacer R;
    R.Acc = A.Name;
    R.AccIndices = {var(I), var(J)};
    for (const CoreOperandStage &O : Ops)
      R.Map.push_back({O.Load, load(O.Type, O.Regs, {var(O.RowSide ? I : J)})});
    Values.push_back(R.mutate(A.Update));
    Updates.push_back(store(A.Name, {var(I), var(J)}, Values.back(), A.Line));
  }
  Stmt Upd = block(std::move(Updates));
  auto Uses = [&](const std::string &V) {
    return llvm::any_of(Values, [&](const Expr &X) { return usesAnyVar(X, {V}); });
  };
  // Output and reduction indices the update still uses directly.
  if (llvm::any_of(Contraction.Outer, [&](const ForNode *L) { return Uses(L->Var); }))
    Upd = atTile(var(KT), Upd);
  if (Uses(RedLoop->Var))
    Upd = letStmt(RedLoop->Var, fromMin(RedLoop->Min, add(KBase, var(KK))), Upd, Line);
  if (Uses(ColLoop->Var))
    Upd = letStmt(ColLoop->Var,
                  fromMin(ColLoop->Min, add(blockOffset(false), outputOffset(false, var(J)))), Upd,
                  Line);
  if (Uses(RowLoop->Var))
    Upd = letStmt(RowLoop->Var,
                  fromMin(RowLoop->Min, add(blockOffset(true), outputOffset(true, var(I)))), Upd,
                  Line);
  Step.push_back(forLoop(I, c(0), c(S.ThreadM), ForKind::Serial,
                         forLoop(J, c(0), c(S.ThreadN), ForKind::Serial, Upd, Line), Line));
  return forLoop(KK, c(0), Steps, ForKind::Serial, block(std::move(Step)), Line);
}

Stmt Tiler::tile(const Stmt &Nest, std::vector<Knob> &Knobs) {
  Chosen = &Knobs;
  // 1. Match: the batch, row and column loops, the accumulator, its init,
  //    the reduction loop and the operands; anything else is declined with
  //    a remark (match) and stays for map-to-gpu.
  if (!match(Nest))
    return Nest;
  // 2. The schedule (ContractionLaunch.cpp).
  unsigned Line = Nest->SrcLine;
  if (!schedule(Line))
    return Nest;

  // 3. Names: the launch's variables once per function (sibling launches
  //    have disjoint scopes, so each reads the same names), then per operand
  //    its copy runs, shared tile, register fragment and prefetch registers.
  if (BX.empty()) {
    BZ = Names.fresh("bz");
    BY = Names.fresh("by");
    BX = Names.fresh("bx");
    TX = Names.fresh("tx");
    TR = Names.fresh("tr");
    TC = Names.fresh("tc");
    KT = Names.fresh("kt");
  }
  if (Split) {
    SplitK.emplace(Contraction, S.BlockM, S.BlockN, S.TileK, RunWhen, Names, blockScale());
    SP = Names.fresh("split");
    BF = Names.fresh("bb");
    KP = Names.fresh("kper");
    KF = Names.fresh("kfirst");
    KN = Names.fresh("ktiles");
  }
  for (CoreOperandStage &O : Ops) {
    const std::string &Buf = static_cast<const LoadNode &>(*O.Load).Buffer;
    O.chooseRun(F, S);
    O.BlockOffset = blockOffset(O.RowSide);
    O.Tile = Names.fresh(Buf + "_tile");
    O.Regs = Names.fresh(Buf + "_reg");
    O.Next = Names.fresh(Buf + "_next");
  }

  // 4. Initialization of the thread's TM x TN accumulators: the nest's
  //    init, or zeros in a split's blocks (its second launch starts from
  //    the init).
  std::vector<Stmt> Body;
  std::string I = Names.fresh("i"), J = Names.fresh("j");
  {
    Stmt Init = withAccumulatorsAt(Contraction, Contraction.Init, {var(I), var(J)});
    if (Split) {
      std::vector<Stmt> Zeros;
      for (const ContractionAcc &A : Contraction.Accs)
        Zeros.push_back(store(A.Name, {var(I), var(J)}, zeroOf(A.Type), Line));
      Init = block(std::move(Zeros), Line);
    }
    Body.push_back(forLoop(I, c(0), c(S.ThreadM), ForKind::Serial,
                           forLoop(J, c(0), c(S.ThreadN), ForKind::Serial, Init, Line), Line));
  }

  // 5. The loop over k tiles. Each operand's tile is copied by all threads
  //    together, consecutive threads on consecutive global addresses (k
  //    fastest when the operand's last index is k, its row or column
  //    otherwise), zeros outside the tensor. Full tiles run a step loop of
  //    constant trip count (unrolled later), the last partial tile a
  //    guarded one. Three forms, by the schedule:
  //    - stages = 2: tile kt+1 is loaded into registers during tile kt's
  //      FMAs and stored into the other shared buffer: one barrier a tile;
  //    - prefetch alone: the same registers, one shared buffer, so a
  //      barrier before and after the tile's FMAs;
  //    - neither: copy, barrier, FMAs, barrier.
  //    A split's block walks its own run of k tiles, KN from KF (kt
  //    counts from KF, so the loop keeps one bound live, not KF and KN).
  //    A reduction over a nest (a convolution's c, r, s) walks one
  //    index over every k tile of every combination of the Outer loops
  //    (kBase, atTile), so each form above spans them unchanged.
  Expr KExt = RedLoop->Extent;
  Expr First = Split ? var(KF) : c(0);
  Expr Tiles = Split ? var(KN) : kTiles(Contraction, S.TileK);
  Expr KBase = kBase(var(KT));
  Expr KStart = Split ? kBase(First) : c(0);
  Expr KNext = Contraction.Outer.empty() ? add(KBase, c(S.TileK)) : kBase(add(var(KT), c(1)));
  std::vector<Stmt> Loop;
  auto Compute = [&]() {
    // One after another: the order of the fresh names is fixed.
    Stmt Partial = computeStep(KBase, sub(KExt, KBase), /*Full=*/false, Line);
    Stmt Full = computeStep(KBase, c(S.TileK), /*Full=*/true, Line);
    return ifThen(le(add(KBase, c(S.TileK)), KExt), Full, Partial, Line);
  };
  // Tile: the k tile Base starts, for the Outer loops' indices.
  auto CopyAll = [&](Expr Base, Expr Tile, bool ToRegs) {
    std::vector<Stmt> Out;
    for (const CoreOperandStage &O : Ops)
      Out.push_back(O.copy(Names, S, TX, Base, S.Stages == 2 ? Stage : nullptr, ToRegs, Line));
    return atTile(Tile, block(std::move(Out)));
  };
  auto StoreAll = [&]() {
    std::vector<Stmt> Out;
    for (const CoreOperandStage &O : Ops)
      Out.push_back(O.storeNext(Names, S, TX, S.Stages == 2 ? Stage : nullptr, Line));
    return block(std::move(Out));
  };
  Expr HasNext = lt(add(var(KT), c(1)), Split ? add(First, Tiles) : Tiles);
  if (S.Stages == 2) {
    // Two shared buffers: tile kt+1 is stored into one while tile kt is
    // read from the other, so one barrier per k tile suffices.
    Stage = Split ? imod(First, c(2)) : c(0);
    Body.push_back(CopyAll(KStart, First, /*ToRegs=*/true));
    Body.push_back(StoreAll());
    Body.push_back(barrier(Line));
    Stage = imod(var(KT), c(2));
    Loop.push_back(ifThen(HasNext, CopyAll(KNext, add(var(KT), c(1)), true), nullptr, Line));
    Loop.push_back(Compute());
    Stage = imod(add(var(KT), c(1)), c(2));
    Loop.push_back(ifThen(HasNext, StoreAll(), nullptr, Line));
    Loop.push_back(barrier(Line));
  } else if (S.Prefetch) {
    Body.push_back(CopyAll(KStart, First, /*ToRegs=*/true));
    Loop.push_back(StoreAll());
    Loop.push_back(barrier(Line));
    Loop.push_back(ifThen(HasNext, CopyAll(KNext, add(var(KT), c(1)), true), nullptr, Line));
    Loop.push_back(Compute());
    Loop.push_back(barrier(Line));
  } else {
    Loop.push_back(CopyAll(KBase, var(KT), /*ToRegs=*/false));
    Loop.push_back(barrier(Line));
    Loop.push_back(Compute());
    Loop.push_back(barrier(Line));
  }
  Body.push_back(forLoop(KT, First, Tiles, ForKind::Serial, block(Loop), Line));

  // 6. The epilogue, for the outputs inside the tensor: those beyond M or N
  //    were computed from zeros and are never stored. A split's blocks
  //    store their sums to the partials instead.
  {
    Stmt Out = withAccumulatorsAt(Contraction, Contraction.Epilogue, {var(I), var(J)});
    Expr GM = add(blockOffset(true), outputOffset(true, var(I)));
    Expr GN = add(blockOffset(false), outputOffset(false, var(J)));
    Stmt St = Split ? SplitK->storePartials(var(SP), var(BF), GM, GN, {var(I), var(J)}, Line)
                    : letStmt(RowLoop->Var, fromMin(RowLoop->Min, GM),
                              letStmt(ColLoop->Var, fromMin(ColLoop->Min, GN), Out, Line), Line);
    St = ifThen(land(lt(GM, RowLoop->Extent), lt(GN, ColLoop->Extent)), St, nullptr, Line);
    Body.push_back(forLoop(I, c(0), c(S.ThreadM), ForKind::Serial,
                           forLoop(J, c(0), c(S.ThreadN), ForKind::Serial, St, Line), Line));
  }

  // 7. Storage: the accumulators, each operand's tile, fragment and
  //    prefetch registers.
  Stmt Launch = block(std::move(Body));
  const MemScope Reg = MemScope::Register;
  for (auto It = Ops.rbegin(); It != Ops.rend(); ++It) {
    const CoreOperandStage &O = *It;
    if (S.Prefetch)
      Launch = allocate(tempBuffer(O.Next, O.Type, {c(O.copiesPerThread(S))}, Reg), Launch, Line);
    Launch = allocate(tempBuffer(O.Regs, O.Type, {c(O.RowSide ? S.ThreadM : S.ThreadN)}, Reg),
                      Launch, Line);
  }
  for (auto It = Contraction.Accs.rbegin(); It != Contraction.Accs.rend(); ++It)
    Launch = allocate(tempBuffer(It->Name, It->Type, {c(S.ThreadM), c(S.ThreadN)}, Reg), Launch,
                      Line);
  for (auto It = Ops.rbegin(); It != Ops.rend(); ++It) {
    std::vector<Expr> Shape = {c(S.TileK), c(It->RowSide ? S.BlockM : S.BlockN)};
    Buffer Tile = tempBuffer(It->Tile, It->Type, Shape, MemScope::Shared);
    Tile.ExtentNames = {"tile_k", It->RowSide ? "block_m" : "block_n"};
    if (S.Stages == 2) {
      Tile.Shape.insert(Tile.Shape.begin(), c(2));
      Tile.ExtentNames.insert(Tile.ExtentNames.begin(), "stages");
    }
    Launch = allocate(Tile, Launch, Line);
  }

  // 8. The launch around it: thread coordinates, the note, the GPU loops
  //    (ContractionLaunch.cpp).
  return launch(std::move(Launch), Line);
}

} // namespace contraction

void tileContraction(Func &F) {
  contraction::Tiler T(F);
  launchNestVariants(F, LaunchClass::Contraction,
                     [&](const Stmt &S, std::vector<Knob> &) { return T.variants(S); });
}

} // namespace tdsl
