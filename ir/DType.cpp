//===- DType.cpp - Scalar element types and their rounding ----------------===//
#include "ir/DType.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tdsl {

llvm::StringRef dtypeName(DType T) {
  switch (T) {
  case DType::Bool: return "bool";
  case DType::I8: return "i8";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::TF32: return "tf32";
  case DType::F32: return "f32";
  case DType::F64: return "f64";
  }
  return "?";
}

std::optional<DType> parseDType(llvm::StringRef Name) {
  for (DType T : {DType::Bool, DType::I8, DType::I32, DType::I64, DType::F16,
                  DType::BF16, DType::TF32, DType::F32, DType::F64})
    if (Name == dtypeName(T))
      return T;
  return std::nullopt;
}

bool isFloat(DType T) {
  return T == DType::F16 || T == DType::BF16 || T == DType::TF32 ||
         T == DType::F32 || T == DType::F64;
}

bool isInteger(DType T) {
  return T == DType::I8 || T == DType::I32 || T == DType::I64;
}

unsigned dtypeBytes(DType T) {
  switch (T) {
  case DType::Bool:
  case DType::I8: return 1;
  case DType::F16:
  case DType::BF16: return 2;
  case DType::I32:
  case DType::TF32:
  case DType::F32: return 4;
  case DType::I64:
  case DType::F64: return 8;
  }
  return 0;
}

DType arithmeticType(DType T) {
  switch (T) {
  case DType::F16:
  case DType::BF16:
  case DType::TF32: return DType::F32;
  case DType::Bool:
  case DType::I8: return DType::I32;
  default: return T;
  }
}

DType promote(DType A, DType B) {
  A = arithmeticType(A);
  B = arithmeticType(B);
  if (A == DType::F64 || B == DType::F64)
    return DType::F64;
  if (isFloat(A) || isFloat(B))
    return DType::F32;
  if (A == DType::I64 || B == DType::I64)
    return DType::I64;
  return DType::I32;
}

double roundToFormat(double X, int MantBits, int ExpBits) {
  if (std::isnan(X) || std::isinf(X) || X == 0.0)
    return X;
  const int Bias = (1 << (ExpBits - 1)) - 1;
  const int MinExp = 1 - Bias; // exponent of the smallest normal
  int E;
  std::frexp(X, &E); // X = f * 2^E with f in [0.5, 1)
  int Exp = E - 1;   // X = g * 2^Exp with g in [1, 2)
  if (Exp < MinExp)
    Exp = MinExp; // subnormal: fixed quantum
  // Quantum (ulp) at this exponent; scaling by a power of two is exact.
  double Scaled = std::ldexp(X, MantBits - Exp);
  double Rounded = std::nearbyint(Scaled); // ties to even (default mode)
  double R = std::ldexp(Rounded, Exp - MantBits);
  double MaxFinite =
      std::ldexp(2.0 - std::ldexp(1.0, -MantBits), (1 << (ExpBits - 1)) - 1);
  if (std::fabs(R) > MaxFinite)
    return std::copysign(std::numeric_limits<double>::infinity(), X);
  return R;
}

/// To nearest, ties away from zero, on the f32 bits (cvt.rna.tf32.f32, as
/// the tensor-core libraries round): half an ulp of tf32 added to the
/// magnitude, the 13 low bits dropped. Infinities and NaNs stay; a carry
/// out of the largest exponent gives infinity.
double roundToTf32(float X) {
  if (!std::isfinite(X))
    return X;
  uint32_t U;
  std::memcpy(&U, &X, 4);
  U = (U + 0x1000u) & 0xffffe000u;
  float R;
  std::memcpy(&R, &U, 4);
  return R;
}

double dtypeLowest(DType T) {
  switch (T) {
  case DType::Bool: return 0;
  case DType::I8: return -128;
  case DType::I32: return -2147483648.0;
  case DType::I64: return -9223372036854775808.0;
  case DType::F16: return -65504.0;
  case DType::BF16: return -roundToFormat(3.4028234663852886e38, 7, 8);
  case DType::TF32:
  case DType::F32: return -static_cast<double>(std::numeric_limits<float>::max());
  case DType::F64: return -std::numeric_limits<double>::max();
  }
  return 0;
}

double dtypeHighest(DType T) {
  switch (T) {
  case DType::Bool: return 1;
  case DType::I8: return 127;
  case DType::I32: return 2147483647.0;
  case DType::I64: return 9223372036854775807.0;
  default: return -dtypeLowest(T);
  }
}

int64_t saturateInt(double X, DType To) {
  if (std::isnan(X))
    return 0;
  double R = std::nearbyint(X);
  if (To == DType::I64) {
    if (R >= 9223372036854775807.0)
      return std::numeric_limits<int64_t>::max();
    if (R <= -9223372036854775808.0)
      return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(R);
  }
  double Lo = dtypeLowest(To), Hi = dtypeHighest(To);
  if (R < Lo)
    R = Lo;
  if (R > Hi)
    R = Hi;
  return static_cast<int64_t>(R);
}

double convertValue(double X, DType From, DType To) {
  (void)From;
  switch (To) {
  case DType::Bool: return X != 0.0 ? 1.0 : 0.0;
  case DType::I8:
  case DType::I32:
  case DType::I64: return static_cast<double>(saturateInt(X, To));
  case DType::F16: return roundToFormat(X, 10, 5);
  case DType::BF16: return roundToFormat(X, 7, 8);
  case DType::TF32: return roundToTf32(static_cast<float>(X));
  case DType::F32: return static_cast<double>(static_cast<float>(X));
  case DType::F64: return X;
  }
  return X;
}

static uint16_t encodeSmallFloat(double X, int MantBits, int ExpBits) {
  double R = roundToFormat(X, MantBits, ExpBits);
  uint16_t Sign = std::signbit(R) ? 1u << 15 : 0u;
  const int Bias = (1 << (ExpBits - 1)) - 1;
  const uint16_t ExpMask = static_cast<uint16_t>((1u << ExpBits) - 1);
  if (std::isnan(R))
    return static_cast<uint16_t>(Sign | (ExpMask << MantBits) |
                                 (1u << (MantBits - 1)));
  if (std::isinf(R))
    return static_cast<uint16_t>(Sign | (ExpMask << MantBits));
  double A = std::fabs(R);
  if (A == 0.0)
    return Sign;
  int E;
  std::frexp(A, &E);
  int Exp = E - 1;
  if (Exp < 1 - Bias) // subnormal
    return static_cast<uint16_t>(
        Sign | static_cast<uint16_t>(std::ldexp(A, Bias - 1 + MantBits)));
  uint16_t Mant = static_cast<uint16_t>(
      std::ldexp(A, MantBits - Exp) - std::ldexp(1.0, MantBits));
  return static_cast<uint16_t>(Sign | ((Exp + Bias) << MantBits) | Mant);
}

static double decodeSmallFloat(uint16_t Bits, int MantBits, int ExpBits) {
  const int Bias = (1 << (ExpBits - 1)) - 1;
  bool Neg = Bits >> 15;
  int Exp = (Bits >> MantBits) & ((1 << ExpBits) - 1);
  int Mant = Bits & ((1 << MantBits) - 1);
  double V;
  if (Exp == (1 << ExpBits) - 1)
    V = Mant ? std::numeric_limits<double>::quiet_NaN()
             : std::numeric_limits<double>::infinity();
  else if (Exp == 0)
    V = std::ldexp(Mant, 1 - Bias - MantBits);
  else
    V = std::ldexp(Mant + (1 << MantBits), Exp - Bias - MantBits);
  return Neg ? -V : V;
}

uint16_t encodeF16(double X) { return encodeSmallFloat(X, 10, 5); }
double decodeF16(uint16_t Bits) { return decodeSmallFloat(Bits, 10, 5); }
uint16_t encodeBF16(double X) { return encodeSmallFloat(X, 7, 8); }
double decodeBF16(uint16_t Bits) { return decodeSmallFloat(Bits, 7, 8); }

} // namespace tdsl
