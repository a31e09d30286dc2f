//===- RowChainMatch.h - The nest of a row chain, as the fusion stage lowers it ===//
//
// The matcher of passes/RowChain.h: the rows (outer serial loops), the
// values per row (one-element registers around the body) and the phases
// of the body, each a reduction along the row, a row map or an
// elementwise map along it, with every column loop's variable renamed to
// one name so that the loads of different phases compare equal.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_ROWCHAINMATCH_H
#define TDSL_PASSES_ROWCHAINMATCH_H

#include "ir/IR.h"
#include "passes/PassUtils.h"

#include <optional>
#include <string>
#include <vector>

namespace tdsl {

enum class RowPhaseKind { Reduction, Row, Element };

/// One statement of the chain's body. Its column loop's variable is
/// replaced by the pass's own (Col), so that the loads of different
/// phases compare equal.
struct RowPhase {
  RowPhaseKind Kind = RowPhaseKind::Row;
  unsigned Line = 0;
  ir::Stmt Row;                      ///< Row: the store
  const ir::AllocateNode *Acc = nullptr;
  std::vector<ir::Stmt> Init, Epilogue;
  ir::BinaryOp Op = ir::BinaryOp::Add;
  ir::Expr Term;                     ///< Reduction: E of ACC = ACC OP E
  std::string Out;               ///< Element: the tensor stored
  std::vector<ir::Expr> OutIdx;
  ir::Expr Value;
  ir::Expr reads() const { return Kind == RowPhaseKind::Reduction ? Term : Value; }
};

/// A matched chain nest.
struct ChainNest {
  LoopRun Run;                                ///< the rows
  std::vector<const ir::AllocateNode *> Held; ///< the values per row, outermost first
  std::vector<RowPhase> Phases;
  ir::Expr Cols;                              ///< the row length C
  /// Whether Name is one of the values per row.
  bool holds(const std::string &Name) const;
};

/// The chain nest S, its column loops' variable renamed Col; none when S
/// is not one, with Why set where that deserves a remark (a chain the pass
/// cannot take) and empty where S is another kind of nest (a lone
/// reduction is reduce-rows').
std::optional<ChainNest> matchRowChain(const ir::Func &F, const ir::Stmt &S,
                                       const std::string &Col, std::string &Why);

} // namespace tdsl

#endif // TDSL_PASSES_ROWCHAINMATCH_H
