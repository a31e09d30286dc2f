//===- MmaLaunch.cpp - tile-mma's launches: variants, schedule, grid ----===//
//
// Which launches a contraction gets (the default, small, split, wide,
// large and one-wave ones), each one's schedule, and the launch around
// the body passes/TileMma.cpp builds. See passes/TileMma.h.
//
//===----------------------------------------------------------------------===//
#include "ir/Printer.h"
#include "ir/Simplify.h"
#include "passes/MmaStaging.h"
#include "passes/MmaTiler.h"
#include "passes/TileMma.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace tdsl::mma {

/// The default launch and, where the sizes may give fewer output tiles
/// than MmaFewTiles (skinny products, small batches) or at most
/// MmaShortRows rows (a decoder's tokens), a second launch of
/// MmaSmallBlock tiles for those sizes: with few tiles most SMs would sit
/// idle. On sm_90 that launch is two: by cp.async, and where its tiles
/// fill the SMs twice or more and the rows fill a tile, by the copy engine
/// (MmaSmallEngineTiles).
/// Where even those tiles are few and the k loop long, a third
/// launch splits each tile's k loop over blocks, and a fourth adds their
/// partials (passes/ContractionSplitK.h). Where they may give many tiles of
/// MmaLargeBlock and a long k loop (a plain product of 16-bit operands;
/// MmaLargeMinK), a launch of those blocks; where a batched nest's k loop and columns are long, one
/// of 64x64 warps; where they give one wave of tiles, one of twice the warps (MmaOneWaveTiles), and
/// up to one and a half, one of half blocks (MmaHalfTiles). Each launch's grid is empty for the
/// others' sizes. Not when the block or warp tile is pinned; only the launches that can run when
/// the sizes are constants.
std::vector<LaunchVariant> MmaTiler::variants(const Stmt &Nest, std::vector<Knob> &) {
  Small = Split = Wide = Large = Wave = Half = SmallEngine = false;
  Few = SplitWhen = WideWhen = LargeWhen = WaveWhen = HalfWhen = SmallEngineWhen = nullptr;
  const NameTable Start = Names;
  Stmt Main = tile(Nest);
  if (Main == Nest)
    return {};
  if (!Few)
    return {{"", Main}};
  // The launch tile() builds with Flag set.
  auto Built = [&](bool &Flag) {
    Flag = true;
    Stmt V = tile(Nest);
    Flag = false;
    return V;
  };
  std::optional<int64_t> FewKnown = asConstInt(Few);
  // Always few: the launches below are the nest's only ones, and take
  // the names the default one did.
  if (FewKnown && *FewKnown)
    Names = Start;
  std::vector<LaunchVariant> Out;
  if (!FewKnown || !*FewKnown) {
    Out.push_back({"", Main});
    if (WideWhen)
      Out.push_back({"wide", Built(Wide)});
    // Main's grid leaves these sizes to them: if one cannot be built (its
    // tiles were checked to fit), the nest goes to the passes after.
    for (auto [When, Flag, Suffix] :
         {std::tuple(LargeWhen, &Large, "large"), std::tuple(WaveWhen, &Wave, "wave"),
          std::tuple(HalfWhen, &Half, "half")}) {
      if (!When)
        continue;
      Stmt V = Built(*Flag);
      if (V == Nest)
        return {};
      Out.push_back({Suffix, V});
    }
  }
  if (FewKnown && !*FewKnown)
    return Out;
  std::optional<int64_t> SplitKnown = SplitWhen ? asConstInt(SplitWhen) : std::optional<int64_t>(0);
  if (!SplitKnown || !*SplitKnown) {
    // On sm_90, where its tiles fill the SMs twice or more, the small
    // launch by the copy engine (MmaSmallEngineTiles). It is built first:
    // if its engine is refused, it is dropped with the names it took, and
    // the launch by cp.async takes all the sizes as it would alone.
    std::optional<LaunchVariant> ByEngine;
    bool EngineAlways = false;
    if (N.Batch.empty() && F.MinSM >= 90) {
      MmaSchedule Sm = smallSchedule();
      // And rows that fill a tile: where the engine's boxes of A passed
      // the last row (M under 64: a decoder's tokens) it measured slower
      // (bench/RESULTS.md).
      Expr When = simplifyExpr(
          land(le(c(MmaSmallEngineTiles),
                  mul(ceilDiv(N.Row->Extent, Sm.BlockM), ceilDiv(N.Col->Extent, Sm.BlockN))),
               le(c(Sm.BlockM), N.Row->Extent)));
      std::optional<int64_t> Known = asConstInt(When);
      if (!Known || *Known) {
        const NameTable Before = Names;
        EngineAlways = Known.has_value();
        SmallEngineWhen = Known ? nullptr : When;
        SmallEngine = true;
        Stmt V = Built(Small);
        SmallEngine = false;
        if (V != Nest && Engine) {
          ByEngine = LaunchVariant{"small_engine", V};
          // Unless pinned: without a minimum ptxas gave its kernels spills.
          chooseKnob(F, ByEngine->Knobs, "min_blocks", {MmaSmallMinBlocks}, "", PassName);
        } else {
          Names = Before;
          SmallEngineWhen = nullptr;
          EngineAlways = false;
        }
      }
    }
    if (!EngineAlways) {
      Stmt Second = Built(Small);
      if (Second == Nest)
        return {{"", Main}};
      Out.push_back({FewKnown && SplitKnown && !ByEngine ? "" : "small", Second});
      oneBlockForNests(Out.back());
    }
    if (ByEngine) {
      // Always few, never split, always the engine's: alone, unguarded.
      if (FewKnown && SplitKnown && EngineAlways)
        ByEngine->Suffix = "";
      Out.push_back(*ByEngine);
    }
  }
  if (!SplitKnown || *SplitKnown) {
    Stmt Third = Built(Split);
    if (Third == Nest)
      return {{"", Main}};
    Out.push_back({"split", Third, SplitK->partials()});
    oneBlockForNests(Out.back());
    Out.push_back({"split_sum", SplitK->sum(Names, PassName, Line)});
    SplitK.reset();
  }
  return Out;
}

MmaSchedule MmaTiler::smallSchedule() const {
  MmaSchedule Sm = mmaSchedule(F, dtypeBytes(Sides[0].Op->Type));
  fitSmall(Sm);
  return Sm;
}

void MmaTiler::fitSmall(MmaSchedule &Sm) const {
  Sm.BlockM = MmaSmallBlock[0];
  Sm.BlockN = MmaSmallBlock[1];
  Sm.WarpM = std::min(Sm.WarpM, MmaSmallWarp[0]);
  Sm.WarpN = std::min(Sm.WarpN, MmaSmallWarp[1]);
  fitWarpTile(F, M, Sm, false);
}

void MmaTiler::oneBlockForNests(LaunchVariant &V) const {
  // Unless pinned. A nest's small blocks keep its copies' addresses
  // beside the accumulators; under its own bound for 128 threads ptxas
  // spilled, with the whole register file allowed, not.
  if (!N.Outer.empty())
    chooseKnob(F, V.Knobs, "min_blocks", {1}, "", PassName);
}

bool MmaTiler::schedule(const Stmt &Nest) {
  S = mmaSchedule(F, 2);
  bool On = S.Mode == TensorCores::On;
  if (S.Mode == TensorCores::Off || !matchMma(F, Nest, PassName, On, M))
    return false; // tensor_cores = off: asked for, so no remark
  // Output loops one side alone reads become one index, as on CUDA cores
  // (passes/TileContraction.cpp): a convolution's n, h and w its columns,
  // a linear layer's b and s its rows.
  Merge.update(F, Nest, N, Names);
  if (Merge.Nest) {
    if (!matchMma(F, Merge.Nest, PassName, On, M))
      return false;
    for (MmaOperandStage &O : Sides) {
      O.Merged = Merge.divides(O.XLoop);
      O.Joined = Merge.merges(O.XLoop) && Merge.Folds;
      O.FlatK = !Merge.Reduced.empty();
    }
  }
  // The k tile's default and its limits depend on the element size.
  S = mmaSchedule(F, dtypeBytes(Sides[0].Op->Type));
  Line = Nest->SrcLine;
  if (F.MinSM < 80) {
    decline(Nest, "mma.sync needs sm_80 or newer (the oldest --arch is sm_" +
                      std::to_string(F.MinSM) + ")");
    return false;
  }
  if (!S.Unusable.empty()) {
    decline(Nest, "the pinned schedule: " + S.Unusable);
    return false;
  }

  // Pinned tiles, or few_tiles = off: the one launch.
  OneLaunch = findKnob(F, "block_tile") || findKnob(F, "warp_tile") || !S.FewTiles;
  // A split has fewer output tiles than SMs: their order does not matter.
  if (Split)
    S.Grouped = false;
  // A batched nest's warps: 64x64 where the k loop and the columns are
  // long, else 64x32; where the sizes are open, both launches.
  LongK = Wide;
  if (!Small && !Split && !Wide && !OneLaunch && !N.Batch.empty()) {
    Expr W =
        simplifyExpr(land(le(c(MmaLongK), reducedLength(N)), le(c(MmaLongCols), N.Col->Extent)));
    if (std::optional<int64_t> Known = asConstInt(W))
      LongK = *Known;
    else
      WideWhen = W;
  }
  // A plain product of 16-bit operands with many output tiles and a long
  // k loop: the large block; where the sizes are open, in a launch of its
  // own. tf32 and i8 products ran slower with it on the H200, and so did
  // k loops under MmaLargeMinK (bench/RESULTS.md). Not a reduction over
  // a nest: its 64x32 warps (fitWarpTile) would make the block 16 warps,
  // held to 128 registers a thread, and ptxas spilled.
  // Its shared tiles must fit at the schedule's stages (stages or k_tile
  // pinned may pass the target where the default block's do not).
  MmaSchedule AtLarge = S;
  AtLarge.BlockM = MmaLargeBlock[0];
  AtLarge.BlockN = MmaLargeBlock[1];
  LargeBlock = Large;
  if (!Small && !Split && !Large && !Wave && !Half && !OneLaunch && N.Batch.empty() &&
      N.Outer.empty() && N.Accs.size() == 1 && dtypeBytes(Sides[0].Op->Type) == 2 &&
      mmaTileBytes(M, AtLarge) <= F.MaxSharedBytes) {
    Expr L = simplifyExpr(land(le(c(MmaLargeTiles), mul(ceilDiv(N.Row->Extent, MmaLargeBlock[0]),
                                                        ceilDiv(N.Col->Extent, MmaLargeBlock[1]))),
                               le(c(MmaLargeMinK), reducedLength(N))));
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
  // One wave of the default block's tiles (MmaOneWaveTiles), or up to
  // one and a half (MmaHalfTiles): a plain product of 16-bit operands
  // whose block has four warps takes eight of half the columns, or half
  // blocks; where the sizes are open, each in a launch of its own.
  WaveBlock = Wave;
  HalfBlock = Half;
  if (!Small && !Split && !Wave && !Half && !LargeBlock && !OneLaunch && N.Batch.empty() &&
      N.Accs.size() == 1 && dtypeBytes(Sides[0].Op->Type) == 2 && S.threads() == 128 &&
      S.BlockN == 128 && S.WarpN == 64) {
    Expr Count = mul(ceilDiv(N.Row->Extent, S.BlockM), ceilDiv(N.Col->Extent, S.BlockN));
    auto Between = [&](int64_t Lo, int64_t Hi, bool &Block, Expr &When) {
      Expr W = simplifyExpr(land(le(c(Lo), Count), le(Count, c(Hi))));
      if (std::optional<int64_t> Known = asConstInt(W))
        Block = *Known;
      else
        When = W;
    };
    Between(MmaFewTiles, MmaOneWaveTiles, WaveBlock, WaveWhen);
    Between(MmaOneWaveTiles + 1, MmaHalfTiles, HalfBlock, HalfWhen);
  }
  if (WaveBlock)
    S.WarpN /= 2;
  if (HalfBlock) {
    S.BlockM = MmaHalfBlock[0];
    S.BlockN = MmaHalfBlock[1];
    S.WarpN = S.BlockN / 2;
  }
  // The shared tiles must fit the target (siblings stage more than two):
  // fewer stages unless pinned, else the nest is left to the passes after.
  while (mmaTileBytes(M, S) > F.MaxSharedBytes && S.Stages > 2 && !findKnob(F, "stages"))
    --S.Stages;
  if (mmaTileBytes(M, S) > F.MaxSharedBytes) {
    decline(Nest, "the shared tiles of its " + std::to_string(Sides.size()) + " operands need " +
                      std::to_string(mmaTileBytes(M, S)) + " bytes (" + std::to_string(S.Stages) +
                      " stages); the target allows " + std::to_string(F.MaxSharedBytes));
    return false;
  }
  return true;
}

Stmt MmaTiler::place(Stmt Launch, bool WideTwice, bool GeneralTwice) {
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
  std::string Note =
      mmaLaunchNote(M, S, WideTwice, GeneralTwice, Engine) + nestNote(N, Merge, "mmas");
  for (const MmaOperandStage &O : Sides)
    if (O.Merged && !O.Op->KFastest)
      Note += "; " + static_cast<const LoadNode &>(*O.Op->Load).Buffer +
              "'s element copies take a run of k rows of one column each, so each copy's "
              "quotients and remainders are one set";
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
    remark(PassName, Line, ContractionSplitK::why(S.BlockM, S.BlockN, /*ComputeBound=*/false));
  } else if (Small) {
    // The split's sizes give fewer small tiles than the engine's launch
    // takes: that launch needs no test of them.
    static_assert(SplitKMaxTiles <= MmaSmallEngineTiles);
    Grid = gridWhen(gridWhen(Grid, Open(Few), true),
                    SplitWhen && !SmallEngine ? Open(SplitWhen) : nullptr, false);
    Grid = gridWhen(Grid, SmallEngineWhen, SmallEngine);
    Note += "; the launch for sizes of fewer than " + std::to_string(MmaFewTiles) +
            " output tiles of the default block, so that more SMs have one, or of at most " +
            std::to_string(MmaShortRows) + " rows, which would leave its rows half empty";
    std::string Tiles = "block tile " + std::to_string(S.BlockM) + "x" +
                        std::to_string(S.BlockN) + ", warp tile " + std::to_string(S.WarpM) +
                        "x" + std::to_string(S.WarpN) + ", " + std::to_string(S.Stages) +
                        " stages";
    std::string FewSizes = "where the sizes give fewer than " + std::to_string(MmaFewTiles) +
                           " output tiles or at most " + std::to_string(MmaShortRows) + " rows";
    if (SmallEngine && Engine) {
      Note += ", of " + std::to_string(MmaSmallEngineTiles) + " of its tiles or more, and " +
              std::to_string(S.BlockM) + " rows or more";
      if (!findKnob(F, "min_blocks"))
        Note += ": " + std::to_string(MmaSmallMinBlocks) + " blocks an SM asked of ptxas";
      remark(PassName, Line,
             FewSizes + ", and " + std::to_string(MmaSmallEngineTiles) +
                 " small tiles or more and " + std::to_string(S.BlockM) +
                 " rows or more, a launch of small blocks filled by the copy engine: " +
                 Tiles);
    } else if (!SmallEngine) {
      // (A build whose engine is refused is dropped: no remark.)
      remark(PassName, Line, FewSizes + ", a second launch: " + Tiles);
    }
  } else {
    // Few rows are few at any count of tiles.
    Expr Short = simplifyExpr(le(N.Row->Extent, c(MmaShortRows)));
    if (Large)
      Grid = gridWhen(gridWhen(Grid, LargeWhen, true), Open(Short), false);
    if (!OneLaunch && !Large) {
      // The default launch's tiles decide which sizes are few (the
      // launches built after it read Few and SplitWhen); the split's test
      // counts the split launch's own blocks.
      if (!Wide && !Wave && !Half) {
        Expr Tiles = N.Batch.empty() ? Grid : mul(Grid, flatExtent(N.Batch));
        Few = simplifyExpr(binary(BinaryOp::Or, lt(Tiles, c(MmaFewTiles)), Short));
        if (S.SplitK) {
          MmaSchedule Sm = smallSchedule();
          SplitWhen = ContractionSplitK::when(N, Sm.BlockM, Sm.BlockN, Sm.TileK);
        }
      }
      if (!asConstInt(Few))
        Grid = gridWhen(Grid, Few, false);
      Grid = gridWhen(Grid, WideWhen, Wide);
      Grid = gridWhen(Grid, LargeWhen, false);
      Grid = gridWhen(Grid, WaveWhen, Wave);
      Grid = gridWhen(Grid, HalfWhen, Half);
    }
    std::string Tiles = "block tile " + std::to_string(S.BlockM) + "x" +
                        std::to_string(S.BlockN) + ", warp tile " + std::to_string(S.WarpM) +
                        "x" + std::to_string(S.WarpN) + ", k tile " + std::to_string(S.TileK) +
                        ", " + std::to_string(S.Stages) + " stages";
    if (LargeBlock)
      Note += "; the large block: the sizes give " + std::to_string(MmaLargeTiles) +
              " output tiles of it or more, which fill the SMs several times, and k of " +
              std::to_string(MmaLargeMinK) + " or more, whose copies it saves";
    if (WaveBlock)
      Note += "; twice the warps: the sizes give " + std::to_string(MmaFewTiles) + " to " +
              std::to_string(MmaOneWaveTiles) +
              " output tiles, one block an SM at most, and four warps would leave each " +
              "scheduler one";
    if (HalfBlock)
      Note += "; half blocks: the sizes give " + std::to_string(MmaOneWaveTiles + 1) + " to " +
              std::to_string(MmaHalfTiles) + " output tiles of the default block, some SMs " +
              "two, and of the halves no SM runs more than three";
    if (Large) {
      remark(PassName, Line,
             "where the sizes give " + std::to_string(MmaLargeTiles) + " output tiles of " +
                 std::to_string(MmaLargeBlock[0]) + "x" + std::to_string(MmaLargeBlock[1]) +
                 " or more and k of " + std::to_string(MmaLargeMinK) +
                 " or more, a launch of larger blocks: " + Tiles);
    } else if (Wave) {
      remark(PassName, Line,
             "where the sizes give " + std::to_string(MmaFewTiles) + " to " +
                 std::to_string(MmaOneWaveTiles) + " output tiles, one block an SM, a launch " +
                 "of twice the warps: " + Tiles);
    } else if (Half) {
      remark(PassName, Line,
             "where the sizes give " + std::to_string(MmaOneWaveTiles + 1) + " to " +
                 std::to_string(MmaHalfTiles) + " output tiles, a launch of half blocks: " + Tiles);
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

} // namespace tdsl::mma
