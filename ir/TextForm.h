//===- TextForm.h - Spelling rules the IR printer and parser share --------===//
//
// Printer.cpp writes and IRParser.cpp reads these the same way; keeping them
// in one place is what makes print -> parse -> print the identity.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_TEXTFORM_H
#define TDSL_IR_TEXTFORM_H

#include "ir/IR.h"

namespace tdsl::ir::text {

/// Binding strength, loosest first. Binary operators are left-associative;
/// '?:' is the loosest and nests to the right.
enum Prec : int {
  PrecSelect = 0,
  PrecOr,
  PrecAnd,
  PrecEq,  // == !=
  PrecRel, // < <= > >=
  PrecAdd, // + -
  PrecMul, // * / %
  PrecUnary,
  PrecPrimary, // literals, names, loads, casts, calls, min(), max()
};

/// The precedence of Op written infix; min and max are written as calls.
int binaryPrec(BinaryOp Op);

/// The "b" of "for v in a..b" for a loop of Min and Extent: the extent when
/// Min is 0, folded when both are i64 constants, X when the extent is
/// X - Min, Min + Extent otherwise.
Expr loopEnd(const Expr &Min, const Expr &Extent);

/// The inverse of loopEnd(): the extent of "Min..End".
Expr loopExtent(const Expr &Min, const Expr &End);

} // namespace tdsl::ir::text

#endif // TDSL_IR_TEXTFORM_H
