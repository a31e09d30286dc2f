//===- Interpreter.h - Runs loop IR on the CPU, GPU-bound loops included --===//
//
// The oracle for CI, which has no GPU. It executes any stage of the loop IR
// with CUDA's numeric semantics (f16/bf16 stored in their formats, f32
// arithmetic done in f32, integers wrapping at their width), runs each block's
// threads in lockstep with barriers as sync points, keeps shared memory per
// block and registers per thread, and reports as errors: out-of-bounds
// accesses, shared-memory races between two barriers, conflicting or racing
// global accesses within one launch, reads of elements never written,
// divergent barriers, reads of async-copy destinations before their wait.
//
// Where CUDA leaves a result undefined the interpreter picks one and says
// so: integer division by zero yields 0; a shuffle from a lane number
// outside [0, 32) returns the caller's own value (IR.h), also for shfl_idx.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_INTERPRETER_H
#define TDSL_IR_INTERPRETER_H

#include "ir/IR.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tdsl::ir {

/// A tensor in memory: elements in row-major order, each held as the double
/// its dtype's value converts to (f16 values are exact in a double, as are
/// all integers up to 2^53). Values are always already rounded to Type.
struct TensorData {
  DType Type = DType::F32;
  std::vector<int64_t> Shape;
  std::vector<double> Values;
  int64_t numElements() const;
};

struct InterpOptions {
  /// Detect shared-memory races (read/write or write/write by two threads
  /// of one block with no barrier between them).
  bool CheckRaces = true;
  /// Report reads of elements never written (intermediates, shared and
  /// register buffers, and outputs, which callers poison).
  bool CheckUninitialized = true;
  /// Stop after this many executed statements (a hang guard); 0: no limit.
  /// A statement counts once per block, however many threads run it, and
  /// each loop iteration counts too.
  uint64_t MaxSteps = 0;
  /// Where the tensors passed in start: this many bytes past a 256-byte
  /// boundary, as aligned() sees it. 4 takes the scalar paths meant for
  /// tensors that are not 16-byte aligned (a view into a larger tensor).
  unsigned ParamByteOffset = 0;
  /// CUDA's limit; a launch with larger blocks is an error. 0: no limit.
  uint64_t MaxThreadsPerBlock = 1024;
};

struct InterpResult {
  bool Ok = true;
  /// The first error, e.g. "out-of-bounds store to C[3, 17] (shape [3, 17])
  /// in block (0, 0, 0) thread (5, 0, 0)" or "shared-memory race on S[2, 1]:
  /// written by thread (1, 0, 0) and read by thread (2, 0, 0) of block
  /// (0, 0, 0) with no barrier between".
  std::string Error;
  /// The .tdsl line of the statement that failed (0: none recorded).
  unsigned Line = 0;
  /// Statements executed (see InterpOptions::MaxSteps) and kernels launched
  /// (host-level statements outside kernels count as one-thread launches).
  uint64_t Steps = 0;
  unsigned Launches = 0;
};

/// Runs F. Sizes binds every size symbol of F. Args maps every parameter
/// name (inputs and outputs; rank-0 parameters are scalars with one value)
/// to its data; shapes must match F's parameter shapes under Sizes. Outputs
/// are written in place. Intermediates in global memory are allocated and
/// freed by the interpreter. Errors (out of bounds, races, uninitialized
/// reads, divergent barriers, unsupported intrinsics, the step limit, bad
/// arguments) stop execution and come back in the result; none aborts.
InterpResult interpret(const Func &F, const std::map<std::string, int64_t> &Sizes,
                       std::map<std::string, TensorData> &Args, const InterpOptions &Opts = {});

/// The shape of buffer B (a parameter) when its size symbols take the
/// values of Sizes: how a caller sizes the TensorData it passes. std::nullopt
/// if an extent uses anything but sizes and constants.
std::optional<std::vector<int64_t>> evaluateShape(const Buffer &B,
                                                  const std::map<std::string, int64_t> &Sizes);

} // namespace tdsl::ir

#endif // TDSL_IR_INTERPRETER_H
