//===- RowChainLaunches.cpp - The launches a row chain gets ---------------===//
//
// Which launches of passes/RowChain.cpp's mapper a chain gets: the main
// one; where the row length is open, ones of more threads that hold rows
// the main one re-reads (where that pays), one of groups of lanes that
// holds the peeled runs of short rows that are not whole runs, and one of
// 1024 threads a row for few long rows.
//
//===----------------------------------------------------------------------===//
#include "ir/Simplify.h"
#include "passes/RowChainMapper.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>

namespace tdsl {
namespace rowchain {

std::vector<LaunchVariant> ChainMapper::rewriteNest(const Stmt &S) {
  if (Col.empty())
    takeNames();
  std::string Why;
  std::optional<ChainNest> N = matchRowChain(F, S, Col, Why);
  if (!N) {
    if (!Why.empty())
      remark("row-chain", S->SrcLine, Why + "; left to the passes after it");
    return {};
  }
  Nest = std::move(*N);
  LoopRun Run = Nest.Run;
  if (Threads < WarpSize || Threads > 1024 || Threads % WarpSize) {
    remark("row-chain", S->SrcLine,
           "reduce_threads = " + std::to_string(Threads) +
               " is not a multiple of 32 in [32, 1024]; left to the passes after it");
    return {};
  }
  plan();
  // Rows that reduce_threads re-reads but up to 1024 threads hold (32
  // elements a thread) take a launch of the fewest threads that hold
  // them, as a row length known at compile time does (plan): read once,
  // where a block of reduce_threads reads the row in each sweep. Where
  // that pays (holdPays). Rows of whole runs; where rows peel, those that
  // are not whole runs take a launch of their own (HeldPeelRanges),
  // whose peeled held version beside the whole one raised its registers
  // for every row (softmax's held512, 32 -> 48). Only where the row is
  // held in shared memory: held in registers, the peeled runs' offsets
  // took softmax's kernel of 512 to 48 registers, two blocks a SM, and
  // it ran slower than re-read (bench/RESULTS.md). Rows of unaligned
  // tensors, which the launch cannot see, go an element at a time there.
  auto WholeRuns = [&](BinaryOp Op) { return binary(Op, imod(Cols, intImm(Width)), intImm(0)); };
  HeldRanges.clear();
  HeldPeelRanges.clear();
  HeldLows.clear();
  HeldPeelLows.clear();
  HeldWhen = nullptr;
  if (!ThreadsPinned && Width && CachedCond && !asConstInt(simplifyExpr(Cols))) {
    auto Within = [&](int64_t Lo, int64_t Hi) {
      return land(lt(intImm(Lo * RowChainCacheElements), Cols),
                  le(Cols, intImm(Hi * RowChainCacheElements)));
    };
    auto Range = [&](int64_t Lo, int64_t Hi) {
      return land(Within(Lo, Hi), WholeRuns(BinaryOp::Eq));
    };
    // holdPays only widens at RowChainLongThreads (sharedRows), so the
    // launches that pay are the last ones, and their ranges are one.
    // Beyond RowChainLongThreads, a block of that many holds more elements
    // a thread in shared memory (wideCapacities), where the long launch
    // re-read the row.
    std::vector<int64_t> Capacities;
    for (int64_t B = Threads * 2; B <= RowChainLongThreads; B *= 2)
      Capacities.push_back(B);
    if (Threads < RowChainLongThreads)
      llvm::append_range(Capacities, wideCapacities());
    int64_t Lo = Threads;
    HeldGap = false;
    for (int64_t B : Capacities) {
      if (holdPays(B)) {
        if (holdWholeRunsPays(B)) {
          HeldGap |= !HeldRanges.empty() && HeldRanges.back().first != Lo;
          HeldRanges.push_back({B, simplifyExpr(Range(Lo, B))});
          HeldLows.push_back(Lo);
        }
        if (PeelCond && sharedRows(B)) {
          HeldPeelLows.push_back(Lo);
          HeldPeelRanges.push_back({B, simplifyExpr(land(Within(Lo, B), WholeRuns(BinaryOp::Ne)))});
        }
      }
      Lo = B;
    }
    // Where any held launch runs: the whole-runs range, and the peeled
    // one (all rows there where it is the same).
    if (!HeldRanges.empty()) {
      int64_t Lo = HeldLows.front(), Hi = HeldRanges.back().first;
      HeldWhen = Range(Lo, Hi);
      // Whole runs past a capacity that does not hold them: each range.
      if (HeldGap) {
        HeldWhen = nullptr;
        for (const auto &[B, When] : HeldRanges)
          HeldWhen = HeldWhen ? binary(BinaryOp::Or, HeldWhen, When) : When;
      }
      if (!HeldPeelRanges.empty()) {
        int64_t PLo = HeldPeelLows.front(), PHi = HeldPeelRanges.back().first;
        if (HeldGap)
          HeldWhen =
              binary(BinaryOp::Or, HeldWhen, land(Within(PLo, PHi), WholeRuns(BinaryOp::Ne)));
        else
          HeldWhen = PLo == Lo && PHi == Hi ? Within(Lo, Hi)
                                            : binary(BinaryOp::Or, HeldWhen, Within(PLo, PHi));
      }
      HeldWhen = simplifyExpr(HeldWhen);
    }
  }
  // Rows longer than even RowChainLongThreads would hold are re-read in
  // many runs a thread. Where they are few (RowChainFewRows), blocks of
  // Threads leave the SMs short of loads in flight: those take a launch of
  // RowChainLongThreads a row. So do more of them where the chain sweeps a
  // tensor more than once and the rows are whole runs: blocks of Threads
  // keep so many rows in flight that a row has left the L2 cache before it
  // is read again (layernorm read its rows three times from memory),
  // where a block of 1024 keeps a quarter of them. One sweep
  // (cross-entropy) and rows taken from their first 16-byte boundary ran
  // slower there (bench/RESULTS.md). A row length known at compile time
  // already has its threads (plan). Rows a held launch takes beyond
  // RowChainLongThreads' 32 elements a thread are not its: all of them up to
  // that launch's length where it holds the peeled rows too, else those of
  // whole runs.
  LongWhen = nullptr;
  if (!ThreadsPinned && Threads < RowChainLongThreads && !asConstInt(simplifyExpr(Cols))) {
    Expr Many = Width && rereads() ? WholeRuns(BinaryOp::Eq) : nullptr;
    Expr Few = le(flatExtent(Run.Loops), intImm(RowChainFewRows));
    auto Beyond = [&](const std::vector<std::pair<int64_t, Expr>> &Ranges) {
      return !Ranges.empty() && Ranges.back().first > RowChainLongThreads;
    };
    LongAbove = RowChainLongThreads * RowChainCacheElements;
    if (Beyond(HeldRanges) && Beyond(HeldPeelRanges) && !HeldGap)
      LongAbove = HeldRanges.back().first * RowChainCacheElements;
    const int64_t HeldAbove =
        Beyond(HeldRanges) ? HeldRanges.back().first * RowChainCacheElements : LongAbove;
    LongWhen = land(lt(intImm(LongAbove), Cols), Many ? binary(BinaryOp::Or, Few, Many) : Few);
    if (HeldGap)
      LongWhen = land(LongWhen, unary(UnaryOp::Not, HeldWhen));
    else if (Beyond(HeldRanges) && !Beyond(HeldPeelRanges))
      LongWhen =
          land(LongWhen, unary(UnaryOp::Not,
                               land(lt(intImm(RowChainLongThreads * RowChainCacheElements), Cols),
                                    land(le(Cols, intImm(HeldAbove)), WholeRuns(BinaryOp::Eq)))));
    LongWhen = simplifyExpr(LongWhen);
    if (std::optional<int64_t> Known = asConstInt(LongWhen); Known && !*Known)
      LongWhen = nullptr;
  }
  // Rows of up to 1024 elements that are not whole runs, which the main
  // launch's groups of lanes would re-read in peeled runs: where the chain
  // sweeps a tensor more than once, a launch of their own holds the runs
  // (PeeledHeld). One sweep (cross-entropy) gained nothing held
  // (bench/RESULTS.md).
  PeeledWhen = nullptr;
  if (!ThreadsPinned && PeelCond && llvm::is_contained(Cached, true) && rereads() &&
      !asConstInt(simplifyExpr(Cols)))
    PeeledWhen = simplifyExpr(
        land(le(Cols, intImm(WarpSize * RowChainCacheElements)), WholeRuns(BinaryOp::Ne)));
  // Rows held in shared memory leave a thread of 1024 few registers: the
  // launch asks ptxas for the two blocks a SM that holding them there is
  // for (unasked, it may take more registers and leave one). Past 32
  // elements a thread, as many as its rows leave room for (heldBlocks):
  // two in blocks of 512, or one of 1024, where ptxas takes the registers
  // that allows (unasked, it held the peeled kernel to 32 and spilled).
  auto TwoBlocks = [&](LaunchVariant &L) {
    if (SharedRows)
      chooseKnob(F, L.Knobs, "min_blocks", {Held > RowChainLongThreads ? heldBlocks(Held) : 2}, "",
                 "row-chain");
  };
  std::vector<LaunchVariant> Out = {{"", build(S->SrcLine, Run)}};
  TwoBlocks(Out.back());
  for (const auto &[B, When] : HeldRanges) {
    Held = B;
    plan();
    Out.push_back({heldName(B), build(S->SrcLine, Run)});
    TwoBlocks(Out.back());
  }
  for (const auto &[B, When] : HeldPeelRanges) {
    Held = B;
    HeldPeelOnly = true;
    plan();
    Out.push_back({heldName(B) + "_peeled", build(S->SrcLine, Run)});
    TwoBlocks(Out.back());
    HeldPeelOnly = false;
  }
  Held = 0;
  if (PeeledWhen) {
    PeeledHeld = true;
    plan();
    Out.push_back({"peeled", build(S->SrcLine, Run)});
    PeeledHeld = false;
  }
  if (LongWhen) {
    Long = true;
    plan();
    Out.push_back({"long", build(S->SrcLine, Run)});
    Long = false;
  }
  return Out;
}

bool ChainMapper::rereads() const {
  std::vector<unsigned> Sweeps(Staged.size(), 0);
  for (size_t I = 0; I < Phases.size(); ++I) {
    if (Phases[I].Kind == RowPhaseKind::Row)
      continue;
    std::vector<size_t> Members =
        Phases[I].Kind == RowPhaseKind::Reduction ? sweepGroup(I) : std::vector<size_t>{I};
    for (size_t K = 0; K < Staged.size(); ++K)
      Sweeps[K] += llvm::any_of(Members, [&](size_t J) {
        return contains(Phases[J].reads(), Staged[K]);
      });
    I = Members.back();
  }
  return llvm::any_of(Sweeps, [](unsigned N) { return N > 1; });
}

bool ChainMapper::holdPays(int64_t B) const {
  // A held row saves reads only where the re-read version sweeps a tensor
  // more than once (cross-entropy's max, sum and pick are one sweep).
  if (!rereads())
    return false;
  // And, where the row is held in registers, only where no 4-byte tensor
  // along the row (layernorm's gamma and beta) comes with it: layernorm
  // held so ran slower than re-read at 9216 to 24576 elements, where
  // rmsnorm, rmsnorm after an add and an l2 norm gained (bench/RESULTS.md).
  // Kept terms are not: a held launch computes them again (plan).
  if (sharedRows(B))
    return true;
  return B <= RowChainLongThreads && !wideTensorAlongRow();
}

bool ChainMapper::wideTensorAlongRow() const {
  for (const Expr &L : Staged)
    if (dtypeBytes(L->Type) == 4)
      return true;
  for (const RowPhase &P : Phases)
    if (P.Kind == RowPhaseKind::Element && dtypeBytes(findTensor(F, P.Out)->Type) == 4)
      return true;
  return false;
}

bool ChainMapper::holdWholeRunsPays(int64_t B) const {
  // Two blocks an SM holding rows past 32 elements a thread take nearly all
  // of the SM's shared memory, which the L1 cache shares: a 4-byte tensor
  // the same in every row (layernorm's gamma and beta, four times the
  // bytes of its f16 row) then comes from the L2 cache for each row, and
  // layernorm's whole rows ran at 0.93-1.09x of the long launch, which
  // re-reads X but keeps them in L1 (bench/RESULTS.md). Its rows that are
  // not whole runs, which no launch but a held one reads in runs, gained.
  return !(B > RowChainLongThreads && heldBlocks(B) == 2 && wideTensorAlongRow());
}

} // namespace rowchain
} // namespace tdsl
