//===- TextForm.cpp - Spelling rules the IR printer and parser share ------===//
#include "ir/TextForm.h"

namespace tdsl::ir::text {

int binaryPrec(BinaryOp Op) {
  switch (Op) {
  case BinaryOp::Or: return PrecOr;
  case BinaryOp::And: return PrecAnd;
  case BinaryOp::Eq:
  case BinaryOp::Ne: return PrecEq;
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge: return PrecRel;
  case BinaryOp::Add:
  case BinaryOp::Sub: return PrecAdd;
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Mod: return PrecMul;
  case BinaryOp::Min:
  case BinaryOp::Max: return PrecPrimary;
  }
  return PrecPrimary;
}

/// Both i64 constants: the only case folded, so that the parser can fold
/// back without knowing anything about other types.
static bool bothI64Constants(const Expr &A, const Expr &B) {
  return asConstInt(A) && asConstInt(B) && A->Type == DType::I64 && B->Type == DType::I64;
}

Expr loopEnd(const Expr &Min, const Expr &Extent) {
  std::optional<int64_t> M = asConstInt(Min);
  if (M && *M == 0)
    return Extent;
  int64_t Sum;
  if (bothI64Constants(Min, Extent) &&
      !__builtin_add_overflow(*M, *asConstInt(Extent), &Sum))
    return intImm(Sum);
  if (Extent->Kind == ExprKind::Binary) {
    const auto &Sub = static_cast<const BinaryNode &>(*Extent);
    if (Sub.Op == BinaryOp::Sub && structurallyEqual(Sub.B, Min))
      return Sub.A;
  }
  return add(Min, Extent);
}

Expr loopExtent(const Expr &Min, const Expr &End) {
  std::optional<int64_t> M = asConstInt(Min);
  if (M && *M == 0)
    return End;
  int64_t Diff;
  if (bothI64Constants(Min, End) && !__builtin_sub_overflow(*asConstInt(End), *M, &Diff))
    return intImm(Diff);
  if (End->Kind == ExprKind::Binary) {
    const auto &Add = static_cast<const BinaryNode &>(*End);
    if (Add.Op == BinaryOp::Add && structurallyEqual(Add.A, Min))
      return Add.B;
  }
  return sub(End, Min);
}

} // namespace tdsl::ir::text
