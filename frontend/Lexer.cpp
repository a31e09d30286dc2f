//===- Lexer.cpp - Tokens of a .tdsl buffer -------------------------------===//
#include "frontend/Lexer.h"
#include "ir/NumberScan.h"

#include <cmath>
#include <cstdlib>

namespace tdsl {

// Longer token spellings are cut in diagnostics: a 10 MB identifier must not
// become a 10 MB error message.
static constexpr size_t MaxQuotedLength = 40;

static bool isIdentStart(char C) {
  return (C >= 'a' && C <= 'z') || (C >= 'A' && C <= 'Z') || C == '_';
}
static bool isDigit(char C) { return C >= '0' && C <= '9'; }
static bool isIdentChar(char C) { return isIdentStart(C) || isDigit(C); }
static bool isHorizontalSpace(char C) {
  return C == ' ' || C == '\t' || C == '\r' || C == '\f' || C == '\v';
}

std::string describeToken(const Token &Tok) {
  switch (Tok.Kind) {
  case TokKind::Eof:
    return "end of file";
  case TokKind::Newline:
    return "end of line";
  default:
    break;
  }
  if (Tok.Text.size() > MaxQuotedLength)
    return "'" + Tok.Text.take_front(MaxQuotedLength).str() + "...'";
  return "'" + Tok.Text.str() + "'";
}

Lexer::Lexer(llvm::SourceMgr &SM, unsigned BufferID, DiagEngine &Diags)
    : Diags(Diags) {
  const llvm::MemoryBuffer *Buf = SM.getMemoryBuffer(BufferID);
  Cur = Buf->getBufferStart();
  End = Buf->getBufferEnd();
}

Token Lexer::make(TokKind K, const char *Begin) const {
  Token T;
  T.Kind = K;
  T.Text = llvm::StringRef(Begin, Cur - Begin);
  return T;
}

void Lexer::skipSpaceAndComments() {
  while (Cur != End) {
    char C = *Cur;
    if (isHorizontalSpace(C)) {
      ++Cur;
      continue;
    }
    // Comments may hold any bytes (prose, UTF-8, "A @ B"): only the newline
    // ends them.
    if (C == '#' || (C == '/' && Cur + 1 != End && Cur[1] == '/')) {
      while (Cur != End && *Cur != '\n')
        ++Cur;
      continue;
    }
    return;
  }
}

void Lexer::reportInvalid(const char *Begin) {
  unsigned char C = static_cast<unsigned char>(*Begin);
  if (C >= 0x20 && C < 0x7f) {
    std::string Msg = std::string("invalid character '") + static_cast<char>(C) + "'";
    if (C == '&' || C == '|')
      Msg += std::string("; did you mean '") + static_cast<char>(C) +
             static_cast<char>(C) + "'?";
    Diags.error(llvm::SMLoc::getFromPointer(Begin), Msg);
    Cur = Begin + 1;
    return;
  }
  // Non-ASCII or control bytes: one error for the whole run (a UTF-8
  // character or a block of binary data), not one per byte.
  static const char Hex[] = "0123456789abcdef";
  std::string Msg = "invalid character (byte 0x";
  Msg += Hex[C >> 4];
  Msg += Hex[C & 15];
  Msg += ") outside a comment";
  Diags.error(llvm::SMLoc::getFromPointer(Begin), Msg);
  Cur = Begin + 1;
  while (Cur != End) {
    unsigned char D = static_cast<unsigned char>(*Cur);
    bool Bad = (D < 0x20 && D != '\n' && !isHorizontalSpace(static_cast<char>(D))) ||
               D >= 0x7f;
    if (!Bad)
      break;
    ++Cur;
  }
}

Token Lexer::lexNumber(const char *Begin) {
  bool IsFloat;
  Cur = scanDecimal(Cur, End, /*BareDot=*/true, IsFloat);
  Token Tok = make(IsFloat ? TokKind::Float : TokKind::Int, Begin);

  if (Cur != End && isIdentChar(*Cur)) {
    const char *SuffixBegin = Cur;
    while (Cur != End && isIdentChar(*Cur))
      ++Cur;
    Token Suffix = make(TokKind::Ident, SuffixBegin);
    Diags.error(Suffix.loc(),
                "invalid suffix " + describeToken(Suffix) + " on numeric literal");
    return Tok; // The number itself is still usable.
  }

  if (!IsFloat) {
    int64_t V = 0;
    for (char C : Tok.Text) {
      V = V * 10 + (C - '0');
      if (V > INT32_MAX) {
        Diags.error(Tok.loc(),
                    "integer literal out of range (the largest is 2147483647)");
        V = 0;
        break;
      }
    }
    Tok.IntValue = V;
    return Tok;
  }

  std::string Spelling = Tok.Text.str();
  double V = std::strtod(Spelling.c_str(), nullptr);
  if (std::isinf(V)) {
    Diags.error(Tok.loc(), "floating-point literal out of range");
    V = 0;
  }
  Tok.FloatValue = V;
  return Tok;
}

Token Lexer::next() {
  skipSpaceAndComments();
  const char *Begin = Cur;
  if (Cur == End)
    return make(TokKind::Eof, Begin);

  char C = *Cur++;
  auto Follows = [&](char Next) {
    if (Cur != End && *Cur == Next) {
      ++Cur;
      return true;
    }
    return false;
  };

  if (isIdentStart(C)) {
    while (Cur != End && isIdentChar(*Cur))
      ++Cur;
    llvm::StringRef Word(Begin, Cur - Begin);
    // "max=" and "min=" are one token only when the '=' is not part of
    // "==": "max==x" stays a comparison.
    if ((Word == "max" || Word == "min") && Cur != End && *Cur == '=' &&
        !(Cur + 1 != End && Cur[1] == '=')) {
      ++Cur;
      return make(Word == "max" ? TokKind::MaxAssign : TokKind::MinAssign, Begin);
    }
    if (Word == "kernel")
      return make(TokKind::KwKernel, Begin);
    if (Word == "schedule")
      return make(TokKind::KwSchedule, Begin);
    return make(TokKind::Ident, Begin);
  }
  if (isDigit(C) || (C == '.' && Cur != End && isDigit(*Cur))) {
    Cur = Begin;
    return lexNumber(Begin);
  }

  switch (C) {
  case '\n': return make(TokKind::Newline, Begin);
  case '(': return make(TokKind::LParen, Begin);
  case ')': return make(TokKind::RParen, Begin);
  case '[': return make(TokKind::LBracket, Begin);
  case ']': return make(TokKind::RBracket, Begin);
  case '{': return make(TokKind::LBrace, Begin);
  case '}': return make(TokKind::RBrace, Begin);
  case ',': return make(TokKind::Comma, Begin);
  case ':': return make(TokKind::Colon, Begin);
  case ';': return make(TokKind::Semi, Begin);
  case '?': return make(TokKind::Question, Begin);
  case '%': return make(TokKind::Percent, Begin);
  case '/': return make(TokKind::Slash, Begin);
  case '+':
    return make(Follows('=') ? TokKind::PlusAssign : TokKind::Plus, Begin);
  case '*':
    return make(Follows('=') ? TokKind::StarAssign : TokKind::Star, Begin);
  case '-':
    return make(Follows('>') ? TokKind::Arrow : TokKind::Minus, Begin);
  case '=':
    return make(Follows('=') ? TokKind::EqEq : TokKind::Assign, Begin);
  case '!':
    return make(Follows('=') ? TokKind::NotEq : TokKind::Not, Begin);
  case '<':
    return make(Follows('=') ? TokKind::LessEq : TokKind::Less, Begin);
  case '>':
    return make(Follows('=') ? TokKind::GreaterEq : TokKind::Greater, Begin);
  case '&':
    if (Follows('&'))
      return make(TokKind::AndAnd, Begin);
    break;
  case '|':
    if (Follows('|'))
      return make(TokKind::OrOr, Begin);
    break;
  default:
    break;
  }
  reportInvalid(Begin);
  return make(TokKind::Error, Begin);
}

} // namespace tdsl
