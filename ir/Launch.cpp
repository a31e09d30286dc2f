//===- Launch.cpp - The one analysis of a launch --------------------------===//
#include "ir/Launch.h"
#include "ir/Simplify.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cassert>

namespace tdsl::ir {

namespace {

constexpr int64_t WarpSize = 32;

class ShapeCollector : public IRVisitor {
public:
  LaunchShape Shape;

protected:
  int64_t Top = 0; ///< shared bytes held by the allocations around the visit
  int64_t Sum = 0; ///< and by every allocation so far
  int CopyDepth = 0; ///< the then branches holding tensor copies around the visit

public:
  bool Versioned = false; ///< whether one was seen

protected:
  std::vector<const Buffer *> Allocs; ///< the allocations around the visit

public:
  /// The shared buffers tensor_copy statements write (known before the
  /// walk, which places them).
  llvm::StringSet<> CopyDsts;

protected:

  void use(const std::string &B) {
    if (!llvm::is_contained(Shape.Buffers, B))
      Shape.Buffers.push_back(B);
  }
  void visitLoad(const LoadNode &N) override {
    use(N.Buffer);
    IRVisitor::visitLoad(N);
  }
  void visitCall(const CallNode &N) override {
    if (N.Fn == Intrinsic::Aligned) {
      std::pair<std::string, int64_t> T = {static_cast<const LoadNode &>(*N.Args[0]).Buffer,
                                           asConstInt(N.Args[1]).value_or(1)};
      if (!llvm::is_contained(Shape.AlignmentTests, T))
        Shape.AlignmentTests.push_back(T);
    }
    IRVisitor::visitCall(N);
  }
  void visitStore(const StoreNode &N) override {
    use(N.Buffer);
    Shape.Stored.insert(N.Buffer);
    IRVisitor::visitStore(N);
  }
  void visitAsyncCopy(const AsyncCopyNode &N) override {
    use(N.Src);
    use(N.Dst);
    Shape.Stored.insert(N.Dst);
    IRVisitor::visitAsyncCopy(N);
  }
  void visitMbarrier(const MbarrierNode &N) override {
    use(N.Buffer);
    Shape.Mbarriers.insert(N.Buffer);
    IRVisitor::visitMbarrier(N);
  }
  void visitTensorCopy(const TensorCopyNode &N) override {
    use(N.Src);
    use(N.Dst);
    use(N.Bar);
    Shape.Mbarriers.insert(N.Bar);
    Shape.Stored.insert(N.Dst);
    LaunchShape::TensorMapUse Use{N.Src, N.Box, 0};
    for (auto It = Allocs.rbegin(); It != Allocs.rend(); ++It)
      if ((*It)->Name == N.Dst) {
        Use.SwizzleBytes = tensorCopySwizzleBytes(**It);
        break;
      }
    if (!llvm::is_contained(Shape.TensorMaps, Use))
      Shape.TensorMaps.push_back(std::move(Use));
    IRVisitor::visitTensorCopy(N);
  }
  void visitAllocate(const AllocateNode &N) override {
    Shape.LocalBuffers.insert(N.Buf.Name);
    Allocs.push_back(&N.Buf);
    if (N.Buf.Scope == MemScope::Shared) {
      if (std::optional<int64_t> Bytes = sharedAllocBytes(N.Buf)) {
        // A stack: the tile lives above those whose scope holds it, and
        // its bytes are free again after its own scope. A copy
        // destination starts at a multiple of TensorCopyAlign.
        int64_t Pad = 0;
        if (CopyDsts.count(N.Buf.Name))
          Pad = (LaunchShape::TensorCopyAlign - Top % LaunchShape::TensorCopyAlign) %
                LaunchShape::TensorCopyAlign;
        Top += Pad;
        Shape.SharedAllocs.push_back(&N);
        Shape.SharedOffsets.push_back(Top);
        Top += *Bytes;
        Sum += *Bytes + Pad;
        Shape.SharedBytes = std::max(Shape.SharedBytes, Top);
        if (!CopyDepth)
          Shape.GuardedSharedBytes = std::max(Shape.GuardedSharedBytes, Top);
        Shape.SharedReused = Sum > Shape.SharedBytes;
        IRVisitor::visitAllocate(N);
        Top -= *Bytes + Pad;
        Allocs.pop_back();
        return;
      }
      Shape.NonConstantShared.push_back(N.Buf.Name);
    }
    IRVisitor::visitAllocate(N);
    Allocs.pop_back();
  }
  void visitIf(const IfNode &N) override {
    if (!N.Else || !containsTensorCopy(N.Then))
      return IRVisitor::visitIf(N);
    Versioned = true;
    visit(N.Cond);
    ++CopyDepth;
    visit(N.Then);
    --CopyDepth;
    visit(N.Else);
  }
  void visitFor(const ForNode &N) override {
    if (isBlockLoop(N.Loop)) {
      unsigned D = static_cast<unsigned>(N.Loop) - static_cast<unsigned>(ForKind::BlockX);
      if (Shape.Grid[D])
        Shape.GridProblems.push_back("binds " + forKindName(N.Loop).str() + " twice");
      Shape.Grid[D] = N.Extent;
    } else if (isThreadLoop(N.Loop)) {
      std::optional<int64_t> Ext = asConstInt(simplifyExpr(N.Extent));
      if (!Ext || *Ext <= 0) {
        Shape.NonConstantThreads.push_back(&N);
      } else {
        auto Widen = [](int64_t &Dim, int64_t V) { Dim = std::max(Dim, V); };
        switch (N.Loop) {
        case ForKind::ThreadX:
        case ForKind::Lane:
          Widen(Shape.Block[0], *Ext);
          break;
        case ForKind::Warp:
          Widen(Shape.Block[0], *Ext * WarpSize);
          break;
        case ForKind::ThreadY:
          Widen(Shape.Block[1], *Ext);
          break;
        case ForKind::ThreadZ:
          Widen(Shape.Block[2], *Ext);
          break;
        default:
          break;
        }
      }
    }
    IRVisitor::visitFor(N);
  }
};

void walkHost(
    const Stmt &S, std::vector<const Buffer *> &Allocs,
    const std::function<void(const LaunchNode &, const std::vector<const Buffer *> &)> &Fn) {
  if (!S)
    return;
  switch (S->Kind) {
  case StmtKind::Block:
    for (const Stmt &C : static_cast<const BlockNode &>(*S).Stmts)
      walkHost(C, Allocs, Fn);
    return;
  case StmtKind::Let:
    walkHost(static_cast<const LetNode &>(*S).Body, Allocs, Fn);
    return;
  case StmtKind::Allocate: {
    const auto &A = static_cast<const AllocateNode &>(*S);
    if (A.Buf.Scope != MemScope::Global)
      return;
    Allocs.push_back(&A.Buf);
    walkHost(A.Body, Allocs, Fn);
    Allocs.pop_back();
    return;
  }
  case StmtKind::Launch:
    Fn(static_cast<const LaunchNode &>(*S), Allocs);
    return;
  default:
    return;
  }
}

} // namespace

bool containsTensorCopy(const Stmt &S) {
  struct Finder : IRVisitor {
    bool Found = false;
    void visitTensorCopy(const TensorCopyNode &) override { Found = true; }
  } F;
  F.visit(S);
  return F.Found;
}

LaunchShape launchShape(const LaunchNode &L) {
  ShapeCollector C;
  struct Dsts : IRVisitor {
    llvm::StringSet<> &Names;
    explicit Dsts(llvm::StringSet<> &N) : Names(N) {}
    void visitTensorCopy(const TensorCopyNode &N) override { Names.insert(N.Dst); }
  } Scan(C.CopyDsts);
  Scan.visit(L.Body);
  C.visit(L.Body);
  for (Expr &G : C.Shape.Grid)
    if (!G)
      G = intImm(1);
  // The tiles' base is aligned at run time inside this slack.
  if (!C.Shape.TensorMaps.empty()) {
    C.Shape.SharedBytes += LaunchShape::TensorCopyAlign;
    C.Shape.GuardedSharedBytes += LaunchShape::TensorCopyAlign;
  }
  if (!C.Versioned)
    C.Shape.GuardedSharedBytes = 0;
  return std::move(C.Shape);
}

int64_t tensorCopySwizzleBytes(const Buffer &Dst) {
  return Dst.Swz ? int64_t(16) << Dst.Swz.Bits : 0;
}

std::optional<int64_t> sharedAllocBytes(const Buffer &B) {
  int64_t Elems = 1;
  for (unsigned D = 0; D < B.rank(); ++D) {
    std::optional<int64_t> Ext = asConstInt(simplifyExpr(B.Shape[D]));
    if (!Ext)
      return std::nullopt;
    Elems *= *Ext + (D < B.Padding.size() ? B.Padding[D] : 0);
  }
  return (Elems * dtypeBytes(B.Type) + 15) / 16 * 16;
}

void forEachLaunch(
    const Func &F,
    const std::function<void(const LaunchNode &, const std::vector<const Buffer *> &)> &Fn) {
  std::vector<const Buffer *> Allocs;
  walkHost(F.Body, Allocs, Fn);
}

int64_t LaunchShape::sharedOffset(const AllocateNode *A) const {
  auto It = llvm::find(SharedAllocs, A);
  assert(It != SharedAllocs.end() && "not a shared tile of this launch");
  return SharedOffsets[It - SharedAllocs.begin()];
}

void forEachHostStmt(const Stmt &S, const std::function<void(const Stmt &)> &Fn) {
  if (!S)
    return;
  Fn(S);
  if (!isHostStructure(S))
    return;
  switch (S->Kind) {
  case StmtKind::Block:
    for (const Stmt &C : static_cast<const BlockNode &>(*S).Stmts)
      forEachHostStmt(C, Fn);
    return;
  case StmtKind::Let:
    forEachHostStmt(static_cast<const LetNode &>(*S).Body, Fn);
    return;
  default:
    forEachHostStmt(static_cast<const AllocateNode &>(*S).Body, Fn);
    return;
  }
}

bool isHostStructure(const Stmt &S) {
  switch (S->Kind) {
  case StmtKind::Block:
  case StmtKind::Let:
    return true;
  case StmtKind::Allocate:
    return static_cast<const AllocateNode &>(*S).Buf.Scope == MemScope::Global;
  default:
    return false;
  }
}

bool hostEvaluable(const Expr &E, const llvm::StringSet<> &Sizes) {
  struct Check : IRVisitor {
    const llvm::StringSet<> &Sizes;
    bool Ok = true;
    explicit Check(const llvm::StringSet<> &S) : Sizes(S) {}
    void visitVar(const VarNode &N) override { Ok &= Sizes.count(N.Name) > 0; }
    void visitLoad(const LoadNode &) override { Ok = false; }
    void visitCall(const CallNode &N) override {
      if (N.Fn != Intrinsic::Aligned)
        Ok = false; // its argument is a load, which the host does not read
    }
  } C(Sizes);
  C.visit(E);
  return C.Ok;
}

namespace {

const IfNode *findVersion(const Stmt &S, const llvm::StringSet<> &Sizes) {
  switch (S->Kind) {
  case StmtKind::For: {
    const auto &F = static_cast<const ForNode &>(*S);
    return isBlockLoop(F.Loop) || isThreadLoop(F.Loop) ? findVersion(F.Body, Sizes) : nullptr;
  }
  case StmtKind::Let: return findVersion(static_cast<const LetNode &>(*S).Body, Sizes);
  case StmtKind::Allocate: return findVersion(static_cast<const AllocateNode &>(*S).Body, Sizes);
  case StmtKind::Block:
    for (const Stmt &C : static_cast<const BlockNode &>(*S).Stmts)
      if (const IfNode *V = findVersion(C, Sizes))
        return V;
    return nullptr;
  case StmtKind::If: {
    const auto &N = static_cast<const IfNode &>(*S);
    return N.Else && hostEvaluable(N.Cond, Sizes) ? &N : nullptr;
  }
  default: return nullptr;
  }
}

} // namespace

const IfNode *launchVersion(const LaunchNode &L, const llvm::StringSet<> &Sizes) {
  return L.Class == LaunchClass::Contraction ? findVersion(L.Body, Sizes) : nullptr;
}

} // namespace tdsl::ir
