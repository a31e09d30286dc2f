//===- PassManager.cpp - Runs a list of passes over a module, with tooling ===//
#include "passes/PassManager.h"

#include "ir/Diagnostics.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <memory>

namespace tdsl {

using namespace llvm;

namespace {

/// The options as the command line spells them. Created by
/// registerPassManagerOptions only, so that a program that links the pass
/// manager without offering its options (tdsl-smith) does not grow them.
struct CommandLineOptions {
  explicit CommandLineOptions(cl::OptionCategory &Cat)
      : VerifyEach("verify-each",
                   cl::desc("Verify the IR after each pass (default on; a pass producing "
                            "invalid IR is an internal error)"),
                   cl::init(true), cl::cat(Cat)),
        PrintAfter("print-ir-after",
                   cl::desc("Print the IR to stderr after the named pass (repeatable)"),
                   cl::value_desc("pass"), cl::CommaSeparated, cl::cat(Cat)),
        PrintAfterAll("print-ir-after-all", cl::desc("Print the IR to stderr after every stage"),
                      cl::cat(Cat)),
        PrintAfterChange("print-ir-after-change",
                         cl::desc("Print the IR to stderr after every stage that changed "
                                  "it; the others print '(unchanged)'"),
                         cl::cat(Cat)),
        DumpDir("dump-dir",
                cl::desc("Write the IR after each stage to DIR/NN-<stage>.tir (NN: passes "
                         "run before it)"),
                cl::value_desc("dir"), cl::cat(Cat)),
        TimePasses("time-passes", cl::desc("Print the wall-clock time of each pass to stderr"),
                   cl::cat(Cat)) {}

  cl::opt<bool> VerifyEach;
  cl::list<std::string> PrintAfter;
  cl::opt<bool> PrintAfterAll;
  cl::opt<bool> PrintAfterChange;
  cl::opt<std::string> DumpDir;
  cl::opt<bool> TimePasses;
};

std::unique_ptr<CommandLineOptions> &commandLineOptions() {
  static std::unique_ptr<CommandLineOptions> Options;
  return Options;
}

/// What a stage is compared with to tell whether it changed the module:
/// the pointers a pass replaces when it rewrites something, and the
/// schedule, to which passes only append the knobs they chose.
struct Snapshot {
  struct FuncState {
    ir::Stmt Body;
    std::vector<ir::Buffer> Params;
    size_t ScheduleSize;
  };
  std::vector<FuncState> Funcs;

  explicit Snapshot(const ir::Module &M) {
    for (const ir::Func &F : M.Funcs)
      Funcs.push_back({F.Body, F.Params, F.Schedule.size()});
  }

  static bool sameBuffer(const ir::Buffer &A, const ir::Buffer &B) {
    return A.Name == B.Name && A.Type == B.Type && A.Shape == B.Shape && A.Scope == B.Scope &&
           A.Role == B.Role && A.Padding == B.Padding && A.ExtentNames == B.ExtentNames &&
           A.Swz == B.Swz;
  }

  bool matches(const ir::Module &M) const {
    if (M.Funcs.size() != Funcs.size())
      return false;
    for (size_t I = 0; I < Funcs.size(); ++I) {
      const ir::Func &F = M.Funcs[I];
      const FuncState &S = Funcs[I];
      if (F.Body != S.Body || F.Schedule.size() != S.ScheduleSize ||
          F.Params.size() != S.Params.size())
        return false;
      for (size_t P = 0; P < S.Params.size(); ++P)
        if (!sameBuffer(F.Params[P], S.Params[P]))
          return false;
    }
    return true;
  }
};

} // namespace

void registerPassManagerOptions(cl::OptionCategory &Category) {
  if (!commandLineOptions())
    commandLineOptions() = std::make_unique<CommandLineOptions>(Category);
}

PassManagerOptions passManagerOptions() {
  PassManagerOptions Opts;
  const std::unique_ptr<CommandLineOptions> &CL = commandLineOptions();
  if (!CL)
    return Opts;
  Opts.VerifyEach = CL->VerifyEach;
  Opts.PrintAfter.assign(CL->PrintAfter.begin(), CL->PrintAfter.end());
  Opts.PrintAfterAll = CL->PrintAfterAll;
  Opts.PrintAfterChange = CL->PrintAfterChange;
  Opts.DumpDir = CL->DumpDir;
  Opts.TimePasses = CL->TimePasses;
  return Opts;
}

PassManager::PassManager(const std::vector<std::string> &Names, PassManagerOptions Opts,
                         StringRef Tool)
    : Opts(std::move(Opts)), Tool(Tool.str()) {
  for (const std::string &Name : Names) {
    const PassInfo *P = findPass(Name);
    if (!P)
      TDSL_UNREACHABLE("pass manager given unknown pass '" + Name + "'");
    Passes.push_back(P);
  }
}

std::string PassManager::checkOptions(const PassManagerOptions &Opts, StringRef InitialStage) {
  for (const std::string &Name : Opts.PrintAfter)
    if (!findPass(Name) && Name != InitialStage)
      return "unknown pass '" + Name + "' in --print-ir-after (see --list-passes" +
             (InitialStage.empty() ? std::string(")")
                                   : "; '" + InitialStage.str() + "' is the IR before any pass)");
  return "";
}

PassManagerStatus PassManager::finishStage(const ir::Module &M, StringRef Stage, unsigned Index,
                                           bool Changed, raw_ostream &Err) {
  if (Opts.VerifyEach) {
    std::vector<std::string> Problems = ir::verifyModule(M);
    if (!Problems.empty()) {
      WithColor::error(Err, Tool) << "internal error: " << (Index ? "pass '" : "stage '") << Stage
                                  << "' produced invalid IR (a compiler bug; please report "
                                     "it with the input):\n";
      for (const std::string &P : Problems)
        Err << "  " << P << "\n";
      return PassManagerStatus::InternalError;
    }
  }

  bool Named = llvm::is_contained(Opts.PrintAfter, Stage);
  if (Opts.PrintAfterAll || Named || (Opts.PrintAfterChange && Changed)) {
    Err << "// -----// IR Dump After " << Stage << " //----- //\n";
    ir::printModule(M, Err);
  } else if (Opts.PrintAfterChange) {
    Err << "// -----// IR Dump After " << Stage << " (unchanged) //----- //\n";
  }

  if (!Opts.DumpDir.empty()) {
    SmallString<256> Path(Opts.DumpDir);
    sys::path::append(Path, formatv("{0:2}-{1}.tir", Index, Stage).str());
    std::error_code EC;
    raw_fd_ostream OS(Path, EC, sys::fs::OF_Text);
    if (!EC)
      ir::printModule(M, OS);
    if (EC || OS.has_error()) {
      // The folder was the user's to give: their error, not the pass's.
      WithColor::error(Err, Tool) << "cannot write '" << Path << "'\n";
      OS.clear_error();
      return PassManagerStatus::UserError;
    }
  }

  if (Hook)
    Hook(Stage, M, Changed);
  return PassManagerStatus::Ok;
}

PassManagerStatus PassManager::run(ir::Module &M, StringRef InitialStage, raw_ostream &Err) {
  if (!Opts.DumpDir.empty())
    if (std::error_code EC = sys::fs::create_directories(Opts.DumpDir)) {
      WithColor::error(Err, Tool) << "cannot create '" << Opts.DumpDir << "': " << EC.message()
                                  << "\n";
      return PassManagerStatus::UserError;
    }
  if (!InitialStage.empty())
    if (PassManagerStatus S = finishStage(M, InitialStage, 0, /*Changed=*/true, Err);
        S != PassManagerStatus::Ok)
      return S;

  using Clock = std::chrono::steady_clock;
  std::vector<double> Seconds;
  unsigned Index = 0;
  for (const PassInfo *P : Passes) {
    Snapshot Before(M);
    Clock::time_point Start = Clock::now();
    for (ir::Func &F : M.Funcs)
      P->Run(F);
    Seconds.push_back(std::chrono::duration<double>(Clock::now() - Start).count());
    if (PassManagerStatus S = finishStage(M, P->Name, ++Index, !Before.matches(M), Err);
        S != PassManagerStatus::Ok)
      return S;
  }

  if (Opts.TimePasses) {
    double Total = 0;
    for (double S : Seconds)
      Total += S;
    Err << "===-------------------------------------------------------------------------===\n"
        << "                       Pass execution time (wall clock)\n"
        << "===-------------------------------------------------------------------------===\n"
        << "  Time (ms)   Share  Pass\n";
    auto Row = [&](double S, StringRef Name) {
      double Share = Total > 0 ? 100.0 * S / Total : 0.0;
      Err << format("  %9.3f  %5.1f%%  ", 1000.0 * S, Share) << Name << "\n";
    };
    for (size_t I = 0; I < Passes.size(); ++I)
      Row(Seconds[I], Passes[I]->Name);
    Row(Total, "total");
  }
  return PassManagerStatus::Ok;
}

} // namespace tdsl
