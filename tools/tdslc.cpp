//===- tdslc.cpp - The tdslc driver: a .tdsl file in, one stage's text out ===//
//
//   tdslc FILE --emit=ast                the checked syntax tree
//   tdslc FILE --emit=ir [-O0..3]        the loop IR after the pipeline
//   tdslc FILE --check --sizes M=33,...  every kernel, every stage, vs the
//                                        reference evaluator
//   tdslc --list-passes                  the pipeline, in order
//
// Exit status: 0 on success, 1 on a user error or a failed check.
//
//===----------------------------------------------------------------------===//
#include "frontend/Frontend.h"
#include "frontend/Lower.h"
#include "ir/Diagnostics.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Pass.h"
#include "tools/Check.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace llvm;
using namespace tdsl;

namespace {

// Linking LLVM registers hundreds of options; --help shows only these.
cl::OptionCategory TdslcCategory("tdslc options");

cl::opt<std::string> InputFilename(cl::Positional,
                                   cl::desc("<input .tdsl file, or - for stdin>"),
                                   cl::cat(TdslcCategory));

cl::opt<std::string> OutputFilename("o", cl::desc("Output file (default: stdout)"),
                                    cl::value_desc("file"), cl::init("-"),
                                    cl::cat(TdslcCategory));

/// The stage whose text tdslc writes.
enum class EmitKind { AST, IR };

cl::opt<EmitKind> Emit(
    "emit", cl::desc("What to write"), cl::init(EmitKind::IR),
    cl::values(clEnumValN(EmitKind::AST, "ast", "The checked syntax tree"),
               clEnumValN(EmitKind::IR, "ir", "The loop IR after the pass pipeline")),
    cl::cat(TdslcCategory));

cl::opt<unsigned> OptLevel("O", cl::desc("Optimization level: 0 (naive) to 3"),
                           cl::Prefix, cl::init(2), cl::cat(TdslcCategory));

cl::opt<bool> ListPasses("list-passes", cl::desc("Print the pass pipeline and exit"),
                         cl::cat(TdslcCategory));

cl::opt<bool> Check("check",
                    cl::desc("Run every kernel at every pipeline stage in the interpreter "
                             "and compare with the reference evaluator"),
                    cl::cat(TdslcCategory));

cl::opt<std::string> Sizes("sizes",
                           cl::desc("Sizes for --check: M=33,N=17 or 7 (all) or 3,K=64"),
                           cl::value_desc("list"), cl::cat(TdslcCategory));

cl::opt<uint64_t> Seed("seed", cl::desc("Seed of the random inputs for --check"),
                       cl::init(1), cl::cat(TdslcCategory));

cl::opt<bool> ExactInputs("exact-inputs",
                          cl::desc("--check with small-integer inputs in [-4, 4] "
                                   "(fp32 accumulations become exact)"),
                          cl::cat(TdslcCategory));

constexpr const char *Version = "0.1.0";

/// Writes through Print to -o (stdout by default); the file is kept only if
/// the whole output was produced.
int writeOutput(const std::function<void(raw_ostream &)> &Print) {
  std::error_code EC;
  ToolOutputFile Out(OutputFilename, EC, sys::fs::OF_Text);
  if (EC) {
    errs() << "tdslc: error: cannot open '" << OutputFilename
           << "' for writing: " << EC.message() << "\n";
    return 1;
  }
  Print(Out.os());
  Out.os().flush();
  if (Out.os().has_error()) {
    errs() << "tdslc: error: cannot write '" << OutputFilename
           << "': " << Out.os().error().message() << "\n";
    Out.os().clear_error();
    return 1;
  }
  Out.keep();
  return 0;
}

/// Lowers and runs the pipeline, verifying after every pass: a verifier
/// failure there is a compiler bug, never the user's.
ir::Module compileToIR(const ast::Module &M, const std::vector<std::string> &Pipeline,
                       DiagEngine &Diags) {
  ir::Module IR = lowerModule(M, [&](SMLoc L) { return Diags.lineOf(L); });
  auto Verify = [&](const char *After) {
    std::vector<std::string> Problems = ir::verifyModule(IR);
    if (!Problems.empty())
      TDSL_UNREACHABLE(Twine("invalid IR after ") + After + ": " + Problems.front());
  };
  Verify("lowering");
  for (const std::string &Name : Pipeline) {
    const PassInfo *P = findPass(Name);
    for (ir::Func &F : IR.Funcs)
      P->Run(F);
    Verify(P->Name);
  }
  return IR;
}

} // namespace

int main(int Argc, char **Argv) {
  InitLLVM Init(Argc, Argv);
  cl::HideUnrelatedOptions(TdslcCategory);
  cl::SetVersionPrinter([](raw_ostream &OS) { OS << "tdslc version " << Version << "\n"; });
  cl::ParseCommandLineOptions(Argc, Argv,
                              "tdslc: compiles .tdsl tensor kernels to CUDA C++\n");

  if (OptLevel > 3) {
    errs() << "tdslc: error: invalid optimization level -O" << OptLevel
           << " (expected 0 to 3)\n";
    return 1;
  }
  std::vector<std::string> Pipeline = defaultPipeline(static_cast<int>(OptLevel));
  if (ListPasses) {
    for (const PassInfo &P : allPasses())
      outs() << format("%-16s", P.Name) << P.Summary << "\n";
    return 0;
  }
  if (InputFilename.empty()) {
    errs() << "tdslc: error: no input file (try --help)\n";
    return 1;
  }

  CheckOptions CheckOpts;
  if (Check) {
    if (Sizes.empty()) {
      errs() << "tdslc: error: --check needs --sizes (for example --sizes M=33,N=17,K=9)\n";
      return 1;
    }
    std::string Problem = parseSizes(Sizes, CheckOpts);
    if (!Problem.empty()) {
      errs() << "tdslc: error: " << Problem << "\n";
      return 1;
    }
  } else if (Sizes.getNumOccurrences() || Seed.getNumOccurrences() ||
             ExactInputs.getNumOccurrences()) {
    errs() << "tdslc: error: --sizes, --seed and --exact-inputs only apply to --check\n";
    return 1;
  }

  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer =
      MemoryBuffer::getFileOrSTDIN(InputFilename, /*IsText=*/true);
  if (std::error_code EC = Buffer.getError()) {
    errs() << "tdslc: error: cannot open '" << InputFilename << "': " << EC.message()
           << "\n";
    return 1;
  }

  SourceMgr SM;
  installDiagnosticPrinter(SM);
  unsigned BufferID = SM.AddNewSourceBuffer(std::move(*Buffer), SMLoc());
  DiagEngine Diags(SM);
  std::unique_ptr<ast::Module> M = parseAndCheck(SM, BufferID, Diags);
  if (!M)
    return 1;

  if (Check) {
    CheckOpts.Seed = Seed;
    CheckOpts.ExactInputs = ExactInputs;
    CheckOpts.Pipeline = Pipeline;
    CheckOpts.LineOf = [&](SMLoc L) { return Diags.lineOf(L); };
    bool Ok = true;
    int Rc = writeOutput([&](raw_ostream &OS) { Ok = runCheck(*M, CheckOpts, OS, errs()); });
    return Rc ? Rc : (Ok ? 0 : 1);
  }

  switch (Emit) {
  case EmitKind::AST:
    return writeOutput([&](raw_ostream &OS) { printAST(*M, OS); });
  case EmitKind::IR: {
    ir::Module IR = compileToIR(*M, Pipeline, Diags);
    return writeOutput([&](raw_ostream &OS) { ir::printModule(IR, OS); });
  }
  }
  return 1;
}
