//===- Signature.cpp - C names and launcher prototypes --------------------===//
#include "backend/Signature.h"

#include "ir/Printer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace tdsl::backend {

using namespace ir;

std::string cName(llvm::StringRef Name) {
  // Keywords of C11, C++17 and CUDA, CUDA's built-in variables, and every
  // name the emitted code declares itself (launcher locals, the Index
  // template parameter). A .tdsl name never starts with "tdsl_" clashes
  // either: those get the '_' too.
  static const llvm::StringSet<> Reserved = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool",
      "break", "case", "catch", "char", "char16_t", "char32_t", "class", "compl", "const",
      "constexpr", "const_cast", "continue", "decltype", "default", "delete", "do",
      "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
      "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
      "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or",
      "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
      "restrict", "return", "short", "signed", "sizeof", "static", "static_assert",
      "static_cast", "struct", "switch", "template", "this", "thread_local", "throw",
      "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "_Bool",
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "min", "max",
      "Index", "stream", "infos", "max_infos", "num_launches", "status", "index64",
      "plan", "temps", "main", "workspace", "workspace_bytes", "bytes", "freed", "errno",
      "elems", "assert", "NULL", "INFINITY", "NAN"};
  if (Reserved.count(Name) || Name.startswith("tdsl_") || Name.startswith("__") ||
      Name.startswith("CUDART_") || Name.startswith("TDSL_") ||
      // kUpperCamel is where the kernels' named constants live (kThreads).
      (Name.size() > 1 && Name[0] == 'k' && Name[1] >= 'A' && Name[1] <= 'Z'))
    return Name.str() + "_";
  return Name.str();
}

std::string hostElementType(DType T) {
  switch (T) {
  case DType::Bool: return "uint8_t";
  case DType::I8: return "int8_t";
  case DType::I32: return "int32_t";
  case DType::I64: return "int64_t";
  case DType::F16: return "tdsl_f16";
  case DType::BF16: return "tdsl_bf16";
  case DType::TF32:
  case DType::F32: return "float";
  case DType::F64: return "double";
  }
  return "void";
}

std::string deviceElementType(DType T) {
  switch (T) {
  case DType::Bool: return "bool";
  case DType::F16: return "__half";
  case DType::BF16: return "__nv_bfloat16";
  default: return hostElementType(T);
  }
}

std::string sizeParams(const Func &F) {
  std::string S;
  for (const std::string &Size : F.Sizes)
    S += (S.empty() ? "" : ", ") + ("int64_t " + cName(Size));
  return S;
}

std::string sizeArgs(const Func &F) {
  std::string S;
  for (const std::string &Size : F.Sizes)
    S += (S.empty() ? "" : ", ") + cName(Size);
  return S;
}

std::string launcherParams(const Func &F) {
  std::string S;
  for (const Buffer &B : F.Params) {
    std::string T = hostElementType(B.Type);
    S += S.empty() ? "" : ", ";
    if (B.Role == BufferRole::Input)
      S += B.rank() == 0 ? T + " " : "const " + T + " *";
    else
      S += T + " *";
    S += cName(B.Name);
  }
  std::string Sizes = sizeParams(F);
  if (!Sizes.empty())
    S += (S.empty() ? "" : ", ") + Sizes;
  return S;
}

std::string launcherArgs(const Func &F) {
  std::string S;
  for (const Buffer &B : F.Params)
    S += (S.empty() ? "" : ", ") + cName(B.Name);
  std::string Sizes = sizeArgs(F);
  if (!Sizes.empty())
    S += (S.empty() ? "" : ", ") + Sizes;
  return S;
}

std::string launcherPrototype(const Func &F, llvm::StringRef Prefix) {
  std::string P = launcherParams(F);
  return "tdsl_status " + Prefix.str() + F.Name + "(" + P + (P.empty() ? "" : ", ") +
         "cudaStream_t stream)";
}

std::string workspaceLauncherPrototype(const Func &F, llvm::StringRef Prefix) {
  std::string P = launcherParams(F);
  return "tdsl_status " + Prefix.str() + F.Name + "_with_workspace(" + P +
         (P.empty() ? "" : ", ") + "void *workspace, size_t workspace_bytes, cudaStream_t stream)";
}

std::string workspaceSizePrototype(const Func &F, llvm::StringRef Prefix) {
  std::string Sizes = sizeParams(F);
  return "tdsl_status " + Prefix.str() + F.Name + "_workspace_size(" + Sizes +
         (Sizes.empty() ? "" : ", ") + "size_t *bytes)";
}

std::string launchInfoPrototype(const Func &F, llvm::StringRef Prefix) {
  std::string S = "tdsl_status " + Prefix.str() + F.Name + "_launch_info(";
  std::string Sizes = sizeParams(F);
  if (!Sizes.empty())
    S += Sizes + ", ";
  return S + "tdsl_launch_info *infos, int max_infos, int *num_launches)";
}

std::string tdslSignature(const Func &F) {
  auto Param = [](const Buffer &B) {
    std::string S = B.Name + ": " + dtypeName(B.Type).str();
    if (B.rank() == 0)
      return S;
    S += "[";
    for (unsigned D = 0; D < B.rank(); ++D)
      S += (D ? ", " : "") + toString(B.Shape[D]);
    return S + "]";
  };
  std::string In, Out;
  for (const Buffer &B : F.Params) {
    std::string &L = B.Role == BufferRole::Input ? In : Out;
    L += (L.empty() ? "" : ", ") + Param(B);
  }
  return "kernel " + F.Name + "(" + In + ") -> (" + Out + ")";
}

std::string bannerText(const CudaEmitOptions &Opts) {
  return "Generated by tdslc " + Opts.Version + " from " + Opts.InputName + ": " +
         Opts.CommandLine;
}

} // namespace tdsl::backend

bool tdsl::isValidSymbolPrefix(llvm::StringRef Prefix) {
  auto IsUpper = [](char C) { return C >= 'A' && C <= 'Z'; };
  return !Prefix.empty() && !llvm::isDigit(Prefix.front()) && !Prefix.startswith("__") &&
         !(Prefix.size() > 1 && Prefix[0] == '_' && IsUpper(Prefix[1])) &&
         llvm::all_of(Prefix, [](char C) { return llvm::isAlnum(C) || C == '_'; });
}
