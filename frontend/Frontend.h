//===- Frontend.h - .tdsl text to a checked AST, and the AST's text dump --===//
//
// The front end's whole interface: tools and tests call parseAndCheck and
// never see the lexer, parser or sema separately.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_FRONTEND_FRONTEND_H
#define TDSL_FRONTEND_FRONTEND_H

#include "frontend/AST.h"
#include "ir/Diagnostics.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace tdsl {

/// Parses and checks buffer BufferID of SM. Every problem is reported
/// through Diags; the result is null if there was any error, otherwise a
/// module with every sema field filled in.
std::unique_ptr<ast::Module> parseAndCheck(llvm::SourceMgr &SM, unsigned BufferID,
                                           DiagEngine &Diags);

/// Writes a readable, deterministic dump of a checked module (what
/// `tdslc --emit=ast` prints).
void printAST(const ast::Module &M, llvm::raw_ostream &OS);

} // namespace tdsl

#endif // TDSL_FRONTEND_FRONTEND_H
