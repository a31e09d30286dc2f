//===- MmaMatch.cpp - A contraction as the tensor cores take it -----------===//
#include "passes/MmaMatch.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <optional>
#include <string>

namespace tdsl {

using namespace ir;

namespace {

/// The mma's input type of one factor of the product: f32(L) of a load L
/// of f16 or bf16, f32(tf32(L)) of an f32 load, or i32(L) of an i8 load;
/// Load is L.
std::optional<DType> mmaInput(const Expr &E, Expr &Load) {
  if (E->Kind != ExprKind::Cast)
    return std::nullopt;
  const Expr *L = &static_cast<const CastNode &>(*E).A;
  bool Tf32 = false;
  if (E->Type == DType::F32 && (*L)->Kind == ExprKind::Cast && (*L)->Type == DType::TF32) {
    L = &static_cast<const CastNode &>(**L).A;
    Tf32 = true;
  }
  if ((*L)->Kind != ExprKind::Load)
    return std::nullopt;
  DType T = (*L)->Type;
  Load = *L;
  if (Tf32)
    return T == DType::F32 ? std::optional(DType::TF32) : std::nullopt;
  if (E->Type == DType::F32 && (T == DType::F16 || T == DType::BF16))
    return T;
  if (E->Type == DType::I32 && T == DType::I8)
    return T;
  return std::nullopt;
}

/// The mma shape of an input type, and its accumulator's type.
MmaShape shapeFor(DType In) {
  return In == DType::TF32 ? MmaShape::M16N8K8
         : In == DType::I8 ? MmaShape::M16N8K32
                           : MmaShape::M16N8K16;
}

/// Acc's update is ACC[0] + f32(A) * f32(B), in either order, of one row
/// and one column operand of a type mma.sync takes; its sides go to
/// C.Products.
bool matchProduct(const char *Pass, bool On, const Stmt &Nest, const ContractionAcc &Acc,
                  MmaContraction &C) {
  const Expr &U = Acc.Update;
  if (U->Kind != ExprKind::Binary || static_cast<const BinaryNode &>(*U).Op != BinaryOp::Add)
    return declineMma(Pass, On, Nest, "the update is not a sum of products");
  const auto &Sum = static_cast<const BinaryNode &>(*U);
  Expr Prod = Sum.B;
  if (Sum.A->Kind != ExprKind::Load || static_cast<const LoadNode &>(*Sum.A).Buffer != Acc.Name)
    Prod = Sum.A;
  auto IsMul = [](const Expr &E) {
    return E->Kind == ExprKind::Binary && static_cast<const BinaryNode &>(*E).Op == BinaryOp::Mul;
  };
  // An integer product summed as a float: f32(i32(A) * i32(B)).
  if (Prod->Kind == ExprKind::Cast && IsMul(static_cast<const CastNode &>(*Prod).A))
    return declineMma(Pass, On, Nest,
                      "the product is converted to " + std::string(dtypeName(Prod->Type)) +
                          " before it is summed (i8 products sum into i32: an i32 "
                          "intermediate converted after the sum is taken)");
  if (!IsMul(Prod))
    return declineMma(Pass, On, Nest, "the update is not the accumulator plus one product");
  const auto &P = static_cast<const BinaryNode &>(*Prod);
  Expr LA, LB;
  std::optional<DType> TA = mmaInput(P.A, LA), TB = mmaInput(P.B, LB);
  DType AccWant = TA == DType::I8 ? DType::I32 : DType::F32;
  if (!TA || !TB || *TA != *TB || Acc.Type != AccWant)
    return declineMma(Pass, On, Nest,
                      "the product is not of two f16, bf16 or tf32() values into an f32 "
                      "accumulator, or of two i8 values into an i32 one");
  if (!C.Products.empty() && *TA != C.FragType)
    return declineMma(Pass, On, Nest, "the sibling contractions multiply different types");
  C.FragType = *TA;
  std::vector<MmaOperandStage> &Sides = C.Sides;
  auto SideOf = [&](const Expr &L) {
    for (size_t I = 0; I < Sides.size(); ++I)
      if (structurallyEqual(Sides[I].Op->Load, L))
        return I;
    return Sides.size();
  };
  size_t A = SideOf(LA), B = SideOf(LB);
  if (A < Sides.size() && B < Sides.size() && !Sides[A].IsA)
    std::swap(A, B);
  if (A == Sides.size() || B == Sides.size() || !Sides[A].IsA || Sides[B].IsA)
    return declineMma(Pass, On, Nest,
                      "the product is not one row operand times one column operand");
  C.Products.push_back({A, B});
  return true;
}

} // namespace

bool declineMma(const char *Pass, bool On, const Stmt &Nest, const std::string &Why) {
  remark(Pass, Nest->SrcLine,
         (On ? "tensor_cores = on, but " : "") + Why + "; left to the passes after it");
  return false;
}

bool matchMma(const Func &F, const Stmt &Nest, const char *Pass, bool On, MmaContraction &Out) {
  // The shape of the nest is tile-contraction's to explain, unless tensor
  // cores were asked for: then every nest is explained.
  std::optional<ContractionNest> C =
      matchContraction(Nest, On ? Pass : nullptr, On, /*Nests=*/true);
  if (!C)
    return false;
  if (std::string Why = vectorProduct(*C, F, /*Columns=*/false); !Why.empty())
    return On ? declineMma(Pass, On, Nest, Why) : false;
  ContractionNest &N = Out.N;
  N = std::move(*C);
  // The row side's operands, then the column side's.
  Out.Sides.clear();
  Out.Products.clear();
  for (bool Row : {true, false})
    for (const ContractionOperand &O : N.Operands) {
      if (O.RowSide != Row)
        continue;
      MmaOperandStage Sd;
      Sd.Op = &O;
      Sd.IsA = O.RowSide;
      Sd.XLoop = O.RowSide ? N.Row : N.Col;
      Sd.Red = N.Red;
      Out.Sides.push_back(std::move(Sd));
    }
  for (const ContractionAcc &A : N.Accs)
    if (!matchProduct(Pass, On, Nest, A, Out))
      return false;
  Out.Shape = shapeFor(Out.FragType);
  for (MmaOperandStage &Sd : Out.Sides) {
    Sd.Shape = Out.Shape;
    Sd.FragType = Out.FragType;
  }
  return true;
}

std::string fragmentNote(const std::vector<MmaOperandStage> &Sides, size_t A, size_t B,
                         const MmaSchedule &S) {
  if (Sides.size() > 2) {
    // Siblings: each operand by name.
    std::vector<std::string> Trans, PerElement;
    for (const MmaOperandStage &O : Sides) {
      const std::string &Name = static_cast<const LoadNode &>(*O.Op->Load).Buffer;
      if (!O.usesLdMatrix(S))
        PerElement.push_back(Name);
      else if (!O.Op->KFastest)
        Trans.push_back(Name);
    }
    std::string Out = "; fragments by ldmatrix";
    if (!Trans.empty())
      Out += " (.trans for " + llvm::join(Trans, ", ") + ": the contiguous index is not k)";
    if (!PerElement.empty())
      Out = PerElement.size() == Sides.size() ? "; fragments by one shared load per element"
                                              : Out + ", those of " + llvm::join(PerElement, ", ") +
                                                    " by one shared load per element";
    return Out;
  }
  const MmaOperandStage &SA = Sides[A], &SB = Sides[B];
  bool LdA = SA.usesLdMatrix(S), LdB = SB.usesLdMatrix(S);
  bool TransA = LdA && !SA.Op->KFastest, TransB = LdB && !SB.Op->KFastest;
  std::string Pairs = SB.BytePairs ? "over byte pairs, regrouped by column with prmt: each two "
                                     "mma tiles take alternate columns"
                                   : "";
  if (LdA && LdB)
    return "; fragments by ldmatrix" +
           std::string(TransA || TransB
                           ? std::string(" (.trans for ") + (TransA ? "A" : "") +
                                 (TransA && TransB ? " and " : "") + (TransB ? "B" : "") +
                                 ": the contiguous index is not k" +
                                 (Pairs.empty() ? "" : "; " + Pairs) + ")"
                           : "");
  if (!S.LdMatrix)
    return "; fragments by one shared load per element";
  return std::string("; ") +
         (LdA   ? "A's fragments by ldmatrix, B's"
          : LdB ? "B's fragments by ldmatrix" + (Pairs.empty() ? "" : " (.trans " + Pairs + ")") +
                      ", A's"
                : "fragments") +
         " by one shared load per element (ldmatrix.trans moves only 16-bit elements, or B's "
         "bytes in pairs)";
}

std::string mmaLaunchNote(const MmaContraction &M, const MmaSchedule &S, bool WideTwice,
                          bool GeneralTwice, bool Engine) {
  const ContractionNest &N = M.N;
  std::string Ways = fragmentNote(M.Sides, M.Products[0].A, M.Products[0].B, S);
  std::string Note =
      "[tile-mma] tensor cores (mma.sync " + mmaShapeName(M.Shape).str() + ", " +
      dtypeName(M.FragType).str() + " in, " + dtypeName(N.acc().Type).str() +
      " accumulators): block tile " + std::to_string(S.BlockM) + "x" + std::to_string(S.BlockN) +
      ", " + std::to_string(S.threads() / 32) + " warps of " + std::to_string(S.WarpM) + "x" +
      std::to_string(S.WarpN) + " (" + std::to_string(S.WarpM / 16) + "x" +
      std::to_string(S.WarpN / 8) + " mma tiles each), k tile " + std::to_string(S.TileK) +
      (Engine ? " through " + std::to_string(S.Stages) +
                    " shared stages filled by the bulk tensor copy engine where the tensors are "
                    "aligned (thread 0 issues a stage's boxes; every thread waits for the stage "
                    "on its mbarrier, and each warp releases it on a second one once it has "
                    "loaded its fragments there: no block barrier in the k loop), else by guarded "
                    "copies"
       : S.Stages > 1
           ? " through " + std::to_string(S.Stages) + " shared stages filled by cp.async (" +
                 std::to_string(S.Stages - 1) + " k tiles in flight)"
           : " copied synchronously into one shared stage") +
      Ways + (M.FragType == DType::TF32 ? ", rounded to tf32" : "") +
      (S.Grouped ? "; output tiles in groups of 8 tile rows, for L2 reuse" : "") +
      (WideTwice || GeneralTwice
           ? std::string(GeneralTwice ? "; "
                         : Engine     ? "; where the tensors are aligned, "
                                      : "; where the copies are cp.async, ") +
                 "each k step's fragments load during the step before"
           : "");
  if (const size_t Accs = N.Accs.size(); Accs > 1) {
    std::string AccNames, Staged;
    for (const ContractionAcc &A : N.Accs)
      AccNames += (AccNames.empty() ? "" : ", ") + A.Name;
    for (const MmaOperandStage &O : M.Sides)
      Staged += (Staged.empty() ? "" : ", ") + static_cast<const LoadNode &>(*O.Op->Load).Buffer;
    Note += "; " + std::to_string(Accs) + " sibling accumulators (" + AccNames +
            ") per warp, so each operand (" + Staged + ") is staged once for all of them";
  }
  return Note;
}

void fitWarpTile(const Func &F, const MmaContraction &M, MmaSchedule &S, bool LongK) {
  // A batched nest of attention's shapes (k or n of 64 to 256) ran 2-14%
  // faster on the H200 with eight 64x32 warps than with four 64x64 ones,
  // which hide a short k loop's prologue and epilogue less; one whose k
  // loop and columns are long ran 7-27% faster with 64x64, as unbatched
  // nests do at any k (bench/RESULTS.md).
  // A reduction over a nest (a convolution) takes them too: its copies'
  // addresses (the merged columns' quotients and remainders, the
  // window's taps) stay in registers beside the accumulators, and with
  // 64x64 warps ptxas spilled.
  bool Narrow = (!M.N.Batch.empty() && !LongK) || !M.N.Outer.empty();
  if (Narrow && !findKnob(F, "warp_tile") && S.WarpN > 32 && S.BlockN % 32 == 0)
    S.WarpN = 32;
  // Siblings: each warp holds its WarpM x WarpN outputs of every
  // accumulator. Unless the warp tile is pinned, it shrinks so that
  // together they take about one warp tile's registers, along the side
  // with more distinct operands (A1 . B and A2 . B shrink the rows); so
  // does the block tile unless pinned (the same warps, smaller shared
  // tiles), else the block gets more warps.
  const int64_t Accs = static_cast<int64_t>(M.N.Accs.size());
  if (Accs > 1 && !findKnob(F, "warp_tile")) {
    int64_t RowSides = std::count_if(M.Sides.begin(), M.Sides.end(),
                                     [](const MmaOperandStage &O) { return O.IsA; });
    bool Rows = RowSides > static_cast<int64_t>(M.Sides.size()) - RowSides;
    int64_t &WX = Rows ? S.WarpM : S.WarpN, &BX = Rows ? S.BlockM : S.BlockN;
    int64_t W = std::max<int64_t>(16, WX / Accs / 16 * 16);
    bool Block = !findKnob(F, "block_tile");
    // A pinned block keeps its size and takes more warps: it keeps the
    // warp tile where they would pass the 1024-thread limit.
    MmaSchedule Shrunk = S;
    (Rows ? Shrunk.WarpM : Shrunk.WarpN) = W;
    if (Block || Shrunk.threads() <= 1024) {
      if (Block)
        BX = BX / WX * W;
      WX = W;
    }
  }
}

int64_t mmaTileBytes(const MmaContraction &M, const MmaSchedule &S) {
  int64_t B = 0;
  for (const MmaOperandStage &O : M.Sides) {
    int64_t Pitch = (O.IsA ? S.BlockM : S.BlockN) + O.padFor(S);
    B += S.Stages * S.TileK * Pitch * dtypeBytes(O.Op->Type);
  }
  return B;
}

} // namespace tdsl
