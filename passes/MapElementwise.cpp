//===- MapElementwise.cpp - Several elements per thread, loads before stores ===//
#include "passes/MapElementwise.h"
#include "passes/MapToGPU.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include "llvm/ADT/STLExtras.h"

#include <string>

namespace tdsl {

using namespace ir;

namespace {

/// True if E loads Buffer.
bool readsBuffer(const Expr &E, const std::string &Buffer) {
  return llvm::any_of(loadsOf(E), [&](const Expr &L) {
    return static_cast<const LoadNode &>(*L).Buffer == Buffer;
  });
}

class Mapper {
public:
  Mapper(Func &F, int64_t Threads, int64_t Items) : Names(F), Threads(Threads), Items(Items) {}

  Stmt map(const Stmt &S) {
    if (hasGPULoops(S))
      return S;
    LoopRun Run = outerSerialLoops(S);
    if (Run.Loops.empty() || Run.Inner->Kind != StmtKind::Store)
      return S;
    const auto &St = static_cast<const StoreNode &>(*Run.Inner);
    if (readsBuffer(St.Value, St.Buffer)) {
      remark("map-elementwise", S->SrcLine,
             "the value reads '" + St.Buffer + "', which the statement writes; left to map-to-gpu");
      return S;
    }
    unsigned Line = S->SrcLine;
    if (BX.empty()) {
      BX = Names.fresh("bx");
      TX = Names.fresh("tx");
      T = Names.fresh("t");
      U = Names.fresh("u");
      Val = Names.fresh("val");
    }
    // t -> the loop variables, innermost fastest (as map-to-gpu does).
    Expr Total = flatExtent(Run.Loops);
    auto WithVars = [&](Stmt Body) { return bindFlatIndex(Run.Loops, var(T), Body); };
    auto Round = [&](Stmt Body) {
      Expr TV = add(add(mul(var(BX), intImm(Threads * Items)), mul(var(U), intImm(Threads))),
                    var(TX));
      return forLoop(U, intImm(0), intImm(Items), ForKind::Serial,
                     letStmt(T, TV, ifThen(lt(var(T), Total), WithVars(Body), nullptr, Line), Line),
                     Line);
    };
    DType VT = St.Value->Type;
    Stmt Compute = Round(store(Val, {var(U)}, St.Value, Line));
    Stmt Write = Round(store(St.Buffer, St.Indices, load(VT, Val, {var(U)}), Line));
    Stmt Body = allocate(tempBuffer(Val, VT, {intImm(Items)}, MemScope::Register),
                         block({Compute, Write}), Line);
    Body = block({note("[map-elementwise] " + std::to_string(Items) + " elements per thread, " +
                           std::to_string(Threads * Items) +
                           " per block, consecutive threads on consecutive elements; every "
                           "value is computed before the first store, so " +
                           std::to_string(Items) + " loads per thread are in flight",
                       Line),
                  Body});
    Body = forLoop(TX, intImm(0), intImm(Threads), ForKind::ThreadX, Body, Line);
    Expr Blocks = binary(BinaryOp::Div, add(Total, intImm(Threads * Items - 1)),
                         intImm(Threads * Items));
    return forLoop(BX, intImm(0), Blocks, ForKind::BlockX, Body, Line);
  }

private:
  NameTable Names;
  int64_t Threads, Items;
  std::string BX, TX, T, U, Val;
};

} // namespace

void mapElementwise(Func &F) {
  Mapper M(F, knobInt(F, "threads", MapToGPUThreads), knobInt(F, "items_per_thread", 4));
  rewriteNests(F, [&](const Stmt &S) { return M.map(S); });
}

} // namespace tdsl
