//===- FrontendFuzzer.cpp - libFuzzer target for the .tdsl front end ------===//
//
// The front end's promise (DESIGN.md: "No user input may crash tdslc"): any
// byte string ends in a clean parse or in located errors, never a crash, a
// hang or a leak. This target feeds each input to parseAndCheck with a
// diagnostic handler that swallows the messages but traps on an error with
// no source location, or on a null module without any error. A module that
// checks cleanly is also dumped (--emit=ast) and lowered, and the naive IR
// must verify: sema accepted it, so anything else is a compiler bug.
//
// Built and run by test/fuzz/run.sh (clang++-14 -fsanitize=fuzzer,address,
// undefined), not by the CMake build, which uses g++.
//
//===----------------------------------------------------------------------===//
#include "frontend/Frontend.h"
#include "frontend/Lower.h"
#include "ir/Diagnostics.h"
#include "ir/Verifier.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

struct Seen {
  unsigned Errors = 0;
};

void fail(const char *Why) {
  std::fprintf(stderr, "FrontendFuzzer: %s\n", Why);
  std::abort();
}

void swallowDiagnostic(const llvm::SMDiagnostic &D, void *Ctx) {
  auto *S = static_cast<Seen *>(Ctx);
  if (D.getKind() != llvm::SourceMgr::DK_Error)
    return;
  ++S->Errors;
  if (D.getLineNo() < 1 || D.getColumnNo() < 0)
    fail("an error without a source location");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::SourceMgr SM;
  Seen S;
  SM.setDiagHandler(swallowDiagnostic, &S);
  unsigned Id = SM.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(Data), Size), "fuzz.tdsl"),
      llvm::SMLoc());
  tdsl::DiagEngine Diags(SM);
  std::unique_ptr<tdsl::ast::Module> M = tdsl::parseAndCheck(SM, Id, Diags);
  if (!M) {
    if (!Diags.hasErrors())
      fail("parseAndCheck returned no module but reported no error");
    return 0;
  }
  if (Diags.hasErrors())
    fail("parseAndCheck returned a module after reporting an error");
  std::string Dump;
  llvm::raw_string_ostream OS(Dump);
  tdsl::printAST(*M, OS);
  for (const auto &K : M->Kernels) {
    tdsl::ir::Func F = tdsl::lowerKernel(*K, [](llvm::SMLoc) { return 0u; });
    if (!tdsl::ir::verifyFunc(F).empty())
      fail("the naive lowering of a checked kernel does not verify");
  }
  return 0;
}
