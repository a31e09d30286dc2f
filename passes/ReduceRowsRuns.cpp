//===- ReduceRowsRuns.cpp - A row reduction's share read in 16-byte runs --===//
#include "passes/ReduceRowsRuns.h"

#include "ir/Match.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

namespace tdsl {

using namespace ir;

namespace {

constexpr unsigned RunsUnroll = 2;

/// The element-at-a-time loop: c = min + Tid + Step * Threads.
Stmt strided(const ForNode &Loop, const std::string &Step, const Expr &Tid, int64_t Threads) {
  Expr C = add(Tid, mul(var(Step), intImm(Threads)));
  if (asConstInt(Loop.Min) != 0)
    C = add(C, Loop.Min);
  Expr Trips =
      binary(BinaryOp::Div, add(sub(Loop.Extent, Tid), intImm(Threads - 1)), intImm(Threads));
  return forLoop(Step, intImm(0), Trips, ForKind::Serial,
                 letStmt(Loop.Var, C, Loop.Body, Loop.SrcLine), Loop.SrcLine);
}

/// The loads of the step S that read a global tensor along C at their
/// last index (X[..., c] with c nowhere else), each once; Ok false if a
/// load that moves with C has elements of 8 bytes (a run of 16 would take
/// two). Other loads that move with C (a column vector x[c, 0]) stay
/// element loads in the runs.
std::vector<Expr> runLoads(const Func &F, const Stmt &S, const std::string &C, bool &Ok) {
  Ok = false;
  Stmt Step = stripBlocks(S);
  if (Step->Kind != StmtKind::Store)
    return {};
  std::vector<Expr> Out;
  for (const Expr &E : loadsOf(static_cast<const StoreNode &>(*Step).Value)) {
    const auto &L = static_cast<const LoadNode &>(*E);
    if (!usesAnyVar(E, {C}))
      continue;
    if (dtypeBytes(L.Type) > 4)
      return {};
    const Buffer *B = findTensor(F, L.Buffer);
    if (B && B->Scope == MemScope::Global && contiguousIn(L.Indices, C) &&
        llvm::none_of(Out, [&](const Expr &X) { return structurallyEqual(X, E); }))
      Out.push_back(E);
  }
  Ok = true;
  return Out;
}

/// What a thread's runs read: the loads, the run's elements W and the
/// test that proves them aligned; W 1 where there are none.
struct RunPlan {
  std::vector<Expr> Loads;
  int64_t W = 1;
  Expr Test;
};

RunPlan planRuns(const Func &F, const ForNode &Loop) {
  RunPlan P;
  bool Ok = false;
  std::vector<Expr> Loads = runLoads(F, Loop.Body, Loop.Var, Ok);
  if (!Ok || Loads.empty() || asConstInt(Loop.Min) != 0)
    return P;
  int64_t Widest = 1;
  for (const Expr &L : Loads)
    Widest = std::max<int64_t>(Widest, dtypeBytes(L->Type));
  int64_t W = 16 / Widest;
  std::vector<std::string> Tensors;
  for (const Expr &L : Loads) {
    const std::string &Name = static_cast<const LoadNode &>(*L).Buffer;
    if (!llvm::is_contained(Tensors, Name))
      Tensors.push_back(Name);
  }
  std::optional<Expr> Test =
      runTest(F, Loop.Extent, Tensors, W, [&](DType T) { return W * dtypeBytes(T); });
  if (!Test)
    return P;
  P.Loads = std::move(Loads);
  P.W = W;
  P.Test = *Test;
  return P;
}

} // namespace

int64_t rowRunElements(const Func &F, const ForNode &Loop) { return planRuns(F, Loop).W; }

Stmt foldRowShare(const Func &F, NameTable &Names, const ForNode &Loop, const std::string &Step,
                  const Expr &Tid, int64_t Threads) {
  Stmt Scalar = strided(Loop, Step, Tid, Threads);
  RunPlan P = planRuns(F, Loop);
  if (P.W == 1)
    return Scalar;
  const std::vector<Expr> &Loads = P.Loads;
  int64_t W = P.W;

  // Each operand's run into registers, then the W steps on them.
  std::string C0 = Names.fresh(Loop.Var + "_at"), V = Names.fresh("v");
  Expr At = add(var(C0), var(V));
  unsigned Line = Loop.SrcLine;
  ExprReplacer FromRuns;
  std::vector<Stmt> Copies;
  std::vector<Buffer> Regs;
  for (const Expr &E : Loads) {
    const auto &L = static_cast<const LoadNode &>(*E);
    Buffer R = tempBuffer(Names.fresh(L.Buffer + "_run"), L.Type, {intImm(W)}, MemScope::Register);
    Copies.push_back(forLoop(V, intImm(0), intImm(W), ForKind::Serial,
                             store(R.Name, {var(V)}, substitute(E, Loop.Var, At), Line), Line));
    FromRuns.Map.push_back({E, load(L.Type, R.Name, {var(V)})});
    Regs.push_back(std::move(R));
  }
  Stmt Steps = forLoop(V, intImm(0), intImm(W), ForKind::Serial,
                       letStmt(Loop.Var, At, FromRuns.mutate(Loop.Body), Line), Line);
  Copies.push_back(Steps);
  Stmt Body = block(std::move(Copies), Line);
  for (auto It = Regs.rbegin(); It != Regs.rend(); ++It)
    Body = allocate(*It, Body, Line);
  Expr Trips =
      binary(BinaryOp::Div,
             add(sub(binary(BinaryOp::Div, Loop.Extent, intImm(W)), Tid), intImm(Threads - 1)),
             intImm(Threads));
  Expr Start = mul(add(Tid, mul(var(Step), intImm(Threads))), intImm(W));
  // Unrolled by 2 here: unroll's partial factor goes to innermost loops
  // only, and two runs of each operand in flight a thread is what a few
  // blocks a row need to keep the copy rate.
  Stmt Wide = forLoop(Step, intImm(0), Trips, ForKind::Serial, letStmt(C0, Start, Body, Line), Line,
                      RunsUnroll);
  return ifThen(P.Test, Wide, Scalar, Line);
}

} // namespace tdsl
