//===- NumberScan.h - The decimal-literal scanner both lexers share -------===//
//
// The .tdsl lexer and the IR text lexer accept the same decimal literals
// (digits, an optional fraction, an optional exponent); only whether "1."
// (a dot with no digit after it) belongs to the number differs.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_NUMBERSCAN_H
#define TDSL_IR_NUMBERSCAN_H

namespace tdsl {

/// Scans the decimal literal starting at Cur (a digit, or a '.' followed by
/// one) and returns the end of it; IsFloat says whether it had a fraction or
/// an exponent. With BareDot, "1." is a float; without, the '.' is left.
inline const char *scanDecimal(const char *Cur, const char *End, bool BareDot,
                               bool &IsFloat) {
  auto IsDigit = [](char C) { return C >= '0' && C <= '9'; };
  IsFloat = false;
  while (Cur != End && IsDigit(*Cur))
    ++Cur;
  if (Cur != End && *Cur == '.' && (BareDot || (Cur + 1 != End && IsDigit(Cur[1])))) {
    IsFloat = true;
    ++Cur;
    while (Cur != End && IsDigit(*Cur))
      ++Cur;
  }
  if (Cur != End && (*Cur == 'e' || *Cur == 'E')) {
    const char *P = Cur + 1;
    if (P != End && (*P == '+' || *P == '-'))
      ++P;
    if (P != End && IsDigit(*P)) {
      IsFloat = true;
      Cur = P;
      while (Cur != End && IsDigit(*Cur))
        ++Cur;
    }
  }
  return Cur;
}

} // namespace tdsl

#endif // TDSL_IR_NUMBERSCAN_H
