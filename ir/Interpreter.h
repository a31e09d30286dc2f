//===- Interpreter.h - Runs loop IR on the CPU, GPU-bound loops included --===//
//
// The oracle for CI, which has no GPU. It executes any stage of the loop IR
// with CUDA's numeric semantics (f16/bf16 stored in their formats, f32
// arithmetic done in f32, integers wrapping at their width), runs each block's
// threads in lockstep with barriers as sync points, keeps shared memory per
// block and registers per thread, and reports out-of-bounds accesses and
// shared-memory races between two barriers as errors.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_INTERPRETER_H
#define TDSL_IR_INTERPRETER_H

#include "ir/IR.h"

#include <cstdint>
#include <map>
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
  /// Stop after this many executed statements (a hang guard); 0: no limit.
  uint64_t MaxSteps = 0;
};

struct InterpResult {
  bool Ok = true;
  /// The first error, e.g. "out-of-bounds store to C[3, 17] (shape [3, 17])
  /// in block (0, 0, 0) thread (5, 0, 0)" or "shared-memory race on S[2, 1]:
  /// written by thread (1, 0, 0), read by thread (2, 0, 0) with no barrier
  /// between".
  std::string Error;
};

/// Runs F. Sizes binds every size symbol of F. Args maps every parameter
/// name (inputs and outputs; rank-0 parameters are scalars with one value)
/// to its data; shapes must match F's parameter shapes under Sizes. Outputs
/// are written in place. Intermediates in global memory are allocated and
/// freed by the interpreter.
InterpResult interpret(const Func &F, const std::map<std::string, int64_t> &Sizes,
                       std::map<std::string, TensorData> &Args,
                       const InterpOptions &Opts = {});

} // namespace tdsl::ir

#endif // TDSL_IR_INTERPRETER_H
