//===- RowChainNote.cpp - What a row chain's launch says about itself -----===//
//
// For the row-chain pass (passes/RowChain.h): the note at the top of each
// launch's kernel (how rows map to threads, how the row moves, how it
// reduces) and the main launch's remark at the chain's statement (which
// launches it got and for which rows).
//
//===----------------------------------------------------------------------===//
#include "passes/RowChainMapper.h"

#include "llvm/ADT/STLExtras.h"

namespace tdsl::rowchain {

std::string ChainMapper::byElementWords() const {
  return ByElementWhy.empty()
             ? ""
             : " (" + ByElementWhy + ", the same in every row: an element at a time)";
}

std::string ChainMapper::describe(unsigned Line, int64_t Warps) const {
  std::string How = "one element at a time";
  const std::string Where = SharedRows ? "shared memory" : "registers";
  bool Online = llvm::is_contained(FollowsMax, true);
  const char *OnlineWhy = " (the max and the sum of exp(x - max) in one, online)";
  if (!Width && Online)
    How += OnlineWhy;
  if (PeeledHeld || HeldPeelOnly || (Width && !WideCond)) {
    // Every row this launch takes in runs is peeled: held in the peeled
    // launches, else re-read (a known length that is never whole runs).
    std::string HeldHow =
        PeeledHeld ? ", held in registers (" + std::to_string(Width * Runs) + " elements a lane)"
        : HeldPeelOnly ? ", held in " + Where + " (" + std::to_string(Block * Width * Runs) +
                             " elements: " + std::to_string(Width * Runs) + " a thread)"
                       : "";
    How = "runs of " + std::to_string(Width) + " elements from its first 16-byte boundary" +
          (HeldHow.empty() ? "" : HeldHow + ", so it is read once") +
          " (16 bytes, its head and tail an element at a time" + byElementWords() + ", where " +
          PeelWhy + " are aligned; else one element at a time" +
          (HeldHow.empty() ? ")" : ", re-read)");
    if (!PeeledHeld && !HeldPeelOnly && PerBlock)
      How += ", re-read in each phase" + std::string(Online ? OnlineWhy : "");
    if (PeeledHeld && byElementWide() && llvm::is_contained(LaneGroups, WarpSize))
      How += "; in a warp a row, one element at a time, re-read (4-byte " + ByElementWhy +
             " by element would bind it to the L1 cache)";
  } else if (Width) {
    How = "runs of " + std::to_string(Width) + " elements (" + std::to_string(RunBytes) +
          " bytes where " + WideWhy + " take whole aligned runs" +
          (PeelCond ? "; a row of another length in runs from its first 16-byte boundary, its "
                      "head and tail an element at a time" +
                          byElementWords()
                    : "") +
          ", else one element at a time)";
    if (PerBlock && Held)
      How += ", held in " + Where + " (" + std::to_string(Block * Width * Runs) +
             " elements: " + std::to_string(Width * Runs) + " a thread), so it is read once";
    else if (PerBlock)
      How += ", re-read in each phase" + std::string(Online ? OnlineWhy : "") +
             std::string(CachedCond ? ", or held in " + Where + " when the row fits (" +
                                          std::to_string(Block * Width * Runs) +
                                          " elements: " + std::to_string(Width * Runs) +
                                          " a thread), so it is read once"
                                    : "");
    else if (CachedCond)
      How += ", held in registers, so it is read once";
  }
  unsigned Reductions =
      llvm::count_if(Phases, [](const RowPhase &P) { return P.Kind == RowPhaseKind::Reduction; });
  std::string Mapping;
  for (int64_t G : LaneGroups)
    Mapping +=
        (Mapping.empty() ? "" : ", ") +
        (G == WarpSize ? std::string("one warp per row") : std::to_string(G) + " lanes per row") +
        (LaneGroups.size() > 1 || PerBlock
             ? " for rows of up to " + std::to_string(G * RowChainCacheElements) + " elements" +
                   (G == 16 ? " in runs" : "")
             : std::string());
  if (PerBlock)
    Mapping += (Mapping.empty() ? "" : ", else ") + std::string("one block of ") +
               std::to_string(Block) + " threads per row";
  std::string What =
      "[row-chain] " + std::to_string(Phases.size()) + " phases (" + std::to_string(Reductions) +
      " reductions) in " + Mapping + "; every thread holds the values per row; the row moves in " +
      How + "; each reduction: shfl_xor butterflies" +
      (PerBlock && Warps > 1 ? ", in a block the warp totals through shared memory, one barrier"
                             : "");
  // "; rows of A to B (and C to D)": the lengths a list of held launches
  // takes, each range from where it starts (Lows).
  auto RowsOf = [](const std::vector<int64_t> &Lows,
                   const std::vector<std::pair<int64_t, Expr>> &Ranges) {
    std::string Out;
    for (size_t I = 0; I < Ranges.size(); ++I) {
      if (I > 0 && Lows[I] == Ranges[I - 1].first)
        continue;
      size_t J = I;
      while (J + 1 < Ranges.size() && Lows[J + 1] == Ranges[J].first)
        ++J;
      Out += (Out.empty() ? "; rows of " : " and ") +
             std::to_string(Lows[I] * RowChainCacheElements + 1) + " to " +
             std::to_string(Ranges[J].first * RowChainCacheElements);
    }
    return Out;
  };
  // "launches of 512, 1024 and 512 threads a row": theirs, in order.
  auto LaunchesOf = [&](const std::vector<std::pair<int64_t, Expr>> &Ranges) {
    std::string Out = Ranges.size() > 1 ? "launches of " : "a launch of ";
    for (size_t I = 0; I < Ranges.size(); ++I)
      Out += (I == 0                   ? ""
              : I + 1 == Ranges.size() ? " and "
                                       : ", ") +
             std::to_string(heldThreads(Ranges[I].first));
    return Out + " threads a row";
  };
  if (!Long && !Held && !PeeledHeld)
    remark(
        "row-chain", Line,
        "took it: " + std::to_string(Phases.size()) + " phases, " + Mapping +
            (CachedCond ? ", the row held in " + Where + " when it fits" : "") +
            (Online ? ", a max and the sum of exp(x - max) in one sweep (online)" : "") +
            (PeelCond ? WideCond ? ", rows of other lengths peeled" : ", rows peeled" : "") +
            (PeeledWhen ? "; rows of up to " + std::to_string(WarpSize * RowChainCacheElements) +
                              " elements not in whole runs: a launch that holds their runs "
                              "from the first 16-byte boundary"
                        : "") +
            (LongWhen
                 ? "; up to " + std::to_string(RowChainFewRows) + " rows of over " +
                       std::to_string(LongAbove) + " elements" +
                       std::string(Width && rereads() ? " (any number in whole runs)" : "") +
                       ": a launch of " + std::to_string(RowChainLongThreads) + " threads a row" +
                       std::string(HeldGap ? " where none below holds them" : "")
                 : "") +
            (HeldWhen ? RowsOf(HeldLows, HeldRanges) +
                            " elements in whole runs: " + LaunchesOf(HeldRanges) + " that hold them"
                      : "") +
            (HeldPeelRanges.empty()
                 ? ""
                 : RowsOf(HeldPeelLows, HeldPeelRanges) +
                       " elements not in whole runs: " + LaunchesOf(HeldPeelRanges) +
                       " that hold their runs from the first 16-byte boundary"));
  return What;
}

} // namespace tdsl::rowchain
