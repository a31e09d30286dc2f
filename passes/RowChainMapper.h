//===- RowChainMapper.h - The row-chain pass's mapper, shared by its files -===//
//
// Internal to passes/RowChain.cpp (the mapping: which threads take a row,
// the versions, the launch), passes/RowChainLaunches.cpp (which launches
// a chain gets), passes/RowChainPhases.cpp (the code of one
// phase: the runs, the reductions and their butterflies, the maps per
// element), passes/RowChainOnline.cpp (a max and the sum of exp(x - max)
// in one sweep), passes/RowChainPeel.cpp (rows of any length in runs) and
// passes/RowChainNote.cpp (the launch's note and the chain's remark).
// Not for other passes: passes/RowChain.h is the pass.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_ROWCHAINMAPPER_H
#define TDSL_PASSES_ROWCHAINMAPPER_H

#include "passes/PassUtils.h"
#include "passes/ReduceRows.h"
#include "passes/RowChain.h"
#include "passes/RowChainMatch.h"
#include "passes/Schedule.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/STLExtras.h>

#include <functional>
#include <string>
#include <vector>

namespace tdsl::rowchain {

// The pass's own namespace, included by its two files alone: the IR's
// names unqualified, as in every pass.
using namespace ir;

constexpr int64_t WarpSize = 32;

/// How a version reads the row: one element a thread at a time, runs of
/// Width elements re-read from memory in each phase, or runs held in
/// registers across the phases.
enum class Mode { Scalar, Wide, Cached };

/// Maps the row chains of one Func, a nest at a time: plan() decides the
/// runs, the held tensors and the mappings (RowChain.cpp), the phases'
/// code is written by sweep, reduce and elementwise (RowChainPhases.cpp),
/// and build() puts the versions and mappings into one launch.
class ChainMapper {
public:
  explicit ChainMapper(Func &F)
      : F(F), Names(F), ThreadsPinned(findKnob(F, "reduce_threads") != nullptr),
        Threads(knobInt(F, "reduce_threads", ReduceBlockThreads)),
        OnlineOn(knobEnabled(F, "online_softmax", true)) {}

  // 1. Peel the values per row until the body parses as two or more
  //    phases; anything else is left to reduce-rows and map-to-gpu.
  // 2. Which loads move along the row in runs (plan).
  // 3. Build the launch: a block per row, three versions (build); where
  //    the row length is open, launches of 512 and 1024 threads a row
  //    that hold rows the first re-reads (HeldRanges, where holdPays), and one
  //    of RowChainLongThreads a row for long rows that are few (LongWhen).
  //    None: the nest declined.
  std::vector<LaunchVariant> rewriteNest(const Stmt &S);

  /// Whether the main launch of the nest rewriteNest mapped last keeps a
  /// reduction's terms for a later phase (softmax's exp(x - max) for its
  /// quotient); its held launches compute them again.
  bool keptTerms() const {
    for (size_t I = 0; WideCond && I < Phases.size(); ++I)
      if (keepsTerm(I))
        return true;
    return false;
  }

private:
  Func &F;
  NameTable Names;
  bool ThreadsPinned;
  int64_t Threads;
  bool OnlineOn;
  ChainNest Nest; ///< the nest being mapped
  std::vector<RowPhase> &Phases = Nest.Phases;
  Expr &Cols = Nest.Cols; ///< the row length C
  int64_t Block = 0;      ///< threads per row
  /// While the long launch is built: a block of RowChainLongThreads per
  /// row, no lane groups, rows re-read. LongWhen: the sizes where it runs
  /// (rows longer than it holds, at most RowChainFewRows of them or, where
  /// the chain re-reads, whole runs), the first launch's grid empty there;
  /// none where it never runs.
  bool Long = false;
  Expr LongWhen;
  int64_t LongAbove = 0; ///< LongWhen's rows are longer than this
  /// While a held launch is built: its capacity, in threads of 32 elements
  /// (heldThreads: a block per row, no lane groups, the row held where it
  /// fits). HeldRanges: each held launch's capacity and the sizes where it
  /// runs (rows longer than the one before it holds, from HeldLows);
  /// HeldWhen: where any does (for the main launch's grid: one range, or
  /// each one's where HeldGap).
  int64_t Held = 0;
  std::vector<std::pair<int64_t, Expr>> HeldRanges;
  /// Where each of HeldRanges and HeldPeelRanges starts: rows longer than
  /// this many threads' 32 elements.
  std::vector<int64_t> HeldLows, HeldPeelLows;
  /// Whether a capacity between two of HeldRanges holds no whole runs
  /// (holdWholeRunsPays): those rows go to the long launch.
  bool HeldGap = false;
  Expr HeldWhen;
  /// While a held launch of rows that are not whole runs is built (its
  /// peeled runs held, no whole-runs version; a block per row, unlike
  /// PeeledHeld's groups of lanes); HeldPeelRanges: each
  /// such launch's threads and the sizes where it runs (HeldWhen covers
  /// them too).
  bool HeldPeelOnly = false;
  std::vector<std::pair<int64_t, Expr>> HeldPeelRanges;
  /// While the peeled launch is built: groups of lanes only (rows of up to
  /// 32 elements a lane), the row's runs from its first 16-byte boundary
  /// held in registers, read once (its head and tail re-read an element at
  /// a time). PeeledWhen: where it runs (rows of up to 1024 elements that
  /// are not whole runs); none where it never does. A launch of its own:
  /// in the main one the held peeled version raised every version's
  /// registers (softmax's 48 to 62).
  bool PeeledHeld = false;
  Expr PeeledWhen;
  /// The mappings the launch has: lanes per row of each group of a warp
  /// (8: four rows a warp; 16: two, rows in runs only; 32: a warp a row),
  /// ascending, and a block per row. A group takes rows of up to 32
  /// elements a lane.
  std::vector<int64_t> LaneGroups;
  bool PerBlock = true;
  /// While a group of fewer than 32 lanes is built: whether the lanes' row
  /// exists (the others compute on the last row, so that every lane takes
  /// part in the shuffles, and store nothing).
  Expr Guard;
  // The runs: each load of a 2- or 4-byte tensor contiguous along the row.
  std::vector<Expr> Staged;
  std::vector<bool> Cached; ///< read by two or more phases: held (SharedRows)
  std::vector<std::string> RunName, CacheName;
  int64_t Width = 0;    ///< elements per run; 0: no runs
  int64_t RunBytes = 0; ///< of the narrowest tensor's run: 16, or 8 (runs of 4 halves)
  int64_t Runs = 0;  ///< runs a thread holds
  Expr WideCond, CachedCond;
  /// Whether the held runs live in shared memory (CacheName[K]: [Runs,
  /// Block, Width], a thread's runs at its tid) rather than in registers:
  /// where a block of RowChainLongThreads holds rows of at most
  /// RowChainSharedRowBytes. Each run comes back to registers 16 bytes at
  /// a time where a phase reads it; no thread reads another's runs, so no
  /// barrier. The launch then asks for two blocks a SM (min_blocks).
  bool SharedRows = false;
  /// Rows that are not whole runs (a block per row): where every tensor
  /// along the row is aligned and all have the same offset at a row's
  /// start (PeelCond), the row's first Head elements and its tail go an
  /// element at a time and the NumRuns runs between, which start at a
  /// 16-byte boundary, as in the versions above (Peel while those are
  /// built). PeelHead: (Width - o % Width) % Width for the row's offset o.
  Expr PeelCond, PeelHead;
  bool Peel = false;
  /// Per staged load: read at the same place in every row (gamma[c]), so
  /// an element at a time in the peeled version, beside the others' runs.
  std::vector<bool> PeelByElement;
  bool byElement(size_t K) const { return Peel && K < PeelByElement.size() && PeelByElement[K]; }
  /// Whether the peeled version reads tensor Buffer by element.
  bool readByElement(const std::string &Buffer) const;
  /// Whether a tensor read by element is of 4 bytes (layernorm's f32
  /// gamma and beta). A lane reads it 32 bytes apart from the next lane's,
  /// each load of a warp touching 8 cache lines: the peeled launch's warp
  /// per row (513 to 1024 elements) then was bound by the L1 cache and
  /// slower than going an element at a time, whose lanes there have 17 to
  /// 32 elements each in flight (bench/RESULTS.md); its groups of 8 and 16
  /// lanes gained, their alternative being a warp with half as many.
  bool byElementWide() const {
    for (size_t K = 0; K < PeelByElement.size(); ++K)
      if (PeelByElement[K] && dtypeBytes(Staged[K]->Type) == 4)
        return true;
    return false;
  }
  /// The tensors of the peeled runs, and those read by element, in words.
  std::string PeelWhy, ByElementWhy;
  /// Held version: the terms of reductions that later phases compute
  /// again (softmax's exp(x - max)), kept per element of the thread's
  /// runs in KeepName[phase], and what replaces them there.
  std::vector<std::string> KeepName;
  ExprReplacer Kept;
  std::string WideWhy;
  /// Online pairs: FollowsMax[J] when phase J sums exp(T - max) of the
  /// max phase J - 1's own term T (softmax, cross-entropy). Where the row
  /// is re-read, one sweep folds both: the sum is kept relative to the
  /// running max and rescaled where it grows, so the row is read once for
  /// the two.
  std::vector<bool> FollowsMax;
  std::string Row, RowOfWarp, RowOfRange, Warp, Lane, Tid, Step, Start, V, Col, Val, RunMax, MaxRef,
      OtherMax, OtherSum, Head, NumRuns;

  void takeNames();

  /// Whether a launch of B threads that holds rows the main one re-reads
  /// pays: the re-read version sweeps a tensor more than once, and where
  /// the row is held in registers no 4-byte tensor along the row comes
  /// with it (measured; kept terms are computed again).
  bool holdPays(int64_t B) const;
  /// Whether the held launch of B that pays takes rows of whole runs too,
  /// not only those that are not (rows held two blocks an SM past 32
  /// elements a thread beside a 4-byte tensor along the row do not).
  bool holdWholeRunsPays(int64_t B) const;
  /// Whether a 4-byte tensor along the row comes with it (layernorm's
  /// gamma and beta).
  bool wideTensorAlongRow() const;

  /// Whether the re-read version sweeps a tensor more than once.
  bool rereads() const;

  /// Whether B threads' worth of rows of 32 elements a thread are held in
  /// shared memory (SharedRows): B is RowChainLongThreads and the held
  /// tensors take at most RowChainSharedRowBytes, or B is more (a block of
  /// heldThreads(B) at more elements a thread) and they take at most
  /// RowChainSharedWideRowBytes, within the target's shared memory.
  bool sharedRows(int64_t B) const;
  /// The bytes of shared memory the held tensors of a row of B * 32
  /// elements take.
  int64_t heldBytes(int64_t B) const;
  /// The capacities past RowChainLongThreads held in shared memory,
  /// increasing, and their threads (WideThreads): the most whose blocks fit
  /// two an SM, in blocks of half RowChainLongThreads (each block's loads
  /// beside the other's sweeps), then 2 * RowChainLongThreads in one block
  /// of RowChainLongThreads an SM.
  std::vector<int64_t> wideCapacities();
  /// The blocks an SM the held launch of B asks ptxas for (min_blocks):
  /// two, or one where its rows leave the shared memory of one.
  int64_t heldBlocks(int64_t B) const;
  /// The threads a row of the held launch of B (a capacity of B * 32
  /// elements): B, or past RowChainLongThreads (WideThreads) half that
  /// many where two blocks an SM hold their rows, else that many, holding
  /// more a thread.
  int64_t heldThreads(int64_t B) const {
    return B <= RowChainLongThreads ? B : WideThreads.lookup(B);
  }
  llvm::DenseMap<int64_t, int64_t> WideThreads;
  /// The held launch's name: held<threads>, or held<threads>x<elements>
  /// past 32 elements a thread.
  std::string heldName(int64_t B) const {
    return "held" + std::to_string(heldThreads(B)) +
           (B > RowChainLongThreads
                ? "x" + std::to_string(B * RowChainCacheElements / heldThreads(B))
                : "");
  }

  /// The buffer that holds tensor K's runs: [Runs, Width] registers, or
  /// [Runs, Block, Width] shared memory (SharedRows).
  Buffer heldBuffer(size_t K) const;

  // The runs: a run is 16 bytes of the narrowest tensor taking part (a
  // wider one moves it in 16-byte pieces), and every tensor read or
  // written along the row takes part, or none does (one left out would be
  // accessed with a stride of a run). plan() takes the runs (planRuns),
  // then the groups of lanes.
  void plan();
  void planRuns();

  /// The sizes at which rows move in runs (whole, or peeled), which a group
  /// of 16 lanes takes: any where rows peel, else WideCond's whole-runs
  /// tests (none: every size). Not its alignment tests: the grid, which
  /// depends on the sizes only, must agree; rows of unaligned tensors go
  /// an element at a time there.
  Expr runSizes() const;
  /// The conjuncts of E that Keep keeps; none where it keeps none.
  static Expr conjuncts(const Expr &E, const std::function<bool(const Expr &)> &Keep);

  Expr tid() const { return var(Tid); }

  /// The unroll factor of the loops that go an element at a time: none
  /// chosen (the unroll pass's), but rolled in the long launch, whose
  /// block ptxas fits to 32 registers (two a SM), where unrolled they
  /// spilled in the 64-bit index version.
  unsigned elementUnroll() const { return Long ? 1 : 0; }
  Expr lane() const { return var(Lane); }

  /// S, or for a store to a global tensor S run by thread 0 alone.
  Stmt byOwner(const Stmt &S) const;

  /// The index of run j of thread tid: c0 = (tid + j * N) * Width.
  Stmt atRun(Stmt Body, unsigned Line) const;

  /// Body for each run of the thread: j over the Runs slots (each tested
  /// against C) when held, else over as many as the row has.
  Stmt overRuns(Mode M, Stmt Body, unsigned Line) const;

  /// for v in 0..Width: Dest[Idx..., v] = load K at column c0 + v.
  /// Elements of type T one access moves: a run, or 16 bytes of it.
  int64_t pieceOf(DType T) const { return std::min<int64_t>(Width, 16 / dtypeBytes(T)); }

  /// The copy of a run of type T in accesses of up to 16 bytes: for each
  /// piece at Q (a multiple of P), for v in 0..P: Copy(Q + v in the run,
  /// c0 + Q + v in the row), both spelled base + v as vectorize matches.
  Stmt pieces(DType T, const std::function<Stmt(Expr, Expr)> &Copy, unsigned Line) const;

  /// Dest[Idx..., e] = load K at column c0 + e, for e of the run.
  Stmt fill(size_t K, const std::string &Dest, std::vector<Expr> Idx, unsigned Line) const;

  /// RowPhase P of version M: its loads, each run first copied into
  /// registers (held ones once, in the first phase reading them), then
  /// Body(values, column) per element of the run; or, one element at a
  /// time, Body per column of the thread.
  Stmt sweep(Mode M, const std::vector<Expr> &Reads, unsigned Line, std::vector<bool> &Filled,
             const std::function<Stmt(ExprReplacer &)> &PerElement,
             const std::function<Stmt(ExprReplacer &)> &PerRun);

  /// E with the phase's loads replaced by R, then the kept terms.
  Expr apply(ExprReplacer &R, const Expr &E);

  static bool dividesFloat(const Expr &E);

  static bool contains(const Expr &E, const Expr &Sub);

  /// Whether phase I's term is kept: a later phase computes it again, and
  /// it is more than loads and casts.
  bool keepsTerm(size_t I) const;

  /// for v in 0..Width unroll { let c = c0 + v { S } }.
  Stmt perColumn(Stmt S, unsigned Line) const;

  Stmt butterflies(const RowPhase &P, int64_t Lanes) const;

  /// Whether phase J sums exp(T - H) where max phase I = J - 1 folds T
  /// and stores its total to the value per row H.
  bool followsMax(size_t I, size_t J) const;

  /// The online pair I (max) and J (sum) over one element, or over a run:
  /// the run's max first, then the sum rescaled to it once, so that a run
  /// costs an exp per element and one more.
  Stmt onlineFold(size_t I, size_t J, ExprReplacer &R, bool InRun);

  /// Butterflies of the pair (M, S) over Lanes lanes: each pair of totals
  /// is rescaled to the larger max before the sums add.
  Stmt onlineButterflies(size_t I, size_t J, int64_t Lanes) const;

  /// exp(X - Ref) where Ref is the max M, or 0 while M is -inf (no finite
  /// term yet), so that an empty fold adds 0 rather than exp(-inf + inf).
  Expr maxRef(const Expr &M) const;

  /// A reduction: the thread's columns, a butterfly per warp, the warp
  /// totals through Totals (shared) and one barrier, then a butterfly over
  /// them in every warp, so every thread holds the total for the epilogue.
  /// Consecutive reductions Members, none reading another's result (the
  /// max and the picked logit of cross-entropy): one sweep over the row
  /// folds each thread's columns into every accumulator; then per
  /// accumulator a butterfly per warp, in a block the warps' totals through
  /// shared memory (Totals[phase]) and one barrier for all, and a
  /// butterfly over them in every warp, so every thread holds each total
  /// for the epilogues.
  Stmt reduce(Mode M, const std::vector<size_t> &Members, const std::vector<std::string> &Totals,
              std::vector<bool> &Filled);

  /// The reductions from phase I on that one sweep folds together where
  /// the row is re-read (one read of it fewer each): each next one while
  /// it reads nothing the ones before store.
  std::vector<size_t> sweepGroup(size_t I) const;

  /// An elementwise phase: each run computed into registers, then stored
  /// as one run (16 bytes where aligned).
  Stmt elementwise(Mode M, const RowPhase &P, std::vector<bool> &Filled);

  Stmt version(Mode M, const std::vector<std::string> &Totals, unsigned Line);

  /// The launch's note (which threads take a row, how it moves and
  /// reduces), and for the main launch the remark at the chain's line
  /// (RowChainNote.cpp). Warps: a block's, where a block takes a row.
  std::string describe(unsigned Line, int64_t Warps) const;
  /// " (gamma, beta, the same in every row: an element at a time)" where
  /// the peeled version reads tensors so (PeelByElement); else nothing.
  std::string byElementWords() const;

  /// The row's head and tail of a peeled version: element e of the
  /// C - NumRuns * Width a thread takes, at column e (the head) or e +
  /// NumRuns * Width (the tail).
  Stmt remainder(const std::function<Stmt(ExprReplacer &)> &PerElement, unsigned Line) const;

  /// The peeled version of mode M, under the lets of Head and NumRuns:
  /// re-read in each phase (Wide), or held (Cached) in the peeled launch
  /// alone, where it cannot raise the other versions' registers.
  Stmt peeled(Mode M, const std::vector<std::string> &Totals, unsigned Line);

  /// PeelCond (WideCond's alignment tests) and PeelHead, where the row's
  /// tensors allow them.
  void planPeel();

  /// The versions of the chain for threads per row Block, widest first:
  /// held when the row fits (always, for a warp per row), re-read in runs,
  /// one element at a time.
  Stmt versions(const std::vector<std::string> &Totals, bool WarpEach, unsigned Line);

  Stmt build(unsigned Line, const LoopRun &Run);
};

} // namespace tdsl::rowchain

#endif // TDSL_PASSES_ROWCHAINMAPPER_H
