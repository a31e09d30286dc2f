//===- ResourceCheck.cpp - Does each launch fit the target GPU? -----------===//
#include "backend/ResourceCheck.h"
#include "backend/CudaEmitter.h"
#include "ir/Launch.h"
#include "ir/Simplify.h"

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

namespace {

std::string kibText(int64_t Bytes) {
  if (Bytes % 1024 == 0)
    return std::to_string(Bytes / 1024) + " KiB";
  return std::to_string(Bytes) + " bytes";
}

/// Checks one launch; Where is "kernel 'f' launch 'acc'".
void checkLaunch(const LaunchNode &L, const std::string &Where, llvm::StringRef Arch,
                 const ArchLimits &Limits, std::vector<std::string> &Problems) {
  LaunchShape R = launchShape(L);
  for (const std::string &Name : R.NonConstantShared)
    Problems.push_back(Where + " allocates shared buffer '" + Name +
                       "' with a non-constant shape");
  if (R.SharedBytes > Limits.MaxSharedBytes)
    Problems.push_back(Where + " needs " + std::to_string(R.SharedBytes) +
                       " bytes of shared memory; " + Arch.str() + " allows at most " +
                       std::to_string(Limits.MaxSharedBytes) + " (" +
                       kibText(Limits.MaxSharedBytes) + ")");
  static const char *const Axis[3] = {"x", "y", "z"};
  for (unsigned D = 0; D < 3; ++D) {
    if (R.Block[D] > Limits.MaxBlockDim[D])
      Problems.push_back(Where + " has a block of " + std::to_string(R.Block[D]) +
                         " threads along " + Axis[D] + "; at most " +
                         std::to_string(Limits.MaxBlockDim[D]) + " are allowed");
    std::optional<int64_t> Grid = asConstInt(simplifyExpr(R.Grid[D]));
    if (Grid && (*Grid > Limits.MaxGridDim[D] || *Grid < 0))
      Problems.push_back(Where + " has a grid of " + std::to_string(*Grid) +
                         " blocks along " + Axis[D] + "; at most " +
                         std::to_string(Limits.MaxGridDim[D]) + " are allowed");
  }
  if (R.threads() > Limits.MaxThreadsPerBlock)
    Problems.push_back(Where + " needs " + std::to_string(R.threads()) +
                       " threads per block; at most " +
                       std::to_string(Limits.MaxThreadsPerBlock) + " are allowed");
}

} // namespace

std::vector<std::string> tdsl::checkResources(const Module &M, llvm::StringRef Arch) {
  ArchLimits Limits = archLimits(parseCudaArch(Arch));
  std::vector<std::string> Problems;
  for (const Func &F : M.Funcs)
    forEachLaunch(F, [&](const LaunchNode &L, const std::vector<const Buffer *> &) {
      checkLaunch(L, "kernel '" + F.Name + "' launch '" + L.Name + "'", Arch, Limits, Problems);
    });
  return Problems;
}
