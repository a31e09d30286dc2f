//===- ResourceCheck.h - Does each launch fit the target GPU? -------------===//
//
// Runs on the final loop IR, after the pipeline and before the backend
// writes anything: per launch (named as the kernel is, tdsl_<func>_<launch>),
// what ir/Launch.h's analysis finds: the shared memory of its shared allocs
// (padding and pipeline stages included: they are part of the buffer's
// storage, each alloc rounded up to 16 bytes as the emitter lays them out) against the
// arch's opt-in limit, the threads per block against 1024, each block
// dimension against 1024 x 1024 x 64, and constant grid extents against
// 2^31-1 x 65535 x 65535 (symbolic grids are checked by the launcher at run
// time). A launch that does not fit is a user error naming the kernel and
// the launch; tdslc then emits nothing, never code that fails at launch.
//
// Registers and spills are not known before ptxas: tdslc --emit=report
// reads them from `ptxas -v` (test/backend/no-spills.test).
//
// Tests: test/backend/resource-check.tir, test/unit/ResourceCheckTest.cpp
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_BACKEND_RESOURCECHECK_H
#define TDSL_BACKEND_RESOURCECHECK_H

#include "ir/IR.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tdsl {

/// What one block may use on an architecture.
struct ArchLimits {
  int64_t DefaultSharedBytes = 48 * 1024; ///< without cudaFuncSetAttribute
  int64_t MaxSharedBytes = 48 * 1024;     ///< with the opt-in
  int64_t MaxThreadsPerBlock = 1024;
  int64_t MaxBlockDim[3] = {1024, 1024, 64};
  int64_t MaxGridDim[3] = {2147483647, 65535, 65535};
};

/// The limits of sm_NN (75 and newer; an unknown newer arch gets sm_90's).
ArchLimits archLimits(unsigned Sm);

/// One message per launch that does not fit Arch ("sm_90", "sm_90a"), e.g.
/// "kernel 'k' launch 'C' needs 300000 bytes of shared memory; sm_90 allows at
/// most 232448 (227 KiB)". Empty when everything fits.
std::vector<std::string> checkResources(const ir::Module &M, llvm::StringRef Arch);

} // namespace tdsl

#endif // TDSL_BACKEND_RESOURCECHECK_H
