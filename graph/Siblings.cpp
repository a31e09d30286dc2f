//===- Siblings.cpp - Contractions over one operand, one launch -----------===//
#include "graph/Siblings.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

namespace tdsl::graph {

namespace {

/// N's index names by position: output index D is "#oD", reduced index D
/// "#rD", so that reads of siblings compare as the same element.
std::map<std::string, std::string> positions(const Node &N) {
  std::map<std::string, std::string> P;
  for (size_t D = 0; D < N.Domain.size(); ++D)
    P[N.Domain[D]] = "#o" + std::to_string(D);
  for (size_t D = 0; D < N.Reduced.size(); ++D)
    P[N.Reduced[D]] = "#r" + std::to_string(D);
  return P;
}

/// R's subscripts with N's indices renamed by position.
std::vector<ast::Affine> byPosition(const Node &N, const Read &R) {
  std::map<std::string, std::string> P = positions(N);
  std::vector<ast::Affine> Out;
  for (const ast::Affine &A : R.Map) {
    ast::Affine B;
    B.Constant = A.Constant;
    for (const auto &[Name, Coeff] : A.Coeffs)
      B.Coeffs[P.count(Name) ? P.at(Name) : Name] = Coeff;
    Out.push_back(std::move(B));
  }
  return Out;
}

/// Whether read R of N uses one of N's reduced indices: a tile operand.
bool usesReduced(const Node &N, const Read &R) { return usesAny(R.Map, N.Reduced); }

/// The first tile operand that A and B read at the same element, or null.
const Read *sharedOperand(const Node &A, const Node &B) {
  for (const Read &RA : A.Reads) {
    if (!usesReduced(A, RA))
      continue;
    for (const Read &RB : B.Reads)
      if (RA.Tensor == RB.Tensor && byPosition(A, RA) == byPosition(B, RB))
        return &RA;
  }
  return nullptr;
}

/// A factor of a product as the tile passes see it: the casts around a
/// read ("tf32(f32)", "f16"), or "a computed value". A cast to f32, f64 or
/// i32 is the product's own widening (f32(X) * f32(W) is X * W), so it is
/// no part of the form.
std::string factorShape(const ast::Expr &E) {
  if (E.Kind == ast::ExprKind::Access)
    return dtypeName(static_cast<const ast::Access &>(E).Target->Type).str();
  if (E.Kind == ast::ExprKind::Call) {
    const auto &C = static_cast<const ast::Call &>(E);
    if (C.Fn == ast::Callee::Cast && C.Args.size() == 1) {
      if (C.CastTo == DType::F32 || C.CastTo == DType::F64 || C.CastTo == DType::I32)
        return factorShape(*C.Args[0]);
      return C.FuncName + "(" + factorShape(*C.Args[0]) + ")";
    }
  }
  return "a computed value";
}

/// Why the tile passes would not take contraction N as a GEMM, so that
/// siblings would leave it to a slower path, or "": they take output
/// indices (batch..., m, n), one reduced index, and factors that each use
/// it with exactly one of m and n (passes/ContractionMatch.h).
std::string untileable(const Node &N) {
  if (N.Domain.size() < 2)
    return "it has fewer than two output indices (a GEMV: reduce-rows takes it alone)";
  if (N.Reduced.size() != 1)
    return "it reduces more than one index";
  const std::string &M = N.Domain[N.Domain.size() - 2], &Nn = N.Domain.back();
  for (const Read &R : N.Reads)
    if (usesReduced(N, R) && usesAny(R.Map, {M}) == usesAny(R.Map, {Nn}))
      return "its operand " + readText(R) + " is not indexed by exactly one of " + M + " and " +
             Nn + ", so it is no tile operand";
  return "";
}

/// What decides which tile pass takes contraction N (tensor cores or not):
/// the shapes of its product's factors that use a reduced index, sorted,
/// and how many others stay in the sum (none when the factor rule takes
/// them out). Siblings must agree, or one would take the other off the
/// tensor cores.
std::string productShape(const Node &N, const std::set<std::string> &FactoredOut) {
  std::vector<const ast::Expr *> Fs;
  ast::productFactors(*N.S->Value, Fs);
  std::vector<std::string> Bound;
  unsigned Free = 0;
  for (const ast::Expr *F : Fs) {
    if (ast::usesIndex(*F, N.Reduced))
      Bound.push_back(factorShape(*F));
    else
      ++Free;
  }
  llvm::sort(Bound);
  std::string S = llvm::join(Bound, " * ");
  if (Free && !FactoredOut.count(N.target()))
    S += " and " + std::to_string(Free) + " factor(s) free of the reduced indices";
  return S;
}

/// Why contraction S cannot join the launch of First (whose group has
/// Members nodes), with which it shares the read Shared, or "".
std::string joinRefusal(const KernelGraph &G, const Node &First, size_t Members, const Node &S,
                        const Read &Shared, const std::set<std::string> &FactoredOut,
                        const std::vector<bool> &HasPrologue) {
  std::string Of = "'" + First.target() + "' (line " + std::to_string(First.Line) + ")";
  // (Both sum: a contraction's combiner is +=, graph/Graph.h.)
  if (std::string Why = untileable(S); !Why.empty())
    return Why;
  if (std::string Why = untileable(First); !Why.empty())
    return "of " + Of + ", " + Why;
  for (const Node *X : {&S, &First})
    if (HasPrologue[X->Id])
      return (X == &S ? std::string() : "of " + Of + ", ") +
             "an operand is no plain read: its prologue computes it first, in a launch of its own";
  auto SameRanges = [&](const std::vector<std::string> &A, const std::vector<std::string> &B) {
    if (A.size() != B.size())
      return false;
    for (size_t D = 0; D < A.size(); ++D)
      if (First.S->Ranges.at(A[D]) != S.S->Ranges.at(B[D]))
        return false;
    return true;
  };
  if (!SameRanges(First.Domain, S.Domain))
    return "its output indices do not range as those of " + Of;
  if (!SameRanges(First.Reduced, S.Reduced))
    return "its reduced indices do not range as those of " + Of;
  if (S.S->Target->Type != First.S->Target->Type)
    return "its result's dtype is not that of " + Of;
  DType Operand = G.K->lookup(Shared.Tensor)->Type;
  for (const Read &R : S.Reads) {
    if (R.Producer >= static_cast<int>(First.Id))
      return "it reads '" + R.Tensor + "', written " +
             (R.Producer == static_cast<int>(First.Id) ? "by " : "after ") + Of;
    if (usesReduced(S, R) && G.K->lookup(R.Tensor)->Type != Operand)
      return "its operand '" + R.Tensor + "' is not " + dtypeName(Operand).str() + " as '" +
             Shared.Tensor + "' is";
  }
  std::string Mine = productShape(S, FactoredOut), Theirs = productShape(First, FactoredOut);
  if (Mine != Theirs)
    return "its product (" + Mine + ") is not of the form of that of " + Of + " (" + Theirs +
           "), so one tiling could not take both";
  if (Members >= MaxSiblings)
    return "the launch of " + Of + " already computes " + std::to_string(MaxSiblings) +
           " contractions, the most whose accumulators fit beside each other in a thread's "
           "registers";
  return "";
}

} // namespace

std::vector<SiblingGroup>
findSiblings(const KernelGraph &G, const std::set<std::string> &FactoredOut,
             const std::vector<bool> &HasPrologue,
             const std::function<std::string(const std::vector<unsigned> &)> &EpilogueWhyNot,
             std::vector<std::string> &Why, std::vector<bool> &Refused) {
  std::vector<SiblingGroup> Groups;
  auto Note = [&](unsigned Id, const std::string &Text) {
    Why[Id] = (Why[Id].empty() ? "" : Why[Id] + "; ") + Text;
  };
  for (const Node &S : G.Nodes) {
    if (S.Class != NodeClass::Contraction)
      continue;
    std::string Refusal; // the first group's that S shares a read with
    bool Joined = false;
    for (SiblingGroup &Gr : Groups) {
      // The operand shared with some member, renamed to its positions,
      // which are the first's.
      const Node *Sharer = &G.Nodes[Gr.First];
      const Read *Shared = sharedOperand(*Sharer, S);
      for (size_t I = 0; !Shared && I < Gr.Others.size(); ++I) {
        Sharer = &G.Nodes[Gr.Others[I]];
        Shared = sharedOperand(*Sharer, S);
      }
      if (!Shared)
        continue;
      const Node &First = G.Nodes[Gr.First];
      std::string Why =
          joinRefusal(G, First, 1 + Gr.Others.size(), S, *Shared, FactoredOut, HasPrologue);
      // Sharing the tile must not cost an epilogue the group, or S alone,
      // would take.
      std::vector<unsigned> Members = {Gr.First};
      llvm::append_range(Members, Gr.Others);
      std::vector<unsigned> With = Members;
      With.push_back(S.Id);
      if (Why.empty() && (EpilogueWhyNot(Members).empty() || EpilogueWhyNot({S.Id}).empty()))
        if (std::string Lost = EpilogueWhyNot(With); !Lost.empty())
          Why = "together, the maps reading their results would not be their epilogue (" + Lost +
                "), and their results would be stored";
      if (!Why.empty()) {
        if (Refusal.empty())
          Refusal = "keeps its own launch, though it reads " + readText(*Shared) + " as '" +
                    Sharer->target() + "' does: " + Why;
        continue;
      }
      Gr.Others.push_back(S.Id);
      Note(S.Id, "is computed in the launch of the contraction " + First.target() +
                     ", beside it, reading " + readText(*Shared) + " from the same staged tile");
      Joined = true;
      break;
    }
    if (Joined)
      continue;
    Groups.push_back({S.Id, {}});
    if (!Refusal.empty()) {
      Note(S.Id, Refusal);
      Refused[S.Id] = true;
    }
  }
  llvm::erase_if(Groups, [](const SiblingGroup &Gr) { return Gr.Others.empty(); });
  for (const SiblingGroup &Gr : Groups) {
    std::string Names;
    for (unsigned O : Gr.Others)
      Names += (Names.empty() ? "" : ", ") + G.Nodes[O].target();
    Note(Gr.First, "computes its sibling contraction" +
                       std::string(Gr.Others.size() > 1 ? "s " : " ") + Names +
                       " in its launch, each with its own accumulators");
  }
  return Groups;
}

} // namespace tdsl::graph
