//===- CudaEmitter.cpp - Loop IR to CUDA C++ kernels and host launchers ---===//
#include "backend/CudaEmitter.h"
#include "backend/ResourceCheck.h"

#include "backend/Signature.h"
#include "ir/Launch.h"
#include "ir/Match.h"
#include "ir/Printer.h"
#include "ir/Simplify.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tdsl {

using namespace ir;
using backend::cName;

namespace {

// The runtime's headers, for --self-contained (generated from
// runtime/include/tdsl/ by backend/EmbedHeader.cmake).
const char *const RuntimeHeader =
#include "runtime_h.inc"
    ;
const char *const DeviceHeader =
#include "device_cuh.inc"
    ;

/// Header text as pasted into a self-contained .cu: its includes of the
/// other tdsl/ headers go, as those are pasted too.
std::string pastedHeader(llvm::StringRef Text) {
  std::string S;
  while (!Text.empty()) {
    auto [Line, Rest] = Text.split('\n');
    if (!Line.startswith("#include <tdsl/"))
      S += Line.str() + "\n";
    Text = Rest;
  }
  return S;
}

/// Shared memory a block may use without the opt-in.
constexpr int64_t DefaultSharedBytes = 48 * 1024;

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// C++ precedence levels (smaller binds tighter).
enum Prec { PrimaryPrec = 0, UnaryPrec = 3, MulPrec = 5, AddPrec = 6, RelPrec = 9,
            EqPrec = 10, AndPrec = 14, OrPrec = 15, CondPrec = 16 };

struct Text {
  std::string S;
  int P = PrimaryPrec;
};

std::string within(const Text &T, int MaxPrec) {
  bool Paren = T.P > MaxPrec || (MaxPrec == UnaryPrec && !T.S.empty() && T.S[0] == '-');
  return Paren ? "(" + T.S + ")" : T.S;
}

Text primary(std::string S) { return {std::move(S), PrimaryPrec}; }
Text callText(const std::string &Fn, std::initializer_list<std::string> Args) {
  std::string S = Fn + "(";
  bool First = true;
  for (const std::string &A : Args) {
    S += (First ? "" : ", ") + A;
    First = false;
  }
  return primary(S + ")");
}

/// The shortest decimal that reads back as V in T (float or double).
std::string decimal(double V, bool IsFloat) {
  char Buf[64];
  for (int P = 1; P <= 17; ++P) {
    std::snprintf(Buf, sizeof(Buf), "%.*g", P, V);
    if (IsFloat ? std::strtof(Buf, nullptr) == static_cast<float>(V)
                : std::strtod(Buf, nullptr) == V)
      break;
  }
  std::string S = Buf;
  if (S.find_first_of(".e") == std::string::npos)
    S += ".0";
  return S;
}

/// How the kernel declares a buffer of its own: a one-element register
/// buffer is a scalar, a shared tile a C array of its shape (declareShared),
/// anything else a flat array indexed row-major.
bool isScalar(const Buffer &B) {
  return B.Scope == MemScope::Register &&
         llvm::all_of(B.Shape, [](const Expr &D) { return asConstInt(simplifyExpr(D)) == 1; });
}

/// A fragment of 8- or 16-bit elements: declared as the uint32_t registers
/// that ldmatrix and mma take, an element reached by tdsl_frag_get/set.
bool isPacked(const Buffer &B) {
  return B.Scope == MemScope::Fragment && dtypeBytes(B.Type) < 4;
}

/// How a buffer is reached from kernel code.
struct BufferRef {
  const Buffer *Buf = nullptr;
  bool ByValue = false; ///< a rank-0 input: a kernel parameter by value
  /// A shared tile: each dim's extent as its declaration spells it (a named
  /// constant or a number, padding added: "kBlockM + 4"), and how many
  /// leading dims take a subscript of their own (declareShared).
  std::vector<std::string> Dims;
  unsigned Subscripts = 0;
  /// A register run of f16 or bf16 values held as the f32 values they
  /// round from, rounded two at a time where a copy stores the run
  /// (roundsAtStore).
  bool RoundAtStore = false;
};

/// Whether register run B (f16 or bf16), allocated around Body, may hold
/// f32 values, rounded where they are stored (BufferRef::RoundAtStore):
/// every store to it is an f32 value rounded to its type, and every read of
/// it is the source of a copy of 4 or 8 elements, which emitVectorCopy
/// writes as one access and whose pairs then round in one conversion each
/// (tdsl_pack_rn) where each value would round, then pack: two
/// instructions a pair fewer, the same bits.
bool roundsAtStore(const Buffer &B, const Stmt &Body) {
  if (B.Scope != MemScope::Register || (B.Type != DType::F16 && B.Type != DType::BF16))
    return false;
  struct Scan : IRVisitor {
    const std::string &Name;
    bool Ok = true, Copied = false;
    explicit Scan(const std::string &Name) : Name(Name) {}
    using IRVisitor::visit;
    void visitStore(const StoreNode &N) override {
      if (N.Buffer == Name)
        Ok &= N.Value->Kind == ExprKind::Cast &&
              static_cast<const CastNode &>(*N.Value).A->Type == DType::F32;
      IRVisitor::visitStore(N);
    }
    void visitLoad(const LoadNode &N) override {
      Ok &= N.Buffer != Name;
      IRVisitor::visitLoad(N);
    }
    void visitFor(const ForNode &N) override {
      int64_t Width = 0;
      const StoreNode *Copy = N.Loop == ForKind::Vectorized ? vectorCopy(N, Width) : nullptr;
      if (!Copy || static_cast<const LoadNode &>(*Copy->Value).Buffer != Name)
        return IRVisitor::visitFor(N);
      Ok &= Width == 4 || Width == 8;
      Copied = true;
      for (const Expr &I : Copy->Indices)
        visit(I);
    }
  } S(B.Name);
  S.visit(Body);
  return S.Ok && S.Copied;
}

/// The kernel parameter that carries aligned(Buffer[0], Bytes).
std::string alignmentParam(const std::string &Buffer, int64_t Bytes) {
  return "tdsl_aligned" + std::to_string(Bytes) + "_" + cName(Buffer);
}

/// The kernel parameter (and launcher variable) of a launch's I-th tensor map.
std::string tensorMapParam(const LaunchShape &Shape, size_t I) {
  return "tdsl_map" + std::to_string(I) + "_" + cName(Shape.TensorMaps[I].Tensor);
}

/// How f32 exp is spelled for the knob fexp (null: unpinned): tdsl_exp_sq,
/// ex2.approx.ftz of half of x log2 e, squared (ex2sq, the default);
/// tdsl_exp, ex2.approx of x log2 e (ex2); or CUDA's expf (empty).
std::string expSpelling(const Knob *FExp) {
  if (!FExp || FExp->Word == "ex2sq")
    return "tdsl_exp_sq";
  return FExp->Word == "ex2" ? "tdsl_exp" : "";
}

/// Writes IR expressions as C++. In kernels i64 is the template parameter
/// Index; in launchers it is int64_t.
class ExprWriter {
public:
  ExprWriter(const llvm::StringSet<> &Sizes, bool Host) : Sizes(Sizes), Host(Host) {}

  llvm::StringMap<BufferRef> Buffers;
  /// f32 division as tdsl_fdiv, which calls no subroutine (the knob fdiv =
  /// inline), instead of CUDA's '/'.
  bool InlineFDiv = false;
  /// With InlineFDiv, which pass of a run the emitter computes twice
  /// (FuncEmitter::quickRun) it writes: Try spells each f32 quotient
  /// tdsl_fdiv_try, which clears the run's flag tdsl_quick where its fast
  /// path does not hold; Wide spells it tdsl_fdiv_wide, right for every
  /// pair. (tdsl_fdiv in the second pass would let ptxas keep each first-pass
  /// quotient's test in a register for its branch.)
  enum class QuickPass { None, Try, Wide } Quick = QuickPass::None;
  /// Whether a division of T operands is spelled by tdsl/device.cuh's.
  bool inlineFDiv(DType T) const {
    return InlineFDiv && (T == DType::F32 || T == DType::TF32);
  }
  /// How f32 exp is spelled (expSpelling of the knob fexp).
  std::string ExpFn = expSpelling(nullptr);

  std::string type(DType T) const {
    if (T == DType::I64)
      return Host ? "int64_t" : "Index";
    return backend::deviceElementType(T);
  }

  std::string str(const Expr &E, int MaxPrec = CondPrec) { return within(text(E), MaxPrec); }

  /// The element of B at Indices, as the kernel declares B (isScalar).
  std::string element(const Buffer &B, const std::vector<Expr> &Indices) {
    if (isScalar(B))
      return cName(B.Name);
    const BufferRef &R = Buffers.lookup(B.Name);
    if (B.Scope != MemScope::Shared || R.Buf != &B)
      return cName(B.Name) + "[" + offset(B, Indices) + "]";
    std::string S = cName(B.Name);
    for (unsigned D = 0; D < R.Subscripts; ++D)
      S += "[" + str(simplifyExpr(Indices[D])) + "]";
    if (R.Subscripts == B.rank())
      return S;
    // The swizzled rest: the row-major offset in the dims from Subscripts
    // on (no padding: the verifier refuses it with a swizzle), its strides
    // the declared extents.
    std::string Off;
    for (unsigned D = R.Subscripts; D < B.rank(); ++D) {
      std::string I = str(simplifyExpr(Indices[D]), MulPrec);
      Off = Off.empty() ? I
                        : (D > R.Subscripts + 1 ? "(" + Off + ")" : Off) + " * " + R.Dims[D] +
                              " + " + I;
    }
    return S + "[" + swizzled(B, Off) + "]";
  }

  std::string swizzled(const Buffer &B, const std::string &Off) {
    return "tdsl_swizzle<" + std::to_string(B.Swz.Bits) + ", " + std::to_string(B.Swz.Base) +
           ", " + std::to_string(B.Swz.Shift) + ">(" + Off + ")";
  }

  /// The address of the register holding B[Indices] (a fragment), for an
  /// instruction that takes registers from there on.
  std::string registers(const Buffer &B, const std::vector<Expr> &Indices) {
    std::string Off = offset(B, Indices);
    if (!isPacked(B))
      return "&" + cName(B.Name) + "[" + Off + "]";
    return "&" + cName(B.Name) + "[(" + Off + ") / " + std::to_string(4 / dtypeBytes(B.Type)) +
           "]";
  }

  /// The row-major offset of Indices in B's storage.
  std::string offset(const Buffer &B, const std::vector<Expr> &Indices) {
    Expr Off;
    for (unsigned D = 0; D < Indices.size(); ++D) {
      if (!Off) {
        Off = Indices[D];
        continue;
      }
      Expr Dim = B.Shape[D];
      if (D < B.Padding.size() && B.Padding[D])
        Dim = add(Dim, intImm(B.Padding[D]));
      Expr Whole = rejoined(Off, Dim, Indices[D]);
      Off = Whole ? Whole : add(mul(Off, Dim), Indices[D]);
    }
    return Off ? str(simplifyExpr(Off)) : "0";
  }

  /// x, where the offset so far Off is x / Dim and the next index I is
  /// x % Dim, Dim provably positive (or Off is z / (Dim * f) and I is
  /// (z / f) % Dim: x is z / f), and P * Dim + x where Off is P + such a
  /// quotient: the indices mergeSideLoops recovers from one index of a
  /// tensor's rows, whose offset is that index again. Null otherwise.
  Expr rejoined(const Expr &Off, const Expr &Dim, const Expr &I) const {
    auto Binary = [](const Expr &E, BinaryOp Op) -> const BinaryNode * {
      if (E->Kind != ExprKind::Binary || static_cast<const BinaryNode &>(*E).Op != Op)
        return nullptr;
      return static_cast<const BinaryNode *>(E.get());
    };
    const BinaryNode *Rem = Binary(I, BinaryOp::Mod);
    if (!Rem || !structurallyEqual(Rem->B, Dim) || !isPositive(Dim))
      return nullptr;
    const Expr &X = Rem->A;
    const BinaryNode *Inner = Binary(X, BinaryOp::Div);
    auto Quotient = [&](const Expr &Q) {
      const BinaryNode *Quo = Binary(Q, BinaryOp::Div);
      if (!Quo)
        return false;
      if (structurallyEqual(Quo->A, X) && structurallyEqual(Quo->B, Dim))
        return true;
      return Inner && isPositive(Inner->B) && structurallyEqual(Quo->A, Inner->A) &&
             structurallyEqual(Quo->B, mul(Dim, Inner->B));
    };
    if (Quotient(Off))
      return X;
    if (const BinaryNode *Sum = Binary(Off, BinaryOp::Add); Sum && Quotient(Sum->B))
      return add(mul(Sum->A, Dim), X);
    return nullptr;
  }

  Text text(const Expr &E);

  /// A provably positive divisor (a positive constant, a size — the
  /// launcher checks sizes >= 1 — or sums and products of those) needs no
  /// guard against division by zero or by -1.
  bool isPositive(const Expr &E) const {
    if (std::optional<int64_t> C = asConstInt(E))
      return *C > 0;
    if (E->Kind == ExprKind::Var)
      return Sizes.count(static_cast<const VarNode &>(*E).Name);
    if (E->Kind == ExprKind::Binary) {
      const auto &B = static_cast<const BinaryNode &>(*E);
      if (B.Op == BinaryOp::Add || B.Op == BinaryOp::Mul || B.Op == BinaryOp::Max)
        return isPositive(B.A) && isPositive(B.B);
    }
    return false;
  }
  /// Provably >= 0: the same, with 0, quotients, minima and selects of
  /// such (a temporary's dimension that is empty where it is not used).
  bool isNonNegative(const Expr &E) const {
    if (std::optional<int64_t> C = asConstInt(E))
      return *C >= 0;
    if (E->Kind == ExprKind::Select) {
      const auto &S = static_cast<const SelectNode &>(*E);
      return isNonNegative(S.TrueValue) && isNonNegative(S.FalseValue);
    }
    if (E->Kind == ExprKind::Binary) {
      const auto &B = static_cast<const BinaryNode &>(*E);
      if (B.Op == BinaryOp::Add || B.Op == BinaryOp::Mul || B.Op == BinaryOp::Max ||
          B.Op == BinaryOp::Min)
        return isNonNegative(B.A) && isNonNegative(B.B);
      if (B.Op == BinaryOp::Div)
        return isNonNegative(B.A) && isPositive(B.B);
    }
    return isPositive(E);
  }

  Text cast(DType From, DType To, const Text &X);

private:
  const llvm::StringSet<> &Sizes;
  bool Host;

  Text binaryText(const BinaryNode &N);
  Text callIntrinsic(const CallNode &N);
};

Text ExprWriter::cast(DType From, DType To, const Text &X) {
  if (From == To || (From == DType::TF32 && To == DType::F32))
    return X;
  auto Wrap = [&](const std::string &Fn) { return callText(Fn, {X.S}); };
  auto F32Of = [&]() -> Text {
    if (From == DType::F16)
      return Wrap("__half2float");
    if (From == DType::BF16)
      return Wrap("__bfloat162float");
    return X;
  };
  bool FromInt = !isFloat(From); // bool and integers
  if (To == DType::Bool) {
    if (FromInt)
      return {within(X, RelPrec) + " != 0", EqPrec};
    Text F = From == DType::F64 ? X : F32Of();
    return {within(F, RelPrec) + (From == DType::F64 ? " != 0.0" : " != 0.0f"), EqPrec};
  }
  if (isInteger(To)) {
    std::string T = type(To);
    if (FromInt) {
      unsigned FromBits = From == DType::Bool ? 1 : dtypeBytes(From);
      if (FromBits <= dtypeBytes(To))
        return callText(T, {X.S}); // widening: exact
      return callText("tdsl_sat<" + T + ">", {X.S});
    }
    Text F = From == DType::F64 ? X : F32Of();
    return callText("tdsl_f2i<" + T + ">", {F.S});
  }
  // To a float type.
  Text F = X; // the value as f32, or f64 when From is f64 or an integer
  bool IsDouble = From == DType::F64;
  if (FromInt) {
    if (To == DType::F32)
      return callText("float", {X.S}); // one rounding
    if (To == DType::F64)
      return callText("double", {X.S});
    F = callText("double", {X.S}); // exact for bool, i8, i32; i64 as the interpreter
    IsDouble = true;
  } else if (From == DType::F16 || From == DType::BF16) {
    F = F32Of(); // exact
  }
  switch (To) {
  case DType::F32: return IsDouble ? callText("float", {F.S}) : F;
  case DType::F64: return IsDouble ? F : callText("double", {F.S});
  case DType::F16: return callText(IsDouble ? "__double2half" : "__float2half_rn", {F.S});
  case DType::BF16:
    return callText(IsDouble ? "__double2bfloat16" : "__float2bfloat16_rn", {F.S});
  case DType::TF32:
    return callText("tdsl_round_tf32", {IsDouble ? "float(" + F.S + ")" : F.S});
  default: break;
  }
  return F;
}

Text ExprWriter::text(const Expr &E) {
  switch (E->Kind) {
  case ExprKind::IntImm: {
    int64_t V = static_cast<const IntImmNode &>(*E).Value;
    switch (E->Type) {
    case DType::Bool: return primary(V ? "true" : "false");
    case DType::I8: return callText("int8_t", {std::to_string(V)});
    case DType::I32:
      if (V == INT32_MIN)
        return primary("INT32_MIN");
      break;
    default:
      if (V == INT64_MIN)
        return primary("INT64_MIN");
      if (V < INT32_MIN || V > INT32_MAX)
        return primary("INT64_C(" + std::to_string(V) + ")");
      break;
    }
    return {std::to_string(V), V < 0 ? UnaryPrec : PrimaryPrec};
  }
  case ExprKind::FloatImm: {
    double V = static_cast<const FloatImmNode &>(*E).Value;
    bool IsDouble = E->Type == DType::F64;
    std::string S;
    if (std::isnan(V))
      S = IsDouble ? "CUDART_NAN" : "CUDART_NAN_F";
    else if (std::isinf(V))
      S = std::string(V < 0 ? "-" : "") + (IsDouble ? "CUDART_INF" : "CUDART_INF_F");
    else
      S = decimal(V, !IsDouble) + (IsDouble ? "" : "f");
    Text T{S, S[0] == '-' ? UnaryPrec : PrimaryPrec};
    if (E->Type == DType::F16 || E->Type == DType::BF16)
      return cast(DType::F32, E->Type, T); // exact: the value is representable
    return T;
  }
  case ExprKind::Var: return primary(cName(static_cast<const VarNode &>(*E).Name));
  case ExprKind::Load: {
    const auto &N = static_cast<const LoadNode &>(*E);
    const BufferRef &R = Buffers.lookup(N.Buffer);
    if (!R.Buf || R.ByValue)
      return primary(cName(N.Buffer));
    if (isPacked(*R.Buf))
      return primary("tdsl_frag_get<" + type(R.Buf->Type) + ">(" + cName(N.Buffer) + ", " +
                     offset(*R.Buf, N.Indices) + ")");
    return primary(element(*R.Buf, N.Indices));
  }
  case ExprKind::Unary: {
    const auto &N = static_cast<const UnaryNode &>(*E);
    if (N.Op == UnaryOp::Not)
      return {"!" + str(N.A, UnaryPrec), UnaryPrec};
    Text T{"-" + str(N.A, UnaryPrec), UnaryPrec};
    if (N.Type == DType::I8)
      return callText("int8_t", {T.S}); // wraps, as the interpreter
    if (N.Type == DType::TF32)
      return T; // exact
    return T;
  }
  case ExprKind::Binary: return binaryText(static_cast<const BinaryNode &>(*E));
  case ExprKind::Select: {
    const auto &N = static_cast<const SelectNode &>(*E);
    return {str(N.Cond, OrPrec) + " ? " + str(N.TrueValue, CondPrec) + " : " +
                str(N.FalseValue, CondPrec),
            CondPrec};
  }
  case ExprKind::Cast: {
    const auto &N = static_cast<const CastNode &>(*E);
    return cast(N.A->Type, N.Type, text(N.A));
  }
  case ExprKind::Call: return callIntrinsic(static_cast<const CallNode &>(*E));
  }
  return primary("0");
}

Text ExprWriter::binaryText(const BinaryNode &N) {
  DType T = N.A->Type;
  auto Infix = [&](const char *Op, int P) {
    return Text{str(N.A, P) + " " + Op + " " + str(N.B, P - 1), P};
  };
  auto Call2 = [&](const std::string &Fn) { return callText(Fn, {str(N.A), str(N.B)}); };
  switch (N.Op) {
  case BinaryOp::Lt: return Infix("<", RelPrec);
  case BinaryOp::Le: return Infix("<=", RelPrec);
  case BinaryOp::Gt: return Infix(">", RelPrec);
  case BinaryOp::Ge: return Infix(">=", RelPrec);
  case BinaryOp::Eq: return Infix("==", EqPrec);
  case BinaryOp::Ne: return Infix("!=", EqPrec);
  case BinaryOp::And: return Infix("&&", AndPrec);
  case BinaryOp::Or: return Infix("||", OrPrec);
  default: break;
  }
  Text R;
  if (isFloat(T)) {
    bool D = T == DType::F64;
    switch (N.Op) {
    case BinaryOp::Add: R = Infix("+", AddPrec); break;
    case BinaryOp::Sub: R = Infix("-", AddPrec); break;
    case BinaryOp::Mul: R = Infix("*", MulPrec); break;
    case BinaryOp::Div:
      if (!inlineFDiv(T))
        R = Infix("/", MulPrec);
      else if (Quick == QuickPass::Wide)
        R = Call2("tdsl_fdiv_wide");
      else if (Quick == QuickPass::Try)
        R = callText("tdsl_fdiv_try", {str(N.A), str(N.B), "tdsl_quick"});
      else
        R = Call2("tdsl_fdiv");
      break;
    case BinaryOp::Mod: R = Call2(D ? "fmod" : "fmodf"); break;
    // fminf/fmaxf: a NaN operand yields the other, as in the interpreter.
    case BinaryOp::Min: R = Call2(D ? "fmin" : "fminf"); break;
    case BinaryOp::Max: R = Call2(D ? "fmax" : "fmaxf"); break;
    default: break;
    }
    if (T == DType::TF32) // f32 arithmetic rounded back, as the interpreter
      return callText("tdsl_round_tf32", {R.S});
    return R;
  }
  // Integers: i8 computes in int and wraps back on the way out.
  std::string CT = T == DType::I8 ? "int" : type(T);
  switch (N.Op) {
  case BinaryOp::Add: R = Infix("+", AddPrec); break;
  case BinaryOp::Sub: R = Infix("-", AddPrec); break;
  case BinaryOp::Mul: R = Infix("*", MulPrec); break;
  // A positive divisor takes C's operator, or tdsl_quo/tdsl_rem for a
  // 64-bit one known only at run time (a constant becomes a multiply).
  case BinaryOp::Div:
    R = !isPositive(N.B)                   ? Call2("tdsl_div<" + CT + ">")
        : T == DType::I64 && !asConstInt(N.B) ? Call2("tdsl_quo<" + CT + ">")
                                              : Infix("/", MulPrec);
    break;
  case BinaryOp::Mod:
    R = !isPositive(N.B)                   ? Call2("tdsl_mod<" + CT + ">")
        : T == DType::I64 && !asConstInt(N.B) ? Call2("tdsl_rem<" + CT + ">")
                                              : Infix("%", MulPrec);
    break;
  case BinaryOp::Min: R = Call2("tdsl_min<" + CT + ">"); break;
  case BinaryOp::Max: R = Call2("tdsl_max<" + CT + ">"); break;
  default: break;
  }
  if (T == DType::I8)
    return callText("int8_t", {R.S});
  return R;
}

Text ExprWriter::callIntrinsic(const CallNode &N) {
  if (N.Fn == Intrinsic::Aligned) {
    // The launcher tests the first element's address once and passes the
    // answer (alignmentParam).
    const auto &L = static_cast<const LoadNode &>(*N.Args[0]);
    int64_t Bytes = asConstInt(N.Args[1]).value_or(1);
    if (Host)
      return callText("tdsl_is_aligned", {cName(L.Buffer), std::to_string(Bytes)});
    return primary(alignmentParam(L.Buffer, Bytes));
  }
  DType T = N.Args[0]->Type;
  std::string X = str(N.Args[0]);
  if (isWarpShuffle(N.Fn)) {
    const char *Fn = N.Fn == Intrinsic::ShflXor    ? "__shfl_xor_sync"
                     : N.Fn == Intrinsic::ShflDown ? "__shfl_down_sync"
                     : N.Fn == Intrinsic::ShflUp   ? "__shfl_up_sync"
                                                   : "__shfl_sync";
    return callText(Fn, {"0xffffffffu", X, "int(" + str(N.Args[1]) + ")"});
  }
  Text R;
  if (!isFloat(T)) {
    std::string CT = type(T);
    if (N.Fn == Intrinsic::Abs)
      R = callText("tdsl_iabs<" + CT + ">", {X});
    else
      R = callText("tdsl_max<" + CT + ">", {X, CT + "(0)"});
  } else {
    bool D = T == DType::F64;
    auto Math = [&](const char *Name) {
      return callText(std::string(Name) + (D ? "" : "f"), {X});
    };
    switch (N.Fn) {
    case Intrinsic::Exp: R = !D && !ExpFn.empty() ? callText(ExpFn, {X}) : Math("exp"); break;
    case Intrinsic::Log: R = Math("log"); break;
    case Intrinsic::Sqrt: R = Math("sqrt"); break;
    // 1 / sqrt, not rsqrtf: that one is approximate.
    case Intrinsic::Rsqrt:
      R = {std::string(D ? "1.0 / " : "1.0f / ") + Math("sqrt").S, MulPrec};
      break;
    case Intrinsic::Tanh: R = Math("tanh"); break;
    case Intrinsic::Sigmoid: R = callText("tdsl_sigmoid", {X}); break;
    case Intrinsic::Erf: R = Math("erf"); break;
    case Intrinsic::Gelu: R = callText("tdsl_gelu", {X}); break;
    case Intrinsic::Relu: R = callText(D ? "fmax" : "fmaxf", {X, D ? "0.0" : "0.0f"}); break;
    case Intrinsic::Abs: R = callText(D ? "fabs" : "fabsf", {X}); break;
    case Intrinsic::Pow: R = callText(D ? "pow" : "powf", {X, str(N.Args[1])}); break;
    default: break;
    }
    if (T == DType::TF32)
      R = callText("tdsl_round_tf32", {R.S});
  }
  return N.Type == T ? R : cast(T, N.Type, R);
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

/// gemm_bias_relu -> GemmBiasRelu (for the names of constants).
std::string camelCase(llvm::StringRef Name) {
  std::string S;
  bool Up = true;
  for (char C : Name) {
    if (C == '_') {
      Up = true;
      continue;
    }
    S += Up ? static_cast<char>(std::toupper(static_cast<unsigned char>(C))) : C;
    Up = false;
  }
  return S;
}

/// The variables E reads.
std::vector<std::string> varsOf(const Expr &E) {
  struct Collector : IRVisitor {
    std::vector<std::string> Names;
    void visitVar(const VarNode &N) override {
      if (!llvm::is_contained(Names, N.Name))
        Names.push_back(N.Name);
    }
  } C;
  C.visit(E);
  return std::move(C.Names);
}

/// A statement in S that the kernel writer has no CUDA for ("'call mma'",
/// a launch inside a launch), or "" when there is none.
std::string unsupportedStatement(const Stmt &S) {
  struct Finder : IRVisitor {
    std::string Found;
    void visitLaunch(const LaunchNode &N) override {
      if (Found.empty())
        Found = "launch '" + N.Name + "'";
    }
  } F;
  F.visit(S);
  return F.Found;
}

/// One launch and what the kernel for it needs (ir/Launch.h's analysis).
struct Launch {
  const LaunchNode *Node = nullptr;
  unsigned Index = 0;
  LaunchShape Shape;
  std::vector<const Buffer *> Globals; ///< the global buffers it touches, in order
  /// The if that splits it into two kernels (ir/Launch.h), or null.
  const IfNode *Version = nullptr;
  /// Shared tiles beyond the default 48 KiB: one dynamic buffer carved at
  /// the shape's 16-byte aligned offsets (no reuse yet).
  /// Tiles as pointers into the launch's dynamic shared memory, at their
  /// offsets: past the static limit, or where tiles share bytes.
  bool dynamicShared() const {
    return Shape.SharedBytes > DefaultSharedBytes || Shape.SharedReused ||
           !Shape.TensorMaps.empty();
  }
};

/// Whether L's block loops along y and z step by the grid's size where
/// their extents may pass 65535 (tdsl_set_stepped_launch). Not in a
/// contraction's launch: its tile loop is tuned to the registers and the
/// pipeline a fixed block index gives, and a batch or a row of tiles past
/// 65535 is refused there (TDSL_ERROR_TOO_LARGE).
bool stepsGrid(const Launch &L) {
  if (L.Node->Class == LaunchClass::Contraction)
    return false;
  for (int D = 1; D < 3; ++D) {
    std::optional<int64_t> G = asConstInt(L.Shape.Grid[D]);
    if (!G || *G > 65535)
      return true;
  }
  return false;
}

/// One step of a launcher: allocate a global buffer, launch, or free.
struct HostStep {
  enum Kind { Alloc, Run, Free } K;
  const Buffer *Buf = nullptr; ///< Alloc, Free
  unsigned Launch = 0;         ///< Run
  unsigned Temp = 0;           ///< Alloc, Free: its slot
  unsigned Line = 0;
};

class FuncEmitter {
public:
  /// FileNames holds the camel-case names of the file's kernels and
  /// launch constants so far; this one's are added.
  FuncEmitter(const Func &F, const CudaEmitOptions &Opts, llvm::raw_ostream &OS,
              llvm::StringSet<> &FileNames)
      : F(F), Opts(Opts), OS(OS), FileNames(FileNames),
        CamelName(uniqueName(camelCase(F.Name), "Plan")) {
    for (const std::string &S : F.Sizes)
      Sizes.insert(S);
    for (const Buffer &B : F.Params)
      Globals[B.Name] = &B;
  }

  /// Plans launches and host steps; an error message if the IR cannot be
  /// emitted.
  std::string analyze() {
    std::string Err = walkTop(F.Body);
    if (!Err.empty())
      return Err;
    for (Launch &L : Launches)
      if (std::string E = analyzeLaunch(L); !E.empty())
        return E;
    return "";
  }

  /// The names this Func defines at file scope with external linkage.
  std::vector<std::string> externalNames() const {
    const std::string P = Opts.SymbolPrefix + F.Name;
    std::vector<std::string> Names = {P, P + "_with_workspace", P + "_launch_info",
                                      P + "_workspace_size"};
    for (const Launch &L : Launches) {
      Names.push_back(kernelName(L));
      if (L.Version)
        Names.push_back(kernelName(L, true));
    }
    return Names;
  }

  void emitKernels();
  void emitHost();

private:
  const Func &F;
  const CudaEmitOptions &Opts;
  llvm::raw_ostream &OS;
  llvm::StringSet<> &FileNames;
  /// F's name in the host code's identifiers (SoftmaxPlan, runSoftmax).
  std::string CamelName;
  llvm::StringSet<> Sizes;
  llvm::StringMap<const Buffer *> Globals;
  std::vector<Launch> Launches;
  std::vector<HostStep> Steps;
  std::vector<const Buffer *> Temps;
  // Kernel emission state.
  unsigned Indent = 0;
  unsigned CurLine = 0;
  const Launch *Cur = nullptr;
  bool CurGeneral = false; ///< writing the kernel of Cur->Version's else branch
  /// The extent constants of the shared tiles in scope (kBlockK = 32). No
  /// name of the program can take theirs: cName gives kUpperCamel ones a '_'.
  llvm::StringMap<int64_t> ExtentConsts;

  std::string walkTop(const Stmt &S);
  std::string analyzeLaunch(Launch &L);
  /// <prefix><func>_<launch>: stable, and says what the kernel computes;
  /// "_general" for the kernel of a versioned launch's else branch.
  std::string kernelName(const Launch &L, bool General = false) const {
    return Opts.SymbolPrefix + F.Name + "_" + L.Node->Name + (General ? "_general" : "");
  }
  std::string camelName() const { return CamelName; }
  /// Stem + Suffix, or with a number before Suffix where FileNames has it:
  /// names that differ only in case or underscores (y and Y, a_b and aB)
  /// camel-case alike. Returns the stem so numbered.
  std::string uniqueName(const std::string &Stem, llvm::StringRef Suffix) {
    std::string S = Stem;
    for (unsigned I = 2; !FileNames.insert(S + Suffix.str()).second; ++I)
      S = Stem + std::to_string(I);
    return S;
  }

  llvm::raw_ostream &line() { return OS.indent(Indent * 2); }
  void lineComment(unsigned Line);
  void emitStmt(const Stmt &S, ExprWriter &W, bool Last);
  void emitBody(const Stmt &S, ExprWriter &W) {
    ++Indent;
    emitStmt(S, W, /*Last=*/true);
    --Indent;
  }
  void emitFor(const ForNode &N, ExprWriter &W, bool Last);
  int64_t quickRun(const ForNode &N, const ExprWriter &W);
  bool emitVectorCopy(const ForNode &N, ExprWriter &W);
  bool emitPairedFold(const ForNode &N, ExprWriter &W);
  void declareShared(const AllocateNode &N, const std::string &T, BufferRef &Ref);
  std::string extentConst(const Buffer &B, unsigned D, int64_t Value);
  void emitPlan();
  void emitWorkspaceLayout();
  void emitPlanCall();
  void emitPointerChecks();
  /// "runSoftmax(plan, X, Y, R, C, <Workspace>, <Temps>, stream)"; the two
  /// are left out for a Func without temporaries.
  std::string runCall(const std::string &Workspace, const std::string &Temps) const;
  void emitRun();
  void emitLauncher();
  void emitWorkspaceLauncher();
  void emitLaunchInfo();
  void emitWorkspaceSize();
};

std::string FuncEmitter::walkTop(const Stmt &S) {
  if (S->Kind == StmtKind::Block) {
    for (const Stmt &Child : static_cast<const BlockNode &>(*S).Stmts)
      if (std::string E = walkTop(Child); !E.empty())
        return E;
    return "";
  }
  if (S->Kind == StmtKind::Allocate) {
    const auto &A = static_cast<const AllocateNode &>(*S);
    if (A.Buf.Scope == MemScope::Global) {
      unsigned Slot = Temps.size();
      Temps.push_back(&A.Buf);
      Globals[A.Buf.Name] = &A.Buf;
      Steps.push_back({HostStep::Alloc, &A.Buf, 0, Slot, A.SrcLine});
      std::string E = walkTop(A.Body);
      Steps.push_back({HostStep::Free, &A.Buf, 0, Slot, A.SrcLine});
      return E;
    }
  }
  if (S->Kind != StmtKind::Launch)
    return "'" + F.Name + "' has a statement outside any launch at the host level (" +
           (S->Kind == StmtKind::Let ? "a let" : "only launches and global allocations are") +
           " emitted there)";
  Launch L;
  L.Node = static_cast<const LaunchNode *>(S.get());
  L.Index = Launches.size();
  Steps.push_back({HostStep::Run, nullptr, L.Index, 0, S->SrcLine});
  Launches.push_back(std::move(L));
  return "";
}

std::string FuncEmitter::analyzeLaunch(Launch &L) {
  L.Shape = launchShape(*L.Node);
  const LaunchShape &Sh = L.Shape;
  std::string Where = "launch '" + L.Node->Name + "' of '" + F.Name + "'";
  if (!Sh.GridProblems.empty())
    return Where + " " + Sh.GridProblems.front();
  if (!Sh.NonConstantThreads.empty())
    return Where + " has a thread loop of non-constant extent ('" +
           Sh.NonConstantThreads.front()->Var + "')";
  if (!Sh.NonConstantShared.empty())
    return "shared buffer '" + Sh.NonConstantShared.front() + "' has a non-constant shape";
  if (std::string Op = unsupportedStatement(L.Node->Body); !Op.empty())
    return Where + " holds " + Op + ", which no backend path writes yet";
  // Kernel parameters: the Func's tensors in signature order, then the
  // temporaries in allocation order.
  for (const Buffer &B : F.Params)
    if (llvm::is_contained(Sh.Buffers, B.Name))
      L.Globals.push_back(&B);
  for (const Buffer *B : Temps)
    if (llvm::is_contained(Sh.Buffers, B->Name) && !Sh.LocalBuffers.count(B->Name))
      L.Globals.push_back(B);
  for (const Expr &G : Sh.Grid) {
    for (const std::string &Name : varsOf(G))
      if (!Sizes.count(Name))
        return "the grid of " + Where + " depends on '" + Name + "', not only on sizes";
  }
  L.Version = launchVersion(*L.Node, Sizes);
  return "";
}

void FuncEmitter::lineComment(unsigned Line) {
  if (!Line || Line == CurLine)
    return;
  CurLine = Line;
  std::string Src;
  if (Line <= Opts.SourceLines.size())
    Src = Opts.SourceLines[Line - 1];
  // Printable ASCII only, and no trailing '\' (it would splice the next line).
  std::string Clean;
  for (char C : Src)
    Clean += (C >= 0x20 && C < 0x7f) ? C : (C == '\t' ? ' ' : '?');
  size_t Begin = Clean.find_first_not_of(' ');
  size_t End = Clean.find_last_not_of(" \\");
  Clean = Begin == std::string::npos ? "" : Clean.substr(Begin, End - Begin + 1);
  line() << "// line " << Line << (Clean.empty() ? "" : ": ") << Clean << "\n";
}

/// A `vectorize` copy loop as one wide access on its shared side(s): the
/// vector pass proved the alignment; register sides move component-wise.
bool FuncEmitter::emitVectorCopy(const ForNode &N, ExprWriter &W) {
  int64_t Width = 0;
  const StoreNode *Copy = vectorCopy(N, Width);
  if (!Copy)
    return false;
  const StoreNode &St = *Copy;
  const auto &Ld = static_cast<const LoadNode &>(*St.Value);
  const BufferRef &D = W.Buffers.lookup(St.Buffer), &S = W.Buffers.lookup(Ld.Buffer);
  if (!D.Buf || !S.Buf)
    return false;
  // 4-byte elements travel as float2/4 (int2/4) and their components;
  // 2-byte ones (f16, bf16) as the bits of uint2/4, two to a word
  // (tdsl_pack, tdsl_unpack); 1-byte ones (i8) as the bits of uint1/2/4,
  // four to a word (tdsl_pack4, tdsl_unpack_byte).
  DType T = St.Value->Type;
  int64_t EB = dtypeBytes(T);
  bool Bits = EB == 2, Bytes = EB == 1;
  std::string VT, ET = backend::deviceElementType(T);
  if (T == DType::F32)
    VT = "float" + std::to_string(Width);
  else if (T == DType::I32)
    VT = "int" + std::to_string(Width);
  else if (Bits && (Width == 4 || Width == 8))
    VT = Width == 4 ? "uint2" : "uint4";
  else if (Bytes && (Width == 4 || Width == 8 || Width == 16))
    VT = "uint" + std::to_string(Width / 4);
  else
    return false;
  auto At = [&](const Buffer &B, const std::vector<Expr> &Idx, int64_t E) {
    std::vector<Expr> I;
    for (const Expr &X : Idx)
      I.push_back(simplifyExpr(substitute(X, N.Var, intImm(E))));
    return W.element(B, I);
  };
  static const char *Lane[] = {".x", ".y", ".z", ".w"};
  auto Part = [&](int64_t E) {
    if (Bytes)
      return "tdsl_unpack_byte(tdsl_vec" + std::string(Lane[E / 4]) + ", " +
             std::to_string(E % 4) + ")";
    if (!Bits)
      return "tdsl_vec" + std::string(Lane[E]);
    return "tdsl_unpack<" + ET + ">(tdsl_vec" + Lane[E / 2] + ", " + std::to_string(E % 2) + ")";
  };
  bool WideLoad = S.Buf->Scope != MemScope::Register, WideStore = D.Buf->Scope != MemScope::Register;
  line() << "{ // [vectorize] " << Width << " elements in one " << EB * Width << "-byte access\n";
  ++Indent;
  if (WideLoad) {
    line() << "const " << VT << " tdsl_vec = *reinterpret_cast<const " << VT << " *>(&"
           << At(*S.Buf, Ld.Indices, 0) << ");\n";
  } else if (Bits) {
    std::string Pack = S.RoundAtStore ? "tdsl_pack_rn<" + ET + ">(" : "tdsl_pack(";
    line() << "const " << VT << " tdsl_vec = make_" << VT << "(";
    for (int64_t E = 0; E < Width; E += 2)
      OS << (E ? ", " : "") << Pack << At(*S.Buf, Ld.Indices, E) << ", "
         << At(*S.Buf, Ld.Indices, E + 1) << ")";
    OS << ");\n";
  } else if (Bytes) {
    line() << "const " << VT << " tdsl_vec = make_" << VT << "(";
    for (int64_t E = 0; E < Width; E += 4)
      OS << (E ? ", " : "") << "tdsl_pack4(" << At(*S.Buf, Ld.Indices, E) << ", "
         << At(*S.Buf, Ld.Indices, E + 1) << ", " << At(*S.Buf, Ld.Indices, E + 2) << ", "
         << At(*S.Buf, Ld.Indices, E + 3) << ")";
    OS << ");\n";
  } else {
    line() << "const " << VT << " tdsl_vec = make_" << VT << "(";
    for (int64_t E = 0; E < Width; ++E)
      OS << (E ? ", " : "") << At(*S.Buf, Ld.Indices, E);
    OS << ");\n";
  }
  if (WideStore) {
    line() << "*reinterpret_cast<" << VT << " *>(&" << At(*D.Buf, St.Indices, 0)
           << ") = tdsl_vec;\n";
  } else {
    for (int64_t E = 0; E < Width; ++E)
      line() << At(*D.Buf, St.Indices, E) << " = " << Part(E) << ";\n";
  }
  --Indent;
  line() << "}\n";
  return true;
}

/// Whether E reads variable V.
bool readsVar(const Expr &E, const std::string &V) {
  struct Scan : IRVisitor {
    const std::string &V;
    bool Found = false;
    explicit Scan(const std::string &V) : V(V) {}
    using IRVisitor::visit;
    void visitVar(const VarNode &N) override { Found |= N.Name == V; }
  } S(V);
  S.visit(E);
  return S.Found;
}

/// Whether E is even for every value of its variables: an even constant,
/// a product with an even factor, a sum or difference of even terms.
bool isEven(const Expr &E) {
  if (std::optional<int64_t> C = asConstInt(E))
    return *C % 2 == 0;
  if (E->Kind != ExprKind::Binary)
    return false;
  const auto &B = static_cast<const BinaryNode &>(*E);
  switch (B.Op) {
  case BinaryOp::Mul: return isEven(B.A) || isEven(B.B);
  case BinaryOp::Add:
  case BinaryOp::Sub: return isEven(B.A) && isEven(B.B);
  default: return false;
  }
}

/// A run's max (min) in pairs: N, an unrolled loop of an even number of
/// steps from 0 whose body is `acc[..] = max(acc[..], f32(R[B + v]))`, R a
/// register run of f16 or bf16 at an even B, is written as max.f16x2
/// (max.bf16x2) over the run's pairs, then the larger of the last pair's
/// halves folded into acc: three instructions where a run of 8 took
/// sixteen (each half converted, then folded). Both ignore NaN as fmaxf
/// does, and either zero may come out of 0 and -0, as dsl/LANGUAGE.md
/// allows max= (the conversion is exact, so the larger half is the larger
/// float).
bool FuncEmitter::emitPairedFold(const ForNode &N, ExprWriter &W) {
  std::optional<int64_t> Steps = asConstInt(N.Extent);
  if ((N.Loop != ForKind::Unrolled && N.Loop != ForKind::Vectorized) || asConstInt(N.Min) != 0 ||
      !Steps || *Steps < 2 || *Steps % 2 || *Steps > 16)
    return false;
  Stmt Body = stripBlocks(N.Body);
  if (Body->Kind != StmtKind::Store)
    return false;
  const auto &St = static_cast<const StoreNode &>(*Body);
  if (St.Value->Kind != ExprKind::Binary || St.Value->Type != DType::F32)
    return false;
  const auto &Fold = static_cast<const BinaryNode &>(*St.Value);
  if (Fold.Op != BinaryOp::Max && Fold.Op != BinaryOp::Min)
    return false;
  // acc[..] = op(acc[..], f32(R[..., B + v])), acc free of v.
  const Expr &Acc = Fold.A;
  if (!structurallyEqual(Acc, load(Acc->Type, St.Buffer, St.Indices)) || readsVar(Acc, N.Var) ||
      Fold.B->Kind != ExprKind::Cast)
    return false;
  const Expr &Half = static_cast<const CastNode &>(*Fold.B).A;
  if ((Half->Type != DType::F16 && Half->Type != DType::BF16) || Half->Kind != ExprKind::Load)
    return false;
  const auto &Ld = static_cast<const LoadNode &>(*Half);
  const BufferRef &Run = W.Buffers.lookup(Ld.Buffer);
  const Buffer *R = Run.Buf, *A = W.Buffers.lookup(St.Buffer).Buf;
  if (!R || !A || R->Scope != MemScope::Register || A->Scope != MemScope::Register ||
      Run.RoundAtStore || Ld.Indices.empty())
    return false;
  for (size_t I = 0; I + 1 < Ld.Indices.size(); ++I)
    if (readsVar(Ld.Indices[I], N.Var))
      return false;
  // The run's pairs must be whole 32-bit words: B even.
  Expr First = simplifyExpr(substitute(Ld.Indices.back(), N.Var, intImm(0)));
  Expr Next = simplifyExpr(substitute(Ld.Indices.back(), N.Var, intImm(1)));
  if (!structurallyEqual(simplifyExpr(add(First, intImm(1))), Next) || !isEven(First))
    return false;
  auto At = [&](int64_t E) {
    std::vector<Expr> I;
    for (const Expr &X : Ld.Indices)
      I.push_back(simplifyExpr(substitute(X, N.Var, intImm(E))));
    return W.element(*R, I);
  };
  const bool Max = Fold.Op == BinaryOp::Max, BF = Half->Type == DType::BF16;
  const std::string Pair = BF ? "__nv_bfloat162" : "__half2", Op = Max ? "__hmax2" : "__hmin2",
                    Make = BF ? "__halves2bfloat162" : "__halves2half2";
  auto PairAt = [&](int64_t E) { return Make + "(" + At(E) + ", " + At(E + 1) + ")"; };
  line() << "{ // [backend] the run's " << (Max ? "max" : "min") << " by pairs of halves ("
         << (Max ? "max" : "min") << (BF ? ".bf16x2" : ".f16x2") << "), then of the two left\n";
  ++Indent;
  line() << Pair << " tdsl_pair = " << PairAt(0) << ";\n";
  for (int64_t E = 2; E < *Steps; E += 2)
    line() << "tdsl_pair = " << Op << "(tdsl_pair, " << PairAt(E) << ");\n";
  std::string F = Max ? "fmaxf" : "fminf", Dst = W.element(*A, St.Indices);
  line() << Dst << " = " << F << "(" << Dst << ", " << F
         << "(__low2float(tdsl_pair), __high2float(tdsl_pair)));\n";
  --Indent;
  line() << "}\n";
  return true;
}

/// The steps of N where it is a run whose f32 quotients may take
/// tdsl_fdiv's fast path alone, the run computed again where one fails, else
/// 0: outside such a run, an unrolled loop from 0 of at most 16 steps whose
/// body only stores to registers it does not read (so a second pass stores
/// the same values, each now exact), with an inline f32 division and no
/// warp shuffle. Each quotient then spares the branch around tdsl_fdiv's
/// wide path, which a softmax's every element takes.
int64_t FuncEmitter::quickRun(const ForNode &N, const ExprWriter &W) {
  if (W.Quick != ExprWriter::QuickPass::None ||
      (N.Loop != ForKind::Unrolled && N.Loop != ForKind::Vectorized) || asConstInt(N.Min) != 0)
    return 0;
  std::optional<int64_t> Steps = asConstInt(N.Extent);
  if (!Steps || *Steps < 1 || *Steps > 16)
    return 0;
  struct Scan : IRVisitor {
    const ExprWriter &W;
    bool Ok = true, Divides = false;
    llvm::StringSet<> Stored, Loaded;
    explicit Scan(const ExprWriter &W) : W(W) {}
    void visit(const Stmt &S) override {
      if (S->Kind == StmtKind::Block || S->Kind == StmtKind::Store)
        IRVisitor::visit(S);
      else
        Ok = false;
    }
    using IRVisitor::visit;
    void visitStore(const StoreNode &N) override {
      const Buffer *B = W.Buffers.lookup(N.Buffer).Buf;
      Ok &= B && B->Scope == MemScope::Register;
      Stored.insert(N.Buffer);
      IRVisitor::visitStore(N);
    }
    void visitLoad(const LoadNode &N) override {
      Loaded.insert(N.Buffer);
      IRVisitor::visitLoad(N);
    }
    void visitBinary(const BinaryNode &N) override {
      Divides |= N.Op == BinaryOp::Div && W.inlineFDiv(N.A->Type);
      IRVisitor::visitBinary(N);
    }
    // The second pass runs on the lanes whose quotients failed alone: a
    // shuffle there would read lanes that do not take part.
    void visitCall(const CallNode &N) override {
      Ok &= !isWarpShuffle(N.Fn);
      IRVisitor::visitCall(N);
    }
  } S(W);
  S.visit(N.Body);
  for (const auto &Name : S.Stored)
    S.Ok &= !S.Loaded.count(Name.getKey());
  return S.Ok && S.Divides ? *Steps : 0;
}

void FuncEmitter::emitFor(const ForNode &N, ExprWriter &W, bool Last) {
  std::string V = cName(N.Var);
  std::string Min = W.str(N.Min);
  bool ZeroMin = asConstInt(N.Min) == 0;
  // The loop's end, Min + Extent.
  auto End = [&] {
    return ZeroMin ? W.str(N.Extent, RelPrec - 1)
                   : W.str(simplifyExpr(add(N.Min, N.Extent)), RelPrec - 1);
  };
  auto Bind = [&](const std::string &Hw) {
    return "const Index " + V + " = Index(" + Hw + ")" + (ZeroMin ? "" : " + " + W.str(N.Min, AddPrec)) + ";";
  };
  if (N.Loop == ForKind::Vectorized && emitVectorCopy(N, W))
    return;
  if (emitPairedFold(N, W))
    return;
  // Serial, unrolled and vectorized loops are C++ loops.
  if (N.Loop == ForKind::Serial || N.Loop == ForKind::Unrolled ||
      N.Loop == ForKind::Vectorized) {
    auto Loop = [&](const std::string &Lo, const std::string &Hi) {
      if (N.Loop == ForKind::Unrolled)
        line() << "#pragma unroll\n";
      else if (N.Loop == ForKind::Vectorized)
        line() << "#pragma unroll // vectorize: scalar code, unrolled\n";
      else if (N.Unroll > 0)
        line() << "#pragma unroll " << N.Unroll << "\n";
      line() << "for (" << W.type(DType::I64) << " " << V << " = " << Lo << "; " << V << " < "
             << Hi << "; ++" << V << ") {\n";
      emitBody(N.Body, W);
      line() << "}\n";
    };
    const int64_t Steps = quickRun(N, W);
    if (!Steps) {
      Loop(Min, End());
      return;
    }
    // Groups of at most kQuickGroup quotients: each group's terms stay live
    // until its test, which a whole run of 8 made spill where registers
    // are short (a softmax's block per row).
    constexpr int64_t kQuickGroup = 4;
    const int64_t Group = Steps % kQuickGroup == 0 ? kQuickGroup : Steps;
    for (int64_t Lo = 0; Lo < Steps; Lo += Group) {
      std::string From = std::to_string(Lo), To = std::to_string(Lo + Group);
      line() << "{ // [backend] the quotients by tdsl_fdiv's fast path, its range tested once for "
             << Group << ";\n";
      line() << "  //   where a quotient leaves it, these again by the wide path\n";
      ++Indent;
      line() << "bool tdsl_quick = true;\n";
      W.Quick = ExprWriter::QuickPass::Try;
      Loop(From, To);
      line() << "if (!tdsl_quick) {\n";
      ++Indent;
      W.Quick = ExprWriter::QuickPass::Wide;
      Loop(From, To);
      W.Quick = ExprWriter::QuickPass::None;
      --Indent;
      line() << "}\n";
      --Indent;
      line() << "}\n";
    }
    return;
  }
  // GPU loops bind their variable to the hardware index; threads beyond the
  // loop's extent skip its body.
  std::string Hw, Guard;
  int64_t Ext = asConstInt(N.Extent).value_or(0);
  // A block loop along y or z whose extent may pass the grid's 65535
  // steps by the grid's size where the launch allows it (the launcher
  // stops the grid there): a batch of 100000 transposes runs each block
  // over two of them.
  if (stepsGrid(*Cur) && (N.Loop == ForKind::BlockY || N.Loop == ForKind::BlockZ) &&
      !(Ext > 0 && Ext <= 65535)) {
    const char *Dim = N.Loop == ForKind::BlockY ? "y" : "z";
    line() << "// blocks along " << Dim << " stop at 65535: each steps over the rest\n";
    line() << "for (Index " << V << " = Index(blockIdx." << Dim << ")"
           << (ZeroMin ? "" : " + " + W.str(N.Min, AddPrec)) << "; " << V << " < " << End() << "; "
           << V << " += Index(gridDim." << Dim << ")) {\n";
    emitBody(N.Body, W);
    // Every thread of the block runs the loop alike; the next step's
    // copies may land in tiles this one still reads.
    ++Indent;
    line() << "__syncthreads();\n";
    --Indent;
    line() << "}\n";
    return;
  }
  switch (N.Loop) {
  case ForKind::BlockX: Hw = "blockIdx.x"; break;
  case ForKind::BlockY: Hw = "blockIdx.y"; break;
  case ForKind::BlockZ: Hw = "blockIdx.z"; break;
  case ForKind::ThreadX:
    Hw = "threadIdx.x";
    if (Ext < Cur->Shape.Block[0])
      Guard = "threadIdx.x < " + std::to_string(Ext);
    break;
  case ForKind::ThreadY:
    Hw = "threadIdx.y";
    if (Ext < Cur->Shape.Block[1])
      Guard = "threadIdx.y < " + std::to_string(Ext);
    break;
  case ForKind::ThreadZ:
    Hw = "threadIdx.z";
    if (Ext < Cur->Shape.Block[2])
      Guard = "threadIdx.z < " + std::to_string(Ext);
    break;
  case ForKind::Warp:
    Hw = "threadIdx.x / 32";
    if (Ext * 32 < Cur->Shape.Block[0])
      Guard = "threadIdx.x / 32 < " + std::to_string(Ext);
    break;
  case ForKind::Lane:
    Hw = "threadIdx.x % 32";
    if (Ext < 32 && Ext < Cur->Shape.Block[0])
      Guard = "threadIdx.x % 32 < " + std::to_string(Ext);
    break;
  default: break;
  }
  if (!Guard.empty()) {
    line() << "if (" << Guard << ") {\n";
    ++Indent;
    line() << Bind(Hw) << "\n";
    emitStmt(N.Body, W, true);
    --Indent;
    line() << "}\n";
    return;
  }
  if (!Last) {
    line() << "{\n";
    ++Indent;
  }
  line() << Bind(Hw) << "\n";
  emitStmt(N.Body, W, true);
  if (!Last) {
    --Indent;
    line() << "}\n";
  }
}

/// The constant that names dim D of shared tile B, of value Value: kBlockK
/// from block_k, declared here unless one in scope already holds Value. A
/// name in scope with another value takes the tile's name too
/// (kBTileStages), then a number.
std::string FuncEmitter::extentConst(const Buffer &B, unsigned D, int64_t Value) {
  std::string Word = camelCase(B.ExtentNames[D]);
  std::string C = "k" + Word;
  auto Free = [&](const std::string &Name) {
    auto It = ExtentConsts.find(Name);
    return It == ExtentConsts.end() || It->second == Value;
  };
  if (!Free(C))
    C = "k" + camelCase(B.Name) + Word;
  for (unsigned I = 2; !Free(C); ++I)
    C = "k" + camelCase(B.Name) + Word + std::to_string(I);
  if (!ExtentConsts.count(C)) {
    line() << "constexpr int " << C << " = " << Value << ";\n";
    ExtentConsts[C] = Value;
  }
  return C;
}

/// A shared tile as a C array of its shape, its extents named where the
/// pass that made it named them: `float A_tile[kStages][kTileK][kBlockM +
/// 4]`. A swizzle permutes within periods of 2^(Base + Shift + Bits)
/// elements, so when the inner dims hold whole periods (a ring of stages)
/// the tile is an array of stages, each one swizzled offset: the swizzle
/// is then the same in every stage and the compiler keeps it out of the k
/// loop. Otherwise a swizzled tile is one swizzled offset. Beyond 48 KiB
/// the tile is a pointer into the dynamic buffer tdsl_smem. C widens each
/// subscript to 64 bits on its own, where a flat offset was one 32-bit sum:
/// a kernel at its register bound can pay for that (the CUDA-core i8 GEMM
/// spills a few bytes at min_blocks = 2; tensor cores take it on sm_80+).
void FuncEmitter::declareShared(const AllocateNode &N, const std::string &T, BufferRef &Ref) {
  const Buffer &B = N.Buf;
  auto Extent = [&](unsigned D) { return asConstInt(simplifyExpr(B.Shape[D])).value_or(1); };
  Ref.Subscripts = B.rank();
  if (B.Swz) {
    int64_t Period = int64_t(1) << (B.Swz.Base + B.Swz.Shift + B.Swz.Bits), Inner = 1;
    for (unsigned D = 1; D < B.rank(); ++D)
      Inner *= Extent(D);
    Ref.Subscripts = B.rank() >= 2 && Inner > 0 && Inner % Period == 0 ? 1 : 0;
  }
  // A pointer into tdsl_smem spells the dims after its first subscript in
  // its type; those before are only in a comment, so they get no constant.
  bool Dynamic = Cur->dynamicShared();
  unsigned Spelled = Dynamic ? std::min(1u, Ref.Subscripts) : 0;
  if (Dynamic && !Ref.Subscripts)
    Spelled = B.rank();
  std::vector<std::string> &Dims = Ref.Dims;
  for (unsigned D = 0; D < B.rank(); ++D) {
    int64_t Pad = D < B.Padding.size() ? B.Padding[D] : 0;
    std::string C = D < B.ExtentNames.size() && D >= Spelled ? extentConst(B, D, Extent(D)) : "";
    Dims.push_back(C.empty() ? std::to_string(Extent(D) + Pad)
                   : Pad     ? C + " + " + std::to_string(Pad)
                             : C);
  }
  // The subscripted dims, then the swizzled rest as one.
  std::vector<std::string> Decl(Dims.begin(), Dims.begin() + Ref.Subscripts);
  if (Ref.Subscripts < B.rank())
    Decl.push_back(llvm::join(llvm::ArrayRef(Dims).drop_front(Ref.Subscripts), " * "));
  if (Decl.empty())
    Decl.push_back("1");
  std::string Name = cName(B.Name);
  if (!Dynamic) {
    line() << "__shared__ __align__(16) " << T << " " << Name;
    for (const std::string &D : Decl)
      OS << "[" << D << "]";
    OS << ";\n";
    return;
  }
  std::string Rows, Comment = Decl.front();
  for (const std::string &D : llvm::ArrayRef(Decl).drop_front())
    Rows += "[" + D + "]";
  if (Ref.Subscripts && !B.ExtentNames.empty())
    Comment = B.ExtentNames.front() + ": " + Comment;
  std::string Ptr = Rows.empty() ? T + " *" : T + " (*)" + Rows;
  // A launch's kernel for unaligned tensors keeps its mbarriers unused.
  if (Cur->Shape.Mbarriers.count(B.Name))
    line() << "[[maybe_unused]] ";
  else
    line();
  OS << (Rows.empty() ? T + " *const " + Name : T + " (*const " + Name + ")" + Rows)
         << " = reinterpret_cast<" << Ptr << ">("
         << (Cur->Shape.TensorMaps.empty() ? "tdsl_smem" : "tdsl_tiles") << " + "
         << Cur->Shape.sharedOffset(&N)
         << "); // " << Comment << "\n";
}

void FuncEmitter::emitStmt(const Stmt &S, ExprWriter &W, bool Last) {
  lineComment(S->SrcLine);
  // Declarations (lets, allocs) go into the current C++ scope when nothing
  // follows them there, and into a { } scope of their own otherwise.
  auto OpenScope = [&]() {
    if (!Last) {
      line() << "{\n";
      ++Indent;
    }
  };
  auto CloseScope = [&]() {
    if (!Last) {
      --Indent;
      line() << "}\n";
    }
  };
  switch (S->Kind) {
  case StmtKind::Block: {
    const auto &B = static_cast<const BlockNode &>(*S);
    for (size_t I = 0; I < B.Stmts.size(); ++I)
      emitStmt(B.Stmts[I], W, Last && I + 1 == B.Stmts.size());
    return;
  }
  case StmtKind::For: emitFor(static_cast<const ForNode &>(*S), W, Last); return;
  case StmtKind::If: {
    const auto &N = static_cast<const IfNode &>(*S);
    if (Cur && &N == Cur->Version) {
      // The launcher evaluated the condition and chose this kernel.
      line() << "{ // this kernel runs where " << (CurGeneral ? "!(" : "") << W.str(N.Cond)
             << (CurGeneral ? ")" : "") << "\n";
      emitBody(CurGeneral ? N.Else : N.Then, W);
      line() << "}\n";
      return;
    }
    line() << "if (" << W.str(N.Cond) << ") {\n";
    emitBody(N.Then, W);
    if (N.Else) {
      line() << "} else {\n";
      emitBody(N.Else, W);
    }
    line() << "}\n";
    return;
  }
  case StmtKind::Let: {
    const auto &N = static_cast<const LetNode &>(*S);
    OpenScope();
    line() << "const " << W.type(N.Value->Type) << " " << cName(N.Var) << " = "
           << W.str(N.Value) << ";\n";
    emitStmt(N.Body, W, true);
    CloseScope();
    return;
  }
  case StmtKind::Store: {
    const auto &N = static_cast<const StoreNode &>(*S);
    const BufferRef &R = W.Buffers.lookup(N.Buffer);
    if (R.Buf && isPacked(*R.Buf)) {
      line() << "tdsl_frag_set(" << cName(N.Buffer) << ", " << W.offset(*R.Buf, N.Indices) << ", "
             << W.str(N.Value) << ");\n";
      return;
    }
    std::string Dst = R.Buf ? W.element(*R.Buf, N.Indices) : cName(N.Buffer) + "[0]";
    // tf32(x) into an mma's fragment needs only the bits the tensor core reads.
    if (R.Buf && R.Buf->Scope == MemScope::Fragment && R.Buf->Type == DType::TF32 &&
        N.Value->Kind == ExprKind::Cast && N.Value->Type == DType::TF32) {
      const Expr &A = static_cast<const CastNode &>(*N.Value).A;
      if (A->Type == DType::F32) {
        line() << Dst << " = tdsl_tf32_operand(" << W.str(A) << ");\n";
        return;
      }
    }
    const Expr &V =
        R.RoundAtStore ? static_cast<const CastNode &>(*N.Value).A : N.Value; // f32, unrounded
    line() << Dst << " = " << W.str(V) << ";\n";
    return;
  }
  case StmtKind::Allocate: {
    const auto &N = static_cast<const AllocateNode &>(*S);
    const Buffer &B = N.Buf;
    int64_t Elems = 1;
    for (unsigned D = 0; D < B.rank(); ++D)
      Elems *= asConstInt(simplifyExpr(B.Shape[D])).value_or(1) +
               (D < B.Padding.size() ? B.Padding[D] : 0);
    OpenScope();
    std::string T = W.type(B.Type), Name = cName(B.Name);
    if (Cur && Cur->Shape.Mbarriers.count(B.Name))
      T = "uint64_t"; // the hardware's word, not an index
    BufferRef Ref;
    Ref.Buf = &B;
    llvm::StringMap<int64_t> OuterExtents = ExtentConsts;
    if (B.Scope == MemScope::Shared)
      declareShared(N, T, Ref);
    else if (isScalar(B))
      line() << T << " " << Name << ";\n";
    else if (isPacked(B))
      line() << "uint32_t " << Name << "[" << (Elems * dtypeBytes(B.Type) + 3) / 4 << "]; // "
             << Elems << " x " << T << ", packed\n";
    else if ((Ref.RoundAtStore = roundsAtStore(B, N.Body)))
      line() << "float " << Name << "[" << Elems << "]; // [backend] " << dtypeName(B.Type)
             << " values kept as f32, rounded two at a time where the run is stored\n";
    else
      line() << T << " " << Name << "[" << Elems << "];\n";
    BufferRef Saved = W.Buffers.lookup(B.Name);
    W.Buffers[B.Name] = Ref;
    emitStmt(N.Body, W, true);
    W.Buffers[B.Name] = Saved;
    ExtentConsts = std::move(OuterExtents);
    CloseScope();
    return;
  }
  case StmtKind::Barrier: line() << "__syncthreads();\n"; return;
  case StmtKind::Note: {
    // Wrapped at 100 columns, words kept whole; continuation lines are
    // indented so that one note reads as one paragraph.
    llvm::StringRef Rest = static_cast<const NoteNode &>(*S).Text;
    const size_t Width = std::max<size_t>(100 - std::min<size_t>(Indent * 2, 60) - 3, 30);
    bool First = true;
    while (!Rest.empty()) {
      size_t Room = First ? Width : Width - 2;
      size_t Cut = Rest.size() <= Room ? Rest.size() : Rest.substr(0, Room + 1).rfind(' ');
      if (Cut == llvm::StringRef::npos || Cut == 0)
        Cut = std::min(Rest.find(' '), Rest.size());
      line() << (First ? "// " : "//   ") << Rest.substr(0, Cut).rtrim() << "\n";
      Rest = Rest.substr(Cut).ltrim();
      First = false;
    }
    return;
  }
  case StmtKind::AsyncCopy: {
    const auto &N = static_cast<const AsyncCopyNode &>(*S);
    const BufferRef &D = W.Buffers.lookup(N.Dst), &Sr = W.Buffers.lookup(N.Src);
    std::string DE = W.element(*D.Buf, N.DstIndices), SE = W.element(*Sr.Buf, N.SrcIndices);
    int64_t Bytes = N.Elems * dtypeBytes(D.Buf->Type);
    std::string Valid = N.Valid ? W.str(N.Valid) : "true";
    if (D.Buf->Scope == MemScope::Shared && Sr.Buf->Scope == MemScope::Global &&
        (Bytes == 4 || Bytes == 8 || Bytes == 16)) {
      if (!N.Valid) {
        line() << "tdsl_cp_async<" << Bytes << ">(&" << DE << ", &" << SE << ", true);\n";
        return;
      }
      // Where the copy is not valid its address may lie outside the tensor;
      // with a source size of 0 it is not read.
      line() << "tdsl_cp_async<" << Bytes << ">(&" << DE << ", &" << SE << ", " << Valid
             << ");\n";
      return;
    }
    // Not global to shared, or not 4, 8 or 16 bytes: the data is visible only
    // after the async_wait that retires it, so a plain copy computes the same.
    line() << "for (int tdsl_e = 0; tdsl_e < " << N.Elems << "; ++tdsl_e) // async_copy\n";
    if (!N.Valid) {
      line() << "  (&" << DE << ")[tdsl_e] = (&" << SE << ")[tdsl_e];\n";
      return;
    }
    line() << "  (&" << DE << ")[tdsl_e] = " << Valid << " ? (&" << SE << ")[tdsl_e] : "
           << W.type(D.Buf->Type) << "(0);\n";
    return;
  }
  case StmtKind::AsyncCommit: line() << "tdsl_cp_async_commit();\n"; return;
  case StmtKind::AsyncWait:
    line() << "tdsl_cp_async_wait<" << static_cast<const AsyncWaitNode &>(*S).Pending
           << ">();\n";
    return;
  case StmtKind::Mbarrier: {
    const auto &N = static_cast<const MbarrierNode &>(*S);
    const Buffer &B = *W.Buffers.lookup(N.Buffer).Buf;
    std::string Bar = "&" + W.element(B, {N.Index});
    line() << "tdsl_mbarrier_" << mbarrierOpName(N.Op) << "(" << Bar;
    if (N.Value)
      OS << ", int(" << W.str(N.Value) << ")";
    OS << ");\n";
    return;
  }
  case StmtKind::TensorCopy: {
    const auto &N = static_cast<const TensorCopyNode &>(*S);
    const Buffer &D = *W.Buffers.lookup(N.Dst).Buf, &Bar = *W.Buffers.lookup(N.Bar).Buf;
    LaunchShape::TensorMapUse Use{N.Src, N.Box, tensorCopySwizzleBytes(D)};
    size_t Map = llvm::find(Cur->Shape.TensorMaps, Use) - Cur->Shape.TensorMaps.begin();
    line() << "tdsl_tensor_copy(&" << W.element(D, N.DstIndices) << ", &"
           << tensorMapParam(Cur->Shape, Map) << ", &" << W.element(Bar, {N.BarIndex});
    // The engine lists coordinates innermost first.
    for (size_t I = N.SrcIndices.size(); I-- > 0;)
      OS << ", int(" << W.str(N.SrcIndices[I]) << ")";
    OS << ");\n";
    return;
  }
  case StmtKind::Mma: {
    const auto &N = static_cast<const MmaNode &>(*S);
    const Buffer &C = *W.Buffers.lookup(N.C).Buf, &A = *W.Buffers.lookup(N.A).Buf,
                 &B = *W.Buffers.lookup(N.B).Buf;
    std::string Fn = "tdsl_mma_" + mmaShapeName(N.Shape).str();
    if (N.Shape == MmaShape::M16N8K16)
      Fn += "<" + W.type(A.Type) + ">";
    line() << Fn << "(" << W.registers(C, N.CIndices) << ", " << W.registers(A, N.AIndices)
           << ", " << W.registers(B, N.BIndices) << ");\n";
    return;
  }
  case StmtKind::LdMatrix: {
    const auto &N = static_cast<const LdMatrixNode &>(*S);
    const Buffer &D = *W.Buffers.lookup(N.Dst).Buf, &Src = *W.Buffers.lookup(N.Src).Buf;
    std::string Regs = W.registers(D, N.DstIndices);
    if (!isPacked(D))
      Regs = "reinterpret_cast<uint32_t *>(" + Regs + ")";
    if (N.Trans && dtypeBytes(Src.Type) == 1)
      line() << "tdsl_ldmatrix_bytes_trans<" << N.Count << ">(" << Regs << ", &"
             << W.element(Src, N.SrcIndices) << ");\n";
    else
      line() << "tdsl_ldmatrix<" << N.Count << ", " << (N.Trans ? "true" : "false") << ">(" << Regs
             << ", &" << W.element(Src, N.SrcIndices) << ");\n";
    if (D.Type == DType::TF32 && Src.Type == DType::F32) // rounds, as tf32(x)
      line() << "tdsl_tf32_operands<" << N.Count << ">(" << W.registers(D, N.DstIndices) << ");\n";
    return;
  }
  case StmtKind::Launch:
    // analyzeLaunch refuses both before anything is written.
    llvm_unreachable("statement the backend does not write");
  }
}

void FuncEmitter::emitKernels() {
  std::string Camel = camelName();
  for (const Launch &L : Launches) {
    Cur = &L;
    CurLine = 0;
    int64_t Threads = L.Shape.Block[0] * L.Shape.Block[1] * L.Shape.Block[2];
    std::string Const = uniqueName("k" + Camel + camelCase(L.Node->Name), "Threads") + "Threads";
    OS << "\n// Launch " << L.Index << " of " << F.Name << ", '" << L.Node->Name << "' ("
       << launchClassName(L.Node->Class) << "): blocks of " << L.Shape.Block[0] << " x "
       << L.Shape.Block[1] << " x " << L.Shape.Block[2] << " threads";
    if (L.Shape.SharedBytes)
      OS << ", " << L.Shape.SharedBytes << " B of shared memory";
    OS << ".\n";
    OS << "constexpr int " << Const << " = " << Threads << ";\n";
    // The knobs of this launch: the Func's pinned ones, then those a pass
    // chose for this launch alone.
    std::vector<Knob> Knobs = F.Schedule;
    Knobs.insert(Knobs.end(), L.Node->Knobs.begin(), L.Node->Knobs.end());
    // min_blocks asks ptxas to leave registers for that many resident
    // blocks per SM (a knob: register tiles trade occupancy for reuse). A
    // pinned value applies to every launch, so a launch of more threads
    // than that many blocks can hold (2048 per SM) asks only for the
    // blocks that fit. (checkSchedule has made sure a pinned knob is one
    // integer.)
    const Knob *MinBlocksKnob = findKnob(Knobs, "min_blocks");
    int64_t MinBlocks = std::min<int64_t>(
        MinBlocksKnob && MinBlocksKnob->Ints.size() == 1 ? MinBlocksKnob->Ints[0] : 0,
        2048 / std::max<int64_t>(Threads, 1));
    const Knob *FDivKnob = findKnob(Knobs, "fdiv");
    const bool InlineFDiv = FDivKnob && FDivKnob->Word == "inline";
    const std::string ExpFn = expSpelling(findKnob(Knobs, "fexp"));
    for (bool General : {false, true}) {
      if (General && !L.Version)
        break;
      CurGeneral = General;
      CurLine = 0;
      if (General)
        OS << "\n// The same launch where the condition of its version is false (the\n"
           << "// launcher tests it): its own kernel, so that each has its own registers.\n";
      else
        OS << "\n";
      OS << "template <typename Index>\n";
      // Past 1024 threads an SM, the fewest any architecture holds, the
      // count goes through tdsl_min_blocks, which caps it at the SM's
      // threads for the architecture nvcc compiles (tdsl/device.cuh).
      // Unasked, ptxas may hold a launch of 1024 threads to the registers
      // of two blocks an SM (32), where a 64-bit Index's addresses spill:
      // tdsl_index_blocks asks for one block for a 64-bit Index (tensors
      // of 2^31 elements or more) and leaves a 32-bit one unasked. So for
      // a row chain's launches, whose many mappings and versions made
      // ptxas hold the 64-bit kernel of 256 threads to 40 or 64 registers
      // and spill (softmax's peeled launch on sm_80, attention's).
      std::string Blocks;
      if (MinBlocks > 0)
        Blocks = MinBlocks * Threads > 1024
                     ? "tdsl_min_blocks(" + Const + ", " + std::to_string(MinBlocks) + ")"
                     : std::to_string(MinBlocks);
      else if (Threads == 1024 || L.Node->Class == LaunchClass::RowReduction)
        Blocks = "tdsl_index_blocks<Index>()";
      OS << "__global__ void __launch_bounds__(" << Const
         << (Blocks.empty() ? std::string() : ", " + Blocks) << ")\n";
      OS << kernelName(L, General) << "(";
      ExprWriter W(Sizes, /*Host=*/false);
      W.InlineFDiv = InlineFDiv;
      W.ExpFn = ExpFn;
      bool First = true;
      auto Param = [&](const std::string &P) {
        OS << (First ? "" : ", ") << P;
        First = false;
      };
      for (const Buffer *B : L.Globals) {
        std::string T = backend::deviceElementType(B->Type);
        bool ByValue = B->Role == BufferRole::Input && B->rank() == 0;
        W.Buffers[B->Name].Buf = B;
        W.Buffers[B->Name].ByValue = ByValue;
        if (ByValue)
          Param(T + " " + cName(B->Name));
        else
          Param((L.Shape.Stored.count(B->Name) ? "" : "const ") + T + " *__restrict__ " +
                cName(B->Name));
      }
      for (const auto &[Buf, Bytes] : L.Shape.AlignmentTests)
        Param("bool " + alignmentParam(Buf, Bytes));
      for (size_t I = 0; I < L.Shape.TensorMaps.size(); ++I)
        Param("const __grid_constant__ tdsl_tensor_map " + tensorMapParam(L.Shape, I));
      for (const std::string &S : F.Sizes)
        Param("Index " + cName(S));
      OS << ") {\n";
      Indent = 1;
      ExtentConsts.clear();
      // The knobs, where the reader of the kernel looks first: those pinned
      // and those a pass chose for the backend; what each pass chose from
      // them is in its own // [pass] comment below.
      if (!Knobs.empty()) {
        std::string Text;
        for (const Knob &K : Knobs) {
          std::string V = K.Word;
          for (size_t I = 0; I < K.Ints.size(); ++I)
            V += (I ? ", " : "") + std::to_string(K.Ints[I]);
          if (K.IsList)
            V = "[" + V + "]";
          Text += (Text.empty() ? "" : "; ") + K.Key + " = " + V +
                   (!K.SetBy.empty() ? " (chosen by " + K.SetBy + ")"
                    : K.Line         ? " (line " + std::to_string(K.Line) + ")"
                                     : " (command line)");
        }
        line() << "// schedule: " << Text << "\n";
      }
      if (!L.Shape.TensorMaps.empty())
        line() << "// the copy engine's swizzle runs on addresses: tiles from a multiple of "
               << LaunchShape::TensorCopyAlign << " bytes\n"
               << "  unsigned char *const tdsl_tiles = tdsl_align_shared<"
               << LaunchShape::TensorCopyAlign << ">(tdsl_smem);\n";
      emitStmt(L.Node->Body, W, /*Last=*/true);
      Indent = 0;
      OS << "}\n";
    }
  }
  Cur = nullptr;
}

//===----------------------------------------------------------------------===//
// Host code
//===----------------------------------------------------------------------===//

void FuncEmitter::emitPlan() {
  std::string Camel = camelName();
  size_t NL = std::max<size_t>(Launches.size(), 1), NT = std::max<size_t>(Temps.size(), 1);
  OS << "\n// What " << F.Name << " needs for given sizes: launch shapes, temporary\n"
     << "// buffers and their place in the workspace, the index type; shared by the\n"
     << "// launchers and the queries.\n";
  OS << "struct " << Camel << "Plan {\n"
     << "  tdsl_launch_info launches[" << NL << "];\n"
     << "  size_t temp_bytes[" << NT << "];\n"
     << "  size_t temp_offsets[" << NT << "];\n"
     << "  size_t workspace_bytes;\n"
     << "  bool index64;\n"
     << "};\n\n";
  OS << "tdsl_status plan" << Camel << "(";
  std::string SP = backend::sizeParams(F);
  OS << SP << (SP.empty() ? "" : ", ") << Camel << "Plan *plan) {\n";
  ExprWriter W(Sizes, /*Host=*/true);
  if (!F.Sizes.empty()) {
    std::string Small, Large;
    for (const std::string &S : F.Sizes) {
      Small += (Small.empty() ? "" : " || ") + cName(S) + " < 1";
      Large += (Large.empty() ? "" : " || ") + cName(S) + " > kMaxSize";
    }
    OS << "  if (" << Small << ")\n    return TDSL_ERROR_INVALID_SIZE;\n";
    OS << "  if (" << Large << ")\n    return TDSL_ERROR_TOO_LARGE;\n";
  }
  // Dimensions that are not plain sizes or constants must come out >= 1;
  // a temporary's may be 0 (tile-mma's split partials at sizes where the
  // split does not run: an empty temporary, never allocated).
  std::vector<std::string> Checked;
  auto CheckDims = [&](const Buffer &B, int Least) {
    for (const Expr &D : B.Shape) {
      if (Least ? W.isPositive(D) : W.isNonNegative(D))
        continue;
      std::string S = W.str(D, RelPrec - 1);
      if (llvm::is_contained(Checked, S))
        continue;
      Checked.push_back(S);
      OS << "  if (" << S << " < " << Least << ")\n    return TDSL_ERROR_INVALID_SIZE;\n";
    }
  };
  for (const Buffer &B : F.Params)
    CheckDims(B, 1);
  for (const Buffer *B : Temps)
    CheckDims(*B, 0);
  // Element counts: overflow is TOO_LARGE; near 2^31 or more needs 64-bit
  // indices (kIndex32Limit).
  OS << "  int64_t elems = 1;\n  plan->index64 = kAlwaysIndex64;\n";
  auto Count = [&](const Buffer &B, const std::string &What, int Temp) {
    OS << "  // " << What << " " << B.Name << ": " << dtypeName(B.Type);
    if (B.rank()) {
      OS << "[";
      for (unsigned D = 0; D < B.rank(); ++D)
        OS << (D ? ", " : "") << toString(B.Shape[D]);
      OS << "]";
    }
    OS << "\n";
    if (B.rank() == 0 && Temp < 0)
      return;
    OS << "  if (!tdsl_element_count({";
    for (unsigned D = 0; D < B.rank(); ++D)
      OS << (D ? ", " : "") << W.str(B.Shape[D]);
    if (!B.rank())
      OS << "1";
    OS << "}, &elems))\n    return TDSL_ERROR_TOO_LARGE;\n";
    OS << "  plan->index64 |= elems > kIndex32Limit;\n";
    if (Temp >= 0)
      OS << "  plan->temp_bytes[" << Temp << "] = size_t(elems) * sizeof("
         << backend::hostElementType(B.Type) << ");\n";
  };
  for (const Buffer &B : F.Params)
    Count(B, B.Role == BufferRole::Input ? "input" : "output", -1);
  for (size_t I = 0; I < Temps.size(); ++I)
    Count(*Temps[I], "temporary", static_cast<int>(I));
  emitWorkspaceLayout();
  for (const Launch &L : Launches) {
    OS << "  // launch " << L.Index << "\n";
    OS << "  if (!tdsl_set_" << (stepsGrid(L) ? "stepped_" : "") << "launch(&plan->launches["
       << L.Index << "], " << W.str(L.Shape.Grid[0])
       << ", " << W.str(L.Shape.Grid[1]) << ", " << W.str(L.Shape.Grid[2]) << ", " << L.Shape.Block[0]
       << ", " << L.Shape.Block[1] << ", " << L.Shape.Block[2] << ", "
       << (L.dynamicShared() ? L.Shape.SharedBytes : 0) << "))\n    return TDSL_ERROR_TOO_LARGE;\n";
    OS << "  plan->index64 |= tdsl_thread_count(plan->launches[" << L.Index
       << "]) > kIndex32Limit;\n";
  }
  OS << "  return TDSL_SUCCESS;\n}\n";
}

void FuncEmitter::emitWorkspaceLayout() {
  if (Temps.empty()) {
    OS << "  plan->workspace_bytes = 0;\n";
    return;
  }
  // Each temporary has bytes of its own. Two whose lifetimes do not overlap
  // could share them, but the lowering nests every temporary to the end of
  // its Func, so none such exist yet.
  OS << "  // The workspace: the temporaries one after another, at offsets aligned\n"
     << "  // to kWorkspaceAlignment.\n"
     << "  plan->workspace_bytes = 0;\n";
  for (size_t I = 0; I < Temps.size(); ++I)
    OS << "  if (!tdsl_workspace_append(plan->temp_bytes[" << I << "], &plan->temp_offsets[" << I
       << "], &plan->workspace_bytes))\n    return TDSL_ERROR_TOO_LARGE;\n";
}

void FuncEmitter::emitPlanCall() {
  std::string Camel = camelName(), SA = backend::sizeArgs(F);
  OS << "  " << Camel << "Plan plan;\n";
  OS << "  tdsl_status status = plan" << Camel << "(" << SA << (SA.empty() ? "" : ", ")
     << "&plan);\n";
  OS << "  if (status != TDSL_SUCCESS)\n    return status;\n";
}

void FuncEmitter::emitPointerChecks() {
  std::string Null, Align;
  for (const Buffer &B : F.Params) {
    if (B.Role == BufferRole::Input && B.rank() == 0)
      continue;
    std::string N = cName(B.Name);
    Null += (Null.empty() ? "" : " || ") + ("!" + N);
    Align += std::string(Align.empty() ? "" : " ||\n      ") + "!tdsl_is_aligned(" + N +
             ", alignof(" + backend::hostElementType(B.Type) + "))";
  }
  if (!Null.empty()) {
    OS << "  if (" << Null << ")\n    return TDSL_ERROR_NULL_POINTER;\n";
    OS << "  if (" << Align << ")\n    return TDSL_ERROR_MISALIGNED_POINTER;\n";
  }
}

std::string FuncEmitter::runCall(const std::string &Workspace,
                                 const std::string &TempSlots) const {
  std::string A = backend::launcherArgs(F);
  return "run" + camelName() + "(plan, " + A + (A.empty() ? "" : ", ") +
         (Temps.empty() ? "" : Workspace + ", " + TempSlots + ", ") + "stream)";
}

void FuncEmitter::emitRun() {
  std::string Camel = camelName(), P = backend::launcherParams(F);
  OS << "\n// The launches of one call, in order on stream";
  if (!Temps.empty())
    OS << ". With a workspace (the\n"
       << "// caller's: plan.workspace_bytes, aligned to kWorkspaceAlignment) each\n"
       << "// temporary is a slice of it; without one, each is allocated on the stream\n"
       << "// just before its first launch (into temps, freed after its last), so that\n"
       << "// growing the memory pool overlaps the launches before it";
  OS << ".\n";
  OS << "tdsl_status run" << Camel << "(const " << Camel << "Plan &plan, " << P
     << (P.empty() ? "" : ", ")
     << (Temps.empty() ? "" : "unsigned char *workspace, void **temps, ")
     << "cudaStream_t stream) {\n";
  if (!Launches.empty())
    OS << "  tdsl_status status;\n";
  unsigned Depth = 1;
  auto Ind = [&]() -> llvm::raw_ostream & { return OS.indent(Depth * 2); };
  for (const HostStep &S : Steps) {
    switch (S.K) {
    case HostStep::Alloc: {
      std::string T = backend::deviceElementType(S.Buf->Type);
      std::string I = std::to_string(S.Temp);
      Ind() << "{\n";
      ++Depth;
      Ind() << "if (!workspace) {\n";
      Ind() << "  status = tdsl_malloc_async(&temps[" << I << "], plan.temp_bytes[" << I
            << "], stream);\n";
      Ind() << "  if (status != TDSL_SUCCESS)\n";
      Ind() << "    return status;\n";
      Ind() << "}\n";
      Ind() << T << " *const " << cName(S.Buf->Name) << " = reinterpret_cast<" << T
            << " *>(workspace ? workspace + plan.temp_offsets[" << I << "] : temps[" << I
            << "]);\n";
      break;
    }
    case HostStep::Free: {
      std::string I = std::to_string(S.Temp);
      Ind() << "if (!workspace) {\n";
      Ind() << "  status = tdsl_free_async(&temps[" << I << "], stream);\n";
      Ind() << "  if (status != TDSL_SUCCESS)\n";
      Ind() << "    return status;\n";
      Ind() << "}\n";
      --Depth;
      Ind() << "}\n";
      break;
    }
    case HostStep::Run: {
      const Launch &L = Launches[S.Launch];
      if (S.Line && S.Line <= Opts.SourceLines.size()) {
        std::string Src = Opts.SourceLines[S.Line - 1];
        size_t B = Src.find_first_not_of(" \t");
        Src = B == std::string::npos ? "" : Src.substr(B);
        std::string Clean;
        for (char C : Src)
          Clean += (C >= 0x20 && C < 0x7f) ? C : '?';
        while (!Clean.empty() && (Clean.back() == ' ' || Clean.back() == '\\'))
          Clean.pop_back();
        Ind() << "// line " << S.Line << ": " << Clean << "\n";
      }
      auto Args = [&](const char *IndexType) {
        std::string A;
        for (const Buffer *B : L.Globals) {
          std::string N = cName(B->Name), DT = backend::deviceElementType(B->Type);
          bool IsParam = F.findParam(B->Name) != nullptr;
          bool Const = !L.Shape.Stored.count(B->Name);
          std::string V = N;
          if (IsParam && B->Role == BufferRole::Input && B->rank() == 0) {
            if (B->Type == DType::F16)
              V = "tdsl_as_half(" + N + ")";
            else if (B->Type == DType::BF16)
              V = "tdsl_as_bfloat16(" + N + ")";
          } else if (IsParam && (B->Type == DType::F16 || B->Type == DType::BF16)) {
            V = "reinterpret_cast<" + std::string(Const ? "const " : "") + DT + " *>(" + N + ")";
          }
          A += (A.empty() ? "" : ", ") + V;
        }
        for (const auto &[Buf, Bytes] : L.Shape.AlignmentTests)
          A += (A.empty() ? "" : ", ") +
               ("tdsl_is_aligned(" + cName(Buf) + ", " + std::to_string(Bytes) + ")");
        for (size_t I = 0; I < L.Shape.TensorMaps.size(); ++I)
          A += (A.empty() ? "" : ", ") + tensorMapParam(L.Shape, I);
        for (const std::string &Sz : F.Sizes)
          A += (A.empty() ? "" : ", ") + (IndexType + ("(" + cName(Sz) + ")"));
        return A;
      };
      std::string Info = "plan.launches[" + std::to_string(L.Index) + "]";
      auto Launch = [&](const std::string &K) {
        Ind() << "status = plan.index64\n";
        Ind() << "    ? tdsl_launch(" << K << "<int64_t>, " << Info << ", stream"
              << (L.Globals.empty() && F.Sizes.empty() ? "" : ", ") << Args("int64_t") << ")\n";
        Ind() << "    : tdsl_launch(" << K << "<int32_t>, " << Info << ", stream"
              << (L.Globals.empty() && F.Sizes.empty() ? "" : ", ") << Args("int32_t")
              << ");\n";
      };
      // The copy engine's tensor maps, made where the kernel that reads
      // them runs (its version's test is what makes them valid: 16-byte
      // aligned tensors and rows).
      ExprWriter HW(Sizes, /*Host=*/true);
      // In a scope of their own: the next launch's maps take the same names.
      const bool HasMaps = !L.Shape.TensorMaps.empty();
      if (HasMaps) {
        Ind() << "{\n";
        ++Depth;
      }
      for (size_t I = 0; I < L.Shape.TensorMaps.size(); ++I)
        Ind() << "tdsl_tensor_map " << tensorMapParam(L.Shape, I) << " = {};\n";
      auto MakeMaps = [&](const Stmt &Body) {
        if (!containsTensorCopy(Body))
          return;
        for (size_t I = 0; I < L.Shape.TensorMaps.size(); ++I) {
          const LaunchShape::TensorMapUse &U = L.Shape.TensorMaps[I];
          const Buffer *T = F.findParam(U.Tensor);
          // A box of fewer dimensions than the tensor's reads its leading
          // ones as one (ir/IR.md, tensor_copy).
          size_t Skip = T->rank() - U.Box.size();
          std::string Dims, Box;
          for (size_t D = 0; D < U.Box.size(); ++D) {
            Expr Dim = T->Shape[Skip + D];
            for (size_t J = 0; D == 0 && J < Skip; ++J)
              Dim = mul(T->Shape[J], Dim);
            Dims += (D ? ", " : "") + std::string("int64_t(") + HW.str(simplifyExpr(Dim)) + ")";
            Box += (D ? ", " : "") + std::to_string(U.Box[D]);
          }
          Ind() << "{\n";
          Ind() << "  const int64_t dims[] = {" << Dims << "}, box[] = {" << Box << "};\n";
          Ind() << "  status = tdsl_make_tensor_map(&" << tensorMapParam(L.Shape, I) << ", "
                << cName(U.Tensor) << ", " << dtypeBytes(T->Type) << ", " << U.Box.size()
                << ", dims, box, " << U.SwizzleBytes << ");\n";
          Ind() << "  if (status != TDSL_SUCCESS)\n";
          Ind() << "    return status;\n";
          Ind() << "}\n";
        }
      };
      if (L.Version) {
        Ind() << "if (" << HW.str(L.Version->Cond) << ") {\n";
        ++Depth;
        MakeMaps(L.Version->Then);
        Launch(kernelName(L));
        --Depth;
        Ind() << "} else {\n";
        ++Depth;
        if (L.Version->Else)
          MakeMaps(L.Version->Else);
        if (L.dynamicShared() && L.Shape.GuardedSharedBytes &&
            L.Shape.GuardedSharedBytes < L.Shape.SharedBytes) {
          // The guarded kernel's tiles alone: the rest of the SM's shared
          // memory stays L1, which its element loads go through.
          Ind() << "tdsl_launch_info tdsl_guarded = " << Info << ";\n";
          Ind() << "tdsl_guarded.shared_bytes = " << L.Shape.GuardedSharedBytes << ";\n";
          Info = "tdsl_guarded";
        }
        Launch(kernelName(L, true));
        --Depth;
        Ind() << "}\n";
      } else {
        MakeMaps(L.Node->Body);
        Launch(kernelName(L));
      }
      if (HasMaps) {
        --Depth;
        Ind() << "}\n";
      }
      Ind() << "if (status != TDSL_SUCCESS)\n";
      Ind() << "  return status;\n";
      break;
    }
    }
  }
  OS << "  return TDSL_SUCCESS;\n}\n";
}

void FuncEmitter::emitLauncher() {
  OS << "\n// " << backend::tdslSignature(F) << "\n";
  OS << "extern \"C\" " << backend::launcherPrototype(F, Opts.SymbolPrefix) << " {\n";
  emitPlanCall();
  emitPointerChecks();
  if (Temps.empty()) {
    OS << "  return " << runCall("", "") << ";\n}\n";
    return;
  }
  std::string N = std::to_string(Temps.size());
  OS << "  // Each temporary lives on the stream between the launches that use it.\n"
     << "  void *temps[" << N << "] = {};\n"
     << "  status = " << runCall("nullptr", "temps") << ";\n"
     << "  return status != TDSL_SUCCESS ? tdsl_free_all(temps, " << N
     << ", stream, status) : status;\n}\n";
}

void FuncEmitter::emitWorkspaceLauncher() {
  OS << "\n// The same launches on the caller's workspace: nothing allocated.\n";
  OS << "extern \"C\" " << backend::workspaceLauncherPrototype(F, Opts.SymbolPrefix) << " {\n";
  emitPlanCall();
  emitPointerChecks();
  if (Temps.empty()) {
    OS << "  (void)workspace; // " << F.Name << " has no temporaries\n"
       << "  (void)workspace_bytes;\n"
       << "  return " << runCall("", "") << ";\n}\n";
    return;
  }
  OS << "  if (workspace_bytes < plan.workspace_bytes)\n"
     << "    return TDSL_ERROR_WORKSPACE_TOO_SMALL;\n"
     << "  if (!workspace && plan.workspace_bytes)\n    return TDSL_ERROR_NULL_POINTER;\n"
     << "  if (!tdsl_is_aligned(workspace, kWorkspaceAlignment))\n"
     << "    return TDSL_ERROR_MISALIGNED_POINTER;\n"
     << "  // Without one, every temporary is empty at these sizes: none is\n"
     << "  // allocated.\n"
     << "  void *temps[" << Temps.size() << "] = {};\n"
     << "  return " << runCall("static_cast<unsigned char *>(workspace)", "temps") << ";\n}\n";
}

void FuncEmitter::emitLaunchInfo() {
  size_t N = Launches.size();
  OS << "\nextern \"C\" " << backend::launchInfoPrototype(F, Opts.SymbolPrefix) << " {\n";
  emitPlanCall();
  OS << "  if (!num_launches || (max_infos > 0 && !infos))\n"
     << "    return TDSL_ERROR_NULL_POINTER;\n";
  // A launch whose grid is empty at these sizes (the variant of a launch
  // for other sizes) does not run, so it is not reported.
  OS << "  int n = 0;\n";
  OS << "  for (int i = 0; i < " << N << "; ++i) {\n"
     << "    if (tdsl_thread_count(plan.launches[i]) == 0)\n"
     << "      continue;\n"
     << "    if (n < max_infos)\n"
     << "      infos[n] = plan.launches[i];\n"
     << "    ++n;\n"
     << "  }\n";
  OS << "  *num_launches = n;\n";
  OS << "  return TDSL_SUCCESS;\n}\n";
}

void FuncEmitter::emitWorkspaceSize() {
  OS << "\nextern \"C\" " << backend::workspaceSizePrototype(F, Opts.SymbolPrefix) << " {\n";
  emitPlanCall();
  OS << "  if (!bytes)\n    return TDSL_ERROR_NULL_POINTER;\n"
     << "  *bytes = plan.workspace_bytes;\n"
     << "  return TDSL_SUCCESS;\n}\n";
}

void FuncEmitter::emitHost() {
  OS << "\nnamespace {\n";
  emitPlan();
  emitRun();
  OS << "} // namespace\n";
  emitLauncher();
  emitWorkspaceLauncher();
  emitLaunchInfo();
  emitWorkspaceSize();
}

} // namespace

unsigned parseCudaArch(llvm::StringRef Arch) {
  static const char *const Known[] = {"sm_75", "sm_80", "sm_86", "sm_87", "sm_89",
                                      "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120"};
  for (const char *K : Known)
    if (Arch == K) {
      unsigned V = 0;
      Arch.drop_front(3).take_while([](char C) { return C >= '0' && C <= '9'; }).getAsInteger(10, V);
      return V;
    }
  return 0;
}

std::string emitCuda(const Module &M, const CudaEmitOptions &Opts, llvm::raw_ostream &OS,
                     bool *Internal) {
  std::string Body;
  llvm::raw_string_ostream BS(Body);
  // Kernel names that are another kernel's name plus a suffix tdslc adds
  // (softmax and softmax_launch_info) would define one symbol twice.
  llvm::StringMap<std::string> DefinedBy;
  llvm::StringSet<> FileNames;
  for (const Func &F : M.Funcs) {
    FuncEmitter E(F, Opts, BS, FileNames);
    if (std::string Err = E.analyze(); !Err.empty()) {
      if (Internal)
        *Internal = true;
      return Err;
    }
    for (const std::string &Name : E.externalNames()) {
      auto [It, New] = DefinedBy.try_emplace(Name, F.Name);
      if (!New)
        return "kernels '" + It->second + "' and '" + F.Name + "' both define the symbol '" + Name +
               "'; rename one";
    }
    BS << "\n//===-- " << backend::tdslSignature(F) << "\n";
    E.emitKernels();
    E.emitHost();
  }
  OS << "// " << backend::bannerText(Opts) << "\n"
     << "// Target: " << Opts.Arch << ". Each kernel is a template on its index type;\n"
     << "// the launcher picks int32_t when every tensor and launch has fewer than\n"
     << "// 2^31 - 2^20 elements (threads). Outputs must not overlap inputs or each other.\n";
  if (Opts.SelfContained)
    OS << "// tdsl/runtime.h and tdsl/device.cuh, pasted (--self-contained):\n"
       << pastedHeader(RuntimeHeader) << pastedHeader(DeviceHeader) << "\n";
  else
    OS << "#include <tdsl/runtime.h>\n#include <tdsl/device.cuh>\n\n";
  OS << "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n#include <cuda_runtime.h>\n"
     << "#include <math_constants.h>\n\n"
     << "#include <initializer_list>\n#include <stdint.h>\n#include <type_traits>\n\n"
     << "using namespace tdsl_generated; // the helpers of tdsl/device.cuh\n";
  OS << BS.str();
  return "";
}

} // namespace tdsl
