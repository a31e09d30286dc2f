//===- Match.cpp - Structural matchers shared by passes and the backend ---===//
#include "ir/Match.h"

namespace tdsl::ir {

Stmt stripBlocks(Stmt S) {
  while (S->Kind == StmtKind::Block && static_cast<const BlockNode &>(*S).Stmts.size() == 1)
    S = static_cast<const BlockNode &>(*S).Stmts.front();
  return S;
}

const StoreNode *vectorCopy(const ForNode &N, int64_t &Width) {
  std::optional<int64_t> W = asConstInt(N.Extent);
  Stmt Body = stripBlocks(N.Body);
  if (!W || asConstInt(N.Min) != 0 || Body->Kind != StmtKind::Store)
    return nullptr;
  const auto *St = static_cast<const StoreNode *>(Body.get());
  if (St->Value->Kind != ExprKind::Load)
    return nullptr;
  // 8 or 16 bytes: 2 or 4 elements of 4 bytes, 4 or 8 of 2 bytes; or 4,
  // 8 or 16 of 1 byte (i8 runs beside f32, f16 or i8 ones).
  int64_t EB = dtypeBytes(St->Value->Type);
  bool Wide = *W * EB == 8 || *W * EB == 16;
  if (!((EB == 4 || EB == 2) && Wide) && !(EB == 1 && (Wide || *W == 4)))
    return nullptr;
  Width = *W;
  return St;
}

const Knob *findKnob(const std::vector<Knob> &Knobs, llvm::StringRef Key) {
  for (auto It = Knobs.rbegin(); It != Knobs.rend(); ++It)
    if (It->Key == Key)
      return &*It;
  return nullptr;
}

} // namespace tdsl::ir
