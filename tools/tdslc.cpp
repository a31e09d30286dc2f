//===- tdslc.cpp - The tdslc driver: a .tdsl file in, one stage's text out ===//
//
//   tdslc FILE --emit=ast                the checked syntax tree
//   tdslc FILE --emit=signature          the kernels' launchers as JSON
//   tdslc FILE --emit=ir                 the loop IR as lowered, before any pass
//   tdslc FILE [--emit=loops] [-O0..3]   the loop IR after the pipeline:
//                                        -O0 map-to-gpu only, -O1 the
//                                        kernel-class passes and simplify,
//                                        -O2 = -O3 every pass
//   tdslc FILE -o OUT.{cu,h,o,ptx,tir}   without --emit, the extension picks
//                                        the output (any other is an error)
//   tdslc FILE --check --sizes M=33,...  every kernel, every stage, vs the
//                                        reference evaluator
//   tdslc FILE --dump-io=DIR --sizes ... inputs, reference outputs and
//                                        tolerance as files, per kernel
//   tdslc --list-passes                  the pipeline, in order
//   tdslc --print-include-dir            where tdsl/runtime.h and device.cuh live
//   ... -MD [-MF FILE]                   also a make depfile for -o
//   ... --dump-dir=DIR                   the IR after each pass, DIR/NN-<pass>.tir
//   ... --print-ir-after[-all|-change], --time-passes, --verify-each
//                                        the pass manager's (passes/PassManager.h)
//   ... --remarks                        which pass took each statement, and
//                                        why the others declined it, located
//                                        as errors are
//
// Exit status: 0 on success, 1 on a user error or a failed check, 2 when a
// pass produced IR the verifier rejects or the backend cannot write (a
// compiler bug).
//
//===----------------------------------------------------------------------===//
#include "backend/CudaEmitter.h"
#include "backend/ResourceCheck.h"
#include "frontend/Frontend.h"
#include "frontend/Lower.h"
#include "graph/Fuse.h"
#include "ir/Diagnostics.h"
#include "ir/Printer.h"
#include "passes/Pass.h"
#include "passes/PassManager.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"
#include "driver/Check.h"
#include "driver/Report.h"
#include "driver/SignatureJSON.h"
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

#include <algorithm>
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
enum class EmitKind { AST, Signature, Graph, IR, Loops, CUDA, Header, Obj, PTX, Report };

cl::opt<EmitKind> Emit(
    "emit",
    cl::desc("What to write (default: what the -o extension names, .cu .h .o .ptx .tir; the "
             "loop IR on stdout)"),
    cl::init(EmitKind::Loops),
    cl::values(clEnumValN(EmitKind::AST, "ast", "The checked syntax tree"),
               clEnumValN(EmitKind::Signature, "signature",
                          "Each kernel's launcher, sizes and parameters (dtypes, dims as "
                          "affine forms) as JSON, for bindings"),
               clEnumValN(EmitKind::Graph, "graph",
                          "The kernel graph: statements as nodes, their classes and reads, and "
                          "the launches fusion groups them into, with its reasons"),
               clEnumValN(EmitKind::IR, "ir",
                          "The loop IR as lowered: one loop nest per statement, before any pass"),
               clEnumValN(EmitKind::Loops, "loops",
                          "The loop IR after the pass pipeline (-o *.tir)"),
               clEnumValN(EmitKind::CUDA, "cuda", "CUDA C++ kernels and C launchers (-o *.cu)"),
               clEnumValN(EmitKind::Header, "header",
                          "The C header declaring the launchers (-o *.h)"),
               clEnumValN(EmitKind::Obj, "obj",
                          "An object file: the CUDA compiled by nvcc (with --header, the header "
                          "too) (-o *.o)"),
               clEnumValN(EmitKind::PTX, "ptx", "The CUDA compiled by nvcc -ptx (-o *.ptx)"),
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

/// --arch, split at the commas. The emitted CUDA depends only on the
/// oldest (what the passes may use), so one .cu serves every arch listed.
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

/// The output kinds -o's extension selects without --emit.
const std::pair<const char *, EmitKind> EmitKindOfExtension[] = {
    {".cu", EmitKind::CUDA}, {".h", EmitKind::Header}, {".o", EmitKind::Obj},
    {".ptx", EmitKind::PTX}, {".tir", EmitKind::Loops},
};

/// What to write: --emit when given, else what -o's extension names, else
/// (stdout) the loop IR. None for an -o without a known extension: a build
/// rule writing "kernels.o" must not get loop-IR text under that name.
std::optional<EmitKind> emitKind() {
  // Output thrown away, kept for its side effects (--print-ir-after):
  // the whole pipeline runs.
  if (Emit.getNumOccurrences() || OutputFilename == "-" || OutputFilename == "/dev/null")
    return Emit.getValue();
  StringRef Ext = sys::path::extension(OutputFilename);
  for (const auto &[Known, Kind] : EmitKindOfExtension)
    if (Ext == Known)
      return Kind;
  return std::nullopt;
}

cl::opt<unsigned> OptLevel(
    "O",
    cl::desc("Optimization level (default 2): -O0 one thread per output element (map-to-gpu "
             "only); -O1 the kernel-class passes (tile-contraction, reduce-rows, "
             "tile-transpose, map-elementwise, map-to-gpu) and simplify; -O2 and -O3 (the "
             "same) add the refinements vectorize, pad-shared and unroll"),
    cl::Prefix, cl::init(2), cl::cat(TdslcCategory));

cl::opt<bool> ListPasses("list-passes",
                         cl::desc("Print the passes that -O and --disable-pass select, in "
                                  "order, and exit"),
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

cl::list<std::string> DisabledPasses("disable-pass",
                                     cl::desc("Leave a pass out of the pipeline (repeatable)"),
                                     cl::value_desc("pass"), cl::CommaSeparated,
                                     cl::cat(TdslcCategory));

cl::opt<bool> Remarks("remarks",
                      cl::desc("Say which pass took each statement, and why the others "
                               "declined it (file:line:col: remark: [pass] ...)"),
                      cl::init(false), cl::cat(TdslcCategory));

cl::list<std::string> ScheduleKnobs(
    "schedule",
    cl::desc("Pin a schedule knob in every kernel, over its schedule block (KEY=VALUE, e.g. "
             "block_tile=[64,64]; repeatable; the keys are in dsl/LANGUAGE.md)"),
    cl::value_desc("key=value"), cl::cat(TdslcCategory));

/// The --schedule knobs, parsed.
std::vector<ir::Knob> CommandLineKnobs;
/// The knobs the fusion stage plans by: the --schedule ones, and fuse =
/// off at -O0 or with --disable-pass=fuse, where it does not run.
std::vector<ir::Knob> FusionKnobs;

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

/// The exit status of a pass manager's failure: 1 for the user's (a dump
/// folder that cannot be written), 2 for a compiler bug.
constexpr int ExitInternalError = 2;

/// Prints the remarks the passes made, each at its statement's first
/// non-blank column, in source order (the passes' order within a line), so
/// each statement reads as one story: who declined it, who took it.
void printRemarks(std::vector<Remark> &Remarks, DiagEngine &Diags, unsigned BufferID) {
  SourceMgr &SM = Diags.sourceMgr();
  std::stable_sort(Remarks.begin(), Remarks.end(),
                   [](const Remark &A, const Remark &B) { return A.Line < B.Line; });
  StringRef Buf = SM.getMemoryBuffer(BufferID)->getBuffer();
  for (const Remark &R : Remarks) {
    std::string Msg = "[" + std::string(R.Pass) + "] " + R.Message;
    SMLoc Loc;
    if (R.Line)
      Loc = SM.FindLocForLineAndColumn(BufferID, R.Line, 1);
    if (!Loc.isValid()) {
      // No statement to point at: the file alone, not a made-up line.
      StringRef File = SM.getMemoryBuffer(BufferID)->getBufferIdentifier();
      SM.PrintMessage(errs(), SMDiagnostic(File, SourceMgr::DK_Remark, Msg));
      continue;
    }
    const char *P = Loc.getPointer();
    while (P < Buf.end() && (*P == ' ' || *P == '\t'))
      ++P;
    Diags.remark(SMLoc::getFromPointer(P), Msg);
  }
  Remarks.clear();
}

/// The least shared memory a block may opt into on any --arch.
int64_t leastMaxSharedBytes() {
  int64_t Least = INT64_MAX;
  for (StringRef A : Archs)
    Least = std::min(Least, archLimits(parseCudaArch(A)).MaxSharedBytes);
  return Least;
}

/// Lowers and runs the pipeline through the pass manager (the verifier
/// after each pass, and the --print-ir-after, --dump-dir and --time-passes
/// options). Null after a failure it reported, with ExitStatus set.
std::optional<ir::Module> compileToIR(const ast::Module &M,
                                      const std::vector<std::string> &Pipeline,
                                      DiagEngine &Diags, unsigned BufferID, int &ExitStatus) {
  std::vector<Remark> Collected;
  if (Remarks)
    setRemarkHandler([&](const Remark &R) { Collected.push_back(R); });
  auto LineOf = [&](SMLoc L) { return Diags.lineOf(L); };
  ir::Module IR = graph::lowerFused(M, LineOf, FusionKnobs);
  unsigned MinSM = ~0u;
  for (StringRef A : Archs)
    MinSM = std::min(MinSM, parseCudaArch(A));
  const int64_t MaxSharedBytes = leastMaxSharedBytes();
  for (ir::Func &F : IR.Funcs) {
    llvm::append_range(F.Schedule, CommandLineKnobs);
    F.MinSM = MinSM;
    F.MaxSharedBytes = MaxSharedBytes;
  }
  PassManager PM(Pipeline, passManagerOptions(), "tdslc");
  PassManagerStatus Status = PM.run(IR, "lower");
  setRemarkHandler(nullptr);
  printRemarks(Collected, Diags, BufferID);
  if (Status == PassManagerStatus::Ok)
    return IR;
  ExitStatus = Status == PassManagerStatus::InternalError ? ExitInternalError : 1;
  return std::nullopt;
}

/// Rejects impossible schedules before any pass runs: at the schedule
/// block's entry when it comes from the file, naming the option otherwise.
bool schedulesValid(const ast::Module &M, DiagEngine &Diags) {
  bool Ok = true;
  // The schedule must fit every arch: the one with the least shared memory.
  int64_t MaxShared = leastMaxSharedBytes();
  for (const auto &K : M.Kernels) {
    if (!K->Sched && CommandLineKnobs.empty())
      continue;
    ir::Func F = lowerKernel(*K, [&](SMLoc L) { return Diags.lineOf(L); });
    llvm::append_range(F.Schedule, CommandLineKnobs);
    F.MaxSharedBytes = MaxShared;
    for (const ScheduleProblem &P : checkSchedule(F)) {
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

/// emitCuda's refusal: a user error (exit 1), or IR that no pass should
/// have produced, a compiler bug (exit 2), never code with a gap in it.
int cannotEmit(const std::string &Problem, bool Internal) {
  if (!Internal) {
    errs() << "tdslc: error: " << Problem << "\n";
    return 1;
  }
  errs() << "tdslc: internal error: the CUDA backend cannot write this IR: " << Problem
         << "\n";
  return ExitInternalError;
}

int emitCudaFiles(const ir::Module &IR, SourceMgr &SM, unsigned BufferID, bool HeaderOnly) {
  CudaEmitOptions Opts = cudaEmitOptions(SM, BufferID);
  if (HeaderOnly)
    return writeOutput([&](raw_ostream &OS) { emitHeader(IR, Opts, OS); });
  std::string Cuda;
  raw_string_ostream CS(Cuda);
  bool Internal = false;
  if (std::string Problem = emitCuda(IR, Opts, CS, &Internal); !Problem.empty())
    return cannotEmit(Problem, Internal);
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

/// --emit=obj, --emit=ptx and --emit=report: emits the CUDA into a scratch
/// folder and runs nvcc on it, to an object file (and --header), to PTX, or
/// to ptxas -v's numbers for the report. nvcc is $CUDACXX, then PATH, then
/// /usr/local/cuda/bin/nvcc; its failure is tdslc's (exit 1, its output
/// shown).
int compileWithNvcc(const ast::Module &AST, const ir::Module &IR, SourceMgr &SM,
                    unsigned BufferID, EmitKind Kind, const ReportOptions *Report) {
  // nvcc writes the object itself; PTX is text and may go to stdout.
  if (Kind == EmitKind::Obj && OutputFilename == "-") {
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
  bool Internal = false;
  if (std::string Problem = emitCuda(IR, Opts, CS, &Internal); !Problem.empty())
    return cannotEmit(Problem, Internal);
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
  StringRef Sm = StringRef(Arch).startswith("sm_") ? StringRef(Arch).drop_front(3)
                                                    : StringRef(Arch);
  if (Report) {
    // Device code only: ptxas -v is all the report needs from nvcc.
    sys::path::append(Product, Stem + ".cubin");
    Args.insert(Args.end(), {"-cubin", "-arch=sm_" + Sm.str(), "-Xptxas", "-v"});
  } else if (Kind == EmitKind::PTX) {
    // Through the scratch folder, so that -o - and a failed nvcc leave no
    // partial file behind.
    sys::path::append(Product, Stem + ".ptx");
    Args.insert(Args.end(), {"-ptx", "-arch=compute_" + Sm.str()});
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
    if (Kind == EmitKind::Obj)
      sys::fs::remove(OutputFilename);
    return 1;
  }
  if (Report) {
    ReportOptions R = *Report;
    R.Ptxas = parsePtxasVerbose(Run.Output);
    return writeOutput([&](raw_ostream &OS) { printReport(AST, IR, R, OS); });
  }
  if (Kind == EmitKind::PTX) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> Ptx = MemoryBuffer::getFile(Product, /*IsText=*/true);
    if (!Ptx) {
      errs() << "tdslc: error: cannot read the PTX nvcc wrote: " << Ptx.getError().message()
             << "\n";
      return 1;
    }
    return writeOutput([&](raw_ostream &OS) { OS << (*Ptx)->getBuffer(); });
  }
  if (!HeaderFilename.empty() && !writeHeaderFile(IR, Opts))
    return 1;
  return writeDepfileIfAsked();
}

} // namespace

int main(int Argc, char **Argv) {
  InitLLVM Init(Argc, Argv);
  registerPassManagerOptions(TdslcCategory);
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
  // The extension decides only where tdslc writes a stage: --check and
  // --dump-io write their own report, --list-passes and
  // --print-include-dir a line.
  std::optional<EmitKind> KindOrNone = emitKind();
  if (!KindOrNone && !Check && DumpIO.empty() && !ListPasses && !PrintIncludeDir) {
    errs() << "tdslc: error: cannot tell what to write from the name '" << OutputFilename
           << "': without --emit, -o takes .cu (CUDA), .h (header), .o (object), .ptx (PTX) "
              "or .tir (loop IR)\n";
    return 1;
  }
  EmitKind Kind = KindOrNone.value_or(EmitKind::Loops);
  if (!HeaderFilename.empty() && Kind != EmitKind::CUDA && Kind != EmitKind::Obj) {
    errs() << "tdslc: error: --header only applies to --emit=cuda and --emit=obj\n";
    return 1;
  }
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
  // The fusion stage (graph/Fuse.h) runs before lowering, from -O1 on;
  // --disable-pass=fuse leaves it out as it does a pass.
  FusionKnobs = CommandLineKnobs;
  if (OptLevel == 0 || llvm::is_contained(DisabledPasses, "fuse")) {
    ir::Knob Off;
    Off.Key = "fuse";
    Off.Word = "off";
    FusionKnobs.push_back(Off);
  }
  for (const std::string &Name : DisabledPasses) {
    if (Name == "fuse")
      continue;
    if (!findPass(Name)) {
      errs() << "tdslc: error: unknown pass '" << Name << "' in --disable-pass (see --list-passes)\n";
      return 1;
    }
    llvm::erase_value(Pipeline, Name);
  }
  if (std::string Problem = PassManager::checkOptions(passManagerOptions(), "lower");
      !Problem.empty()) {
    errs() << "tdslc: error: " << Problem << "\n";
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
  if (ListPasses) {
    for (const std::string &Name : Pipeline)
      outs() << format("%-18s", Name.c_str()) << findPass(Name)->Summary << "\n";
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
  } else if (Kind == EmitKind::Report && !Sizes.empty()) {
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
  // The AST and the signature are the parser's; the schedule matters from
  // the IR on.
  if (Kind != EmitKind::AST && Kind != EmitKind::Signature && !schedulesValid(*M, Diags))
    return 1;
  if (std::string Problem = unusedSizes(*M, CheckOpts); !Problem.empty()) {
    errs() << "tdslc: error: " << Problem << "\n";
    return 1;
  }

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
    CheckOpts.FusionKnobs = FusionKnobs;
    CheckOpts.LineOf = [&](SMLoc L) { return Diags.lineOf(L); };
    bool Ok = true;
    // --check runs the pipeline once per kernel; its remarks are the
    // compile's.
    std::vector<Remark> Collected;
    if (Remarks)
      setRemarkHandler([&](const Remark &R) { Collected.push_back(R); });
    // Into a file (or -o /dev/null), a failing stage would go unseen: its
    // lines and the count are also printed to stderr.
    int Rc = writeOutput([&](raw_ostream &OS) {
      Ok = runCheck(*M, CheckOpts, OS, errs(), OutputFilename == "-" ? nullptr : &errs());
    });
    setRemarkHandler(nullptr);
    printRemarks(Collected, Diags, BufferID);
    return Rc ? Rc : (Ok ? 0 : 1);
  }

  if (Kind == EmitKind::AST)
    return writeOutput([&](raw_ostream &OS) { printAST(*M, OS); });
  if (Kind == EmitKind::Signature)
    return writeOutput(
        [&](raw_ostream &OS) { printSignatureJSON(*M, Version, SymbolPrefix, OS); });
  if (Kind == EmitKind::Graph) {
    std::vector<Remark> Collected;
    if (Remarks)
      setRemarkHandler([&](const Remark &R) { Collected.push_back(R); });
    int Rc = writeOutput([&](raw_ostream &OS) {
      for (const auto &K : M->Kernels) {
        graph::KernelGraph G = graph::buildGraph(*K, [&](SMLoc L) { return Diags.lineOf(L); });
        graph::printGraph(G, graph::planFusion(G, graph::fusionOptions(*K, FusionKnobs)), OS);
      }
    });
    setRemarkHandler(nullptr);
    printRemarks(Collected, Diags, BufferID);
    return Rc;
  }
  int ExitStatus = 1;
  std::optional<ir::Module> IR =
      compileToIR(*M, Kind == EmitKind::IR ? std::vector<std::string>() : Pipeline, Diags,
                  BufferID, ExitStatus);
  if (!IR)
    return ExitStatus;
  if (Kind == EmitKind::IR || Kind == EmitKind::Loops)
    return writeOutput([&](raw_ostream &OS) { ir::printModule(*IR, OS); });
  if (!fitsTarget(*IR))
    return 1;
  switch (Kind) {
  case EmitKind::CUDA:
  case EmitKind::Header:
    return emitCudaFiles(*IR, SM, BufferID, Kind == EmitKind::Header);
  case EmitKind::Obj:
  case EmitKind::PTX:
    return compileWithNvcc(*M, *IR, SM, BufferID, Kind, nullptr);
  case EmitKind::Report: {
    ReportOptions R;
    R.SymbolPrefix = SymbolPrefix;
    R.Sizes = CheckOpts.Sizes;
    if (CheckOpts.DefaultSize)
      R.DefaultSize = *CheckOpts.DefaultSize;
    return compileWithNvcc(*M, *IR, SM, BufferID, Kind, &R);
  }
  default:
    return 1;
  }
}
