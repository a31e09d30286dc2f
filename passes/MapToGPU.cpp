//===- MapToGPU.cpp - One launch per statement, one thread per output -----===//
#include "passes/MapToGPU.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace tdsl {

using namespace ir;

namespace {

/// Every name a Func uses (sizes, buffers, loop and let variables), so that
/// the variables this pass introduces never shadow or capture one.
class NameCollector : public IRVisitor {
public:
  llvm::StringSet<> Names;

protected:
  void visitVar(const VarNode &N) override { Names.insert(N.Name); }
  void visitLoad(const LoadNode &N) override {
    Names.insert(N.Buffer);
    IRVisitor::visitLoad(N);
  }
  void visitFor(const ForNode &N) override {
    Names.insert(N.Var);
    IRVisitor::visitFor(N);
  }
  void visitLet(const LetNode &N) override {
    Names.insert(N.Var);
    IRVisitor::visitLet(N);
  }
  void visitStore(const StoreNode &N) override {
    Names.insert(N.Buffer);
    IRVisitor::visitStore(N);
  }
  void visitAllocate(const AllocateNode &N) override {
    Names.insert(N.Buf.Name);
    IRVisitor::visitAllocate(N);
  }
};

/// True if S holds a loop bound to blocks, threads, warps or lanes.
class GPULoopFinder : public IRVisitor {
public:
  bool Found = false;

protected:
  void visitFor(const ForNode &N) override {
    if (N.Loop != ForKind::Serial && N.Loop != ForKind::Unrolled &&
        N.Loop != ForKind::Vectorized)
      Found = true;
    else
      IRVisitor::visitFor(N);
  }
};

/// True if E mentions any of Names.
class VarUseFinder : public IRVisitor {
public:
  explicit VarUseFinder(const std::vector<std::string> &Names) : Names(Names) {}
  bool Found = false;

protected:
  void visitVar(const VarNode &N) override {
    for (const std::string &Name : Names)
      Found |= N.Name == Name;
  }

private:
  const std::vector<std::string> &Names;
};

class Mapper {
public:
  explicit Mapper(Func &F) {
    NameCollector C;
    for (const std::string &S : F.Sizes)
      C.Names.insert(S);
    for (const Buffer &B : F.Params)
      C.Names.insert(B.Name);
    C.visit(F.Body);
    Used = std::move(C.Names);
  }

  /// Maps the top level: allocs of global buffers stay hosts of launches.
  Stmt mapTop(const Stmt &S) {
    if (S->Kind == StmtKind::Block) {
      const auto &B = static_cast<const BlockNode &>(*S);
      std::vector<Stmt> Out;
      bool Changed = false;
      for (const Stmt &Child : B.Stmts) {
        Out.push_back(mapTop(Child));
        Changed |= Out.back() != Child;
      }
      return Changed ? block(std::move(Out), B.SrcLine) : S;
    }
    if (S->Kind == StmtKind::Allocate) {
      const auto &A = static_cast<const AllocateNode &>(*S);
      if (A.Buf.Scope == MemScope::Global) {
        Stmt Body = mapTop(A.Body);
        return Body == A.Body ? S : allocate(A.Buf, Body, A.SrcLine);
      }
    }
    return mapNest(S);
  }

private:
  llvm::StringSet<> Used;

  /// A name no statement of the Func uses. Sibling launches may share
  /// names (their scopes are disjoint), so every launch reads bx, tx, t.
  std::string fresh(const std::string &Base, const std::vector<std::string> &Taken = {}) {
    std::string Name = Base;
    for (unsigned I = 1; Used.count(Name) || llvm::is_contained(Taken, Name); ++I)
      Name = Base + std::to_string(I);
    return Name;
  }

  Stmt mapNest(const Stmt &S) {
    GPULoopFinder G;
    G.visit(S);
    if (G.Found) {
      // A remark, never silence: a hand-written or already mapped launch.
      llvm::errs() << "remark: map-to-gpu: statement at line " << S->SrcLine
                   << " already holds GPU loops; left as it is\n";
      return S;
    }

    // The maximal perfect, rectangular run of outer serial loops.
    std::vector<const ForNode *> Loops;
    std::vector<std::string> LoopVars;
    Stmt Inner = S;
    while (Inner->Kind == StmtKind::For) {
      const auto &L = static_cast<const ForNode &>(*Inner);
      if (L.Loop != ForKind::Serial)
        break;
      VarUseFinder Uses(LoopVars);
      Uses.visit(L.Min);
      Uses.visit(L.Extent);
      if (Uses.Found)
        break;
      Loops.push_back(&L);
      LoopVars.push_back(L.Var);
      Inner = L.Body;
      while (Inner->Kind == StmtKind::Block &&
             static_cast<const BlockNode &>(*Inner).Stmts.size() == 1)
        Inner = static_cast<const BlockNode &>(*Inner).Stmts.front();
    }

    unsigned Line = S->SrcLine;
    std::string BX = fresh("bx"), TX = fresh("tx", {BX});
    if (Loops.empty()) {
      // Rank 0: one thread of one block.
      return forLoop(BX, intImm(0), intImm(1), ForKind::BlockX,
                     forLoop(TX, intImm(0), intImm(1), ForKind::ThreadX, S, Line), Line);
    }

    // Recover each variable from t, innermost fastest:
    //   v_k = t / (e_{k+1} * ... * e_n) % e_k + min_k
    // (no % on the outermost: t < total already bounds it).
    std::string T = fresh("t", {BX, TX});
    Expr TVar = var(T);
    Stmt Body = Inner;
    Expr Stride = intImm(1);
    for (size_t K = Loops.size(); K-- > 0;) {
      const ForNode &L = *Loops[K];
      // Spelled without "/ 1" and "+ 0": -O0 code is read too.
      Expr V = K + 1 == Loops.size() ? TVar : binary(BinaryOp::Div, TVar, Stride);
      if (K != 0)
        V = binary(BinaryOp::Mod, V, L.Extent);
      if (asConstInt(L.Min) != 0)
        V = add(V, L.Min);
      Body = letStmt(L.Var, V, Body, L.SrcLine);
      Stride = K + 1 == Loops.size() ? L.Extent : mul(L.Extent, Stride);
    }
    Expr Total = Stride;
    Expr Threads = intImm(MapToGPUThreads);
    Body = ifThen(lt(TVar, Total), Body, nullptr, Line);
    Body = letStmt(T, add(mul(var(BX), Threads), var(TX)), Body, Line);
    Body = forLoop(TX, intImm(0), Threads, ForKind::ThreadX, Body, Line);
    Expr Blocks = binary(BinaryOp::Div, add(Total, intImm(MapToGPUThreads - 1)), Threads);
    return forLoop(BX, intImm(0), Blocks, ForKind::BlockX, Body, Line);
  }
};

} // namespace

void mapToGPU(Func &F) {
  Mapper M(F);
  F.Body = M.mapTop(F.Body);
}

} // namespace tdsl
