//===- TileContraction.cpp - Block, thread and register tiles for GEMMs ---===//
#include "passes/TileContraction.h"
#include "passes/ContractionMatch.h"
#include "passes/ContractionStaging.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"
#include "ir/Simplify.h"

#include "llvm/ADT/STLExtras.h"

#include <string>
#include <vector>

namespace tdsl {

using namespace ir;

namespace {

Expr c(int64_t V) { return intImm(V); }

class Tiler {
public:
  explicit Tiler(Func &F) : F(F), Names(F) {}

  /// The body of Nest's launch, or Nest itself when it is not a
  /// contraction; Knobs receives what the tiling chose for the backend.
  Stmt tile(const Stmt &Nest, std::vector<Knob> &Knobs);

private:
  Func &F;
  NameTable Names;
  ContractionSchedule S;
  std::vector<Knob> *Chosen = nullptr; ///< the launch's knobs, while tiling

  // The nest being tiled.
  std::vector<const ForNode *> Batch;
  const ForNode *RowLoop = nullptr, *ColLoop = nullptr, *RedLoop = nullptr;
  ContractionNest Contraction; ///< what matchContraction found
  std::vector<CoreOperandStage> Ops;
  // Names of the launch's variables.
  std::string BZ, BY, BX, TX, TR, TC, KT;
  /// Which shared buffer the tile accesses being built use (two stages).
  Expr Stage;

  std::vector<Expr> tileIndex(Expr KK, Expr X) const {
    return stagedAt(S.Stages == 2 ? Stage : nullptr, std::move(KK), std::move(X));
  }

  bool match(const Stmt &Nest);

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
  unsigned Line = Nest->SrcLine;
  // Siblings' tiles, and shared tiles that fit the target.
  if (std::string Why = fitSiblings(F, Contraction.Accs.size(), Ops, S); !Why.empty()) {
    remark("tile-contraction", Line, Why + "; left to the passes after it");
    return Nest;
  }

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
  for (CoreOperandStage &O : Ops) {
    const std::string &Buf = static_cast<const LoadNode &>(*O.Load).Buffer;
    O.chooseRun(F, S);
    O.BlockOffset = blockOffset(O.RowSide);
    O.Tile = Names.fresh(Buf + "_tile");
    O.Regs = Names.fresh(Buf + "_reg");
    O.Next = Names.fresh(Buf + "_next");
  }

  // 4. Initialization of the thread's TM x TN accumulators.
  std::vector<Stmt> Body;
  std::string I = Names.fresh("i"), J = Names.fresh("j");
  {
    Stmt Init = withAccumulatorsAt(Contraction, Contraction.Init, {var(I), var(J)});
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
  Expr KExt = RedLoop->Extent;
  Expr Tiles = ceilDiv(KExt, S.TileK);
  Expr KBase = mul(var(KT), c(S.TileK));
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
  Expr HasNext = lt(add(var(KT), c(1)), Tiles);
  if (S.Stages == 2) {
    // Two shared buffers: tile kt+1 is stored into one while tile kt is
    // read from the other, so one barrier per k tile suffices.
    Stage = c(0);
    Body.push_back(CopyAll(c(0), /*ToRegs=*/true));
    Body.push_back(StoreAll());
    Body.push_back(barrier(Line));
    Stage = imod(var(KT), c(2));
    Loop.push_back(ifThen(HasNext, CopyAll(add(KBase, c(S.TileK)), true), nullptr, Line));
    Loop.push_back(Compute());
    Stage = imod(add(var(KT), c(1)), c(2));
    Loop.push_back(ifThen(HasNext, StoreAll(), nullptr, Line));
    Loop.push_back(barrier(Line));
  } else if (S.Prefetch) {
    Body.push_back(CopyAll(c(0), /*ToRegs=*/true));
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
  Body.push_back(forLoop(KT, c(0), Tiles, ForKind::Serial, block(Loop), Line));

  // 6. The epilogue, for the outputs inside the tensor: those beyond M or N
  //    were computed from zeros and are never stored.
  {
    Stmt Out = withAccumulatorsAt(Contraction, Contraction.Epilogue, {var(I), var(J)});
    Expr GM = add(blockOffset(true), outputOffset(true, var(I)));
    Expr GN = add(blockOffset(false), outputOffset(false, var(J)));
    Stmt St = letStmt(RowLoop->Var, fromMin(RowLoop->Min, GM),
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
  Expr BatchTotal = flatExtent(Batch);
  Launch = bindFlatIndex(Batch, var(BZ), Launch);
  std::string Staged;
  for (const CoreOperandStage &O : Ops)
    Staged += (Staged.empty() ? "" : ", ") + static_cast<const LoadNode &>(*O.Load).Buffer;
  std::string Note =
      "[tile-contraction] block tile " + std::to_string(S.BlockM) + "x" +
      std::to_string(S.BlockN) + ", k step " + std::to_string(S.TileK) + ", " +
      std::to_string(Threads) + " threads of " + std::to_string(S.ThreadM) + "x" +
      std::to_string(S.ThreadN) + " outputs in registers (groups of " +
      std::to_string(S.VectorWidth) + "); " + Staged +
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
  // 9. Two resident blocks per SM hide one block's barrier waits behind the
  //    other's FMAs; ptxas must then keep to 128 registers a thread, which
  //    the tile allows when its accumulators, fragments and prefetched
  //    values take at most 96 of them (the rest: addresses and indices).
  //    Unless min_blocks is pinned, the pass hands that to the backend as a
  //    knob it chose.
  int64_t Words = 0;
  for (const ContractionAcc &A : Contraction.Accs)
    Words += S.ThreadM * S.ThreadN * ((dtypeBytes(A.Type) + 3) / 4);
  for (const CoreOperandStage &O : Ops) {
    int64_t W = (dtypeBytes(O.Type) + 3) / 4;
    Words += W * ((O.RowSide ? S.ThreadM : S.ThreadN) + (S.Prefetch ? O.copiesPerThread(S) : 0));
  }
  if (S.MinBlocks > 1 && Words <= 96 && Threads * S.MinBlocks <= 2048 &&
      chooseKnob(F, *Chosen, "min_blocks", {S.MinBlocks}, "", "tile-contraction"))
    Note += "; " + std::to_string(S.MinBlocks) + " resident blocks per SM (min_blocks: " +
            std::to_string(Words) + " registers of tile state per thread leave room)";
  remark("tile-contraction", Line,
         "took it: block tile " + std::to_string(S.BlockM) + "x" + std::to_string(S.BlockN) +
             ", k step " + std::to_string(S.TileK) + ", " + std::to_string(Threads) +
             " threads of " + std::to_string(S.ThreadM) + "x" + std::to_string(S.ThreadN) +
             " outputs; " + Staged + " staged in shared memory");
  // 10. The GPU loops: threads, then block.x over n, block.y over m and
  //     block.z over the flattened batch loops.
  Launch = block({note(Note, Line), Launch});
  Launch = forLoop(TX, c(0), c(Threads), ForKind::ThreadX, Launch, Line);
  Launch = forLoop(BX, c(0), ceilDiv(ColLoop->Extent, S.BlockN), ForKind::BlockX, Launch, Line);
  Launch = forLoop(BY, c(0), ceilDiv(RowLoop->Extent, S.BlockM), ForKind::BlockY, Launch, Line);
  if (!Batch.empty())
    Launch = forLoop(BZ, c(0), BatchTotal, ForKind::BlockZ, Launch, Line);
  return Launch;
}

} // namespace

void tileContraction(Func &F) {
  Tiler T(F);
  launchNests(F, LaunchClass::Contraction,
              [&](const Stmt &S, std::vector<Knob> &Knobs) { return T.tile(S, Knobs); });
}

} // namespace tdsl
