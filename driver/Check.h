//===- Check.h - tdslc --check: every kernel, every stage, vs the reference ===//
//
// Runs each kernel of a checked module through the interpreter at every
// stage of the pipeline (the naive lowering, then after each pass), on
// seeded random inputs, and compares each stage's outputs with the AST
// reference evaluator within the dtype tolerances of shared/TARGETS.md.
// At each stage the IR is also verified and must survive print -> parse ->
// print unchanged. The stages come from the pass manager's per-stage hook
// (passes/PassManager.h); a stage the pass left unchanged is not
// interpreted again.
//
// --dump-io writes the same inputs, reference outputs and tolerance to
// files for the GPU suite (test/gpu/gpu_check.py).
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_DRIVER_CHECK_H
#define TDSL_DRIVER_CHECK_H

#include "frontend/AST.h"
#include "ir/IR.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tdsl {

struct CheckOptions {
  std::map<std::string, int64_t> Sizes; ///< named sizes
  std::optional<int64_t> DefaultSize;   ///< for every symbol not named
  uint64_t Seed = 1;
  /// Small integers in [-4, 4] for every input, so fp32 results are exact.
  bool ExactInputs = false;
  /// Every stage's outputs must equal the naive stage's bit for bit (NaN
  /// matches NaN), on top of the tolerance against the reference. Sound
  /// when every value the kernel computes is a small integer (exact inputs,
  /// no division or transcendental functions): then no reordering a pass
  /// may do changes a bit. tdsl-smith sets it for such programs.
  bool StagesBitExact = false;
  std::vector<std::string> Pipeline; ///< pass names, in order
  /// The knobs the fusion stage (graph/Fuse.h) plans by: Knobs, and fuse =
  /// off where it does not run.
  std::vector<ir::Knob> FusionKnobs;
  std::vector<ir::Knob> Knobs;       ///< schedule knobs over each kernel's own
  /// Maps AST locations to .tdsl lines (IR provenance).
  std::function<unsigned(llvm::SMLoc)> LineOf = [](llvm::SMLoc) { return 0u; };
};

/// Parses "M=33,N=17,K=9", "7" or "7,M=1" into Opts. Returns an error
/// message, or the empty string.
std::string parseSizes(llvm::StringRef Text, CheckOptions &Opts);

/// An error message if Opts names a size that no kernel of M has, else
/// the empty string.
std::string unusedSizes(const ast::Module &M, const CheckOptions &Opts);

/// Prints one line per kernel and stage to OS, and each failing one and
/// then the count to Failures if given; returns true only if every stage
/// of every kernel matched the reference.
bool runCheck(const ast::Module &M, const CheckOptions &Opts, llvm::raw_ostream &OS,
              llvm::raw_ostream &Err, llvm::raw_ostream *Failures = nullptr);

/// tdslc --dump-io=Dir: for every kernel, writes Dir/<kernel>/<tensor>.bin
/// for each input (the values --check feeds it) and each output (as the
/// reference evaluator computes it), raw little-endian in the tensor's
/// dtype encoding, and Dir/<kernel>/meta.json (sizes in launcher order,
/// params, tolerance): what a GPU harness compares a launcher against.
/// Returns false after reporting to Err.
bool dumpIO(const ast::Module &M, const CheckOptions &Opts, llvm::StringRef Dir,
            llvm::raw_ostream &Err);

/// The tolerance for values of type T (0 for integers).
double dtypeTolerance(DType T);

} // namespace tdsl

#endif // TDSL_DRIVER_CHECK_H
