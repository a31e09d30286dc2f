//===- TileContraction.cpp - Block, thread and register tiles for GEMMs ---===//
#include "passes/TileContraction.h"
#include "ir/Printer.h"
#include "ir/Simplify.h"
#include "passes/ContractionMatch.h"
#include "passes/ContractionSplitK.h"
#include "passes/ContractionStaging.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace tdsl {

using namespace ir;

namespace {

Expr c(int64_t V) { return intImm(V); }

/// Rows of at most ShortRows (a decoder's tokens, a few heads' queries)
/// take a launch of ShortBlock-row tiles, ShortThread rows a thread: under
/// the default 128-row tile, 16 rows spend seven eighths of each block's
/// FMAs on rows past M, 64 rows half. So do columns of a constant count of
/// at most ShortRows (a matrix times a few vectors, a head's 64 columns).
constexpr int64_t ShortRows = 64;
constexpr int64_t ShortBlock = 32;
constexpr int64_t ShortThread = 4;

/// Which side of the output a launch's tiles are narrowed on.
enum class Narrow { None, Rows, Cols };

class Tiler {
public:
  explicit Tiler(Func &F) : F(F), Names(F) {}

  /// Nest's launches, none when it is not a contraction: the tiled
  /// launch and, where the sizes may give few output tiles and a long k
  /// loop, a launch that splits the k loop and one that adds its partials
  /// (passes/ContractionSplitK.h); where the rows may be at most
  /// ShortRows, those launches again over the short rows' tiles.
  std::vector<LaunchVariant> variants(const Stmt &Nest);

private:
  Func &F;
  NameTable Names;
  ContractionSchedule S;
  std::vector<Knob> *Chosen = nullptr; ///< the launch's knobs, while tiling
  /// Split: tile() builds the launch that splits the k loop; SplitWhen is
  /// the test on sizes under which it runs (null: never), which the first
  /// build sets.
  bool Split = false;
  Expr SplitWhen;
  /// Short: the side tile() narrows the launch's tiles on; RowsWhen is
  /// the test on the rows under which the launch being built runs (null:
  /// always).
  Narrow Short = Narrow::None;
  Expr RowsWhen;
  std::optional<ContractionSplitK> SplitK;

  // The nest being tiled.
  std::vector<const ForNode *> Batch;
  const ForNode *RowLoop = nullptr, *ColLoop = nullptr, *RedLoop = nullptr;
  ContractionNest Contraction; ///< what matchContraction found
  std::vector<CoreOperandStage> Ops;
  // Names of the launch's variables.
  std::string BZ, BY, BX, TX, TR, TC, KT;
  // A split's: its index, the flat batch, k tiles per split, the block's
  // first k tile and its count of them.
  std::string SP, BF, KP, KF, KN;
  /// Which shared buffer the tile accesses being built use (two stages).
  Expr Stage;

  std::vector<Expr> tileIndex(Expr KK, Expr X) const {
    return stagedAt(S.Stages == 2 ? Stage : nullptr, std::move(KK), std::move(X));
  }

  /// The body of Nest's launch (Split: the split's), or Nest itself
  /// when it is not a contraction; Knobs receives what the tiling chose
  /// for the backend.
  Stmt tile(const Stmt &Nest, std::vector<Knob> &Knobs);
  bool match(const Stmt &Nest);

  /// The short rows' blocks, of fewer threads than the default's 256,
  /// give an SM fewer warps: their split aims at proportionally more of
  /// them, and ptxas is asked to keep proportionally more resident.
  int64_t blockScale() const {
    return Short != Narrow::None ? std::max<int64_t>(1, 256 / S.threads()) : 1;
  }

  std::string shortSide() const { return Short == Narrow::Rows ? "rows" : "columns"; }

  int64_t threadsAlong(bool Row) const {
    return Row ? S.BlockM / S.ThreadM : S.BlockN / S.ThreadN;
  }
  /// The tile offset of a thread's I-th output along rows (or columns):
  /// groups of VW consecutive outputs, the groups strided by threads * VW.
  Expr outputOffset(bool Row, Expr I) const {
    int64_t VW = S.VectorWidth, Threads = threadsAlong(Row);
    Expr Thread = var(Row ? TR : TC);
    return simplifyExpr(add(add(mul(idiv(I, c(VW)), c(Threads * VW)), mul(Thread, c(VW))),
                            imod(I, c(VW))));
  }
  /// The same for output G * VW + V of a thread (group G, lane V).
  Expr outputOffset(bool Row, const Expr &G, const Expr &V) const {
    int64_t VW = S.VectorWidth, Threads = threadsAlong(Row);
    return add(add(mul(G, c(Threads * VW)), mul(var(Row ? TR : TC), c(VW))), V);
  }
  Expr blockOffset(bool Row) const {
    return mul(var(Row ? BY : BX), c(Row ? S.BlockM : S.BlockN));
  }
  Stmt computeStep(Expr KBase, Expr Steps, bool Full, unsigned Line);
};

bool Tiler::match(const Stmt &Nest) {
  std::optional<ContractionNest> C = matchContraction(Nest, "tile-contraction");
  if (!C)
    return false;
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
  // 2. The schedule: the defaults with the pinned knobs, the shared tiles
  //    sized for the widest operand (contractionSchedule falls back to the
  //    defaults where the pinned values cannot run).
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
  unsigned Line = Nest->SrcLine;
  // Siblings' tiles, and shared tiles that fit the target.
  if (std::string Why = fitSiblings(F, Contraction.Accs.size(), Ops, S); !Why.empty()) {
    remark("tile-contraction", Line, Why + "; left to the passes after it");
    return Nest;
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
  Expr OpenSplit = SplitWhen && !asConstInt(SplitWhen) ? SplitWhen : nullptr;
  Expr RunWhen = Split && OpenSplit ? (RowsWhen ? land(RowsWhen, OpenSplit) : OpenSplit) : RowsWhen;

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
  Expr KExt = RedLoop->Extent;
  Expr First = Split ? var(KF) : c(0);
  Expr Tiles = Split ? var(KN) : ceilDiv(KExt, S.TileK);
  Expr KBase = mul(var(KT), c(S.TileK));
  Expr KStart = Split ? mul(First, c(S.TileK)) : c(0);
  std::vector<Stmt> Loop;
  auto Compute = [&]() {
    // One after another: the order of the fresh names is fixed.
    Stmt Partial = computeStep(KBase, sub(KExt, KBase), /*Full=*/false, Line);
    Stmt Full = computeStep(KBase, c(S.TileK), /*Full=*/true, Line);
    return ifThen(le(add(KBase, c(S.TileK)), KExt), Full, Partial, Line);
  };
  auto CopyAll = [&](Expr Base, bool ToRegs) {
    std::vector<Stmt> Out;
    for (const CoreOperandStage &O : Ops)
      Out.push_back(O.copy(Names, S, TX, Base, S.Stages == 2 ? Stage : nullptr, ToRegs, Line));
    return block(std::move(Out));
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
    Body.push_back(CopyAll(KStart, /*ToRegs=*/true));
    Body.push_back(StoreAll());
    Body.push_back(barrier(Line));
    Stage = imod(var(KT), c(2));
    Loop.push_back(ifThen(HasNext, CopyAll(add(KBase, c(S.TileK)), true), nullptr, Line));
    Loop.push_back(Compute());
    Stage = imod(add(var(KT), c(1)), c(2));
    Loop.push_back(ifThen(HasNext, StoreAll(), nullptr, Line));
    Loop.push_back(barrier(Line));
  } else if (S.Prefetch) {
    Body.push_back(CopyAll(KStart, /*ToRegs=*/true));
    Loop.push_back(StoreAll());
    Loop.push_back(barrier(Line));
    Loop.push_back(ifThen(HasNext, CopyAll(add(KBase, c(S.TileK)), true), nullptr, Line));
    Loop.push_back(Compute());
    Loop.push_back(barrier(Line));
  } else {
    Loop.push_back(CopyAll(KBase, /*ToRegs=*/false));
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
  int64_t Threads = S.threads();
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

  // 8. Thread coordinates, batch indices, the note. Thread (tr, tc) of the
  //    (BM/TM) x (BN/TN) grid owns TM x TN outputs in groups of VW
  //    consecutive ones, the groups strided across the threads
  //    (outputOffset), so a warp's shared reads of a k step are contiguous
  //    (VW wide after vectorize). With lane_cols = LC a warp's 32 lanes form
  //    a (32/LC) x LC patch of the grid, so those reads touch 32/LC row
  //    groups and LC column groups.
  int64_t TCT = S.BlockN / S.ThreadN, LC = S.LaneCols ? S.LaneCols : std::min<int64_t>(TCT, 32);
  if (LC == TCT || TCT % LC || (S.BlockM / S.ThreadM) % (32 / LC) || Threads % 32) {
    Launch = letStmt(TR, idiv(var(TX), c(TCT)), letStmt(TC, imod(var(TX), c(TCT)), Launch, Line),
                     Line);
  } else {
    Expr W = idiv(var(TX), c(32)), Lane = imod(var(TX), c(32));
    Launch = letStmt(TR, add(mul(idiv(W, c(TCT / LC)), c(32 / LC)), idiv(Lane, c(LC))),
                     letStmt(TC, add(mul(imod(W, c(TCT / LC)), c(LC)), imod(Lane, c(LC))), Launch,
                             Line),
                     Line);
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
  std::string InRuns;
  for (const CoreOperandStage &O : Ops)
    if (O.Run > 1)
      InRuns += (InRuns.empty() ? "" : ", ") + static_cast<const LoadNode &>(*O.Load).Buffer;
  if (!InRuns.empty())
    Note += "; " + InRuns + " copied in runs of 4 consecutive elements a thread, each run one "
            "16-byte load where the rows are a multiple of 4 and the tensor 16-byte aligned";
  // 9. Two resident blocks of 256 threads per SM (four of the short rows'
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
  //    unasked its 64-bit kernel was held to 80 and spilled (sm_80).
  int64_t Words = 0;
  for (const ContractionAcc &A : Contraction.Accs)
    Words += S.ThreadM * S.ThreadN * ((dtypeBytes(A.Type) + 3) / 4);
  for (const CoreOperandStage &O : Ops) {
    int64_t W = (dtypeBytes(O.Type) + 3) / 4;
    Words += W * ((O.RowSide ? S.ThreadM : S.ThreadN) + (S.Prefetch ? O.copiesPerThread(S) : 0));
  }
  int64_t MinBlocks = S.MinBlocks * blockScale();
  if ((!Split || Short != Narrow::None) && MinBlocks > 1 && Words <= 96 &&
      Threads * MinBlocks <= 2048 &&
      chooseKnob(F, *Chosen, "min_blocks", {MinBlocks}, "", "tile-contraction"))
    Note += "; " + std::to_string(MinBlocks) +
            " resident blocks per SM (min_blocks: " + std::to_string(Words) +
            " registers of tile state per thread leave room)";
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
  // 10. The GPU loops: threads, then block.x over n, block.y over m and
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
  std::optional<int64_t> ShortKnown = ShortWhen ? asConstInt(ShortWhen) : std::optional<int64_t>(0);
  std::optional<int64_t> Cols = asConstInt(ColLoop->Extent);
  bool ColsOnly = Narrowed && !(ShortKnown && *ShortKnown) && Cols && *Cols <= ShortRows;
  Expr TallWhen = simplifyExpr(lt(c(ShortRows), RowLoop->Extent));
  std::vector<LaunchVariant> Out;
  // The tiled launch of Side's tiles and, where the sizes may give few
  // tiles and a long k loop, the split's two.
  auto Build = [&](Narrow Side, const std::string &Prefix) {
    Short = Side;
    RowsWhen = ShortKnown || ColsOnly ? nullptr : Side == Narrow::Rows ? ShortWhen : TallWhen;
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
    Built = (ShortKnown && *ShortKnown) || Build(Narrow::None, "");
    if (Built && (!ShortKnown || *ShortKnown))
      Built = Build(Narrow::Rows, ShortKnown ? "" : "short");
  }
  Short = Narrow::None;
  RowsWhen = nullptr;
  // Main's grid leaves short rows to the short launch: without it the
  // nest goes to the passes after.
  return Built ? Out : std::vector<LaunchVariant>{};
}

} // namespace

void tileContraction(Func &F) {
  Tiler T(F);
  launchNestVariants(F, LaunchClass::Contraction,
                     [&](const Stmt &S, std::vector<Knob> &) { return T.variants(S); });
}

} // namespace tdsl
