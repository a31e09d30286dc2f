//===- ReduceRows.cpp - One warp or one block per row of a row reduction --===//
#include "passes/ReduceRows.h"
#include "ir/Launch.h"
#include "ir/Printer.h"
#include "ir/Simplify.h"
#include "passes/PassUtils.h"
#include "passes/ReduceRowsRuns.h"
#include "passes/Schedule.h"
#include "passes/SplitReduce.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MathExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace tdsl {

using namespace ir;

namespace {

constexpr int64_t WarpSize = 32;

/// The parts of a matched reduction nest.
struct RowReduction {
  const AllocateNode *Acc = nullptr;
  std::vector<Stmt> Init; ///< stores to ACC[0] that read no buffer
  const ForNode *Loop = nullptr;
  BinaryOp Op = BinaryOp::Add;
  std::vector<Stmt> Epilogue; ///< single-thread code that reads the total
};

bool isAccElement(const std::string &Buffer, const std::vector<Expr> &Indices,
                  const std::string &Acc) {
  return Buffer == Acc && Indices.size() == 1 && asConstInt(Indices[0]) == 0;
}

/// Why lanes striding C would not read E's operands faster than one thread
/// per output does, or "" when they would. Lanes own interleaved C, so a
/// load coalesces only where C is its contiguous (last) index; a load
/// along another dimension would send each lane to its own row, and one
/// whose last index also follows the innermost row InnerRow is coalesced
/// across map-to-gpu's threads already. A dimension of extent 1 does not
/// count as the last (a column vector `x: f32[K, 1]` read as x[k, n]).
std::string strideProblem(const Func &F, const Expr &E, const std::string &C,
                          const std::string &InnerRow, const std::string &Acc) {
  bool Contiguous = false;
  for (const Expr &LE : loadsOf(E)) {
    const auto *L = static_cast<const LoadNode *>(LE.get());
    if (L->Buffer == Acc)
      return "the operand of the step reads '" + Acc + "' itself";
    if (llvm::none_of(L->Indices, [&](const Expr &X) { return usesAnyVar(X, {C}); }))
      continue; // the same element for the whole row: a broadcast
    if (L->Indices.empty() || !usesAnyVar(lastMovingIndex(*L, F), {C}))
      return "the reduction over '" + C + "' is not along the innermost dimension of '" +
             L->Buffer + "', so one thread per output already reads consecutive elements";
    if (!InnerRow.empty() && usesAnyVar(lastMovingIndex(*L, F), {InnerRow}))
      return "'" + L->Buffer + "' is read along '" + InnerRow +
             "' too, so one thread per output already reads consecutive elements";
    Contiguous = true;
  }
  if (!Contiguous)
    return "no load of the reduction over '" + C + "' moves along '" + C + "'";
  return "";
}

/// Which mapping a launch gets, and why (for its note).
struct Mapping {
  bool BlockPerRow = false;
  std::string Reason;
  /// A block for a row length known only at run time (rule 2).
  bool Open = false;
};

class RowReducer {
public:
  explicit RowReducer(Func &F)
      : F(F), Names(F), RowsPinned(findKnob(F, "rows_per_block") != nullptr),
        ThreadsPinned(findKnob(F, "reduce_threads") != nullptr),
        RowsPerBlock(knobInt(F, "rows_per_block", ReduceRowsPerBlock)),
        Threads(knobInt(F, "reduce_threads", ReduceBlockThreads)) {
    for (const std::string &S : F.Sizes)
      Sizes.insert(S);
    if (const Knob *K = findKnob(F, "block_per_row"))
      BlockPerRowWord = K->Word;
  }

  // 1. Match the nest: an accumulator, its init, one serial loop folding E
  //    into it with OP, an epilogue; E's loads contiguous along the loop.
  //    Declined (with a remark), among others: a reduction along another
  //    dimension (a column sum) or whose E also moves along the innermost
  //    row (a 1-D convolution), where one thread per output is coalesced
  //    already; one over several loops (conv2d); an accumulator type
  //    without warp shuffles; E reading ACC. A scalar is one row.
  // 2. Choose one warp or one block per row (choose).
  // 3. Build the launch (warpPerRow, blockPerRow).
  std::vector<LaunchVariant> rewriteNest(const Stmt &S) {
    LoopRun Run = outerSerialLoops(S);
    if (Run.Inner->Kind != StmtKind::Allocate)
      return {};
    const auto &Acc = static_cast<const AllocateNode &>(*Run.Inner);
    if (Acc.Buf.Scope != MemScope::Register || Acc.Buf.rank() != 1 ||
        asConstInt(Acc.Buf.Shape[0]) != 1)
      return {}; // not an accumulator: an elementwise nest
    std::string Why;
    std::optional<RowReduction> R = match(Run, Acc, Why);
    std::optional<Mapping> M;
    // A row of min(B, ...) elements is mapped as one of B: the chunks of a
    // split row, the last shorter.
    Expr Len;
    if (R) {
      Len = R->Loop->Extent;
      if (Len->Kind == ExprKind::Binary &&
          static_cast<const BinaryNode &>(*Len).Op == BinaryOp::Min &&
          hostEvaluable(static_cast<const BinaryNode &>(*Len).A, Sizes))
        Len = static_cast<const BinaryNode &>(*Len).A;
      RunElements = rowRunElements(F, *R->Loop);
      M = choose(flatExtent(Run.Loops), Len, Why);
    }
    if (!M) {
      remark("reduce-rows", Acc.SrcLine, Why + "; left to the passes after it");
      return {};
    }
    // A length open at compile time that the launcher can evaluate: the
    // rule's choice at run time, a launch of each mapping, the grid of the
    // one the sizes do not pick empty. A warp where the row is shorter
    // than blockRowLength(), unless the rows are few and long enough
    // to fill a block.
    Expr Rows = flatExtent(Run.Loops);
    if (M->Open && hostEvaluable(Rows, Sizes) && hostEvaluable(Len, Sizes)) {
      Expr Warp = binary(BinaryOp::And, lt(Len, intImm(blockRowLength())),
                         binary(BinaryOp::Or, binary(BinaryOp::Ge, Rows, intImm(ReduceFewRows)),
                                lt(Len, intImm(Threads))));
      Warp = simplifyExpr(Warp);
      std::string Open = "the row length " + toString(Len) + " known only at run time, ";
      std::vector<LaunchVariant> Out;
      Out.push_back({"", blockPerRow(S->SrcLine, Run, *R,
                                     Open + "this launch where " + toString(Warp) +
                                         " does not hold: long rows, or few rows a block fills",
                                     Warp, false)});
      Out.push_back({"warp", warpPerRow(S->SrcLine, Run, *R,
                                        Open + "this launch where " + toString(Warp) +
                                            " holds: many short rows",
                                        Warp, true)});
      return Out;
    }
    return {{"", M->BlockPerRow ? blockPerRow(S->SrcLine, Run, *R, M->Reason)
                                : warpPerRow(S->SrcLine, Run, *R, M->Reason)}};
  }

private:
  std::optional<RowReduction> match(const LoopRun &Run, const AllocateNode &Acc, std::string &Why) {
    const std::string &AccName = Acc.Buf.Name;
    DType T = Acc.Buf.Type;
    if (T != DType::I32 && T != DType::I64 && T != DType::F32 && T != DType::F64) {
      Why = "accumulator '" + AccName + "' of type " + dtypeName(T).str() + " has no warp shuffle";
      return std::nullopt;
    }
    RowReduction R;
    R.Acc = &Acc;
    std::vector<Stmt> Stmts = flattenBlocks(Acc.Body);
    size_t I = 0;
    for (; I < Stmts.size() && Stmts[I]->Kind == StmtKind::Store; ++I) {
      const auto &St = static_cast<const StoreNode &>(*Stmts[I]);
      if (!isAccElement(St.Buffer, St.Indices, AccName) || hasLoads(St.Value)) {
        Why = "'" + AccName + "' is initialized with something other than a value";
        return std::nullopt;
      }
      R.Init.push_back(Stmts[I]);
    }
    if (R.Init.empty() || I == Stmts.size() || Stmts[I]->Kind != StmtKind::For) {
      Why = "'" + AccName + "' is not an initialized accumulator followed by a loop";
      return std::nullopt;
    }
    R.Loop = static_cast<const ForNode *>(Stmts[I].get());
    R.Epilogue.assign(Stmts.begin() + I + 1, Stmts.end());
    if (R.Loop->Loop != ForKind::Serial) {
      Why = "the reduction loop '" + R.Loop->Var + "' is not serial";
      return std::nullopt;
    }

    // The step: ACC[0] = ACC[0] OP E or E OP ACC[0], nothing else.
    Stmt Step = stripBlocks(R.Loop->Body);
    const auto *St =
        Step->Kind == StmtKind::Store ? static_cast<const StoreNode *>(Step.get()) : nullptr;
    const auto *Bin = St && St->Value->Kind == ExprKind::Binary
                          ? static_cast<const BinaryNode *>(St->Value.get())
                          : nullptr;
    if (Step->Kind == StmtKind::For) {
      Why = "the reduction runs over a nest of loops ('" + R.Loop->Var + "', '" +
            static_cast<const ForNode &>(*Step).Var + "', ...); only one loop is spread over lanes";
      return std::nullopt;
    }
    if (!Bin || !isAccElement(St->Buffer, St->Indices, AccName) || !isReductionOp(Bin->Op)) {
      Why = "the body of loop '" + R.Loop->Var +
            "' is not one step ACC = ACC op E with op one of + * max min";
      return std::nullopt;
    }
    R.Op = Bin->Op;
    Expr AccValue = load(T, AccName, {intImm(0)});
    Expr E;
    if (structurallyEqual(Bin->A, AccValue))
      E = Bin->B;
    else if (structurallyEqual(Bin->B, AccValue))
      E = Bin->A;
    else {
      Why = "the step of loop '" + R.Loop->Var + "' does not fold into '" + AccName + "[0]'";
      return std::nullopt;
    }

    // A scalar is one row.
    Why = strideProblem(F, E, R.Loop->Var, Run.Loops.empty() ? "" : Run.Loops.back()->Var, AccName);
    if (!Why.empty())
      return std::nullopt;
    return R;
  }

  /// Warp or block per row for Rows rows of Length elements (the rule is
  /// chooseByKnobsAndSizes'), or nothing with Why set for a knob outside
  /// the range checkSchedule enforces (only a caller that skipped it
  /// passes one).
  std::optional<Mapping> choose(const Expr &Rows, const Expr &Length, std::string &Why) const {
    std::optional<Mapping> M = chooseByKnobsAndSizes(Rows, Length);
    if (!M)
      Why = "block_per_row = " + BlockPerRowWord + " is not auto, on or off";
    else if (M->BlockPerRow && (Threads < WarpSize || Threads > 1024 || Threads % WarpSize))
      Why =
          "reduce_threads = " + std::to_string(Threads) + " is not a multiple of 32 in [32, 1024]";
    else if (!M->BlockPerRow &&
             (RowsPerBlock < 1 || RowsPerBlock > WarpSize || !llvm::isPowerOf2_64(RowsPerBlock)))
      Why = "rows_per_block = " + std::to_string(RowsPerBlock) + " is not a power of 2 in [1, 32]";
    else
      return M;
    return std::nullopt;
  }

  /// The rule, with L the row length (c's extent), R the row count and N
  /// the block's threads:
  /// 1. block_per_row = on | off pins it; a knob of one mapping pinned
  ///    alone (rows_per_block or reduce_threads) asks for that one.
  /// 2. L not a constant: a block (Open). Either wrong guess costs up to
  ///    N / 32 (8x) in threads per row: a block on rows shorter than N
  ///    leaves most of its threads idle, a warp on long rows, when they are
  ///    few, leaves most of the GPU idle. So where the launcher can
  ///    evaluate L and the row count, rewriteNest adds a warp-per-row
  ///    launch and rules 3-5 pick between the two at run time; else (a
  ///    length that varies by row) the block stays.
  /// 3. L >= blockRowLength(): a block; 4 or more elements for each of 256
  ///    threads pay for the barrier and the second combine, and where the
  ///    row is read in runs, a run for each (2048 f16): a block whose 256
  ///    threads share 128 runs of 1024 halves lost to a warp a row
  ///    (bench/RESULTS.md).
  /// 4. R < ReduceFewRows constant and L >= N: a block; with so few rows a
  ///    warp each fills at most R / 8 of an H200's 132 SMs, and a block
  ///    each puts N / 32 times the loads in flight per row.
  /// 5. Otherwise (a short constant row): a warp; many short rows keep the
  ///    GPU busy with warps alone, and need no shared memory or barrier.
  std::optional<Mapping> chooseByKnobsAndSizes(const Expr &Rows, const Expr &Length) const {
    if (BlockPerRowWord == "on" || BlockPerRowWord == "off")
      return Mapping{BlockPerRowWord == "on", "pinned by block_per_row = " + BlockPerRowWord};
    if (!BlockPerRowWord.empty() && BlockPerRowWord != "auto")
      return std::nullopt;
    // A knob of one mapping pinned alone asks for that mapping.
    if (RowsPinned != ThreadsPinned)
      return RowsPinned ? Mapping{false, "rows_per_block is pinned"}
                        : Mapping{true, "reduce_threads is pinned"};
    std::optional<int64_t> L = asConstInt(simplifyExpr(Length)), R = asConstInt(simplifyExpr(Rows));
    if (!L)
      return Mapping{true,
                     "the row length " + toString(Length) +
                         " is known only at run time, and a length left open is "
                         "usually a long axis: a warp each would leave a few long rows "
                         "to a few warps",
                     true};
    std::string Elements = std::to_string(*L) + " elements";
    if (*L >= blockRowLength())
      return Mapping{true, "rows of " + Elements + ", at least " +
                               std::to_string(blockRowLength()) +
                               ": long enough to keep a block busy"};
    if (R && *R < ReduceFewRows && *L >= Threads)
      return Mapping{true, "only " + std::to_string(*R) + " rows, of " + Elements +
                               ": a warp each would leave most SMs idle"};
    return Mapping{false, "rows of " + Elements + ", fewer than " +
                              std::to_string(blockRowLength()) +
                              ": too short to keep a block busy"};
  }

  void takeNames() {
    // Sibling launches have disjoint scopes, so every launch reads the same
    // names.
    if (!Block.empty())
      return;
    Block = Names.fresh("rb");
    Warp = Names.fresh("warp");
    Lane = Names.fresh("lane");
    Row = Names.fresh("row");
    Step = Names.fresh("cc");
    Thread = Names.fresh("tid");
  }

  /// The shortest row a block takes: ReduceBlockRowLength, or where the
  /// row is read in runs and that is more, a run for each thread (256
  /// runs of 8 halves are 2048 elements).
  int64_t blockRowLength() const { return std::max(ReduceBlockRowLength, Threads * RunElements); }

  /// The note's words for runs of 16 bytes, where foldShare takes them.
  std::string runsNote() const {
    return RunElements > 1
               ? " (runs of 16 bytes a thread, two at a time, where the row length and the "
                 "tensors' alignment allow)"
               : "";
  }

  Expr accValue(const RowReduction &R) const {
    return load(R.Acc->Buf.Type, R.Acc->Buf.Name, {intImm(0)});
  }
  Stmt storeAcc(const RowReduction &R, Expr V, unsigned Line) const {
    return store(R.Acc->Buf.Name, {intImm(0)}, std::move(V), Line);
  }

  /// What thread Tid of Threads runs to fold its share of the row into
  /// ACC: init, the identity for threads other than 0 where init may not
  /// be one, and the loop over c = min + Tid + Threads * cc, in runs of 16
  /// bytes where aligned (passes/ReduceRowsRuns.h).
  std::vector<Stmt> foldShare(const RowReduction &R, const Expr &Tid, int64_t Threads) {
    const AllocateNode &Acc = *R.Acc;
    const ForNode &Loop = *R.Loop;
    std::vector<Stmt> Body = R.Init;
    // Every thread starts from init, so init enters the result once per
    // thread: right for max and min, and for + and * only when init is the
    // identity.
    Expr Identity = identityOf(R.Op, Acc.Buf.Type);
    if (!isIdempotent(R.Op) &&
        !(R.Init.size() == 1 &&
          structurallyEqual(static_cast<const StoreNode &>(*R.Init[0]).Value, Identity)))
      Body.push_back(ifThen(binary(BinaryOp::Ne, Tid, intImm(0)),
                            storeAcc(R, Identity, Acc.SrcLine), nullptr, Acc.SrcLine));
    Body.push_back(foldRowShare(F, Names, Loop, Step, Tid, Threads));
    return Body;
  }

  /// Butterfly: after the step of distance d every lane holds the total of
  /// its 2d-lane group, so after d = 1 each aligned group of Lanes lanes
  /// holds its total in every lane.
  void butterfly(std::vector<Stmt> &Body, const RowReduction &R, int64_t Lanes) {
    Expr V = accValue(R);
    for (int64_t D = Lanes / 2; D >= 1; D /= 2)
      Body.push_back(storeAcc(R,
                              binary(R.Op, V, call(Intrinsic::ShflXor, {V, intImm(D, DType::I32)})),
                              R.Loop->SrcLine));
  }

  void epilogue(std::vector<Stmt> &Body, const RowReduction &R) {
    if (!R.Epilogue.empty())
      Body.push_back(ifThen(binary(BinaryOp::Eq, var(Lane), intImm(0)),
                            block(R.Epilogue, R.Acc->SrcLine), nullptr, R.Acc->SrcLine));
  }

  /// One warp per row, RowsPerBlock rows a block:
  /// 1. lane l folds c = l, l + 32, ... into its own ACC (foldShare);
  /// 2. a shfl_xor butterfly (16 .. 1) gives every lane the total;
  /// 3. lane 0 runs the epilogue;
  /// 4. rows beyond the end skip the whole body: the test is uniform per
  ///    warp, so every shuffle runs on the full warp.
  Stmt warpPerRow(unsigned Line, const LoopRun &Run, const RowReduction &R,
                  const std::string &Reason, const Expr &When = nullptr, bool RunsWhen = true) {
    takeNames();
    std::vector<Stmt> Body = foldShare(R, var(Lane), WarpSize);
    butterfly(Body, R, WarpSize);
    epilogue(Body, R);
    Stmt Inner = allocate(R.Acc->Buf, block(std::move(Body), R.Acc->SrcLine), R.Acc->SrcLine);

    // The row variables from the flat row index, innermost fastest (as
    // map-to-gpu recovers its outputs), then the per-warp guard.
    Expr RowVar = var(Row);
    Expr Rows = flatExtent(Run.Loops);
    Inner = bindFlatIndex(Run.Loops, RowVar, Inner);
    Stmt Guarded = ifThen(lt(RowVar, Rows), Inner, nullptr, Line);
    Stmt PerLane =
        letStmt(Row, add(mul(var(Block), intImm(RowsPerBlock)), var(Warp)), Guarded, Line);
    Stmt Warps =
        forLoop(Warp, intImm(0), intImm(RowsPerBlock), ForKind::Warp,
                forLoop(Lane, intImm(0), intImm(WarpSize), ForKind::Lane, PerLane, Line), Line);
    std::string Why = "[reduce-rows] one warp per row (" + Reason + "), " +
                      std::to_string(RowsPerBlock) +
                      " rows per block: lanes stride the row so each load instruction "
                      "reads 32 consecutive elements" +
                      runsNote() + "; shfl_xor butterfly, no shared memory";
    remark("reduce-rows", Line,
           "took it: one warp per row (" + Reason + "), " + std::to_string(RowsPerBlock) +
               " rows per block, shuffle butterfly");
    Expr Blocks = binary(BinaryOp::Div, add(Rows, intImm(RowsPerBlock - 1)), intImm(RowsPerBlock));
    return forLoop(Block, intImm(0), gridWhen(Blocks, When, RunsWhen), ForKind::BlockX,
                   block({note(Why, Line), Warps}, Line), Line);
  }

  /// One block of N = Threads threads (W = N / 32 warps) per row:
  /// 1. thread t folds c = t, t + N, ... (foldShare); a butterfly per warp;
  /// 2. lane 0 of each warp stores the warp's total in ACC_warps[W]
  ///    (shared); one barrier;
  /// 3. warp 0 loads the W totals, a butterfly over the next power of 2
  ///    >= W combines them, and its lane 0 runs the epilogue:
  ///
  ///   for row in 0..R block.x { let r = row { alloc s_warps: f32[8] shared {
  ///     for warp in 0..8 warp { for lane in 0..32 lane { ... fold, butterfly,
  ///       if lane == 0 { s_warps[warp] = s[0] } } }
  ///     barrier
  ///     for warp in 0..1 warp { for lane in 0..32 lane { alloc s {
  ///       s[0] = s_warps[lane % 8]; butterfly 4, 2, 1; if lane == 0 { Y[r] = s[0] } } } } } } }
  Stmt blockPerRow(unsigned Line, const LoopRun &Run, const RowReduction &R,
                   const std::string &Reason, const Expr &When = nullptr, bool RunsWhen = true) {
    takeNames();
    const AllocateNode &Acc = *R.Acc;
    unsigned AccLine = Acc.SrcLine;
    int64_t Warps = Threads / WarpSize;
    Buffer Totals = tempBuffer(Names.fresh(Acc.Buf.Name + "_warps"), Acc.Buf.Type, {intImm(Warps)},
                               MemScope::Shared);
    Totals.ExtentNames = {"warps"};
    Expr LaneVar = var(Lane);

    // Every thread folds its share; lane 0 of each warp stores the warp's
    // total in its slot.
    std::vector<Stmt> Fold = foldShare(R, var(Thread), Threads);
    butterfly(Fold, R, WarpSize);
    Fold.push_back(ifThen(binary(BinaryOp::Eq, LaneVar, intImm(0)),
                          store(Totals.Name, {var(Warp)}, accValue(R), AccLine), nullptr, AccLine));
    Stmt PerThread = letStmt(Thread, add(mul(var(Warp), intImm(WarpSize)), LaneVar),
                             allocate(Acc.Buf, block(std::move(Fold), AccLine), AccLine), Line);
    Stmt Share =
        forLoop(Warp, intImm(0), intImm(Warps), ForKind::Warp,
                forLoop(Lane, intImm(0), intImm(WarpSize), ForKind::Lane, PerThread, Line), Line);

    // Warp 0 combines the totals, all 32 lanes taking part in every
    // shuffle. Lane 0's butterfly over Group lanes reads lanes 0 .. Group -
    // 1: with Warps a power of 2 those hold the totals once each; otherwise
    // the lanes past Warps hold the identity (+ *) or repeat a total (max
    // min, which a repeat does not change).
    int64_t Group = static_cast<int64_t>(llvm::PowerOf2Ceil(Warps));
    Expr Slot = Warps == 1          ? intImm(0)
                : Warps == WarpSize ? LaneVar
                                    : binary(BinaryOp::Mod, LaneVar, intImm(Warps));
    Expr Total = load(Acc.Buf.Type, Totals.Name, {Slot});
    if (Group != Warps && !isIdempotent(R.Op))
      Total = select(lt(LaneVar, intImm(Warps)), load(Acc.Buf.Type, Totals.Name, {LaneVar}),
                     identityOf(R.Op, Acc.Buf.Type));
    std::vector<Stmt> Combine = {storeAcc(R, Total, AccLine)};
    butterfly(Combine, R, Group);
    epilogue(Combine, R);
    Stmt Warp0 =
        forLoop(Warp, intImm(0), intImm(1), ForKind::Warp,
                forLoop(Lane, intImm(0), intImm(WarpSize), ForKind::Lane,
                        allocate(Acc.Buf, block(std::move(Combine), AccLine), AccLine), Line),
                Line);

    Stmt Body = allocate(Totals, block({Share, barrier(Line), Warp0}, Line), Line);
    Body = bindFlatIndex(Run.Loops, var(Row), Body);
    std::string Why = "[reduce-rows] one block of " + std::to_string(Threads) +
                      " threads per row (" + Reason +
                      "): threads stride the row so each load instruction reads 32 consecutive "
                      "elements" +
                      runsNote() + "; shfl_xor butterfly per warp, the " + std::to_string(Warps) +
                      " warp totals through shared memory and one barrier to warp 0";
    remark("reduce-rows", Line,
           "took it: one block of " + std::to_string(Threads) + " threads per row (" + Reason +
               "), shuffle butterfly per warp, warp totals through shared memory");
    return forLoop(Row, intImm(0), gridWhen(flatExtent(Run.Loops), When, RunsWhen),
                   ForKind::BlockX, block({note(Why, Line), Body}, Line), Line);
  }

  const Func &F;
  llvm::StringSet<> Sizes; ///< F's, for hostEvaluable
  NameTable Names;
  std::string BlockPerRowWord; ///< the pinned block_per_row, or ""
  bool RowsPinned, ThreadsPinned;
  /// Elements of a run of the nest being mapped (rowRunElements), 1 for
  /// none.
  int64_t RunElements = 1;
  int64_t RowsPerBlock, Threads;
  std::string Block, Warp, Lane, Row, Step, Thread;
};

} // namespace

void reduceRows(Func &F) {
  splitReductions(F);
  RowReducer R(F);
  launchNestVariants(F, LaunchClass::RowReduction,
                     [&](const Stmt &S, std::vector<Knob> &) { return R.rewriteNest(S); });
}

} // namespace tdsl
