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
    Nest = std::move(*N);
    LoopRun Run = Nest.Run;
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
  ChainNest Nest;        ///< the nest being mapped
  std::vector<RowPhase> &Phases = Nest.Phases;
  Expr &Cols = Nest.Cols; ///< the row length C
  int64_t Block = 0;     ///< threads per row
  /// The mappings the launch has: lanes per row of each group of a warp
  /// (8: four rows a warp; 32: a warp a row), ascending, and a block per
  /// row. A group takes rows of up to 32 elements a lane.
  std::vector<int64_t> LaneGroups;
  bool PerBlock = true;
  /// While a group of fewer than 32 lanes is built: whether the lanes' row
  /// exists (the others compute on the last row, so that every lane takes
  /// part in the shuffles, and store nothing).
  Expr Guard;
  // The runs: each load of a 2- or 4-byte tensor contiguous along the row.
  std::vector<Expr> Staged;
  std::vector<bool> Cached; ///< read by two or more phases: held in registers
  std::vector<std::string> RunName, CacheName;
  int64_t Width = 0;     ///< elements per run; 0: no runs
  int64_t Runs = 0;      ///< runs a thread holds
  int64_t PerThread = RowChainCacheElements; ///< elements of a row a thread holds
  Expr WideCond, CachedCond;
  /// Held version: the terms of reductions that later phases compute
  /// again (softmax's exp(x - max)), kept per element of the thread's
  /// runs in KeepName[phase], and what replaces them there.
  std::vector<std::string> KeepName;
  ExprReplacer Kept;
  std::string WideWhy;
  std::string Row, RowOfWarp, RowOfRange, Warp, Lane, Tid, Step, Start, V, Col, Val;

  void takeNames() {
    Row = Names.fresh("row");
    RowOfWarp = Names.fresh("rw");
    RowOfRange = Names.fresh("rr");
    Warp = Names.fresh("warp");
    Lane = Names.fresh("lane");
    Tid = Names.fresh("tid");
    Step = Names.fresh("j");
    Start = Names.fresh("c0");
    V = Names.fresh("v");
    Col = Names.fresh("c");
    Val = Names.fresh("val");
  }

  // The runs: a run is 16 bytes of the narrowest tensor taking part (a
  // wider one moves it in 16-byte pieces), and every tensor read or
  // written along the row takes part, or none does (one left out would be
  // accessed with a stride of a run).
  void plan() {
    KeepName.assign(Phases.size(), "");
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
    // Held values live across a division's slow path, a subroutine call,
    // and 32 4-byte ones a thread spill there: a 4-byte tensor that a
    // dividing phase reads is not held (re-read in runs instead).
    PerThread = RowChainCacheElements;
    for (const RowPhase &P : Phases) {
      if (P.Kind == RowPhaseKind::Row || !dividesFloat(P.reads()))
        continue;
      for (size_t K = 0; K < Staged.size(); ++K)
        if (dtypeBytes(Staged[K]->Type) == 4 && contains(P.reads(), Staged[K]))
          Uses[K] = std::min(Uses[K], 1u);
    }
    std::optional<int64_t> C = asConstInt(simplifyExpr(Cols));
    if (!Odd && Narrowest) {
      Width = 16 / Narrowest;
      if (C && *C % Width)
        Width = *C % 4 == 0 && Width > 4 ? 4 : 0;
    }
    // Short rows get a group of lanes each (8 or 32; 32 elements a
    // lane), several rows a block: a block would leave most of its
    // threads idle. A row length known only at run time gets every
    // mapping, chosen by the launch; a known one the narrowest that holds
    // it; a pinned reduce_threads asks for a block.
    // A row length known at compile time gets the fewest threads, up to
    // 1024, that hold it in registers: a long row then is read once, and
    // its block keeps more loads in flight (a row of 131072 elements takes
    // 1024 threads and is re-read). A length known only at run time takes
    // reduce_threads, which all its mappings share as the launch's block.
    Block = Threads;
    if (!ThreadsPinned && C)
      while (Block < 1024 && *C > Block * PerThread)
        Block *= 2;
    LaneGroups.clear();
    for (int64_t G : {int64_t(8), WarpSize}) {
      if (ThreadsPinned)
        break;
      if (!C) {
        LaneGroups.push_back(G);
      } else if (*C <= G * PerThread) {
        LaneGroups.push_back(G);
        break;
      }
    }
    PerBlock = ThreadsPinned || !C || *C > WarpSize * PerThread;
    if (!Width)
      return;
    std::optional<Expr> Test = runTest(F, Cols, Wide, Width, [&](DType T) {
      return pieceOf(T) * dtypeBytes(T);
    });
    if (!Test) {
      Width = 0;
      return;
    }
    WideCond = *Test;
    WideWhy.clear();
    for (size_t I = 0; I < Wide.size(); ++I)
      WideWhy += (I ? ", " : "") + Wide[I];
    for (size_t K = 0; K < Staged.size(); ++K) {
      const std::string &B = static_cast<const LoadNode &>(*Staged[K]).Buffer;
      RunName.push_back(Names.fresh(B + "_run"));
      CacheName.push_back(Names.fresh(B + "_row"));
      Cached.push_back(Uses[K] > 1);
    }
    Runs = std::max<int64_t>(1, PerThread / Width);
    for (size_t I = 0; I < Phases.size(); ++I)
      if (keepsTerm(I))
        KeepName[I] = Names.fresh(Phases[I].Acc->Buf.Name + "_terms");
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
    if (Nest.holds(St.Buffer))
      return S;
    Expr Owner = binary(BinaryOp::Eq, tid(), intImm(0));
    return ifThen(Guard ? land(Owner, Guard) : Owner, S, nullptr, S->SrcLine);
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
  Stmt sweep(Mode M, const std::vector<Expr> &Reads, unsigned Line, std::vector<bool> &Filled,
             const std::function<Stmt(ExprReplacer &)> &PerElement,
             const std::function<Stmt(ExprReplacer &)> &PerRun) {
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
    std::vector<Expr> Loads;
    for (const Expr &E : Reads)
      llvm::append_range(Loads, loadsOf(E));
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

  /// E with the phase's loads replaced by R, then the kept terms.
  Expr apply(ExprReplacer &R, const Expr &E) {
    Expr X = R.mutate(E);
    return Kept.Map.empty() ? X : Kept.mutate(X);
  }

  static bool dividesFloat(const Expr &E) {
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

  static bool contains(const Expr &E, const Expr &Sub) {
    ExprReplacer F;
    F.Map.push_back({Sub, var("$sub", Sub->Type)});
    return !structurallyEqual(F.mutate(E), E);
  }

  /// Whether phase I's term is kept: a later phase computes it again, and
  /// it is more than loads and casts.
  bool keepsTerm(size_t I) const {
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
    // A reader that divides would hold the kept values across the
    // division's slow path, a subroutine call, and they spill there
    // (test/backend/no-spills): it computes the term again instead.
    bool Kept = false;
    for (size_t J = I + 1; J < Phases.size(); ++J) {
      if (Phases[J].Kind == RowPhaseKind::Row || !contains(Phases[J].reads(), P.Term))
        continue;
      if (dividesFloat(Phases[J].reads()))
        return false;
      Kept = true;
    }
    return Kept;
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
  /// Consecutive reductions Members, none reading another's result (the
  /// max and the picked logit of cross-entropy): one sweep over the row
  /// folds each thread's columns into every accumulator; then per
  /// accumulator a butterfly per warp, in a block the warps' totals through
  /// shared memory (Totals[phase]) and one barrier for all, and a
  /// butterfly over them in every warp, so every thread holds each total
  /// for the epilogues.
  Stmt reduce(Mode M, const std::vector<size_t> &Members, const std::vector<std::string> &Totals,
              std::vector<bool> &Filled) {
    unsigned Line = Phases[Members.front()].Line;
    auto AccOf = [&](size_t I) { return load(Phases[I].Acc->Buf.Type, Phases[I].Acc->Buf.Name,
                                             {intImm(0)}); };
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
    auto Steps = [&](ExprReplacer &R, bool InRun) {
      std::vector<Stmt> Out;
      for (size_t I : Members)
        Out.push_back(Step1(I, R, InRun));
      return block(std::move(Out), Line);
    };
    Body.push_back(sweep(M, Reads, Line, Filled, [&](ExprReplacer &R) { return Steps(R, false); },
                         [&](ExprReplacer &R) { return perColumn(Steps(R, true), Line); }));
    for (size_t I : Members)
      Body.push_back(butterflies(Phases[I], std::min<int64_t>(Block, WarpSize)));
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
      for (size_t I : Members) {
        const RowPhase &P = Phases[I];
        DType T = P.Acc->Buf.Type;
        Expr Slot = Warps == WarpSize ? lane() : imod(lane(), intImm(Warps));
        Expr Total = load(T, Totals[I], {Slot});
        if (Group != Warps && !isIdempotent(P.Op)) {
          Expr InGroup = imod(lane(), intImm(Group));
          Total = select(lt(InGroup, intImm(Warps)), load(T, Totals[I], {InGroup}),
                         identityOf(P.Op, T));
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

  /// The reductions from phase I on that one sweep folds together where
  /// the row is re-read (one read of it fewer each): each next one while
  /// it reads nothing the ones before store.
  std::vector<size_t> sweepGroup(size_t I) const {
    std::vector<size_t> Members = {I};
    std::vector<std::string> Written;
    for (size_t J = I;; ++J) {
      for (const Stmt &E : Phases[J].Epilogue)
        Written.push_back(static_cast<const StoreNode &>(*E).Buffer);
      if (J + 1 == Phases.size() || Phases[J + 1].Kind != RowPhaseKind::Reduction)
        return Members;
      bool Reads = llvm::any_of(loadsOf(Phases[J + 1].Term), [&](const Expr &L) {
        return llvm::is_contained(Written, static_cast<const LoadNode &>(*L).Buffer);
      });
      if (Reads)
        return Members;
      Members.push_back(J + 1);
    }
  }

  /// An elementwise phase: each run computed into registers, then stored
  /// as one run (16 bytes where aligned).
  Stmt elementwise(Mode M, const RowPhase &P, std::vector<bool> &Filled) {
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
      Stmt Write = pieces(VT, [&](Expr InRun, Expr InRow) {
        std::vector<Expr> Idx;
        for (const Expr &I : P.OutIdx)
          Idx.push_back(substitute(I, Col, InRow));
        return store(P.Out, Idx, load(VT, Val, {InRun}), Line);
      }, Line);
      return allocate(tempBuffer(Val, VT, {intImm(Width)}, MemScope::Register),
                      block({Compute, Owned(Write)}, Line), Line);
    };
    return sweep(M, {P.Value}, Line, Filled, One, Run);
  }

  Stmt version(Mode M, const std::vector<std::string> &Totals, unsigned Line) {
    Kept.Map.clear();
    std::vector<Stmt> Out;
    std::vector<bool> Filled(Staged.size(), false);
    for (size_t I = 0; I < Phases.size(); ++I) {
      const RowPhase &P = Phases[I];
      switch (P.Kind) {
      case RowPhaseKind::Row: Out.push_back(byOwner(P.Row)); break;
      case RowPhaseKind::Reduction: {
        // Held rows gain nothing from one sweep (measured a little slower).
        std::vector<size_t> Members =
            M == Mode::Cached ? std::vector<size_t>{I} : sweepGroup(I);
        Out.push_back(reduce(M, Members, Totals, Filled));
        I = Members.back();
        break;
      }
      case RowPhaseKind::Element: Out.push_back(elementwise(M, P, Filled)); break;
      }
    }
    Kept.Map.clear();
    Stmt Body = block(std::move(Out), Line);
    if (M == Mode::Cached)
      for (size_t I = Phases.size(); I-- > 0;)
        if (!KeepName[I].empty())
          Body = allocate(tempBuffer(KeepName[I], Phases[I].Term->Type,
                                     {intImm(Runs), intImm(Width)}, MemScope::Register),
                          Body, Line);
    if (M == Mode::Cached)
      for (size_t K = Staged.size(); K-- > 0;)
        if (Cached[K])
          Body = allocate(tempBuffer(CacheName[K], Staged[K]->Type, {intImm(Runs), intImm(Width)},
                                     MemScope::Register),
                          Body, Line);
    return Body;
  }

  /// The versions of the chain for threads per row Block, widest first:
  /// held when the row fits (always, for a warp per row), re-read in runs,
  /// one element at a time.
  Stmt versions(const std::vector<std::string> &Totals, bool WarpEach, unsigned Line) {
    Stmt Body = version(Mode::Scalar, Totals, Line);
    if (!Width)
      return Body;
    bool Holds = llvm::is_contained(Cached, true);
    if (WarpEach)
      return ifThen(WideCond, version(Holds ? Mode::Cached : Mode::Wide, Totals, Line), Body,
                    Line);
    Body = ifThen(WideCond, version(Mode::Wide, Totals, Line), Body, Line);
    if (CachedCond)
      Body = ifThen(CachedCond, version(Mode::Cached, Totals, Line), Body, Line);
    return Body;
  }

  Stmt build(unsigned Line, const LoopRun &Run) {
    int64_t Warps = Block / WarpSize;
    std::vector<std::string> Totals(Phases.size());
    std::vector<Buffer> Shared;
    for (size_t I = 0; I < Phases.size(); ++I)
      if (Phases[I].Kind == RowPhaseKind::Reduction && PerBlock && Warps > 1) {
        const Buffer &A = Phases[I].Acc->Buf;
        Totals[I] = Names.fresh(A.Name + "_warps");
        Shared.push_back(tempBuffer(Totals[I], A.Type, {intImm(Warps)}, MemScope::Shared));
        Shared.back().ExtentNames = {"warps"};
      }
    Expr Rows = flatExtent(Run.Loops);
    auto Hold = [&](Stmt Body) {
      for (auto It = Nest.Held.rbegin(); It != Nest.Held.rend(); ++It)
        Body = allocate((*It)->Buf, Body, (*It)->SrcLine);
      return Body;
    };
    // 1. A block per row: thread tid = warp * 32 + lane of row `row`.
    Stmt Body;
    Expr Grid;
    if (PerBlock) {
      Body = Hold(versions(Totals, false, Line));
      Body = letStmt(Tid, add(mul(var(Warp), intImm(WarpSize)), lane()), Body, Line);
      Body = bindFlatIndex(Run.Loops, var(Row), Body);
      Grid = Rows;
    }
    // 2. Groups of G lanes per row, widest first so that the narrowest
    //    test comes first: lane tid = lane % G of row rw = row * (8 * 32 /
    //    G) + warp * (32 / G) + lane / G. No barrier: a warp's rows past
    //    the end skip the body when a row is a warp; with several rows a
    //    warp, their lanes compute on the last row and store nothing.
    for (auto It = LaneGroups.rbegin(); It != LaneGroups.rend(); ++It) {
      int64_t G = *It, PerWarpRows = WarpSize / G;
      int64_t Saved = Block;
      Block = G;
      Expr Exists = lt(var(RowOfWarp), Rows);
      Guard = G < WarpSize ? Exists : nullptr;
      Stmt ByGroup = Hold(versions(Totals, true, Line));
      Block = Saved;
      ByGroup = letStmt(Tid, G < WarpSize ? imod(lane(), intImm(G)) : lane(), ByGroup, Line);
      if (Guard) {
        ByGroup = bindFlatIndex(Run.Loops, var(RowOfRange), ByGroup);
        ByGroup = letStmt(RowOfRange, binary(BinaryOp::Min, var(RowOfWarp), sub(Rows, intImm(1))),
                          ByGroup, Line);
      } else {
        ByGroup = ifThen(Exists, bindFlatIndex(Run.Loops, var(RowOfWarp), ByGroup), nullptr, Line);
      }
      Guard = nullptr;
      Expr First = add(mul(var(Row), intImm(ReduceRowsPerBlock * PerWarpRows)),
                       PerWarpRows > 1 ? mul(var(Warp), intImm(PerWarpRows)) : var(Warp));
      if (PerWarpRows > 1)
        First = add(First, idiv(lane(), intImm(G)));
      ByGroup = letStmt(RowOfWarp, First, ByGroup, Line);
      Expr Blocks = ceilDiv(Rows, ReduceRowsPerBlock * PerWarpRows);
      if (Body) {
        Expr Fits = le(Cols, intImm(G * PerThread));
        Body = ifThen(Fits, ByGroup, Body, Line);
        Grid = select(Fits, Blocks, Grid);
      } else {
        Body = ByGroup;
        Grid = Blocks;
      }
    }
    int64_t WarpsPerBlock = PerBlock ? Warps : ReduceRowsPerBlock;
    Body = forLoop(Warp, intImm(0), intImm(WarpsPerBlock), ForKind::Warp,
                   forLoop(Lane, intImm(0), intImm(WarpSize), ForKind::Lane, Body, Line), Line);
    for (auto It = Shared.rbegin(); It != Shared.rend(); ++It)
      Body = allocate(*It, Body, Line);

    // 3. The note and the remark.
    std::string How = "one element at a time";
    if (Width) {
      How = "runs of " + std::to_string(Width) + " elements (16 bytes where " + WideWhy +
            " take whole aligned runs, else one element at a time)";
      if (PerBlock)
        How += ", re-read in each phase" +
               std::string(CachedCond ? ", or held in registers when the row fits (" +
                                            std::to_string(Block * Width * Runs) + " elements: " +
                                            std::to_string(Width * Runs) +
                                            " a thread), so it is read once"
                                      : "");
      else if (llvm::is_contained(Cached, true))
        How += ", held in registers, so it is read once";
    }
    unsigned Reductions = llvm::count_if(
        Phases, [](const RowPhase &P) { return P.Kind == RowPhaseKind::Reduction; });
    std::string Mapping;
    for (int64_t G : LaneGroups)
      Mapping += (Mapping.empty() ? "" : ", ") +
                 (G == WarpSize ? std::string("one warp per row")
                                : std::to_string(G) + " lanes per row") +
                 (LaneGroups.size() > 1 || PerBlock
                      ? " for rows of up to " + std::to_string(G * PerThread) +
                            " elements"
                      : std::string());
    if (PerBlock)
      Mapping += (Mapping.empty() ? "" : ", else ") + std::string("one block of ") +
                 std::to_string(Block) + " threads per row";
    std::string What = "[row-chain] " + std::to_string(Phases.size()) + " phases (" +
                       std::to_string(Reductions) + " reductions) in " + Mapping +
                       "; every thread holds the values per row; the row moves in " + How +
                       "; each reduction: shfl_xor butterflies" +
                       (PerBlock && Warps > 1
                            ? ", in a block the warp totals through shared memory, one barrier"
                            : "");
    remark("row-chain", Line,
           "took it: " + std::to_string(Phases.size()) + " phases, " + Mapping +
               (CachedCond || (!LaneGroups.empty() && llvm::is_contained(Cached, true))
                    ? ", the row held in registers when it fits"
                    : ""));
    return forLoop(Row, intImm(0), Grid, ForKind::BlockX, block({note(What, Line), Body}, Line),
                   Line);
  }
};

} // namespace

void rowChain(Func &F) {
  ChainMapper M(F);
  launchNests(F, LaunchClass::RowReduction,
              [&](const Stmt &S, std::vector<Knob> &) { return M.rewriteNest(S); });
}

} // namespace tdsl
