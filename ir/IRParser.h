//===- IRParser.h - Reads the loop IR's text form back into nodes ---------===//
//
// The inverse of Printer.h: parses the grammar of ir/IR.md into a Module,
// resolving every name in scope (size symbols, loop and let variables,
// parameters and enclosing allocations) and computing types with the
// builders of IR.h. Every mistake is a located error through DiagEngine
// (file:line:col, the source line, a caret); no input makes it crash.
//
//   print(parse(print(M))) == print(M), byte for byte.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_IRPARSER_H
#define TDSL_IR_IRPARSER_H

#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include "llvm/Support/SourceMgr.h"

#include <optional>

namespace tdsl::ir {

/// Parses the whole buffer BufferID of SM as a module. Returns std::nullopt
/// after reporting at least one error to Diags.
std::optional<Module> parseIRModule(llvm::SourceMgr &SM, unsigned BufferID,
                                    DiagEngine &Diags);

/// True for words the text form reserves (statement keywords, dtypes,
/// intrinsics, min/max, inf_*/nan_*): they cannot name a variable, buffer
/// or function, or the printed IR would not parse back.
bool isReservedIRWord(llvm::StringRef Name);

} // namespace tdsl::ir

#endif // TDSL_IR_IRPARSER_H
