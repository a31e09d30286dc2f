//===- tdsl-smith.cpp - Random programs through every pipeline stage ------===//
//
//   tdsl-smith --count N --seed S        generate and check N programs; exit 0
//                                         only if every one passes
//   tdsl-smith --reproduce FILE           re-run a written failure (or any
//                                         .tdsl with a tdsl-smith-options line)
//
// Each program (driver/Smith.h) is checked in-process, in a forked child so
// that a crash or a hang is a finding rather than the end of the run, with
// the check library (tdslc --check, which runs the pipeline through the
// pass manager of passes/PassManager.h): every stage of the pipeline in the
// interpreter against the reference evaluator within the tolerance model,
// and, for the exact flavour (small-integer inputs, integer-valued
// arithmetic), every stage bit-identical to the naive one. Each program runs
// the default pipeline and one random pipeline configuration drawn from the
// knob tables below. A failure is minimized (statements deleted, expressions
// replaced by operands or literals, sizes shrunk, while the same failure
// persists) and written with a header that says how to reproduce it.
//
//===----------------------------------------------------------------------===//
#include "frontend/Frontend.h"
#include "frontend/Lower.h"
#include "ir/Diagnostics.h"
#include "passes/Pass.h"
#include "passes/Schedule.h"
#include "driver/Check.h"
#include "driver/Smith.h"
#include "graph/Fuse.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <poll.h>
#include <random>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

using namespace llvm;
using namespace tdsl;

namespace {

cl::OptionCategory SmithCategory("tdsl-smith options");
cl::opt<unsigned> Count("count", cl::desc("Programs to generate and check"), cl::init(100),
                        cl::cat(SmithCategory));
cl::opt<uint64_t> Seed("seed", cl::desc("Seed of the whole run"), cl::init(1),
                       cl::cat(SmithCategory));
cl::opt<int> Only("only", cl::desc("Check only program number N of the run"), cl::init(-1),
                  cl::cat(SmithCategory));
cl::opt<std::string> OutDir("out-dir", cl::desc("Where minimized failures are written"),
                            cl::init("tdsl-smith-failures"), cl::cat(SmithCategory));
cl::opt<std::string> EmitDir(
    "emit-dir",
    cl::desc("Write the programs as DIR/smith-<seed>-<n>.tdsl, each with a '# sizes:' and a "
             "'# dump-io:' line, without checking them (for test/gpu/gpu_check.py --programs)"),
    cl::value_desc("dir"), cl::cat(SmithCategory));
cl::opt<std::string> Reproduce("reproduce",
                               cl::desc("Re-run a failure file written by tdsl-smith"),
                               cl::value_desc("file"), cl::cat(SmithCategory));
enum class Flavour { Mixed, Exact, Float, Chains };
cl::opt<Flavour> FlavourOpt(
    "flavour", cl::desc("Which programs"), cl::init(Flavour::Mixed),
    cl::values(clEnumValN(Flavour::Mixed, "mixed", "70% exact, 30% float (default)"),
               clEnumValN(Flavour::Exact, "exact",
                          "small-integer values only: stages must be bit-identical"),
               clEnumValN(Flavour::Float, "float",
                          "transcendental functions and division, random float inputs"),
               clEnumValN(Flavour::Chains, "chains",
                          "fusion rules met or just missed (graph/Fuse.h): each program's "
                          "launches are known and checked too; exact values")),
    cl::cat(SmithCategory));
cl::opt<int64_t> Budget("budget", cl::desc("Interpreter work per program (index points)"),
                        cl::init(60000), cl::cat(SmithCategory));
cl::opt<unsigned> Timeout("timeout", cl::desc("Seconds per check before it counts as a hang"),
                          cl::init(60), cl::cat(SmithCategory));
cl::opt<unsigned> MaxFailures("max-failures",
                              cl::desc("Stop after this many failures (each is minimized)"),
                              cl::init(5), cl::cat(SmithCategory));
cl::opt<bool> NoMinimize("no-minimize", cl::desc("Write failures as generated"),
                         cl::cat(SmithCategory));
cl::opt<bool> Verbose("v", cl::desc("One line per program; print failing programs"),
                      cl::cat(SmithCategory));
cl::opt<bool> PrintPrograms("print-programs", cl::desc("Print every program generated"),
                            cl::cat(SmithCategory));
cl::opt<std::string> InjectFailure(
    "inject-failure", cl::Hidden,
    cl::desc("Treat every program whose text contains this string as failing (tests the "
             "minimizer)"),
    cl::cat(SmithCategory));

//===----------------------------------------------------------------------===//
// Knobs. A pipeline knob changes what runs; a schedule knob adds an entry to
// the program's schedule block. A new pass option plugs in as one line in
// one of the two tables.
//===----------------------------------------------------------------------===//

struct PipelineConfig {
  unsigned OptLevel = 3;
  std::set<std::string> Disabled;

  std::vector<std::string> passes() const {
    std::vector<std::string> Out;
    for (const std::string &P : defaultPipeline(static_cast<int>(OptLevel)))
      if (!Disabled.count(P))
        Out.push_back(P);
    return Out;
  }
};

using Rng = std::mt19937_64;

struct PipelineKnob {
  const char *Name;
  void (*Randomize)(Rng &, PipelineConfig &);
};
const PipelineKnob PipelineKnobs[] = {
    {"opt-level", [](Rng &R, PipelineConfig &C) { C.OptLevel = R() % 4; }},
    {"disable-pass",
     [](Rng &R, PipelineConfig &C) {
       for (const PassInfo &P : allPasses())
         if (R() % 4 == 0)
           C.Disabled.insert(P.Name);
     }},
};

struct ScheduleKnob {
  const char *Key;
  std::string (*Value)(Rng &);
};
template <size_t N> std::string pick(Rng &R, const char *const (&Values)[N]) {
  return Values[R() % N];
}
/// Independent keys: any value listed is valid on its own.
const std::vector<ScheduleKnob> ScheduleKnobs = {
    {"transpose_tile", [](Rng &R) { return pick(R, {"8", "16", "32", "40"}); }},
    {"items_per_thread", [](Rng &R) { return pick(R, {"1", "2", "3", "4", "8"}); }},
    {"threads", [](Rng &R) { return pick(R, {"32", "64", "96", "256", "1024"}); }},
    {"padding", [](Rng &R) { return pick(R, {"auto", "off", "1", "2", "4"}); }},
    {"unroll", [](Rng &R) { return pick(R, {"1", "2", "3", "4", "8"}); }},
    {"unroll_limit", [](Rng &R) { return pick(R, {"1", "2", "4", "16", "64"}); }},
    {"max_blocks", [](Rng &R) { return pick(R, {"0", "1", "2", "7"}); }},
};

/// A consistent row-reduction mapping: a warp per row (rows_per_block), a
/// block per row of reduce_threads threads, or either forced.
std::vector<std::pair<std::string, std::string>> reductionKnobs(Rng &R) {
  switch (R() % 4) {
  case 0: return {{"rows_per_block", pick(R, {"1", "2", "8", "32"})}};
  case 1:
    return {{"block_per_row", "on"}, {"reduce_threads", pick(R, {"32", "64", "96", "256"})}};
  case 2: return {{"block_per_row", "off"}};
  default: return {{"block_per_row", "on"}};
  }
}

/// A consistent contraction schedule: block tiles that are thread tiles
/// times a thread grid of at most 1024 threads (non-divisors of the
/// program's sizes included: the sizes are 1, primes and tile +- 1), with
/// k steps, vector widths, prefetching, copy runs and warp layouts.
std::vector<std::pair<std::string, std::string>> contractionKnobs(Rng &R) {
  static const int Thread[] = {1, 2, 4, 8};
  static const int Grid[] = {1, 2, 4, 8, 16};
  int TM = Thread[R() % 4], TN = Thread[R() % 4], GM = Grid[R() % 5], GN = Grid[R() % 5];
  auto L = [](int A, int B) { return "[" + std::to_string(A) + ", " + std::to_string(B) + "]"; };
  std::vector<std::pair<std::string, std::string>> Out = {
      {"thread_tile", L(TM, TN)}, {"block_tile", L(TM * GM, TN * GN)}};
  int Vec = std::min({TM, TN, static_cast<int>(1u << (R() % 3))});
  Out.push_back({"thread_vector", std::to_string(Vec)});
  Out.push_back({"k_tile", pick(R, {"1", "2", "3", "8", "16"})});
  bool Prefetch = R() % 2;
  Out.push_back({"prefetch", Prefetch ? "on" : "off"});
  if (Prefetch)
    Out.push_back({"stages", pick(R, {"1", "2"})});
  if (R() % 2)
    Out.push_back({"lane_cols", pick(R, {"1", "2", "4", "8", "32"})});
  if (R() % 2)
    Out.push_back({"copy_runs", "on"});
  return Out;
}

/// A consistent tensor-core schedule (tile-mma), drawn instead of
/// contractionKnobs: warp tiles of 16 to 64, blocks of up to 2 x 2 warps
/// (or, one in three, the default tiles, few_tiles' second launch and
/// split_k's third), k
/// tiles of 32 or 64 (multiples of every mma's k: 16 f16, 8 tf32, 32 i8)
/// through stages whose tiles fit in shared memory for 4-byte tf32
/// operands too, each refinement on or off. The CUDA-core path takes the
/// same block and k tiles (8x8 thread tiles divide them, and their shared
/// tiles fit), so a nest tile-mma declines still has a valid schedule;
/// with 8-byte elements (F64: the program spells f64 somewhere) only k
/// tiles of 32 fit there (two stages of 64 x (128 + 128) f64 elements
/// take 262144 bytes).
std::vector<std::pair<std::string, std::string>> mmaKnobs(Rng &R, bool F64) {
  static const int Warp[][2] = {{16, 16}, {32, 32}, {64, 32}, {32, 64}, {64, 64}};
  const int *W = Warp[R() % 5];
  int GM = 1 + R() % 2, GN = 1 + R() % 2;
  auto L = [](int A, int B) { return "[" + std::to_string(A) + ", " + std::to_string(B) + "]"; };
  std::vector<std::pair<std::string, std::string>> Out = {
      {"tensor_cores", pick(R, {"auto", "auto", "off"})}};
  // One in three keeps the default tiles, and with them the second launch
  // of small tiles for few output tiles (few_tiles), which pinned tiles
  // turn off.
  if (R() % 3) {
    Out.push_back({"warp_tile", L(W[0], W[1])});
    Out.push_back({"block_tile", L(W[0] * GM, W[1] * GN)});
  } else if (R() % 2) {
    Out.push_back({"few_tiles", pick(R, {"auto", "off"})});
    Out.push_back({"split_k", pick(R, {"auto", "off"})});
  }
  // 64 x (128 + 128) tf32 elements take 64 KiB a stage: at most 3.
  bool Wide = R() % 2 && !F64;
  Out.push_back({"k_tile", Wide ? "64" : "32"});
  Out.push_back({"stages", Wide ? pick(R, {"1", "2", "3"}) : pick(R, {"1", "2", "3", "4"})});
  for (const char *Key : {"ldmatrix", "double_buffer", "stage_epilogue"})
    if (R() % 2)
      Out.push_back({Key, pick(R, {"on", "off"})});
  if (R() % 2)
    Out.push_back({"swizzle", pick(R, {"auto", "off"})});
  if (R() % 3 == 0)
    Out.push_back({"copy_engine", pick(R, {"auto", "off"})});
  if (R() % 2)
    Out.push_back({"block_order", pick(R, {"rows", "grouped"})});
  return Out;
}

//===----------------------------------------------------------------------===//
// Running one check, isolated
//===----------------------------------------------------------------------===//

/// How a program is checked: everything a failure file must record.
struct RunSpec {
  std::string Sizes;
  uint64_t InputSeed = 1;
  bool ExactInputs = true, StagesBitExact = true;
  std::vector<std::vector<std::string>> Pipelines;
};

struct Outcome {
  bool Ok = true;
  /// What must stay the same while minimizing: "rejected: <message>",
  /// "<stage>: <kind of problem>", "crash: signal 6", "timeout".
  std::string Signature;
  std::string Detail; ///< the check's output or the crash's stderr
};

/// The kind of problem of a FAIL line: "mismatch", "interpreter",
/// "verifier", "not bit-exact", or the round-trip message.
std::string problemKind(StringRef Line) {
  size_t At = Line.find("FAIL");
  StringRef Stage = Line.take_front(At).rtrim();
  Stage = Stage.substr(Stage.rfind(' ') + 1);
  StringRef Rest = Line.substr(At);
  size_t Tol = Rest.find(")  ");
  StringRef Problem = Tol == StringRef::npos ? Rest : Rest.substr(Tol + 3);
  return (Stage + ": " + Problem.split(':').first).str();
}

Outcome checkInProcess(const std::string &Text, const RunSpec &Spec) {
  Outcome O;
  SourceMgr SM;
  std::string Diags;
  raw_string_ostream DiagOS(Diags);
  SM.setDiagHandler(
      [](const SMDiagnostic &D, void *Ctx) {
        D.print("", *static_cast<raw_string_ostream *>(Ctx), false);
      },
      &DiagOS);
  unsigned Id =
      SM.AddNewSourceBuffer(MemoryBuffer::getMemBufferCopy(Text, "smith.tdsl"), SMLoc());
  DiagEngine DE(SM);
  std::unique_ptr<ast::Module> M = parseAndCheck(SM, Id, DE);
  if (!M) {
    O.Ok = false;
    StringRef First = StringRef(DiagOS.str()).split('\n').first;
    size_t E = First.find("error: ");
    O.Signature = "rejected: " + (E == StringRef::npos ? First : First.substr(E + 7)).str();
    O.Detail = DiagOS.str();
    return O;
  }
  // The schedule as tdslc checks it before any pass (sm_90's shared
  // memory): a drawn schedule it refuses is the generator's bug.
  for (const auto &K : M->Kernels)
    for (const ScheduleProblem &P :
         checkSchedule(lowerKernel(*K, [&](SMLoc L) { return DE.lineOf(L); }))) {
      O.Ok = false;
      O.Signature = "rejected: schedule '" + P.Key + "': " + P.Message;
      return O;
    }
  // The launches the program states it must have (the chains flavour),
  // against the fusion stage's plan under the default options.
  if (size_t At = Text.find("# launches: "); At != std::string::npos) {
    unsigned Want = 0;
    if (StringRef(Text).substr(At + 12).split('\n').first.trim().getAsInteger(10, Want)) {
      O.Ok = false;
      O.Signature = "rejected: a '# launches:' line without a count";
      return O;
    }
    const ast::Kernel &K = *M->Kernels.front();
    auto LineOf = [&](SMLoc L) { return DE.lineOf(L); };
    graph::KernelGraph G = graph::buildGraph(K, LineOf);
    graph::FusionPlan Plan = graph::planFusion(G, graph::fusionOptions(K, {}));
    if (Plan.Groups.size() != Want) {
      O.Ok = false;
      O.Signature = "fusion: " + std::to_string(Plan.Groups.size()) + " launch(es) planned, " +
                    std::to_string(Want) + " expected";
      raw_string_ostream GS(O.Detail);
      graph::printGraph(G, Plan, GS);
      return O;
    }
  }
  if (!InjectFailure.empty() && StringRef(Text).contains(InjectFailure)) {
    O.Ok = false;
    O.Signature = "injected: '" + InjectFailure + "'";
    return O;
  }
  for (const std::vector<std::string> &Pipeline : Spec.Pipelines) {
    CheckOptions Opts;
    std::string Problem = parseSizes(Spec.Sizes, Opts);
    if (!Problem.empty()) {
      O.Ok = false;
      O.Signature = "bad sizes: " + Problem;
      return O;
    }
    Opts.Seed = Spec.InputSeed;
    Opts.ExactInputs = Spec.ExactInputs;
    Opts.StagesBitExact = Spec.StagesBitExact;
    Opts.Pipeline = Pipeline;
    Opts.LineOf = [&](SMLoc L) { return DE.lineOf(L); };
    std::string Out, Err;
    raw_string_ostream OS(Out), ES(Err);
    bool Ok = runCheck(*M, Opts, OS, ES);
    O.Detail += "pipeline: " + (Pipeline.empty() ? "(none)" : join(Pipeline, ",")) + "\n" +
                OS.str() + ES.str();
    if (!Ok) {
      O.Ok = false;
      SmallVector<StringRef, 16> Lines;
      StringRef(OS.str()).split(Lines, '\n');
      for (StringRef L : Lines)
        if (L.contains("FAIL")) {
          O.Signature = problemKind(L);
          break;
        }
      if (O.Signature.empty())
        O.Signature = "check error: " + StringRef(ES.str()).split('\n').first.str();
      return O;
    }
  }
  return O;
}

/// checkInProcess in a forked child: a crash or a hang becomes an Outcome.
Outcome checkIsolated(const std::string &Text, const RunSpec &Spec) {
  int Pipe[2];
  if (pipe(Pipe) != 0)
    return checkInProcess(Text, Spec);
  std::FILE *ErrFile = std::tmpfile();
  outs().flush();
  fflush(stdout);
  fflush(stderr);
  pid_t Pid = fork();
  if (Pid == 0) {
    close(Pipe[0]);
    if (ErrFile)
      dup2(fileno(ErrFile), 2);
    alarm(Timeout);
    Outcome O = checkInProcess(Text, Spec);
    std::string Msg = (O.Ok ? "P" : "F") + O.Signature + '\n' + O.Detail;
    for (size_t Done = 0; Done < Msg.size();) {
      ssize_t N = write(Pipe[1], Msg.data() + Done, Msg.size() - Done);
      if (N <= 0)
        break;
      Done += static_cast<size_t>(N);
    }
    _exit(0);
  }
  close(Pipe[1]);
  std::string Msg;
  char Buf[4096];
  for (ssize_t N; (N = read(Pipe[0], Buf, sizeof(Buf))) > 0;)
    Msg.append(Buf, static_cast<size_t>(N));
  close(Pipe[0]);
  int Status = 0;
  waitpid(Pid, &Status, 0);
  std::string Stderr;
  if (ErrFile) {
    std::rewind(ErrFile);
    for (size_t N; (N = std::fread(Buf, 1, sizeof(Buf), ErrFile)) > 0;)
      Stderr.append(Buf, N);
    std::fclose(ErrFile);
  }
  Outcome O;
  if (WIFEXITED(Status) && WEXITSTATUS(Status) == 0 && !Msg.empty()) {
    O.Ok = Msg[0] == 'P';
    auto [Sig, Detail] = StringRef(Msg).drop_front().split('\n');
    O.Signature = Sig.str();
    O.Detail = Detail.str() + Stderr;
    return O;
  }
  O.Ok = false;
  if (WIFSIGNALED(Status))
    O.Signature = WTERMSIG(Status) == SIGALRM
                      ? "timeout"
                      : "crash: signal " + std::to_string(WTERMSIG(Status));
  else
    O.Signature = "crash: exit " + std::to_string(WEXITSTATUS(Status));
  O.Detail = Stderr;
  return O;
}

//===----------------------------------------------------------------------===//
// Minimizing and writing failures
//===----------------------------------------------------------------------===//

RunSpec specFor(const smith::Program &P, const RunSpec &Base) {
  RunSpec S = Base;
  S.Sizes = smith::sizesString(P);
  return S;
}

smith::Program minimize(smith::Program P, const RunSpec &Base, const std::string &Signature,
                        unsigned &Checks) {
  constexpr unsigned MaxChecks = 3000;
  for (bool Improved = true; Improved && Checks < MaxChecks;) {
    Improved = false;
    for (smith::Program &C : smith::shrinkCandidates(P)) {
      if (++Checks > MaxChecks)
        break;
      Outcome O = checkIsolated(smith::print(C), specFor(C, Base));
      if (!O.Ok && O.Signature == Signature) {
        P = std::move(C);
        Improved = true;
        break;
      }
    }
  }
  return P;
}

std::string optionsLine(const RunSpec &S) {
  std::string Pipelines;
  for (const auto &P : S.Pipelines)
    Pipelines += (Pipelines.empty() ? "" : ";") + (P.empty() ? "-" : join(P, ","));
  return "sizes=" + S.Sizes + " seed=" + std::to_string(S.InputSeed) +
         " exact-inputs=" + (S.ExactInputs ? "1" : "0") +
         " stages-bit-exact=" + (S.StagesBitExact ? "1" : "0") + " pipelines=" + Pipelines;
}

/// The tdslc command that runs the same check, where tdslc can express the
/// pipeline (an -O level's default list) and the comparison.
std::string tdslcCommand(const std::string &File, const RunSpec &S,
                         const std::vector<std::string> &Pipeline) {
  int Level = -1;
  for (int L = 0; L <= 3; ++L)
    if (defaultPipeline(L) == Pipeline)
      Level = L;
  if (Level < 0 || S.StagesBitExact)
    return "";
  return "tdslc " + File + " --check --sizes " + S.Sizes + " --seed " +
         std::to_string(S.InputSeed) + (S.ExactInputs ? " --exact-inputs" : "") + " -O" +
         std::to_string(Level);
}

bool parseOptionsLine(StringRef Text, RunSpec &S, std::string &Error) {
  size_t At = Text.find("tdsl-smith-options:");
  if (At == StringRef::npos) {
    Error = "no '# tdsl-smith-options:' line";
    return false;
  }
  StringRef Line = Text.substr(At).split('\n').first.drop_front(strlen("tdsl-smith-options:"));
  SmallVector<StringRef, 8> Words;
  SplitString(Line, Words, " ");
  for (StringRef W : Words) {
    auto [Key, Value] = W.split('=');
    if (Key == "sizes")
      S.Sizes = Value.str();
    else if (Key == "seed")
      Value.getAsInteger(10, S.InputSeed);
    else if (Key == "exact-inputs")
      S.ExactInputs = Value == "1";
    else if (Key == "stages-bit-exact")
      S.StagesBitExact = Value == "1";
    else if (Key == "pipelines") {
      SmallVector<StringRef, 4> Lists;
      Value.split(Lists, ';');
      for (StringRef L : Lists) {
        std::vector<std::string> Passes;
        if (L != "-") {
          SmallVector<StringRef, 8> Names;
          L.split(Names, ',', -1, false);
          for (StringRef N : Names) {
            if (!findPass(N.str())) {
              Error = "unknown pass '" + N.str() + "'";
              return false;
            }
            Passes.push_back(N.str());
          }
        }
        S.Pipelines.push_back(Passes);
      }
    } else {
      Error = "unknown option '" + Key.str() + "'";
      return false;
    }
  }
  return true;
}

int reproduce() {
  auto Buf = MemoryBuffer::getFile(Reproduce, /*IsText=*/true);
  if (!Buf) {
    errs() << "tdsl-smith: error: cannot open '" << Reproduce << "'\n";
    return 2;
  }
  RunSpec S;
  std::string Error;
  if (!parseOptionsLine((*Buf)->getBuffer(), S, Error)) {
    errs() << "tdsl-smith: error: " << Reproduce << ": " << Error << "\n";
    return 2;
  }
  Outcome O = checkIsolated((*Buf)->getBuffer().str(), S);
  outs() << O.Detail;
  outs() << (O.Ok ? "tdsl-smith: pass\n" : "tdsl-smith: FAIL: " + O.Signature + "\n");
  return O.Ok ? 0 : 1;
}

std::string writeFailure(const smith::Program &Original, const smith::Program &Min,
                         const RunSpec &Base, unsigned Index, const Outcome &O) {
  sys::fs::create_directories(OutDir);
  std::string Name = "smith-s" + std::to_string(Seed) + "-p" + std::to_string(Index) + ".tdsl";
  SmallString<256> Path(OutDir);
  sys::path::append(Path, Name);
  RunSpec S = specFor(Min, Base);
  std::string Header;
  raw_string_ostream H(Header);
  H << "# tdsl-smith failure: " << O.Signature << "\n";
  SmallVector<StringRef, 8> Lines;
  StringRef(O.Detail).split(Lines, '\n');
  for (StringRef L : Lines)
    if (L.contains("FAIL") || L.contains("error") || L.startswith("pipeline"))
      H << "#   " << L << "\n";
  H << "# Program " << Index << " of `tdsl-smith --seed " << Seed << "` ("
    << (Min.Exact ? "exact" : "float") << " flavour), minimized from "
    << Original.Body.size() << " statement(s) to " << Min.Body.size() << ".\n";
  H << "# Reproduce: tdsl-smith --reproduce " << Path << "\n";
  H << "#   (regenerate: tdsl-smith --seed " << Seed << " --only " << Index
    << " --no-minimize)\n";
  for (const auto &P : S.Pipelines) {
    std::string Cmd = tdslcCommand(std::string(Path), S, P);
    if (!Cmd.empty())
      H << "#   or: " << Cmd << "\n";
  }
  H << "# tdsl-smith-options: " << optionsLine(S) << "\n";
  std::error_code EC;
  raw_fd_ostream F(Path, EC);
  if (EC) {
    errs() << "tdsl-smith: error: cannot write '" << Path << "': " << EC.message() << "\n";
    return "";
  }
  F << H.str() << smith::print(Min);
  return std::string(Path);
}

/// --emit-dir: program I as DIR/smith-<seed>-<I>.tdsl, headed by the sizes
/// it is valid at and the --dump-io flags of its inputs (gpu_check.py reads
/// both). False, with the error printed, if it cannot be written.
bool emitProgram(const std::string &Text, const RunSpec &S, unsigned I) {
  if (std::error_code EC = sys::fs::create_directories(EmitDir)) {
    errs() << "tdsl-smith: error: cannot create '" << EmitDir << "': " << EC.message() << "\n";
    return false;
  }
  SmallString<256> Path(EmitDir);
  sys::path::append(Path, "smith-" + std::to_string(Seed) + "-" + std::to_string(I) + ".tdsl");
  std::error_code EC;
  raw_fd_ostream F(Path, EC, sys::fs::OF_Text);
  if (!EC) {
    F << "# tdsl-smith --seed " << Seed << " --only " << I << "\n"
      << "# sizes: " << S.Sizes << "\n"
      << "# dump-io: --seed " << S.InputSeed << (S.ExactInputs ? " --exact-inputs" : "") << "\n"
      << Text;
    F.close();
  }
  if (EC || F.has_error()) {
    errs() << "tdsl-smith: error: cannot write '" << Path << "'\n";
    F.clear_error();
    return false;
  }
  return true;
}

} // namespace

int main(int Argc, char **Argv) {
  InitLLVM Init(Argc, Argv);
  cl::HideUnrelatedOptions(SmithCategory);
  cl::ParseCommandLineOptions(Argc, Argv,
                              "tdsl-smith: random .tdsl programs through every pipeline "
                              "stage, checked against the reference evaluator\n");
  if (!Reproduce.empty())
    return reproduce();

  auto Start = std::chrono::steady_clock::now();
  unsigned Checked = 0, Exact = 0, Failures = 0, MinChecks = 0;
  std::set<std::string> ConfigsSeen;
  unsigned First = Only >= 0 ? static_cast<unsigned>(Only) : 0;
  unsigned Last = Only >= 0 ? First + 1 : Count.getValue();
  for (unsigned I = First; I < Last; ++I) {
    // One stream per program: program I is the same whatever --count is.
    Rng R(Seed * 0x9E3779B97F4A7C15ull + I * 0xBF58476D1CE4E5B9ull + 1);
    smith::GenOptions G;
    G.Exact = FlavourOpt == Flavour::Exact || FlavourOpt == Flavour::Chains ||
              (FlavourOpt == Flavour::Mixed && R() % 10 < 7);
    G.WorkBudget = Budget;
    bool Chains = FlavourOpt == Flavour::Chains;
    smith::Program P = Chains ? smith::generateChain(R) : smith::generate(R, G);
    // (A chains program keeps the default schedule its launches assume.)
    for (const ScheduleKnob &K : ScheduleKnobs)
      if (R() % 2 && !Chains)
        P.Schedule.push_back({K.Key, K.Value(R)});
    switch (Chains ? 2 : R() % 3) {
    case 0:
      for (auto &KV : contractionKnobs(R))
        P.Schedule.push_back(KV);
      break;
    case 1:
      for (auto &KV : mmaKnobs(R, smith::print(P).find("f64") != std::string::npos))
        P.Schedule.push_back(KV);
      break;
    default: break;
    }
    if (R() % 2 && !Chains)
      for (auto &KV : reductionKnobs(R))
        P.Schedule.push_back(KV);
    PipelineConfig Random;
    for (const PipelineKnob &K : PipelineKnobs)
      K.Randomize(R, Random);
    RunSpec Spec;
    Spec.InputSeed = R() % 1000 + 1;
    Spec.ExactInputs = Spec.StagesBitExact = P.Exact;
    Spec.Pipelines = {defaultPipeline(3)};
    if (Random.passes() != defaultPipeline(3))
      Spec.Pipelines.push_back(Random.passes());
    for (const auto &Pl : Spec.Pipelines)
      ConfigsSeen.insert(join(Pl, ","));
    Spec = specFor(P, Spec);

    std::string Text = smith::print(P);
    if (!EmitDir.empty()) {
      if (!emitProgram(Text, Spec, I))
        return 1;
      ++Checked;
      Exact += P.Exact;
      continue;
    }
    if (PrintPrograms)
      outs() << "# program " << I << " --sizes " << Spec.Sizes << "\n" << Text;
    Outcome O = checkIsolated(Text, Spec);
    ++Checked;
    Exact += P.Exact;
    if (Verbose)
      outs() << "program " << I << ": " << (P.Exact ? "exact" : "float") << ", "
             << P.Body.size() << " statement(s), sizes " << Spec.Sizes << ": "
             << (O.Ok ? "ok" : "FAIL: " + O.Signature) << "\n";
    if (O.Ok)
      continue;
    ++Failures;
    outs() << "tdsl-smith: program " << I << " FAILED: " << O.Signature << "\n";
    if (Verbose)
      outs() << Text << O.Detail;
    // A program of the chains flavour is a rule met or missed by
    // construction; shrunk, it would be neither: written as generated.
    bool Keep = NoMinimize || P.Launches >= 0;
    smith::Program Min = Keep ? P : minimize(P, Spec, O.Signature, MinChecks);
    Outcome MinO = checkIsolated(smith::print(Min), specFor(Min, Spec));
    std::string Path = writeFailure(P, Min, Spec, I, MinO);
    outs() << "  minimized to " << Min.Body.size() << " statement(s), sizes "
           << smith::sizesString(Min) << ": " << Path << "\n";
    outs().flush();
    if (Failures >= MaxFailures) {
      outs() << "tdsl-smith: stopping after " << Failures << " failure(s)\n";
      break;
    }
  }
  if (!EmitDir.empty()) {
    outs() << "tdsl-smith: wrote " << Checked << " program(s) (" << Exact << " exact, "
           << Checked - Exact << " float) to " << EmitDir << "\n";
    return 0;
  }
  double Secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
  outs() << "tdsl-smith: " << Checked << " program(s) checked (" << Exact << " exact, "
         << Checked - Exact << " float), " << ConfigsSeen.size()
         << " pipeline configuration(s), " << Failures << " failure(s)";
  if (MinChecks)
    outs() << ", " << MinChecks << " minimization check(s)";
  outs() << format(", %.1fs\n", Secs);
  return Failures ? 1 : 0;
}
