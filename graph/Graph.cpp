//===- Graph.cpp - A kernel's statements as a graph of nodes --------------===//
#include "graph/Graph.h"

#include "llvm/ADT/STLExtras.h"

#include <map>

namespace tdsl::graph {

using namespace ast;

const char *nodeClassName(NodeClass C) {
  switch (C) {
  case NodeClass::Map: return "map";
  case NodeClass::Permute: return "permute";
  case NodeClass::Reduction: return "reduction";
  case NodeClass::Contraction: return "contraction";
  }
  return "?";
}

std::string readText(const Read &R) {
  std::string S = R.Tensor;
  if (R.Map.empty())
    return S;
  S += "[";
  for (size_t I = 0; I < R.Map.size(); ++I)
    S += (I ? ", " : "") + R.Map[I].str();
  return S + "]";
}

bool usesAny(const std::vector<Affine> &Map, const std::vector<std::string> &Names) {
  return llvm::any_of(Map, [&](const Affine &A) {
    return llvm::any_of(Names, [&](const std::string &N) { return A.Coeffs.count(N) > 0; });
  });
}

namespace {

/// A with each index that Map names replaced by its form there.
Affine compose(const Affine &A, const IndexSub &Map) {
  Affine Out = Affine::constant(A.Constant);
  for (const auto &[I, K] : A.Coeffs) {
    auto It = Map.find(I);
    Out = Out + (It == Map.end() ? Affine::symbol(I) : It->second).scaled(K);
  }
  return Out;
}

} // namespace

void flatReads(const KernelGraph &G, const Node &E, const std::vector<bool> &Inlined,
               const IndexSub &Map, std::vector<FlatRead> &Out) {
  for (const Read &R : E.Reads) {
    std::vector<Affine> Subs;
    for (const Affine &A : R.Map)
      Subs.push_back(compose(A, Map));
    if (R.Producer < 0 || !Inlined[R.Producer]) {
      Out.push_back({&R, std::move(Subs)});
      continue;
    }
    // The inlined map's indices become this read's subscripts.
    const Node &P = G.Nodes[R.Producer];
    IndexSub In;
    for (size_t D = 0; D < P.Domain.size() && D < Subs.size(); ++D)
      In[P.Domain[D]] = Subs[D];
    flatReads(G, P, Inlined, In, Out);
  }
}

namespace {

/// Every tensor read in E, in evaluation order.
void collectReads(const Expr &E, std::vector<Read> &Out) {
  forEachExpr(E, [&](const Expr &X) {
    if (X.Kind == ExprKind::Name && static_cast<const Name &>(X).Resolved == NameKind::Tensor)
      Out.push_back({static_cast<const Name &>(X).Id, {}, -1});
    else if (X.Kind == ExprKind::Access)
      Out.push_back({static_cast<const Access &>(X).TensorName,
                     static_cast<const Access &>(X).AffineSubs, -1});
  });
}

/// The factors of a product, through casts: f32(A[m, k]) * f32(B[k, n]).
void factors(const Expr &E, std::vector<const Expr *> &Out) {
  if (E.Kind == ExprKind::Binary && static_cast<const Binary &>(E).Op == BinaryOp::Mul) {
    factors(*static_cast<const Binary &>(E).LHS, Out);
    factors(*static_cast<const Binary &>(E).RHS, Out);
    return;
  }
  if (E.Kind == ExprKind::Call && static_cast<const Call &>(E).Fn == Callee::Cast) {
    factors(*static_cast<const Call &>(E).Args[0], Out);
    return;
  }
  Out.push_back(&E);
}

/// The output indices a read uses.
std::vector<std::string> outputsUsed(const std::vector<Affine> &Map,
                                     const std::vector<std::string> &Outputs) {
  std::vector<std::string> Used;
  for (const std::string &O : Outputs)
    if (usesAny(Map, {O}))
      Used.push_back(O);
  return Used;
}

NodeClass classify(const Stmt &S) {
  if (!S.Reduced.empty()) {
    // A sum of products of operands along the reduced indices, two of
    // which use different output indices (A[m, k] and B[k, n]; not
    // d[r, c] * d[r, c], a row reduction of a square). An operand is a
    // read, or a function of reads that all use the same output indices
    // (relu(A[m, k]), which the prologue rule computes first).
    // (Divided by values free of the reduced indices, or negated, it is
    // still one: the factor rule takes those out of the sum.)
    std::vector<const Expr *> Fs;
    ScaledProduct SP = scaledProduct(*S.Value);
    bool Free = llvm::none_of(SP.Divisors, [&](const Expr *D) { return usesIndex(*D, S.Reduced); });
    factors(Free ? *SP.Core : *S.Value, Fs);
    std::vector<std::vector<std::string>> Sides;
    bool AlongRows = true; // each read over output indices ends at a reduced one
    for (const Expr *F : Fs) {
      std::vector<Read> Reads;
      collectReads(*F, Reads);
      std::vector<std::vector<std::string>> Used;
      bool Reduces = false;
      for (const Read &R : Reads) {
        Reduces |= usesAny(R.Map, S.Reduced);
        Used.push_back(outputsUsed(R.Map, S.Indices));
      }
      if (Reduces && llvm::all_of(Used, [&](const auto &U) { return U == Used.front(); })) {
        Sides.push_back(Used.front());
        // (A read free of the reduced indices, mx[r] in exp(X[r, c] -
        // mx[r]), is one value per row.)
        for (const Read &R : Reads)
          if (usesAny(R.Map, S.Reduced))
            AlongRows &= usesAny({R.Map.back()}, S.Reduced);
      }
    }
    bool Differ = llvm::any_of(Sides, [&](const std::vector<std::string> &X) {
      return X != Sides.front();
    });
    // A weight along the reduced index (w[c] in X[r, c] * w[c], the
    // vector of a GEMV, x[z, k] of a batched one) beside a side that reads
    // every output index, all read with the reduced index last, is a row
    // reduction: each row read once along its contiguous index, like a
    // plain one, the weight's row shared by the rows that read it.
    bool Weighted = AlongRows && llvm::any_of(Sides, [&](const std::vector<std::string> &X) {
                      return X.size() == S.Indices.size();
                    });
    return S.Op == AssignOp::Add && Differ && !Weighted ? NodeClass::Contraction
                                                        : NodeClass::Reduction;
  }
  // One read of a tensor at the output indices in another order.
  if (S.Op == AssignOp::Assign && S.Value->Kind == ExprKind::Access) {
    const auto &A = static_cast<const Access &>(*S.Value);
    if (A.AffineSubs.size() == S.Indices.size() && S.Indices.size() > 1) {
      std::vector<std::string> Order;
      for (const Affine &Sub : A.AffineSubs)
        if (Sub.Constant == 0 && Sub.Coeffs.size() == 1 && Sub.Coeffs.begin()->second == 1)
          Order.push_back(Sub.Coeffs.begin()->first);
      std::vector<std::string> Sorted = Order, Want = S.Indices;
      llvm::sort(Sorted);
      llvm::sort(Want);
      if (Order.size() == S.Indices.size() && Sorted == Want && Order != S.Indices)
        return NodeClass::Permute;
    }
  }
  return NodeClass::Map;
}

} // namespace

KernelGraph buildGraph(const Kernel &K, const std::function<unsigned(llvm::SMLoc)> &LineOf) {
  KernelGraph G;
  G.K = &K;
  std::map<std::string, unsigned> Writer;
  for (const auto &SP : K.Body) {
    const Stmt &S = *SP;
    Node N;
    N.Id = G.Nodes.size();
    N.S = &S;
    N.Line = LineOf(S.Loc);
    N.Domain = S.Indices;
    N.Reduced = S.Reduced;
    N.Class = classify(S);
    collectReads(*S.Value, N.Reads);
    for (Read &R : N.Reads)
      if (auto It = Writer.find(R.Tensor); It != Writer.end()) {
        R.Producer = static_cast<int>(It->second);
        std::vector<unsigned> &C = G.Nodes[It->second].Consumers;
        if (!llvm::is_contained(C, N.Id))
          C.push_back(N.Id);
      }
    Writer[S.TargetName] = N.Id;
    G.Nodes.push_back(std::move(N));
  }
  return G;
}

} // namespace tdsl::graph
