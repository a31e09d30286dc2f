//===- Unroll.cpp - Full and partial unrolling of inner loops -------------===//
#include "passes/Unroll.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include <string>

namespace tdsl {

using namespace ir;

namespace {

/// Statements of S after full unrolling of its constant loops, counted
/// up to a little over Cap.
int64_t unrolledSize(const Stmt &S, int64_t Cap) {
  struct Counter : IRVisitor {
    int64_t Scale = 1, Count = 0, Cap = 0;
    void visit(const Stmt &S) override {
      if (!S || Count > Cap)
        return;
      if (S->Kind != StmtKind::Block)
        Count += Scale;
      IRVisitor::visit(S);
    }
    using IRVisitor::visit;
    void visitFor(const ForNode &N) override {
      int64_t Trip = asConstInt(N.Extent).value_or(1);
      int64_t Saved = Scale;
      Scale *= std::max<int64_t>(Trip, 1);
      visit(N.Body);
      Scale = Saved;
    }
  } C;
  C.Cap = Cap;
  C.visit(S);
  return C.Count;
}

bool holdsBarrierOrLoop(const Stmt &S, bool &HasLoop) {
  struct Finder : IRVisitor {
    bool Barrier = false, Loop = false;
    void visitBarrier(const BarrierNode &) override { Barrier = true; }
    void visitFor(const ForNode &N) override {
      Loop = true;
      IRVisitor::visitFor(N);
    }
  } F;
  F.visit(S);
  HasLoop = F.Loop;
  return F.Barrier;
}

class Unroller : public IRMutator {
public:
  Unroller(int64_t Limit, unsigned Factor) : Limit(Limit), Factor(Factor) {}
  unsigned Full = 0, Partial = 0;

protected:
  Stmt visitFor(const ForNode &N, const Stmt &S) override {
    Stmt Body = mutate(N.Body);
    if (N.Loop != ForKind::Serial)
      return Body == N.Body ? S : forLoop(N.Var, N.Min, N.Extent, N.Loop, Body, N.SrcLine, N.Unroll);
    // Inner loops are decided first (above); then this one.
    std::optional<int64_t> Trip = asConstInt(N.Extent);
    bool InnerLoop = false;
    bool Barrier = holdsBarrierOrLoop(Body, InnerLoop);
    // 1. Full: a small constant trip count, a body small enough unrolled,
    //    no barrier inside (its body synchronizes), not marked to stay
    //    rolled (serial(1)).
    if (Trip && *Trip > 1 && *Trip <= Limit && !Barrier && N.Unroll != 1 &&
        *Trip * unrolledSize(Body, 4096) <= 4096) {
      ++Full;
      return forLoop(N.Var, N.Min, N.Extent, ForKind::Unrolled, Body, N.SrcLine);
    }
    // 2. Partial: an unknown trip count, innermost, no barrier, no factor
    //    chosen yet.
    if (!Trip && !InnerLoop && !Barrier && Factor > 1 && N.Unroll == 0) {
      ++Partial;
      return forLoop(N.Var, N.Min, N.Extent, ForKind::Serial, Body, N.SrcLine, Factor);
    }
    return Body == N.Body ? S : forLoop(N.Var, N.Min, N.Extent, N.Loop, Body, N.SrcLine, N.Unroll);
  }

private:
  int64_t Limit;
  unsigned Factor;
};

} // namespace

void unroll(Func &F) {
  int64_t Limit = knobInt(F, "unroll_limit", 16);
  unsigned Factor = static_cast<unsigned>(knobInt(F, "unroll", 4));
  rewriteNests(F, [&](const Stmt &S) {
    Unroller U(Limit, Factor);
    Stmt Out = U.mutate(S);
    if (Out == S)
      return S;
    remark("unroll", S->SrcLine,
           std::to_string(U.Full) + " loop(s) unrolled fully, " + std::to_string(U.Partial) +
               " by " + std::to_string(Factor));
    return Out;
  });
}

} // namespace tdsl
