//===- Verifier.h - Structural and type checks of the loop IR -------------===//
//
// Runs after every pass in tests (tdsl-opt --verify-each): a pass that
// produces IR failing these checks has a bug. The checks are those the
// interpreter and the CUDA emitter rely on without re-checking: names in
// scope, buffer ranks, operand types, GPU loop nesting and launch limits,
// memory scopes, intrinsic arities.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_VERIFIER_H
#define TDSL_IR_VERIFIER_H

#include "ir/IR.h"

#include <string>
#include <vector>

namespace tdsl::ir {

/// One message per problem found ("in func F: ..."), empty when F is valid.
std::vector<std::string> verifyFunc(const Func &F);
/// verifyFunc over every function, plus duplicate function names.
std::vector<std::string> verifyModule(const Module &M);

} // namespace tdsl::ir

#endif // TDSL_IR_VERIFIER_H
