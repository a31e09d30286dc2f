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

/// True if Idx is [..., V] with V nowhere else: a run of consecutive V is
/// a run of consecutive addresses.
bool contiguousIn(const std::vector<Expr> &Idx, const std::string &V) {
  if (Idx.empty() || Idx.back()->Kind != ExprKind::Var ||
      static_cast<const VarNode &>(*Idx.back()).Name != V)
    return false;
  return llvm::none_of(llvm::make_range(Idx.begin(), Idx.end() - 1),
                       [&](const Expr &I) { return usesAnyVar(I, {V}); });
}

class Mapper {
public:
  Mapper(Func &F, int64_t Threads, int64_t Items, int64_t MaxBlocks)
      : F(F), Names(F), Threads(Threads), Items(Items), MaxBlocks(MaxBlocks) {}

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
      Step = Names.fresh("s");
      Chunk = Names.fresh("chunk");
      T = Names.fresh("t");
      U = Names.fresh("u");
      V = Names.fresh("v");
      Val = Names.fresh("val");
    }
    Expr Total = flatExtent(Run.Loops);
    Stmt Wide = widePath(Run, St, Line);
    // Each block covers Threads * Items runs of W elements on the wide path
    // and as many single elements on the scalar one.
    int64_t PerThread = Wide ? Items * Width : Items;
    Stmt Scalar = scalarPath(Run, St, PerThread, Line);
    std::string What =
        "[map-elementwise] " + std::to_string(PerThread) + " elements per thread, " +
        std::to_string(Threads * PerThread) + " per block, consecutive threads on consecutive " +
        (Wide ? "runs of " + std::to_string(Width) : std::string("elements")) +
        "; every value is computed before the first store, so " +
        std::to_string(Wide ? Items : PerThread) + " loads of each tensor per thread are in flight";
    if (Wide)
      What += "; the runs are 16-byte loads and stores where " + WideWhy +
              ", else one element at a time";
    // Grid-stride: at most MaxBlocks blocks, block bx taking chunks bx,
    // bx + grid, ... of Threads * PerThread elements, so a large tensor
    // does not become a grid of many short-lived blocks.
    Expr Chunks = binary(BinaryOp::Div, add(Total, intImm(Threads * PerThread - 1)),
                         intImm(Threads * PerThread));
    Expr Grid = MaxBlocks ? binary(BinaryOp::Min, Chunks, intImm(MaxBlocks)) : Chunks;
    if (MaxBlocks)
      What += "; at most " + std::to_string(MaxBlocks) + " blocks, each looping over every " +
              "grid-th chunk (grid-stride)";
    Stmt Body = Wide ? ifThen(WideCond, Wide, Scalar, Line) : Scalar;
    if (MaxBlocks)
      Body = forLoop(Step, intImm(0),
                     binary(BinaryOp::Div, add(Chunks, sub(Grid, intImm(1))), Grid),
                     ForKind::Serial, letStmt(Chunk, add(mul(var(Step), Grid), var(BX)), Body, Line),
                     Line);
    Body = block({note(What, Line), Body});
    Body = forLoop(TX, intImm(0), intImm(Threads), ForKind::ThreadX, Body, Line);
    return forLoop(BX, intImm(0), Grid, ForKind::BlockX, Body, Line);
  }

private:
  Func &F;
  NameTable Names;
  int64_t Threads, Items;
  static constexpr int64_t Width = 4; ///< elements per run (16 bytes)
  int64_t MaxBlocks;
  std::string BX, TX, Step, Chunk, T, U, V, Val;
  Expr WideCond;      ///< when the wide path runs
  std::string WideWhy; ///< WideCond in words

  /// for u: t = the u-th element (run) of the thread; if t < Total, Body
  /// with the loop variables bound to t.
  Stmt round(const LoopRun &Run, int64_t PerThread, int64_t Run1, Stmt Body, unsigned Line) {
    Expr Q = add(add(mul(var(MaxBlocks ? Chunk : BX), intImm(Threads * PerThread / Run1)),
                     mul(var(U), intImm(Threads))),
                 var(TX));
    Expr TV = Run1 == 1 ? Q : mul(Q, intImm(Run1));
    return forLoop(U, intImm(0), intImm(PerThread / Run1), ForKind::Serial,
                   letStmt(T, TV,
                           ifThen(lt(var(T), flatExtent(Run.Loops)),
                                  bindFlatIndex(Run.Loops, var(T), Body), nullptr, Line),
                           Line),
                   Line);
  }

  Stmt scalarPath(const LoopRun &Run, const StoreNode &St, int64_t PerThread, unsigned Line) {
    DType VT = St.Value->Type;
    Stmt Compute = round(Run, PerThread, 1, store(Val, {var(U)}, St.Value, Line), Line);
    Stmt Write =
        round(Run, PerThread, 1, store(St.Buffer, St.Indices, load(VT, Val, {var(U)}), Line), Line);
    return allocate(tempBuffer(Val, VT, {intImm(PerThread)}, MemScope::Register),
                    block({Compute, Write}), Line);
  }

  /// Runs of Width consecutive elements of the innermost loop: each 4-byte
  /// tensor read contiguously along it is copied into registers a run at a
  /// time (vectorize makes the copy one 16-byte access), the values are
  /// computed from the registers, and a contiguous 4-byte output is written
  /// a run at a time. Null when no access would be wide. Sets WideCond: the
  /// innermost extent and the rows of the wide tensors are multiples of
  /// Width, and their first elements aligned to a run.
  Stmt widePath(const LoopRun &Run, const StoreNode &St, unsigned Line) {
    const ForNode &In = *Run.Loops.back();
    // 4-byte elements only: with runs of 8 halves, the 64-bit-index
    // version of softmax's and layernorm's f16 stages spilled registers
    // around the 64-bit divisions (sm_80 and sm_90, test/backend/no-spills).
    auto Narrow = [](DType T) { return dtypeBytes(T) == 4; };
    std::vector<Expr> Staged;
    for (const Expr &L : loadsOf(St.Value)) {
      const auto &N = static_cast<const LoadNode &>(*L);
      const Buffer *B = F.findParam(N.Buffer);
      if (B && Narrow(N.Type) && N.Type == B->Type && contiguousIn(N.Indices, In.Var) &&
          llvm::none_of(Staged, [&](const Expr &X) { return structurallyEqual(X, L); }))
        Staged.push_back(L);
    }
    const Buffer *Out = F.findParam(St.Buffer);
    bool WideStore = Out && Narrow(Out->Type) && contiguousIn(St.Indices, In.Var);
    if (Staged.empty() && !WideStore) {
      remark("map-elementwise", Line,
             "no 4-byte tensor is accessed contiguously along '" + In.Var +
                 "'; one element at a time");
      return nullptr;
    }
    std::optional<int64_t> Ext = asConstInt(In.Extent);
    if (asConstInt(In.Min) != 0 || (Ext && *Ext % Width)) {
      remark("map-elementwise", Line,
             "'" + In.Var + "' does not run in whole groups of " + std::to_string(Width) +
                 "; one element at a time");
      return nullptr;
    }

    // The conditions, each once.
    std::vector<Expr> Conds;
    auto Need = [&](Expr C) {
      if (llvm::none_of(Conds, [&](const Expr &X) { return structurallyEqual(X, C); }))
        Conds.push_back(std::move(C));
    };
    auto MultipleOfWidth = [&](const Expr &E) {
      Need(binary(BinaryOp::Eq, binary(BinaryOp::Mod, E, intImm(Width)), intImm(0)));
    };
    std::vector<std::string> Wide;
    MultipleOfWidth(In.Extent);
    auto Tensor = [&](const std::string &Name) {
      const Buffer *B = F.findParam(Name);
      if (B->rank() > 1)
        MultipleOfWidth(B->Shape.back());
      std::vector<Expr> First(B->rank(), intImm(0));
      Need(call(Intrinsic::Aligned,
                {load(B->Type, Name, First), intImm(Width * dtypeBytes(B->Type))}));
      if (!llvm::is_contained(Wide, Name))
        Wide.push_back(Name);
    };
    for (const Expr &L : Staged)
      Tensor(static_cast<const LoadNode &>(*L).Buffer);
    if (WideStore)
      Tensor(St.Buffer);
    WideCond = Conds.front();
    for (size_t I = 1; I < Conds.size(); ++I)
      WideCond = binary(BinaryOp::And, WideCond, Conds[I]);
    WideWhy = "'" + In.Var + "' runs and the rows of ";
    for (size_t I = 0; I < Wide.size(); ++I)
      WideWhy += (I ? ", " : "") + Wide[I];
    WideWhy += " are multiples of " + std::to_string(Width) + " and the tensors 16-byte aligned";

    // Registers: the staged runs and the values, [Items, Width] each.
    Expr C = add(var(In.Var), var(V));
    std::vector<Stmt> Copies;
    ExprReplacer R; // each staged load -> its register copy
    std::vector<Buffer> Regs;
    for (const Expr &L : Staged) {
      const auto &N = static_cast<const LoadNode &>(*L);
      std::string Name = Names.fresh(N.Buffer + "_run");
      Regs.push_back(tempBuffer(Name, N.Type, {intImm(Items), intImm(Width)}, MemScope::Register));
      std::vector<Expr> Idx = N.Indices;
      Idx.back() = C;
      Copies.push_back(forLoop(V, intImm(0), intImm(Width), ForKind::Serial,
                               store(Name, {var(U), var(V)}, load(N.Type, N.Buffer, Idx), Line),
                               Line));
      R.Map.push_back({L, load(N.Type, Name, {var(U), var(V)})});
    }
    DType VT = St.Value->Type;
    Expr Value = substitute(R.mutate(St.Value), In.Var, C);
    Copies.push_back(forLoop(V, intImm(0), intImm(Width), ForKind::Serial,
                             store(Val, {var(U), var(V)}, Value, Line), Line));
    std::vector<Expr> OutIdx;
    for (const Expr &I : St.Indices)
      OutIdx.push_back(substitute(I, In.Var, C));
    Stmt Write = forLoop(V, intImm(0), intImm(Width), ForKind::Serial,
                         store(St.Buffer, OutIdx, load(VT, Val, {var(U), var(V)}), Line), Line);
    Stmt Body = block({round(Run, Items * Width, Width, block(std::move(Copies)), Line),
                       round(Run, Items * Width, Width, Write, Line)});
    Body = allocate(tempBuffer(Val, VT, {intImm(Items), intImm(Width)}, MemScope::Register), Body,
                    Line);
    for (auto It = Regs.rbegin(); It != Regs.rend(); ++It)
      Body = allocate(*It, Body, Line);
    return Body;
  }
};

} // namespace

void mapElementwise(Func &F) {
  Mapper M(F, knobInt(F, "threads", MapToGPUThreads), knobInt(F, "items_per_thread", 4),
           knobInt(F, "max_blocks", MapElementwiseMaxBlocks));
  rewriteNests(F, [&](const Stmt &S) { return M.map(S); });
}

} // namespace tdsl
