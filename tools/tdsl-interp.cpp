//===- tdsl-interp.cpp - Runs one loop-IR function on random inputs -------===//
//
// How lit tests reach the interpreter (the CI oracle) without a front end:
//
//   tdsl-interp kernel.tir --sizes M=4,N=3 [--seed S] [--func NAME]
//               [--print-outputs] | FileCheck kernel.tir
//
// Inputs get seeded random values (floats uniform in [-1, 1] rounded to
// their dtype, integers in [-4, 4]); outputs start poisoned (NaN, and
// uninitialized to the checker). The run's verdict goes to stdout, "ok" or
// "error: <message>", so a test can FileCheck it; unreadable or invalid IR
// and bad options are reported on stderr. Exit status: 0 ok, 1 otherwise.
//
//===----------------------------------------------------------------------===//
#include "ir/IRParser.h"
#include "ir/Interpreter.h"
#include "ir/Verifier.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <random>

using namespace llvm;
using namespace tdsl;

static cl::OptionCategory InterpCategory("tdsl-interp options");

static cl::opt<std::string> InputFile(cl::Positional, cl::desc("<input IR file, '-' for stdin>"),
                                      cl::init("-"), cl::cat(InterpCategory));
static cl::opt<std::string> SizesOpt("sizes", cl::desc("Size symbols, e.g. M=4,N=3"),
                                     cl::value_desc("NAME=INT,..."), cl::cat(InterpCategory));
static cl::opt<uint64_t> Seed("seed", cl::desc("Seed of the random inputs (default 1)"),
                              cl::init(1), cl::cat(InterpCategory));
static cl::opt<std::string> FuncName("func",
                                     cl::desc("Function to run (needed if there are several)"),
                                     cl::cat(InterpCategory));
static cl::opt<bool> PrintOutputs("print-outputs",
                                  cl::desc("Print every output element, one per line"),
                                  cl::cat(InterpCategory));
static cl::opt<bool> NoRaceCheck("no-race-check", cl::desc("Do not report data races"),
                                 cl::cat(InterpCategory));
static cl::opt<bool> NoVerify("no-verify", cl::desc("Do not run the IR verifier first"),
                              cl::cat(InterpCategory));
static cl::opt<unsigned> TensorOffset(
    "tensor-offset",
    cl::desc("Tensors passed in start this many bytes past a 256-byte boundary, as aligned() "
             "sees it (default 0; 4 takes the paths for tensors not 16-byte aligned)"),
    cl::init(0), cl::cat(InterpCategory));
static cl::opt<uint64_t> MaxSteps("max-steps",
                                  cl::desc("Stop after this many statements (0: no limit)"),
                                  cl::init(1'000'000'000), cl::cat(InterpCategory));

static int userError(const Twine &Msg) {
  WithColor::error(errs(), "tdsl-interp") << Msg << "\n";
  return 1;
}

static bool parseSizes(StringRef Text, std::map<std::string, int64_t> &Sizes, std::string &Error) {
  SmallVector<StringRef, 8> Parts;
  Text.split(Parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef P : Parts) {
    auto [Name, Value] = P.trim().split('=');
    int64_t V;
    if (Name.empty() || Value.trim().getAsInteger(10, V)) {
      Error = ("invalid size '" + P.trim() + "': expected NAME=INTEGER").str();
      return false;
    }
    Sizes[Name.trim().str()] = V;
  }
  return true;
}

/// One stream per tensor, so adding a tensor leaves the others' values.
static std::mt19937_64 streamFor(uint64_t S, const std::string &Tensor) {
  uint64_t H = S * 0x9E3779B97F4A7C15ull;
  for (char C : Tensor)
    H = (H ^ static_cast<unsigned char>(C)) * 0x100000001B3ull;
  return std::mt19937_64(H);
}

static double randomValue(DType T, std::mt19937_64 &Rng) {
  if (T == DType::Bool)
    return static_cast<double>(Rng() & 1);
  if (isInteger(T))
    return static_cast<double>(static_cast<int64_t>(Rng() % 9) - 4);
  // 53 random bits give a double uniform in [-1, 1); then the dtype's rounding.
  double U = std::ldexp(static_cast<double>(Rng() >> 11), -53) * 2.0 - 1.0;
  return convertValue(U, DType::F64, T);
}

/// The shortest decimal that reads back as the same value of T.
static std::string formatValue(double V, DType T) {
  if (!isFloat(T))
    return std::to_string(static_cast<int64_t>(V));
  if (std::isnan(V))
    return "nan";
  if (std::isinf(V))
    return V < 0 ? "-inf" : "inf";
  char Buf[64];
  for (int Digits = 1; Digits <= 17; ++Digits) {
    std::snprintf(Buf, sizeof(Buf), "%.*g", Digits, V);
    if (convertValue(std::strtod(Buf, nullptr), DType::F64, T) == V)
      break;
  }
  return Buf;
}

static void printTensor(const std::string &Name, const ir::TensorData &D, raw_ostream &OS) {
  std::vector<int64_t> Idx(D.Shape.size(), 0);
  for (size_t E = 0; E < D.Values.size(); ++E) {
    OS << Name << "[";
    for (size_t I = 0; I < Idx.size(); ++I)
      OS << (I ? ", " : "") << Idx[I];
    OS << "] = " << formatValue(D.Values[E], D.Type) << "\n";
    for (size_t I = Idx.size(); I-- > 0;) {
      if (++Idx[I] < D.Shape[I])
        break;
      Idx[I] = 0;
    }
  }
}

int main(int argc, char **argv) {
  InitLLVM Init(argc, argv);
  cl::HideUnrelatedOptions(InterpCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "tdsl-interp: runs a loop-IR function on the CPU interpreter\n");

  std::map<std::string, int64_t> Sizes;
  std::string Error;
  if (!parseSizes(SizesOpt, Sizes, Error))
    return userError(Error);

  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFileOrSTDIN(InputFile);
  if (!Buf)
    return userError("cannot read '" + InputFile + "': " + Buf.getError().message());
  SourceMgr SM;
  installDiagnosticPrinter(SM);
  unsigned BufferID = SM.AddNewSourceBuffer(std::move(*Buf), SMLoc());
  DiagEngine Diags(SM);
  std::optional<ir::Module> M = ir::parseIRModule(SM, BufferID, Diags);
  if (!M)
    return 1;
  if (!NoVerify) {
    std::vector<std::string> Problems = ir::verifyModule(*M);
    for (const std::string &P : Problems)
      userError("invalid IR: " + P);
    if (!Problems.empty())
      return 1;
  }

  const ir::Func *F = nullptr;
  for (const ir::Func &Candidate : M->Funcs)
    if (FuncName.empty() ? M->Funcs.size() == 1 : Candidate.Name == FuncName)
      F = &Candidate;
  if (!F) {
    std::vector<std::string> Names;
    for (const ir::Func &Candidate : M->Funcs)
      Names.push_back(Candidate.Name);
    if (FuncName.empty())
      return userError("the module has " + Twine(Names.size()) +
                       " functions; pick one with --func (" + join(Names, ", ") + ")");
    return userError("no function '" + FuncName + "' (the module has " + join(Names, ", ") + ")");
  }
  for (const std::string &S : F->Sizes)
    if (!Sizes.count(S))
      return userError("--sizes gives no value for '" + S + "'");

  std::map<std::string, ir::TensorData> Args;
  for (const ir::Buffer &P : F->Params) {
    ir::TensorData D;
    D.Type = P.Type;
    std::optional<std::vector<int64_t>> Shape = ir::evaluateShape(P, Sizes);
    if (!Shape || llvm::any_of(*Shape, [](int64_t E) { return E < 0; }))
      return userError("cannot size parameter '" + P.Name + "' with the sizes given");
    D.Shape = *Shape;
    // The same bound the interpreter puts on the buffers it allocates.
    int64_t Elems = 1;
    for (int64_t E : D.Shape)
      if (__builtin_mul_overflow(Elems, E, &Elems) || Elems > (int64_t(1) << 28))
        return userError("parameter '" + P.Name + "' is too large to interpret (over 2^28 elements)");
    size_t N = static_cast<size_t>(Elems);
    if (P.Role == ir::BufferRole::Input) {
      std::mt19937_64 Rng = streamFor(Seed, P.Name);
      for (size_t I = 0; I < N; ++I)
        D.Values.push_back(randomValue(P.Type, Rng));
    } else {
      // NaN where the dtype has one; the interpreter reports reads of
      // unwritten elements in any case.
      D.Values.assign(N, isFloat(P.Type) ? NAN : dtypeLowest(P.Type));
    }
    Args[P.Name] = std::move(D);
  }

  ir::InterpOptions Opts;
  Opts.CheckRaces = !NoRaceCheck;
  Opts.MaxSteps = MaxSteps;
  Opts.ParamByteOffset = TensorOffset;
  ir::InterpResult R = ir::interpret(*F, Sizes, Args, Opts);
  if (!R.Ok) {
    outs() << "error: " << R.Error;
    if (R.Line)
      outs() << " (statement @" << R.Line << ")";
    outs() << "\n";
    return 1;
  }
  if (PrintOutputs)
    for (const ir::Buffer &P : F->Params)
      if (P.Role != ir::BufferRole::Input)
        printTensor(P.Name, Args[P.Name], outs());
  outs() << "ok\n";
  return 0;
}
