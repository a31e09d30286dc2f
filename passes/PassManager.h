//===- PassManager.h - Runs a list of passes over a module, with tooling --===//
//
// The one loop over a pipeline: tdslc, tdsl-opt and --check (through
// driver/Check, which tdsl-smith also uses) hand it the passes and it runs
// each over every function, with what a pass author wants around it:
//
//   --verify-each            the verifier after each pass; a pass that
//                            produces invalid IR is a compiler bug, reported
//                            as that pass's internal error
//   --print-ir-after=PASS    the IR on stderr after PASS (repeatable)
//   --print-ir-after-all     ... after every stage
//   --print-ir-after-change  ... after the stages that changed it; the
//                            others print "(unchanged)" only
//   --dump-dir=DIR           the IR after each stage in DIR/NN-<stage>.tir,
//                            NN the number of passes run before it
//   --time-passes            wall-clock time per pass, on stderr
//
// and a per-stage hook (what --check interprets). Passes keep node pointers
// when they change nothing, so "unchanged" is a pointer comparison.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_PASSMANAGER_H
#define TDSL_PASSES_PASSMANAGER_H

#include "ir/IR.h"
#include "passes/Pass.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <vector>

namespace tdsl {

struct PassManagerOptions {
  bool VerifyEach = false;
  std::vector<std::string> PrintAfter; ///< stage names
  bool PrintAfterAll = false;
  bool PrintAfterChange = false;
  std::string DumpDir; ///< empty: no dump
  bool TimePasses = false;
};

/// Registers the options above (--verify-each default on) in Category, for
/// a tool's main; the tool reads them back with passManagerOptions().
void registerPassManagerOptions(llvm::cl::OptionCategory &Category);
/// The options registered above as the command line set them.
PassManagerOptions passManagerOptions();

/// How a run ended. A user error is one the tool could not avoid (the dump
/// folder cannot be written); an internal error is a pass's bug.
enum class PassManagerStatus { Ok, UserError, InternalError };

class PassManager {
public:
  /// Called after the initial stage and after each pass with the stage's
  /// name, the module, and whether the stage changed it (the initial stage
  /// counts as a change).
  using StageHook = std::function<void(llvm::StringRef Stage, const ir::Module &M, bool Changed)>;

  /// Passes are names of registered passes (the caller checked them);
  /// Tool prefixes the messages ("tdslc").
  PassManager(const std::vector<std::string> &Passes, PassManagerOptions Opts,
              llvm::StringRef Tool);
  /// Passes outside the registry too: how a unit test runs a pass that
  /// breaks the IR on purpose.
  PassManager(std::vector<const PassInfo *> Passes, PassManagerOptions Opts, llvm::StringRef Tool)
      : Passes(std::move(Passes)), Opts(std::move(Opts)), Tool(Tool.str()) {}

  /// Names not known as a stage in Opts (a pass, or InitialStage): the
  /// user's error; the empty string when all are known.
  static std::string checkOptions(const PassManagerOptions &Opts, llvm::StringRef InitialStage);

  void setStageHook(StageHook Hook) { this->Hook = std::move(Hook); }

  /// Runs the passes, in order, over every function of M. InitialStage
  /// names M as given (tdslc's "lower", --check's "naive"): it is
  /// verified, printed, dumped and hooked like a pass's result; empty for
  /// none (tdsl-opt). Problems are reported to Err.
  PassManagerStatus run(ir::Module &M, llvm::StringRef InitialStage,
                        llvm::raw_ostream &Err = llvm::errs());

private:
  std::vector<const PassInfo *> Passes;
  PassManagerOptions Opts;
  std::string Tool; ///< the program's name, for its messages
  StageHook Hook;

  /// Verifies, prints, dumps and hooks one stage's result.
  PassManagerStatus finishStage(const ir::Module &M, llvm::StringRef Stage, unsigned Index,
                                bool Changed, llvm::raw_ostream &Err);
};

} // namespace tdsl

#endif // TDSL_PASSES_PASSMANAGER_H
