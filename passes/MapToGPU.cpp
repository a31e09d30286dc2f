//===- MapToGPU.cpp - One launch per statement, one thread per output -----===//
#include "passes/MapToGPU.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace tdsl {

using namespace ir;

namespace {

class Mapper {
public:
  Mapper(Func &F, int64_t Threads) : Names(F), Threads(Threads) {}

  Stmt mapNest(const Stmt &S) {
    LoopRun Run = outerSerialLoops(S);
    unsigned Line = S->SrcLine;
    // Sibling launches may share names (their scopes are disjoint), so the
    // names are drawn once: every launch reads bx, tx, t.
    if (BX.empty()) {
      BX = Names.fresh("bx");
      TX = Names.fresh("tx");
      T = Names.fresh("t");
    }
    if (Run.Loops.empty()) {
      // 1. Rank 0: one thread of one block.
      remark("map-to-gpu", Line, "took it: one thread of one block (a scalar output)");
      return forLoop(BX, intImm(0), intImm(1), ForKind::BlockX,
                     forLoop(TX, intImm(0), intImm(1), ForKind::ThreadX, S, Line), Line);
    }

    // 2. Each loop variable from t = bx * Threads + tx, innermost fastest:
    //    consecutive threads touch consecutive elements of a row-major
    //    output (coalesced); threads past the total do nothing.
    Expr TVar = var(T);
    Expr Total = flatExtent(Run.Loops);
    Stmt Body = bindFlatIndex(Run.Loops, TVar, Run.Inner);
    Body = ifThen(lt(TVar, Total), Body, nullptr, Line);
    Body = letStmt(T, add(mul(var(BX), intImm(Threads)), var(TX)), Body, Line);
    Body = forLoop(TX, intImm(0), intImm(Threads), ForKind::ThreadX, Body, Line);
    remark("map-to-gpu", Line,
           "took it: one thread per output element, " + std::to_string(Threads) +
               " threads per block");
    Expr Blocks = binary(BinaryOp::Div, add(Total, intImm(Threads - 1)), intImm(Threads));
    return forLoop(BX, intImm(0), Blocks, ForKind::BlockX, Body, Line);
  }

private:
  NameTable Names;
  int64_t Threads;
  std::string BX, TX, T;
};

} // namespace

void mapToGPU(Func &F) {
  Mapper M(F, knobInt(F, "threads", MapToGPUThreads));
  launchNests(F, LaunchClass::Generic,
              [&](const Stmt &S, std::vector<Knob> &) { return M.mapNest(S); });
}

} // namespace tdsl
