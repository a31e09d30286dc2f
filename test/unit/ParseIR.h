//===- ParseIR.h - IR text to a Module, for the unit tests ----------------===//
#ifndef TDSL_TEST_UNIT_PARSEIR_H
#define TDSL_TEST_UNIT_PARSEIR_H

#include "ir/IRParser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

namespace tdsl::test {

/// Parses Text (not verified, so tests can reach what the verifier
/// rejects); a parse error fails the test and gives an empty module.
inline ir::Module parseIR(llvm::StringRef Text) {
  llvm::SourceMgr SM;
  unsigned Id = SM.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(Text, "test.tir"),
                                      llvm::SMLoc());
  DiagEngine Diags(SM);
  std::optional<ir::Module> M = ir::parseIRModule(SM, Id, Diags);
  EXPECT_TRUE(M.has_value());
  return M ? std::move(*M) : ir::Module();
}

} // namespace tdsl::test

#endif // TDSL_TEST_UNIT_PARSEIR_H
