//===- MmaEpilogue.cpp - A tensor-core block's outputs through shared memory //
#include "passes/MmaEpilogue.h"
#include "passes/MmaStaging.h"

#include "llvm/ADT/STLExtras.h"

namespace tdsl {

using namespace ir;

namespace {

Expr c(int64_t V) { return intImm(V); }

/// The stores and the loads of an epilogue.
class EpilogueScan : public IRVisitor {
public:
  std::vector<const StoreNode *> Stores;
  std::vector<const LoadNode *> Loads;
  bool Other = false; ///< an if, allocation, copy or barrier: left alone

protected:
  void visitStore(const StoreNode &N) override {
    Stores.push_back(&N);
    IRVisitor::visitStore(N);
  }
  void visitLoad(const LoadNode &N) override {
    Loads.push_back(&N);
    IRVisitor::visitLoad(N);
  }
  // A store under an if may leave its element alone, which the copy of
  // the whole tile would not.
  void visitIf(const IfNode &) override { Other = true; }
  void visitAllocate(const AllocateNode &) override { Other = true; }
  void visitBarrier(const BarrierNode &) override { Other = true; }
  void visitAsyncCopy(const AsyncCopyNode &) override { Other = true; }
};

/// Whether Indices are Want, in order.
bool atIndex(const std::vector<Expr> &Indices, const std::vector<Expr> &Want) {
  if (Indices.size() != Want.size())
    return false;
  for (size_t D = 0; D < Want.size(); ++D)
    if (!structurallyEqual(Indices[D], Want[D]))
      return false;
  return true;
}

/// Stores to the staged outputs go to their tiles at (R, C), and reads of
/// the staged inputs at the outputs' index come from theirs.
class ToTiles : public IRMutator {
public:
  ToTiles(const llvm::StringMap<std::string> &Tiles, const llvm::StringMap<std::string> &InTiles,
          std::vector<Expr> Want, Expr R, Expr C)
      : Tiles(Tiles), InTiles(InTiles), Want(std::move(Want)), R(std::move(R)), C(std::move(C)) {}

protected:
  Stmt visitStore(const StoreNode &N, const Stmt &S) override {
    auto It = Tiles.find(N.Buffer);
    if (It == Tiles.end())
      return IRMutator::visitStore(N, S);
    return store(It->second, {R, C}, mutate(N.Value), N.SrcLine);
  }
  Expr visitLoad(const LoadNode &N, const Expr &E) override {
    auto It = InTiles.find(N.Buffer);
    if (It == InTiles.end() || !atIndex(N.Indices, Want))
      return IRMutator::visitLoad(N, E);
    return load(N.Type, It->second, {R, C});
  }

private:
  const llvm::StringMap<std::string> &Tiles, &InTiles;
  const std::vector<Expr> Want;
  Expr R, C;
};

} // namespace

bool MmaEpilogue::plan(NameTable &Names, int64_t TileBytes, int64_t Resident) {
  if (S.StageEpilogue == false) {
    Why = "stage_epilogue = off";
    return false;
  }
  EpilogueScan Scan;
  for (const Stmt &St : N.Epilogue)
    Scan.visit(St);
  std::vector<StagedTile> Found;
  if (Scan.Other || Scan.Stores.empty()) {
    Why = "the epilogue is not unconditional elementwise stores";
    return false;
  }
  const std::vector<Expr> Want = outputIndex();
  for (const StoreNode *St : Scan.Stores) {
    const Buffer *T = findTensor(F, St->Buffer);
    if (!T || !atIndex(St->Indices, Want)) {
      Why = "'" + St->Buffer + "' is not stored at the contraction's own index";
      return false;
    }
    if (llvm::any_of(Found, [&](const StagedTile &O) { return O.Tensor == St->Buffer; }) ||
        llvm::any_of(Scan.Loads, [&](const LoadNode *L) { return L->Buffer == St->Buffer; })) {
      Why = "'" + St->Buffer + "' is stored twice or read back";
      return false;
    }
    Found.push_back({St->Buffer, "", T->Type, St->Indices, St->SrcLine});
  }
  // The tensors read at that index, each once.
  std::vector<StagedTile> Read;
  for (const LoadNode *L : Scan.Loads) {
    const Buffer *T = findTensor(F, L->Buffer);
    if (T && atIndex(L->Indices, Want) &&
        llvm::none_of(Read, [&](const StagedTile &O) { return O.Tensor == L->Buffer; }))
      Read.push_back({L->Buffer, "", T->Type, L->Indices, Found.front().Line});
  }
  int64_t Need = 0, ReadNeed = 0;
  for (const StagedTile &O : Found)
    Need += tileBytes(S, O);
  for (const StagedTile &O : Read)
    ReadNeed += tileBytes(S, O);
  int64_t Allowed = std::max(TileBytes, F.MaxSharedBytes / Resident);
  if (Need > Allowed) {
    Why = "the output tiles would need " + std::to_string(Need) + " bytes of shared memory (" +
          std::to_string(Allowed) + " allowed)";
    return false;
  }
  // Inputs that do not fit beside the outputs are read per element.
  if (Need + ReadNeed > Allowed)
    Read.clear();
  Outs = std::move(Found);
  Ins = std::move(Read);
  for (StagedTile &O : Outs)
    O.Tile = Names.fresh(O.Tensor + "_out");
  for (StagedTile &O : Ins)
    O.Tile = Names.fresh(O.Tensor + "_in");
  return true;
}

std::vector<Expr> MmaEpilogue::outputIndex() const {
  if (!OwnIndex.empty())
    return OwnIndex;
  std::vector<Expr> Index;
  for (const ForNode *B : N.Batch)
    Index.push_back(var(B->Var));
  Index.push_back(var(N.Row->Var));
  Index.push_back(var(N.Col->Var));
  return Index;
}

Stmt MmaEpilogue::toTiles(const Stmt &Epi, const Expr &R, const Expr &C) const {
  llvm::StringMap<std::string> Tiles, InTiles;
  for (const StagedTile &O : Outs)
    Tiles[O.Tensor] = O.Tile;
  for (const StagedTile &O : Ins)
    InTiles[O.Tensor] = O.Tile;
  return ToTiles(Tiles, InTiles, outputIndex(), R, C).mutate(Epi);
}

bool MmaEpilogue::tilesOnly(const Stmt &Epi) const {
  EpilogueScan Scan;
  Scan.visit(Epi);
  return !Scan.Other &&
         llvm::none_of(Scan.Loads,
                       [&](const LoadNode *L) {
                         return !L->Indices.empty() && findTensor(F, L->Buffer);
                       }) &&
         llvm::none_of(Scan.Stores, [&](const StoreNode *S) { return findTensor(F, S->Buffer); });
}

/// The block's threads copy tile O.Tile to its tensor, or the tensor to
/// the tile (In): in 16-byte runs of a row where the run-time test proves
/// them aligned (an input's by cp.async, zeros outside the tensor), else
/// an element a thread. Work item q of Total: row q / PerRow, run or
/// element q % PerRow.
Stmt MmaEpilogue::copy(NameTable &Names, const StagedTile &O, bool In, const std::string &TX,
                       const Expr &BlockRow, const Expr &BlockCol) const {
  const int64_t Threads = S.threads();
  const unsigned Line = O.Line;
  auto Copy = [&](int64_t Per) {
    std::string Cc = Names.fresh("c"), Q = Names.fresh("q"), R = Names.fresh("r"),
                Col = Names.fresh("col");
    int64_t PerRow = S.BlockN / Per, Total = S.BlockM * PerRow;
    Expr GM = add(BlockRow, var(R)), GN = add(BlockCol, var(Col));
    Expr Inside = land(lt(GM, N.Row->Extent), lt(GN, N.Col->Extent));
    // The element at (GM, GN + E): m and n (or the merged index m stands
    // for) bound in the tensor's subscripts.
    auto ElementAt = [&](const Expr &ColAt) {
      std::vector<Expr> Idx;
      for (const Expr &I : O.Indices)
        Idx.push_back(substitute(substitute(I, N.Row->Var, fromMin(N.Row->Min, GM)), N.Col->Var,
                                 fromMin(N.Col->Min, ColAt)));
      return Idx;
    };
    std::vector<Expr> Idx;
    Stmt Body;
    if (In) {
      Idx = ElementAt(GN);
      std::vector<Expr> At = {var(R), var(Col)};
      Body = Per > 1 ? std::make_shared<AsyncCopyNode>(O.Tile, At, O.Tensor, Idx, unsigned(Per),
                                                       Line, Inside)
                     : store(O.Tile, At,
                             select(Inside, load(O.Type, O.Tensor, Idx), zeroOf(O.Type)), Line);
    } else {
      std::string V = Names.fresh("v");
      Expr At = Per > 1 ? add(var(Col), var(V)) : var(Col);
      Idx = ElementAt(Per > 1 ? add(GN, var(V)) : GN);
      Stmt Move = store(O.Tensor, Idx, load(O.Type, O.Tile, {var(R), At}), Line);
      if (Per > 1)
        Move = forLoop(V, c(0), c(Per), ForKind::Serial, Move, Line);
      Body = ifThen(Inside, Move, nullptr, Line);
    }
    Body = letStmt(R, idiv(var(Q), c(PerRow)),
                   letStmt(Col,
                           Per > 1 ? mul(imod(var(Q), c(PerRow)), c(Per)) : imod(var(Q), c(PerRow)),
                           Body, Line),
                   Line);
    // An input's element loads, more than the unroll pass unrolls, go as
    // a rolled loop over unrolled runs of 8, so that each thread has 8
    // loads in flight rather than one.
    int64_t Rounds = (Total + Threads - 1) / Threads;
    int64_t RunOf = In && Per == 1 && Rounds > 16 ? 8 : Rounds;
    int64_t Outer = (Rounds + RunOf - 1) / RunOf;
    if (Total % Threads || Outer * RunOf != Rounds)
      Body = ifThen(lt(var(Q), c(Total)), Body, nullptr, Line);
    Stmt Loop;
    if (Outer == 1) {
      Body = letStmt(Q, add(var(TX), mul(var(Cc), c(Threads))), Body, Line);
      Loop = unrolled(Cc, Rounds, Body, Line);
    } else {
      std::string Co = Names.fresh("co");
      Body = letStmt(Q, add(var(TX), mul(add(mul(var(Co), c(RunOf)), var(Cc)), c(Threads))), Body,
                     Line);
      Loop = std::make_shared<ForNode>(Co, c(0), c(Outer), ForKind::Serial, 1,
                                       unrolled(Cc, RunOf, Body, Line), Line);
    }
    if (In && Per > 1)
      Loop = block({Loop, std::make_shared<AsyncCommitNode>(Line)}, Line);
    return Loop;
  };
  const int64_t Run = 16 / dtypeBytes(O.Type);
  std::optional<Expr> Test = Run > 1 && S.BlockN % Run == 0 ? runTest(F, N.Col->Extent, {O.Tensor},
                                                                      Run, [](DType) { return 16; })
                                                            : std::nullopt;
  if (!Test)
    return Copy(1);
  // Both forms build fresh names: in this order, so that they are fixed.
  Stmt Wide = Copy(Run);
  return ifThen(*Test, Wide, Copy(1), Line);
}

Stmt MmaEpilogue::build(NameTable &Names, Stmt Values, Stmt PerElement, const std::string &TX,
                        const Expr &BlockRow, const Expr &BlockCol, unsigned Line) const {
  std::vector<Stmt> Body = {ir::note(note(), Line)};
  // The staged inputs' copies, after the barrier that ends the k loop's
  // reads of the bytes they take, retire, and a barrier makes them
  // visible; the values read them. Without inputs the values touch no
  // shared memory and go before the tiles, so that a warp computes them
  // while others finish their k loop.
  Body.push_back(barrier(Line));
  if (!Ins.empty()) {
    for (const StagedTile &O : Ins)
      Body.push_back(copy(Names, O, true, TX, BlockRow, BlockCol));
    Body.push_back(std::make_shared<AsyncWaitNode>(0u, Line));
    Body.push_back(barrier(Line));
    if (Values)
      llvm::append_range(Body, flattenBlocks(Values));
  }
  // The second barrier opens the copies: it carries their line.
  Body.push_back(std::move(PerElement));
  Body.push_back(barrier(Outs.front().Line));
  for (const StagedTile &O : Outs)
    Body.push_back(copy(Names, O, false, TX, BlockRow, BlockCol));
  Stmt Out = block(std::move(Body));
  std::vector<const StagedTile *> Tiles;
  for (const StagedTile &O : Outs)
    Tiles.push_back(&O);
  for (const StagedTile &O : Ins)
    Tiles.push_back(&O);
  for (auto It = Tiles.rbegin(); It != Tiles.rend(); ++It) {
    Out = allocate(tileBuffer(**It), Out, Line);
  }
  return Values && Ins.empty() ? prepended(Values, Out, Line) : Out;
}

Buffer MmaEpilogue::tileBuffer(const StagedTile &O) const {
  Buffer T = tempBuffer(O.Tile, O.Type, {c(S.BlockM), c(S.BlockN)}, MemScope::Shared);
  T.Padding = {0, pad(O.Type)};
  T.ExtentNames = {"block_m", "block_n"};
  return T;
}

std::string MmaEpilogue::note() const {
  std::string Names;
  for (const StagedTile &O : Outs)
    Names += (Names.empty() ? "" : ", ") + O.Tensor;
  std::string Text = "[tile-mma] the outputs (" + Names + ") go through shared tiles of " +
                     std::to_string(S.BlockM) + "x" + std::to_string(S.BlockN) +
                     " (rows padded by 16 bytes), over the operand tiles' bytes, then to memory a "
                     "row at a time: 16 bytes a thread where the tensor and its rows are 16-byte "
                     "aligned, else an element a thread";
  if (Ins.empty())
    return Text;
  std::string Read;
  for (const StagedTile &O : Ins)
    Read += (Read.empty() ? "" : ", ") + O.Tensor;
  return Text + "; the tensors read at the outputs' index (" + Read +
         ") come in to tiles of their own the same way, by 16-byte cp.async (zeros outside the "
         "tensor) where aligned, and each element reads its tile";
}

} // namespace tdsl
