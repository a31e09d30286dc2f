//===- TileMma.cpp - Contractions on tensor cores: mma.sync, ldmatrix -----===//
#include "passes/TileMma.h"
#include "ir/Fragment.h"
#include "ir/Printer.h"
#include "ir/Simplify.h"
#include "passes/MmaEpilogue.h"
#include "passes/MmaEpilogueValues.h"
#include "passes/MmaKLoop.h"
#include "passes/MmaLineReads.h"
#include "passes/MmaMatch.h"
#include "passes/MmaSplitK.h"
#include "passes/MmaStaging.h"

#include <algorithm>
#include <string>

namespace tdsl {

using namespace ir;

namespace {

constexpr const char *PassName = "tile-mma";

Expr c(int64_t V) { return intImm(V); }

class MmaTiler {
public:
  explicit MmaTiler(Func &F) : F(F), Names(F) {}
  std::vector<LaunchVariant> variants(const Stmt &Nest, std::vector<Knob> &Knobs);

private:
  Func &F;
  NameTable Names;
  MmaSchedule S;
  MmaContraction M; ///< what matchMma found, and these views of it:
  ContractionNest &N = M.N;
  std::vector<MmaOperandStage> &Sides = M.Sides;
  std::vector<MmaContraction::Product> &Products = M.Products;
  MmaShape &Shape = M.Shape;
  DType &FragType = M.FragType;
  std::string BZ, PID, TM, TN, TX, Lane, Warp, KT;
  unsigned Line = 0;
  /// The variant being built: Small for the launch of few output tiles,
  /// and Few, the test on sizes under which that one runs (null: no
  /// second launch, tile's own grid unguarded); Split for the launch that
  /// splits the k loop, and SplitWhen, its test (null: never); Wide and
  /// Large for the launches of a batched nest's long k loops and of many
  /// output tiles, with their tests (null: no such launch); Wave for the
  /// launch of one wave of output tiles, and WaveWhen.
  bool Small = false, Split = false, Wide = false, Large = false, Wave = false;
  Expr Few, SplitWhen, WideWhen, LargeWhen, WaveWhen;
  /// The split being built: its partials and second launch.
  std::optional<MmaSplitK> SplitK;

  Stmt tile(const Stmt &Nest);
  /// The small and split launches' tiles: MmaSmallBlock blocks of warps
  /// at most MmaSmallWarp, then narrowed for siblings as fitWarpTile does.
  void fitSmall(MmaSchedule &Sm) const;

  bool decline(const Stmt &Nest, const std::string &Why) {
    return declineMma(PassName, S.Mode == TensorCores::On, Nest, Why);
  }
};

/// The default launch and, where the sizes may give fewer output tiles
/// than MmaFewTiles (skinny products, small batches), a second launch of
/// MmaSmallBlock tiles for those sizes: with few tiles most SMs would sit
/// idle. Where even those tiles are few and the k loop long, a third
/// launch splits each tile's k loop over blocks, and a fourth adds their
/// partials (passes/MmaSplitK.h). Where they may give many tiles of
/// MmaLargeBlock (a plain product of 16-bit operands), a launch of those
/// blocks; where a batched nest's k loop and columns are long, one of
/// 64x64 warps; where they give one wave of tiles, one of twice the warps
/// (MmaOneWaveTiles). Each launch's grid is empty for the others' sizes. Not
/// when the block or warp tile is pinned; only the launches that can run
/// when the sizes are constants.
std::vector<LaunchVariant> MmaTiler::variants(const Stmt &Nest, std::vector<Knob> &) {
  Small = Split = Wide = Large = Wave = false;
  Few = SplitWhen = WideWhen = LargeWhen = WaveWhen = nullptr;
  Stmt Main = tile(Nest);
  if (Main == Nest)
    return {};
  if (!Few)
    return {{"", Main}};
  std::optional<int64_t> FewKnown = asConstInt(Few);
  std::vector<LaunchVariant> Out;
  if (!FewKnown || !*FewKnown) {
    Out.push_back({"", Main});
    if (WideWhen) {
      Wide = true;
      Stmt W = tile(Nest);
      Wide = false;
      Out.push_back({"wide", W});
    }
    if (LargeWhen) {
      Large = true;
      Stmt L = tile(Nest);
      Large = false;
      // Main's grid leaves these sizes to it: if it cannot be built (its
      // tiles were checked to fit), the nest goes to the passes after.
      if (L == Nest)
        return {};
      Out.push_back({"large", L});
    }
    if (WaveWhen) {
      Wave = true;
      Stmt V = tile(Nest);
      Wave = false;
      if (V == Nest)
        return {};
      Out.push_back({"wave", V});
    }
  }
  if (FewKnown && !*FewKnown)
    return Out;
  std::optional<int64_t> SplitKnown = SplitWhen ? asConstInt(SplitWhen) : std::optional<int64_t>(0);
  if (!SplitKnown || !*SplitKnown) {
    Small = true;
    Stmt Second = tile(Nest);
    Small = false;
    if (Second == Nest)
      return {{"", Main}};
    // Always few and never split: the small launch alone, unguarded.
    Out.push_back({FewKnown && SplitKnown ? "" : "small", Second});
  }
  if (!SplitKnown || *SplitKnown) {
    Split = true;
    Stmt Third = tile(Nest);
    Split = false;
    if (Third == Nest)
      return {{"", Main}};
    Out.push_back({"split", Third, SplitK->partials()});
    Out.push_back({"split_sum", SplitK->sum(Names, Line)});
    SplitK.reset();
  }
  return Out;
}

void MmaTiler::fitSmall(MmaSchedule &Sm) const {
  Sm.BlockM = MmaSmallBlock[0];
  Sm.BlockN = MmaSmallBlock[1];
  Sm.WarpM = std::min(Sm.WarpM, MmaSmallWarp[0]);
  Sm.WarpN = std::min(Sm.WarpN, MmaSmallWarp[1]);
  fitWarpTile(F, M, Sm, false);
}

Stmt MmaTiler::tile(const Stmt &Nest) {
  S = mmaSchedule(F, 2);
  if (S.Mode == TensorCores::Off || !matchMma(Nest, PassName, S.Mode == TensorCores::On, M))
    return Nest; // tensor_cores = off: asked for, so no remark
  // The k tile's default and its limits depend on the element size.
  S = mmaSchedule(F, dtypeBytes(Sides[0].Op->Type));
  Line = Nest->SrcLine;
  if (F.MinSM < 80) {
    decline(Nest, "mma.sync needs sm_80 or newer (the oldest --arch is sm_" +
                      std::to_string(F.MinSM) + ")");
    return Nest;
  }
  if (!S.Unusable.empty()) {
    decline(Nest, "the pinned schedule: " + S.Unusable);
    return Nest;
  }

  // Pinned tiles, or few_tiles = off: the one launch.
  const bool OneLaunch = findKnob(F, "block_tile") || findKnob(F, "warp_tile") || !S.FewTiles;
  // A split has fewer output tiles than SMs: their order does not matter.
  if (Split)
    S.Grouped = false;
  // A batched nest's warps: 64x64 where the k loop and the columns are
  // long, else 64x32; where the sizes are open, both launches.
  bool LongK = Wide;
  if (!Small && !Split && !Wide && !OneLaunch && !N.Batch.empty()) {
    Expr W = simplifyExpr(land(le(c(MmaLongK), N.Red->Extent), le(c(MmaLongCols), N.Col->Extent)));
    if (std::optional<int64_t> Known = asConstInt(W))
      LongK = *Known;
    else
      WideWhen = W;
  }
  // A plain product of 16-bit operands with many output tiles: the large
  // block; where the sizes are open, in a launch of its own. tf32 and i8
  // products ran slower with it on the H200 (bench/RESULTS.md).
  // Its shared tiles must fit at the schedule's stages (stages or k_tile
  // pinned may pass the target where the default block's do not).
  MmaSchedule AtLarge = S;
  AtLarge.BlockM = MmaLargeBlock[0];
  AtLarge.BlockN = MmaLargeBlock[1];
  bool LargeBlock = Large;
  if (!Small && !Split && !Large && !Wave && !OneLaunch && N.Batch.empty() && N.Accs.size() == 1 &&
      dtypeBytes(Sides[0].Op->Type) == 2 &&
      mmaTileBytes(M, AtLarge) <= F.MaxSharedBytes) {
    Expr L = simplifyExpr(le(c(MmaLargeTiles), mul(ceilDiv(N.Row->Extent, MmaLargeBlock[0]),
                                                   ceilDiv(N.Col->Extent, MmaLargeBlock[1]))));
    if (std::optional<int64_t> Known = asConstInt(L))
      LargeBlock = *Known;
    else
      LargeWhen = L;
  }
  if (LargeBlock) {
    S.BlockM = MmaLargeBlock[0];
    S.BlockN = MmaLargeBlock[1];
  }
  if (Small || Split)
    fitSmall(S);
  else
    fitWarpTile(F, M, S, LongK);
  // One wave of the default block's tiles (MmaOneWaveTiles): a plain
  // product of 16-bit operands whose block has four warps takes eight of
  // half the columns; where the sizes are open, in a launch of its own.
  bool WaveBlock = Wave;
  if (!Small && !Split && !Wave && !LargeBlock && !OneLaunch && N.Batch.empty() &&
      N.Accs.size() == 1 && dtypeBytes(Sides[0].Op->Type) == 2 && S.threads() == 128 &&
      S.WarpN >= 32) {
    Expr Count = mul(ceilDiv(N.Row->Extent, S.BlockM), ceilDiv(N.Col->Extent, S.BlockN));
    Expr W = simplifyExpr(land(le(c(MmaFewTiles), Count), le(Count, c(MmaOneWaveTiles))));
    if (std::optional<int64_t> Known = asConstInt(W))
      WaveBlock = *Known;
    else
      WaveWhen = W;
  }
  if (WaveBlock)
    S.WarpN /= 2;
  // The shared tiles must fit the target (siblings stage more than two):
  // fewer stages unless pinned, else the nest is left to the passes after.
  while (mmaTileBytes(M, S) > F.MaxSharedBytes && S.Stages > 2 && !findKnob(F, "stages"))
    --S.Stages;
  if (mmaTileBytes(M, S) > F.MaxSharedBytes) {
    decline(Nest, "the shared tiles of its " + std::to_string(Sides.size()) + " operands need " +
                      std::to_string(mmaTileBytes(M, S)) + " bytes (" + std::to_string(S.Stages) +
                      " stages); the target allows " + std::to_string(F.MaxSharedBytes));
    return Nest;
  }
  // On sm_90 the bulk tensor copy engine fills the stages where it can,
  // in the version for aligned tensors (passes/MmaKLoop.h); the guarded
  // version keeps schedule GS and tiles of its own.
  const MmaSchedule GS = S;
  // A batched nest takes it in its launch for long k loops only: at k =
  // 64 (attention's shapes) the engine's fixed cost per block measured
  // slower than cp.async on the H200 (bench/RESULTS.md).
  std::string NoEngine =
      !N.Batch.empty() && !LongK && !Small && !Split
          ? "a batched launch for short k loops keeps cp.async"
          : MmaKLoop::engineSchedule(F, M, Small || Split, S);
  bool Engine = NoEngine.empty();
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
  Expr Tiles = ceilDiv(N.Red->Extent, S.TileK), GTiles = ceilDiv(N.Red->Extent, GS.TileK);
  // A split's block walks its own run of k tiles.
  std::string SplitV, KP, KF, KN;
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
    Expr InM = add(mul(var(I), c(16)), Row), InN = add(mul(var(J), c(8)), Col);
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

  // 10. Coordinates: lane and warp; the output tile (tm, tn) of block pid
  //    (bindTileOrder); the batch.
  Launch =
      letStmt(Lane, imod(var(TX), c(32)), letStmt(Warp, idiv(var(TX), c(32)), Launch, Line), Line);
  Expr RowsT = ceilDiv(N.Row->Extent, S.BlockM), ColsT = ceilDiv(N.Col->Extent, S.BlockN);
  Launch = bindTileOrder(Names, S.Grouped, RowsT, ColsT, PID, TM, TN, Launch, Line);
  // A split's run of k tiles, computed before any accumulator is live.
  if (Split)
    Launch = letStmt(KP, SplitK->tilesPerSplit(),
                     letStmt(KF, mul(var(SplitV), var(KP)),
                             letStmt(KN, SplitK->tilesFrom(var(KF), var(KP)), Launch, Line), Line),
                     Line);
  Launch = bindFlatIndex(N.Batch, var(BZ), Launch);
  // (Engine implies HasWide: its stages and every side's alignment test.)
  std::string Note = mmaLaunchNote(M, S, WideTwice, GeneralTwice, Engine);
  if (Engine)
    Note += "; the guarded copies' own tiles: k tile " + std::to_string(GS.TileK) + ", " +
            std::to_string(GS.Stages) + " stages";
  // Unless asked for (copy_engine = off), why the engine does not run.
  if (F.MinSM >= 90 && S.CopyEngine && !Engine)
    Note += "; cp.async, not the copy engine: " + NoEngine;
  // The grid: every output tile, or none where another launch runs.
  Expr Grid = mul(RowsT, ColsT);
  auto Open = [](const Expr &When) { return asConstInt(When) ? nullptr : When; };
  if (Split) {
    Grid = gridWhen(Grid, Open(SplitWhen), true);
    Note += "; the k loop split over " + toString(SplitK->count()) +
            " blocks per output tile (block.y), each adding its run of k tiles from zero into " +
            "partials that the next launch adds";
    remark(PassName, Line,
           "where the sizes give fewer than " + std::to_string(MmaSplitMaxTiles) +
               " output tiles of " + std::to_string(S.BlockM) + "x" + std::to_string(S.BlockN) +
               " and " + std::to_string(2 * MmaSplitMinKTiles) +
               " k tiles or more, and the partials cost little beside the operands, the k loop " +
               "split over blocks: a launch of partials, then a launch that adds them");
  } else if (Small) {
    Grid = gridWhen(gridWhen(Grid, Open(Few), true), SplitWhen ? Open(SplitWhen) : nullptr,
                    false);
    Note += "; the launch for sizes of fewer than " + std::to_string(MmaFewTiles) +
            " output tiles of the default block, so that more SMs have one";
    remark(PassName, Line,
           "where the sizes give fewer than " + std::to_string(MmaFewTiles) +
               " output tiles, a second launch: block tile " + std::to_string(S.BlockM) + "x" +
               std::to_string(S.BlockN) + ", warp tile " + std::to_string(S.WarpM) + "x" +
               std::to_string(S.WarpN) + ", " + std::to_string(S.Stages) + " stages");
  } else {
    if (Large)
      Grid = gridWhen(Grid, LargeWhen, true);
    if (!OneLaunch && !Large) {
      Expr Tiles = N.Batch.empty() ? Grid : mul(Grid, flatExtent(N.Batch));
      Few = simplifyExpr(lt(Tiles, c(MmaFewTiles)));
      if (!asConstInt(Few))
        Grid = gridWhen(Grid, Few, false);
      Grid = gridWhen(Grid, WideWhen, Wide);
      Grid = gridWhen(Grid, LargeWhen, false);
      Grid = gridWhen(Grid, WaveWhen, Wave);
      // The split's test counts the split launch's own blocks.
      if (S.SplitK) {
        MmaSchedule Sm = mmaSchedule(F, dtypeBytes(Sides[0].Op->Type));
        fitSmall(Sm);
        SplitWhen = MmaSplitK::when(N, Sm.BlockM, Sm.BlockN, Sm.TileK);
      }
    }
    std::string Tiles = "block tile " + std::to_string(S.BlockM) + "x" +
                        std::to_string(S.BlockN) + ", warp tile " + std::to_string(S.WarpM) +
                        "x" + std::to_string(S.WarpN) + ", k tile " + std::to_string(S.TileK) +
                        ", " + std::to_string(S.Stages) + " stages";
    if (LargeBlock)
      Note += "; the large block: the sizes give " + std::to_string(MmaLargeTiles) +
              " output tiles of it or more, which fill the SMs several times";
    if (WaveBlock)
      Note += "; twice the warps: the sizes give " + std::to_string(MmaFewTiles) + " to " +
              std::to_string(MmaOneWaveTiles) +
              " output tiles, one block an SM at most, and four warps would leave each " +
              "scheduler one";
    if (Large) {
      remark(PassName, Line,
             "where the sizes give " + std::to_string(MmaLargeTiles) + " output tiles of " +
                 std::to_string(MmaLargeBlock[0]) + "x" + std::to_string(MmaLargeBlock[1]) +
                 " or more, a launch of larger blocks: " + Tiles);
    } else if (Wave) {
      remark(PassName, Line,
             "where the sizes give " + std::to_string(MmaFewTiles) + " to " +
                 std::to_string(MmaOneWaveTiles) + " output tiles, one block an SM, a launch " +
                 "of twice the warps: " + Tiles);
    } else if (Wide) {
      Note += "; the launch for k of " + std::to_string(MmaLongK) + " or more and " +
              std::to_string(MmaLongCols) + " columns or more, whose long k loop four warps hide";
      remark(PassName, Line,
             "where k is " + std::to_string(MmaLongK) + " or more and the columns " +
                 std::to_string(MmaLongCols) + " or more, a launch of larger warps: " + Tiles);
    } else {
      remark(PassName, Line, "took it: tensor cores, " + Tiles);
    }
  }

  // 11. The GPU loops: threads, block.x over the output tiles, block.z over
  //     the flattened batch loops.
  // The index arithmetic as built has "+ 0" and "0 * 16" of the unrolled
  // k steps: folded here, so the IR after this pass reads as it runs.
  Launch = simplifyStmt(block({note(Note, Line), Launch}));
  Launch = forLoop(TX, c(0), c(S.threads()), ForKind::ThreadX, Launch, Line);
  Launch = forLoop(PID, c(0), Grid, ForKind::BlockX, Launch, Line);
  if (Split)
    Launch = forLoop(SplitV, c(0), SplitK->count(), ForKind::BlockY, Launch, Line);
  if (!N.Batch.empty())
    Launch = forLoop(BZ, c(0), flatExtent(N.Batch), ForKind::BlockZ, Launch, Line);
  return Launch;
}

} // namespace

void tileMma(Func &F) {
  MmaTiler T(F);
  launchNestVariants(F, LaunchClass::Contraction, [&](const Stmt &S, std::vector<Knob> &Knobs) {
    return T.variants(S, Knobs);
  });
}

} // namespace tdsl
