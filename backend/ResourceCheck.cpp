//===- ResourceCheck.cpp - Does each launch fit the target GPU? -----------===//
#include "backend/ResourceCheck.h"
#include "backend/CudaEmitter.h"
#include "ir/Simplify.h"

#include <functional>

#include <algorithm>

using namespace tdsl;
using namespace tdsl::ir;

ArchLimits tdsl::archLimits(unsigned Sm) {
  ArchLimits L;
  // The opt-in maximum per block (CUDA C Programming Guide, compute
  // capabilities table): what cudaFuncSetAttribute may raise the limit to.
  if (Sm == 75)
    L.MaxSharedBytes = 64 * 1024;
  else if (Sm == 80 || Sm == 87)
    L.MaxSharedBytes = 163 * 1024;
  else if (Sm == 86 || Sm == 89 || Sm >= 120)
    L.MaxSharedBytes = 99 * 1024;
  else
    L.MaxSharedBytes = 227 * 1024; // sm_90, sm_100
  return L;
}

std::optional<int64_t> tdsl::sharedAllocBytes(const Buffer &B) {
  int64_t Elems = 1;
  for (unsigned D = 0; D < B.rank(); ++D) {
    std::optional<int64_t> Ext = asConstInt(simplifyExpr(B.Shape[D]));
    if (!Ext)
      return std::nullopt;
    Elems *= *Ext + (D < B.Padding.size() ? B.Padding[D] : 0);
  }
  return (Elems * dtypeBytes(B.Type) + 15) / 16 * 16;
}

namespace {

/// What one launch asks of the GPU.
class LaunchResources : public IRVisitor {
public:
  int64_t SharedBytes = 0;
  std::vector<std::string> NonConstantShared;
  int64_t BlockDim[3] = {1, 1, 1};
  std::optional<int64_t> GridDim[3]; ///< constant grid extents only

protected:
  void visitAllocate(const AllocateNode &N) override {
    if (N.Buf.Scope == MemScope::Shared) {
      if (std::optional<int64_t> Bytes = sharedAllocBytes(N.Buf))
        SharedBytes += *Bytes;
      else
        NonConstantShared.push_back(N.Buf.Name);
    }
    IRVisitor::visitAllocate(N);
  }
  void visitFor(const ForNode &N) override {
    std::optional<int64_t> Ext = asConstInt(simplifyExpr(N.Extent));
    auto Widen = [](int64_t &Dim, int64_t V) { Dim = std::max(Dim, V); };
    if (Ext) {
      switch (N.Loop) {
      case ForKind::ThreadX:
      case ForKind::Lane: Widen(BlockDim[0], N.Loop == ForKind::Lane ? 32 : *Ext); break;
      case ForKind::Warp: Widen(BlockDim[0], *Ext * 32); break;
      case ForKind::ThreadY: Widen(BlockDim[1], *Ext); break;
      case ForKind::ThreadZ: Widen(BlockDim[2], *Ext); break;
      case ForKind::BlockX: GridDim[0] = *Ext; break;
      case ForKind::BlockY: GridDim[1] = *Ext; break;
      case ForKind::BlockZ: GridDim[2] = *Ext; break;
      default: break;
      }
    }
    IRVisitor::visitFor(N);
  }
};

std::string kibText(int64_t Bytes) {
  if (Bytes % 1024 == 0)
    return std::to_string(Bytes / 1024) + " KiB";
  return std::to_string(Bytes) + " bytes";
}

/// Checks one launch; Where is "kernel 'f' launch 3".
void checkLaunch(const Stmt &Body, const std::string &Where, llvm::StringRef Arch,
                 const ArchLimits &Limits, std::vector<std::string> &Problems) {
  LaunchResources R;
  R.visit(Body);
  for (const std::string &Name : R.NonConstantShared)
    Problems.push_back(Where + " allocates shared buffer '" + Name +
                       "' with a non-constant shape");
  if (R.SharedBytes > Limits.MaxSharedBytes)
    Problems.push_back(Where + " needs " + std::to_string(R.SharedBytes) +
                       " bytes of shared memory; " + Arch.str() + " allows at most " +
                       std::to_string(Limits.MaxSharedBytes) + " (" +
                       kibText(Limits.MaxSharedBytes) + ")");
  static const char *const Axis[3] = {"x", "y", "z"};
  int64_t Threads = 1;
  for (unsigned D = 0; D < 3; ++D) {
    Threads *= R.BlockDim[D];
    if (R.BlockDim[D] > Limits.MaxBlockDim[D])
      Problems.push_back(Where + " has a block of " + std::to_string(R.BlockDim[D]) +
                         " threads along " + Axis[D] + "; at most " +
                         std::to_string(Limits.MaxBlockDim[D]) + " are allowed");
    if (R.GridDim[D] && (*R.GridDim[D] > Limits.MaxGridDim[D] || *R.GridDim[D] < 0))
      Problems.push_back(Where + " has a grid of " + std::to_string(*R.GridDim[D]) +
                         " blocks along " + Axis[D] + "; at most " +
                         std::to_string(Limits.MaxGridDim[D]) + " are allowed");
  }
  if (Threads > Limits.MaxThreadsPerBlock)
    Problems.push_back(Where + " needs " + std::to_string(Threads) +
                       " threads per block; at most " +
                       std::to_string(Limits.MaxThreadsPerBlock) + " are allowed");
}

/// Visits the launches of F in the emitter's order: top-level statements,
/// looking through blocks and global allocs (which the launcher performs).
void forEachLaunch(const Stmt &S, unsigned &Index,
                   const std::function<void(const Stmt &, unsigned)> &Fn) {
  if (S->Kind == StmtKind::Block) {
    for (const Stmt &Child : static_cast<const BlockNode &>(*S).Stmts)
      forEachLaunch(Child, Index, Fn);
    return;
  }
  if (S->Kind == StmtKind::Allocate) {
    const auto &A = static_cast<const AllocateNode &>(*S);
    if (A.Buf.Scope == MemScope::Global) {
      forEachLaunch(A.Body, Index, Fn);
      return;
    }
  }
  Fn(S, Index++);
}

} // namespace

std::vector<std::string> tdsl::checkResources(const Module &M, llvm::StringRef Arch) {
  ArchLimits Limits = archLimits(parseCudaArch(Arch));
  std::vector<std::string> Problems;
  for (const Func &F : M.Funcs) {
    unsigned Index = 0;
    forEachLaunch(F.Body, Index, [&](const Stmt &Body, unsigned I) {
      checkLaunch(Body, "kernel '" + F.Name + "' launch " + std::to_string(I), Arch, Limits,
                  Problems);
    });
  }
  return Problems;
}
