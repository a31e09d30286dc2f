//===- Parser.cpp - Recursive-descent parser for .tdsl files --------------===//
#include "frontend/Parser.h"

using namespace tdsl::ast;

namespace tdsl {

namespace {
/// Counts one level of expression nesting for the lifetime of the scope.
class NestingScope {
public:
  explicit NestingScope(unsigned &Counter) : Counter(Counter) { ++Counter; }
  ~NestingScope() { --Counter; }
  NestingScope(const NestingScope &) = delete;
  NestingScope &operator=(const NestingScope &) = delete;

private:
  unsigned &Counter;
};
} // namespace

Parser::Parser(llvm::SourceMgr &SM, unsigned BufferID, DiagEngine &Diags)
    : SM(SM), BufferID(BufferID), Diags(Diags), Lex(SM, BufferID, Diags) {}

//===----------------------------------------------------------------------===//
// Token handling
//===----------------------------------------------------------------------===//

void Parser::consume() {
  Tok = Lex.next();
  while (BracketDepth > 0 && Tok.is(TokKind::Newline))
    Tok = Lex.next();
}

bool Parser::consumeIf(TokKind K) {
  if (!Tok.is(K))
    return false;
  consume();
  return true;
}

bool Parser::errorExpected(const char *What) {
  // An Error token was reported by the lexer, and a nesting overflow by
  // enterNesting: saying "expected ..." again would only add noise.
  if (Tok.is(TokKind::Error) || NestingExceeded)
    return false;
  Diags.error(Tok.loc(), llvm::Twine("expected ") + What + ", found " +
                             describeToken(Tok));
  return true;
}

bool Parser::expect(TokKind K, const char *What) {
  if (consumeIf(K))
    return true;
  errorExpected(What);
  return false;
}

void Parser::skipNewlines() {
  while (Tok.is(TokKind::Newline))
    consume();
}

llvm::SMLoc Parser::openBracket() {
  llvm::SMLoc Loc = Tok.loc();
  ++BracketDepth;
  consume();
  return Loc;
}

bool Parser::closeBracket(TokKind Close, const char *What, llvm::SMLoc OpenLoc) {
  if (!Tok.is(Close)) {
    // Newlines do not end a bracket, so the error may be lines below the
    // opening one: point there too.
    if (errorExpected(What))
      Diags.note(OpenLoc, Close == TokKind::RParen ? "to match this '('"
                                                   : "to match this '['");
    return false;
  }
  --BracketDepth;
  consume();
  return true;
}

bool Parser::tooManyErrors() const {
  return Diags.errorCount() >= DiagEngine::MaxErrors;
}

void Parser::recoverToStatementEnd() {
  // Brackets still open where the error happened keep newlines
  // insignificant until they close.
  unsigned Depth = BracketDepth;
  BracketDepth = 0;
  NestingExceeded = false;
  for (;;) {
    if (tooManyErrors())
      return;
    switch (Tok.Kind) {
    case TokKind::Eof:
    case TokKind::KwKernel:
    case TokKind::KwSchedule:
    case TokKind::RBrace: // braces never occur inside a statement
      return;
    case TokKind::Newline:
    case TokKind::Semi:
      if (Depth == 0) {
        consume();
        return;
      }
      break;
    case TokKind::LParen:
    case TokKind::LBracket:
      ++Depth;
      break;
    case TokKind::RParen:
    case TokKind::RBracket:
      if (Depth > 0)
        --Depth;
      break;
    default:
      break;
    }
    consume();
  }
}

void Parser::recoverToTopLevel() {
  BracketDepth = 0;
  NestingExceeded = false;
  // Stops *at* a keyword, which may be the token that broke a header
  // ("kernel kernel k(...)"); the top-level loop calls this only on other
  // tokens, so it always advances.
  while (!Tok.is(TokKind::Eof) && !Tok.is(TokKind::KwKernel) &&
         !Tok.is(TokKind::KwSchedule) && !tooManyErrors())
    consume();
}

bool Parser::enterNesting() {
  if (Nesting <= MaxExprNesting)
    return true;
  if (!NestingExceeded)
    Diags.error(Tok.loc(), "expression nested too deeply (the limit is " +
                               llvm::Twine(MaxExprNesting) + " levels)");
  NestingExceeded = true;
  return false;
}

//===----------------------------------------------------------------------===//
// Top level
//===----------------------------------------------------------------------===//

/// file ::= (kernel | schedule)*
std::unique_ptr<Module> Parser::parseModule() {
  auto M = std::make_unique<Module>();
  M->FileName = SM.getMemoryBuffer(BufferID)->getBufferIdentifier().str();
  consume();
  while (!tooManyErrors()) {
    if (Tok.is(TokKind::Newline) || Tok.is(TokKind::Semi)) {
      consume();
      continue;
    }
    if (Tok.is(TokKind::Eof))
      break;
    if (Tok.is(TokKind::KwKernel)) {
      if (auto K = parseKernel())
        M->Kernels.push_back(std::move(K));
      continue;
    }
    if (Tok.is(TokKind::KwSchedule)) {
      if (auto S = parseSchedule())
        M->Schedules.push_back(std::move(S));
      continue;
    }
    errorExpected("'kernel' or 'schedule'");
    recoverToTopLevel();
  }
  return M;
}

/// kernel ::= 'kernel' ID '(' params? ')' '->' '(' params ')' '{' stmt* '}'
std::unique_ptr<Kernel> Parser::parseKernel() {
  auto K = std::make_unique<Kernel>();
  K->Loc = Tok.loc();
  consume(); // 'kernel'
  auto Fail = [&]() -> std::unique_ptr<Kernel> {
    recoverToTopLevel();
    return nullptr;
  };

  if (!Tok.is(TokKind::Ident)) {
    errorExpected("a kernel name");
    return Fail();
  }
  K->Name = Tok.Text.str();
  consume();

  if (!Tok.is(TokKind::LParen)) {
    errorExpected("'(' to start the parameter list");
    return Fail();
  }
  llvm::SMLoc Open = openBracket();
  if (!Tok.is(TokKind::RParen) && !parseParams(K->Inputs, TensorRole::Input))
    return Fail();
  if (!closeBracket(TokKind::RParen, "',' or ')' after a parameter", Open))
    return Fail();

  skipNewlines();
  if (!expect(TokKind::Arrow, "'->' before the kernel's outputs"))
    return Fail();
  skipNewlines();
  if (!Tok.is(TokKind::LParen)) {
    errorExpected("'(' to start the output list");
    return Fail();
  }
  Open = openBracket();
  if (Tok.is(TokKind::RParen)) {
    Diags.error(Tok.loc(), "a kernel needs at least one output");
    return Fail();
  }
  if (!parseParams(K->Outputs, TensorRole::Output))
    return Fail();
  if (!closeBracket(TokKind::RParen, "',' or ')' after an output", Open))
    return Fail();

  skipNewlines();
  llvm::SMLoc BraceLoc = Tok.loc();
  if (!expect(TokKind::LBrace, "'{' to start the kernel body"))
    return Fail();

  while (!tooManyErrors()) {
    if (Tok.is(TokKind::Newline) || Tok.is(TokKind::Semi)) {
      consume();
      continue;
    }
    if (Tok.is(TokKind::RBrace)) {
      consume();
      return K;
    }
    if (Tok.is(TokKind::Eof) || Tok.is(TokKind::KwKernel) ||
        Tok.is(TokKind::KwSchedule)) {
      if (errorExpected("'}' at the end of the kernel body"))
        Diags.note(BraceLoc, "the body of kernel '" + K->Name + "' starts here");
      return K;
    }
    if (auto S = parseStmt())
      K->Body.push_back(std::move(S));
    else
      recoverToStatementEnd();
  }
  return K;
}

/// params ::= param (',' param)*
bool Parser::parseParams(std::vector<std::unique_ptr<Tensor>> &Out, TensorRole Role) {
  do {
    auto P = parseParam(Role);
    if (!P)
      return false;
    Out.push_back(std::move(P));
  } while (consumeIf(TokKind::Comma));
  return true;
}

/// param ::= ID ':' DTYPE ('[' dim (',' dim)* ']')?
std::unique_ptr<Tensor> Parser::parseParam(TensorRole Role) {
  if (!Tok.is(TokKind::Ident)) {
    errorExpected(Role == TensorRole::Input ? "a parameter name" : "an output name");
    return nullptr;
  }
  auto T = std::make_unique<Tensor>();
  T->Name = Tok.Text.str();
  T->Loc = Tok.loc();
  T->Role = Role;
  consume();
  if (!expect(TokKind::Colon, "':' and a dtype after the name"))
    return nullptr;
  if (!parseDType(T->Type))
    return nullptr;
  if (Tok.is(TokKind::LBracket) && !parseDims(*T))
    return nullptr;
  return T;
}

/// dims ::= '[' dim (',' dim)* ']'
/// dim  ::= expr        (sema requires it to be affine in size symbols)
bool Parser::parseDims(Tensor &T) {
  llvm::SMLoc Open = openBracket();
  do {
    Dim D;
    D.Written = parseExpr();
    if (!D.Written)
      return false;
    T.Dims.push_back(std::move(D));
  } while (consumeIf(TokKind::Comma));
  return closeBracket(TokKind::RBracket, "',' or ']' after a dimension", Open);
}

/// The dtypes a tensor may have: bool, i64 and tf32 exist in the IR but
/// are not tensor dtypes of the language.
static std::optional<DType> tensorDType(llvm::StringRef Name) {
  std::optional<DType> T = parseDType(Name);
  if (!T || *T == DType::Bool || *T == DType::I64 || *T == DType::TF32)
    return std::nullopt;
  return T;
}

/// DTYPE ::= 'f32' | 'f16' | 'bf16' | 'i8' | 'i32' | 'f64'
bool Parser::parseDType(DType &Out) {
  if (!Tok.is(TokKind::Ident)) {
    errorExpected("a dtype");
    return false;
  }
  std::optional<DType> T = tensorDType(Tok.Text);
  if (T) {
    Out = *T;
  } else {
    // The spelling is wrong but the structure is fine: keep parsing.
    std::string Msg = "unknown dtype " + describeToken(Tok) +
                      " (expected f32, f16, bf16, i8, i32 or f64)";
    if (Tok.Text == "tf32")
      Msg += "; tf32 is not a tensor dtype, only a cast: tf32(x)";
    Diags.error(Tok.loc(), Msg);
    Out = DType::F32;
  }
  consume();
  return true;
}


//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

/// stmt ::= ID ('[' expr (',' expr)* ']')? (':' DTYPE)? OP expr
/// A statement ends at a newline, a ';', or before the body's '}'.
std::unique_ptr<Stmt> Parser::parseStmt() {
  if (!Tok.is(TokKind::Ident)) {
    errorExpected("a statement");
    return nullptr;
  }
  auto S = std::make_unique<Stmt>();
  S->Loc = S->TargetLoc = Tok.loc();
  S->TargetName = Tok.Text.str();
  consume();

  if (Tok.is(TokKind::LBracket)) {
    llvm::SMLoc Open = openBracket();
    if (!parseExprList(TokKind::RBracket, S->LhsIndices,
                       "',' or ']' after a subscript", Open))
      return nullptr;
  }
  if (consumeIf(TokKind::Colon)) {
    S->AnnotationLoc = Tok.loc();
    DType T;
    if (!parseDType(T))
      return nullptr;
    S->Annotation = T;
  }

  if (!parseAssignOp(S->Op))
    return nullptr;

  S->Value = parseExpr();
  if (!S->Value)
    return nullptr;

  if (Tok.is(TokKind::Newline) || Tok.is(TokKind::Semi))
    consume();
  else if (!Tok.is(TokKind::RBrace) && !Tok.is(TokKind::Eof)) {
    errorExpected("the end of the statement (a newline or ';')");
    return nullptr;
  }
  return S;
}

/// OP ::= '=' | '+=' | '*=' | 'max=' | 'min='
bool Parser::parseAssignOp(AssignOp &Op) {
  switch (Tok.Kind) {
  case TokKind::Assign: Op = AssignOp::Assign; break;
  case TokKind::PlusAssign: Op = AssignOp::Add; break;
  case TokKind::StarAssign: Op = AssignOp::Mul; break;
  case TokKind::MaxAssign: Op = AssignOp::Max; break;
  case TokKind::MinAssign: Op = AssignOp::Min; break;
  default:
    errorExpected("'=', '+=', '*=', 'max=' or 'min='");
    return false;
  }
  consume();
  return true;
}

//===----------------------------------------------------------------------===//
// Schedules
//===----------------------------------------------------------------------===//

/// schedule ::= 'schedule' ID '{' (entry? (NEWLINE | ';'))* '}'
std::unique_ptr<Schedule> Parser::parseSchedule() {
  auto S = std::make_unique<Schedule>();
  consume(); // 'schedule'
  if (!Tok.is(TokKind::Ident)) {
    errorExpected("the name of the kernel to schedule");
    recoverToTopLevel();
    return nullptr;
  }
  S->KernelName = Tok.Text.str();
  S->Loc = Tok.loc();
  consume();
  skipNewlines();
  llvm::SMLoc BraceLoc = Tok.loc();
  if (!expect(TokKind::LBrace, "'{' to start the schedule")) {
    recoverToTopLevel();
    return nullptr;
  }
  while (!tooManyErrors()) {
    if (Tok.is(TokKind::Newline) || Tok.is(TokKind::Semi)) {
      consume();
      continue;
    }
    if (Tok.is(TokKind::RBrace)) {
      consume();
      return S;
    }
    if (Tok.is(TokKind::Eof) || Tok.is(TokKind::KwKernel) ||
        Tok.is(TokKind::KwSchedule)) {
      if (errorExpected("'}' at the end of the schedule"))
        Diags.note(BraceLoc, "the schedule starts here");
      return S;
    }
    if (!parseScheduleEntry(*S))
      recoverToStatementEnd();
  }
  return S;
}

/// entry ::= ID '=' value
bool Parser::parseScheduleEntry(Schedule &S) {
  if (!Tok.is(TokKind::Ident)) {
    errorExpected("a schedule entry (name = value)");
    return false;
  }
  ScheduleEntry E;
  E.Key = Tok.Text.str();
  E.Loc = Tok.loc();
  consume();
  if (!expect(TokKind::Assign, "'=' after the schedule entry's name") ||
      !parseScheduleValue(E))
    return false;

  if (Tok.is(TokKind::Newline) || Tok.is(TokKind::Semi))
    consume();
  else if (!Tok.is(TokKind::RBrace) && !Tok.is(TokKind::Eof)) {
    errorExpected("the end of the entry (a newline or ';')");
    return false;
  }
  S.Entries.push_back(std::move(E));
  return true;
}

/// value ::= INT | '[' INT (',' INT)* ']' | ID
bool Parser::parseScheduleValue(ScheduleEntry &E) {
  if (Tok.is(TokKind::Int)) {
    E.Ints.push_back(Tok.IntValue);
    consume();
    return true;
  }
  if (Tok.is(TokKind::Ident)) {
    E.Word = Tok.Text.str();
    consume();
    return true;
  }
  if (!Tok.is(TokKind::LBracket)) {
    errorExpected("a value (an integer, a list [a, b, ...] or a word)");
    return false;
  }
  llvm::SMLoc Open = openBracket();
  E.IsList = true;
  do {
    if (!Tok.is(TokKind::Int)) {
      errorExpected("an integer");
      return false;
    }
    E.Ints.push_back(Tok.IntValue);
    consume();
  } while (consumeIf(TokKind::Comma));
  return closeBracket(TokKind::RBracket, "',' or ']' in the list", Open);
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// expr ::= ternary
ExprPtr Parser::parseExpr() {
  NestingScope Level(Nesting);
  if (!enterNesting())
    return nullptr;
  return parseTernary();
}

/// ternary ::= binary ('?' expr ':' expr)?
ExprPtr Parser::parseTernary() {
  ExprPtr Cond = parseBinary(1);
  if (!Cond || !Tok.is(TokKind::Question))
    return Cond;
  llvm::SMLoc Loc = Tok.loc();
  consume();
  ExprPtr Then = parseExpr();
  if (!Then)
    return nullptr;
  if (!expect(TokKind::Colon, "':' in the conditional expression"))
    return nullptr;
  // Right-associative: "a ? b : c ? d : e" nests in the else branch.
  ExprPtr Else = parseExpr();
  if (!Else)
    return nullptr;
  return std::make_unique<Select>(Loc, std::move(Cond), std::move(Then),
                                  std::move(Else));
}

/// Precedence of a binary operator token (0: not one).
static unsigned binaryPrecedence(TokKind K, BinaryOp &Op) {
  switch (K) {
  case TokKind::OrOr: Op = BinaryOp::Or; return 1;
  case TokKind::AndAnd: Op = BinaryOp::And; return 2;
  case TokKind::EqEq: Op = BinaryOp::Eq; return 3;
  case TokKind::NotEq: Op = BinaryOp::Ne; return 3;
  case TokKind::Less: Op = BinaryOp::Lt; return 4;
  case TokKind::LessEq: Op = BinaryOp::Le; return 4;
  case TokKind::Greater: Op = BinaryOp::Gt; return 4;
  case TokKind::GreaterEq: Op = BinaryOp::Ge; return 4;
  case TokKind::Plus: Op = BinaryOp::Add; return 5;
  case TokKind::Minus: Op = BinaryOp::Sub; return 5;
  case TokKind::Star: Op = BinaryOp::Mul; return 6;
  case TokKind::Slash: Op = BinaryOp::Div; return 6;
  case TokKind::Percent: Op = BinaryOp::Mod; return 6;
  default: return 0;
  }
}

/// binary(p) ::= unary (BINOP(q) binary(q + 1))*     for each q >= p
///   precedence q: '||' 1, '&&' 2, '==' '!=' 3, '<' '<=' '>' '>=' 4,
///                 '+' '-' 5, '*' '/' '%' 6; all left-associative
ExprPtr Parser::parseBinary(unsigned MinPrec) {
  ExprPtr LHS = parseUnary();
  if (!LHS)
    return nullptr;
  // Each operator of a chain "a + b + c" deepens the (left-leaning) tree by
  // one, so it counts as a nesting level like a parenthesis does.
  unsigned ChainLevels = 0;
  ExprPtr Result;
  for (;;) {
    BinaryOp Op;
    unsigned Prec = binaryPrecedence(Tok.Kind, Op);
    if (Prec == 0 || Prec < MinPrec) {
      Result = std::move(LHS);
      break;
    }
    ++Nesting;
    ++ChainLevels;
    if (!enterNesting())
      break;
    llvm::SMLoc OpLoc = Tok.loc();
    consume();
    ExprPtr RHS = parseBinary(Prec + 1);
    if (!RHS)
      break;
    LHS = std::make_unique<Binary>(OpLoc, Op, std::move(LHS), std::move(RHS));
  }
  Nesting -= ChainLevels;
  return Result;
}

/// unary ::= ('-' | '!') unary | primary
ExprPtr Parser::parseUnary() {
  if (!Tok.is(TokKind::Minus) && !Tok.is(TokKind::Not))
    return parsePrimary();
  NestingScope Level(Nesting);
  if (!enterNesting())
    return nullptr;
  llvm::SMLoc Loc = Tok.loc();
  UnaryOp Op = Tok.is(TokKind::Minus) ? UnaryOp::Neg : UnaryOp::Not;
  consume();
  ExprPtr Operand = parseUnary();
  if (!Operand)
    return nullptr;
  return std::make_unique<Unary>(Loc, Op, std::move(Operand));
}

/// primary ::= INT | FLOAT | ID | ID '[' exprs ']' | ID '(' exprs? ')'
///           | '(' expr ')'
ExprPtr Parser::parsePrimary() {
  llvm::SMLoc Loc = Tok.loc();
  switch (Tok.Kind) {
  case TokKind::Int: {
    auto E = std::make_unique<IntLit>(Loc, Tok.IntValue);
    consume();
    return E;
  }
  case TokKind::Float: {
    auto E = std::make_unique<FloatLit>(Loc, Tok.FloatValue);
    consume();
    return E;
  }
  case TokKind::LParen: {
    llvm::SMLoc Open = openBracket();
    ExprPtr E = parseExpr();
    if (!E || !closeBracket(TokKind::RParen, "')'", Open))
      return nullptr;
    return E;
  }
  case TokKind::Ident:
    break;
  default:
    errorExpected("an expression");
    return nullptr;
  }

  std::string Id = Tok.Text.str();
  consume();
  if (Tok.is(TokKind::LBracket)) {
    auto A = std::make_unique<Access>(Loc, std::move(Id));
    llvm::SMLoc Open = openBracket();
    if (!parseExprList(TokKind::RBracket, A->Subscripts,
                       "',' or ']' after a subscript", Open))
      return nullptr;
    return A;
  }
  if (Tok.is(TokKind::LParen)) {
    auto C = std::make_unique<Call>(Loc, std::move(Id));
    llvm::SMLoc Open = openBracket();
    if (consumeIfClosing(TokKind::RParen))
      return C;
    if (!parseExprList(TokKind::RParen, C->Args, "',' or ')' after an argument",
                       Open))
      return nullptr;
    return C;
  }
  return std::make_unique<Name>(Loc, std::move(Id));
}

/// exprs ::= expr (',' expr)*      followed by the closing bracket
bool Parser::parseExprList(TokKind Close, std::vector<ExprPtr> &Out,
                           const char *ExpectedClose, llvm::SMLoc OpenLoc) {
  do {
    ExprPtr E = parseExpr();
    if (!E)
      return false;
    Out.push_back(std::move(E));
  } while (consumeIf(TokKind::Comma));
  return closeBracket(Close, ExpectedClose, OpenLoc);
}

bool Parser::consumeIfClosing(TokKind Close) {
  if (!Tok.is(Close))
    return false;
  --BracketDepth;
  consume();
  return true;
}

} // namespace tdsl
