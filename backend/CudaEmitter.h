//===- CudaEmitter.h - Loop IR to CUDA C++ kernels, launchers and header --===//
//
// The backend: after the pipeline, each `launch` of a Func becomes one
// __global__ kernel template on its index type, tdsl_<func>_<launch><Index>
// (tdsl_ is the default --symbol-prefix, which every external name takes),
// sized by ir/Launch.h's analysis (a contraction launch versioned on sizes
// and alignment, launchVersion, becomes two: the second,
// tdsl_<func>_<launch>_general, holds the else branch, and the launcher
// tests the condition); anything else at the host level, or a
// statement no backend path writes yet (`call`), is an internal error,
// never silently dropped. The host launcher tdsl_<func>() checks sizes,
// pointers and grid limits, picks 32-bit indexing when every tensor and
// every launch has fewer than 2^31 elements (threads), launches in order on
// the caller's stream and never synchronizes, exits or prints. Global
// allocs are allocated by tdsl_<func>() on the stream just before their
// first launch (cudaMallocAsync / cudaFreeAsync after their last: growing
// the memory pool overlaps the launches already queued), or are slices of
// the caller's workspace in tdsl_<func>_with_workspace(), whose size
// tdsl_<func>_workspace_size() reports (CUDA graphs and caching allocators
// want no allocation inside). The kernels
// compute exactly what ir/Interpreter.cpp computes (math library rounding
// aside): integer division by zero gives 0, float to int rounds to nearest
// even and saturates, f16/bf16 convert with one rounding, fminf/fmaxf.
//
// Output is deterministic: the same IR and options give the same bytes.
//
// Tests: test/backend/*.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_BACKEND_CUDAEMITTER_H
#define TDSL_BACKEND_CUDAEMITTER_H

#include "ir/IR.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace tdsl {

struct CudaEmitOptions {
  std::string Version;     ///< tdslc's version, for the banner
  std::string InputName;   ///< the .tdsl file's basename (never a path)
  std::string CommandLine; ///< the normalized command line, for the banner
  std::string Arch = "sm_90";
  /// The .tdsl source, one entry per line (line L is SourceLines[L - 1]);
  /// statements carrying line L get a "// line L: <text>" comment.
  std::vector<std::string> SourceLines;
  /// The header's include-guard stem; derived from InputName if empty.
  std::string GuardName;
  /// Paste tdsl/runtime.h and tdsl/device.cuh into the .cu instead of
  /// including them: one file that nvcc compiles with no -I.
  bool SelfContained = false;
  /// Starts every external symbol of the .cu (launchers, queries, kernels),
  /// so that two libraries may both define a kernel of the same name.
  std::string SymbolPrefix = "tdsl_";
};

/// Writes the .cu for M. Returns an empty string, or a message (nothing
/// usable was written then): two kernels whose symbols collide, a user
/// error; or IR the backend cannot write, a compiler bug, which sets
/// *Internal when given (no pass may produce such IR).
std::string emitCuda(const ir::Module &M, const CudaEmitOptions &Opts, llvm::raw_ostream &OS,
                     bool *Internal = nullptr);

/// Writes the C header (valid C11 and C++) declaring each Func's launcher
/// and launch-info query.
void emitHeader(const ir::Module &M, const CudaEmitOptions &Opts, llvm::raw_ostream &OS);

/// Whether Prefix may start the emitted symbols (CudaEmitOptions::SymbolPrefix):
/// the start of a C identifier, and not of one the implementation reserves.
bool isValidSymbolPrefix(llvm::StringRef Prefix);

/// "sm_90" -> 90; 0 if Arch is not an architecture tdslc targets (sm_75
/// and newer).
unsigned parseCudaArch(llvm::StringRef Arch);

} // namespace tdsl

#endif // TDSL_BACKEND_CUDAEMITTER_H
