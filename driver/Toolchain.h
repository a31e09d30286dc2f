//===- Toolchain.h - What tdslc needs from the world outside: nvcc, paths -===//
//
// Where tdslc's own headers live, finding and running nvcc, reading what
// `ptxas -v` says about each kernel, and make-style depfiles. Kept out of
// the driver so that its pieces are unit-tested on their own.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_DRIVER_TOOLCHAIN_H
#define TDSL_DRIVER_TOOLCHAIN_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace tdsl {

/// The absolute path of the running executable (Argv0 is the fallback).
std::string mainExecutablePath(const char *Argv0);

/// The folder holding tdsl/runtime.h for the tdslc at ExePath: <prefix>/include
/// when it is installed as <prefix>/bin/tdslc, else the source tree's
/// runtime/include (tdslc run from its build folder).
std::string tdslIncludeDir(llvm::StringRef ExePath);

/// nvcc: $CUDACXX, else the first on PATH, else /usr/local/cuda/bin/nvcc.
/// Empty if none exists.
std::string findNvcc();

/// nvcc's flags for --arch: "sm_90a" or "90a" -> -gencode for sm_90a with
/// its PTX. nullopt if Arch is not sm_NN[a|f] / NN[a|f].
std::optional<std::vector<std::string>> nvccArchFlags(llvm::StringRef Arch);

struct ToolRun {
  int Status = -1;    ///< exit status; -1 if it could not be started
  std::string Output; ///< stdout and stderr together
  std::string Error;  ///< why it could not be started
};

/// Runs Program with Args (Args[0] is the program name), capturing output.
ToolRun runTool(llvm::StringRef Program, llvm::ArrayRef<std::string> Args);

/// What ptxas reports for one kernel; a field it did not print stays 0.
struct KernelResources {
  std::string Name; ///< demangled: "gemm_bias_relu_kernel0" or "f(float*)"
  std::string MangledName;
  unsigned Registers = 0, Barriers = 0;
  uint64_t StaticSharedBytes = 0, StackBytes = 0, SpillStoreBytes = 0, SpillLoadBytes = 0;
};

/// Parses `ptxas -v` output (tolerant of the field order and of the
/// fields CUDA 11 to 13 print), one entry per entry function, in order.
std::vector<KernelResources> parsePtxasVerbose(llvm::StringRef Text);

/// Writes "Target: Deps..." in make syntax (spaces, '#', '$' escaped).
/// Returns an error message, empty on success.
std::string writeDepfile(llvm::StringRef Path, llvm::StringRef Target,
                         llvm::ArrayRef<std::string> Deps);

} // namespace tdsl

#endif // TDSL_DRIVER_TOOLCHAIN_H
