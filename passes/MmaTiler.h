//===- MmaTiler.h - tile-mma's builder, shared by its two files -*- C++ -*-===//
//
// Internal to passes/TileMma.cpp (a launch's body: the operands' tiles and
// fragments, the k loop, the epilogue, the storage) and
// passes/MmaLaunch.cpp (which launches a nest gets, each one's schedule,
// and the launch around the body: coordinates, grid, note, remarks, GPU
// loops). Not for other passes: passes/TileMma.h is the pass.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_MMATILER_H
#define TDSL_PASSES_MMATILER_H

#include "passes/ContractionSplitK.h"
#include "passes/MmaMatch.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include <optional>
#include <string>
#include <vector>

namespace tdsl::mma {

// The pass's own namespace, included by its two files alone: the IR's
// names unqualified, as in every pass.
using namespace ir;

inline Expr c(int64_t V) { return intImm(V); }

/// Builds tile-mma's launch variants for one contraction at a time.
class MmaTiler {
public:
  static constexpr const char *PassName = "tile-mma";

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
  /// The nest with its side's loops merged (a convolution's n, h, w),
  /// which M then points into.
  SideMerge Merge;
  /// The variant being built: Small for the launch of few output tiles,
  /// and Few, the test on sizes under which that one runs (null: no
  /// second launch, tile's own grid unguarded); Split for the launch that
  /// splits the k loop, and SplitWhen, its test (null: never); Wide and
  /// Large for the launches of a batched nest's long k loops and of many
  /// output tiles, with their tests (null: no such launch); Wave and Half
  /// for the launches of one wave of output tiles and of up to one and a
  /// half, and their tests; SmallEngine for the small launch by the copy
  /// engine, and SmallEngineWhen, its test among the small launch's sizes
  /// (null: the small launch takes all of them).
  bool Small = false, Split = false, Wide = false, Large = false, Wave = false, Half = false,
       SmallEngine = false;
  Expr Few, SplitWhen, WideWhen, LargeWhen, WaveWhen, HalfWhen, SmallEngineWhen;
  /// The split being built: its partials and second launch.
  std::optional<ContractionSplitK> SplitK;
  /// What schedule() chose for the variant: the one launch (tiles pinned
  /// or few_tiles = off), a batched nest's 64x64 warps, the large block,
  /// the one-wave block, the half block.
  bool OneLaunch = false, LongK = false, LargeBlock = false, WaveBlock = false, HalfBlock = false;
  /// The k loop's form: the copy engine, or why not; the guarded
  /// version's own schedule where the engine runs.
  bool Engine = false;
  std::string NoEngine;
  MmaSchedule GS;
  /// A split's names: its index, its run of k tiles (per block, first,
  /// count).
  std::string SplitV, KP, KF, KN;

  /// The variant's launch for Nest, or Nest itself where it is declined
  /// (passes/TileMma.cpp).
  Stmt tile(const Stmt &Nest);
  /// Matches Nest and chooses the variant's schedule: its block, warps and
  /// stages (passes/MmaLaunch.cpp). False where the nest is declined.
  bool schedule(const Stmt &Nest);
  /// Places the launch's body: its coordinates, note, remark, grid and GPU
  /// loops (passes/MmaLaunch.cpp).
  Stmt place(Stmt Launch, bool WideTwice, bool GeneralTwice);
  /// The small and split launches' tiles: MmaSmallBlock blocks of warps
  /// at most MmaSmallWarp, then narrowed for siblings as fitWarpTile does.
  void fitSmall(MmaSchedule &Sm) const;
  /// The schedule's defaults so fitted: the small launch's tiles, which
  /// the small engine's and the split's tests count before it is built.
  MmaSchedule smallSchedule() const;

  /// V, a small or split launch, asks ptxas for one resident block where
  /// the nest reduces over a nest of loops.
  void oneBlockForNests(LaunchVariant &V) const;

  bool decline(const Stmt &Nest, const std::string &Why) {
    return declineMma(PassName, S.Mode == TensorCores::On, Nest, Why);
  }
};

} // namespace tdsl::mma

#endif // TDSL_PASSES_MMATILER_H
