//===- RowChainPhases.cpp - The code of one phase of a row chain ----------===//
//
// For the row-chain pass (passes/RowChain.h): a phase's loads in runs or
// one element at a time, held in registers or re-read; a reduction's fold,
// butterflies and warp totals; a map per element stored in runs.
//
//===----------------------------------------------------------------------===//
#include "ir/Match.h"
#include "ir/Simplify.h"
#include "passes/RowChainMapper.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

namespace tdsl::rowchain {

Stmt ChainMapper::byOwner(const Stmt &S) const {
  const auto &St = static_cast<const StoreNode &>(*S);
  if (Nest.holds(St.Buffer))
    return S;
  Expr Owner = binary(BinaryOp::Eq, tid(), intImm(0));
  return ifThen(Guard ? land(Owner, Guard) : Owner, S, nullptr, S->SrcLine);
}

Stmt ChainMapper::atRun(Stmt Body, unsigned Line) const {
  Expr C0 = mul(add(tid(), mul(var(Step), intImm(Block))), intImm(Width));
  return letStmt(Start, Peel ? add(var(Head), C0) : C0, Body, Line);
}

Stmt ChainMapper::overRuns(Mode M, Stmt Body, unsigned Line) const {
  if (M == Mode::Cached) {
    Expr Whole = Peel ? le(add(var(Start), intImm(Width)), Cols) : lt(var(Start), Cols);
    return forLoop(Step, intImm(0), intImm(Runs), ForKind::Unrolled,
                   atRun(ifThen(Whole, Body, nullptr, Line), Line), Line);
  }
  Expr RunsOfRow = Peel ? var(NumRuns) : idiv(Cols, intImm(Width));
  Expr Trips = idiv(add(sub(RunsOfRow, tid()), intImm(Block - 1)), intImm(Block));
  // A sweep that only reads (a reduction's) is unrolled by 4, so that a
  // thread has four runs' loads in flight where it had one, or by 2 in the
  // peeled version, whose offsets take registers; one that stores is not.
  // More (by 4 peeled, or the quotient's sweep) and softmax's 64-bit-index
  // kernel spilled. Blocks of 1024 threads (the long launch, a constant
  // row of over 32768 elements) stay rolled: ptxas holds them to 32
  // registers, and unrolled, softmax's and layernorm's 64-bit kernels
  // spilled.
  struct Stores : IRVisitor {
    const Func &F;
    bool Any = false;
    explicit Stores(const Func &F) : F(F) {}
    void visitStore(const StoreNode &N) override {
      Any |= findTensor(F, N.Buffer) != nullptr;
      IRVisitor::visitStore(N);
    }
  } S(F);
  S.visit(Body);
  unsigned Unroll = Block >= RowChainLongThreads || S.Any ? 0 : Peel ? 2 : 4;
  return forLoop(Step, intImm(0), Trips, ForKind::Serial, atRun(Body, Line), Line, Unroll);
}

Stmt ChainMapper::pieces(DType T, const std::function<Stmt(Expr, Expr)> &Copy,
                         unsigned Line) const {
  int64_t P = pieceOf(T);
  std::vector<Stmt> Out;
  for (int64_t Q = 0; Q < Width; Q += P) {
    Expr InRun = Q ? add(intImm(Q), var(V)) : var(V);
    Expr InRow = add(Q ? add(var(Start), intImm(Q)) : var(Start), var(V));
    Out.push_back(forLoop(V, intImm(0), intImm(P), ForKind::Serial, Copy(InRun, InRow), Line));
  }
  return block(std::move(Out), Line);
}

Stmt ChainMapper::fill(size_t K, const std::string &Dest, std::vector<Expr> Idx,
                       unsigned Line) const {
  return pieces(
      Staged[K]->Type,
      [&](Expr InRun, Expr InRow) {
        std::vector<Expr> At = Idx;
        At.push_back(InRun);
        return store(Dest, At, substitute(Staged[K], Col, InRow), Line);
      },
      Line);
}

Stmt ChainMapper::sweep(Mode M, const std::vector<Expr> &Reads, unsigned Line,
                        std::vector<bool> &Filled,
                        const std::function<Stmt(ExprReplacer &)> &PerElement,
                        const std::function<Stmt(ExprReplacer &)> &PerRun) {
  if (M == Mode::Scalar) {
    ExprReplacer None;
    Expr Trips = idiv(add(sub(Cols, tid()), intImm(Block - 1)), intImm(Block));
    return forLoop(Step, intImm(0), Trips, ForKind::Serial,
                   letStmt(Col, add(tid(), mul(var(Step), intImm(Block))), PerElement(None), Line),
                   Line, elementUnroll());
  }
  std::vector<Stmt> Before, Fills;
  std::vector<Buffer> Regs;
  ExprReplacer R;
  std::vector<Expr> Loads;
  for (const Expr &E : Reads)
    llvm::append_range(Loads, loadsOf(E));
  for (size_t K = 0; K < Staged.size(); ++K) {
    if (byElement(K) ||
        llvm::none_of(Loads, [&](const Expr &L) { return structurallyEqual(L, Staged[K]); }))
      continue;
    DType T = Staged[K]->Type;
    if (M == Mode::Cached && Cached[K]) {
      std::vector<Expr> At = {var(Step)};
      if (SharedRows)
        At.push_back(tid());
      if (!Filled[K])
        Before.push_back(overRuns(M, fill(K, CacheName[K], At, Line), Line));
      Filled[K] = true;
      if (!SharedRows) {
        R.Map.push_back({Staged[K], load(T, CacheName[K], {var(Step), var(V)})});
        continue;
      }
      // From shared memory, the run comes to registers in 16-byte pieces:
      // read an element at a time there, a warp's 2-byte loads 16 bytes
      // apart take four wavefronts each.
      Regs.push_back(tempBuffer(RunName[K], T, {intImm(Width)}, MemScope::Register));
      Fills.push_back(pieces(
          T,
          [&](Expr InRun, Expr) {
            std::vector<Expr> From = At;
            From.push_back(InRun);
            return store(RunName[K], {InRun}, load(T, CacheName[K], From), Line);
          },
          Line));
      R.Map.push_back({Staged[K], load(T, RunName[K], {var(V)})});
      continue;
    }
    Regs.push_back(tempBuffer(RunName[K], T, {intImm(Width)}, MemScope::Register));
    Fills.push_back(fill(K, RunName[K], {}, Line));
    R.Map.push_back({Staged[K], load(T, RunName[K], {var(V)})});
  }
  Fills.push_back(PerRun(R));
  Stmt Body = block(std::move(Fills), Line);
  for (auto It = Regs.rbegin(); It != Regs.rend(); ++It)
    Body = allocate(*It, Body, Line);
  if (Peel)
    Before.push_back(remainder(PerElement, Line));
  Before.push_back(overRuns(M, Body, Line));
  return block(std::move(Before), Line);
}

Expr ChainMapper::apply(ExprReplacer &R, const Expr &E) {
  Expr X = R.mutate(E);
  return Kept.Map.empty() ? X : Kept.mutate(X);
}

bool ChainMapper::dividesFloat(const Expr &E) {
  struct Divides : IRVisitor {
    bool Any = false;
    void visitBinary(const BinaryNode &N) override {
      Any |= N.Op == BinaryOp::Div && isFloat(N.Type);
      IRVisitor::visitBinary(N);
    }
  } D;
  D.visit(E);
  return D.Any;
}

bool ChainMapper::contains(const Expr &E, const Expr &Sub) {
  ExprReplacer F;
  F.Map.push_back({Sub, var("$sub", Sub->Type)});
  return !structurallyEqual(F.mutate(E), E);
}

bool ChainMapper::keepsTerm(size_t I) const {
  const RowPhase &P = Phases[I];
  if (P.Kind != RowPhaseKind::Reduction || !usesAnyVar(P.Term, {Col}))
    return false;
  struct Costly : IRVisitor {
    bool Any = false;
    void visitCall(const CallNode &N) override {
      Any |= N.Fn != Intrinsic::Relu && N.Fn != Intrinsic::Abs;
      IRVisitor::visitCall(N);
    }
    void visitBinary(const BinaryNode &N) override {
      Any |= N.Op == BinaryOp::Div;
      IRVisitor::visitBinary(N);
    }
  } C;
  C.visit(P.Term);
  if (!C.Any)
    return false;
  // A term that divides itself would hold the values kept so far across
  // each element's inline division, and they spill there.
  if (dividesFloat(P.Term))
    return false;
  // A kept term takes a register per element a thread holds (32). Beside
  // a 4-byte tensor along the row (32 more registers where it is held, its
  // 16-byte runs where it is re-read) that exceeds the 48 registers ptxas
  // leaves each thread of a 256-thread block, and they spill (attention's
  // f32 scores did).
  for (const Expr &S : Staged)
    if (dtypeBytes(S->Type) == 4)
      return false;
  // A reader that divides holds the kept values across its quotients: the
  // launch then divides inline (fdiv = inline, set in rowChain), as CUDA's
  // '/' would call a subroutine there, where they would spill.
  for (size_t J = I + 1; J < Phases.size(); ++J)
    if (Phases[J].Kind != RowPhaseKind::Row && contains(Phases[J].reads(), P.Term))
      return true;
  return false;
}

Stmt ChainMapper::perColumn(Stmt S, unsigned Line) const {
  if (usesAnyVar(S, {Col}))
    S = letStmt(Col, add(var(Start), var(V)), S, Line);
  return forLoop(V, intImm(0), intImm(Width), ForKind::Unrolled, S, Line);
}

Stmt ChainMapper::butterflies(const RowPhase &P, int64_t Lanes) const {
  std::vector<Stmt> Out;
  DType T = P.Acc->Buf.Type;
  Expr A = load(T, P.Acc->Buf.Name, {intImm(0)});
  for (int64_t D = Lanes / 2; D >= 1; D /= 2)
    Out.push_back(store(P.Acc->Buf.Name, {intImm(0)},
                        binary(P.Op, A, call(Intrinsic::ShflXor, {A, intImm(D, DType::I32)})),
                        P.Line));
  return block(std::move(Out), P.Line);
}

Stmt ChainMapper::reduce(Mode M, const std::vector<size_t> &Members,
                         const std::vector<std::string> &Totals, std::vector<bool> &Filled) {
  unsigned Line = Phases[Members.front()].Line;
  auto AccOf = [&](size_t I) {
    return load(Phases[I].Acc->Buf.Type, Phases[I].Acc->Buf.Name, {intImm(0)});
  };
  // One element of phase I: ACC = ACC OP E; held, a term a later phase
  // computes again is kept too.
  auto Step1 = [&](size_t I, ExprReplacer &R, bool InRun) {
    const RowPhase &P = Phases[I];
    Expr T = apply(R, P.Term);
    if (!InRun || M != Mode::Cached || KeepName[I].empty())
      return store(P.Acc->Buf.Name, {intImm(0)}, binary(P.Op, AccOf(I), T), P.Line);
    Expr Slot = load(T->Type, KeepName[I], {var(Step), var(V)});
    Kept.Map.push_back({T, Slot});
    return block({store(KeepName[I], {var(Step), var(V)}, T, P.Line),
                  store(P.Acc->Buf.Name, {intImm(0)}, binary(P.Op, AccOf(I), Slot), P.Line)},
                 P.Line);
  };
  std::vector<Stmt> Body;
  std::vector<Expr> Reads;
  for (size_t I : Members) {
    const RowPhase &P = Phases[I];
    llvm::append_range(Body, P.Init);
    // Every thread starts from init: right for max and min, and for +
    // and * only when init is the identity.
    Expr Identity = identityOf(P.Op, P.Acc->Buf.Type);
    if (!isIdempotent(P.Op) &&
        !(P.Init.size() == 1 &&
          structurallyEqual(static_cast<const StoreNode &>(*P.Init[0]).Value, Identity)))
      Body.push_back(ifThen(binary(BinaryOp::Ne, tid(), intImm(0)),
                            store(P.Acc->Buf.Name, {intImm(0)}, Identity, P.Line), nullptr,
                            P.Line));
    Reads.push_back(P.Term);
  }
  // Online pairs among the members (a re-read row): max J - 1's sum J,
  // consecutive members (sweepGroup).
  auto Paired = [&](size_t J) {
    return M != Mode::Cached && FollowsMax[J] && llvm::is_contained(Members, J - 1);
  };
  auto SumOf = [&](size_t I) -> int {
    return I + 1 < Phases.size() && Paired(I + 1) && llvm::is_contained(Members, I + 1)
               ? static_cast<int>(I + 1)
               : -1;
  };
  auto Steps = [&](ExprReplacer &R, bool InRun) {
    std::vector<Stmt> Plain, Out;
    for (size_t I : Members) {
      if (Paired(I))
        continue;
      if (int J = SumOf(I); J >= 0)
        Out.push_back(onlineFold(I, J, R, InRun));
      else
        Plain.push_back(Step1(I, R, InRun));
    }
    if (!Plain.empty()) {
      Stmt P = block(std::move(Plain), Line);
      Out.push_back(InRun ? perColumn(P, Line) : P);
    }
    return Out.size() == 1 ? Out.front() : block(std::move(Out), Line);
  };
  Body.push_back(sweep(
      M, Reads, Line, Filled, [&](ExprReplacer &R) { return Steps(R, false); },
      [&](ExprReplacer &R) { return Steps(R, true); }));
  for (size_t I : Members) {
    int64_t Lanes = std::min<int64_t>(Block, WarpSize);
    if (int J = SumOf(I); J >= 0)
      Body.push_back(onlineButterflies(I, J, Lanes));
    else if (!Paired(I))
      Body.push_back(butterflies(Phases[I], Lanes));
  }
  int64_t Warps = Block / WarpSize;
  if (Warps > 1) {
    for (size_t I : Members)
      Body.push_back(ifThen(binary(BinaryOp::Eq, lane(), intImm(0)),
                            store(Totals[I], {var(Warp)}, AccOf(I), Line), nullptr, Line));
    Body.push_back(barrier(Line));
    // Every aligned group of Group lanes takes the Warps totals, so that
    // every lane ends with the total: lanes past Warps in a group repeat
    // a total (max, min: lane % Warps covers every residue in any Group
    // consecutive lanes) or hold the identity (+, *).
    int64_t Group = static_cast<int64_t>(llvm::PowerOf2Ceil(Warps));
    Expr Slot = Warps == WarpSize ? lane() : imod(lane(), intImm(Warps));
    Expr InGroup = imod(lane(), intImm(Group));
    for (size_t I : Members) {
      if (Paired(I))
        continue;
      if (int J = SumOf(I); J >= 0) {
        // Lanes past Warps in a group hold the pair's identity (-inf, 0):
        // a repeated total would count its sum twice.
        for (size_t K : {I, static_cast<size_t>(J)}) {
          DType T = Phases[K].Acc->Buf.Type;
          Expr Total = load(T, Totals[K], {Slot});
          if (Group != Warps)
            Total = select(lt(InGroup, intImm(Warps)), load(T, Totals[K], {InGroup}),
                           K == I ? floatImm(-INFINITY, T) : zeroOf(T));
          Body.push_back(store(Phases[K].Acc->Buf.Name, {intImm(0)}, Total, Phases[K].Line));
        }
        Body.push_back(onlineButterflies(I, J, Group));
        continue;
      }
      const RowPhase &P = Phases[I];
      DType T = P.Acc->Buf.Type;
      Expr Total = load(T, Totals[I], {Slot});
      if (Group != Warps && !isIdempotent(P.Op)) {
        Total =
            select(lt(InGroup, intImm(Warps)), load(T, Totals[I], {InGroup}), identityOf(P.Op, T));
      }
      Body.push_back(store(P.Acc->Buf.Name, {intImm(0)}, Total, P.Line));
      Body.push_back(butterflies(P, Group));
    }
  }
  for (size_t I : Members)
    for (const Stmt &E : Phases[I].Epilogue)
      Body.push_back(byOwner(E));
  Stmt Out = block(std::move(Body), Line);
  for (auto It = Members.rbegin(); It != Members.rend(); ++It)
    Out = allocate(Phases[*It].Acc->Buf, Out, Phases[*It].Acc->SrcLine);
  return Out;
}

std::vector<size_t> ChainMapper::sweepGroup(size_t I) const {
  std::vector<size_t> Members = {I};
  std::vector<std::string> Written;
  for (size_t J = I;; ++J) {
    for (const Stmt &E : Phases[J].Epilogue)
      Written.push_back(static_cast<const StoreNode &>(*E).Buffer);
    if (J + 1 == Phases.size() || Phases[J + 1].Kind != RowPhaseKind::Reduction)
      return Members;
    // A sum that follows the max before it online reads the max's total
    // only through the pair's rescaling (onlineFold).
    bool Reads = !FollowsMax[J + 1] &&
                 llvm::any_of(loadsOf(Phases[J + 1].Term), [&](const Expr &L) {
      return llvm::is_contained(Written, static_cast<const LoadNode &>(*L).Buffer);
    });
    if (Reads)
      return Members;
    Members.push_back(J + 1);
  }
}

Stmt ChainMapper::elementwise(Mode M, const RowPhase &P, std::vector<bool> &Filled) {
  unsigned Line = P.Line;
  DType VT = P.Value->Type;
  // Lanes past the last row store nothing, but fill what they hold like
  // the others: the reductions after read it.
  auto Owned = [&](Stmt S) { return Guard ? ifThen(Guard, S, nullptr, Line) : S; };
  auto One = [&](ExprReplacer &R) {
    return Owned(store(P.Out, P.OutIdx, apply(R, P.Value), Line));
  };
  auto Run = [&](ExprReplacer &R) {
    Stmt Compute = perColumn(store(Val, {var(V)}, apply(R, P.Value), Line), Line);
    Stmt Write = pieces(
        VT,
        [&](Expr InRun, Expr InRow) {
          std::vector<Expr> Idx;
          for (const Expr &I : P.OutIdx)
            Idx.push_back(substitute(I, Col, InRow));
          return store(P.Out, Idx, load(VT, Val, {InRun}), Line);
        },
        Line);
    return allocate(tempBuffer(Val, VT, {intImm(Width)}, MemScope::Register),
                    block({Compute, Owned(Write)}, Line), Line);
  };
  return sweep(M, {P.Value}, Line, Filled, One, Run);
}

} // namespace tdsl::rowchain
