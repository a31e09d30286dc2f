//===- Reference.h - Evaluates a checked kernel straight from its AST -----===//
//
// The second oracle: no lowering, no passes, no IR. Every statement is run
// over its whole index domain with float arithmetic in f64 and integer
// arithmetic exact (wrapping at i32 as the language defines); values are
// rounded only where the language says a value changes type: at stores to
// a tensor and at explicit casts. Whatever the pipeline does must agree with
// this within the dtype's tolerance.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_FRONTEND_REFERENCE_H
#define TDSL_FRONTEND_REFERENCE_H

#include "frontend/AST.h"
#include "ir/Interpreter.h"

#include <map>
#include <string>
#include <vector>

namespace tdsl {

/// Computes every output of K. Inputs holds each input (scalars with one
/// value) with values already rounded to their dtypes; the result maps
/// each output name to its data. Scales, if given, receives per output and
/// element the size of the terms its value was computed from: |value|
/// where nothing cancelled, more where terms cancelled (x * x - m * m, a
/// long sum of both signs) or a function carried a cancelled argument
/// (its derivative times what cancelled). A kernel computing in its own
/// dtypes rounds those terms, so its error is relative to that scale.
std::map<std::string, ir::TensorData>
evaluateReference(const ast::Kernel &K, const std::map<std::string, int64_t> &Sizes,
                  const std::map<std::string, ir::TensorData> &Inputs,
                  std::map<std::string, std::vector<double>> *Scales = nullptr);

} // namespace tdsl

#endif // TDSL_FRONTEND_REFERENCE_H
