//===- Printer.h - The loop IR's one textual form (see ir/IR.md) ----------===//
//
// Deterministic output: 2-space indentation, the fewest parentheses the
// precedence of ir/IR.md allows, float literals that parse back to the same
// bits. IRParser.h reads everything printed here.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_PRINTER_H
#define TDSL_IR_PRINTER_H

#include "ir/IR.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace tdsl::ir {

void printModule(const Module &M, llvm::raw_ostream &OS);
void printFunc(const Func &F, llvm::raw_ostream &OS);
/// One expression on one line, e.g. "(i + 1) * 4".
std::string toString(const Expr &E);
/// A statement and its body, indented from column 0, ending in a newline.
std::string toString(const Stmt &S);

} // namespace tdsl::ir

#endif // TDSL_IR_PRINTER_H
