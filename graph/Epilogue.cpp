//===- Epilogue.cpp - The maps a contraction's launch computes at its end -===//
#include "graph/Epilogue.h"

#include "llvm/ADT/STLExtras.h"

#include <functional>
#include <map>
#include <set>

namespace tdsl::graph {

namespace {

bool plain(const ast::Affine &A) {
  return A.Constant == 0 && A.Coeffs.size() == 1 && A.Coeffs.begin()->second == 1;
}

/// R as the map being checked reads it: through maps computed where they
/// are read, R's plain indices renamed to that map's (Sub).
std::string seenText(const Read &R, const std::map<std::string, std::string> &Sub) {
  Read Seen = R;
  for (ast::Affine &A : Seen.Map)
    if (plain(A))
      if (auto It = Sub.find(A.Coeffs.begin()->first); It != Sub.end())
        A = ast::Affine::symbol(It->second);
  return readText(Seen);
}

/// Whether a map may join the epilogue of contraction P: the nodes that
/// have joined (P's siblings and the maps so far), each with the position
/// of P's output index that each of its indices runs at.
class Joiner {
public:
  Joiner(const KernelGraph &G, const Node &P, const std::vector<bool> &Inlined)
      : G(G), P(P), Inlined(Inlined) {}

  void add(unsigned Id, const std::vector<unsigned> &At) {
    const Node &N = G.Nodes[Id];
    for (size_t D = 0; D < N.Domain.size(); ++D)
      Pos[Id][N.Domain[D]] = At[D];
  }
  bool joined(int Id) const { return Id >= 0 && Pos.count(static_cast<unsigned>(Id)); }
  bool inlined(int Id) const { return Id >= 0 && Inlined[Id]; }
  /// Whether node Id reads a joined node, directly or through nodes
  /// computed where they are read.
  bool reaches(unsigned Id) const {
    return llvm::any_of(G.Nodes[Id].Reads, [&](const Read &R) {
      return joined(R.Producer) || (inlined(R.Producer) && reaches(R.Producer));
    });
  }

  /// Why map C cannot run on the accumulators, or "" when it can; then
  /// At holds, for each of its output indices, the position of P's.
  std::string join(const Node &C, std::vector<unsigned> &At) {
    Who = "'" + C.target() + "' (line " + std::to_string(C.Line) + ")";
    if (C.Class != NodeClass::Map || C.S->Op != ast::AssignOp::Assign)
      return Who + " is a " + std::string(nodeClassName(C.Class)) +
             (C.Class == NodeClass::Map ? " that accumulates" : "") + ", not an elementwise map";
    CPos.clear();
    First = nullptr;
    FirstIn = nullptr;
    FirstText.clear();
    std::map<std::string, std::string> Same;
    for (const std::string &I : C.Domain)
      Same[I] = I;
    if (std::string Why = walk(C, &Same); !Why.empty())
      return Why;
    std::set<unsigned> Taken;
    At.clear();
    for (const std::string &I : C.Domain) {
      auto It = CPos.find(I);
      if (It == CPos.end())
        return Who + " reads " + FirstText + " at fewer indices than it writes";
      if (!Taken.insert(It->second).second || !C.S->Ranges.count(I) ||
          C.S->Ranges.at(I) != P.S->Ranges.at(P.Domain[It->second]))
        return Who + " reads " + FirstText + ", not at the contraction's indices";
      At.push_back(It->second);
    }
    return "";
  }

private:
  const KernelGraph &G;
  const Node &P;
  const std::vector<bool> &Inlined;
  std::map<unsigned, std::map<std::string, unsigned>> Pos;
  // The map being checked: its name, its indices' positions so far and
  // its first read of a joined node.
  std::string Who;
  std::map<std::string, unsigned> CPos;
  const Read *First = nullptr;
  const Node *FirstIn = nullptr;
  std::string FirstText; ///< First as C reads it (seenText)

  /// The reads of X, a map computed where C reads it (or C itself), whose
  /// indices are C's Sub (null where X reads nothing joined).
  std::string walk(const Node &X, const std::map<std::string, std::string> *Sub) {
    for (const Read &R : X.Reads) {
      if (joined(R.Producer)) {
        // (Two subscripts of one tensor in one value are compared as
        // written.)
        std::string Text = seenText(R, *Sub);
        if (First && FirstIn == &X && First->Producer == R.Producer && First->Map != R.Map)
          return Who + " reads " + FirstText + " and " + Text +
                 ", two elements of the result at one point";
        std::set<std::string> Seen;
        const Node &Y = G.Nodes[R.Producer];
        for (size_t D = 0; D < R.Map.size(); ++D) {
          const ast::Affine &A = R.Map[D];
          auto Name = plain(A) ? Sub->find(A.Coeffs.begin()->first) : Sub->end();
          if (Name == Sub->end() || !Seen.insert(Name->second).second)
            return Who + " reads " + Text + ", not at the contraction's indices";
          unsigned Want = Pos.at(Y.Id).at(Y.Domain[D]);
          auto [It, New] = CPos.try_emplace(Name->second, Want);
          if (!New && It->second != Want)
            return Who + " reads " + FirstText + " and " + Text +
                   ", two elements of the result at one point";
        }
        if (!First) {
          First = &R;
          FirstIn = &X;
          FirstText = Text;
        }
      } else if (inlined(R.Producer)) {
        const Node &Y = G.Nodes[R.Producer];
        if (!reaches(Y.Id)) {
          if (std::string Why = walk(Y, nullptr); !Why.empty())
            return Why;
          continue;
        }
        std::map<std::string, std::string> Inner;
        for (size_t D = 0; D < R.Map.size(); ++D) {
          const ast::Affine &A = R.Map[D];
          auto Name = plain(A) ? Sub->find(A.Coeffs.begin()->first) : Sub->end();
          if (Name == Sub->end())
            return Who + " reads " + readText(R) +
                   " (computed where it is read), not at the contraction's indices";
          Inner[Y.Domain[D]] = Name->second;
        }
        if (std::string Why = walk(Y, &Inner); !Why.empty())
          return Why;
      } else if (R.Producer > static_cast<int>(P.Id)) {
        return Who + " also reads '" + R.Tensor + "', written after the contraction";
      }
    }
    return "";
  }
};

} // namespace

EpilogueMaps planEpilogue(const KernelGraph &G, const std::vector<unsigned> &Members,
                          const std::vector<bool> &Inlined) {
  EpilogueMaps E;
  const Node &P = G.Nodes[Members.front()];
  Joiner J(G, P, Inlined);
  for (unsigned M : Members) {
    std::vector<unsigned> Same(G.Nodes[M].Domain.size());
    for (unsigned D = 0; D < Same.size(); ++D)
      Same[D] = D; // siblings run at P's indices by position
    J.add(M, Same);
  }
  // The maps reading the results, through those computed where they are
  // read (the readers): all of them join, or none.
  std::vector<unsigned> Readers;
  std::function<void(unsigned)> Visit = [&](unsigned Id) {
    for (unsigned C : G.Nodes[Id].Consumers)
      if (Inlined[C])
        Visit(C);
      else if (!llvm::is_contained(Readers, C))
        Readers.push_back(C);
  };
  for (unsigned M : Members)
    Visit(M);
  // In statement order, so that a reader may read a map that joined
  // before it (H = acc + 1; G = H * 2; J = G + acc: J waits for G). The
  // elementwise maps reading only what joined maps write join where they
  // can; the others read it from memory (and every other reader, a
  // reduction or a contraction, does).
  for (const Node &C : G.Nodes) {
    bool Reader = llvm::is_contained(Readers, C.Id);
    if (!Reader && (C.Id <= P.Id || J.joined(C.Id) || Inlined[C.Id] ||
                    C.Class != NodeClass::Map || C.S->Op != ast::AssignOp::Assign ||
                    !J.reaches(C.Id)))
      continue;
    std::vector<unsigned> At;
    if (std::string Why = J.join(C, At); !Why.empty()) {
      if (!Reader) {
        E.Apart.push_back({C.Id, Why});
        continue;
      }
      return EpilogueMaps{Why, {}, {}, {}};
    }
    J.add(C.Id, At);
    E.Maps.push_back(C.Id);
    E.At.push_back(std::move(At));
  }
  return E;
}

} // namespace tdsl::graph
