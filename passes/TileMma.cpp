//===- TileMma.cpp - Contractions on tensor cores: mma.sync, ldmatrix -----===//
#include "passes/TileMma.h"
#include "passes/ContractionMatch.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"
#include "ir/Simplify.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <string>

namespace tdsl {

using namespace ir;

namespace {

constexpr const char *PassName = "tile-mma";

Expr c(int64_t V) { return intImm(V); }
Expr idiv(Expr A, Expr B) { return binary(BinaryOp::Div, std::move(A), std::move(B)); }
Expr imod(Expr A, Expr B) { return binary(BinaryOp::Mod, std::move(A), std::move(B)); }
Expr land(Expr A, Expr B) { return binary(BinaryOp::And, std::move(A), std::move(B)); }
Expr ceilDiv(Expr A, int64_t B) { return idiv(add(std::move(A), c(B - 1)), c(B)); }
Expr fromMin(const Expr &Min, Expr X) { return asConstInt(Min) == 0 ? X : add(Min, std::move(X)); }
/// A loop over a warp's tiles or a thread's copies: constant and small, so
/// the unroll pass unrolls it fully (from -O2) and fragment indices become
/// constants, which keeps the fragments in registers.
Stmt unrolled(const std::string &V, int64_t N, Stmt Body, unsigned Line) {
  return forLoop(V, c(0), c(N), ForKind::Serial, std::move(Body), Line);
}

/// f32(L) of a load L of f16 or bf16: L's type, else nothing.
std::optional<DType> halfOperand(const Expr &E, Expr &Load) {
  if (E->Kind != ExprKind::Cast || E->Type != DType::F32)
    return std::nullopt;
  const Expr &L = static_cast<const CastNode &>(*E).A;
  if (L->Kind != ExprKind::Load || (L->Type != DType::F16 && L->Type != DType::BF16))
    return std::nullopt;
  Load = L;
  return L->Type;
}

/// 1. Bank model: wavefronts of the worst phase of 8 lanes that each move
/// 16 bytes (an ldmatrix phase reads 8 rows at one column; a copy phase
/// writes 8 consecutive chunks), in a tile of Rows x Cols elements of 2
/// bytes stored under Swz. One wavefront serves 8 distinct 16-byte bank
/// groups of a 128-byte line.
int64_t worstPhase(int64_t Rows, int64_t Cols, const Swizzle &Swz, bool Column) {
  int64_t Chunks = Cols / 8, Worst = 1;
  for (int64_t First = 0; First + 8 <= Rows * Chunks; First += 8) {
    int64_t Count[8] = {};
    for (int64_t L = 0; L < 8; ++L) {
      // Column phases: rows First/Chunks*8.. at chunk First % Chunks.
      int64_t Q = Column ? ((First / Chunks) / 8 * 8 + L) * Chunks + First % Chunks : First + L;
      if (Q / Chunks >= Rows)
        continue;
      int64_t Off = Swz ? Swz.apply(Q * 8) : Q * 8;
      Worst = std::max(Worst, ++Count[(Off / 8) % 8]);
    }
  }
  return Worst;
}

/// The operand of one side as staged: its tile is Rows x Cols with the
/// operand's contiguous index last (k when KFastest, else m or n).
struct Side {
  const ContractionOperand *Op = nullptr;
  const ForNode *XLoop = nullptr;
  int64_t BX = 0, WX = 0;
  int64_t Rows = 0, Cols = 0;
  std::string Tile, Frag;
  Swizzle Swz;
  std::string SwzNote;
  Expr Aligned; ///< 16-byte copies can run: rows of whole chunks, 16-byte base
};

class MmaTiler {
public:
  explicit MmaTiler(Func &F) : F(F), Names(F) {}
  Stmt tile(const Stmt &Nest, std::vector<Knob> &Knobs);

private:
  Func &F;
  NameTable Names;
  MmaSchedule S;
  ContractionNest N;
  Side Sides[2]; ///< A (rows), B (columns)
  std::string BZ, PID, TM, TN, TX, Lane, Warp, KT;
  unsigned Line = 0;
  /// The k loop being built copies with cp.async (both operands aligned).
  bool WideCopies = false;

  bool decline(const Stmt &Nest, const std::string &Why) {
    remark(PassName, Nest->SrcLine,
           (S.Mode == TensorCores::On ? "tensor_cores = on, but " : "") + Why +
               "; left to the passes after it");
    return false;
  }
  bool match(const Stmt &Nest);
  void chooseLayout(Side &O);
  Expr warpOffset(const Side &O) const {
    int64_t WarpsN = S.BlockN / S.WarpN;
    Expr W = var(Warp);
    return mul(&O == &Sides[0] ? idiv(W, c(WarpsN)) : imod(W, c(WarpsN)), c(O.WX));
  }
  Expr blockOffset(const Side &O) const {
    return mul(var(&O == &Sides[0] ? TM : TN), c(O.BX));
  }
  Stmt copyTile(const Side &O, const Expr &KTile, const Expr &Stage, bool Async);
  Stmt loadFragments(const Side &O, const Expr &Buf, const Expr &Stage, const Expr &KK);
  Stmt loadBoth(int64_t Buf, const Expr &Stage, int64_t KK) {
    return block({loadFragments(Sides[0], c(Buf), Stage, c(KK)),
                  loadFragments(Sides[1], c(Buf), Stage, c(KK))});
  }
  Stmt mmas(const Expr &Buf);
  Stmt copyBoth(const Expr &KTile, const Expr &Stage, bool Async) {
    return block({copyTile(Sides[0], KTile, Stage, Async), copyTile(Sides[1], KTile, Stage, Async)});
  }
  Stmt pipelinedLoop(const Expr &Tiles);
};

bool MmaTiler::match(const Stmt &Nest) {
  // The shape of the nest is tile-contraction's to explain, unless tensor
  // cores were asked for.
  std::optional<ContractionNest> C =
      matchContraction(Nest, S.Mode == TensorCores::On ? PassName : nullptr);
  if (!C)
    return false;
  N = std::move(*C);
  // ACC[0] + f32(A) * f32(B), in either order.
  const Expr &U = N.Update;
  if (U->Kind != ExprKind::Binary || static_cast<const BinaryNode &>(*U).Op != BinaryOp::Add)
    return decline(Nest, "the update is not a sum of products");
  const auto &Sum = static_cast<const BinaryNode &>(*U);
  Expr Prod = Sum.B;
  if (Sum.A->Kind != ExprKind::Load || static_cast<const LoadNode &>(*Sum.A).Buffer != N.Acc)
    Prod = Sum.A;
  if (Prod->Kind != ExprKind::Binary || static_cast<const BinaryNode &>(*Prod).Op != BinaryOp::Mul)
    return decline(Nest, "the update is not the accumulator plus one product");
  const auto &P = static_cast<const BinaryNode &>(*Prod);
  Expr LA, LB;
  std::optional<DType> TA = halfOperand(P.A, LA), TB = halfOperand(P.B, LB);
  if (!TA || !TB || *TA != *TB || N.AccType != DType::F32)
    return decline(Nest, "the product is not of two f16 (or two bf16) values into an f32 "
                         "accumulator (tf32 and i8 tensor cores are not implemented yet)");
  if (N.Operands.size() != 2 || N.Operands[0].RowSide == N.Operands[1].RowSide)
    return decline(Nest, "the product is not one row operand times one column operand");
  for (const ContractionOperand &O : N.Operands) {
    Side &Sd = Sides[O.RowSide ? 0 : 1];
    Sd = Side();
    Sd.Op = &O;
    Sd.XLoop = O.RowSide ? N.Row : N.Col;
  }
  return true;
}

/// 2. Each operand's tile keeps its contiguous index last, so a 16-byte
/// copy moves 8 consecutive elements; the swizzle (from the bank model)
/// XORs the 16-byte chunk with the row so that the 8 rows of an ldmatrix
/// phase fall in 8 bank groups, which keeps the copies' phases free too.
void MmaTiler::chooseLayout(Side &O) {
  bool Row = &O == &Sides[0];
  O.BX = Row ? S.BlockM : S.BlockN;
  O.WX = Row ? S.WarpM : S.WarpN;
  O.Rows = O.Op->KFastest ? O.BX : S.TileK;
  O.Cols = O.Op->KFastest ? S.TileK : O.BX;
  const auto &L = static_cast<const LoadNode &>(*O.Op->Load);
  const Buffer *T = findTensor(F, L.Buffer);
  const ForNode *Fast = O.Op->KFastest ? N.Red : O.XLoop;
  std::optional<int64_t> Min = asConstInt(Fast->Min);
  if (T && contiguousIn(L.Indices, Fast->Var) && Min && *Min % 8 == 0) {
    std::vector<Expr> First(T->rank(), c(0));
    O.Aligned = call(Intrinsic::Aligned, {load(T->Type, T->Name, First), c(16)});
    if (T->rank() > 1)
      O.Aligned = land(binary(BinaryOp::Eq, imod(T->Shape.back(), c(8)), c(0)), O.Aligned);
  }
  int64_t Chunks = O.Cols / 8;
  O.Swz = Swizzle();
  O.SwzNote.clear();
  if (!S.Swizzle || !llvm::isPowerOf2_64(Chunks))
    return;
  unsigned LogQ = llvm::Log2_64(Chunks);
  Swizzle Cand{std::min(3u, LogQ), 3, std::max(3u, LogQ)};
  int64_t ReadBefore = worstPhase(O.Rows, O.Cols, Swizzle(), true),
          ReadAfter = worstPhase(O.Rows, O.Cols, Cand, true),
          CopyBefore = worstPhase(O.Rows, O.Cols, Swizzle(), false),
          CopyAfter = worstPhase(O.Rows, O.Cols, Cand, false);
  if (ReadAfter >= ReadBefore || CopyAfter > CopyBefore)
    return;
  O.Swz = Cand;
  O.SwzNote = "[tile-mma] " + O.Tile + " swizzle(" + std::to_string(Cand.Bits) + ", 3, " +
              std::to_string(Cand.Shift) + "): an ldmatrix phase reads 8 rows of " +
              std::to_string(O.Cols * 2) + " bytes at one column, " +
              std::to_string(ReadBefore) + " wavefronts unswizzled and " +
              std::to_string(ReadAfter) + " swizzled; the 16-byte copies take " +
              std::to_string(CopyAfter) + " (" + std::to_string(CopyBefore) + " unswizzled)";
}

/// 3. The copy of O's k tile KTile into stage Stage by all threads, 16
/// bytes (8 elements) each time: cp.async reading zeros outside the tensor
/// in the k loop for aligned operands (Async and WideCopies), else one
/// guarded element at a time.
Stmt MmaTiler::copyTile(const Side &O, const Expr &KTile, const Expr &Stage, bool Async) {
  int64_t Chunks = O.Cols / 8, Total = O.Rows * Chunks, Threads = S.threads();
  int64_t Rounds = (Total + Threads - 1) / Threads;
  bool KF = O.Op->KFastest;
  auto Copy = [&](bool Wide) {
    std::string Cc = Names.fresh("c"), Q = Names.fresh("q"), R = Names.fresh("r"),
                Col = Names.fresh("col");
    auto Element = [&](Expr E) { // global (x, k) of element E of the chunk
      Expr X = add(blockOffset(O), KF ? var(R) : add(var(Col), E));
      Expr K = add(mul(KTile, c(S.TileK)), KF ? add(var(Col), E) : var(R));
      Expr Src = substitute(O.Op->Load, O.XLoop->Var, fromMin(O.XLoop->Min, X));
      Src = substitute(Src, N.Red->Var, fromMin(N.Red->Min, K));
      return std::make_pair(Src, land(lt(X, O.XLoop->Extent), lt(K, N.Red->Extent)));
    };
    Stmt Body;
    if (Wide) {
      auto [Src, Valid] = Element(c(0));
      const auto &L = static_cast<const LoadNode &>(*Src);
      Body = std::make_shared<AsyncCopyNode>(O.Tile, std::vector<Expr>{Stage, var(R), var(Col)},
                                             L.Buffer, L.Indices, 8, Line, Valid);
    } else {
      std::string E = Names.fresh("e");
      auto [Src, Valid] = Element(var(E));
      std::vector<Expr> Dst = {Stage, var(R), add(var(Col), var(E))};
      Body = unrolled(E, 8,
                      ifThen(Valid, store(O.Tile, Dst, Src, Line),
                             store(O.Tile, Dst, zeroOf(O.Op->Type), Line), Line),
                      Line);
    }
    Body = letStmt(R, idiv(var(Q), c(Chunks)),
                   letStmt(Col, mul(imod(var(Q), c(Chunks)), c(8)), Body, Line), Line);
    if (Total % Threads)
      Body = ifThen(lt(var(Q), c(Total)), Body, nullptr, Line);
    Body = letStmt(Q, add(var(TX), mul(var(Cc), c(Threads))), Body, Line);
    return unrolled(Cc, Rounds, Body, Line);
  };
  return Copy(Async && WideCopies);
}

/// 4. The warp's fragments of O for k step KK of the staged tile: ldmatrix
/// x4 per 16 x 16 (with .trans when O's contiguous index is not k), or,
/// with ldmatrix = off, one shared load per element by the ISA's layout.
Stmt MmaTiler::loadFragments(const Side &O, const Expr &Buf, const Expr &Stage,
                                  const Expr &KK) {
  bool IsA = &O == &Sides[0], KF = O.Op->KFastest;
  int64_t Tiles = IsA ? O.WX / 16 : O.WX / 8; // A: m16 tiles; B: n8 tiles
  Expr L = var(Lane), K0 = mul(KK, c(16));
  auto At = [&](const Expr &X, const Expr &K) {
    return KF ? std::vector<Expr>{Stage, X, K} : std::vector<Expr>{Stage, K, X};
  };
  if (!S.LdMatrix) {
    std::string T = Names.fresh(IsA ? "i" : "j"), E = Names.fresh("e");
    Expr G = idiv(L, c(4)), Tg = imod(L, c(4)), Ev = var(E);
    Expr X, K;
    if (IsA) { // a_e: row g + 8 ((e >> 1) & 1), column 2 t + (e & 1) + 8 (e >> 2)
      X = add(mul(var(T), c(16)), add(G, mul(imod(idiv(Ev, c(2)), c(2)), c(8))));
      K = add(add(mul(Tg, c(2)), imod(Ev, c(2))), mul(idiv(Ev, c(4)), c(8)));
    } else { // b_e: row 2 t + (e & 1) + 8 (e >> 1), column g
      X = add(mul(var(T), c(8)), G);
      K = add(add(mul(Tg, c(2)), imod(Ev, c(2))), mul(idiv(Ev, c(2)), c(8)));
    }
    Stmt Ld = store(O.Frag, {Buf, var(T), Ev},
                    load(O.Op->Type, O.Tile, At(add(warpOffset(O), X), add(K0, K))), Line);
    return unrolled(T, Tiles, unrolled(E, IsA ? 8 : 4, Ld, Line), Line);
  }
  // Lane l addresses row l % 8 of matrix l / 8. A's four matrices are
  // (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15); B's
  // (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15): two
  // n8 tiles per ldmatrix.
  std::string T = Names.fresh(IsA ? "i" : "j");
  Expr J = idiv(L, c(8)), R8 = imod(L, c(8));
  Expr XBlock = IsA ? imod(J, c(2)) : idiv(J, c(2)), KBlock = IsA ? idiv(J, c(2)) : imod(J, c(2));
  Expr X0 = add(warpOffset(O), mul(var(T), c(16)));
  Expr X = add(X0, mul(XBlock, c(8))), K = add(K0, mul(KBlock, c(8)));
  // The lane's row runs along the tile's row dimension: X when k is
  // contiguous, else k (and .trans transposes each matrix back).
  if (KF)
    X = add(X, R8);
  else
    K = add(K, R8);
  Stmt Ld = std::make_shared<LdMatrixNode>(
      4, !KF, O.Frag, std::vector<Expr>{Buf, IsA ? var(T) : mul(var(T), c(2)), c(0)}, O.Tile,
      At(X, K),
      Line);
  return unrolled(T, IsA ? Tiles : Tiles / 2, Ld, Line);
}

/// 5. The warp's (WM / 16) x (WN / 8) mma tiles on fragment buffer Buf.
Stmt MmaTiler::mmas(const Expr &Buf) {
  std::string I = Names.fresh("i"), J = Names.fresh("j");
  Stmt Mma = std::make_shared<MmaNode>(
      MmaShape::M16N8K16, N.Acc, std::vector<Expr>{var(I), var(J), c(0)}, Sides[0].Frag,
      std::vector<Expr>{Buf, var(I), c(0)}, Sides[1].Frag, std::vector<Expr>{Buf, var(J), c(0)},
      Line);
  return unrolled(I, S.WarpM / 16, unrolled(J, S.WarpN / 8, Mma, Line), Line);
}

/// 6. The k loop with Stages >= 2 and an even number of k steps per tile
/// when double_buffer = on, software-pipelined at two levels. Tiles: the first Stages - 1 k tiles
/// are issued up front; step 0 of tile kt refills the stage tile kt - 1
/// used with tile kt + Stages - 1, and before the last step every thread
/// waits for tile kt + 1 (at most Stages - 2 younger groups in flight) and
/// passes a barrier, so every warp is done with tile kt - 1's stage before
/// anyone refills it. Fragments: two buffers, step s + 1's (the next
/// tile's first, after the last step) loaded before step s's mmas, so the
/// ldmatrix latency and the barrier hide behind mmas. One commit per tile
/// keeps the group count uniform.
Stmt MmaTiler::pipelinedLoop(const Expr &Tiles) {
  int64_t Steps = S.TileK / 16, St = S.Stages;
  auto Commit = [&] { return std::make_shared<AsyncCommitNode>(Line); };
  auto Wait = [&](int64_t P) { return std::make_shared<AsyncWaitNode>(unsigned(P), Line); };
  std::vector<Stmt> Out;
  std::string Pro = Names.fresh("s");
  Out.push_back(unrolled(
      Pro, St - 1,
      block({ifThen(lt(var(Pro), Tiles), copyBoth(var(Pro), var(Pro), true), nullptr, Line),
             Commit()}),
      Line));
  Out.push_back(Wait(St - 2));
  Out.push_back(barrier(Line));
  Out.push_back(ifThen(lt(c(0), Tiles), loadBoth(0, c(0), 0), nullptr, Line));
  std::string Cur = Names.fresh("stage"), Nxt = Names.fresh("next");
  Expr HasNext = lt(add(var(KT), c(1)), Tiles);
  std::vector<Stmt> Iter;
  for (int64_t K = 0; K < Steps; ++K) {
    if (K == Steps - 1) {
      Iter.push_back(Wait(St - 2));
      Iter.push_back(barrier(Line));
    }
    if (K + 1 < Steps)
      Iter.push_back(loadBoth((K + 1) % 2, var(Cur), K + 1));
    else
      Iter.push_back(ifThen(HasNext, loadBoth(0, var(Nxt), 0), nullptr, Line));
    if (K == 0) {
      Expr Fill = add(var(KT), c(St - 1));
      Iter.push_back(ifThen(lt(Fill, Tiles), copyBoth(Fill, imod(Fill, c(St)), true), nullptr,
                            Line));
      Iter.push_back(Commit());
    }
    Iter.push_back(mmas(c(K % 2)));
  }
  Stmt Body = letStmt(Cur, imod(var(KT), c(St)),
                      letStmt(Nxt, imod(add(var(KT), c(1)), c(St)), block(std::move(Iter)), Line),
                      Line);
  Out.push_back(forLoop(KT, c(0), Tiles, ForKind::Serial, Body, Line));
  Out.push_back(Wait(0));
  return block(std::move(Out));
}

Stmt MmaTiler::tile(const Stmt &Nest, std::vector<Knob> &) {
  S = mmaSchedule(F, 2);
  if (S.Mode == TensorCores::Off || !match(Nest))
    return Nest; // tensor_cores = off: asked for, so no remark
  Line = Nest->SrcLine;
  if (F.MinSM < 80) {
    decline(Nest, "mma.sync needs sm_80 or newer (the oldest --arch is sm_" +
                      std::to_string(F.MinSM) + ")");
    return Nest;
  }
  if (!S.Unusable.empty()) {
    decline(Nest, "the pinned schedule: " + S.Unusable);
    return Nest;
  }

  // A batched nest keeps its batch offsets in registers beside the 64x64
  // warp tile's 160 accumulator and fragment registers, which then spill
  // (ptxas -v, sm_80 and sm_90): unless pinned, its warps take 64x32.
  if (!N.Batch.empty() && !findKnob(F, "warp_tile") && S.WarpN > 32 && S.BlockN % 32 == 0)
    S.WarpN = 32;

  // Names: the launch's variables, then each side's tile and fragments.
  BZ = Names.fresh("bz");
  PID = Names.fresh("pid");
  TM = Names.fresh("tm");
  TN = Names.fresh("tn");
  TX = Names.fresh("tx");
  Lane = Names.fresh("lane");
  Warp = Names.fresh("warp");
  KT = Names.fresh("kt");
  for (Side &O : Sides) {
    const std::string &Buf = static_cast<const LoadNode &>(*O.Op->Load).Buffer;
    O.Tile = Names.fresh(Buf + "_tile");
    O.Frag = Names.fresh(Buf + "_frag");
    chooseLayout(O);
  }

  // 7. The accumulators start as the nest's init; then the k loop.
  std::vector<Stmt> Body;
  std::string I = Names.fresh("i"), J = Names.fresh("j"), E = Names.fresh("e");
  {
    AccReplacer R;
    R.Acc = N.Acc;
    R.AccIndices = {var(I), var(J), var(E)};
    std::vector<Stmt> Init;
    for (const Stmt &P : N.Init)
      Init.push_back(R.mutate(P));
    Body.push_back(unrolled(I, S.WarpM / 16,
                            unrolled(J, S.WarpN / 8, unrolled(E, 4, block(Init), Line), Line),
                            Line));
  }
  Expr Tiles = ceilDiv(N.Red->Extent, S.TileK);
  int64_t Steps = S.TileK / 16;
  auto Commit = [&] { return std::make_shared<AsyncCommitNode>(Line); };
  auto Wait = [&](unsigned Pending) { return std::make_shared<AsyncWaitNode>(Pending, Line); };
  // One k tile's steps on one fragment buffer, for the forms below.
  auto Compute = [&](const Expr &Stage) {
    std::vector<Stmt> Out;
    for (int64_t K = 0; K < Steps; ++K) {
      Out.push_back(loadBoth(0, Stage, K));
      Out.push_back(mmas(c(0)));
    }
    return block(std::move(Out));
  };
  bool Pipelined = S.Stages >= 2 && Steps % 2 == 0 && S.DoubleBuffer;
  auto KLoop = [&]() -> Stmt {
    if (Pipelined)
      return pipelinedLoop(Tiles);
    if (S.Stages == 1) {
      // Synchronous copies into one stage, a barrier on each side.
      return forLoop(KT, c(0), Tiles, ForKind::Serial,
                     block({copyBoth(var(KT), c(0), false), barrier(Line), Compute(c(0)),
                            barrier(Line)}),
                     Line);
    }
    // The ring of stages, fragments loaded step by step: wait for tile kt,
    // a barrier (every warp is done with tile kt - 1's stage), refill that
    // stage with tile kt + Stages - 1, compute tile kt.
    std::string St = Names.fresh("s");
    Expr Next = add(var(KT), c(S.Stages - 1));
    return block(
        {unrolled(St, S.Stages - 1,
                  block({ifThen(lt(var(St), Tiles), copyBoth(var(St), var(St), true), nullptr,
                                Line),
                         Commit()}),
                  Line),
         forLoop(KT, c(0), Tiles, ForKind::Serial,
                 block({Wait(static_cast<unsigned>(S.Stages - 2)), barrier(Line),
                        ifThen(lt(Next, Tiles), copyBoth(Next, imod(Next, c(S.Stages)), true),
                               nullptr, Line),
                        Commit(), Compute(imod(var(KT), c(S.Stages)))}),
                 Line),
         Wait(0)});
  };
  // Two versions of the loop, chosen once per launch: 16-byte async copies
  // where both operands' rows are whole 16-byte chunks and the tensors
  // 16-byte aligned, guarded element copies otherwise. Each version keeps
  // only its own addresses in registers.
  if (S.Stages >= 2 && Sides[0].Aligned && Sides[1].Aligned) {
    WideCopies = true;
    Stmt Wide = KLoop();
    WideCopies = false;
    Body.push_back(ifThen(land(Sides[0].Aligned, Sides[1].Aligned), Wide, KLoop(), Line));
  } else {
    WideCopies = false;
    Body.push_back(KLoop());
  }

  // 8. The epilogue per accumulator element (c_e: row g + 8 (e >> 1),
  //    column 2 t + (e & 1)), for the outputs inside the tensor.
  {
    AccReplacer R;
    R.Acc = N.Acc;
    R.AccIndices = {var(I), var(J), var(E)};
    std::vector<Stmt> Out;
    for (const Stmt &X : N.Epilogue)
      Out.push_back(R.mutate(X));
    Expr L = var(Lane);
    Expr GM = add(add(blockOffset(Sides[0]), warpOffset(Sides[0])),
                  add(mul(var(I), c(16)), add(idiv(L, c(4)), mul(idiv(var(E), c(2)), c(8)))));
    Expr GN = add(add(blockOffset(Sides[1]), warpOffset(Sides[1])),
                  add(mul(var(J), c(8)), add(mul(imod(L, c(4)), c(2)), imod(var(E), c(2)))));
    Stmt St = letStmt(N.Row->Var, fromMin(N.Row->Min, GM),
                      letStmt(N.Col->Var, fromMin(N.Col->Min, GN), block(Out), Line), Line);
    St = ifThen(land(lt(GM, N.Row->Extent), lt(GN, N.Col->Extent)), St, nullptr, Line);
    Body.push_back(
        unrolled(I, S.WarpM / 16, unrolled(J, S.WarpN / 8, unrolled(E, 4, St, Line), Line), Line));
  }

  // 9. Storage: the accumulator fragments, each side's fragments and tile.
  Stmt Launch = block(std::move(Body));
  Launch = allocate(tempBuffer(N.Acc, DType::F32, {c(S.WarpM / 16), c(S.WarpN / 8), c(4)},
                               MemScope::Fragment),
                    Launch, Line);
  Expr Bufs = c(Pipelined ? 2 : 1);
  Launch = allocate(tempBuffer(Sides[1].Frag, Sides[1].Op->Type, {Bufs, c(S.WarpN / 8), c(4)},
                               MemScope::Fragment),
                    Launch, Line);
  Launch = allocate(tempBuffer(Sides[0].Frag, Sides[0].Op->Type, {Bufs, c(S.WarpM / 16), c(8)},
                               MemScope::Fragment),
                    Launch, Line);
  for (int Sd = 1; Sd >= 0; --Sd) {
    const Side &O = Sides[Sd];
    Buffer T = tempBuffer(O.Tile, O.Op->Type, {c(S.Stages), c(O.Rows), c(O.Cols)},
                          MemScope::Shared);
    T.Swz = O.Swz;
    Stmt Inner = O.SwzNote.empty() ? Launch : block({note(O.SwzNote, Line), Launch});
    Launch = allocate(T, Inner, Line);
  }

  // 10. Coordinates: lane and warp; the output tile (tm, tn) of block pid,
  //    row by row or in groups of 8 tile rows (consecutive blocks then
  //    share B's k tiles in L2, and A's across the group); the batch.
  Launch = letStmt(Lane, imod(var(TX), c(32)),
                   letStmt(Warp, idiv(var(TX), c(32)), Launch, Line), Line);
  Expr RowsT = ceilDiv(N.Row->Extent, S.BlockM), ColsT = ceilDiv(N.Col->Extent, S.BlockN);
  if (S.Grouped) {
    std::string Grp = Names.fresh("group"), First = Names.fresh("first"),
                Size = Names.fresh("size");
    Expr PerGroup = mul(c(8), ColsT);
    Launch = letStmt(
        Grp, idiv(var(PID), PerGroup),
        letStmt(First, mul(var(Grp), c(8)),
                letStmt(Size, binary(BinaryOp::Min, sub(RowsT, var(First)), c(8)),
                        letStmt(TM, add(var(First), imod(var(PID), var(Size))),
                                letStmt(TN, idiv(imod(var(PID), PerGroup), var(Size)), Launch,
                                        Line),
                                Line),
                        Line),
                Line),
        Line);
  } else {
    Launch = letStmt(TM, idiv(var(PID), ColsT),
                     letStmt(TN, imod(var(PID), ColsT), Launch, Line), Line);
  }
  Launch = bindFlatIndex(N.Batch, var(BZ), Launch);
  bool TransA = !Sides[0].Op->KFastest, TransB = !Sides[1].Op->KFastest;
  std::string Note =
      "[tile-mma] tensor cores (mma.sync m16n8k16, " + dtypeName(Sides[0].Op->Type).str() +
      " in, f32 accumulators): block tile " + std::to_string(S.BlockM) + "x" +
      std::to_string(S.BlockN) + ", " + std::to_string(S.threads() / 32) + " warps of " +
      std::to_string(S.WarpM) + "x" + std::to_string(S.WarpN) + " (" +
      std::to_string(S.WarpM / 16) + "x" + std::to_string(S.WarpN / 8) +
      " mma tiles each), k tile " + std::to_string(S.TileK) +
      (S.Stages > 1 ? " through " + std::to_string(S.Stages) +
                          " shared stages filled by cp.async (" + std::to_string(S.Stages - 1) +
                          " k tiles in flight)"
                    : " copied synchronously into one shared stage") +
      (S.LdMatrix ? "; fragments by ldmatrix" +
                        std::string(TransA || TransB ? std::string(" (.trans for ") +
                                                           (TransA ? "A" : "") +
                                                           (TransA && TransB ? " and " : "") +
                                                           (TransB ? "B" : "") +
                                                           ": the contiguous index is not k)"
                                                     : "")
                  : "; fragments by one shared load per element") +
      (S.Grouped ? "; output tiles in groups of 8 tile rows, for L2 reuse" : "");
  remark(PassName, Line,
         "took it: tensor cores, block tile " + std::to_string(S.BlockM) + "x" +
             std::to_string(S.BlockN) + ", warp tile " + std::to_string(S.WarpM) + "x" +
             std::to_string(S.WarpN) + ", k tile " + std::to_string(S.TileK) + ", " +
             std::to_string(S.Stages) + " stages");

  // 11. The GPU loops: threads, block.x over the output tiles, block.z over
  //     the flattened batch loops.
  // The index arithmetic as built has "+ 0" and "0 * 16" of the unrolled
  // k steps: folded here, so the IR after this pass reads as it runs.
  Launch = simplifyStmt(block({note(Note, Line), Launch}));
  Launch = forLoop(TX, c(0), c(S.threads()), ForKind::ThreadX, Launch, Line);
  Launch = forLoop(PID, c(0), mul(RowsT, ColsT), ForKind::BlockX, Launch, Line);
  if (!N.Batch.empty())
    Launch = forLoop(BZ, c(0), flatExtent(N.Batch), ForKind::BlockZ, Launch, Line);
  return Launch;
}

} // namespace

void tileMma(Func &F) {
  MmaTiler T(F);
  launchNests(F, LaunchClass::Contraction,
              [&](const Stmt &S, std::vector<Knob> &Knobs) { return T.tile(S, Knobs); });
}

} // namespace tdsl
