//===- MmaKLoop.cpp - A tensor-core block's k loop -----------------------===//
#include "passes/MmaKLoop.h"
#include "passes/MmaStaging.h"

#include <algorithm>

namespace tdsl {

using namespace ir;

namespace {

Expr c(int64_t V) { return intImm(V); }

} // namespace

MmaKLoop::MmaKLoop(NameTable &Names, const MmaSchedule &S, const MmaContraction &M,
                   std::string TX, std::string Lane, std::string KT, Expr KFirst, unsigned Line)
    : Names(Names), S(S), M(M), TX(std::move(TX)), Lane(std::move(Lane)), KT(std::move(KT)),
      KFirst(std::move(KFirst)), Line(Line), Steps(S.TileK / mmaShapeK(M.Shape)) {}

Stmt MmaKLoop::loadAll(int64_t Buf, const Expr &Stage, const Expr &KK) {
  std::vector<Stmt> Out;
  for (const MmaOperandStage &O : M.Sides)
    Out.push_back(O.loadFragments(Names, S, Lane, c(Buf), Stage, KK, Wide, Line));
  return block(std::move(Out));
}

Stmt MmaKLoop::copyAll(const Expr &KTile, const Expr &Stage, bool Wide) {
  std::vector<Stmt> Out;
  Expr At = KFirst ? add(KFirst, KTile) : KTile;
  // A reduction over a nest: the tile's place along k, its indices of the
  // other reduced loops (passes/ContractionMatch.h).
  for (const MmaOperandStage &O : M.Sides)
    Out.push_back(O.copy(Names, S, TX, kTileWithin(M.N, S.TileK, At), Stage, Wide, Line));
  return atKTile(M.N, S.TileK, At, block(std::move(Out)));
}

Stmt MmaKLoop::compute(const Expr &Stage) {
  // More than two k steps (the copy engine's k tiles, in the guarded
  // version) stay a loop: unrolled, ptxas keeps every step's addresses
  // live beside the accumulators and spills (sibling products, sm_90).
  if (Steps > 2) {
    std::string K = Names.fresh("kk");
    return std::make_shared<ForNode>(K, c(0), c(Steps), ForKind::Serial, 1,
                                     block({loadAll(0, Stage, var(K)), mmas(c(0))}), Line);
  }
  std::vector<Stmt> Out;
  for (int64_t K = 0; K < Steps; ++K) {
    Out.push_back(loadAll(0, Stage, c(K)));
    Out.push_back(mmas(c(0)));
  }
  return block(std::move(Out));
}

/// The warp's (WM / 16) x (WN / 8) mma tiles on fragment buffer Buf.
Stmt MmaKLoop::mmas(const Expr &Buf) {
  const ContractionNest &N = M.N;
  const std::vector<MmaOperandStage> &Sides = M.Sides;
  std::string I = Names.fresh("i"), J = Names.fresh("j");
  std::vector<Stmt> Mmas;
  for (size_t Q = 0; Q < N.Accs.size(); ++Q)
    Mmas.push_back(std::make_shared<MmaNode>(
        M.Shape, N.Accs[Q].Name, std::vector<Expr>{var(I), var(J), c(0)}, Sides[M.Products[Q].A].Frag,
        std::vector<Expr>{Buf, var(I), c(0)}, Sides[M.Products[Q].B].Frag,
        std::vector<Expr>{Buf, var(J), c(0)}, N.Accs[Q].Line));
  Stmt Mma = Mmas.size() == 1 ? Mmas[0] : block(std::move(Mmas));
  return unrolled(I, S.WarpM / 16, unrolled(J, S.WarpN / 8, Mma, Line), Line);
}

/// The k loop with Stages >= 2 and an even number of k steps per tile
/// when double-buffered (MmaSchedule::DoubleBuffer), software-pipelined at two levels. Tiles: the
/// first Stages - 1 k tiles are issued up front; step 0 of tile kt refills the stage tile kt - 1
/// used with tile kt + Stages - 1, and before the last step every thread
/// waits for tile kt + 1 (at most Stages - 2 younger groups in flight) and
/// passes a barrier, so every warp is done with tile kt - 1's stage before
/// anyone refills it. Fragments: two buffers, step s + 1's (the next
/// tile's first, after the last step) loaded before step s's mmas, so the
/// ldmatrix latency and the barrier hide behind mmas. One commit per tile
/// keeps the group count uniform.
Stmt MmaKLoop::pipelinedLoop(const Expr &Tiles) {
  const int64_t St = S.Stages;
  auto Commit = [&] { return std::make_shared<AsyncCommitNode>(Line); };
  auto Wait = [&](int64_t P) { return std::make_shared<AsyncWaitNode>(unsigned(P), Line); };
  std::vector<Stmt> Out;
  std::string Pro = Names.fresh("s");
  Out.push_back(
      unrolled(Pro, St - 1,
               block({ifThen(lt(var(Pro), Tiles), copyAll(var(Pro), var(Pro), Wide), nullptr, Line),
                      Commit()}),
               Line));
  Out.push_back(Wait(St - 2));
  Out.push_back(barrier(Line));
  Out.push_back(ifThen(lt(c(0), Tiles), loadAll(0, c(0), c(0)), nullptr, Line));
  std::string Cur = Names.fresh("stage"), Nxt = Names.fresh("next");
  Expr HasNext = lt(add(var(KT), c(1)), Tiles);
  std::vector<Stmt> Iter;
  for (int64_t K = 0; K < Steps; ++K) {
    if (K == Steps - 1) {
      Iter.push_back(Wait(St - 2));
      Iter.push_back(barrier(Line));
    }
    if (K + 1 < Steps)
      Iter.push_back(loadAll((K + 1) % 2, var(Cur), c(K + 1)));
    else
      Iter.push_back(ifThen(HasNext, loadAll(0, var(Nxt), c(0)), nullptr, Line));
    if (K == 0) {
      // Async copies go unguarded: past the last tile their zero-fill
      // tests fail, so they read nothing and fill a stage no one reads
      // again. Without the branch ptxas issues them among the mmas of
      // this step, which is faster on the H200 (bench/RESULTS.md). The
      // ring loop below keeps its branch: there it measured no faster.
      // A split's block keeps it too: past its last tile is the next
      // block's; and so does a reduction over a nest, whose tiles past the
      // last are past its outer loops' ends, where the zero-fill tests
      // along k pass.
      Expr Fill = add(var(KT), c(St - 1));
      Stmt Copy = copyAll(Fill, imod(Fill, c(St)), Wide);
      bool Unguarded = Wide && !KFirst && M.N.Outer.empty();
      Iter.push_back(Unguarded ? Copy : ifThen(lt(Fill, Tiles), Copy, nullptr, Line));
      Iter.push_back(Commit());
    }
    Iter.push_back(mmas(c(K % 2)));
  }
  Stmt Body =
      letStmt(Cur, imod(var(KT), c(St)),
              letStmt(Nxt, imod(add(var(KT), c(1)), c(St)), block(std::move(Iter)), Line), Line);
  Out.push_back(forLoop(KT, c(0), Tiles, ForKind::Serial, Body, Line));
  Out.push_back(Wait(0));
  return block(std::move(Out));
}

/// The double-buffered ring on the bulk tensor copy engine (sm_90). Thread
/// 0 fills a stage: the stage's bytes expected on Full[stage] (an arrival,
/// its count 1), then every operand's boxes, which complete that phase as
/// they land. Every thread waits for the phase before its first ldmatrix
/// of the stage. Each warp, once it has loaded its last fragments from a
/// stage (during the tile's next-to-last step), arrives on Freed[stage]
/// (its count the warps); thread 0 waits for that phase before it refills
/// the stage. So the copies need no block barrier in the loop: a warp
/// waits only for the data it reads, and only thread 0 for the other warps.
/// The k tile's parity of a phase is (tile / Stages) % 2.
Stmt MmaKLoop::buildEngine(const Expr &Tiles, const std::string &Full, const std::string &Freed) {
  const int64_t St = S.Stages;
  auto Op = [&](MbarrierOp O, const std::string &Bar, const Expr &I, Expr V = nullptr) {
    return std::make_shared<MbarrierNode>(O, Bar, I, std::move(V), Line);
  };
  auto Phase = [&](const Expr &Tile) { return imod(idiv(Tile, c(St)), c(2)); };
  Expr First = binary(BinaryOp::Eq, var(TX), c(0));
  int64_t Bytes = 0;
  for (const MmaOperandStage &O : M.Sides)
    Bytes += O.stageBytes();
  auto Fill = [&](const Expr &Tile, const Expr &Stage) {
    std::vector<Stmt> Out{Op(MbarrierOp::ExpectTx, Full, Stage, c(Bytes))};
    Expr At = KFirst ? add(KFirst, Tile) : Tile;
    for (const MmaOperandStage &O : M.Sides)
      Out.push_back(O.engineCopy(S, At, Stage, Full, Line));
    return block(std::move(Out));
  };
  std::vector<Stmt> Out;
  std::string I = Names.fresh("s");
  Out.push_back(ifThen(First,
                       unrolled(I, St,
                                block({Op(MbarrierOp::Init, Full, var(I), c(1)),
                                       Op(MbarrierOp::Init, Freed, var(I), c(S.threads() / 32))}),
                                Line),
                       nullptr, Line));
  Out.push_back(barrier(Line));
  std::string Pro = Names.fresh("s");
  Out.push_back(unrolled(
      Pro, St - 1,
      ifThen(land(First, lt(var(Pro), Tiles)), Fill(var(Pro), var(Pro)), nullptr, Line), Line));
  Out.push_back(ifThen(lt(c(0), Tiles),
                       block({Op(MbarrierOp::Wait, Full, c(0), c(0)), loadAll(0, c(0), c(0))}),
                       nullptr, Line));
  std::string Cur = Names.fresh("stage"), Nxt = Names.fresh("next");
  Expr Next = add(var(KT), c(1));
  std::vector<Stmt> Iter;
  for (int64_t K = 0; K < Steps; ++K) {
    if (K + 1 < Steps) {
      Iter.push_back(loadAll((K + 1) % 2, var(Cur), c(K + 1)));
      if (K + 2 == Steps)
        Iter.push_back(Op(MbarrierOp::ArriveWarp, Freed, var(Cur)));
    } else {
      Iter.push_back(ifThen(lt(Next, Tiles),
                            block({Op(MbarrierOp::Wait, Full, var(Nxt), Phase(Next)),
                                   loadAll(0, var(Nxt), c(0))}),
                            nullptr, Line));
    }
    if (K == 0) {
      // Refill the stage of tile kt - 1 with tile kt + Stages - 1, once
      // every warp has released it.
      Expr Fill_ = add(var(KT), c(St - 1)), Prev = sub(var(KT), c(1));
      Iter.push_back(ifThen(
          land(First, lt(Fill_, Tiles)),
          block({ifThen(lt(c(0), var(KT)),
                        Op(MbarrierOp::Wait, Freed, imod(Prev, c(St)), Phase(Prev)), nullptr,
                        Line),
                 Fill(Fill_, imod(Fill_, c(St)))}),
          nullptr, Line));
    }
    Iter.push_back(mmas(c(K % 2)));
  }
  Stmt Body = letStmt(Cur, imod(var(KT), c(St)),
                      letStmt(Nxt, imod(Next, c(St)), block(std::move(Iter)), Line), Line);
  Out.push_back(forLoop(KT, c(0), Tiles, ForKind::Serial, Body, Line));
  return block(std::move(Out));
}

std::string MmaKLoop::engineRefusal(const Func &F, const MmaSchedule &S, const MmaContraction &M) {
  if (F.MinSM < 90)
    return "the copy engine needs sm_90 (the oldest --arch is sm_" + std::to_string(F.MinSM) + ")";
  if (!S.CopyEngine)
    return "copy_engine = off";
  if (!M.N.Outer.empty())
    return "the reduction runs over a nest of loops (the engine's boxes walk one k)";
  // tf32 and i8 tiles keep cp.async: the engine's form was measured on
  // 16-bit operands only (bench/RESULTS.md).
  if (dtypeBytes(M.Sides[0].Op->Type) != 2)
    return "the copy engine's k loop takes 16-bit operands";
  int64_t Steps = S.TileK / mmaShapeK(M.Shape);
  if (S.Stages < 2 || Steps % 2 || S.DoubleBuffer == false)
    return "the copy engine's k loop is a ring (2 stages or more) of double-buffered fragments "
           "(an even number of k steps)";
  for (const MmaOperandStage &O : M.Sides) {
    if (!O.usesLdMatrix(S))
      return "the copy engine's k loop loads fragments by ldmatrix";
    if (std::string Why = O.engineRefusal(F, S); !Why.empty())
      return Why;
  }
  return "";
}

std::string MmaKLoop::engineSchedule(const Func &F, const MmaContraction &M, MmaSchedule &S) {
  // The form that measured fastest on the H200 (bench/RESULTS.md).
  MmaSchedule E = S;
  if (!findKnob(F, "k_tile"))
    E.TileK = 128 / dtypeBytes(M.Sides[0].Op->Type);
  if (!findKnob(F, "stages"))
    E.Stages = 3;
  if (std::string Why = engineRefusal(F, E, M); !Why.empty())
    return Why;
  while (mmaTileBytes(M, E) > F.MaxSharedBytes && E.Stages > 2 && !findKnob(F, "stages"))
    --E.Stages;
  if (mmaTileBytes(M, E) > F.MaxSharedBytes)
    return "the copy engine's tiles need " + std::to_string(mmaTileBytes(M, E)) + " bytes";
  S = E;
  return "";
}

bool MmaKLoop::pipelined(bool Wide) const {
  // Unpinned, only the async-copy version double-buffers (MmaSchedule),
  // and only where every operand's fragments come by ldmatrix and there is
  // no batch: doubled per-element fragment loads spill (tf32, ptxas -v at
  // sm_90), and the batched GEMM measured slower (bench/RESULTS.md).
  bool AutoTwice = M.N.Batch.empty() &&
                   std::all_of(M.Sides.begin(), M.Sides.end(),
                               [&](const MmaOperandStage &O) { return O.usesLdMatrix(S); });
  return S.Stages >= 2 && Steps % 2 == 0 && S.DoubleBuffer.value_or(Wide && AutoTwice);
}

Stmt MmaKLoop::build(const Expr &Tiles, bool Wide) {
  this->Wide = Wide;
  if (pipelined(Wide))
    return pipelinedLoop(Tiles);
  auto Commit = [&] { return std::make_shared<AsyncCommitNode>(Line); };
  auto Wait = [&](unsigned Pending) { return std::make_shared<AsyncWaitNode>(Pending, Line); };
  if (S.Stages == 1) {
    // Synchronous copies into one stage, a barrier on each side.
    return forLoop(
        KT, c(0), Tiles, ForKind::Serial,
        block({copyAll(var(KT), c(0), false), barrier(Line), compute(c(0)), barrier(Line)}),
        Line);
  }
  // The ring of stages, fragments loaded step by step: wait for tile kt,
  // a barrier (every warp is done with tile kt - 1's stage), refill that
  // stage with tile kt + Stages - 1, compute tile kt.
  std::string St = Names.fresh("s");
  Expr Next = add(var(KT), c(S.Stages - 1));
  return block(
      {unrolled(St, S.Stages - 1,
                block({ifThen(lt(var(St), Tiles), copyAll(var(St), var(St), Wide), nullptr, Line),
                       Commit()}),
                Line),
       forLoop(KT, c(0), Tiles, ForKind::Serial,
               block({Wait(static_cast<unsigned>(S.Stages - 2)), barrier(Line),
                      ifThen(lt(Next, Tiles), copyAll(Next, imod(Next, c(S.Stages)), Wide),
                             nullptr, Line),
                      Commit(), compute(imod(var(KT), c(S.Stages)))}),
               Line),
       Wait(0)});
}

} // namespace tdsl
