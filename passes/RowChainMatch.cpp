//===- RowChainMatch.cpp - The nest of a row chain ------------------------===//
#include "passes/RowChainMatch.h"
#include "ir/Match.h"
#include "ir/Printer.h"

#include "llvm/ADT/STLExtras.h"

namespace tdsl {

using namespace ir;

namespace {

bool isOneRegister(const Stmt &S) {
  if (S->Kind != StmtKind::Allocate)
    return false;
  const Buffer &B = static_cast<const AllocateNode &>(*S).Buf;
  return B.Scope == MemScope::Register && B.rank() == 1 && asConstInt(B.Shape[0]) == 1;
}

class Matcher {
public:
  Matcher(const Func &F, const std::string &Col) : F(F), Col(Col) {}

  // Peel the values per row until the body parses as two or more phases.
  std::optional<ChainNest> match(const Stmt &S, std::string &Why) {
    N.Run = outerSerialLoops(S);
    if (N.Run.Loops.empty())
      return std::nullopt;
    Stmt Body = N.Run.Inner;
    for (;;) {
      std::vector<Stmt> Stmts = flattenBlocks(Body);
      Why.clear();
      N.Phases.clear();
      if (Stmts.size() >= 2 && parse(Stmts, Why))
        return std::move(N);
      if (Stmts.size() == 1 && isOneRegister(Stmts[0])) {
        N.Held.push_back(static_cast<const AllocateNode *>(Stmts[0].get()));
        Body = N.Held.back()->Body;
        continue;
      }
      if (N.Held.empty())
        Why.clear(); // not a chain's nest at all
      return std::nullopt;
    }
  }

private:
  const Func &F;
  const std::string &Col;
  ChainNest N;
  std::vector<RowPhase> &Phases = N.Phases;
  Expr &Cols = N.Cols;

  /// A store a thread may run outside a column loop: to a value per row,
  /// or to a global tensor at an index free of the column.
  bool rowStore(const Stmt &S) const {
    if (S->Kind != StmtKind::Store)
      return false;
    const auto &St = static_cast<const StoreNode &>(*S);
    return N.holds(St.Buffer) || findTensor(F, St.Buffer);
  }

  bool columnLoop(const Stmt &S, std::string &Why) {
    if (S->Kind != StmtKind::For)
      return false;
    const auto &L = static_cast<const ForNode &>(*S);
    if (L.Loop != ForKind::Serial || asConstInt(L.Min) != 0) {
      Why = "the loop over '" + L.Var + "' is not a serial loop from 0";
      return false;
    }
    if (!Cols)
      Cols = L.Extent;
    else if (!structurallyEqual(Cols, L.Extent)) {
      Why = "the loops over the row do not all run over " + toString(Cols);
      return false;
    }
    return true;
  }

  bool parse(const std::vector<Stmt> &Stmts, std::string &Why) {
    Cols = nullptr;
    bool AnyReduction = false;
    for (const Stmt &S : Stmts) {
      RowPhase P;
      P.Line = S->SrcLine;
      if (rowStore(S)) {
        P.Row = S;
      } else if (S->Kind == StmtKind::For) {
        if (!columnLoop(S, Why))
          return false;
        const auto &L = static_cast<const ForNode &>(*S);
        Stmt In = stripBlocks(L.Body);
        if (In->Kind != StmtKind::Store || !findTensor(F, static_cast<const StoreNode &>(*In).Buffer))
          return false;
        const auto &St = static_cast<const StoreNode &>(*In);
        P.Kind = RowPhaseKind::Element;
        P.Out = St.Buffer;
        for (const Expr &I : St.Indices)
          P.OutIdx.push_back(substitute(I, L.Var, var(Col)));
        P.Value = substitute(St.Value, L.Var, var(Col));
      } else if (isOneRegister(S)) {
        if (!reduction(static_cast<const AllocateNode &>(*S), P, Why))
          return false;
        AnyReduction = true;
      } else {
        return false;
      }
      Phases.push_back(std::move(P));
    }
    if (!AnyReduction)
      return false;
    // A global tensor the chain writes is not read in it: another thread
    // may not have written it yet.
    for (const RowPhase &W : Phases) {
      std::string Written = W.Kind == RowPhaseKind::Element ? W.Out
                            : W.Kind == RowPhaseKind::Row
                                ? static_cast<const StoreNode &>(*W.Row).Buffer
                                : std::string();
      if (Written.empty() || N.holds(Written))
        continue;
      for (const RowPhase &R : Phases) {
        Expr E = R.Kind == RowPhaseKind::Row ? static_cast<const StoreNode &>(*R.Row).Value : R.reads();
        for (const Expr &L : loadsOf(E))
          if (static_cast<const LoadNode &>(*L).Buffer == Written) {
            Why = "the chain reads '" + Written + "', which it also writes";
            return false;
          }
      }
    }
    return true;
  }

  /// ACC: init stores, one column loop folding E with OP, then stores.
  bool reduction(const AllocateNode &A, RowPhase &P, std::string &Why) {
    std::vector<Stmt> Stmts = flattenBlocks(A.Body);
    DType T = A.Buf.Type;
    if (T != DType::I32 && T != DType::I64 && T != DType::F32 && T != DType::F64) {
      Why = "accumulator '" + A.Buf.Name + "' of type " + dtypeName(T).str() +
            " has no warp shuffle";
      return false;
    }
    size_t I = 0;
    for (; I < Stmts.size() && Stmts[I]->Kind == StmtKind::Store; ++I) {
      const auto &St = static_cast<const StoreNode &>(*Stmts[I]);
      if (St.Buffer != A.Buf.Name || hasLoads(St.Value))
        return false;
      P.Init.push_back(Stmts[I]);
    }
    if (P.Init.empty() || I == Stmts.size() || !columnLoop(Stmts[I], Why))
      return false;
    const auto &L = static_cast<const ForNode &>(*Stmts[I]);
    for (size_t E = I + 1; E < Stmts.size(); ++E) {
      if (!rowStore(Stmts[E]))
        return false;
      P.Epilogue.push_back(Stmts[E]);
    }
    Stmt Step = stripBlocks(L.Body);
    const auto *St =
        Step->Kind == StmtKind::Store ? static_cast<const StoreNode *>(Step.get()) : nullptr;
    const auto *Bin = St && St->Value->Kind == ExprKind::Binary
                          ? static_cast<const BinaryNode *>(St->Value.get())
                          : nullptr;
    if (!Bin || St->Buffer != A.Buf.Name || !isReductionOp(Bin->Op))
      return false;
    Expr AccValue = load(T, A.Buf.Name, {intImm(0)});
    Expr E = structurallyEqual(Bin->A, AccValue)   ? Bin->B
             : structurallyEqual(Bin->B, AccValue) ? Bin->A
                                                   : nullptr;
    if (!E)
      return false;
    if (llvm::any_of(loadsOf(E), [&](const Expr &X) {
          return static_cast<const LoadNode &>(*X).Buffer == A.Buf.Name;
        })) {
      Why = "the step of '" + A.Buf.Name + "' reads it twice";
      return false;
    }
    P.Kind = RowPhaseKind::Reduction;
    P.Acc = &A;
    P.Op = Bin->Op;
    P.Term = substitute(E, L.Var, var(Col));
    return true;
  }
};

} // namespace

bool ChainNest::holds(const std::string &Name) const {
  return llvm::any_of(Held, [&](const AllocateNode *A) { return A->Buf.Name == Name; });
}

std::optional<ChainNest> matchRowChain(const Func &F, const Stmt &S, const std::string &Col,
                                       std::string &Why) {
  return Matcher(F, Col).match(S, Why);
}

} // namespace tdsl
