//===- tdslc.cpp - The tdslc driver: a .tdsl file in, one stage's text out ===//
//
//   tdslc FILE --emit=ast                the checked syntax tree
//   tdslc FILE --emit=ir [-O0..3]        the loop IR after the pipeline
//   tdslc FILE --check --sizes M=33,...  every kernel, every stage, vs the
//                                        reference evaluator
//   tdslc FILE --dump-io=DIR --sizes ... inputs, reference outputs and
//                                        tolerance as files, per kernel
//   tdslc --list-passes                  the pipeline, in order
//   tdslc --print-include-dir            where tdsl/runtime.h and device.cuh live
//   ... -MD [-MF FILE]                   also a make depfile for -o
//   ... --dump-dir=DIR                   the IR after each pass, DIR/NN-<pass>.tir
//
// Exit status: 0 on success, 1 on a user error or a failed check.
//
//===----------------------------------------------------------------------===//
#include "backend/CudaEmitter.h"
#include "backend/ResourceCheck.h"
#include "frontend/Frontend.h"
#include "frontend/Lower.h"
#include "ir/Diagnostics.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Pass.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"
#include "driver/Check.h"
#include "driver/Report.h"
#include "driver/Toolchain.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
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
enum class EmitKind { AST, IR, Loops, CUDA, Header, Obj, Report };

cl::opt<EmitKind> Emit(
    "emit", cl::desc("What to write"), cl::init(EmitKind::Loops),
    cl::values(clEnumValN(EmitKind::AST, "ast", "The checked syntax tree"),
               clEnumValN(EmitKind::IR, "ir",
                          "The loop IR as lowered: one loop nest per statement, before any pass"),
               clEnumValN(EmitKind::Loops, "loops", "The loop IR after the pass pipeline"),
               clEnumValN(EmitKind::CUDA, "cuda",
                          "CUDA C++ kernels and C launchers (the default for -o *.cu)"),
               clEnumValN(EmitKind::Header, "header", "The C header declaring the launchers"),
               clEnumValN(EmitKind::Obj, "obj",
                          "An object file: the CUDA compiled by nvcc (with --header, the header too)"),
               clEnumValN(EmitKind::Report, "report",
                          "Per kernel: launches, shared memory, registers and spills "
                          "(ptxas -v), FLOPs, bytes and their ratio")),
    cl::cat(TdslcCategory));

cl::opt<std::string> HeaderFilename("header",
                                    cl::desc("With --emit=cuda, also write the C header here"),
                                    cl::value_desc("file"), cl::cat(TdslcCategory));

cl::opt<std::string> Arch("arch",
                          cl::desc("Target GPU: sm_75 and newer (default sm_90), or several "
                                   "(sm_80,sm_90): every launch must fit each"),
                          cl::value_desc("sm_XY[,...]"), cl::init("sm_90"),
                          cl::cat(TdslcCategory));

/// --arch, split at the commas. The emitted CUDA does not depend on the
/// arch (only the checks do), so one .cu serves every arch listed.
SmallVector<StringRef, 4> Archs;

cl::opt<bool> SelfContained("self-contained",
                            cl::desc("Paste tdsl/runtime.h and tdsl/device.cuh into the .cu "
                                     "instead of including them (one file nvcc compiles alone)"),
                            cl::cat(TdslcCategory));

cl::opt<std::string> SymbolPrefix(
    "symbol-prefix",
    cl::desc("Start every external symbol of the .cu and .h with this instead of tdsl_ "
             "(launchers, queries, kernels), so that two libraries may define the same kernel"),
    cl::value_desc("prefix"), cl::init("tdsl_"), cl::cat(TdslcCategory));

/// What to write: --emit when given; CUDA for "-o FILE.cu"; IR otherwise.
EmitKind emitKind() {
  if (!Emit.getNumOccurrences() && StringRef(OutputFilename).endswith(".cu"))
    return EmitKind::CUDA;
  return Emit;
}

cl::opt<unsigned> OptLevel("O", cl::desc("Optimization level: 0 (naive) to 3"),
                           cl::Prefix, cl::init(2), cl::cat(TdslcCategory));

cl::opt<bool> ListPasses("list-passes", cl::desc("Print the pass pipeline and exit"),
                         cl::cat(TdslcCategory));

cl::opt<bool> Check("check",
                    cl::desc("Run every kernel at every pipeline stage in the interpreter "
                             "and compare with the reference evaluator"),
                    cl::cat(TdslcCategory));

cl::opt<std::string> DumpIO("dump-io",
                            cl::desc("Write each kernel's seeded inputs, reference outputs "
                                     "and tolerance to DIR/<kernel>/ (for the GPU suite)"),
                            cl::value_desc("dir"), cl::cat(TdslcCategory));

cl::opt<std::string> Sizes("sizes",
                           cl::desc("Sizes for --check: M=33,N=17 or 7 (all) or 3,K=64"),
                           cl::value_desc("list"), cl::cat(TdslcCategory));

cl::opt<uint64_t> Seed("seed", cl::desc("Seed of the random inputs for --check"),
                       cl::init(1), cl::cat(TdslcCategory));

cl::opt<bool> ExactInputs("exact-inputs",
                          cl::desc("--check with small-integer inputs in [-4, 4] "
                                   "(fp32 accumulations become exact)"),
                          cl::cat(TdslcCategory));

cl::opt<bool> PrintIncludeDir("print-include-dir",
                              cl::desc("Print the folder holding tdsl/runtime.h and "
                                       "tdsl/device.cuh (what the emitted code and "
                                       "launchers include) and exit"),
                              cl::cat(TdslcCategory));

cl::opt<bool> WriteDepfile("MD", cl::desc("Also write a make depfile for the -o file"),
                           cl::cat(TdslcCategory));

cl::opt<std::string> DepfileName("MF", cl::desc("The depfile -MD writes (default: -o's name "
                                                "with .d)"),
                                 cl::value_desc("file"), cl::cat(TdslcCategory));

cl::opt<std::string> PrintIRAfter("print-ir-after",
                                  cl::desc("Print the IR to stderr after the named pass"),
                                  cl::value_desc("pass"), cl::cat(TdslcCategory));

cl::opt<bool> PrintIRAfterAll("print-ir-after-all",
                              cl::desc("Print the IR to stderr after lowering and every pass"),
                              cl::cat(TdslcCategory));

cl::list<std::string> DisabledPasses("disable-pass",
                                     cl::desc("Leave a pass out of the pipeline (repeatable)"),
                                     cl::value_desc("pass"), cl::CommaSeparated,
                                     cl::cat(TdslcCategory));

cl::opt<bool> Remarks("remarks",
                      cl::desc("Print a remark where a pass declines a kernel, and why"),
                      cl::init(false));

cl::list<std::string> ScheduleKnobs(
    "schedule",
    cl::desc("Pin a schedule knob in every kernel, over its schedule block (KEY=VALUE, e.g. "
             "block_tile=[64,64]; repeatable; the keys are in dsl/LANGUAGE.md)"),
    cl::value_desc("key=value"));

/// The --schedule knobs, parsed.
std::vector<ir::Knob> CommandLineKnobs;

cl::opt<std::string> DumpDir("dump-dir",
                             cl::desc("Write the IR after lowering and after each pass to "
                                      "DIR/NN-<pass>.tir"),
                             cl::value_desc("dir"), cl::cat(TdslcCategory));

constexpr const char *Version = "0.1.0";

/// This tdslc's absolute path: a dependency of everything it writes.
std::string ExePath;

/// With -MD, writes the depfile of the -o file: it depends on the input
/// and on tdslc itself (a new compiler may emit different code).
int writeDepfileIfAsked() {
  if (!WriteDepfile)
    return 0;
  std::string Path = DepfileName;
  if (Path.empty()) {
    SmallString<256> P(OutputFilename);
    sys::path::replace_extension(P, "d");
    Path = std::string(P);
  }
  std::vector<std::string> Deps;
  if (InputFilename != "-")
    Deps.push_back(InputFilename);
  Deps.push_back(ExePath);
  std::string Problem = writeDepfile(Path, OutputFilename, Deps);
  if (!Problem.empty()) {
    errs() << "tdslc: error: " << Problem << "\n";
    return 1;
  }
  return 0;
}

/// With --dump-dir, writes IR as DIR/NN-<Stage>.tir; a file that cannot be
/// written ends tdslc (the directory was checked before compiling).
void dumpIR(const ir::Module &IR, unsigned Index, StringRef Stage) {
  if (DumpDir.empty())
    return;
  SmallString<256> Path(DumpDir);
  sys::path::append(Path, formatv("{0:2}-{1}.tir", Index, Stage).str());
  std::error_code EC;
  raw_fd_ostream OS(Path, EC, sys::fs::OF_Text);
  if (!EC)
    ir::printModule(IR, OS);
  if (EC || OS.has_error()) {
    errs() << "tdslc: error: cannot write '" << Path << "'\n";
    OS.clear_error();
    std::exit(1);
  }
}

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
  return writeDepfileIfAsked();
}

/// Lowers and runs the pipeline, verifying after every pass: a verifier
/// failure there is a compiler bug, never the user's.
ir::Module compileToIR(const ast::Module &M, const std::vector<std::string> &Pipeline,
                       DiagEngine &Diags) {
  ir::Module IR = lowerModule(M, [&](SMLoc L) { return Diags.lineOf(L); });
  for (ir::Func &F : IR.Funcs)
    llvm::append_range(F.Schedule, CommandLineKnobs);
  auto Verify = [&](const char *After) {
    std::vector<std::string> Problems = ir::verifyModule(IR);
    if (!Problems.empty())
      TDSL_UNREACHABLE(Twine("invalid IR after ") + After + ": " + Problems.front());
  };
  Verify("lowering");
  unsigned Stage = 0;
  dumpIR(IR, Stage++, "lower");
  auto PrintAfter = [&](StringRef Stage) {
    if (!PrintIRAfterAll && PrintIRAfter != Stage)
      return;
    errs() << "// -----// IR Dump After " << Stage << " //----- //\n";
    ir::printModule(IR, errs());
  };
  PrintAfter("lower");
  for (const std::string &Name : Pipeline) {
    const PassInfo *P = findPass(Name);
    for (ir::Func &F : IR.Funcs)
      P->Run(F);
    Verify(P->Name);
    dumpIR(IR, Stage++, P->Name);
    PrintAfter(P->Name);
  }
  return IR;
}

/// Rejects impossible schedules before any pass runs: at the schedule
/// block's entry when it comes from the file, naming the option otherwise.
bool schedulesValid(const ast::Module &M, DiagEngine &Diags) {
  bool Ok = true;
  // The schedule must fit every arch: the one with the least shared memory.
  int64_t MaxShared = INT64_MAX;
  for (StringRef A : Archs)
    MaxShared = std::min(MaxShared, archLimits(parseCudaArch(A)).MaxSharedBytes);
  for (const auto &K : M.Kernels) {
    if (!K->Sched && CommandLineKnobs.empty())
      continue;
    ir::Func F = lowerKernel(*K, [&](SMLoc L) { return Diags.lineOf(L); });
    llvm::append_range(F.Schedule, CommandLineKnobs);
    for (const ScheduleProblem &P : checkSchedule(F, MaxShared)) {
      Ok = false;
      const ast::ScheduleEntry *Entry = nullptr;
      if (P.Line && K->Sched)
        for (const ast::ScheduleEntry &E : K->Sched->Entries)
          if (E.Key == P.Key)
            Entry = &E;
      if (Entry)
        Diags.error(Entry->Loc, "schedule of '" + K->Name + "', '" + P.Key + "': " + P.Message);
      else
        errs() << "tdslc: error: --schedule " << P.Key << " (kernel '" << K->Name
               << "'): " << P.Message << "\n";
    }
  }
  return Ok;
}

/// The last step before the backend: a launch the GPU cannot run (too much
/// shared memory, too many threads) is the user's error, never emitted.
bool fitsTarget(const ir::Module &IR) {
  bool Fits = true;
  for (StringRef A : Archs) {
    std::vector<std::string> Problems = checkResources(IR, A);
    for (const std::string &P : Problems)
      errs() << "tdslc: error: " << P << "\n";
    Fits &= Problems.empty();
  }
  return Fits;
}

/// Writes the .cu (or, with HeaderOnly, the .h) of IR; with --header the
/// .cu comes with its header. The banner names the input's basename and
/// the options that shape the output, never a path or a time.
CudaEmitOptions cudaEmitOptions(SourceMgr &SM, unsigned BufferID) {
  CudaEmitOptions Opts;
  Opts.Version = Version;
  Opts.InputName = InputFilename == "-" ? "<stdin>" : sys::path::filename(InputFilename).str();
  Opts.Arch = join(Archs, ", ");
  Opts.SelfContained = SelfContained;
  Opts.SymbolPrefix = SymbolPrefix;
  Opts.CommandLine = "tdslc " + Opts.InputName + " -O" + std::to_string(OptLevel) +
                     " --arch=" + Arch.getValue();
  if (SymbolPrefix.getNumOccurrences())
    Opts.CommandLine += " --symbol-prefix=" + SymbolPrefix.getValue();
  StringRef Src = SM.getMemoryBuffer(BufferID)->getBuffer();
  while (!Src.empty()) {
    auto [Line, Rest] = Src.split('\n');
    Opts.SourceLines.push_back(Line.rtrim("\r").str());
    Src = Rest;
  }
  return Opts;
}

/// Writes the C header of IR to --header; false (with the error printed)
/// if it cannot be written.
bool writeHeaderFile(const ir::Module &IR, const CudaEmitOptions &Opts) {
  std::error_code EC;
  ToolOutputFile Header(HeaderFilename, EC, sys::fs::OF_Text);
  if (!EC) {
    emitHeader(IR, Opts, Header.os());
    Header.os().flush();
  }
  if (EC || Header.os().has_error()) {
    errs() << "tdslc: error: cannot write '" << HeaderFilename << "'\n";
    Header.os().clear_error();
    return false;
  }
  Header.keep();
  return true;
}

int emitCudaFiles(const ir::Module &IR, SourceMgr &SM, unsigned BufferID, bool HeaderOnly) {
  CudaEmitOptions Opts = cudaEmitOptions(SM, BufferID);
  if (HeaderOnly)
    return writeOutput([&](raw_ostream &OS) { emitHeader(IR, Opts, OS); });
  std::string Cuda;
  raw_string_ostream CS(Cuda);
  std::string Problem = emitCuda(IR, Opts, CS);
  if (!Problem.empty()) {
    errs() << "tdslc: error: cannot emit CUDA: " << Problem << "\n";
    return 1;
  }
  if (!HeaderFilename.empty() && !writeHeaderFile(IR, Opts))
    return 1;
  return writeOutput([&](raw_ostream &OS) { OS << CS.str(); });
}

/// A scratch folder for the .cu that nvcc compiles; removed with its files.
struct ScratchDir {
  SmallString<128> Path;
  ~ScratchDir() {
    if (!Path.empty())
      sys::fs::remove_directories(Path);
  }
};

/// --emit=obj and --emit=report: emits the CUDA into a scratch folder and
/// runs nvcc on it, to an object file (and --header) or to ptxas -v's
/// numbers for the report. nvcc is $CUDACXX, then PATH, then
/// /usr/local/cuda/bin/nvcc; its failure is tdslc's (exit 1, its output
/// shown).
int compileWithNvcc(const ast::Module &AST, const ir::Module &IR, SourceMgr &SM,
                    unsigned BufferID, const ReportOptions *Report) {
  if (!Report && OutputFilename == "-") {
    errs() << "tdslc: error: --emit=obj needs -o\n";
    return 1;
  }
  std::string Nvcc = findNvcc();
  if (Nvcc.empty()) {
    errs() << "tdslc: error: nvcc not found (set CUDACXX, put nvcc on PATH or install the "
              "CUDA toolkit in /usr/local/cuda)\n";
    return 1;
  }
  std::vector<std::string> ArchFlags;
  for (StringRef A : Archs) {
    std::optional<std::vector<std::string>> Flags = nvccArchFlags(A);
    if (!Flags) {
      errs() << "tdslc: error: invalid --arch '" << A << "' (expected sm_NN, e.g. sm_90)\n";
      return 1;
    }
    llvm::append_range(ArchFlags, *Flags);
  }
  if (Report && Archs.size() > 1) {
    errs() << "tdslc: error: --emit=report takes one --arch (ptxas -v reports one)\n";
    return 1;
  }
  CudaEmitOptions Opts = cudaEmitOptions(SM, BufferID);
  std::string Cuda;
  raw_string_ostream CS(Cuda);
  if (std::string Problem = emitCuda(IR, Opts, CS); !Problem.empty()) {
    errs() << "tdslc: error: cannot emit CUDA: " << Problem << "\n";
    return 1;
  }
  ScratchDir Scratch;
  if (std::error_code EC = sys::fs::createUniqueDirectory("tdslc", Scratch.Path)) {
    errs() << "tdslc: error: cannot create a temporary folder: " << EC.message() << "\n";
    return 1;
  }
  StringRef Stem = InputFilename == "-" ? "stdin" : sys::path::stem(InputFilename);
  SmallString<128> CuPath(Scratch.Path);
  sys::path::append(CuPath, Stem + ".cu");
  {
    std::error_code EC;
    raw_fd_ostream CuFile(CuPath, EC, sys::fs::OF_Text);
    if (!EC)
      CuFile << CS.str();
    if (EC || CuFile.has_error()) {
      errs() << "tdslc: error: cannot write '" << CuPath << "'\n";
      CuFile.clear_error();
      return 1;
    }
  }
  std::vector<std::string> Args = {Nvcc, "-std=c++17", "-I" + tdslIncludeDir(ExePath)};
  SmallString<128> Product(Scratch.Path);
  if (Report) {
    // Device code only: ptxas -v is all the report needs from nvcc.
    sys::path::append(Product, Stem + ".cubin");
    StringRef Sm = StringRef(Arch).startswith("sm_") ? StringRef(Arch).drop_front(3)
                                                      : StringRef(Arch);
    Args.insert(Args.end(), {"-cubin", "-arch=sm_" + Sm.str(), "-Xptxas", "-v"});
  } else {
    Product = OutputFilename.getValue();
    Args.push_back("-c");
    Args.insert(Args.end(), ArchFlags.begin(), ArchFlags.end());
  }
  Args.insert(Args.end(), {"-o", std::string(Product), std::string(CuPath)});
  ToolRun Run = runTool(Nvcc, Args);
  if (Run.Status != 0) {
    errs() << Run.Output;
    if (Run.Status < 0)
      errs() << "tdslc: error: cannot run " << Nvcc << ": " << Run.Error << "\n";
    else
      errs() << "tdslc: error: nvcc failed (exit status " << Run.Status << ") on the CUDA "
             << "emitted for '" << InputFilename << "'\n";
    if (!Report)
      sys::fs::remove(OutputFilename);
    return 1;
  }
  if (Report) {
    ReportOptions R = *Report;
    R.Ptxas = parsePtxasVerbose(Run.Output);
    return writeOutput([&](raw_ostream &OS) { printReport(AST, IR, R, OS); });
  }
  if (!HeaderFilename.empty() && !writeHeaderFile(IR, Opts))
    return 1;
  return writeDepfileIfAsked();
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
  StringRef(Arch).split(Archs, ',');
  for (StringRef A : Archs)
    if (!parseCudaArch(A)) {
      errs() << "tdslc: error: unsupported architecture '" << A
             << "' (tdslc supports sm_75 and newer)\n";
      return 1;
    }
  if (!isValidSymbolPrefix(SymbolPrefix)) {
    errs() << "tdslc: error: invalid --symbol-prefix '" << SymbolPrefix
           << "' (expected the start of a C identifier, e.g. mylib_)\n";
    return 1;
  }
  if (!HeaderFilename.empty() && emitKind() != EmitKind::CUDA && emitKind() != EmitKind::Obj) {
    errs() << "tdslc: error: --header only applies to --emit=cuda and --emit=obj\n";
    return 1;
  }
  RemarksEnabled = Remarks;
  for (const std::string &Text : ScheduleKnobs) {
    std::string Error;
    std::optional<ir::Knob> K = parseKnob(Text, Error);
    if (!K) {
      errs() << "tdslc: error: --schedule: " << Error << "\n";
      return 1;
    }
    CommandLineKnobs.push_back(*K);
  }
  std::vector<std::string> Pipeline = defaultPipeline(static_cast<int>(OptLevel));
  for (const std::string &Name : DisabledPasses) {
    if (!findPass(Name)) {
      errs() << "tdslc: error: unknown pass '" << Name << "' in --disable-pass (see --list-passes)\n";
      return 1;
    }
    llvm::erase_value(Pipeline, Name);
  }
  if (!PrintIRAfter.empty() && PrintIRAfter != "lower" && !findPass(PrintIRAfter)) {
    errs() << "tdslc: error: unknown pass '" << PrintIRAfter
           << "' in --print-ir-after (see --list-passes; 'lower' is the lowering)\n";
    return 1;
  }
  ExePath = mainExecutablePath(Argv[0]);
  if (PrintIncludeDir) {
    outs() << tdslIncludeDir(ExePath) << "\n";
    return 0;
  }
  if (WriteDepfile && OutputFilename == "-") {
    errs() << "tdslc: error: -MD needs -o (the depfile's target)\n";
    return 1;
  }
  if (!DumpDir.empty()) {
    if (std::error_code EC = sys::fs::create_directories(DumpDir)) {
      errs() << "tdslc: error: cannot create '" << DumpDir << "': " << EC.message() << "\n";
      return 1;
    }
  }
  if (ListPasses) {
    for (const PassInfo &P : allPasses())
      outs() << format("%-18s", P.Name) << P.Summary << "\n";
    return 0;
  }
  if (InputFilename.empty()) {
    errs() << "tdslc: error: no input file (try --help)\n";
    return 1;
  }

  CheckOptions CheckOpts;
  if (Check || !DumpIO.empty()) {
    if (Sizes.empty()) {
      errs() << "tdslc: error: " << (Check ? "--check" : "--dump-io")
             << " needs --sizes (for example --sizes M=33,N=17,K=9)\n";
      return 1;
    }
    std::string Problem = parseSizes(Sizes, CheckOpts);
    if (!Problem.empty()) {
      errs() << "tdslc: error: " << Problem << "\n";
      return 1;
    }
  } else if (emitKind() == EmitKind::Report && !Sizes.empty()) {
    // The sizes at which --emit=report evaluates FLOPs and bytes.
    if (std::string Problem = parseSizes(Sizes, CheckOpts); !Problem.empty()) {
      errs() << "tdslc: error: " << Problem << "\n";
      return 1;
    }
  } else if (Sizes.getNumOccurrences() || Seed.getNumOccurrences() ||
             ExactInputs.getNumOccurrences()) {
    errs() << "tdslc: error: --sizes, --seed and --exact-inputs only apply to --check "
              "and --dump-io\n";
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
  // The AST is the parser's; the schedule matters from the IR on.
  if (emitKind() != EmitKind::AST && !schedulesValid(*M, Diags))
    return 1;

  if (!DumpIO.empty()) {
    CheckOpts.Seed = Seed;
    CheckOpts.ExactInputs = ExactInputs;
    if (!dumpIO(*M, CheckOpts, DumpIO, errs()))
      return 1;
    if (!Check)
      return 0;
  }

  if (Check) {
    CheckOpts.Seed = Seed;
    CheckOpts.ExactInputs = ExactInputs;
    CheckOpts.Pipeline = Pipeline;
    CheckOpts.Knobs = CommandLineKnobs;
    CheckOpts.LineOf = [&](SMLoc L) { return Diags.lineOf(L); };
    bool Ok = true;
    int Rc = writeOutput([&](raw_ostream &OS) { Ok = runCheck(*M, CheckOpts, OS, errs()); });
    return Rc ? Rc : (Ok ? 0 : 1);
  }

  switch (emitKind()) {
  case EmitKind::AST:
    return writeOutput([&](raw_ostream &OS) { printAST(*M, OS); });
  case EmitKind::IR: {
    ir::Module IR = compileToIR(*M, {}, Diags);
    return writeOutput([&](raw_ostream &OS) { ir::printModule(IR, OS); });
  }
  case EmitKind::Loops: {
    ir::Module IR = compileToIR(*M, Pipeline, Diags);
    return writeOutput([&](raw_ostream &OS) { ir::printModule(IR, OS); });
  }
  case EmitKind::CUDA:
  case EmitKind::Header: {
    ir::Module IR = compileToIR(*M, Pipeline, Diags);
    if (!fitsTarget(IR))
      return 1;
    return emitCudaFiles(IR, SM, BufferID, emitKind() == EmitKind::Header);
  }
  case EmitKind::Obj: {
    ir::Module IR = compileToIR(*M, Pipeline, Diags);
    if (!fitsTarget(IR))
      return 1;
    return compileWithNvcc(*M, IR, SM, BufferID, nullptr);
  }
  case EmitKind::Report: {
    ir::Module IR = compileToIR(*M, Pipeline, Diags);
    if (!fitsTarget(IR))
      return 1;
    ReportOptions R;
    R.SymbolPrefix = SymbolPrefix;
    R.Sizes = CheckOpts.Sizes;
    if (CheckOpts.DefaultSize)
      R.DefaultSize = *CheckOpts.DefaultSize;
    return compileWithNvcc(*M, IR, SM, BufferID, &R);
  }
  }
  return 1;
}
