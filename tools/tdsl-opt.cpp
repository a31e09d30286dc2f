//===- tdsl-opt.cpp - Reads loop IR text, runs named passes, prints it ----===//
//
// How lit tests reach one pass in isolation:
//
//   tdsl-opt in.tir --passes=simplify | FileCheck in.tir
//
// The passes run through the pass manager (passes/PassManager.h), so the
// options around them are tdslc's: --verify-each (on by default),
// --print-ir-after[-all|-change], --dump-dir, --time-passes. Remarks
// (--remarks) have no .tdsl source to point at here: they name the .tdsl
// line the IR carries ("remark: PASS: line N: ...").
//
// Exit status: 0 on success, 1 for a user error (unreadable or invalid input
// IR, unknown pass), 2 when a pass produced IR the verifier rejects (a
// compiler bug, reported as an internal error naming the pass).
//
//===----------------------------------------------------------------------===//
#include "backend/CudaEmitter.h"
#include "backend/ResourceCheck.h"
#include "ir/IRParser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Pass.h"
#include "passes/PassManager.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace tdsl;

static cl::OptionCategory OptCategory("tdsl-opt options");

static cl::opt<std::string> InputFile(cl::Positional, cl::desc("<input IR file, '-' for stdin>"),
                                      cl::init("-"), cl::cat(OptCategory));
static cl::list<std::string> PassNames("passes", cl::desc("Passes to run, in order"),
                                       cl::value_desc("pass1,pass2,..."), cl::CommaSeparated,
                                       cl::cat(OptCategory));
static cl::opt<std::string> OutputFile("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(OptCategory));

static cl::opt<std::string> CheckResourcesArch(
    "check-resources",
    cl::desc("After the passes, check every launch against the arch's limits "
             "(shared memory, threads per block, grid), as tdslc does before emitting"),
    cl::value_desc("sm_XY"), cl::cat(OptCategory));

static cl::opt<bool> EmitCuda(
    "emit-cuda",
    cl::desc("After the passes, print the CUDA the backend writes (kernels and launchers, for "
             "nvcc with tdsl/runtime.h and tdsl/device.cuh) instead of the IR"),
    cl::init(false), cl::cat(OptCategory));

static cl::opt<bool> Remarks("remarks",
                             cl::desc("Print a remark where a pass declines a nest, and why"),
                             cl::init(false), cl::cat(OptCategory));
static cl::list<std::string>
    ScheduleKnobs("schedule", cl::desc("Pin a schedule knob in every function (KEY=VALUE; "
                                       "overrides the IR's schedule(...))"),
                  cl::value_desc("key=value"), cl::cat(OptCategory));

static constexpr int ExitUserError = 1;
static constexpr int ExitInternalError = 2;

static void printError(const Twine &Msg) {
  WithColor::error(errs(), "tdsl-opt") << Msg << "\n";
}

int main(int argc, char **argv) {
  InitLLVM Init(argc, argv);
  registerPassManagerOptions(OptCategory);
  cl::HideUnrelatedOptions(OptCategory);
  cl::SetVersionPrinter([](raw_ostream &OS) { OS << "tdsl-opt version 0.1.0\n"; });
  cl::ParseCommandLineOptions(argc, argv,
                              "tdsl-opt: reads loop IR text, runs passes, prints the IR (or its CUDA)\n");

  if (Remarks)
    setRemarkHandler([](const Remark &R) {
      errs() << "remark: " << R.Pass << ": ";
      if (R.Line)
        errs() << "line " << R.Line << ": ";
      errs() << R.Message << "\n";
    });
  std::vector<ir::Knob> Knobs;
  for (const std::string &Text : ScheduleKnobs) {
    std::string Error;
    std::optional<ir::Knob> K = parseKnob(Text, Error);
    if (!K) {
      printError("--schedule: " + Error);
      return ExitUserError;
    }
    Knobs.push_back(*K);
  }

  // Check every pass name before doing any work.
  std::vector<std::string> Passes;
  for (const std::string &Name : PassNames) {
    if (Name.empty()) // "--passes=" and "a,,b" name no pass
      continue;
    const PassInfo *P = findPass(Name);
    if (!P) {
      std::string Known;
      for (const PassInfo &K : allPasses())
        Known += (Known.empty() ? "" : ", ") + std::string(K.Name);
      printError("unknown pass '" + Name + "'; known passes: " + Known);
      return ExitUserError;
    }
    Passes.push_back(Name);
  }
  if (std::string Problem = PassManager::checkOptions(passManagerOptions(), "");
      !Problem.empty()) {
    printError(Problem);
    return ExitUserError;
  }

  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFileOrSTDIN(InputFile);
  if (!Buf) {
    printError("cannot read '" + InputFile + "': " + Buf.getError().message());
    return ExitUserError;
  }
  SourceMgr SM;
  installDiagnosticPrinter(SM);
  unsigned BufferID = SM.AddNewSourceBuffer(std::move(*Buf), SMLoc());
  DiagEngine Diags(SM);
  std::optional<ir::Module> M = ir::parseIRModule(SM, BufferID, Diags);
  if (!M)
    return ExitUserError;

  StringRef DisplayName = InputFile == "-" ? StringRef("<stdin>") : StringRef(InputFile);
  std::vector<std::string> Problems = ir::verifyModule(*M);
  if (!Problems.empty()) {
    for (const std::string &P : Problems)
      WithColor::error(errs(), DisplayName) << "invalid IR: " << P << "\n";
    return ExitUserError;
  }

  bool BadSchedule = false;
  for (ir::Func &F : M->Funcs) {
    llvm::append_range(F.Schedule, Knobs);
    for (const ScheduleProblem &P : checkSchedule(F)) {
      WithColor::error(errs(), DisplayName)
          << "function '" << F.Name << "': schedule key '" << P.Key << "'"
          << (P.Line ? " (line " + std::to_string(P.Line) + ")" : std::string(" (--schedule)"))
          << ": " << P.Message << "\n";
      BadSchedule = true;
    }
  }
  if (BadSchedule)
    return ExitUserError;

  PassManager PM(Passes, passManagerOptions(), "tdsl-opt");
  switch (PM.run(*M, /*InitialStage=*/"")) {
  case PassManagerStatus::Ok: break;
  case PassManagerStatus::UserError: return ExitUserError;
  case PassManagerStatus::InternalError: return ExitInternalError;
  }

  if (!CheckResourcesArch.empty()) {
    if (!parseCudaArch(CheckResourcesArch)) {
      printError("unsupported architecture '" + CheckResourcesArch + "' in --check-resources");
      return ExitUserError;
    }
    Problems = checkResources(*M, CheckResourcesArch);
    for (const std::string &P : Problems)
      printError(P);
    if (!Problems.empty())
      return ExitUserError;
  }

  std::error_code EC;
  ToolOutputFile Out(OutputFile, EC, sys::fs::OF_None);
  if (EC) {
    printError("cannot write '" + OutputFile + "': " + EC.message());
    return ExitUserError;
  }
  if (EmitCuda) {
    // A backend refusal of verified IR is the compiler's fault, as in tdslc.
    bool Internal = false;
    std::string Problem = emitCuda(*M, CudaEmitOptions(), Out.os(), &Internal);
    if (!Problem.empty()) {
      printError(Problem);
      return Internal ? ExitInternalError : ExitUserError;
    }
  } else {
    ir::printModule(*M, Out.os());
  }
  Out.keep();
  return 0;
}
