//===- MmaEpilogueValues.cpp - An epilogue's values before its stores -----===//
#include "passes/MmaEpilogueValues.h"
#include "passes/PassUtils.h"

#include "llvm/ADT/STLExtras.h"

namespace tdsl {

using namespace ir;

std::optional<MmaEpilogueValues> splitEpilogueValues(const Func &F, const ContractionNest &N,
                                                     const Stmt &Epi, const std::vector<Expr> &At) {
  std::vector<Stmt> Flat = flattenBlocks(Epi);
  if (Flat.size() != 1 || Flat[0]->Kind != StmtKind::Store)
    return std::nullopt;
  const auto &S = static_cast<const StoreNode &>(*Flat[0]);
  // The value before the store's cast (f16(gelu(acc + bias)): the f32 gelu).
  Expr V = S.Value;
  if (V->Kind == ExprKind::Cast &&
      !llvm::any_of(N.Accs, [&](const ContractionAcc &A) { return A.Type == V->Type; }))
    V = static_cast<const CastNode &>(*V).A;
  // An accumulator of V's type that V reads takes it (each element reads
  // only its own); the other reads must be registers or scalars.
  const ContractionAcc *Into = nullptr;
  for (const Expr &L : loadsOf(V)) {
    const auto &Load = static_cast<const LoadNode &>(*L);
    if (!Load.Indices.empty() && findTensor(F, Load.Buffer))
      return std::nullopt;
    for (const ContractionAcc &A : N.Accs)
      if (!Into && A.Type == V->Type && Load.Buffer == A.Name)
        Into = &A;
  }
  if (!Into)
    return std::nullopt;
  // The bare store of an accumulator: nothing to compute ahead.
  if (V->Kind == ExprKind::Load && static_cast<const LoadNode &>(*V).Buffer == Into->Name)
    return std::nullopt;
  Stmt Values = store(Into->Name, At, V, S.SrcLine);
  Stmt Stores =
      store(S.Buffer, S.Indices, cast(S.Value->Type, load(Into->Type, Into->Name, At)), S.SrcLine);
  return MmaEpilogueValues{Values, Stores};
}

} // namespace tdsl
