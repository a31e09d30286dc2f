//===- MmaLineReads.cpp - An epilogue's reads along one side, loaded once -===//
#include "passes/MmaLineReads.h"
#include "ir/Printer.h"
#include "passes/MmaStaging.h"

#include "llvm/ADT/STLExtras.h"

namespace tdsl {

using namespace ir;

namespace {

Expr c(int64_t V) { return intImm(V); }

/// The variables an expression uses.
class VarScan : public IRVisitor {
public:
  std::vector<std::string> Vars;

protected:
  void visitVar(const VarNode &N) override {
    if (!llvm::is_contained(Vars, N.Name))
      Vars.push_back(N.Name);
  }
};

/// The epilogue's loads of input tensors, outermost first; a load's
/// indices are not searched (a candidate's own are its whole).
class LoadScan : public IRVisitor {
public:
  explicit LoadScan(const Func &F) : F(F) {}
  std::vector<Expr> Loads;

  void visit(const Expr &E) override {
    if (!E)
      return;
    if (E->Kind == ExprKind::Load) {
      const auto &L = static_cast<const LoadNode &>(*E);
      const Buffer *B = F.findParam(L.Buffer);
      if (B && B->Role == BufferRole::Input) {
        Loads.push_back(E);
        return;
      }
    }
    IRVisitor::visit(E);
  }
  using IRVisitor::visit;

protected:
  // Only what every element evaluates: not under an if, not a select's
  // arms, not the right of a short-circuit operator.
  void visitIf(const IfNode &N) override { visit(N.Cond); }
  void visitSelect(const SelectNode &N) override { visit(N.Cond); }
  void visitBinary(const BinaryNode &N) override {
    if (N.Op == BinaryOp::And || N.Op == BinaryOp::Or) {
      visit(N.A);
      return;
    }
    IRVisitor::visitBinary(N);
  }

private:
  const Func &F;
};

/// Each hoisted read replaced by its array's element.
class ToArrays : public IRMutator {
public:
  ToArrays(std::vector<std::pair<Expr, Expr>> Map) : Map(std::move(Map)) {}

  Expr mutate(const Expr &E) override {
    for (const auto &[From, To] : Map)
      if (structurallyEqual(E, From))
        return To;
    return IRMutator::mutate(E);
  }
  using IRMutator::mutate;

private:
  std::vector<std::pair<Expr, Expr>> Map;
};

} // namespace

MmaLineReads::MmaLineReads(const Func &F, const ContractionNest &N, const Stmt &Epi,
                           int64_t TilesM, int64_t TilesN, NameTable &Names)
    : N(N), TilesM(TilesM), TilesN(TilesN) {
  std::vector<std::string> Fixed(F.Sizes.begin(), F.Sizes.end());
  for (const ForNode *B : N.Batch)
    Fixed.push_back(B->Var);
  LoadScan Scan(F);
  Scan.visit(Epi);
  for (const Expr &L : Scan.Loads) {
    if (Reads.size() == MmaMaxLineReads)
      break;
    if (llvm::any_of(Reads, [&](const Read &R) { return structurallyEqual(R.Load, L); }))
      continue;
    VarScan Vars;
    Vars.visit(L);
    bool Row = llvm::is_contained(Vars.Vars, N.Row->Var);
    bool Col = llvm::is_contained(Vars.Vars, N.Col->Var);
    bool Others = llvm::any_of(Vars.Vars, [&](const std::string &V) {
      return V != N.Row->Var && V != N.Col->Var && !llvm::is_contained(Fixed, V);
    });
    if (Row == Col || Others)
      continue;
    const std::string &Tensor = static_cast<const LoadNode &>(*L).Buffer;
    Reads.push_back({L, Col, Names.fresh(Tensor + (Col ? "_cols" : "_rows"))});
  }
}

Stmt MmaLineReads::rewrite(const Stmt &Epi, const Expr &I, const Expr &J, const Expr &E) const {
  std::vector<std::pair<Expr, Expr>> Map;
  for (const Read &R : Reads)
    Map.push_back({R.Load, load(R.Load->Type, R.Array,
                                R.Col ? std::vector<Expr>{J, imod(E, c(2))}
                                      : std::vector<Expr>{I, idiv(E, c(2))})});
  return ToArrays(std::move(Map)).mutate(Epi);
}

Stmt MmaLineReads::wrap(Stmt Perform, const Expr &GM, const Expr &GN, const std::string &I,
                        const std::string &J, const std::string &E, unsigned Line) const {
  std::string What;
  for (const Read &R : Reads)
    What += (What.empty() ? "" : ", ") + toString(R.Load) + " per " +
            (R.Col ? "column" : "row") + " (" + R.Array + ")";
  std::vector<Stmt> Loads{note("[tile-mma] read before the outputs, once for each column or row "
                               "a lane holds rather than for each element: " + What,
                               Line)};
  for (const Read &R : Reads) {
    // The lane's two columns of mma tile J are its elements 0 and 1; its
    // two rows of tile I, elements 0 and 2.
    const std::string &Tile = R.Col ? J : I;
    const ForNode &Side = R.Col ? *N.Col : *N.Row;
    Expr At = R.Col ? GN : substitute(GM, E, mul(var(E), c(2)));
    // Outside the tensor the register holds 0: the epilogue's values
    // (passes/MmaEpilogueValues.h) are computed for those elements too.
    Stmt Fill = store(R.Array, {var(Tile), var(E)},
                      select(lt(At, Side.Extent), R.Load, zeroOf(R.Load->Type)), Line);
    Fill = letStmt(Side.Var, fromMin(Side.Min, At), Fill, Line);
    Loads.push_back(unrolled(Tile, R.Col ? TilesN : TilesM, unrolled(E, 2, Fill, Line), Line));
  }
  Loads.push_back(std::move(Perform));
  Stmt Out = block(std::move(Loads), Line);
  for (auto It = Reads.rbegin(); It != Reads.rend(); ++It)
    Out = allocate(tempBuffer(It->Array, It->Load->Type, {c(It->Col ? TilesN : TilesM), c(2)},
                              MemScope::Register),
                   Out, Line);
  return Out;
}

} // namespace tdsl
