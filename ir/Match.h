//===- Match.h - Structural matchers shared by passes and the backend -----===//
//
// A pass that marks a shape of IR and the backend that emits it must agree
// on what the shape is; each such matcher lives here, once.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_MATCH_H
#define TDSL_IR_MATCH_H

#include "ir/IR.h"

namespace tdsl::ir {

/// S without the blocks of one statement around it.
Stmt stripBlocks(Stmt S);

/// The copy of a loop the backend can emit as one wide access: its body
/// is one store of a load, of 8 or 16 bytes in all (4-byte elements,
/// extent 2 or 4; 2-byte elements, extent 4 or 8), or 4, 8 or 16 1-byte
/// elements; the extent in Width, min 0. Null otherwise.
const StoreNode *vectorCopy(const ForNode &N, int64_t &Width);

/// The last knob called Key in Knobs (later entries win), or null.
const Knob *findKnob(const std::vector<Knob> &Knobs, llvm::StringRef Key);

} // namespace tdsl::ir

#endif // TDSL_IR_MATCH_H
