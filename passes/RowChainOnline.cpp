//===- RowChainOnline.cpp - A max and the sum of exp(x - max) in one sweep -===//
//
// For the row-chain pass (passes/RowChain.h, online_softmax): where a row is
// re-read, a max reduction and the sum of exp(T - max) of its own term T
// after it fold in one sweep. Each thread keeps its sum relative to its
// running max and rescales it where that max grows; the butterflies combine
// (max, sum) pairs the same way. RowChainPhases.cpp's reduce calls these for
// a pair among the members of its sweep.
//
//===----------------------------------------------------------------------===//
#include "ir/Match.h"
#include "passes/RowChainMapper.h"

#include <cmath>

namespace tdsl::rowchain {

bool ChainMapper::followsMax(size_t I, size_t J) const {
  const RowPhase &PM = Phases[I], &PS = Phases[J];
  if (PM.Kind != RowPhaseKind::Reduction || PS.Kind != RowPhaseKind::Reduction ||
      PM.Op != BinaryOp::Max || PS.Op != BinaryOp::Add)
    return false;
  DType T = PM.Acc->Buf.Type;
  if (!isFloat(T) || PS.Acc->Buf.Type != T || PS.Init.size() != 1 ||
      !structurallyEqual(static_cast<const StoreNode &>(*PS.Init[0]).Value, identityOf(PS.Op, T)))
    return false;
  // The max's total goes to a value per row H, and the sum's term is
  // exp(T - H) of the max's own term: each term is at most the running
  // max, so rescaling keeps every partial sum in range.
  Expr Total = load(T, PM.Acc->Buf.Name, {intImm(0)});
  for (const Stmt &E : PM.Epilogue) {
    const auto &St = static_cast<const StoreNode &>(*E);
    if (!Nest.holds(St.Buffer) || St.Indices.size() != 1 || !structurallyEqual(St.Value, Total))
      continue;
    Expr Held = load(T, St.Buffer, {intImm(0)});
    if (structurallyEqual(PS.Term, call(Intrinsic::Exp, {sub(PM.Term, Held)})))
      return true;
  }
  return false;
}

Expr ChainMapper::maxRef(const Expr &M) const {
  DType T = M->Type;
  return select(binary(BinaryOp::Eq, M, floatImm(-INFINITY, T)), zeroOf(T), M);
}

Stmt ChainMapper::onlineFold(size_t I, size_t J, ExprReplacer &R, bool InRun) {
  const RowPhase &PM = Phases[I], &PS = Phases[J];
  unsigned Line = PS.Line;
  DType T = PM.Acc->Buf.Type;
  Expr Max = load(T, PM.Acc->Buf.Name, {intImm(0)});
  Expr Sum = load(T, PS.Acc->Buf.Name, {intImm(0)});
  Expr Run = load(T, RunMax, {intImm(0)});
  Expr Ref = var(MaxRef, T);
  Expr Term = apply(R, PM.Term);
  auto Each = [&](Stmt St) { return InRun ? perColumn(St, PM.Line) : St; };
  Stmt Grow = Each(store(RunMax, {intImm(0)}, binary(BinaryOp::Max, Run, Term), PM.Line));
  // exp(Max - Ref) is exactly 1 where the max did not grow.
  Stmt Rescale = block({store(PS.Acc->Buf.Name, {intImm(0)},
                              mul(Sum, call(Intrinsic::Exp, {sub(Max, Ref)})), Line),
                        store(PM.Acc->Buf.Name, {intImm(0)}, Run, PM.Line)},
                       Line);
  Stmt Fold = Each(store(PS.Acc->Buf.Name, {intImm(0)},
                         add(Sum, call(Intrinsic::Exp, {sub(Term, Ref)})), Line));
  Stmt Body = block({store(RunMax, {intImm(0)}, Max, PM.Line), Grow,
                     letStmt(MaxRef, maxRef(Run), block({Rescale, Fold}, Line), Line)},
                    Line);
  return allocate(tempBuffer(RunMax, T, {intImm(1)}, MemScope::Register), Body, Line);
}

Stmt ChainMapper::onlineButterflies(size_t I, size_t J, int64_t Lanes) const {
  const RowPhase &PM = Phases[I], &PS = Phases[J];
  unsigned Line = PS.Line;
  DType T = PM.Acc->Buf.Type;
  Expr Max = load(T, PM.Acc->Buf.Name, {intImm(0)});
  Expr Sum = load(T, PS.Acc->Buf.Name, {intImm(0)});
  Expr OMax = var(OtherMax, T), OSum = var(OtherSum, T), Ref = var(MaxRef, T);
  std::vector<Stmt> Out;
  for (int64_t D = Lanes / 2; D >= 1; D /= 2) {
    Stmt Combine = block(
        {store(PS.Acc->Buf.Name, {intImm(0)},
               add(mul(Sum, call(Intrinsic::Exp, {sub(Max, Ref)})),
                   mul(OSum, call(Intrinsic::Exp, {sub(OMax, Ref)}))),
               Line),
         store(PM.Acc->Buf.Name, {intImm(0)}, binary(BinaryOp::Max, Max, OMax), PM.Line)},
        Line);
    Combine = letStmt(MaxRef, maxRef(binary(BinaryOp::Max, Max, OMax)), Combine, Line);
    Combine = letStmt(OtherSum, call(Intrinsic::ShflXor, {Sum, intImm(D, DType::I32)}), Combine,
                      Line);
    Out.push_back(letStmt(OtherMax, call(Intrinsic::ShflXor, {Max, intImm(D, DType::I32)}),
                          Combine, Line));
  }
  return block(std::move(Out), Line);
}

} // namespace tdsl::rowchain
