//===- ContractionLaunch.cpp - tile-contraction's launches and grids ------===//
//
// Which launches a contraction gets (the tiled one, the split's two, and
// those again over short rows' or few columns' tiles), each one's
// schedule, and the launch around the body TileContraction.cpp builds.
// See passes/TileContraction.h.
//
//===----------------------------------------------------------------------===//
#include "ir/Printer.h"
#include "passes/ContractionTiler.h"

namespace tdsl::contraction {

std::vector<LaunchVariant> Tiler::variants(const Stmt &Nest) {
  if (!match(Nest))
    return {};
  // Short rows, where the tiles are not pinned and few_tiles is not off:
  // their own launches where the rows may be at most ShortRows, the only
  // ones where they always are; else, where the columns are a constant of
  // at most ShortRows, those of short columns alone.
  const Knob *Few = findKnob(F, "few_tiles");
  bool Narrowed =
      !(Few && Few->Word == "off") && !findKnob(F, "block_tile") && !findKnob(F, "thread_tile");
  Expr ShortWhen = Narrowed ? simplifyExpr(le(RowLoop->Extent, c(ShortRows))) : nullptr;
  std::optional<int64_t> Known = ShortWhen ? asConstInt(ShortWhen) : std::nullopt;
  bool RowsAlways = Known && *Known, RowsOpen = ShortWhen && !Known;
  std::optional<int64_t> Cols = asConstInt(ColLoop->Extent);
  bool ColsOnly = Narrowed && !RowsAlways && Cols && *Cols <= ShortRows;
  Expr TallWhen = simplifyExpr(lt(c(ShortRows), RowLoop->Extent));
  std::vector<LaunchVariant> Out;
  // The tiled launch of Side's tiles and, where the sizes may give few
  // tiles and a long k loop, the split's two.
  auto Build = [&](Narrow Side, const std::string &Prefix) {
    Short = Side;
    RowsWhen = !RowsOpen || ColsOnly ? nullptr : Side == Narrow::Rows ? ShortWhen : TallWhen;
    Split = false;
    SplitWhen = nullptr;
    std::vector<Knob> Knobs;
    Stmt Main = tile(Nest, Knobs);
    if (Main == Nest)
      return false;
    // Sizes that always split need no tiled launch.
    if (!SplitWhen || !asConstInt(SplitWhen))
      Out.push_back({Prefix, Main, {}, Knobs});
    if (SplitWhen) {
      std::vector<Knob> SplitKnobs;
      Split = true;
      Stmt Parts = tile(Nest, SplitKnobs);
      Split = false;
      std::string Sep = Prefix.empty() ? "" : "_";
      Out.push_back({Prefix + Sep + "split", Parts, SplitK->partials(), SplitKnobs});
      Out.push_back(
          {Prefix + Sep + "split_sum", SplitK->sum(Names, "tile-contraction", Nest->SrcLine)});
      SplitK.reset();
    }
    return true;
  };
  bool Built;
  if (ColsOnly)
    Built = Build(Narrow::Cols, "");
  else {
    Built = RowsAlways || Build(Narrow::None, "");
    if (Built && (RowsOpen || RowsAlways))
      Built = Build(Narrow::Rows, RowsAlways ? "" : "short");
  }
  Short = Narrow::None;
  RowsWhen = nullptr;
  // Main's grid leaves short rows to the short launch: without it the
  // nest goes to the passes after.
  return Built ? Out : std::vector<LaunchVariant>{};
}

bool Tiler::schedule(unsigned Line) {
  // The defaults with the pinned knobs, the shared tiles sized for the
  // widest operand (contractionSchedule falls back to the defaults where
  // the pinned values cannot run).
  int64_t Bytes = 1;
  for (const CoreOperandStage &O : Ops)
    Bytes = std::max<int64_t>(Bytes, dtypeBytes(O.Type));
  S = contractionSchedule(F, Bytes);
  if (Short == Narrow::Rows) {
    S.BlockM = ShortBlock;
    S.ThreadM = ShortThread;
  } else if (Short == Narrow::Cols) {
    S.BlockN = ShortBlock;
    S.ThreadN = ShortThread;
  }
  // A nest's short rows keep one shared buffer (its prefetch registers
  // still load the next tile during this one's FMAs): with two, the
  // 32-bit kernel spilled (ptxas -v, sm_80), the Outer loops' indices of
  // the next tile live beside its addresses.
  if (Short != Narrow::None && !Contraction.Outer.empty() && !findKnob(F, "stages"))
    S.Stages = 1;
  // Siblings' tiles, and shared tiles that fit the target.
  if (std::string Why = fitSiblings(F, Contraction.Accs.size(), Ops, S); !Why.empty()) {
    remark("tile-contraction", Line, Why + "; left to the passes after it");
    return false;
  }
  // Where the sizes may give few tiles and a long k loop, a split (not
  // when the tiles are pinned, or split_k = off).
  if (!Split) {
    const Knob *SplitKnob = findKnob(F, "split_k");
    SplitWhen = (SplitKnob && SplitKnob->Word == "off") || findKnob(F, "block_tile") ||
                        findKnob(F, "thread_tile") || findKnob(F, "k_tile")
                    ? nullptr
                    : ContractionSplitK::when(Contraction, S.BlockM, S.BlockN, S.TileK,
                                              /*ComputeBound=*/true, blockScale());
  }
  // The test, where the sizes leave it open (null: always or never), and
  // the one under which this launch runs with the rows' (null: always).
  OpenSplit = SplitWhen && !asConstInt(SplitWhen) ? SplitWhen : nullptr;
  RunWhen = Split && OpenSplit ? (RowsWhen ? land(RowsWhen, OpenSplit) : OpenSplit) : RowsWhen;
  return true;
}

Stmt Tiler::launch(Stmt Launch, unsigned Line) {
  int64_t Threads = S.threads();
  // Thread coordinates, batch indices, the note. Thread (tr, tc) of the
  //    (BM/TM) x (BN/TN) grid owns TM x TN outputs in groups of VW
  //    consecutive ones, the groups strided across the threads
  //    (outputOffset), so a warp's shared reads of a k step are contiguous
  //    (VW wide after vectorize). With lane_cols = LC a warp's 32 lanes form
  //    a (32/LC) x LC patch of the grid, so those reads touch 32/LC row
  //    groups and LC column groups.
  int64_t TCT = S.BlockN / S.ThreadN, LC = S.LaneCols ? S.LaneCols : std::min<int64_t>(TCT, 32);
  if (LC == TCT || TCT % LC || (S.BlockM / S.ThreadM) % (32 / LC) || Threads % 32) {
    Launch =
        letStmt(TR, idiv(var(TX), c(TCT)), letStmt(TC, imod(var(TX), c(TCT)), Launch, Line), Line);
  } else {
    Expr W = idiv(var(TX), c(32)), Lane = imod(var(TX), c(32));
    Launch = letStmt(
        TR, add(mul(idiv(W, c(TCT / LC)), c(32 / LC)), idiv(Lane, c(LC))),
        letStmt(TC, add(mul(imod(W, c(TCT / LC)), c(LC)), imod(Lane, c(LC))), Launch, Line), Line);
  }
  // A split's run of k tiles, computed before any accumulator is live.
  if (Split)
    Launch = letStmt(KP, SplitK->tilesPerSplit(),
                     letStmt(KF, mul(var(SP), var(KP)),
                             letStmt(KN, SplitK->tilesFrom(var(KF), var(KP)), Launch, Line), Line),
                     Line);
  Expr BatchTotal = flatExtent(Batch);
  Launch = bindFlatIndex(Batch, var(Split ? BF : BZ), Launch);
  std::string Staged;
  for (const CoreOperandStage &O : Ops)
    Staged += (Staged.empty() ? "" : ", ") + static_cast<const LoadNode &>(*O.Load).Buffer;
  std::string Note =
      std::string("[tile-contraction] ") +
      (Short != Narrow::None ? shortSide() + " of at most " + std::to_string(ShortRows) + ": "
                             : "") +
      "block tile " + std::to_string(S.BlockM) + "x" + std::to_string(S.BlockN) + ", k step " +
      std::to_string(S.TileK) + ", " + std::to_string(Threads) + " threads of " +
      std::to_string(S.ThreadM) + "x" + std::to_string(S.ThreadN) +
      " outputs in registers (groups of " + std::to_string(S.VectorWidth) + "); " + Staged +
      " staged in shared memory, so each global element is read once per block, not once "
      "per output" +
      (S.Prefetch ? "; the next k tile is loaded into registers during this one's FMAs" : "") +
      (S.Stages == 2 ? "; two shared buffers, one barrier per k tile" : "");
  Note += nestNote(Contraction, Merge, "FMAs");
  std::string InRuns;
  for (const CoreOperandStage &O : Ops)
    if (O.Run > 1)
      InRuns += (InRuns.empty() ? "" : ", ") + static_cast<const LoadNode &>(*O.Load).Buffer;
  if (!InRuns.empty())
    Note += "; " + InRuns +
            " copied in runs of 4 consecutive elements a thread, each run one "
            "16-byte load where the rows are a multiple of 4 and the tensor 16-byte aligned";
  // Two resident blocks of 256 threads per SM (four of the short rows'
  //    128) hide one block's barrier waits behind the others' FMAs; ptxas
  //    must then keep to 128 registers a thread, which the tile allows when
  //    its accumulators, fragments and prefetched values take at most 96 of
  //    them (the rest: addresses and indices). Unless min_blocks is pinned,
  //    the pass hands that to the backend as a knob it chose. Not for the
  //    128x128 tile's split launch: its k run's bounds and partials' indices
  //    are live beside the tile, and the 64-bit kernel, held to 128
  //    registers, spilled (attention's, sm_80), where ptxas unasked keeps
  //    both index types within 128 (two blocks an SM). The short rows'
  //    split, 64 words of tile state, keeps within 128 when asked, and
  //    unasked its 64-bit kernel was held to 80 and spilled (sm_80). Nor
  //    for a reduction over a nest: the Outer loops' indices of the next
  //    tile and its addresses (a convolution's n, h, r, s) spilled at 128
  //    (ptxas -v, sm_80 and sm_90).
  int64_t Words = 0;
  for (const ContractionAcc &A : Contraction.Accs)
    Words += S.ThreadM * S.ThreadN * ((dtypeBytes(A.Type) + 3) / 4);
  for (const CoreOperandStage &O : Ops) {
    int64_t W = (dtypeBytes(O.Type) + 3) / 4;
    Words += W * ((O.RowSide ? S.ThreadM : S.ThreadN) + (S.Prefetch ? O.copiesPerThread(S) : 0));
  }
  int64_t MinBlocks = S.MinBlocks * blockScale();
  if ((!Split || Short != Narrow::None) && Contraction.Outer.empty() && MinBlocks > 1 &&
      Words <= 96 && Threads * MinBlocks <= 2048 &&
      chooseKnob(F, *Chosen, "min_blocks", {MinBlocks}, "", "tile-contraction"))
    Note += "; " + std::to_string(MinBlocks) +
            " resident blocks per SM (min_blocks: " + std::to_string(Words) +
            " registers of tile state per thread leave room)";
  // A nest's short rows ask for one: its 128-thread blocks, under ptxas's
  // own register bound, spilled (an f16 NHWC convolution's split, sm_80
  // and sm_90), and kept within 160 registers without spills when asked.
  else if (Short != Narrow::None && !Contraction.Outer.empty() &&
           chooseKnob(F, *Chosen, "min_blocks", {1}, "", "tile-contraction"))
    Note += "; min_blocks = 1 (under its own bound for these blocks, ptxas spilled)";
  if (Split) {
    Note += "; the k loop split over " + toString(SplitK->count()) +
            " blocks per output tile (block.z), each adding its run of k tiles from zero into "
            "partials that the next launch adds";
    remark("tile-contraction", Line,
           ContractionSplitK::why(S.BlockM, S.BlockN, /*ComputeBound=*/true, blockScale()));
  } else {
    remark("tile-contraction", Line,
           std::string("took it: ") +
               (Short != Narrow::None
                    ? "where the " + shortSide() + " are at most " + std::to_string(ShortRows) +
                          ", so that no block spends most of its FMAs past the last one, "
                    : "") +
               "block tile " + std::to_string(S.BlockM) + "x" + std::to_string(S.BlockN) +
               ", k step " + std::to_string(S.TileK) + ", " + std::to_string(Threads) +
               " threads of " + std::to_string(S.ThreadM) + "x" + std::to_string(S.ThreadN) +
               " outputs; " + Staged + " staged in shared memory");
  }
  // The GPU loops: threads, then block.x over n, block.y over m and
  //     block.z over the flattened batch loops; a split's block.z over
  //     the splits of each batch. Each launch's grid is empty at the
  //     sizes where the other runs.
  Launch = block({note(Note, Line), Launch});
  Launch = forLoop(TX, c(0), c(Threads), ForKind::ThreadX, Launch, Line);
  Expr Blocks = ceilDiv(ColLoop->Extent, S.BlockN);
  Blocks = Split ? gridWhen(Blocks, RunWhen, true)
                 : gridWhen(gridWhen(Blocks, OpenSplit, false), RowsWhen, true);
  Launch = forLoop(BX, c(0), Blocks, ForKind::BlockX, Launch, Line);
  Launch = forLoop(BY, c(0), ceilDiv(RowLoop->Extent, S.BlockM), ForKind::BlockY, Launch, Line);
  if (Split && !Batch.empty()) {
    const Expr &Count = SplitK->count();
    Launch =
        letStmt(SP, imod(var(BZ), Count), letStmt(BF, idiv(var(BZ), Count), Launch, Line), Line);
    Launch = forLoop(BZ, c(0), mul(BatchTotal, Count), ForKind::BlockZ, Launch, Line);
  } else if (Split) {
    Launch = forLoop(SP, c(0), SplitK->count(), ForKind::BlockZ, Launch, Line);
  } else if (!Batch.empty()) {
    Launch = forLoop(BZ, c(0), BatchTotal, ForKind::BlockZ, Launch, Line);
  }
  return Launch;
}

} // namespace tdsl::contraction
