//===- RowChain.cpp - One block per row for a chain of row reductions -----===//
#include "passes/RowChain.h"
#include "passes/RowChainMatch.h"
#include "ir/Match.h"
#include "ir/Printer.h"
#include "ir/Simplify.h"
#include "passes/PassUtils.h"
#include "passes/ReduceRows.h"
#include "passes/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace tdsl {

using namespace ir;

namespace {

constexpr int64_t WarpSize = 32;


/// How a version reads the row: one element a thread at a time, runs of
/// Width elements re-read from memory in each phase, or runs held in
/// registers across the phases.
enum class Mode { Scalar, Wide, Cached };


class ChainMapper {
public:
  explicit ChainMapper(Func &F)
      : F(F), Names(F), ThreadsPinned(findKnob(F, "reduce_threads") != nullptr),
        Threads(knobInt(F, "reduce_threads", ReduceBlockThreads)) {}

  // 1. Peel the values per row until the body parses as two or more
  //    phases; anything else is left to reduce-rows and map-to-gpu.
  // 2. Which loads move along the row in runs (plan).
  // 3. Build the launch: a block per row, three versions (build).
  Stmt rewriteNest(const Stmt &S) {
    if (Col.empty())
      takeNames();
    std::string Why;
    std::optional<ChainNest> N = matchRowChain(F, S, Col, Why);
    if (!N) {
      if (!Why.empty())
        remark("row-chain", S->SrcLine, Why + "; left to the passes after it");
      return S;
    }
    Held = N->Held;
    Phases = std::move(N->Phases);
    Cols = N->Cols;
    LoopRun Run = N->Run;
    if (Threads < WarpSize || Threads > 1024 || Threads % WarpSize) {
      remark("row-chain", S->SrcLine,
             "reduce_threads = " + std::to_string(Threads) +
                 " is not a multiple of 32 in [32, 1024]; left to the passes after it");
      return S;
    }
    plan();
    return build(S->SrcLine, Run);
  }

private:
  Func &F;
  NameTable Names;
  bool ThreadsPinned;
  int64_t Threads;
  std::vector<const AllocateNode *> Held;
  std::vector<RowPhase> Phases;
  Expr Cols;             ///< the row length C
  int64_t Block = 0;     ///< threads per row
  // The runs: each load of a 2- or 4-byte tensor contiguous along the row.
  std::vector<Expr> Staged;
  std::vector<bool> Cached; ///< read by two or more phases: held in registers
  std::vector<std::string> RunName, CacheName;
  int64_t Width = 0;     ///< elements per run; 0: no runs
  int64_t Runs = 0;      ///< runs a thread holds
  Expr WideCond, CachedCond;
  std::string WideWhy;
  std::string Row, Warp, Lane, Tid, Step, Start, V, Col, Val;

  void takeNames() {
    Row = Names.fresh("row");
    Warp = Names.fresh("warp");
    Lane = Names.fresh("lane");
    Tid = Names.fresh("tid");
    Step = Names.fresh("j");
    Start = Names.fresh("c0");
    V = Names.fresh("v");
    Col = Names.fresh("c");
    Val = Names.fresh("val");
  }

  bool isHeld(const std::string &Name) const {
    return llvm::any_of(Held, [&](const AllocateNode *A) { return A->Buf.Name == Name; });
  }

  // The runs (as map-elementwise's): a run is 16 bytes of the widest
  // tensor taking part, and every tensor read or written along the row
  // takes part, or none does (one left out would be accessed with a
  // stride of a run).
  void plan() {
    Staged.clear();
    Cached.clear();
    RunName.clear();
    CacheName.clear();
    Width = 0;
    WideCond = CachedCond = nullptr;
    auto Stageable = [](DType T) { return dtypeBytes(T) == 4 || dtypeBytes(T) == 2; };
    bool Odd = false;
    int64_t Narrowest = 0;
    std::vector<std::string> Wide;
    std::vector<unsigned> Uses;
    for (const RowPhase &P : Phases) {
      if (P.Kind == RowPhaseKind::Row)
        continue;
      std::vector<size_t> Seen;
      for (const Expr &L : loadsOf(P.reads())) {
        const auto &N = static_cast<const LoadNode &>(*L);
        if (!usesAnyVar(L, {Col}))
          continue;
        const Buffer *B = findTensor(F, N.Buffer);
        if (!B || !contiguousIn(N.Indices, Col) || !Stageable(B->Type)) {
          Odd = true;
          continue;
        }
        auto It = llvm::find_if(Staged, [&](const Expr &X) { return structurallyEqual(X, L); });
        size_t K = It - Staged.begin();
        if (It == Staged.end()) {
          Staged.push_back(L);
          Uses.push_back(0);
        }
        if (!llvm::is_contained(Seen, K)) {
          Seen.push_back(K);
          ++Uses[K];
        }
        Narrowest = Narrowest ? std::min<int64_t>(Narrowest, dtypeBytes(B->Type))
                              : dtypeBytes(B->Type);
        if (!llvm::is_contained(Wide, N.Buffer))
          Wide.push_back(N.Buffer);
      }
      if (P.Kind == RowPhaseKind::Element) {
        const Buffer *B = findTensor(F, P.Out);
        if (!contiguousIn(P.OutIdx, Col) || !Stageable(B->Type))
          Odd = true;
        Narrowest = Narrowest ? std::min<int64_t>(Narrowest, dtypeBytes(B->Type))
                              : dtypeBytes(B->Type);
        if (!llvm::is_contained(Wide, P.Out))
          Wide.push_back(P.Out);
      }
    }
    std::optional<int64_t> C = asConstInt(simplifyExpr(Cols));
    if (!Odd && Narrowest) {
      Width = 16 / Narrowest;
      if (C && *C % Width)
        Width = *C % 4 == 0 && Width > 4 ? 4 : 0;
    }
    // A short constant row gets fewer threads, down to a warp: one run or
    // element each.
    if (C && !ThreadsPinned)
      Block = std::clamp<int64_t>(
          static_cast<int64_t>(llvm::PowerOf2Ceil((*C + std::max<int64_t>(Width, 1) - 1) /
                                                  std::max<int64_t>(Width, 1))),
          WarpSize, Threads);
    else
      Block = Threads;
    if (!Width)
      return;
    std::vector<Expr> Conds;
    auto Need = [&](Expr E) {
      if (llvm::none_of(Conds, [&](const Expr &X) { return structurallyEqual(X, E); }))
        Conds.push_back(std::move(E));
    };
    bool Possible = true;
    auto MultipleOfWidth = [&](const Expr &E) {
      if (std::optional<int64_t> K = asConstInt(simplifyExpr(E)))
        Possible &= *K % Width == 0;
      else
        Need(binary(BinaryOp::Eq, imod(E, intImm(Width)), intImm(0)));
    };
    MultipleOfWidth(Cols);
    for (const std::string &Name : Wide) {
      const Buffer *B = findTensor(F, Name);
      if (B->rank() > 1)
        MultipleOfWidth(B->Shape.back());
      std::vector<Expr> First(B->rank(), intImm(0));
      Need(call(Intrinsic::Aligned,
                {load(B->Type, Name, First), intImm(pieceOf(B->Type) * dtypeBytes(B->Type))}));
    }
    if (!Possible) {
      Width = 0;
      return;
    }
    WideCond = Conds.front();
    for (size_t I = 1; I < Conds.size(); ++I)
      WideCond = land(WideCond, Conds[I]);
    WideWhy.clear();
    for (size_t I = 0; I < Wide.size(); ++I)
      WideWhy += (I ? ", " : "") + Wide[I];
    for (size_t K = 0; K < Staged.size(); ++K) {
      const std::string &B = static_cast<const LoadNode &>(*Staged[K]).Buffer;
      RunName.push_back(Names.fresh(B + "_run"));
      CacheName.push_back(Names.fresh(B + "_row"));
      Cached.push_back(Uses[K] > 1);
    }
    Runs = std::max<int64_t>(1, RowChainCacheElements / Width);
    int64_t Fit = Block * Width * Runs;
    if (llvm::is_contained(Cached, true)) {
      if (!C)
        CachedCond = land(WideCond, le(Cols, intImm(Fit)));
      else if (*C <= Fit)
        CachedCond = WideCond;
    }
  }

  Expr tid() const { return var(Tid); }
  Expr lane() const { return var(Lane); }

  /// S, or for a store to a global tensor S run by thread 0 alone.
  Stmt byOwner(const Stmt &S) const {
    const auto &St = static_cast<const StoreNode &>(*S);
    if (isHeld(St.Buffer))
      return S;
    return ifThen(binary(BinaryOp::Eq, tid(), intImm(0)), S, nullptr, S->SrcLine);
  }

  /// The index of run j of thread tid: c0 = (tid + j * N) * Width.
  Stmt atRun(Stmt Body, unsigned Line) const {
    return letStmt(Start, mul(add(tid(), mul(var(Step), intImm(Block))), intImm(Width)), Body,
                   Line);
  }

  /// Body for each run of the thread: j over the Runs slots (each tested
  /// against C) when held, else over as many as the row has.
  Stmt overRuns(Mode M, Stmt Body, unsigned Line) const {
    if (M == Mode::Cached)
      return forLoop(Step, intImm(0), intImm(Runs), ForKind::Unrolled,
                     atRun(ifThen(lt(var(Start), Cols), Body, nullptr, Line), Line), Line);
    Expr Trips = idiv(add(sub(idiv(Cols, intImm(Width)), tid()), intImm(Block - 1)),
                      intImm(Block));
    return forLoop(Step, intImm(0), Trips, ForKind::Serial, atRun(Body, Line), Line);
  }

  /// for v in 0..Width: Dest[Idx..., v] = load K at column c0 + v.
  /// Elements of type T one access moves: a run, or 16 bytes of it.
  int64_t pieceOf(DType T) const { return std::min<int64_t>(Width, 16 / dtypeBytes(T)); }

  /// The copy of a run of type T in accesses of up to 16 bytes: for each
  /// piece at Q (a multiple of P), for v in 0..P: Copy(Q + v in the run,
  /// c0 + Q + v in the row), both spelled base + v as vectorize matches.
  Stmt pieces(DType T, const std::function<Stmt(Expr, Expr)> &Copy, unsigned Line) const {
    int64_t P = pieceOf(T);
    std::vector<Stmt> Out;
    for (int64_t Q = 0; Q < Width; Q += P) {
      Expr InRun = Q ? add(intImm(Q), var(V)) : var(V);
      Expr InRow = add(Q ? add(var(Start), intImm(Q)) : var(Start), var(V));
      Out.push_back(forLoop(V, intImm(0), intImm(P), ForKind::Serial, Copy(InRun, InRow), Line));
    }
    return block(std::move(Out), Line);
  }

  /// Dest[Idx..., e] = load K at column c0 + e, for e of the run.
  Stmt fill(size_t K, const std::string &Dest, std::vector<Expr> Idx, unsigned Line) const {
    return pieces(Staged[K]->Type, [&](Expr InRun, Expr InRow) {
      std::vector<Expr> At = Idx;
      At.push_back(InRun);
      return store(Dest, At, substitute(Staged[K], Col, InRow), Line);
    }, Line);
  }

  /// RowPhase P of version M: its loads, each run first copied into
  /// registers (held ones once, in the first phase reading them), then
  /// Body(values, column) per element of the run; or, one element at a
  /// time, Body per column of the thread.
  Stmt sweep(Mode M, const RowPhase &P, std::vector<bool> &Filled,
             const std::function<Stmt(ExprReplacer &)> &PerElement,
             const std::function<Stmt(ExprReplacer &)> &PerRun) {
    unsigned Line = P.Line;
    if (M == Mode::Scalar) {
      ExprReplacer None;
      Expr Trips = idiv(add(sub(Cols, tid()), intImm(Block - 1)), intImm(Block));
      return forLoop(Step, intImm(0), Trips, ForKind::Serial,
                     letStmt(Col, add(tid(), mul(var(Step), intImm(Block))), PerElement(None),
                             Line),
                     Line);
    }
    std::vector<Stmt> Before, Fills;
    std::vector<Buffer> Regs;
    ExprReplacer R;
    std::vector<Expr> Loads = loadsOf(P.reads());
    for (size_t K = 0; K < Staged.size(); ++K) {
      if (llvm::none_of(Loads, [&](const Expr &L) { return structurallyEqual(L, Staged[K]); }))
        continue;
      DType T = Staged[K]->Type;
      if (M == Mode::Cached && Cached[K]) {
        if (!Filled[K])
          Before.push_back(overRuns(M, fill(K, CacheName[K], {var(Step)}, Line), Line));
        Filled[K] = true;
        R.Map.push_back({Staged[K], load(T, CacheName[K], {var(Step), var(V)})});
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
    Before.push_back(overRuns(M, Body, Line));
    return block(std::move(Before), Line);
  }

  /// for v in 0..Width unroll { let c = c0 + v { S } }.
  Stmt perColumn(Stmt S, unsigned Line) const {
    if (usesAnyVar(S, {Col}))
      S = letStmt(Col, add(var(Start), var(V)), S, Line);
    return forLoop(V, intImm(0), intImm(Width), ForKind::Unrolled, S, Line);
  }

  Stmt butterflies(const RowPhase &P, int64_t Lanes) const {
    std::vector<Stmt> Out;
    DType T = P.Acc->Buf.Type;
    Expr A = load(T, P.Acc->Buf.Name, {intImm(0)});
    for (int64_t D = Lanes / 2; D >= 1; D /= 2)
      Out.push_back(store(P.Acc->Buf.Name, {intImm(0)},
                          binary(P.Op, A, call(Intrinsic::ShflXor, {A, intImm(D, DType::I32)})),
                          P.Line));
    return block(std::move(Out), P.Line);
  }

  /// A reduction: the thread's columns, a butterfly per warp, the warp
  /// totals through Totals (shared) and one barrier, then a butterfly over
  /// them in every warp, so every thread holds the total for the epilogue.
  Stmt reduce(Mode M, const RowPhase &P, const std::string &Totals, std::vector<bool> &Filled) {
    const Buffer &Acc = P.Acc->Buf;
    unsigned Line = P.Line;
    Expr A = load(Acc.Type, Acc.Name, {intImm(0)});
    auto Step1 = [&](ExprReplacer &R) {
      return store(Acc.Name, {intImm(0)}, binary(P.Op, A, R.mutate(P.Term)), Line);
    };
    std::vector<Stmt> Body = P.Init;
    // Every thread starts from init: right for max and min, and for + and
    // * only when init is the identity.
    Expr Identity = identityOf(P.Op, Acc.Type);
    if (!isIdempotent(P.Op) &&
        !(P.Init.size() == 1 &&
          structurallyEqual(static_cast<const StoreNode &>(*P.Init[0]).Value, Identity)))
      Body.push_back(ifThen(binary(BinaryOp::Ne, tid(), intImm(0)),
                            store(Acc.Name, {intImm(0)}, Identity, Line), nullptr, Line));
    Body.push_back(sweep(M, P, Filled, [&](ExprReplacer &R) { return Step1(R); },
                         [&](ExprReplacer &R) { return perColumn(Step1(R), Line); }));
    Body.push_back(butterflies(P, WarpSize));
    int64_t Warps = Block / WarpSize;
    if (Warps > 1) {
      Body.push_back(ifThen(binary(BinaryOp::Eq, lane(), intImm(0)),
                            store(Totals, {var(Warp)}, A, Line), nullptr, Line));
      Body.push_back(barrier(Line));
      // Every aligned group of Group lanes takes the Warps totals, so that
      // every lane ends with the total: lanes past Warps in a group repeat
      // a total (max, min: lane % Warps covers every residue in any Group
      // consecutive lanes) or hold the identity (+, *).
      int64_t Group = static_cast<int64_t>(llvm::PowerOf2Ceil(Warps));
      Expr Slot = Warps == WarpSize ? lane() : imod(lane(), intImm(Warps));
      Expr Total = load(Acc.Type, Totals, {Slot});
      if (Group != Warps && !isIdempotent(P.Op)) {
        Expr InGroup = imod(lane(), intImm(Group));
        Total = select(lt(InGroup, intImm(Warps)), load(Acc.Type, Totals, {InGroup}), Identity);
      }
      Body.push_back(store(Acc.Name, {intImm(0)}, Total, Line));
      Body.push_back(butterflies(P, Group));
    }
    for (const Stmt &E : P.Epilogue)
      Body.push_back(byOwner(E));
    return allocate(Acc, block(std::move(Body), Line), Line);
  }

  /// An elementwise phase: each run computed into registers, then stored
  /// as one run (16 bytes where aligned).
  Stmt elementwise(Mode M, const RowPhase &P, std::vector<bool> &Filled) {
    unsigned Line = P.Line;
    DType VT = P.Value->Type;
    auto One = [&](ExprReplacer &R) { return store(P.Out, P.OutIdx, R.mutate(P.Value), Line); };
    auto Run = [&](ExprReplacer &R) {
      Stmt Compute = perColumn(store(Val, {var(V)}, R.mutate(P.Value), Line), Line);
      Stmt Write = pieces(VT, [&](Expr InRun, Expr InRow) {
        std::vector<Expr> Idx;
        for (const Expr &I : P.OutIdx)
          Idx.push_back(substitute(I, Col, InRow));
        return store(P.Out, Idx, load(VT, Val, {InRun}), Line);
      }, Line);
      return allocate(tempBuffer(Val, VT, {intImm(Width)}, MemScope::Register),
                      block({Compute, Write}, Line), Line);
    };
    return sweep(M, P, Filled, One, Run);
  }

  Stmt version(Mode M, const std::vector<std::string> &Totals, unsigned Line) {
    std::vector<Stmt> Out;
    std::vector<bool> Filled(Staged.size(), false);
    for (size_t I = 0; I < Phases.size(); ++I) {
      const RowPhase &P = Phases[I];
      switch (P.Kind) {
      case RowPhaseKind::Row: Out.push_back(byOwner(P.Row)); break;
      case RowPhaseKind::Reduction: Out.push_back(reduce(M, P, Totals[I], Filled)); break;
      case RowPhaseKind::Element: Out.push_back(elementwise(M, P, Filled)); break;
      }
    }
    Stmt Body = block(std::move(Out), Line);
    if (M == Mode::Cached)
      for (size_t K = Staged.size(); K-- > 0;)
        if (Cached[K])
          Body = allocate(tempBuffer(CacheName[K], Staged[K]->Type, {intImm(Runs), intImm(Width)},
                                     MemScope::Register),
                          Body, Line);
    return Body;
  }

  Stmt build(unsigned Line, const LoopRun &Run) {
    int64_t Warps = Block / WarpSize;
    std::vector<std::string> Totals(Phases.size());
    std::vector<Buffer> Shared;
    for (size_t I = 0; I < Phases.size(); ++I)
      if (Phases[I].Kind == RowPhaseKind::Reduction && Warps > 1) {
        const Buffer &A = Phases[I].Acc->Buf;
        Totals[I] = Names.fresh(A.Name + "_warps");
        Shared.push_back(tempBuffer(Totals[I], A.Type, {intImm(Warps)}, MemScope::Shared));
      }
    // 1. The versions, widest first.
    Stmt Body = version(Mode::Scalar, Totals, Line);
    std::string How = "one element at a time";
    if (Width) {
      Body = ifThen(WideCond, version(Mode::Wide, Totals, Line), Body, Line);
      How = "runs of " + std::to_string(Width) + " elements (16 bytes where " + WideWhy +
            " take whole aligned runs, else one element at a time), re-read in each phase";
      if (CachedCond) {
        Body = ifThen(CachedCond, version(Mode::Cached, Totals, Line), Body, Line);
        How += ", or held in registers when the row fits (" +
               std::to_string(Block * Width * Runs) + " elements: " +
               std::to_string(Width * Runs) + " a thread), so it is read once";
      }
    }
    // 2. Every thread holds the values per row.
    for (auto It = Held.rbegin(); It != Held.rend(); ++It)
      Body = allocate((*It)->Buf, Body, (*It)->SrcLine);
    Body = letStmt(Tid, add(mul(var(Warp), intImm(WarpSize)), lane()), Body, Line);
    Body = forLoop(Warp, intImm(0), intImm(Warps), ForKind::Warp,
                   forLoop(Lane, intImm(0), intImm(WarpSize), ForKind::Lane, Body, Line), Line);
    for (auto It = Shared.rbegin(); It != Shared.rend(); ++It)
      Body = allocate(*It, Body, Line);
    Body = bindFlatIndex(Run.Loops, var(Row), Body);
    unsigned Reductions = llvm::count_if(
        Phases, [](const RowPhase &P) { return P.Kind == RowPhaseKind::Reduction; });
    std::string What = "[row-chain] " + std::to_string(Phases.size()) + " phases (" +
                       std::to_string(Reductions) + " reductions) in one block of " +
                       std::to_string(Block) + " threads per row; every thread holds the values "
                       "per row; the row moves in " + How +
                       "; each reduction: shfl_xor butterflies" +
                       (Warps > 1 ? ", the warp totals through shared memory, one barrier" : "");
    remark("row-chain", Line,
           "took it: " + std::to_string(Phases.size()) + " phases, one block of " +
               std::to_string(Block) + " threads per row" +
               (CachedCond ? ", the row held in registers when it fits" : ""));
    return forLoop(Row, intImm(0), flatExtent(Run.Loops), ForKind::BlockX,
                   block({note(What, Line), Body}, Line), Line);
  }
};

} // namespace

void rowChain(Func &F) {
  ChainMapper M(F);
  launchNests(F, LaunchClass::RowReduction,
              [&](const Stmt &S, std::vector<Knob> &) { return M.rewriteNest(S); });
}

} // namespace tdsl
