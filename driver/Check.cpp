//===- Check.cpp - tdslc --check: every kernel, every stage, vs the reference -===//
#include "driver/Check.h"
#include "driver/SignatureJSON.h"
#include "graph/Fuse.h"

#include "frontend/Lower.h"
#include "frontend/Reference.h"
#include "ir/Diagnostics.h"
#include "ir/IRParser.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Pass.h"
#include "passes/PassManager.h"
#include "passes/PassUtils.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/EndianStream.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <limits>
#include <cstdio>
#include <random>
#include <set>

namespace tdsl {

double dtypeTolerance(DType T) {
  switch (T) {
  case DType::F64: return 1e-12;
  case DType::F32: return 1e-5;
  case DType::TF32: return 5e-3;
  case DType::F16: return 1e-3;
  case DType::BF16: return 1.6e-2;
  default: return 0.0;
  }
}

std::string parseSizes(llvm::StringRef Text, CheckOptions &Opts) {
  // Dims are affine in the sizes with small coefficients: capping the sizes
  // keeps every dim expression far from int64 overflow.
  constexpr int64_t MaxSize = int64_t(1) << 40;
  llvm::SmallVector<llvm::StringRef, 8> Parts;
  Text.split(Parts, ',', -1, /*KeepEmpty=*/false);
  if (Parts.empty())
    return "--sizes needs a value like M=33,N=17 or 7";
  for (llvm::StringRef P : Parts) {
    P = P.trim();
    auto [Name, Value] = P.split('=');
    int64_t V;
    if (Value.empty() && !P.contains('=')) {
      if (Name.getAsInteger(10, V) || V < 1 || V > MaxSize)
        return ("invalid size '" + P + "': sizes are integers from 1 to 2^40").str();
      Opts.DefaultSize = V;
      continue;
    }
    if (Name.empty() || Value.getAsInteger(10, V) || V < 1 || V > MaxSize)
      return ("invalid size '" + P + "': expected NAME=INTEGER with INTEGER from 1 to 2^40")
          .str();
    if (!Opts.Sizes.emplace(Name.str(), V).second)
      return ("--sizes gives '" + Name + "' twice").str();
  }
  return "";
}

std::string unusedSizes(const ast::Module &M, const CheckOptions &Opts) {
  // A misspelt name (k for K) would otherwise leave its size to the
  // default one without a word.
  std::set<std::string> Known;
  for (const auto &K : M.Kernels)
    Known.insert(K->SizeSymbols.begin(), K->SizeSymbols.end());
  for (const auto &[Name, V] : Opts.Sizes)
    if (!Known.count(Name))
      return "--sizes names '" + Name + "', which is not a size of any kernel here" +
             (Known.empty() ? std::string(" (they have none)")
                            : " (the sizes: " + llvm::join(Known, ", ") + ")");
  return "";
}

namespace {

/// A deterministic stream per (seed, kernel, tensor): inputs do not change
/// when another tensor or kernel is added.
std::mt19937_64 streamFor(uint64_t Seed, const std::string &Kernel,
                          const std::string &Tensor) {
  uint64_t H = Seed * 0x9E3779B97F4A7C15ull;
  for (char C : Kernel + "/" + Tensor)
    H = (H ^ static_cast<unsigned char>(C)) * 0x100000001B3ull;
  return std::mt19937_64(H);
}

ir::TensorData randomTensor(const ast::Tensor &T, const std::vector<int64_t> &Shape,
                            std::mt19937_64 &Rng, bool Exact) {
  ir::TensorData D;
  D.Type = T.Type;
  D.Shape = Shape;
  int64_t N = D.numElements();
  D.Values.resize(static_cast<size_t>(N));
  for (double &V : D.Values) {
    if (Exact) {
      V = static_cast<double>(std::uniform_int_distribution<int>(-4, 4)(Rng));
    } else if (isFloat(T.Type)) {
      V = convertValue(std::uniform_real_distribution<double>(-1.0, 1.0)(Rng), DType::F64,
                       T.Type);
    } else if (T.Type == DType::I8) {
      V = static_cast<double>(std::uniform_int_distribution<int>(-128, 127)(Rng));
    } else {
      V = static_cast<double>(std::uniform_int_distribution<int>(-1000, 1000)(Rng));
    }
  }
  return D;
}

/// The least precise float type a kernel rounds to (outputs, intermediates,
/// casts) decides the tolerance of all its outputs.
struct ToleranceModel {
  DType Loosest = DType::F64;
  int64_t LongestReduction = 1;

  void note(DType T) {
    if (isFloat(T) && dtypeTolerance(T) > dtypeTolerance(Loosest))
      Loosest = T;
  }
  void scan(const ast::Expr &E) {
    switch (E.Kind) {
    case ast::ExprKind::Unary: scan(*static_cast<const ast::Unary &>(E).Operand); break;
    case ast::ExprKind::Binary: {
      const auto &B = static_cast<const ast::Binary &>(E);
      note(B.OperandType);
      scan(*B.LHS);
      scan(*B.RHS);
      break;
    }
    case ast::ExprKind::Select: {
      const auto &S = static_cast<const ast::Select &>(E);
      scan(*S.Cond);
      scan(*S.Then);
      scan(*S.Else);
      break;
    }
    case ast::ExprKind::Call: {
      const auto &C = static_cast<const ast::Call &>(E);
      if (C.Fn == ast::Callee::Cast)
        note(C.CastTo);
      else
        note(C.ArgType);
      for (const auto &A : C.Args)
        scan(*A);
      break;
    }
    default: break;
    }
  }
  double tolerance() const {
    return dtypeTolerance(Loosest) *
           std::max(1.0, std::log2(static_cast<double>(LongestReduction)));
  }
};

ToleranceModel toleranceFor(const ast::Kernel &K, const std::map<std::string, int64_t> &Sizes) {
  ToleranceModel TM;
  for (const auto &T : K.Outputs)
    TM.note(T->Type);
  for (const auto &T : K.Intermediates)
    TM.note(T->Type);
  for (const auto &S : K.Body) {
    TM.scan(*S->Value);
    int64_t R = 1;
    for (const std::string &I : S->Reduced)
      R *= std::max<int64_t>(1, S->Ranges.at(I).evaluate(Sizes));
    TM.LongestReduction = std::max(TM.LongestReduction, R);
  }
  return TM;
}

struct Comparison {
  bool Ok = true;
  double MaxErr = 0; ///< largest error relative to the output's scale
  std::string Where; ///< first mismatch
};

std::string indexString(const std::vector<int64_t> &Shape, int64_t Flat) {
  std::vector<int64_t> Idx(Shape.size());
  for (size_t D = Shape.size(); D-- > 0;) {
    Idx[D] = Flat % Shape[D];
    Flat /= Shape[D];
  }
  std::string S = "[";
  for (size_t D = 0; D < Idx.size(); ++D)
    S += (D ? ", " : "") + std::to_string(Idx[D]);
  return S + "]";
}

/// V with the digits that tell it apart (9 significant: an f32 exactly),
/// so that a mismatch of small values does not read "0.00, expected 0.00".
std::string exactString(double V) {
  char Buf[40];
  std::snprintf(Buf, sizeof(Buf), "%.9g", V);
  return Buf;
}

/// The least normal value of float type T: below it a value keeps fewer
/// bits, so an error there is bounded absolutely, not relatively.
double leastNormal(DType T) {
  switch (T) {
  case DType::F64: return std::numeric_limits<double>::min();
  case DType::F16: return 6.103515625e-05;
  default: return static_cast<double>(std::numeric_limits<float>::min());
  }
}

/// |out - ref| <= tol * (max(|ref|, scale) + mean |ref|), where scale is
/// the size of the terms the reference computed the element from
/// (frontend/Reference.h; |ref| where nothing cancelled): relative where
/// values are large, relative to the terms where they cancel, absolute
/// (on the output's own scale) near 0; and never tighter than tol times
/// the dtype's least normal value, where values underflow.
void compare(const std::string &Name, const ir::TensorData &Ref, const std::vector<double> &Terms,
             const ir::TensorData &Out, double Tol, Comparison &C) {
  double Scale = 0;
  for (double V : Ref.Values)
    if (std::isfinite(V))
      Scale += std::fabs(V);
  Scale = Ref.Values.empty() ? 0 : Scale / static_cast<double>(Ref.Values.size());
  if (Scale == 0)
    Scale = 1e-30;
  for (size_t I = 0; I < Ref.Values.size(); ++I) {
    double R = Ref.Values[I], O = I < Out.Values.size() ? Out.Values[I] : NAN;
    bool Match;
    double Err = 0;
    if (std::isnan(R) || std::isnan(O))
      Match = std::isnan(R) && std::isnan(O);
    else if (std::isinf(R) || std::isinf(O))
      Match = R == O;
    else {
      double Size = std::fabs(R);
      if (I < Terms.size() && Terms[I] > Size)
        Size = Terms[I];
      Err = std::fabs(O - R) / (Size + Scale);
      Match = isFloat(Ref.Type) ? Err <= Tol || std::fabs(O - R) <= Tol * leastNormal(Ref.Type)
                                : O == R;
    }
    C.MaxErr = std::max(C.MaxErr, Err);
    if (!Match && C.Ok) {
      C.Ok = false;
      C.Where = Name + indexString(Ref.Shape, static_cast<int64_t>(I)) + " = " +
                exactString(O) + ", expected " +
                exactString(R);
    }
  }
}

/// The first element where Out differs from the naive stage's outputs in
/// any bit (NaN matches NaN, 0 matches -0), or "".
std::string bitDifference(const std::map<std::string, ir::TensorData> &Naive,
                          const std::map<std::string, ir::TensorData> &Out) {
  for (const auto &[Name, N] : Naive) {
    const ir::TensorData &O = Out.at(Name);
    for (size_t I = 0; I < N.Values.size(); ++I) {
      double A = N.Values[I], B = I < O.Values.size() ? O.Values[I] : NAN;
      // 0 and -0 count as one: max and min leave the sign of a zero between
      // them open (as fmaxf does), so a reduction's order may pick either.
      bool Same = (std::isnan(A) && std::isnan(B)) ||
                  (A == B && (A == 0 || std::signbit(A) == std::signbit(B)));
      if (!Same)
        return "not bit-exact: " + Name + indexString(N.Shape, static_cast<int64_t>(I)) +
               " = " + exactString(B) + ", the naive stage gave " +
               exactString(A);
    }
  }
  return "";
}

/// Print -> parse -> print must be the identity; returns the problem or "".
std::string roundTrip(const ir::Func &F) {
  ir::Module M;
  M.Funcs.push_back(F);
  std::string First;
  {
    llvm::raw_string_ostream OS(First);
    ir::printModule(M, OS);
  }
  llvm::SourceMgr SM;
  unsigned Id = SM.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(First, "<ir>"),
                                      llvm::SMLoc());
  std::string ParseErrors;
  llvm::raw_string_ostream ErrOS(ParseErrors);
  SM.setDiagHandler(
      [](const llvm::SMDiagnostic &D, void *Ctx) {
        D.print("tdslc", *static_cast<llvm::raw_string_ostream *>(Ctx), false);
      },
      &ErrOS);
  DiagEngine Diags(SM);
  std::optional<ir::Module> Parsed = ir::parseIRModule(SM, Id, Diags);
  if (!Parsed)
    return "the printed IR does not parse back: " + ErrOS.str();
  std::string Second;
  llvm::raw_string_ostream OS2(Second);
  ir::printModule(*Parsed, OS2);
  if (OS2.str() != First)
    return "print -> parse -> print changed the IR";
  return "";
}

} // namespace

namespace {

/// What --check and --dump-io share for one kernel: its sizes, its seeded
/// inputs, poisoned outputs, the reference outputs and the tolerance.
struct PreparedKernel {
  std::map<std::string, int64_t> Sizes;
  std::map<std::string, ir::TensorData> Inputs, Poisoned, Ref;
  std::map<std::string, std::vector<double>> Terms; ///< each output's scales
  ToleranceModel TM;
  double Tol = 0;
};

/// Fills P for K; returns a user error (without the "tdslc: error: "
/// prefix) or the empty string.
/// The CPU oracles hold every tensor as doubles and visit every point of
/// every statement's index space: refuse sizes that would exhaust memory or
/// run for hours, rather than crash or hang.
std::string checkAffordable(const ast::Kernel &K, const std::map<std::string, int64_t> &Sizes) {
  constexpr int64_t MaxElements = int64_t(1) << 28; // 2 GiB of doubles
  constexpr int64_t MaxPoints = int64_t(1) << 34;   // index points per statement
  auto Product = [&](const std::vector<ast::Affine> &Dims, int64_t Limit, int64_t &N) {
    N = 1;
    for (const ast::Affine &A : Dims) {
      int64_t D = A.evaluate(Sizes);
      if (D > Limit || __builtin_mul_overflow(N, std::max<int64_t>(D, 1), &N) || N > Limit)
        return false;
    }
    return true;
  };
  for (const auto *List : {&K.Inputs, &K.Outputs, &K.Intermediates})
    for (const auto &T : *List) {
      int64_t N;
      if (!Product(T->Shape, MaxElements, N))
        return "'" + T->Name + "' would have more than 2^28 elements";
    }
  for (const auto &S : K.Body) {
    std::vector<ast::Affine> Space;
    for (const auto &[Index, Range] : S->Ranges)
      Space.push_back(Range);
    int64_t N;
    if (!Product(Space, MaxPoints, N))
      return "the statement defining '" + S->TargetName + "' would visit more than 2^34 index points";
  }
  return "";
}

std::string prepareKernel(const ast::Kernel &K, const CheckOptions &Opts, PreparedKernel &P) {
  std::vector<std::string> Missing;
  for (const std::string &S : K.SizeSymbols) {
    auto It = Opts.Sizes.find(S);
    if (It != Opts.Sizes.end())
      P.Sizes[S] = It->second;
    else if (Opts.DefaultSize)
      P.Sizes[S] = *Opts.DefaultSize;
    else
      Missing.push_back(S);
  }
  if (!Missing.empty())
    return "kernel '" + K.Name + "' needs --sizes for " + llvm::join(Missing, ", ");
  if (std::string TooBig = checkAffordable(K, P.Sizes); !TooBig.empty())
    return "kernel '" + K.Name + "': sizes too large for --check: " + TooBig;
  // Dims such as "L + R - 1" must come out positive for the sizes given.
  std::string BadDim;
  for (const auto *List : {&K.Inputs, &K.Outputs})
    for (const auto &T : *List) {
      std::vector<int64_t> Shape;
      for (const ast::Affine &A : T->Shape) {
        Shape.push_back(A.evaluate(P.Sizes));
        if (Shape.back() < 1 && BadDim.empty())
          BadDim = T->Name + " dimension " + A.str();
      }
      if (T->Role == ast::TensorRole::Input) {
        std::mt19937_64 Rng = streamFor(Opts.Seed, K.Name, T->Name);
        P.Inputs[T->Name] = randomTensor(*T, Shape, Rng, Opts.ExactInputs);
      } else {
        ir::TensorData D;
        D.Type = T->Type;
        D.Shape = Shape;
        D.Values.assign(static_cast<size_t>(std::max<int64_t>(0, D.numElements())), NAN);
        P.Poisoned[T->Name] = std::move(D);
      }
    }
  if (!BadDim.empty())
    return "kernel '" + K.Name + "': " + BadDim + " is not positive for the sizes given";
  P.Ref = evaluateReference(K, P.Sizes, P.Inputs, &P.Terms);
  P.TM = toleranceFor(K, P.Sizes);
  P.Tol = P.TM.tolerance();
  return "";
}

} // namespace

bool runCheck(const ast::Module &M, const CheckOptions &Opts, llvm::raw_ostream &OS,
              llvm::raw_ostream &Err, llvm::raw_ostream *Failures) {
  bool AllOk = true;
  unsigned Passed = 0, Failed = 0;
  // Each line of the report, and a failing one also to Failures.
  auto Report = [&](bool Ok, llvm::StringRef Line) {
    OS << Line;
    if (!Ok && Failures)
      *Failures << Line;
  };
  for (const std::string &PassName : Opts.Pipeline)
    if (!findPass(PassName)) {
      Err << "tdslc: error: unknown pass '" << PassName << "'\n";
      return false;
    }
  for (const auto &KPtr : M.Kernels) {
    const ast::Kernel &K = *KPtr;
    PreparedKernel P;
    std::string Problem = prepareKernel(K, Opts, P);
    if (!Problem.empty()) {
      Err << "tdslc: error: " << Problem << "\n";
      AllOk = false;
      ++Failed;
      continue;
    }
    const std::map<std::string, int64_t> &Sizes = P.Sizes;
    const std::map<std::string, ir::TensorData> &Inputs = P.Inputs, &Poisoned = P.Poisoned,
                                                &Ref = P.Ref;
    double Tol = P.Tol;

    ir::Module KM;
    // Lowered as the compile lowers it, fused; the reference is the
    // unfused kernel's.
    KM.Funcs.push_back(graph::lowerFused(K, Opts.LineOf, Opts.FusionKnobs));
    llvm::append_range(KM.Funcs.front().Schedule, Opts.Knobs);
    std::map<std::string, ir::TensorData> NaiveOutputs;
    bool PrevOk = false;
    // Each stage is verified and interpreted here, where a failure is a
    // FAIL line of the report, so the pass manager does not verify.
    PassManager PM(Opts.Pipeline, PassManagerOptions(), "tdslc");
    PM.setStageHook([&](llvm::StringRef Stage, const ir::Module &Mod, bool Changed) {
      const ir::Func &SF = Mod.Funcs.front();
      // A pass that changed nothing computes what the previous stage did:
      // it is not interpreted again.
      if (!Changed) {
        std::string Line;
        llvm::raw_string_ostream LineOS(Line);
        LineOS << llvm::format("%-20s %-16s ", K.Name.c_str(), Stage.str().c_str())
               << (PrevOk ? "ok  " : "FAIL") << "  unchanged by the pass\n";
        Report(PrevOk, LineOS.str());
        PrevOk ? ++Passed : ++Failed;
        return;
      }
      std::string Problem;
      std::vector<std::string> VerifyErrors = ir::verifyFunc(SF);
      if (!VerifyErrors.empty())
        Problem = "verifier: " + VerifyErrors.front();
      if (Problem.empty())
        Problem = roundTrip(SF);
      Comparison C;
      if (Problem.empty()) {
        // Runs the stage on the inputs and poisoned outputs, the tensors
        // ByteOffset bytes past a boundary; a problem, or "".
        auto Run = [&](unsigned ByteOffset, std::map<std::string, ir::TensorData> &Args,
                       Comparison &Cmp, const std::string &Where) -> std::string {
          Args = Inputs;
          for (const auto &[Name, D] : Poisoned)
            Args[Name] = D;
          ir::InterpOptions IO;
          IO.MaxSteps = 2'000'000'000ull;
          IO.ParamByteOffset = ByteOffset;
          ir::InterpResult R = ir::interpret(SF, Sizes, Args, IO);
          if (!R.Ok)
            return "interpreter" + Where + ": " + R.Error;
          for (const auto &T : K.Outputs)
            compare(T->Name, Ref.at(T->Name), P.Terms.at(T->Name), Args.at(T->Name), Tol, Cmp);
          return Cmp.Ok ? "" : "mismatch" + Where + ": " + Cmp.Where;
        };
        std::map<std::string, ir::TensorData> Args, Moved;
        Problem = Run(0, Args, C, "");
        // A stage with a wide path behind aligned() runs again on tensors
        // that start 4 bytes past a boundary, so its scalar path is checked
        // too.
        Comparison CM;
        if (Problem.empty() && testsAlignment(SF.Body))
          Problem = Run(4, Moved, CM, " (tensors not 16-byte aligned)");
        if (Problem.empty() && Opts.StagesBitExact) {
          if (NaiveOutputs.empty())
            for (const auto &T : K.Outputs)
              NaiveOutputs[T->Name] = Args.at(T->Name);
          else
            Problem = bitDifference(NaiveOutputs, Args);
        }
      }
      bool Ok = Problem.empty();
      PrevOk = Ok;
      std::string Line;
      llvm::raw_string_ostream LineOS(Line);
      LineOS << llvm::format("%-20s %-16s ", K.Name.c_str(), Stage.str().c_str())
             << (Ok ? "ok  " : "FAIL") << llvm::format("  max err %.2e (tol %.1e)", C.MaxErr, Tol);
      if (!Ok)
        LineOS << "  " << Problem;
      LineOS << "\n";
      Report(Ok, LineOS.str());
      Ok ? ++Passed : ++Failed;
      AllOk &= Ok;
    });
    if (PM.run(KM, "naive", Err) != PassManagerStatus::Ok)
      AllOk = false;
  }
  std::string Summary = std::to_string(Passed) + " passed, " + std::to_string(Failed) + " failed\n";
  OS << Summary;
  if (!AllOk && Failures)
    *Failures << Summary;
  return AllOk;
}

} // namespace tdsl

namespace tdsl {

namespace {

/// The memory image of D in its dtype's encoding, little-endian, as a
/// launcher's pointer sees it.
std::string encodeTensor(const ir::TensorData &D) {
  std::string Bytes;
  llvm::raw_string_ostream OS(Bytes);
  auto Write = [&](auto V) {
    llvm::support::endian::write(OS, V, llvm::support::little);
  };
  for (double V : D.Values) {
    switch (D.Type) {
    case DType::Bool: Write(static_cast<uint8_t>(V != 0)); break;
    case DType::I8: Write(static_cast<int8_t>(saturateInt(V, DType::I8))); break;
    case DType::I32: Write(static_cast<int32_t>(saturateInt(V, DType::I32))); break;
    case DType::I64: Write(static_cast<int64_t>(saturateInt(V, DType::I64))); break;
    case DType::F16: Write(encodeF16(V)); break;
    case DType::BF16: Write(encodeBF16(V)); break;
    case DType::TF32:
    case DType::F32: Write(static_cast<float>(V)); break;
    case DType::F64: Write(V); break;
    }
  }
  return OS.str();
}

bool writeFile(const llvm::Twine &Path, llvm::StringRef Bytes, llvm::raw_ostream &Err) {
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path.str(), EC, llvm::sys::fs::OF_None);
  if (!EC) {
    OS << Bytes;
    OS.close();
    EC = OS.error();
    OS.clear_error();
  }
  if (EC) {
    Err << "tdslc: error: cannot write '" << Path << "': " << EC.message() << "\n";
    return false;
  }
  return true;
}

} // namespace

bool dumpIO(const ast::Module &M, const CheckOptions &Opts, llvm::StringRef Dir,
            llvm::raw_ostream &Err) {
  bool AllOk = true;
  for (const auto &KPtr : M.Kernels) {
    const ast::Kernel &K = *KPtr;
    PreparedKernel P;
    std::string Problem = prepareKernel(K, Opts, P);
    if (!Problem.empty()) {
      Err << "tdslc: error: " << Problem << "\n";
      AllOk = false;
      continue;
    }
    llvm::SmallString<256> KDir(Dir);
    llvm::sys::path::append(KDir, K.Name);
    if (std::error_code EC = llvm::sys::fs::create_directories(KDir)) {
      Err << "tdslc: error: cannot create '" << KDir << "': " << EC.message() << "\n";
      return false;
    }

    std::string Meta;
    llvm::raw_string_ostream MetaOS(Meta);
    llvm::json::OStream J(MetaOS, 2);
    J.objectBegin();
    J.attribute("kernel", K.Name);
    J.attribute("seed", static_cast<int64_t>(Opts.Seed));
    J.attribute("exact_inputs", Opts.ExactInputs);
    // In the order of the launcher's size arguments.
    J.attributeArray("sizes", [&] {
      for (const std::string &S : K.SizeSymbols)
        J.object([&] {
          J.attribute("name", S);
          J.attribute("value", P.Sizes.at(S));
        });
    });
    // Each tensor's values go to <name>.bin as its entry is written.
    writeLauncherParams(J, K, [&](const ast::Tensor &T) {
      bool IsIn = T.Role == ast::TensorRole::Input;
      const ir::TensorData &D = IsIn ? P.Inputs.at(T.Name) : P.Ref.at(T.Name);
      std::string File = T.Name + ".bin";
      if (!writeFile(KDir + "/" + File, encodeTensor(D), Err))
        AllOk = false;
      J.attributeArray("shape", [&] {
        for (int64_t E : D.Shape)
          J.value(E);
      });
      J.attribute("is_scalar", T.Shape.empty());
      J.attribute("elements", D.numElements());
      J.attribute("element_bytes", static_cast<int64_t>(dtypeBytes(T.Type)));
      J.attribute("file", File);
      // A float output's scales (the tolerance rule's), as f64.
      if (!IsIn && isFloat(T.Type)) {
        ir::TensorData Terms;
        Terms.Type = DType::F64;
        Terms.Shape = D.Shape;
        Terms.Values = P.Terms.at(T.Name);
        std::string TermsFile = T.Name + ".terms.bin";
        if (!writeFile(KDir + "/" + TermsFile, encodeTensor(Terms), Err))
          AllOk = false;
        J.attribute("terms_file", TermsFile);
      }
    });
    J.attributeObject("tolerance", [&] {
      J.attribute("value", P.Tol);
      J.attribute("loosest_dtype", dtypeName(P.TM.Loosest));
      J.attribute("longest_reduction", P.TM.LongestReduction);
      J.attribute("rule", "float outputs: |out - ref| <= value * (max(|ref|, terms) + mean "
                          "|ref|), mean over the finite values of that output, terms the "
                          "element's entry in terms_file (the size of what it was computed "
                          "from), or |out - ref| <= value * the dtype's least normal; NaN "
                          "only matches NaN, an infinity only itself; integer outputs: exact");
    });
    J.objectEnd();
    MetaOS << "\n";
    if (!writeFile(KDir + "/meta.json", MetaOS.str(), Err))
      AllOk = false;
  }
  return AllOk;
}

} // namespace tdsl
