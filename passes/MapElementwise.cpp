//===- MapElementwise.cpp - Several elements per thread, loads before stores ===//
#include "passes/MapElementwise.h"
#include "passes/MapToGPU.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <string>

namespace tdsl {

using namespace ir;

namespace {

/// The statements in order: the one itself where there is one.
Stmt seq(std::vector<Stmt> Stmts) { return Stmts.size() == 1 ? Stmts[0] : block(std::move(Stmts)); }

/// True if E loads Buffer.
bool readsBuffer(const Expr &E, const std::string &Buffer) {
  return llvm::any_of(loadsOf(E), [&](const Expr &L) {
    return static_cast<const LoadNode &>(*L).Buffer == Buffer;
  });
}

class Mapper {
public:
  Mapper(Func &F, int64_t Threads, std::optional<int64_t> PinnedItems, int64_t MaxBlocks)
      : F(F), Names(F), Threads(Threads), PinnedItems(PinnedItems), MaxBlocks(MaxBlocks) {}

  Stmt map(const Stmt &S) {
    // 1. Match: outer serial loops around one store, or a block of them
    //    (maps beside one another, graph/MapGroup.h), whose values read
    //    none of the stored buffers.
    LoopRun Run = outerSerialLoops(S);
    if (Run.Loops.empty())
      return S;
    std::vector<const StoreNode *> Sts;
    if (Run.Inner->Kind == StmtKind::Store)
      Sts.push_back(&static_cast<const StoreNode &>(*Run.Inner));
    else if (Run.Inner->Kind == StmtKind::Block)
      for (const Stmt &C : static_cast<const BlockNode &>(*Run.Inner).Stmts) {
        if (C->Kind != StmtKind::Store)
          return S;
        Sts.push_back(&static_cast<const StoreNode &>(*C));
      }
    if (Sts.empty())
      return S;
    for (const StoreNode *St : Sts)
      for (const StoreNode *Other : Sts)
        if (readsBuffer(St->Value, Other->Buffer)) {
          remark("map-elementwise", S->SrcLine,
                 "the value reads '" + Other->Buffer + "', which the statement writes; left to " +
                     "map-to-gpu");
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
      Rnd = Names.fresh("round");
    }
    // One register array per store: val, val1, ... (each nest's own
    // scope, so every nest takes them from the first).
    while (Vals.size() < Sts.size())
      Vals.push_back(Names.fresh("val"));
    // 2. The wide path, if every tensor along the innermost loop can take
    //    part (widePath), and the scalar path that covers the same elements
    //    when its test fails, or alone.
    Expr Total = flatExtent(Run.Loops);
    Items = PinnedItems.value_or(4);
    Stmt Wide = widePath(Run, Sts, Line);
    // Each block covers Threads * Items runs of W elements on the wide path
    // and as many single elements, in rounds of 4, on the scalar one.
    int64_t PerThread = Wide ? Items * Width : Items;
    Stmt Scalar = scalarPath(Run, Sts, PerThread, Wide ? 4 : Items, Line);
    // 3. The note, the grid (grid-stride when max_blocks asks for it), the
    //    block and thread loops.
    std::string What =
        "[map-elementwise] " + std::to_string(PerThread) + " elements per thread, " +
        std::to_string(Threads * PerThread) + " per block, consecutive threads on consecutive " +
        (Wide ? "runs of " + std::to_string(Width) : std::string("elements")) +
        "; every value is computed before the first store, so " +
        std::to_string(Wide ? Items : PerThread) + " loads of each tensor per thread are in flight";
    if (Wide)
      What += "; the runs are single loads and stores of up to 16 bytes where " + WideWhy +
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
    remark("map-elementwise", Line,
           "took it: " + std::to_string(PerThread) + " elements per thread" +
               (Wide ? ", in runs of " + std::to_string(Width) + " where aligned"
                     : std::string(", one at a time")));
    Body = block({note(What, Line), Body});
    Body = forLoop(TX, intImm(0), intImm(Threads), ForKind::ThreadX, Body, Line);
    return forLoop(BX, intImm(0), Grid, ForKind::BlockX, Body, Line);
  }

private:
  Func &F;
  NameTable Names;
  int64_t Threads;
  std::optional<int64_t> PinnedItems; ///< the items_per_thread knob, if set
  int64_t Items = 4;                  ///< runs (or elements) per thread
  int64_t Width = 4; ///< elements per run: 16 bytes of the widest wide tensor
  int64_t MaxBlocks;
  std::string BX, TX, Step, Chunk, T, U, V, Rnd;
  std::vector<std::string> Vals; ///< per store: the registers of its values
  Expr WideCond;      ///< when the wide path runs
  std::string WideWhy; ///< WideCond in words

  /// for u: t = the (Round * Count + u)-th element (run of Run1) of the
  /// thread; if t < Total, Body with the loop variables bound to t.
  Stmt round(const LoopRun &Run, int64_t PerThread, int64_t Run1, const Expr &Round,
             int64_t Count, Stmt Body, unsigned Line) {
    Expr Nth = Round ? add(mul(Round, intImm(Count)), var(U)) : var(U);
    Expr Q = add(add(mul(var(MaxBlocks ? Chunk : BX), intImm(Threads * PerThread / Run1)),
                     mul(Nth, intImm(Threads))),
                 var(TX));
    Expr TV = Run1 == 1 ? Q : mul(Q, intImm(Run1));
    return forLoop(U, intImm(0), intImm(Count), ForKind::Serial,
                   letStmt(T, TV,
                           ifThen(lt(var(T), flatExtent(Run.Loops)),
                                  bindFlatIndex(Run.Loops, var(T), Body), nullptr, Line),
                           Line),
                   Line);
  }

  /// The thread's PerThread elements one at a time, in rounds of Count:
  /// each round loads and computes its Count values before it stores them.
  /// Without a wide path this is the whole launch (U elements in one
  /// round); beside one it is the else branch, the same W * U elements in
  /// W U / 4 rounds of 4 (tensors that start mid-allocation, odd rows).
  /// The rounds stay a rolled loop, so the unrolled code holds 2 * Count
  /// elements rather than 2 * PerThread: a value may hold a subroutine call
  /// (an f32 division's slow path), and with all 16 unrolled the registers
  /// live across those calls spilled in softmax's and layernorm's stages
  /// (test/backend/no-spills).
  Stmt scalarPath(const LoopRun &Run, const std::vector<const StoreNode *> &Sts,
                  int64_t PerThread, int64_t Count, unsigned Line) {
    int64_t Rounds = PerThread / Count;
    Expr W = Rounds > 1 ? var(Rnd) : nullptr;
    std::vector<Stmt> Values, Stores;
    for (size_t I = 0; I < Sts.size(); ++I) {
      unsigned At = Sts[I]->SrcLine; // each store keeps its statement's line
      Values.push_back(store(Vals[I], {var(U)}, Sts[I]->Value, At));
      Stores.push_back(store(Sts[I]->Buffer, Sts[I]->Indices,
                             load(Sts[I]->Value->Type, Vals[I], {var(U)}), At));
    }
    Stmt Compute = round(Run, PerThread, 1, W, Count, seq(std::move(Values)), Line);
    Stmt Write = round(Run, PerThread, 1, W, Count, seq(std::move(Stores)), Line);
    Stmt Body = block({Compute, Write});
    for (size_t I = Sts.size(); I-- > 0;)
      Body = allocate(tempBuffer(Vals[I], Sts[I]->Value->Type, {intImm(Count)}, MemScope::Register),
                      Body, Line);
    if (Rounds > 1)
      Body = forLoop(Rnd, intImm(0), intImm(Rounds), ForKind::Serial, Body, Line, /*Unroll=*/1);
    return Body;
  }

  /// Runs of Width consecutive elements of the innermost loop (run q of the
  /// nest starts at element t = Width q), Width = 16 bytes of the widest
  /// such tensor (4 when one has 4-byte elements, 8 when the widest have
  /// 2), or 16 beside an i8 one, each wider tensor's run then copied 16
  /// bytes at a time.
  /// 1. Each 1-, 2- or 4-byte tensor (a parameter or a temporary) read along
  ///    that loop and nowhere else is a staged load. Every tensor along the
  ///    loop takes part, or there is no wide path: one left out (f64, i64)
  ///    would be accessed with a stride of a run, up to 8 times the memory
  ///    transactions.
  /// 2. Width, and Items (items_per_thread, by default 16 / Width: 16
  ///    elements a thread).
  /// 3. WideCond: the innermost extent and the rows of the wide tensors are
  ///    multiples of Width, and their first elements aligned to a run
  ///    (`if Extent % W == 0 && Rows % W == 0 && aligned(X[0, ...], W *
  ///    bytes) ...`): what proves vectorize's accesses aligned.
  /// 4. The rounds: each staged load copied into registers by a Width-loop,
  ///    the value computed from them by another, and a contiguous output
  ///    written by a third; vectorize makes the copies single accesses of up
  ///    to 16 bytes.
  /// Null, with a remark, when no access would be wide.
  Stmt widePath(const LoopRun &Run, const std::vector<const StoreNode *> &Sts, unsigned Line) {
    // 1. The staged loads and the wide store.
    const ForNode &In = *Run.Loops.back();
    auto Stageable = [](DType T) {
      return dtypeBytes(T) == 4 || dtypeBytes(T) == 2 || T == DType::I8;
    };
    std::vector<Expr> Staged;
    const Buffer *Odd = nullptr; // along the loop, but of another size
    for (const StoreNode *St : Sts)
      for (const Expr &L : loadsOf(St->Value)) {
        const auto &N = static_cast<const LoadNode &>(*L);
        const Buffer *B = findTensor(F, N.Buffer);
        if (!B || !contiguousIn(N.Indices, In.Var))
          continue;
        if (!Stageable(B->Type))
          Odd = B;
        else if (llvm::none_of(Staged, [&](const Expr &X) { return structurallyEqual(X, L); }))
          Staged.push_back(L);
      }
    // The outputs written in runs: those along the loop (all or none).
    std::vector<const Buffer *> Outs;
    for (const StoreNode *St : Sts) {
      const Buffer *Out = findTensor(F, St->Buffer);
      if (!Out || !contiguousIn(St->Indices, In.Var))
        continue;
      if (!Stageable(Out->Type))
        Odd = Out;
      else
        Outs.push_back(Out);
    }
    bool WideStore = !Outs.empty();
    if (WideStore && Outs.size() < Sts.size()) {
      const StoreNode *Strided = *llvm::find_if(Sts, [&](const StoreNode *St) {
        return llvm::none_of(Outs, [&](const Buffer *B) { return B->Name == St->Buffer; });
      });
      remark("map-elementwise", Line,
             "'" + Strided->Buffer + "' is not written along '" + In.Var +
                 "' as the others are; one element at a time");
      return nullptr;
    }
    if (Staged.empty() && !WideStore) {
      remark("map-elementwise", Line,
             "no 1-, 2- or 4-byte tensor is accessed contiguously along '" + In.Var +
                 "'; one element at a time");
      return nullptr;
    }
    // Left out of the runs, it would be accessed with a stride of a run.
    if (Odd) {
      remark("map-elementwise", Line,
             "'" + Odd->Name + "' is accessed along '" + In.Var + "' but its " +
                 std::to_string(dtypeBytes(Odd->Type)) +
                 "-byte elements do not move in runs with the others; one element at a time");
      return nullptr;
    }
    // 2. A run is 16 bytes of the widest wide tensor: 4 elements when any
    // is 4 bytes (a 2-byte tensor then moves 8 bytes at a time), else 8;
    // beside a 1-byte tensor, 16 bytes of it (a wider tensor moves in
    // several 16-byte accesses: fewer, wider loads of the bytes).
    int64_t Widest = 0, Narrowest = 16;
    for (const Buffer *Out : Outs) {
      Widest = std::max<int64_t>(Widest, dtypeBytes(Out->Type));
      Narrowest = std::min<int64_t>(Narrowest, dtypeBytes(Out->Type));
    }
    for (const Expr &L : Staged) {
      Widest = std::max<int64_t>(Widest, dtypeBytes(L->Type));
      Narrowest = std::min<int64_t>(Narrowest, dtypeBytes(L->Type));
    }
    Width = 16 / (Narrowest == 1 ? 1 : Widest);
    std::optional<int64_t> Ext = asConstInt(In.Extent);
    if (Ext && *Ext % Width && *Ext % 4 == 0)
      Width = 4; // 8-byte runs of halves rather than none
    // 16 elements per thread unless pinned: runs of 8 halves, 4 per thread,
    // spilled in softmax's 64-bit-index stages.
    Items = PinnedItems.value_or(16 / Width);
    if (asConstInt(In.Min) != 0 || (Ext && *Ext % Width)) {
      remark("map-elementwise", Line,
             "'" + In.Var + "' does not run in whole groups of " + std::to_string(Width) +
                 "; one element at a time");
      return nullptr;
    }

    // 3. The test, each condition once (a constant needs none, and one
    //    that is not a multiple rules the wide path out).
    std::vector<std::string> Wide;
    auto Tensor = [&](const std::string &Name) {
      if (!llvm::is_contained(Wide, Name))
        Wide.push_back(Name);
    };
    for (const Expr &L : Staged)
      Tensor(static_cast<const LoadNode &>(*L).Buffer);
    for (const Buffer *Out : Outs)
      Tensor(Out->Name);
    std::optional<Expr> Test =
        runTest(F, In.Extent, Wide, Width,
                [&](DType T) { return std::min<int64_t>(16, Width * dtypeBytes(T)); });
    if (!Test) {
      remark("map-elementwise", Line,
             "a tensor read or written along '" + In.Var +
                 "' has rows that are not whole runs of " + std::to_string(Width) +
                 "; one element at a time");
      return nullptr;
    }
    WideCond = *Test;
    WideWhy = "'" + In.Var + "' runs and the rows of ";
    for (size_t I = 0; I < Wide.size(); ++I)
      WideWhy += (I ? ", " : "") + Wide[I];
    WideWhy += " are multiples of " + std::to_string(Width) + " and the tensors aligned to a run";

    // 4. Registers: the staged runs and the values, [Items, Width] each.
    Expr C = add(var(In.Var), var(V));
    // A copy of a run of T: for v in 0..Width, or where that passes 16
    // bytes, 16 bytes at a time: for h { for v in 0..16 / bytes }. Body
    // takes the run's element ((i + h K) + v, the form vectorize matches)
    // and its place in the registers (h K + v).
    std::string H;
    auto RunCopy = [&](DType T, const std::function<Stmt(const Expr &, const Expr &)> &Body) {
      int64_t K = std::min<int64_t>(Width, 16 / dtypeBytes(T));
      if (K == Width)
        return forLoop(V, intImm(0), intImm(Width), ForKind::Serial, Body(C, var(V)), Line);
      if (H.empty())
        H = Names.fresh("h");
      Expr Off = mul(var(H), intImm(K));
      Stmt Inner = forLoop(V, intImm(0), intImm(K), ForKind::Serial,
                           Body(add(add(var(In.Var), Off), var(V)), add(Off, var(V))), Line);
      return forLoop(H, intImm(0), intImm(Width / K), ForKind::Serial, Inner, Line);
    };
    std::vector<Stmt> Copies;
    ExprReplacer R; // each staged load -> its register copy
    std::vector<Buffer> Regs;
    for (const Expr &L : Staged) {
      const auto &N = static_cast<const LoadNode &>(*L);
      std::string Name = Names.fresh(N.Buffer + "_run");
      Regs.push_back(tempBuffer(Name, N.Type, {intImm(Items), intImm(Width)}, MemScope::Register));
      Copies.push_back(RunCopy(N.Type, [&](const Expr &At, const Expr &Reg) {
        std::vector<Expr> Idx = N.Indices;
        Idx.back() = At;
        return store(Name, {var(U), Reg}, load(N.Type, N.Buffer, Idx), Line);
      }));
      R.Map.push_back({L, load(N.Type, Name, {var(U), var(V)})});
    }
    std::vector<Stmt> Writes;
    for (size_t I = 0; I < Sts.size(); ++I) {
      const StoreNode &St = *Sts[I];
      DType VT = St.Value->Type;
      Expr Value = substitute(R.mutate(St.Value), In.Var, C);
      unsigned SL = St.SrcLine; // each store keeps its statement's line
      Copies.push_back(forLoop(V, intImm(0), intImm(Width), ForKind::Serial,
                               store(Vals[I], {var(U), var(V)}, Value, SL), SL));
      const Buffer *Out = findTensor(F, St.Buffer);
      Writes.push_back(RunCopy(Out ? Out->Type : VT, [&](const Expr &At, const Expr &Reg) {
        std::vector<Expr> OutIdx;
        for (const Expr &Ix : St.Indices)
          OutIdx.push_back(substitute(Ix, In.Var, At));
        return store(St.Buffer, OutIdx, load(VT, Vals[I], {var(U), Reg}), SL);
      }));
    }
    int64_t PerThread = Items * Width;
    Stmt Body = block({round(Run, PerThread, Width, nullptr, Items, block(std::move(Copies)), Line),
                       round(Run, PerThread, Width, nullptr, Items, seq(std::move(Writes)), Line)});
    for (size_t I = Sts.size(); I-- > 0;)
      Body = allocate(tempBuffer(Vals[I], Sts[I]->Value->Type, {intImm(Items), intImm(Width)},
                                 MemScope::Register),
                      Body, Line);
    for (auto It = Regs.rbegin(); It != Regs.rend(); ++It)
      Body = allocate(*It, Body, Line);
    return Body;
  }
};

} // namespace

void mapElementwise(Func &F) {
  std::optional<int64_t> Items;
  if (findKnob(F, "items_per_thread"))
    Items = knobInt(F, "items_per_thread", 4);
  Mapper M(F, knobInt(F, "threads", MapToGPUThreads), Items,
           knobInt(F, "max_blocks", MapElementwiseMaxBlocks));
  launchNests(F, LaunchClass::Elementwise,
              [&](const Stmt &S, std::vector<Knob> &) { return M.map(S); });
}

} // namespace tdsl
