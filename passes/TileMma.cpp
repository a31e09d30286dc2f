//===- TileMma.cpp - Contractions on tensor cores: mma.sync, ldmatrix -----===//
#include "passes/TileMma.h"
#include "ir/Fragment.h"
#include "ir/Simplify.h"
#include "passes/ContractionSplitK.h"
#include "passes/MmaEpilogue.h"
#include "passes/MmaEpilogueValues.h"
#include "passes/MmaKLoop.h"
#include "passes/MmaLineReads.h"
#include "passes/MmaMatch.h"
#include "passes/MmaStaging.h"
#include "passes/MmaTiler.h"

#include <algorithm>
#include <string>

namespace tdsl {

using namespace ir;

namespace mma {

Stmt MmaTiler::tile(const Stmt &Nest) {
  if (!schedule(Nest))
    return Nest;

  // On sm_90 the bulk tensor copy engine fills the stages where it can,
  // in the version for aligned tensors (passes/MmaKLoop.h); the guarded
  // version keeps schedule GS and tiles of its own.
  GS = S;
  // A batched nest takes it in its launch for long k loops only: at k =
  // 64 (attention's shapes) the engine's fixed cost per block measured
  // slower than cp.async on the H200 (bench/RESULTS.md). The split
  // launch's blocks keep cp.async, and so do the small launch's where its
  // tiles are few (MmaSmallEngineTiles) or batched.
  if (Split || (Small && !N.Batch.empty())) {
    NoEngine = "the launch of small blocks keeps cp.async";
  } else if (!N.Batch.empty() && !LongK) {
    NoEngine = "a batched launch for short k loops keeps cp.async";
  } else {
    MmaSchedule E = S;
    NoEngine = MmaKLoop::engineSchedule(F, M, E);
    if (NoEngine.empty() && Small && !SmallEngine)
      NoEngine = "the launch of small blocks keeps cp.async where the sizes give fewer than " +
                 std::to_string(MmaSmallEngineTiles) + " of its tiles, or fewer rows than one";
    else if (NoEngine.empty())
      S = E;
  }
  Engine = NoEngine.empty();
  auto TileBytes = [&] { return std::max(mmaTileBytes(M, S), mmaTileBytes(M, GS)); };

  // Names: the launch's variables, then each side's tile and fragments.
  BZ = Names.fresh("bz");
  PID = Names.fresh("pid");
  TM = Names.fresh("tm");
  TN = Names.fresh("tn");
  TX = Names.fresh("tx");
  Lane = Names.fresh("lane");
  Warp = Names.fresh("warp");
  KT = Names.fresh("kt");
  int64_t WarpsN = S.BlockN / S.WarpN;
  for (MmaOperandStage &O : Sides) {
    const std::string &Buf = static_cast<const LoadNode &>(*O.Op->Load).Buffer;
    O.Tile = Names.fresh(Buf + "_tile");
    O.Frag = Names.fresh(Buf + "_frag");
    O.layout(F, S, Engine);
    O.BlockOffset = mul(var(O.IsA ? TM : TN), c(O.BX));
    O.WarpIndex = O.IsA ? idiv(var(Warp), c(WarpsN)) : imod(var(Warp), c(WarpsN));
    O.WarpOffset = mul(O.WarpIndex, c(O.WX));
  }
  // The engine runs only in the version for aligned tensors: with none,
  // the tiles keep the bank model's layout.
  if (Engine && !std::all_of(Sides.begin(), Sides.end(),
                             [](const MmaOperandStage &O) { return bool(O.Aligned); })) {
    Engine = false;
    NoEngine = "an operand is never 16-byte aligned in rows";
    S = GS;
    for (MmaOperandStage &O : Sides)
      O.layout(F, S, false);
  }
  // The guarded version's operands: their own tiles, in its schedule (the
  // sides' operands stay M's).
  MmaContraction MG;
  MG.N = M.N;
  MG.Sides = M.Sides;
  MG.Products = M.Products;
  MG.Shape = M.Shape;
  MG.FragType = M.FragType;
  if (Engine)
    for (MmaOperandStage &O : MG.Sides) {
      O.Tile = Names.fresh(O.tensor() + "_tile");
      O.layout(F, GS, false);
    }
  // B's bytes in pairs interleave the accumulators' columns: the epilogue
  // reads them one way, so every B side of both versions takes them so, or
  // none does.
  auto AllPaired = [](const std::vector<MmaOperandStage> &Ss) {
    return std::all_of(Ss.begin(), Ss.end(),
                       [](const MmaOperandStage &O) { return O.IsA || O.BytePairs; });
  };
  const bool Paired = AllPaired(Sides) && AllPaired(MG.Sides);
  if (!Paired) {
    for (MmaOperandStage &O : Sides)
      if (O.BytePairs)
        O.layout(F, S, Engine, false);
    for (MmaOperandStage &O : MG.Sides)
      if (O.BytePairs)
        O.layout(F, GS, false, false);
  }

  // 7. The accumulators start as the nest's init; then the k loop.
  std::vector<Stmt> Body;
  std::string I = Names.fresh("i"), J = Names.fresh("j"), E = Names.fresh("e");
  // Each lane's part of the warp's mma tiles (ir/Fragment.h).
  const MmaFragmentSizes Frag = mmaFragmentSizes(Shape);
  // A split's blocks add their products from zero; the second launch
  // starts from the init.
  Stmt Init = withAccumulatorsAt(N, N.Init, {var(I), var(J), var(E)});
  if (Split) {
    std::vector<Stmt> Zeros;
    for (const ContractionAcc &A : N.Accs)
      Zeros.push_back(store(A.Name, {var(I), var(J), var(E)}, zeroOf(A.Type), Line));
    Init = block(std::move(Zeros), Line);
  }
  Body.push_back(unrolled(I, S.WarpM / 16,
                          unrolled(J, S.WarpN / 8, unrolled(E, Frag.C, Init, Line), Line), Line));
  Expr Tiles = kTiles(N, S.TileK), GTiles = kTiles(N, GS.TileK);
  // A split's block walks its own run of k tiles.
  SplitV = KP = KF = KN = "";
  Expr KFirst; // the block's first k tile (null: 0)
  if (Split) {
    std::optional<int64_t> Always = asConstInt(SplitWhen);
    SplitK.emplace(N, S.BlockM, S.BlockN, S.TileK, Always ? nullptr : SplitWhen, Names);
    SplitV = Names.fresh("split");
    KP = Names.fresh("kper");
    KF = Names.fresh("kfirst");
    KN = Names.fresh("ktiles");
    KFirst = var(KF);
    Tiles = GTiles = var(KN);
  }
  // Two versions of the loop, chosen once per launch: 16-byte async copies
  // where both operands' rows are whole 16-byte chunks and the tensors
  // 16-byte aligned, guarded element copies otherwise. Each version keeps
  // only its own addresses in registers.
  // Every operand's alignment test, or none when one has none.
  Expr AllAligned = Sides[0].Aligned;
  for (size_t I = 1; I < Sides.size() && AllAligned; ++I)
    AllAligned = Sides[I].Aligned ? land(AllAligned, Sides[I].Aligned) : nullptr;
  // The engine's tensor maps also need every dimension of its tensors.
  std::vector<Expr> Dims;
  for (size_t I = 0; I < Sides.size() && Engine; ++I)
    for (const Expr &D : F.findParam(Sides[I].tensor())->Shape)
      if (!std::any_of(Dims.begin(), Dims.end(), [&](const Expr &E) { return structurallyEqual(E, D); }))
        Dims.push_back(D);
  for (const Expr &D : Dims)
    AllAligned = land(AllAligned, lt(c(0), D));
  if (Engine)
    AllAligned = simplifyExpr(AllAligned);
  const bool HasWide = S.Stages >= 2 && AllAligned;
  MmaKLoop KLoop(Names, S, M, TX, Lane, KT, KFirst, Line);
  MmaKLoop GLoop(Names, GS, MG, TX, Lane, KT, KFirst, Line);
  MmaKLoop &General = Engine ? GLoop : KLoop;
  // Each side's tiles around L (the engine's version and the guarded one
  // have their own; otherwise both share one set, around the launch).
  auto WithTiles = [&](const std::vector<MmaOperandStage> &Ss, int64_t Stages, Stmt L) {
    for (auto It = Ss.rbegin(); It != Ss.rend(); ++It) {
      Stmt Inner = It->SwzNote.empty() ? L : block({note(It->SwzNote, Line), L});
      L = allocate(It->tileBuffer(Stages), Inner, Line);
    }
    return L;
  };
  Stmt Loop;
  std::string Full, Freed;
  if (HasWide) {
    // One after another: the order of the fresh names is fixed.
    Stmt Wide;
    if (Engine) {
      Full = Names.fresh("full");
      Freed = Names.fresh("freed");
      Wide = WithTiles(Sides, S.Stages, KLoop.buildEngine(Tiles, Full, Freed));
    } else {
      Wide = KLoop.build(Tiles, true);
    }
    Stmt Guarded = General.build(GTiles, false);
    Loop = ifThen(AllAligned, Wide, Engine ? WithTiles(MG.Sides, GS.Stages, Guarded) : Guarded,
                  Line);
  } else {
    Loop = KLoop.build(Tiles, false);
  }
  Body.push_back(Loop);

  // 8. The epilogue per accumulator element (c_e: row g + 8 (e >> 1),
  //    column 2 t + (e & 1)), for the outputs inside the tensor: stored
  //    from the fragments, or to shared tiles copied out after.
  MmaEpilogue Staging(F, N, S);
  // A plain product's merged rows: its outputs' own index is the merged
  // one's quotients (their addresses fold; a nest keeps [batch..., m, n]).
  if (Merge.Nest && Merge.Folds)
    Staging.OwnIndex = Merge.Index;
  // The large block's eight warps of accumulators hold an SM alone, so
  // its output tiles may take all the shared memory; other blocks leave
  // room for two.
  const bool Staged = !Split && Staging.plan(Names, TileBytes(), LargeBlock ? 1 : 2);
  const MmaOperandStage &ColSide = Sides[Products[0].B];
  Stmt Epilogue;
  {
    Stmt Out = withAccumulatorsAt(N, N.Epilogue, {var(I), var(J), var(E)});
    // Reads along one side of the outputs (bias[n]): once per column or
    // row a lane holds (passes/MmaLineReads.h).
    std::optional<MmaLineReads> Lines;
    if (!Split && Frag.C == 4) {
      Lines.emplace(F, N, Out, S.WarpM / 16, S.WarpN / 8, Names);
      Out = Lines->rewrite(Out, var(I), var(J), var(E));
    }
    auto [Row, Col] = fragmentPosExpr(Shape, MmaOperand::C, var(Lane), var(E));
    Expr InM = add(mul(var(I), c(16)), Row), InN = ColSide.tileColumn(var(J), Col);
    Expr GM = add(add(Sides[0].BlockOffset, Sides[0].WarpOffset), InM);
    Expr GN = add(add(ColSide.BlockOffset, ColSide.WarpOffset), InN);
    if (Staged)
      Out = Staging.toTiles(Out, add(Sides[0].WarpOffset, InM), add(ColSide.WarpOffset, InN));
    // The values first, then the stores (passes/MmaEpilogueValues.h).
    std::optional<MmaEpilogueValues> Values;
    if (!Split)
      Values = splitEpilogueValues(F, N, Out, {var(I), var(J), var(E)});
    if (Values)
      Out = Values->Stores;
    auto InLets = [&](Stmt Body) {
      return letStmt(N.Row->Var, fromMin(N.Row->Min, GM),
                     letStmt(N.Col->Var, fromMin(N.Col->Min, GN), Body, Line), Line);
    };
    auto PerElement = [&](Stmt Body) {
      return unrolled(I, S.WarpM / 16,
                      unrolled(J, S.WarpN / 8, unrolled(E, Frag.C, Body, Line), Line), Line);
    };
    Stmt St = Split ? SplitK->storePartials(var(SplitV), var(BZ), GM, GN,
                                            {var(I), var(J), var(E)}, Line)
                    : InLets(Out);
    // Stores to the shared tiles of values in registers need no test.
    const bool Unguarded = Staged && Staging.tilesOnly(St);
    Epilogue = PerElement(Unguarded ? St
                                    : ifThen(land(lt(GM, N.Row->Extent), lt(GN, N.Col->Extent)),
                                             St, nullptr, Line));
    if (Unguarded)
      Epilogue = block({note("[tile-mma] every element a lane holds goes to the output tiles with "
                             "no bounds test (a branch each): the copies to the tensors test them",
                             Line),
                        Epilogue},
                       Line);
    Stmt ValuesFirst;
    if (Values)
      ValuesFirst = block({note("[tile-mma] the epilogue's values are computed for every element a "
                                "lane holds, into its accumulators, before any is stored: with no "
                                "bounds test (a branch) between them their instructions "
                                "interleave",
                                Line),
                           PerElement(InLets(Values->Values))},
                          Line);
    if (Staged)
      Epilogue = Staging.build(Names, ValuesFirst, Epilogue, TX, Sides[0].BlockOffset,
                               ColSide.BlockOffset, Line);
    else if (ValuesFirst)
      Epilogue = prepended(ValuesFirst, Epilogue, Line);
    if (Lines && !Lines->empty())
      Epilogue = Lines->wrap(Epilogue, GM, GN, I, J, E, Line);
  }

  // 9. Storage: the accumulator fragments, each side's fragments and tile.
  //    Staged outputs take the operand tiles' bytes: their scopes are
  //    siblings inside the accumulators'.
  auto Accumulators = [&](Stmt L) {
    for (auto It = N.Accs.rbegin(); It != N.Accs.rend(); ++It)
      L = allocate(tempBuffer(It->Name, It->Type, {c(S.WarpM / 16), c(S.WarpN / 8), c(Frag.C)},
                              MemScope::Fragment),
                   L, Line);
    return L;
  };
  if (!Staged && !Split && S.StageEpilogue != false)
    Body.push_back(note("[tile-mma] the outputs are stored from the fragments: " + Staging.why(),
                        Line));
  if (!Staged)
    Body.push_back(Epilogue);
  Stmt Launch = Staged ? block(std::move(Body)) : Accumulators(block(std::move(Body)));
  bool WideTwice = HasWide && (Engine || KLoop.pipelined(true)),
       GeneralTwice = General.pipelined(false);
  Expr Bufs = c(WideTwice || GeneralTwice ? 2 : 1);
  for (auto It = Sides.rbegin(); It != Sides.rend(); ++It)
    Launch = allocate(
        It->IsA
            ? tempBuffer(It->Frag, FragType, {Bufs, c(S.WarpM / 16), c(Frag.A)}, MemScope::Fragment)
            : tempBuffer(It->Frag, FragType, {Bufs, c(S.WarpN / 8), c(Frag.B)}, MemScope::Fragment),
        Launch, Line);
  if (!Engine)
    Launch = WithTiles(Sides, S.Stages, Launch);
  if (Staged)
    Launch = Accumulators(block({Launch, Epilogue}));
  // The engine's mbarriers, outside every scope whose bytes the staged
  // outputs reuse: an mbarrier's word is no other data while it lives.
  if (!Full.empty())
    for (const std::string &Bar : {Freed, Full})
      Launch = allocate(tempBuffer(Bar, DType::I64, {c(S.Stages)}, MemScope::Shared), Launch, Line);

  return place(Launch, WideTwice, GeneralTwice);
}

} // namespace mma

void tileMma(Func &F) {
  mma::MmaTiler T(F);
  launchNestVariants(F, LaunchClass::Contraction, [&](const Stmt &S, std::vector<Knob> &Knobs) {
    return T.variants(S, Knobs);
  });
}

} // namespace tdsl
