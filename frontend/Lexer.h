//===- Lexer.h - Tokens of a .tdsl buffer, produced one at a time ---------===//
//
// The lexer hands out tokens on demand (the parser needs one token of
// lookahead) so a 10 MB input never becomes a 10 MB token vector. Newlines
// are tokens because they end statements; the parser decides where they are
// insignificant (inside () and []). Malformed input (bad bytes, literals out
// of range) is reported here, and a usable token is still returned so the
// parser does not cascade.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_FRONTEND_LEXER_H
#define TDSL_FRONTEND_LEXER_H

#include "ir/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdint>
#include <string>

namespace tdsl {

enum class TokKind {
  Eof,
  Newline,
  Error, ///< Bytes that start no token; already reported by the lexer.
  Ident,
  Int,
  Float,
  KwKernel,
  KwSchedule,
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Semi,
  Arrow,
  Assign,      // =
  PlusAssign,  // +=
  StarAssign,  // *=
  MaxAssign,   // max=
  MinAssign,   // min=
  Plus,
  Minus,
  Star,
  Slash,
  Percent,
  Less,
  LessEq,
  Greater,
  GreaterEq,
  EqEq,
  NotEq,
  AndAnd,
  OrOr,
  Not,
  Question,
};

struct Token {
  TokKind Kind = TokKind::Eof;
  llvm::StringRef Text; ///< Points into the source buffer.
  int64_t IntValue = 0;
  double FloatValue = 0;

  bool is(TokKind K) const { return Kind == K; }
  llvm::SMLoc loc() const { return llvm::SMLoc::getFromPointer(Text.data()); }
  /// The location just past the token (for "expected X after Y").
  llvm::SMLoc endLoc() const {
    return llvm::SMLoc::getFromPointer(Text.data() + Text.size());
  }
};

/// "'foo'", "end of line", "end of file": how a diagnostic names a token.
/// Long spellings are shortened so one huge token cannot flood the output.
std::string describeToken(const Token &Tok);

class Lexer {
public:
  Lexer(llvm::SourceMgr &SM, unsigned BufferID, DiagEngine &Diags);

  /// The next token; Eof forever once the buffer is exhausted.
  Token next();

private:
  Token make(TokKind K, const char *Begin) const;
  Token lexNumber(const char *Begin);
  void skipSpaceAndComments();
  /// Reports a run of bytes that cannot start a token, once for the run.
  void reportInvalid(const char *Begin);

  DiagEngine &Diags;
  const char *Cur;
  const char *End;
};

} // namespace tdsl

#endif // TDSL_FRONTEND_LEXER_H
