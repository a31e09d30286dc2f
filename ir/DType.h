//===- DType.h - Scalar element types shared by the front end and the IR --===//
//
// One enum names every scalar type a .tdsl program or the loop IR can hold.
// The rounding helpers here define what a store to a narrow type means, so
// the interpreter, the reference evaluator and (later) the CUDA emitter agree
// bit for bit on f16, bf16 and tf32 values.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_DTYPE_H
#define TDSL_IR_DTYPE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace tdsl {

enum class DType : uint8_t {
  Bool, ///< Results of comparisons; never stored to a user tensor.
  I8,
  I32,
  I64, ///< Index arithmetic in the loop IR; not a .tdsl element type.
  F16,
  BF16,
  TF32, ///< An f32 value rounded to 10 mantissa bits; stored as f32.
  F32,
  F64,
};

/// The spelling used by both the .tdsl language and the IR text ("f16").
llvm::StringRef dtypeName(DType T);
/// Parses a dtype spelling; std::nullopt for anything else.
std::optional<DType> parseDType(llvm::StringRef Name);

bool isFloat(DType T);
bool isInteger(DType T); // Bool excluded.
/// Bytes one element occupies in memory (tf32 is stored as f32).
unsigned dtypeBytes(DType T);

/// The type arithmetic on a value of type T is performed in: f16, bf16 and
/// tf32 compute in f32; i8 and bool compute in i32 (as CUDA promotes them).
DType arithmeticType(DType T);

/// The common arithmetic type of two operands: f64 wins, then any float
/// (as f32), then i64, then i32.
DType promote(DType A, DType B);

/// Rounds X to the nearest value representable in a binary floating-point
/// format with MantBits explicit mantissa bits and ExpBits exponent bits,
/// ties to even, with subnormals, overflowing to infinity. NaN stays NaN.
double roundToFormat(double X, int MantBits, int ExpBits);
/// X rounded to tf32 (10 explicit mantissa bits, f32's exponent): to
/// nearest, ties away from zero.
double roundToTf32(float X);

/// The value X becomes when stored as (or converted to) type T:
/// floats round to nearest even, except tf32: to nearest, ties away from
/// zero, as the GPU's cvt.rna.tf32.f32 (roundToTf32); integers come from floats by
/// rounding to nearest even and saturating (NaN becomes 0), and from wider
/// integers by saturating. Bool becomes 0 or 1.
double convertValue(double X, DType From, DType To);
int64_t saturateInt(double X, DType To);

/// Bit encodings of the 16-bit float formats (for memory images).
uint16_t encodeF16(double X);
double decodeF16(uint16_t Bits);
uint16_t encodeBF16(double X);
double decodeBF16(uint16_t Bits);

/// The lowest and highest finite values of T (for max=/min= identities the
/// infinities are used instead where T is a float).
double dtypeLowest(DType T);
double dtypeHighest(DType T);

} // namespace tdsl

#endif // TDSL_IR_DTYPE_H
