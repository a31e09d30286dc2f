//===- Toolchain.cpp - nvcc, tdslc's include folder, ptxas -v, depfiles ---===//
#include "driver/Toolchain.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace llvm;

namespace tdsl {

std::string mainExecutablePath(const char *Argv0) {
  static int Anchor;
  std::string Path = sys::fs::getMainExecutable(Argv0, &Anchor);
  return Path.empty() ? std::string(Argv0) : Path;
}

std::string tdslIncludeDir(StringRef ExePath) {
  // <prefix>/bin/tdslc -> <prefix>/include, if the runtime is installed there.
  SmallString<256> Installed(sys::path::parent_path(sys::path::parent_path(ExePath)));
  sys::path::append(Installed, "include");
  SmallString<256> Probe(Installed);
  sys::path::append(Probe, "tdsl", "runtime.h");
  if (sys::fs::exists(Probe))
    return std::string(Installed);
  return TDSL_SOURCE_INCLUDE_DIR; // the build tree: the sources' own copy
}

std::string findNvcc() {
  if (const char *Env = std::getenv("CUDACXX"); Env && *Env) {
    if (sys::fs::exists(Env))
      return Env;
    if (StringRef(Env).contains('/'))
      return "";
    ErrorOr<std::string> OnPath = sys::findProgramByName(Env); // CUDACXX=nvcc
    return OnPath ? *OnPath : std::string();
  }
  if (ErrorOr<std::string> P = sys::findProgramByName("nvcc"))
    return *P;
  if (sys::fs::can_execute("/usr/local/cuda/bin/nvcc"))
    return "/usr/local/cuda/bin/nvcc";
  return "";
}

std::optional<std::vector<std::string>> nvccArchFlags(StringRef Arch) {
  StringRef Num = Arch;
  Num.consume_front("sm_");
  StringRef Digits = Num.take_while(isDigit);
  StringRef Suffix = Num.drop_front(Digits.size());
  if (Digits.empty() || !(Suffix.empty() || Suffix == "a" || Suffix == "f"))
    return std::nullopt;
  // Code for this exact GPU plus its PTX, as CMake's CUDA_ARCHITECTURES does.
  std::string N = Num.str();
  return std::vector<std::string>{"-gencode=arch=compute_" + N + ",code=[sm_" + N +
                                  ",compute_" + N + "]"};
}

ToolRun runTool(StringRef Program, ArrayRef<std::string> Args) {
  ToolRun Run;
  SmallString<128> OutPath;
  if (std::error_code EC = sys::fs::createTemporaryFile("tdslc-tool", "txt", OutPath)) {
    Run.Error = "cannot create a temporary file: " + EC.message();
    return Run;
  }
  FileRemover Remove(OutPath);
  std::vector<StringRef> ArgRefs(Args.begin(), Args.end());
  Optional<StringRef> Redirects[] = {None, StringRef(OutPath), StringRef(OutPath)};
  std::string ErrMsg;
  int Status = sys::ExecuteAndWait(Program, ArgRefs, /*Env=*/None, Redirects,
                                   /*SecondsToWait=*/0, /*MemoryLimit=*/0, &ErrMsg);
  if (Status < 0) {
    Run.Error = ErrMsg.empty() ? "cannot run " + Program.str() : ErrMsg;
    return Run;
  }
  Run.Status = Status;
  if (ErrorOr<std::unique_ptr<MemoryBuffer>> Out = MemoryBuffer::getFile(OutPath))
    Run.Output = (*Out)->getBuffer().str();
  return Run;
}

namespace {

/// The number in front of Unit in Line ("30 registers" for "registers").
std::optional<uint64_t> numberBefore(StringRef Line, StringRef Unit) {
  Regex R("([0-9]+) " + Regex::escape(Unit));
  SmallVector<StringRef, 2> M;
  uint64_t V;
  if (!R.match(Line, &M) || M[1].getAsInteger(10, V))
    return std::nullopt;
  return V;
}

} // namespace

std::vector<KernelResources> parsePtxasVerbose(StringRef Text) {
  std::vector<KernelResources> Kernels;
  auto kernelNamed = [&](StringRef Mangled) -> KernelResources & {
    for (KernelResources &K : Kernels)
      if (K.MangledName == Mangled)
        return K;
    KernelResources K;
    K.MangledName = Mangled.str();
    K.Name = demangle(K.MangledName);
    Kernels.push_back(K);
    return Kernels.back();
  };
  KernelResources *Current = nullptr;
  SmallVector<StringRef, 0> Lines;
  Text.split(Lines, '\n');
  for (StringRef Line : Lines) {
    Line = Line.trim();
    // "Compiling entry function 'NAME' for 'sm_90'"; device functions
    // ("Function properties for NAME" alone) are not kernels and are skipped.
    size_t Entry = Line.find("Compiling entry function '");
    if (Entry != StringRef::npos) {
      StringRef Rest = Line.drop_front(Entry + strlen("Compiling entry function '"));
      Current = &kernelNamed(Rest.take_until([](char C) { return C == '\''; }));
      continue;
    }
    if (Line.contains("Function properties for ")) {
      StringRef Name = Line.split("Function properties for ").second.trim();
      Current = nullptr;
      for (KernelResources &K : Kernels)
        if (K.MangledName == Name)
          Current = &K;
      continue;
    }
    if (!Current)
      continue;
    if (auto V = numberBefore(Line, "bytes stack frame"))
      Current->StackBytes = *V;
    if (auto V = numberBefore(Line, "bytes spill stores"))
      Current->SpillStoreBytes = *V;
    if (auto V = numberBefore(Line, "bytes spill loads"))
      Current->SpillLoadBytes = *V;
    if (auto V = numberBefore(Line, "registers"))
      Current->Registers = static_cast<unsigned>(*V);
    if (auto V = numberBefore(Line, "barriers"))
      Current->Barriers = static_cast<unsigned>(*V);
    if (auto V = numberBefore(Line, "bytes smem"))
      Current->StaticSharedBytes = *V;
  }
  return Kernels;
}

std::string writeDepfile(StringRef Path, StringRef Target, ArrayRef<std::string> Deps) {
  auto escape = [](StringRef S) {
    std::string E;
    for (char C : S) {
      if (C == ' ' || C == '#')
        E += '\\';
      if (C == '$')
        E += '$';
      E += C;
    }
    return E;
  };
  std::error_code EC;
  raw_fd_ostream OS(Path, EC, sys::fs::OF_Text);
  if (EC)
    return "cannot open '" + Path.str() + "' for writing: " + EC.message();
  OS << escape(Target) << ":";
  for (const std::string &D : Deps)
    OS << " \\\n  " << escape(D);
  OS << "\n";
  OS.close();
  if (OS.has_error()) {
    OS.clear_error();
    return "cannot write '" + Path.str() + "'";
  }
  return "";
}

} // namespace tdsl
