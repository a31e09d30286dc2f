//===- ReduceRows.cpp - One warp per row of a row reduction ---------------===//
#include "passes/ReduceRows.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

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

/// Combining the lanes' partials reassociates OP, so only the four
/// associative and commutative ones qualify.
bool isReductionOp(BinaryOp Op) {
  return Op == BinaryOp::Add || Op == BinaryOp::Mul || Op == BinaryOp::Max || Op == BinaryOp::Min;
}

/// The value x with x OP y == y for every y, for the ops whose result
/// changes when a lane folds in init a second time (+ and *).
Expr identityOf(BinaryOp Op, DType T) {
  if (Op == BinaryOp::Add)
    return zeroOf(T);
  return isFloat(T) ? floatImm(1.0, T) : intImm(1, T);
}

/// Why lanes striding C would not read E's operands faster than one thread
/// per output does, or "" when they would. Lanes own interleaved C, so a
/// load coalesces only where C is its contiguous (last) index; a load
/// along another dimension would send each lane to its own row, and one
/// whose last index also follows the innermost row InnerRow is coalesced
/// across map-to-gpu's threads already.
std::string strideProblem(const Expr &E, const std::string &C, const std::string &InnerRow,
                          const std::string &Acc) {
  bool Contiguous = false;
  for (const Expr &LE : loadsOf(E)) {
    const auto *L = static_cast<const LoadNode *>(LE.get());
    if (L->Buffer == Acc)
      return "the operand of the step reads '" + Acc + "' itself";
    if (llvm::none_of(L->Indices, [&](const Expr &X) { return usesAnyVar(X, {C}); }))
      continue; // the same element for the whole row: a broadcast
    if (L->Indices.empty() || !usesAnyVar(L->Indices.back(), {C}))
      return "the reduction over '" + C + "' is not along the innermost dimension of '" +
             L->Buffer + "', so one thread per output already reads consecutive elements";
    if (usesAnyVar(L->Indices.back(), {InnerRow}))
      return "'" + L->Buffer + "' is read along '" + InnerRow +
             "' too, so one thread per output already reads consecutive elements";
    Contiguous = true;
  }
  if (!Contiguous)
    return "no load of the reduction over '" + C + "' moves along '" + C + "'";
  return "";
}

class RowReducer {
public:
  RowReducer(Func &F, int64_t RowsPerBlock) : Names(F), RowsPerBlock(RowsPerBlock) {}

  Stmt rewriteNest(const Stmt &S) {
    // A launch already: whichever pass made it chose its mapping.
    if (hasGPULoops(S))
      return S;
    LoopRun Run = outerSerialLoops(S);
    if (Run.Inner->Kind != StmtKind::Allocate)
      return S;
    const auto &Acc = static_cast<const AllocateNode &>(*Run.Inner);
    if (Acc.Buf.Scope != MemScope::Register || Acc.Buf.rank() != 1 ||
        asConstInt(Acc.Buf.Shape[0]) != 1)
      return S; // not an accumulator: an elementwise nest
    std::string Why;
    std::optional<RowReduction> R = match(Run, Acc, Why);
    if (!R) {
      remark("reduce-rows", Acc.SrcLine, Why + "; left to map-to-gpu");
      return S;
    }
    return rewrite(S->SrcLine, Run, *R);
  }

private:
  std::optional<RowReduction> match(const LoopRun &Run, const AllocateNode &Acc, std::string &Why) {
    const std::string &AccName = Acc.Buf.Name;
    DType T = Acc.Buf.Type;
    if (Run.Loops.empty()) {
      Why = "a reduction to a scalar has no rows to give warps";
      return std::nullopt;
    }
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

    Why = strideProblem(E, R.Loop->Var, Run.Loops.back()->Var, AccName);
    if (!Why.empty())
      return std::nullopt;
    return R;
  }

  Stmt rewrite(unsigned Line, const LoopRun &Run, const RowReduction &R) {
    const AllocateNode &Acc = *R.Acc;
    const ForNode &Loop = *R.Loop;
    DType T = Acc.Buf.Type;
    // Sibling launches have disjoint scopes, so every launch reads the same
    // names.
    if (Block.empty()) {
      Block = Names.fresh("rb");
      Warp = Names.fresh("warp");
      Lane = Names.fresh("lane");
      Row = Names.fresh("row");
      Step = Names.fresh("cc");
    }
    Expr LaneVar = var(Lane);
    Expr AccValue = load(T, Acc.Buf.Name, {intImm(0)});
    auto StoreAcc = [&](Expr V, unsigned L) {
      return store(Acc.Buf.Name, {intImm(0)}, std::move(V), L);
    };

    std::vector<Stmt> Body = R.Init;
    // Every lane starts from init, so init enters the result 32 times: right
    // for max and min, and for + and * only when init is the identity.
    bool Idempotent = R.Op == BinaryOp::Max || R.Op == BinaryOp::Min;
    Expr Identity = identityOf(R.Op, T);
    if (!Idempotent &&
        !(R.Init.size() == 1 &&
          structurallyEqual(static_cast<const StoreNode &>(*R.Init[0]).Value, Identity)))
      Body.push_back(ifThen(binary(BinaryOp::Ne, LaneVar, intImm(0)),
                            StoreAcc(Identity, Acc.SrcLine), nullptr, Acc.SrcLine));

    // Lane l takes c = min + l + 32 * cc for every such c below min + extent.
    Expr C = add(LaneVar, mul(var(Step), intImm(WarpSize)));
    if (asConstInt(Loop.Min) != 0)
      C = add(C, Loop.Min);
    Expr Trips = binary(BinaryOp::Div, add(sub(Loop.Extent, LaneVar), intImm(WarpSize - 1)),
                        intImm(WarpSize));
    Body.push_back(forLoop(Step, intImm(0), Trips, ForKind::Serial,
                           letStmt(Loop.Var, C, Loop.Body, Loop.SrcLine), Loop.SrcLine));

    // Butterfly: after the step of distance d every lane holds the partial
    // of its 2d-lane group, and after d = 1 all 32 hold the total.
    for (int64_t D = WarpSize / 2; D >= 1; D /= 2)
      Body.push_back(StoreAcc(
          binary(R.Op, AccValue, call(Intrinsic::ShflXor, {AccValue, intImm(D, DType::I32)})),
          Loop.SrcLine));
    if (!R.Epilogue.empty())
      Body.push_back(ifThen(binary(BinaryOp::Eq, LaneVar, intImm(0)),
                            block(R.Epilogue, Acc.SrcLine), nullptr, Acc.SrcLine));
    Stmt Inner = allocate(Acc.Buf, block(std::move(Body), Acc.SrcLine), Acc.SrcLine);

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
    std::string Why = "[reduce-rows] one warp per row, " + std::to_string(RowsPerBlock) +
                      " rows per block: lanes stride the row so each load instruction "
                      "reads 32 consecutive elements; shfl_xor butterfly, no shared memory";
    Expr Blocks = binary(BinaryOp::Div, add(Rows, intImm(RowsPerBlock - 1)), intImm(RowsPerBlock));
    return forLoop(Block, intImm(0), Blocks, ForKind::BlockX, block({note(Why, Line), Warps}, Line),
                   Line);
  }

  NameTable Names;
  int64_t RowsPerBlock;
  std::string Block, Warp, Lane, Row, Step;
};

} // namespace

void reduceRows(Func &F) {
  RowReducer R(F, knobInt(F, "rows_per_block", ReduceRowsPerBlock));
  rewriteNests(F, [&](const Stmt &S) { return R.rewriteNest(S); });
}

} // namespace tdsl
