//===- ContractionSplitK.cpp - A contraction's k loop over several blocks -===//
#include "passes/ContractionSplitK.h"
#include "ir/Simplify.h"

namespace tdsl {

using namespace ir;

namespace {

Expr c(int64_t V) { return intImm(V); }
Expr minE(Expr A, Expr B) { return binary(BinaryOp::Min, std::move(A), std::move(B)); }
Expr ceilBy(const Expr &A, const Expr &B) { return idiv(add(A, sub(B, c(1))), B); }

Expr outputTiles(const ContractionNest &N, int64_t BlockM, int64_t BlockN) {
  Expr T = mul(ceilDiv(N.Row->Extent, BlockM), ceilDiv(N.Col->Extent, BlockN));
  return N.Batch.empty() ? T : mul(T, flatExtent(N.Batch));
}

/// The splits per output tile at sizes where the split runs, aiming at
/// Target blocks.
Expr splitCount(const Expr &Tiles, const Expr &KTiles, int64_t Target) {
  return minE(minE(c(SplitKMaxBlocks), idiv(KTiles, c(SplitKMinKTiles))), ceilBy(c(Target), Tiles));
}

} // namespace

Expr ContractionSplitK::when(const ContractionNest &N, int64_t BlockM, int64_t BlockN,
                             int64_t TileK, bool ComputeBound, int64_t Scale) {
  Expr Tiles = outputTiles(N, BlockM, BlockN), KTiles = kTiles(N, TileK);
  const int64_t Target = SplitKTargetBlocks * Scale;
  // The partials' bytes, written and read as 4-byte values, against an
  // eighth of the operands' (each read once; the batch counts on both sides
  // alike), weighed by how far the tiles fall short of the target: fewer
  // tiles gain more from a split, so they may spend more on partials.
  // K counts every reduced index (a convolution's c, r and s).
  const Expr &M = N.Row->Extent, &Cols = N.Col->Extent;
  Expr K = reducedLength(N);
  Expr Operands = c(0);
  for (const ContractionOperand &O : N.Operands)
    Operands = add(Operands, mul(c(dtypeBytes(O.Type)), mul(K, O.RowSide ? M : Cols)));
  Expr Parts = mul(c(8 * static_cast<int64_t>(N.Accs.size())),
                   mul(splitCount(Tiles, KTiles, Target), mul(M, Cols)));
  Expr Cheap = le(mul(Parts, mul(c(8), Tiles)), mul(Operands, sub(c(Target), Tiles)));
  // Bound by FMAs: the partials' bytes in FLOPs against those the idle
  // SMs would add (per batch on both sides, as above).
  if (ComputeBound)
    Cheap = le(mul(Parts, c(SplitKFlopsPerByte * Target)),
               mul(mul(c(2), mul(mul(M, Cols), K)), sub(c(Target), Tiles)));
  Expr W =
      land(land(lt(Tiles, c(SplitKMaxTiles * Scale)), le(c(2 * SplitKMinKTiles), KTiles)), Cheap);
  W = simplifyExpr(W);
  std::optional<int64_t> Known = asConstInt(W);
  return Known && !*Known ? nullptr : W;
}

std::string ContractionSplitK::why(int64_t BlockM, int64_t BlockN, bool ComputeBound,
                                   int64_t Scale) {
  return "where the sizes give fewer than " + std::to_string(SplitKMaxTiles * Scale) +
         " output tiles of " + std::to_string(BlockM) + "x" + std::to_string(BlockN) + " and " +
         std::to_string(2 * SplitKMinKTiles) + " k tiles or more, and the partials cost little " +
         "beside the " + (ComputeBound ? "FLOPs" : "operands") +
         ", the k loop split over blocks: a launch of partials, then a launch that adds them";
}

ContractionSplitK::ContractionSplitK(const ContractionNest &N, int64_t BlockM, int64_t BlockN,
                                     int64_t TileK, Expr When, NameTable &Names, int64_t Scale)
    : N(N), When(std::move(When)) {
  KTiles = kTiles(N, TileK);
  // Sizes are at least 1 (the launcher checks), so the tiles are too.
  Count =
      simplifyExpr(splitCount(outputTiles(N, BlockM, BlockN), KTiles, SplitKTargetBlocks * Scale));
  std::vector<Expr> Shape{this->When ? select(this->When, Count, c(0)) : Count};
  if (!N.Batch.empty())
    Shape.push_back(flatExtent(N.Batch));
  Shape.push_back(N.Row->Extent);
  Shape.push_back(N.Col->Extent);
  for (const ContractionAcc &A : N.Accs)
    Parts.push_back(tempBuffer(Names.fresh(A.Name + "_part"), A.Type, Shape, MemScope::Global));
}

Expr ContractionSplitK::tilesPerSplit() const { return ceilBy(KTiles, Count); }

Expr ContractionSplitK::tilesFrom(const Expr &First, const Expr &PerSplit) const {
  return minE(PerSplit, sub(KTiles, First));
}

std::vector<Expr> ContractionSplitK::at(const Expr &Split, const Expr &BZ, const Expr &GM,
                                        const Expr &GN) const {
  if (N.Batch.empty())
    return {Split, GM, GN};
  return {Split, BZ, GM, GN};
}

Stmt ContractionSplitK::storePartials(const Expr &Split, const Expr &BZ, const Expr &GM,
                                      const Expr &GN, const std::vector<Expr> &AccIdx,
                                      unsigned Line) const {
  std::vector<Stmt> Out;
  for (size_t Q = 0; Q < N.Accs.size(); ++Q)
    Out.push_back(store(Parts[Q].Name, at(Split, BZ, GM, GN),
                        load(N.Accs[Q].Type, N.Accs[Q].Name, AccIdx), Line));
  return Out.size() == 1 ? Out[0] : block(std::move(Out), Line);
}

//   for pid block.x { for tx thread.x { let q = pid * 256 + tx; if (q < B M N) {
//     let n, m, bz (q's digits); let the nest's batch, row and column vars {
//     alloc acc: f32[1] register { init; for s in 0..Count { acc[0] += P[s, bz, m, n] }
//       epilogue } } } } }
Stmt ContractionSplitK::sum(NameTable &Names, const char *Pass, unsigned Line) const {
  constexpr int64_t Threads = 256;
  std::string Pid = Names.fresh("pid"), TX = Names.fresh("tx"), Q = Names.fresh("q"),
              GM = Names.fresh("gm"), GN = Names.fresh("gn"), BZ = Names.fresh("bz"),
              S = Names.fresh("s");
  std::vector<Stmt> Body(N.Init.begin(), N.Init.end());
  std::vector<Stmt> Adds;
  for (size_t I = 0; I < N.Accs.size(); ++I) {
    const ContractionAcc &A = N.Accs[I];
    Adds.push_back(store(A.Name, {c(0)},
                         add(load(A.Type, A.Name, {c(0)}),
                             load(A.Type, Parts[I].Name, at(var(S), var(BZ), var(GM), var(GN)))),
                         Line));
  }
  Body.push_back(forLoop(S, c(0), Count, ForKind::Serial,
                         Adds.size() == 1 ? Adds[0] : block(std::move(Adds), Line), Line));
  Body.insert(Body.end(), N.Epilogue.begin(), N.Epilogue.end());
  Stmt Out = block(std::move(Body), Line);
  for (auto It = N.Accs.rbegin(); It != N.Accs.rend(); ++It)
    Out = allocate(tempBuffer(It->Name, It->Type, {c(1)}, MemScope::Register), Out, Line);
  Out = letStmt(N.Row->Var, fromMin(N.Row->Min, var(GM)),
                letStmt(N.Col->Var, fromMin(N.Col->Min, var(GN)), Out, Line), Line);
  Out = bindFlatIndex(N.Batch, var(BZ), Out);
  // q's digits: column fastest, then row, then the flat batch.
  const Expr &Cols = N.Col->Extent, &Rows = N.Row->Extent;
  Expr Rest = idiv(var(Q), Cols);
  Out = letStmt(GN, imod(var(Q), Cols),
                letStmt(GM, N.Batch.empty() ? Rest : imod(Rest, Rows),
                        N.Batch.empty() ? Out : letStmt(BZ, idiv(Rest, Rows), Out, Line), Line),
                Line);
  Expr Total = mul(Rows, Cols);
  if (!N.Batch.empty())
    Total = mul(flatExtent(N.Batch), Total);
  Out = letStmt(Q, add(mul(var(Pid), c(Threads)), var(TX)),
                ifThen(lt(var(Q), Total), Out, nullptr, Line), Line);
  Out = block({note("[" + std::string(Pass) +
                        "] the split's second launch: a thread per output adds its partials in "
                        "order to the init, then runs the epilogue",
                    Line),
               Out},
              Line);
  Out = forLoop(TX, c(0), c(Threads), ForKind::ThreadX, Out, Line);
  return forLoop(Pid, c(0), simplifyExpr(gridWhen(ceilDiv(Total, Threads), When, true)),
                 ForKind::BlockX, Out, Line);
}

} // namespace tdsl
