//===- Fuse.cpp - Which statements of a kernel graph share a launch -------===//
#include "graph/Fuse.h"
#include "graph/Epilogue.h"
#include "graph/MapGroup.h"
#include "graph/Prologue.h"
#include "graph/RowChain.h"
#include "graph/Siblings.h"
#include "passes/PassUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

namespace tdsl::graph {

FusionOptions fusionOptions(const ast::Kernel &K, const std::vector<ir::Knob> &CommandLine) {
  FusionOptions O;
  auto Apply = [&](const std::string &Key, const std::string &Word) {
    if (Word != "on" && Word != "off")
      return;
    if (Key == "fuse")
      O.Enabled = Word == "on";
    else if (Key == "fuse_inline")
      O.Inline = Word == "on";
    else if (Key == "fuse_epilogue")
      O.Epilogue = Word == "on";
    else if (Key == "fuse_factor")
      O.Factor = Word == "on";
    else if (Key == "fuse_prologue")
      O.Prologue = Word == "on";
    else if (Key == "fuse_siblings")
      O.Siblings = Word == "on";
    else if (Key == "fuse_rows")
      O.Rows = Word == "on";
    else if (Key == "fuse_beside")
      O.Beside = Word == "on";
  };
  if (K.Sched)
    for (const ast::ScheduleEntry &E : K.Sched->Entries)
      Apply(E.Key, E.Word);
  for (const ir::Knob &Kn : CommandLine)
    Apply(Kn.Key, Kn.Word);
  return O;
}

namespace {

/// Rank of the integer matrix Rows (Gaussian elimination in doubles: the
/// coefficients are small integers).
unsigned rank(std::vector<std::vector<double>> Rows) {
  unsigned R = 0;
  size_t Cols = Rows.empty() ? 0 : Rows[0].size();
  for (size_t C = 0; C < Cols && R < Rows.size(); ++C) {
    size_t Pivot = R;
    while (Pivot < Rows.size() && Rows[Pivot][C] == 0)
      ++Pivot;
    if (Pivot == Rows.size())
      continue;
    std::swap(Rows[R], Rows[Pivot]);
    for (size_t I = 0; I < Rows.size(); ++I)
      if (I != R && Rows[I][C] != 0) {
        double F = Rows[I][C] / Rows[R][C];
        for (size_t J = C; J < Cols; ++J)
          Rows[I][J] -= F * Rows[R][J];
      }
    ++R;
  }
  return R;
}

/// "" if read R of node C takes one value per point of C's domain (output
/// and reduced indices), else why not.
std::string manyReads(const Node &C, const Read &R) {
  std::vector<std::string> Space = C.Domain;
  llvm::append_range(Space, C.Reduced);
  for (const std::string &I : Space)
    if (llvm::none_of(R.Map, [&](const ast::Affine &A) { return A.Coeffs.count(I) > 0; }))
      return "reads each value once for every '" + I + "'";
  std::vector<std::vector<double>> Rows;
  for (const ast::Affine &A : R.Map) {
    std::vector<double> Row;
    for (const std::string &I : Space) {
      auto It = A.Coeffs.find(I);
      Row.push_back(It == A.Coeffs.end() ? 0.0 : static_cast<double>(It->second));
    }
    Rows.push_back(std::move(Row));
  }
  if (rank(Rows) < Space.size())
    return "reads some values more than once (its subscripts are not one to one)";
  return "";
}

/// Whether E is cheap to compute again per read: loads, literals, sums,
/// products, comparisons, selects, casts, min, max, abs and relu; no
/// division (a sequence of instructions in f32) and no other function.
bool cheap(const ast::Expr &E) {
  using namespace ast;
  switch (E.Kind) {
  case ExprKind::IntLit:
  case ExprKind::FloatLit:
  case ExprKind::Name:
  case ExprKind::Access: return true;
  case ExprKind::Unary: return cheap(*static_cast<const Unary &>(E).Operand);
  case ExprKind::Binary: {
    const auto &B = static_cast<const Binary &>(E);
    return B.Op != BinaryOp::Div && B.Op != BinaryOp::Mod && cheap(*B.LHS) && cheap(*B.RHS);
  }
  case ExprKind::Select: {
    const auto &S = static_cast<const Select &>(E);
    return cheap(*S.Cond) && cheap(*S.Then) && cheap(*S.Else);
  }
  case ExprKind::Call: {
    const auto &C = static_cast<const Call &>(E);
    bool Ok = C.Fn == Callee::Cast || C.Fn == Callee::Max || C.Fn == Callee::Min ||
              C.Fn == Callee::Abs || C.Fn == Callee::Relu;
    return Ok && llvm::all_of(C.Args, [](const ExprPtr &A) { return cheap(*A); });
  }
  }
  return false;
}

/// Why node P is not inlined, or "" when it is. Recomputed keeps whether
/// some reader takes values many times (P then being cheap).
std::string refusal(const KernelGraph &G, const Node &P, bool &Recomputed) {
  Recomputed = false;
  for (unsigned CId : P.Consumers) {
    const Node &C = G.Nodes[CId];
    std::string Where = "'" + C.target() + "' (line " + std::to_string(C.Line) + ")";
    // Its operands must stay loads, to be staged as tiles.
    if (C.Class == NodeClass::Contraction)
      return "staged: " + Where + " is a contraction, whose operands are staged as tiles";
    for (const Read &R : C.Reads)
      if (R.Producer == static_cast<int>(P.Id))
        if (std::string Why = manyReads(C, R); !Why.empty()) {
          if (!cheap(*P.S->Value))
            return "staged: " + Where + " at " + readText(R) + " " + Why +
                   ", and a division or a function is not cheap to compute that often";
          Recomputed = true;
        }
  }
  return "";
}

} // namespace

FusionPlan planFusion(const KernelGraph &G, const FusionOptions &O) {
  FusionPlan P;
  size_t N = G.Nodes.size();
  P.Why.assign(N, "");
  P.Refused.assign(N, false);
  std::vector<bool> Inlined(N, false);
  if (O.Enabled && O.Inline)
    for (const Node &Nd : G.Nodes) {
      if (!Nd.writesIntermediate() || Nd.Consumers.empty())
        continue;
      if (Nd.Class == NodeClass::Permute) {
        P.Why[Nd.Id] = "is a transpose, which keeps its own launch (tile-transpose stages it through "
                       "shared memory)";
        continue;
      }
      if (Nd.Class != NodeClass::Map)
        continue;
      if (Nd.S->Op != ast::AssignOp::Assign) {
        P.Why[Nd.Id] = "staged: its combiner accumulates, and nothing is reduced";
        P.Refused[Nd.Id] = true;
        continue;
      }
      bool Recomputed = false;
      std::string Why = refusal(G, Nd, Recomputed);
      if (!Why.empty()) {
        P.Why[Nd.Id] = Why;
        P.Refused[Nd.Id] = true;
        continue;
      }
      Inlined[Nd.Id] = true;
      std::string Into;
      for (unsigned C : Nd.Consumers)
        Into += (Into.empty() ? "" : ", ") + G.Nodes[C].target();
      P.Why[Nd.Id] = "inlined into " + Into +
                     (Recomputed ? ": cheap, so computed again where a reader takes a value "
                                   "many times"
                                 : ": each reads one value per point of its domain");
      P.Lower.Inlined.insert(Nd.target());
    }
  // Factors out of the sum: alpha * A[m, k] * B[k, n] sums A * B and
  // multiplies by alpha once per output, so the tile passes see a plain
  // product of two operands.
  if (O.Enabled && O.Factor)
    for (const Node &Nd : G.Nodes) {
      if (Nd.Class != NodeClass::Contraction)
        continue;
      // Divisors and a sign come out too (A * B / s sums A * B), in
      // floating point: an integer quotient does not distribute.
      ast::ScaledProduct SP = ast::scaledProduct(*Nd.S->Value);
      if (llvm::any_of(SP.Divisors,
                       [&](const ast::Expr *D) { return ast::usesIndex(*D, Nd.Reduced); }) ||
          (!SP.Divisors.empty() && !isFloat(Nd.S->Target->Type)))
        continue;
      std::vector<const ast::Expr *> Fs;
      ast::productFactors(*SP.Core, Fs);
      unsigned Bound = 0;
      for (const ast::Expr *F : Fs)
        Bound += ast::usesIndex(*F, Nd.Reduced);
      const bool Scaled = !SP.Divisors.empty() || SP.Negated;
      if ((Bound == Fs.size() && !Scaled) || Bound < 2)
        continue;
      std::string Red;
      for (const std::string &R : Nd.Reduced)
        Red += (Red.empty() ? "" : ", ") + R;
      std::vector<std::string> Then;
      if (Fs.size() > Bound)
        Then.push_back("multiplies the sum by the " + std::to_string(Fs.size() - Bound) +
                       " others");
      if (!SP.Divisors.empty())
        Then.push_back(std::string(Then.empty() ? "divides the sum" : "divides it") + " by " +
                       std::to_string(SP.Divisors.size()) + " divisor" +
                       (SP.Divisors.size() > 1 ? "s" : ""));
      if (SP.Negated)
        Then.push_back(Then.empty() ? "negates the sum" : "negates it");
      P.Lower.FactorsOut.insert(Nd.target());
      P.Why[Nd.Id] = "sums the product of its " + std::to_string(Bound) + " factors that use " +
                     Red + ", and " + llvm::join(Then, ", then ") + " once per output";
    }
  // Whether the epilogue rule applies to a contraction and its siblings
  // (Members): "" if it does, else why not.
  auto EpilogueWhyNot = [&](const std::vector<unsigned> &Members) -> std::string {
    if (!O.Enabled || !O.Epilogue)
      return "fuse_epilogue = off";
    EpilogueMaps E = planEpilogue(G, Members, Inlined);
    if (E.Refusal.empty() && E.Maps.empty())
      return "nothing reads their results";
    return E.Refusal;
  };
  // Siblings: contractions over one operand share the first one's launch.
  std::vector<int> SiblingOf(N, -1);
  std::vector<std::vector<unsigned>> MembersOf(N);
  for (const Node &Nd : G.Nodes)
    MembersOf[Nd.Id] = {Nd.Id};
  // What the prologue rule makes of each contraction (decided once: the
  // siblings rule keeps those with a prologue apart).
  std::vector<PrologueChoice> Prologue(N);
  std::vector<bool> HasPrologue(N, false);
  if (O.Enabled && O.Prologue)
    for (const Node &Nd : G.Nodes) {
      Prologue[Nd.Id] = choosePrologue(Nd, P.Lower.FactorsOut.count(Nd.target()) > 0);
      HasPrologue[Nd.Id] = !Prologue[Nd.Id].Staged.empty();
    }
  if (O.Enabled && O.Siblings)
    for (const SiblingGroup &Gr :
         findSiblings(G, P.Lower.FactorsOut, HasPrologue, EpilogueWhyNot, P.Why, P.Refused))
      for (unsigned S : Gr.Others) {
        SiblingOf[S] = static_cast<int>(Gr.First);
        MembersOf[Gr.First].push_back(S);
        P.Lower.Siblings[G.Nodes[Gr.First].target()].push_back(G.Nodes[S].S);
        P.Lower.InSiblings.insert(G.Nodes[S].target());
      }
  // Epilogues: the maps reading a contraction's intermediate (or its
  // siblings') join its launch, computed on the accumulators.
  std::vector<int> EpilogueOf(N, -1);
  if (O.Enabled && O.Epilogue)
    for (const Node &Nd : G.Nodes) {
      const std::vector<unsigned> &Members = MembersOf[Nd.Id];
      if (Nd.Class != NodeClass::Contraction || SiblingOf[Nd.Id] >= 0)
        continue;
      EpilogueMaps E = planEpilogue(G, Members, Inlined);
      if (!E.Refusal.empty()) {
        P.Why[Nd.Id] = (P.Why[Nd.Id].empty() ? "" : P.Why[Nd.Id] + "; ") +
                       "keeps its result in memory: " + E.Refusal;
        P.Refused[Nd.Id] = true;
        continue;
      }
      if (E.Maps.empty())
        continue;
      std::string Maps;
      for (size_t I = 0; I < E.Maps.size(); ++I) {
        const Node &C = G.Nodes[E.Maps[I]];
        EpilogueOf[C.Id] = static_cast<int>(Nd.Id);
        P.Lower.Epilogues[Nd.target()].push_back(C.S);
        P.Lower.EpilogueAt[C.S] = E.At[I];
        P.Lower.InEpilogue.insert(C.target());
        Maps += (Maps.empty() ? "" : ", ") + C.target();
        P.Why[C.Id] = "is computed in the launch of the contraction " + Nd.target() +
                      ", on its accumulators (its epilogue)";
      }
      for (const auto &[C, Why] : E.Apart) {
        P.Why[C] = (P.Why[C].empty() ? "" : P.Why[C] + "; ") +
                   "stays out of the epilogue of " + Nd.target() + ", reading what it stores: " +
                   Why;
        P.Refused[C] = true;
      }
      std::string Stored;
      for (unsigned M : Members)
        if (!G.Nodes[M].writesIntermediate())
          Stored += (Stored.empty() ? "" : ", ") + G.Nodes[M].target();
      P.Why[Nd.Id] = (P.Why[Nd.Id].empty() ? "" : P.Why[Nd.Id] + "; ") + "runs its epilogue " +
                     Maps + " on the accumulators, and " +
                     (Stored.empty() ? "is never stored" : "stores them as its output " + Stored);
    }
  // Prologues: a contraction's operand that is a function of a tile
  // operand is computed first, in a launch of its own.
  std::vector<std::vector<std::string>> PrologueOf(N);
  if (O.Enabled && O.Prologue)
    for (const Node &Nd : G.Nodes) {
      if (Nd.Class != NodeClass::Contraction || SiblingOf[Nd.Id] >= 0)
        continue;
      PrologueChoice &C = Prologue[Nd.Id];
      if (!C.Refusal.empty()) {
        P.Why[Nd.Id] = (P.Why[Nd.Id].empty() ? "" : P.Why[Nd.Id] + "; ") +
                       "reads its operands as they are written: " + C.Refusal;
        P.Refused[Nd.Id] = true;
        continue;
      }
      if (C.Staged.empty())
        continue;
      // The nest's first store: its own result's, unless an epilogue
      // takes that and it is not an output.
      auto Epi = P.Lower.Epilogues.find(Nd.target());
      P.Prologues.push_back({Nd.Line, Epi == P.Lower.Epilogues.end() || !Nd.writesIntermediate()
                                          ? Nd.target()
                                          : Epi->second[0]->TargetName});
      bool Two = C.Staged.size() > 1;
      P.Why[Nd.Id] = (P.Why[Nd.Id].empty() ? "" : P.Why[Nd.Id] + "; ") + "computes its operand" +
                     (Two ? "s over " + C.Staged[0] + " and over " + C.Staged[1]
                          : " over " + C.Staged[0]) +
                     " first, " + (Two ? "each " : "") +
                     "in a launch before it, and tiles two plain operands (its prologue)";
      PrologueOf[Nd.Id] = std::move(C.Staged);
    }
  // Row chains: consecutive launches over the same rows become one.
  std::vector<unsigned> Roots;
  for (const Node &Nd : G.Nodes)
    if (!Inlined[Nd.Id] && EpilogueOf[Nd.Id] < 0 && SiblingOf[Nd.Id] < 0)
      Roots.push_back(Nd.Id);
  std::vector<int> ChainOf(N, -1);
  std::vector<RowChainNodes> Chains;
  if (O.Enabled && O.Rows)
    Chains = findRowChains(G, Roots, Inlined, P.Why, P.Refused);
  for (const RowChainNodes &C : Chains) {
    LowerPlan::RowChain LC;
    for (unsigned M : C.Members) {
      LC.Members.push_back(G.Nodes[M].S);
      ChainOf[M] = static_cast<int>(C.Members.front());
    }
    LC.RowLocal.insert(C.RowLocal.begin(), C.RowLocal.end());
    LC.HeldOutputs.insert(C.HeldOutputs.begin(), C.HeldOutputs.end());
    LC.Recomputed.insert(C.Recomputed.begin(), C.Recomputed.end());
    LC.Rows = C.Rows;
    P.Lower.RowChains.push_back(std::move(LC));
  }
  // Maps beside one another: consecutive maps over one domain that read
  // a tensor alike, lowered as a chain whose rows are the whole domain.
  std::vector<int> BesideOf(N, -1);
  if (O.Enabled && O.Beside) {
    // Runs of consecutive launches outside the row chains: a chain between
    // two maps may write what the second reads.
    std::vector<MapGroupNodes> Found;
    std::vector<unsigned> Run;
    for (size_t I = 0; I <= Roots.size(); ++I) {
      if (I < Roots.size() && ChainOf[Roots[I]] < 0) {
        Run.push_back(Roots[I]);
        continue;
      }
      llvm::append_range(Found, findMapGroups(G, Run, Inlined, P.Why, P.Refused));
      Run.clear();
    }
    for (const MapGroupNodes &Gr : Found) {
      LowerPlan::RowChain LC;
      for (unsigned M : Gr.Members) {
        LC.Members.push_back(G.Nodes[M].S);
        if (M != Gr.Members.front())
          BesideOf[M] = static_cast<int>(Gr.Members.front());
      }
      LC.Recomputed.insert(Gr.Recomputed.begin(), Gr.Recomputed.end());
      LC.Rows = G.Nodes[Gr.Members.front()].Domain.size();
      P.Lower.RowChains.push_back(std::move(LC));
    }
  }
  // Groups: each node not inlined roots one, but an epilogue map joins
  // its contraction's and a chain member its chain's; an inlined node
  // belongs to the groups of its readers, through any inlined readers
  // between.
  P.GroupOf.assign(N, -1);
  for (unsigned Id : Roots)
    if (BesideOf[Id] >= 0) {
      P.GroupOf[Id] = P.GroupOf[BesideOf[Id]];
      P.Groups[P.GroupOf[Id]].Beside.push_back(Id);
    } else if (ChainOf[Id] < 0 || ChainOf[Id] == static_cast<int>(Id)) {
      P.GroupOf[Id] = static_cast<int>(P.Groups.size());
      P.Groups.push_back({Id, {}, {}, {}, {}, {}, PrologueOf[Id]});
    } else {
      P.GroupOf[Id] = P.GroupOf[ChainOf[Id]];
      P.Groups[P.GroupOf[Id]].Chain.push_back(Id);
    }
  for (const Node &Nd : G.Nodes)
    if (SiblingOf[Nd.Id] >= 0) {
      P.GroupOf[Nd.Id] = P.GroupOf[SiblingOf[Nd.Id]];
      P.Groups[P.GroupOf[Nd.Id]].Siblings.push_back(Nd.Id);
    }
  for (const Node &Nd : G.Nodes)
    if (EpilogueOf[Nd.Id] >= 0) {
      P.GroupOf[Nd.Id] = P.GroupOf[EpilogueOf[Nd.Id]];
      P.Groups[P.GroupOf[Nd.Id]].Epilogue.push_back(Nd.Id);
    }
  for (size_t I = N; I-- > 0;) {
    if (!Inlined[I])
      continue;
    std::vector<unsigned> Roots;
    std::function<void(unsigned)> Visit = [&](unsigned Id) {
      for (unsigned C : G.Nodes[Id].Consumers) {
        if (Inlined[C])
          Visit(C);
        else if (!llvm::is_contained(Roots, C))
          Roots.push_back(C);
      }
    };
    Visit(static_cast<unsigned>(I));
    for (unsigned R : Roots) {
      std::vector<unsigned> &In = P.Groups[P.GroupOf[R]].Inlined;
      if (llvm::is_contained(In, static_cast<unsigned>(I)))
        continue;
      In.insert(In.begin(), static_cast<unsigned>(I));
    }
    if (Roots.size() == 1)
      P.GroupOf[I] = P.GroupOf[Roots[0]];
  }
  for (const Node &Nd : G.Nodes)
    if (!P.Why[Nd.Id].empty())
      remark("fuse", Nd.Line, "'" + Nd.target() + "' " + P.Why[Nd.Id]);
  return P;
}

ir::Func lowerFused(const ast::Kernel &K, const std::function<unsigned(llvm::SMLoc)> &LineOf,
                    const std::vector<ir::Knob> &CommandLine) {
  FusionPlan P = planFusion(buildGraph(K, LineOf), fusionOptions(K, CommandLine));
  ir::Func F = lowerKernel(K, LineOf, P.Lower);
  stagePrologues(F, P.Prologues);
  return F;
}

ir::Module lowerFused(const ast::Module &M, const std::function<unsigned(llvm::SMLoc)> &LineOf,
                      const std::vector<ir::Knob> &CommandLine) {
  ir::Module IR;
  for (const auto &K : M.Kernels)
    IR.Funcs.push_back(lowerFused(*K, LineOf, CommandLine));
  return IR;
}

} // namespace tdsl::graph
