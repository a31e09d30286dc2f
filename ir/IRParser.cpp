//===- IRParser.cpp - Recursive-descent parser of the loop IR text --------===//
//
// One function per grammar rule of ir/IR.md. The parser stops at the first
// error: IR text is written by tools and by test authors, and one precise
// message serves both better than a cascade.
//
// Semantic checks here are the ones that need names and locations (unknown
// buffer or variable, subscript count, operand types of one operator,
// intrinsic arity, dtype/kind/scope spellings); everything else is left to
// the verifier so that lit tests can feed it invalid-but-parseable IR.
//
//===----------------------------------------------------------------------===//
#include "ir/IRParser.h"
#include "ir/NumberScan.h"

#include "ir/TextForm.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace tdsl::ir {

namespace {

/// Deeper nesting (of statements, or of expression trees) is an error: the
/// printer, the verifier and every pass recurse over the tree.
constexpr unsigned MaxNestingDepth = 256;

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

enum class Tok {
  Eof, Error, Ident, Int, Float, String,
  LParen, RParen, LBracket, RBracket, LBrace, RBrace,
  Lt, Gt, Le, Ge, EqEq, Ne, Assign, Comma, Colon, Question, At,
  Plus, Minus, Star, Slash, Percent, Bang, AndAnd, OrOr, DotDot, Dot,
};

struct Token {
  Tok Kind = Tok::Eof;
  llvm::StringRef Text;   ///< the whole token; for numbers without suffix
  llvm::StringRef Suffix; ///< "i32" of "2_i32" (numbers only)
  /// "$exp": a name spelled like a reserved word, escaped by the printer;
  /// Text holds the name without the '$' and it is never a keyword.
  bool Escaped = false;
  llvm::SMLoc loc() const { return llvm::SMLoc::getFromPointer(Text.data()); }
};

bool isIdentStart(char C) {
  return (C >= 'a' && C <= 'z') || (C >= 'A' && C <= 'Z') || C == '_';
}
bool isDigit(char C) { return C >= '0' && C <= '9'; }
bool isIdentChar(char C) { return isIdentStart(C) || isDigit(C); }

class Lexer {
public:
  Lexer(const char *Begin, const char *End) : Cur(Begin), End(End) {}

  Token lex() {
    skipSpaceAndComments();
    Token T;
    const char *Start = Cur;
    if (Cur == End) {
      T.Text = llvm::StringRef(Cur, 0);
      return T;
    }
    char C = *Cur;
    if (C == '$' && Cur + 1 < End && isIdentStart(Cur[1])) {
      const char *NameStart = ++Cur;
      while (Cur != End && isIdentChar(*Cur))
        ++Cur;
      Token T = make(Tok::Ident, NameStart);
      T.Escaped = true;
      return T;
    }
    if (isIdentStart(C)) {
      while (Cur != End && isIdentChar(*Cur))
        ++Cur;
      return make(Tok::Ident, Start);
    }
    if (isDigit(C))
      return lexNumber();
    if (C == '"')
      return lexString();
    ++Cur;
    auto Two = [&](char Next, Tok K2, Tok K1) {
      if (Cur != End && *Cur == Next) {
        ++Cur;
        return make(K2, Start);
      }
      return make(K1, Start);
    };
    switch (C) {
    case '(': return make(Tok::LParen, Start);
    case ')': return make(Tok::RParen, Start);
    case '[': return make(Tok::LBracket, Start);
    case ']': return make(Tok::RBracket, Start);
    case '{': return make(Tok::LBrace, Start);
    case '}': return make(Tok::RBrace, Start);
    case ',': return make(Tok::Comma, Start);
    case ':': return make(Tok::Colon, Start);
    case '?': return make(Tok::Question, Start);
    case '@': return make(Tok::At, Start);
    case '+': return make(Tok::Plus, Start);
    case '-': return make(Tok::Minus, Start);
    case '*': return make(Tok::Star, Start);
    case '/': return make(Tok::Slash, Start);
    case '%': return make(Tok::Percent, Start);
    case '<': return Two('=', Tok::Le, Tok::Lt);
    case '>': return Two('=', Tok::Ge, Tok::Gt);
    case '=': return Two('=', Tok::EqEq, Tok::Assign);
    case '!': return Two('=', Tok::Ne, Tok::Bang);
    case '.': return Two('.', Tok::DotDot, Tok::Dot);
    case '&': return Two('&', Tok::AndAnd, Tok::Error);
    case '|': return Two('|', Tok::OrOr, Tok::Error);
    default: return make(Tok::Error, Start);
    }
  }

private:
  const char *Cur, *End;

  Token make(Tok K, const char *Start) {
    Token T;
    T.Kind = K;
    T.Text = llvm::StringRef(Start, Cur - Start);
    return T;
  }

  void skipSpaceAndComments() {
    while (Cur != End) {
      if (*Cur == '#') {
        while (Cur != End && *Cur != '\n')
          ++Cur;
      } else if (*Cur == ' ' || *Cur == '\t' || *Cur == '\n' || *Cur == '\r') {
        ++Cur;
      } else {
        return;
      }
    }
  }

  /// STRING ::= '"' printable-ASCII-but-'"'* '"' (no escapes; Text keeps
  /// the quotes). An unterminated string is an error token.
  Token lexString() {
    const char *Start = Cur++;
    while (Cur != End && *Cur != '"' && *Cur >= 0x20 && *Cur < 0x7f)
      ++Cur;
    if (Cur == End || *Cur != '"')
      return make(Tok::Error, Start);
    ++Cur;
    return make(Tok::String, Start);
  }

  /// INT | FLOAT, then an optional '_' DTYPE suffix. "0..M" is INT '..':
  /// a '.' belongs to a number only when a digit follows it.
  Token lexNumber() {
    const char *Start = Cur;
    bool IsFloat;
    Cur = scanDecimal(Cur, End, /*BareDot=*/false, IsFloat);
    Token T = make(IsFloat ? Tok::Float : Tok::Int, Start);
    if (Cur + 1 < End && *Cur == '_' && isIdentStart(Cur[1])) {
      const char *S = ++Cur;
      while (Cur != End && isIdentChar(*Cur))
        ++Cur;
      T.Suffix = llvm::StringRef(S, Cur - S);
    }
    return T;
  }
};

std::string describe(const Token &T) {
  switch (T.Kind) {
  case Tok::Eof: return "end of input";
  case Tok::String: return "a string";
  case Tok::Int:
  case Tok::Float:
    return "'" + T.Text.str() + (T.Suffix.empty() ? "" : "_" + T.Suffix.str()) + "'";
  default: return "'" + T.Text.str() + "'";
  }
}

bool isFloatLiteralWord(llvm::StringRef W) {
  return W.startswith("inf_") || W.startswith("nan_");
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

class IRParser {
public:
  IRParser(llvm::SourceMgr &SM, unsigned BufferID, DiagEngine &Diags)
      : Diags(Diags), Lex(SM.getMemoryBuffer(BufferID)->getBufferStart(),
                          SM.getMemoryBuffer(BufferID)->getBufferEnd()) {
    next();
  }

  std::optional<Module> parseModule();

private:
  DiagEngine &Diags;
  Lexer Lex;
  Token Cur;
  bool Failed = false;
  unsigned Depth = 0;
  llvm::DenseMap<const ExprNode *, unsigned> ExprDepth;

  struct BufferInfo {
    std::string Name;
    DType Type;
    unsigned Rank;
  };
  std::vector<std::pair<std::string, DType>> Vars; ///< innermost last
  std::vector<BufferInfo> Buffers;                 ///< innermost last

  // Helpers.
  bool error(llvm::SMLoc Loc, const llvm::Twine &Msg) {
    if (!Failed)
      Diags.error(Loc, Msg);
    Failed = true;
    return false;
  }
  void next() {
    Cur = Lex.lex();
    if (Cur.Kind == Tok::Error)
      error(Cur.loc(), Cur.Text.startswith("\"")
                           ? llvm::Twine("unterminated string (or a non-printable character in it)")
                           : "unexpected character '" + Cur.Text + "'");
  }
  bool is(Tok K) const { return Cur.Kind == K; }
  /// Consumes a ',' if there is one.
  bool acceptComma() {
    if (!is(Tok::Comma))
      return false;
    next();
    return true;
  }
  bool isWord(llvm::StringRef W) const {
    return Cur.Kind == Tok::Ident && !Cur.Escaped && Cur.Text == W;
  }
  bool expect(Tok K, const char *What) {
    if (Failed)
      return false;
    if (!is(K))
      return error(Cur.loc(), llvm::Twine("expected ") + What + ", found " + describe(Cur));
    next();
    return true;
  }
  bool expectWord(llvm::StringRef W) {
    if (Failed)
      return false;
    if (!isWord(W))
      return error(Cur.loc(), "expected '" + W + "', found " + describe(Cur));
    next();
    return true;
  }

  /// Guards recursion (and so the stack) against hostile nesting.
  struct DepthGuard {
    IRParser &P;
    bool Ok;
    DepthGuard(IRParser &P, llvm::SMLoc Loc) : P(P) {
      Ok = ++P.Depth <= MaxNestingDepth ||
           P.error(Loc, "nesting deeper than " + llvm::Twine(MaxNestingDepth) + " levels");
    }
    ~DepthGuard() { --P.Depth; }
  };

  bool parseName(std::string &Name, const char *What);
  bool parseDeclName(std::string &Name, const char *What);
  bool parseDType(DType &T);
  bool parseUInt(unsigned &V, const char *What);
  bool parseLine(unsigned &Line);
  const BufferInfo *findBuffer(llvm::StringRef Name) const;
  const std::pair<std::string, DType> *findVar(llvm::StringRef Name) const;
  bool checkRank(const BufferInfo &B, size_t Count, llvm::SMLoc Loc);
  bool checkSameType(const Expr &A, const Expr &B, llvm::StringRef What, llvm::SMLoc Loc);

  std::optional<Func> parseFunc();
  bool parseParam(Buffer &B);
  Stmt parseBody();
  Stmt parseStmt();
  Stmt parseFor();
  Stmt parseIf();
  Stmt parseLet();
  Stmt parseAlloc();
  Stmt parseAsyncCopy();
  Stmt parseMbarrier();
  Stmt parseTensorCopy();
  Stmt parseMma();
  Stmt parseLdMatrix();
  bool parseArrow();
  bool parseKnob(Knob &K);
  bool parseSchedule(std::vector<Knob> &Knobs);
  Stmt parseLaunch();
  Stmt parseStore();

  Expr note(Expr E);
  Expr parseExpr();
  Expr parseBinary(int MinPrec);
  Expr parseUnary();
  Expr parsePrimary();
  Expr parseLiteral(bool Negate, llvm::SMLoc Loc);
  Expr parseCallLike(const std::string &Name, llvm::SMLoc Loc);
  bool parseExprList(Tok Close, const char *What, std::vector<Expr> &Out);
  /// Joined: fewer subscripts than the rank are allowed (a tensor_copy
  /// source whose leading dimensions read as one).
  bool parseIndexedBuffer(std::string &Name, std::vector<Expr> &Indices, bool Joined = false);
};

bool IRParser::parseName(std::string &Name, const char *What) {
  if (Failed)
    return false;
  if (!is(Tok::Ident))
    return error(Cur.loc(), llvm::Twine("expected ") + What + ", found " + describe(Cur));
  Name = Cur.Text.str();
  next();
  return true;
}

/// An identifier that a declaration introduces (reserved words refused).
bool IRParser::parseDeclName(std::string &Name, const char *What) {
  llvm::SMLoc Loc = Cur.loc();
  bool Escaped = Cur.Escaped;
  if (!parseName(Name, ("a " + std::string(What) + " name").c_str()))
    return false;
  if (!Escaped && isReservedIRWord(Name))
    return error(Loc, "'" + Name + "' is a reserved word and cannot name a " + What);
  return true;
}

bool IRParser::parseDType(DType &T) {
  if (Failed)
    return false;
  if (!is(Tok::Ident))
    return error(Cur.loc(), "expected a dtype, found " + describe(Cur));
  std::optional<DType> D = tdsl::parseDType(Cur.Text);
  if (!D)
    return error(Cur.loc(), "unknown dtype '" + Cur.Text + "'");
  T = *D;
  next();
  return true;
}

bool IRParser::parseUInt(unsigned &V, const char *What) {
  if (Failed)
    return false;
  uint64_t X;
  if (!is(Tok::Int) || !Cur.Suffix.empty())
    return error(Cur.loc(), llvm::Twine("expected ") + What + ", found " + describe(Cur));
  if (Cur.Text.getAsInteger(10, X) || X > std::numeric_limits<unsigned>::max())
    return error(Cur.loc(), llvm::Twine(What) + " '" + Cur.Text + "' is too large");
  V = static_cast<unsigned>(X);
  next();
  return true;
}

/// line ::= '@' INT
bool IRParser::parseLine(unsigned &Line) {
  Line = 0;
  if (!is(Tok::At))
    return !Failed;
  next();
  return parseUInt(Line, "a line number");
}

const IRParser::BufferInfo *IRParser::findBuffer(llvm::StringRef Name) const {
  for (auto It = Buffers.rbegin(); It != Buffers.rend(); ++It)
    if (It->Name == Name)
      return &*It;
  return nullptr;
}

const std::pair<std::string, DType> *IRParser::findVar(llvm::StringRef Name) const {
  for (auto It = Vars.rbegin(); It != Vars.rend(); ++It)
    if (It->first == Name)
      return &*It;
  return nullptr;
}

bool IRParser::checkRank(const BufferInfo &B, size_t Count, llvm::SMLoc Loc) {
  if (Count == B.Rank)
    return true;
  return error(Loc, "buffer '" + B.Name + "' has rank " + llvm::Twine(B.Rank) +
                        " but is indexed with " + llvm::Twine(Count) + " subscript" +
                        (Count == 1 ? "" : "s"));
}

bool IRParser::checkSameType(const Expr &A, const Expr &B, llvm::StringRef What,
                             llvm::SMLoc Loc) {
  if (A->Type == B->Type)
    return true;
  return error(Loc, "type mismatch: operands of " + What + " are " + dtypeName(A->Type) +
                        " and " + dtypeName(B->Type));
}

/// module ::= func*
std::optional<Module> IRParser::parseModule() {
  Module M;
  while (!Failed && !is(Tok::Eof)) {
    std::optional<Func> F = parseFunc();
    if (!F)
      break;
    M.Funcs.push_back(std::move(*F));
  }
  if (Failed)
    return std::nullopt;
  return M;
}

/// func ::= 'func' ID '<' (ID (',' ID)*)? '>' '(' (param (',' param)*)? ')'
///          '{' stmt* '}'
std::optional<Func> IRParser::parseFunc() {
  Func F;
  if (!expectWord("func") || !parseDeclName(F.Name, "function") || !expect(Tok::Lt, "'<'"))
    return std::nullopt;
  Vars.clear();
  Buffers.clear();
  if (!is(Tok::Gt)) {
    do {
      std::string S;
      if (!parseDeclName(S, "size symbol"))
        return std::nullopt;
      F.Sizes.push_back(S);
      Vars.emplace_back(S, DType::I64);
    } while (acceptComma());
  }
  if (!expect(Tok::Gt, "',' or '>'") || !expect(Tok::LParen, "'('"))
    return std::nullopt;
  if (!is(Tok::RParen)) {
    do {
      Buffer B;
      if (!parseParam(B))
        return std::nullopt;
      Buffers.push_back({B.Name, B.Type, B.rank()});
      F.Params.push_back(std::move(B));
    } while (acceptComma());
  }
  if (!expect(Tok::RParen, "',' or ')'"))
    return std::nullopt;
  if (!parseSchedule(F.Schedule))
    return std::nullopt;
  F.Body = parseBody();
  if (!F.Body)
    return std::nullopt;
  return F;
}

/// param ::= ('in' | 'out') ID ':' DTYPE shape?
bool IRParser::parseParam(Buffer &B) {
  if (isWord("in"))
    B.Role = BufferRole::Input;
  else if (isWord("out"))
    B.Role = BufferRole::Output;
  else
    return error(Cur.loc(), "expected 'in' or 'out', found " + describe(Cur));
  next();
  B.Scope = MemScope::Global;
  if (!parseDeclName(B.Name, "buffer") || !expect(Tok::Colon, "':'") || !parseDType(B.Type))
    return false;
  if (is(Tok::LBracket)) {
    next();
    if (!parseExprList(Tok::RBracket, "']'", B.Shape))
      return false;
  }
  return true;
}

/// schedule ::= 'schedule' '(' knob (',' knob)* ')'   (optional: true without)
bool IRParser::parseSchedule(std::vector<Knob> &Knobs) {
  if (!isWord("schedule"))
    return true;
  next();
  if (!expect(Tok::LParen, "'('"))
    return false;
  do {
    Knob K;
    if (!parseKnob(K))
      return false;
    Knobs.push_back(std::move(K));
  } while (acceptComma());
  return expect(Tok::RParen, "',' or ')'");
}

/// launch ::= 'launch' ID CLASS schedule? line? '{' stmt* '}'
Stmt IRParser::parseLaunch() {
  next();
  std::string Name;
  if (!parseDeclName(Name, "launch"))
    return nullptr;
  llvm::SMLoc ClassLoc = Cur.loc();
  std::string ClassName;
  if (!parseName(ClassName, "a launch class"))
    return nullptr;
  std::optional<LaunchClass> Class = parseLaunchClass(ClassName);
  if (!Class) {
    error(ClassLoc, "unknown launch class '" + ClassName +
                        "' (generic, elementwise, contraction, row_reduction, transpose)");
    return nullptr;
  }
  std::vector<Knob> Knobs;
  unsigned Line;
  if (!parseSchedule(Knobs) || !parseLine(Line))
    return nullptr;
  Stmt Body = parseBody();
  if (!Body)
    return nullptr;
  return launch(std::move(Name), *Class, std::move(Body), std::move(Knobs), Line);
}

/// knob ::= ID '=' (INT | '[' INT (',' INT)* ']' | ID) ('by' STRING)? line?
///   (INT may carry a '-'; the key and a word may be any identifier)
bool IRParser::parseKnob(Knob &K) {
  if (!is(Tok::Ident))
    return error(Cur.loc(), "expected a schedule key, found " + describe(Cur));
  K.Key = Cur.Text.str();
  next();
  if (!expect(Tok::Assign, "'='"))
    return false;
  auto ParseInt = [&]() {
    bool Neg = false;
    if (is(Tok::Minus)) {
      Neg = true;
      next();
    }
    int64_t V;
    if (!is(Tok::Int) || !Cur.Suffix.empty())
      return error(Cur.loc(), "expected an integer, found " + describe(Cur));
    if (Cur.Text.getAsInteger(10, V))
      return error(Cur.loc(), "integer '" + Cur.Text + "' is too large");
    K.Ints.push_back(Neg ? -V : V);
    next();
    return true;
  };
  if (is(Tok::Ident)) {
    K.Word = Cur.Text.str();
    next();
  } else if (is(Tok::LBracket)) {
    K.IsList = true;
    next();
    do {
      if (!ParseInt())
        return false;
    } while (acceptComma());
    if (!expect(Tok::RBracket, "',' or ']'"))
      return false;
  } else if (!ParseInt()) {
    return false;
  }
  if (isWord("by")) {
    next();
    if (!is(Tok::String))
      return error(Cur.loc(), "expected the name of the pass that chose '" + K.Key +
                                  "' in quotes, found " + describe(Cur));
    K.SetBy = Cur.Text.drop_front().drop_back().str();
    next();
  }
  return parseLine(K.Line);
}

/// '{' stmt* '}': one statement stands alone, others form a block.
Stmt IRParser::parseBody() {
  DepthGuard G(*this, Cur.loc());
  llvm::SMLoc Open = Cur.loc();
  if (!G.Ok || !expect(Tok::LBrace, "'{'"))
    return nullptr;
  std::vector<Stmt> Stmts;
  while (!Failed && !is(Tok::RBrace)) {
    if (is(Tok::Eof)) {
      expect(Tok::RBrace, "'}'");
      Diags.note(Open, "to match this '{'");
      return nullptr;
    }
    Stmt S = parseStmt();
    if (!S)
      return nullptr;
    Stmts.push_back(std::move(S));
  }
  if (!expect(Tok::RBrace, "'}'"))
    return nullptr;
  return Stmts.size() == 1 ? Stmts.front() : block(std::move(Stmts));
}

/// stmt ::= for | if | let | store | alloc | 'barrier' line? | copy
///        | 'async_commit' line? | 'async_wait' '(' INT ')' line?
///        | mma | ldmatrix | 'note' STRING line? | launch
Stmt IRParser::parseStmt() {
  if (Failed)
    return nullptr;
  if (!is(Tok::Ident)) {
    error(Cur.loc(), "expected a statement, found " + describe(Cur));
    return nullptr;
  }
  if (Cur.Escaped)
    return parseStore();
  llvm::StringRef W = Cur.Text;
  unsigned Line;
  if (W == "for")
    return parseFor();
  if (W == "if")
    return parseIf();
  if (W == "let")
    return parseLet();
  if (W == "alloc")
    return parseAlloc();
  if (W == "async_copy")
    return parseAsyncCopy();
  if (W == "mbarrier")
    return parseMbarrier();
  if (W == "tensor_copy")
    return parseTensorCopy();
  if (W == "mma")
    return parseMma();
  if (W == "ldmatrix")
    return parseLdMatrix();
  if (W == "launch")
    return parseLaunch();
  if (W == "note") {
    next();
    if (!is(Tok::String)) {
      error(Cur.loc(), "expected a string after 'note', found " + describe(Cur));
      return nullptr;
    }
    std::string Text = Cur.Text.drop_front().drop_back().str();
    next();
    return parseLine(Line) ? ir::note(std::move(Text), Line) : nullptr;
  }
  if (W == "barrier") {
    next();
    return parseLine(Line) ? barrier(Line) : nullptr;
  }
  if (W == "async_commit") {
    next();
    return parseLine(Line) ? std::make_shared<AsyncCommitNode>(Line) : nullptr;
  }
  if (W == "async_wait") {
    next();
    unsigned Pending;
    if (!expect(Tok::LParen, "'('") || !parseUInt(Pending, "a group count") ||
        !expect(Tok::RParen, "')'") || !parseLine(Line))
      return nullptr;
    return std::make_shared<AsyncWaitNode>(Pending, Line);
  }
  if (isReservedIRWord(W)) {
    error(Cur.loc(), "expected a statement, found " + describe(Cur));
    return nullptr;
  }
  return parseStore();
}

/// for ::= 'for' ID 'in' expr '..' expr KIND ('(' INT ')')? line? '{' stmt* '}'
Stmt IRParser::parseFor() {
  next();
  std::string Var;
  if (!parseDeclName(Var, "loop variable") || !expectWord("in"))
    return nullptr;
  Expr Min = parseExpr();
  llvm::SMLoc RangeLoc = Cur.loc();
  if (!Min || !expect(Tok::DotDot, "'..'"))
    return nullptr;
  Expr End = parseExpr();
  if (!End || !checkSameType(Min, End, "'..'", RangeLoc))
    return nullptr;
  Expr Extent = note(text::loopExtent(Min, End));
  if (!Extent)
    return nullptr;

  llvm::SMLoc KindLoc = Cur.loc();
  std::string KindName;
  if (!parseName(KindName, "a loop kind"))
    return nullptr;
  if (is(Tok::Dot)) {
    next();
    std::string Dim;
    if (!parseName(Dim, "a loop dimension"))
      return nullptr;
    KindName += "." + Dim;
  }
  std::optional<ForKind> Kind = parseForKind(KindName);
  if (!Kind) {
    error(KindLoc, "unknown loop kind '" + KindName + "'");
    return nullptr;
  }
  unsigned Unroll = 0, Line;
  if (is(Tok::LParen)) {
    next();
    if (!parseUInt(Unroll, "an unroll factor") || !expect(Tok::RParen, "')'"))
      return nullptr;
  }
  if (!parseLine(Line))
    return nullptr;
  Vars.emplace_back(Var, DType::I64);
  Stmt Body = parseBody();
  Vars.pop_back();
  if (!Body)
    return nullptr;
  return forLoop(Var, Min, Extent, *Kind, Body, Line, Unroll);
}

/// if ::= 'if' expr line? '{' stmt* '}' ('else' '{' stmt* '}')?
Stmt IRParser::parseIf() {
  next();
  unsigned Line;
  Expr Cond = parseExpr();
  if (!Cond || !parseLine(Line))
    return nullptr;
  Stmt Then = parseBody(), Else;
  if (!Then)
    return nullptr;
  if (isWord("else")) {
    next();
    if (!(Else = parseBody()))
      return nullptr;
  }
  return ifThen(Cond, Then, Else, Line);
}

/// let ::= 'let' ID ':' DTYPE '=' expr line? '{' stmt* '}'
Stmt IRParser::parseLet() {
  next();
  std::string Var;
  DType T;
  unsigned Line;
  if (!parseDeclName(Var, "variable") || !expect(Tok::Colon, "':'") || !parseDType(T) ||
      !expect(Tok::Assign, "'='"))
    return nullptr;
  llvm::SMLoc ValueLoc = Cur.loc();
  Expr Value = parseExpr();
  if (!Value)
    return nullptr;
  if (Value->Type != T) {
    error(ValueLoc, "type mismatch: '" + Var + "' is declared " + dtypeName(T) +
                        " but its value is " + dtypeName(Value->Type));
    return nullptr;
  }
  if (!parseLine(Line))
    return nullptr;
  Vars.emplace_back(Var, T);
  Stmt Body = parseBody();
  Vars.pop_back();
  if (!Body)
    return nullptr;
  return letStmt(Var, Value, Body, Line);
}

/// alloc ::= 'alloc' ID ':' DTYPE shape SCOPE ('pad' '[' INT (',' INT)* ']')?
///           ('names' '[' ID (',' ID)* ']')? ('swizzle' '(' INT ',' INT ',' INT ')')? line? '{' stmt* '}'
Stmt IRParser::parseAlloc() {
  next();
  Buffer B;
  B.Role = BufferRole::Temp;
  if (!parseDeclName(B.Name, "buffer") || !expect(Tok::Colon, "':'") || !parseDType(B.Type) ||
      !expect(Tok::LBracket, "'['") || !parseExprList(Tok::RBracket, "']'", B.Shape))
    return nullptr;
  llvm::SMLoc ScopeLoc = Cur.loc();
  std::string ScopeName;
  if (!parseName(ScopeName, "a memory scope"))
    return nullptr;
  std::optional<MemScope> Scope = parseMemScope(ScopeName);
  if (!Scope) {
    error(ScopeLoc, "unknown memory scope '" + ScopeName + "'");
    return nullptr;
  }
  B.Scope = *Scope;
  if (isWord("pad")) {
    next();
    if (!expect(Tok::LBracket, "'['"))
      return nullptr;
    do {
      // Signed, so that the verifier (not the parser) reports negative
      // padding of hand-written IR.
      bool Neg = is(Tok::Minus);
      if (Neg)
        next();
      unsigned V;
      if (!parseUInt(V, "a padding amount"))
        return nullptr;
      B.Padding.push_back(Neg ? -int64_t(V) : int64_t(V));
    } while (acceptComma());
    if (!expect(Tok::RBracket, "',' or ']'"))
      return nullptr;
  }
  if (isWord("names")) {
    next();
    if (!expect(Tok::LBracket, "'['"))
      return nullptr;
    do {
      std::string Word;
      if (!parseName(Word, "an extent name"))
        return nullptr;
      B.ExtentNames.push_back(std::move(Word));
    } while (acceptComma());
    if (!expect(Tok::RBracket, "',' or ']'"))
      return nullptr;
  }
  if (isWord("swizzle")) {
    next();
    if (!expect(Tok::LParen, "'('") || !parseUInt(B.Swz.Bits, "a swizzle width") ||
        !expect(Tok::Comma, "','") || !parseUInt(B.Swz.Base, "a swizzle base") ||
        !expect(Tok::Comma, "','") || !parseUInt(B.Swz.Shift, "a swizzle shift") ||
        !expect(Tok::RParen, "')'"))
      return nullptr;
  }
  unsigned Line;
  if (!parseLine(Line))
    return nullptr;
  Buffers.push_back({B.Name, B.Type, B.rank()});
  Stmt Body = parseBody();
  Buffers.pop_back();
  if (!Body)
    return nullptr;
  return allocate(std::move(B), Body, Line);
}

/// ID '[' exprs ']' naming a buffer in scope, with one subscript per dim.
bool IRParser::parseIndexedBuffer(std::string &Name, std::vector<Expr> &Indices, bool Joined) {
  llvm::SMLoc Loc = Cur.loc();
  if (!parseName(Name, "a buffer name"))
    return false;
  const BufferInfo *B = findBuffer(Name);
  if (!B)
    return error(Loc, "unknown buffer '" + Name + "'");
  BufferInfo Info = *B;
  if (!expect(Tok::LBracket, "'['") || !parseExprList(Tok::RBracket, "']'", Indices))
    return false;
  // A tensor_copy may read the leading dimensions as one: fewer subscripts.
  return Joined && !Indices.empty() && Indices.size() < Info.Rank
             ? true
             : checkRank(Info, Indices.size(), Loc);
}

/// '<-', two tokens so that "a<-b" in an expression still means a < -b.
bool IRParser::parseArrow() {
  const char *LtPos = Cur.Text.data();
  if (!expect(Tok::Lt, "'<-'"))
    return false;
  if (!is(Tok::Minus) || Cur.Text.data() != LtPos + 1)
    return error(llvm::SMLoc::getFromPointer(LtPos), "expected '<-'");
  next();
  return true;
}

/// copy ::= 'async_copy' ID '[' exprs ']' '<-' ID '[' exprs ']' 'x' INT
///          ('when' '(' expr ')')? line?
Stmt IRParser::parseAsyncCopy() {
  next();
  std::string Dst, Src;
  std::vector<Expr> DI, SI;
  if (!parseIndexedBuffer(Dst, DI) || !parseArrow())
    return nullptr;
  unsigned Elems, Line;
  if (!parseIndexedBuffer(Src, SI) || !expectWord("x") ||
      !parseUInt(Elems, "an element count"))
    return nullptr;
  Expr Valid;
  if (isWord("when")) {
    next();
    if (!expect(Tok::LParen, "'('") || !(Valid = parseExpr()) || !expect(Tok::RParen, "')'"))
      return nullptr;
  }
  if (!parseLine(Line))
    return nullptr;
  return std::make_shared<AsyncCopyNode>(Dst, std::move(DI), Src, std::move(SI), Elems, Line,
                                         std::move(Valid));
}

/// mbarrier ::= 'mbarrier' ('init' | 'arrive' | 'arrive_warp' | 'expect_tx' | 'wait')
///              ID '[' expr ']' ('(' expr ')')? line?   (a value for all but the arrivals)
Stmt IRParser::parseMbarrier() {
  next();
  llvm::SMLoc Loc = Cur.loc();
  std::string OpName;
  if (!parseName(OpName, "an mbarrier operation"))
    return nullptr;
  std::optional<MbarrierOp> Op = parseMbarrierOp(OpName);
  if (!Op) {
    error(Loc, "unknown mbarrier operation '" + OpName +
                   "' (init, arrive, arrive_warp, expect_tx or wait)");
    return nullptr;
  }
  std::string Bar;
  std::vector<Expr> Index;
  if (!parseIndexedBuffer(Bar, Index))
    return nullptr;
  Expr Value;
  if (*Op != MbarrierOp::Arrive && *Op != MbarrierOp::ArriveWarp) {
    if (!expect(Tok::LParen, "'('") || !(Value = parseExpr()) || !expect(Tok::RParen, "')'"))
      return nullptr;
  }
  unsigned Line;
  if (!parseLine(Line))
    return nullptr;
  return std::make_shared<MbarrierNode>(*Op, Bar, Index.empty() ? nullptr : Index.front(),
                                        std::move(Value), Line);
}

/// tensor_copy ::= 'tensor_copy' ID '[' exprs ']' '<-' ID '[' exprs ']'
///                 'box' '[' INT (',' INT)* ']' 'on' ID '[' expr ']' line?
Stmt IRParser::parseTensorCopy() {
  next();
  std::string Dst, Src, Bar;
  std::vector<Expr> DI, SI, BI;
  if (!parseIndexedBuffer(Dst, DI) || !parseArrow() ||
      !parseIndexedBuffer(Src, SI, /*Joined=*/true) || !expectWord("box") ||
      !expect(Tok::LBracket, "'['"))
    return nullptr;
  std::vector<int64_t> Box;
  do {
    unsigned V;
    if (!parseUInt(V, "a box extent"))
      return nullptr;
    Box.push_back(V);
  } while (acceptComma());
  unsigned Line;
  if (!expect(Tok::RBracket, "',' or ']'") || !expectWord("on") || !parseIndexedBuffer(Bar, BI) ||
      !parseLine(Line))
    return nullptr;
  return std::make_shared<TensorCopyNode>(Dst, std::move(DI), Src, std::move(SI), std::move(Box),
                                          Bar, BI.empty() ? nullptr : BI.front(), Line);
}

/// mma ::= 'mma' SHAPE ID '[' exprs ']' '+' '=' ID '[' exprs ']' '*' ID '[' exprs ']' line?
Stmt IRParser::parseMma() {
  next();
  llvm::SMLoc Loc = Cur.loc();
  std::string ShapeName;
  if (!parseName(ShapeName, "an mma shape"))
    return nullptr;
  std::optional<MmaShape> Shape = parseMmaShape(ShapeName);
  if (!Shape) {
    error(Loc, "unknown mma shape '" + ShapeName + "' (m16n8k16, m16n8k8 or m16n8k32)");
    return nullptr;
  }
  std::string C, A, B;
  std::vector<Expr> CI, AI, BI;
  unsigned Line;
  if (!parseIndexedBuffer(C, CI) || !expect(Tok::Plus, "'+='") ||
      !expect(Tok::Assign, "'+='") || !parseIndexedBuffer(A, AI) ||
      !expect(Tok::Star, "'*'") || !parseIndexedBuffer(B, BI) || !parseLine(Line))
    return nullptr;
  return std::make_shared<MmaNode>(*Shape, C, std::move(CI), A, std::move(AI), B, std::move(BI),
                                   Line);
}

/// ldmatrix ::= 'ldmatrix' ('x1' | 'x2' | 'x4') 'trans'? ID '[' exprs ']' '<-'
///              ID '[' exprs ']' line?
Stmt IRParser::parseLdMatrix() {
  next();
  llvm::SMLoc Loc = Cur.loc();
  unsigned Count = isWord("x1") ? 1 : isWord("x2") ? 2 : isWord("x4") ? 4 : 0;
  if (!Count) {
    error(Loc, "expected 'x1', 'x2' or 'x4', found " + describe(Cur));
    return nullptr;
  }
  next();
  bool Trans = isWord("trans");
  if (Trans)
    next();
  std::string Dst, Src;
  std::vector<Expr> DI, SI;
  unsigned Line;
  if (!parseIndexedBuffer(Dst, DI) || !parseArrow() || !parseIndexedBuffer(Src, SI) ||
      !parseLine(Line))
    return nullptr;
  return std::make_shared<LdMatrixNode>(Count, Trans, Dst, std::move(DI), Src, std::move(SI),
                                        Line);
}

/// store ::= ID ('[' expr (',' expr)* ']')? '=' expr line?
Stmt IRParser::parseStore() {
  llvm::SMLoc Loc = Cur.loc();
  std::string Name;
  if (!parseName(Name, "a statement"))
    return nullptr;
  const BufferInfo *B = findBuffer(Name);
  if (!B) {
    error(Loc, "unknown buffer '" + Name + "'");
    return nullptr;
  }
  BufferInfo Info = *B;
  std::vector<Expr> Indices;
  if (is(Tok::LBracket)) {
    next();
    if (!parseExprList(Tok::RBracket, "']'", Indices))
      return nullptr;
  }
  if (!checkRank(Info, Indices.size(), Loc) || !expect(Tok::Assign, "'='"))
    return nullptr;
  Expr Value = parseExpr();
  unsigned Line;
  if (!Value || !parseLine(Line))
    return nullptr;
  return store(Name, std::move(Indices), Value, Line);
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// Records E's tree depth; a tree deeper than the limit is an error (a long
/// chain "a + b + c + ..." nests without recursing in the parser).
Expr IRParser::note(Expr E) {
  if (!E || Failed)
    return nullptr;
  unsigned D = 0;
  auto Child = [&](const Expr &C) {
    auto It = ExprDepth.find(C.get());
    D = std::max(D, It == ExprDepth.end() ? 1u : It->second);
  };
  switch (E->Kind) {
  case ExprKind::Load:
    for (const Expr &I : static_cast<const LoadNode &>(*E).Indices)
      Child(I);
    break;
  case ExprKind::Unary: Child(static_cast<const UnaryNode &>(*E).A); break;
  case ExprKind::Binary:
    Child(static_cast<const BinaryNode &>(*E).A);
    Child(static_cast<const BinaryNode &>(*E).B);
    break;
  case ExprKind::Select:
    Child(static_cast<const SelectNode &>(*E).Cond);
    Child(static_cast<const SelectNode &>(*E).TrueValue);
    Child(static_cast<const SelectNode &>(*E).FalseValue);
    break;
  case ExprKind::Cast: Child(static_cast<const CastNode &>(*E).A); break;
  case ExprKind::Call:
    for (const Expr &A : static_cast<const CallNode &>(*E).Args)
      Child(A);
    break;
  default: break;
  }
  ExprDepth[E.get()] = D + 1;
  if (D + 1 > MaxNestingDepth) {
    error(Cur.loc(), "expression nested deeper than " + llvm::Twine(MaxNestingDepth) +
                         " levels");
    return nullptr;
  }
  return E;
}

/// expr ::= binary ('?' expr ':' expr)?
Expr IRParser::parseExpr() {
  DepthGuard G(*this, Cur.loc());
  if (!G.Ok)
    return nullptr;
  Expr C = parseBinary(text::PrecOr);
  if (!C || !is(Tok::Question))
    return C;
  llvm::SMLoc Loc = Cur.loc();
  next();
  Expr T = parseExpr();
  if (!T || !expect(Tok::Colon, "':'"))
    return nullptr;
  Expr F = parseExpr();
  if (!F || !checkSameType(T, F, "'?:'", Loc))
    return nullptr;
  return note(select(C, T, F));
}

/// The binary operator a token spells, if any.
std::optional<BinaryOp> binaryOpOf(Tok K) {
  switch (K) {
  case Tok::OrOr: return BinaryOp::Or;
  case Tok::AndAnd: return BinaryOp::And;
  case Tok::EqEq: return BinaryOp::Eq;
  case Tok::Ne: return BinaryOp::Ne;
  case Tok::Lt: return BinaryOp::Lt;
  case Tok::Le: return BinaryOp::Le;
  case Tok::Gt: return BinaryOp::Gt;
  case Tok::Ge: return BinaryOp::Ge;
  case Tok::Plus: return BinaryOp::Add;
  case Tok::Minus: return BinaryOp::Sub;
  case Tok::Star: return BinaryOp::Mul;
  case Tok::Slash: return BinaryOp::Div;
  case Tok::Percent: return BinaryOp::Mod;
  default: return std::nullopt;
  }
}

/// binary ::= unary (BINOP unary)*, by precedence climbing (TextForm.h).
Expr IRParser::parseBinary(int MinPrec) {
  Expr L = parseUnary();
  while (L) {
    std::optional<BinaryOp> Op = binaryOpOf(Cur.Kind);
    if (!Op || text::binaryPrec(*Op) < MinPrec)
      break;
    llvm::SMLoc Loc = Cur.loc();
    std::string Spelling = "'" + Cur.Text.str() + "'";
    next();
    Expr R = parseBinary(text::binaryPrec(*Op) + 1);
    if (!R || !checkSameType(L, R, Spelling, Loc))
      return nullptr;
    L = note(binary(*Op, L, R));
  }
  return L;
}

/// unary ::= ('-' | '!') unary | primary; '-' directly before a literal is
/// part of the literal ("-5", "-0.0", "-inf_f32").
Expr IRParser::parseUnary() {
  if (!is(Tok::Minus) && !is(Tok::Bang))
    return parsePrimary();
  DepthGuard G(*this, Cur.loc());
  if (!G.Ok)
    return nullptr;
  bool Neg = is(Tok::Minus);
  llvm::SMLoc Loc = Cur.loc();
  next();
  if (Neg && (is(Tok::Int) || is(Tok::Float) ||
              (is(Tok::Ident) && isFloatLiteralWord(Cur.Text))))
    return parseLiteral(/*Negate=*/true, Loc);
  Expr A = parseUnary();
  if (!A)
    return nullptr;
  return note(unary(Neg ? UnaryOp::Neg : UnaryOp::Not, A));
}

/// INT | INT '_' DTYPE | FLOAT | FLOAT '_' DTYPE | 'inf_' DTYPE | 'nan_' DTYPE
Expr IRParser::parseLiteral(bool Negate, llvm::SMLoc Loc) {
  Token T = Cur;
  next();
  if (T.Kind == Tok::Ident) {
    llvm::StringRef TypeName = T.Text.drop_front(4);
    std::optional<DType> Ty = tdsl::parseDType(TypeName);
    if (!Ty || !isFloat(*Ty)) {
      error(T.loc(), "unknown float dtype '" + TypeName + "' in '" + T.Text + "'");
      return nullptr;
    }
    double V = T.Text.startswith("inf_") ? std::numeric_limits<double>::infinity()
                                         : std::numeric_limits<double>::quiet_NaN();
    return note(floatImm(Negate ? -V : V, *Ty));
  }
  DType Ty = T.Kind == Tok::Float ? DType::F32 : DType::I64;
  if (!T.Suffix.empty()) {
    std::optional<DType> D = tdsl::parseDType(T.Suffix);
    if (!D) {
      error(T.loc(), "unknown dtype '" + T.Suffix + "' in literal suffix");
      return nullptr;
    }
    Ty = *D;
  }
  if (T.Kind == Tok::Float) {
    if (!isFloat(Ty)) {
      error(T.loc(), "float literal cannot have type " + dtypeName(Ty));
      return nullptr;
    }
    double V = std::strtod(T.Text.str().c_str(), nullptr);
    return note(floatImm(Negate ? -V : V, Ty));
  }
  uint64_t Mag;
  if (T.Text.getAsInteger(10, Mag)) {
    error(Loc, "integer literal '" + T.Text + "' is too large");
    return nullptr;
  }
  if (isFloat(Ty)) {
    double V = static_cast<double>(Mag);
    return note(floatImm(Negate ? -V : V, Ty));
  }
  // The range check in unsigned arithmetic: -2^63 is valid, 2^63 is not.
  uint64_t Limit = Negate ? uint64_t(-dtypeLowest(Ty)) : uint64_t(dtypeHighest(Ty));
  if (Ty == DType::I64)
    Limit = Negate ? uint64_t(1) << 63 : (uint64_t(1) << 63) - 1;
  if (Mag > Limit) {
    error(Loc, "integer literal out of range for " + dtypeName(Ty));
    return nullptr;
  }
  int64_t V = Negate ? int64_t(0 - Mag) : int64_t(Mag);
  return note(intImm(V, Ty));
}

bool IRParser::parseExprList(Tok Close, const char *What, std::vector<Expr> &Out) {
  if (Failed)
    return false;
  if (is(Close)) {
    next();
    return true;
  }
  while (true) {
    Expr E = parseExpr();
    if (!E)
      return false;
    Out.push_back(std::move(E));
    if (!is(Tok::Comma))
      break;
    next();
  }
  return expect(Close, (std::string("',' or ") + What).c_str());
}

/// DTYPE '(' expr ')' | ('min' | 'max') '(' expr ',' expr ')'
/// | INTRINSIC '(' exprs ')'
Expr IRParser::parseCallLike(const std::string &Name, llvm::SMLoc Loc) {
  std::optional<DType> CastTo = tdsl::parseDType(Name);
  std::optional<Intrinsic> Fn = parseIntrinsic(Name);
  bool IsMinMax = Name == "min" || Name == "max";
  if (!CastTo && !Fn && !IsMinMax) {
    error(Loc, "unknown intrinsic '" + Name + "'");
    return nullptr;
  }
  next(); // '('
  std::vector<Expr> Args;
  if (!parseExprList(Tok::RParen, "')'", Args))
    return nullptr;
  unsigned Arity = CastTo ? 1 : IsMinMax ? 2 : intrinsicArity(*Fn);
  if (Args.size() != Arity) {
    error(Loc, "'" + Name + "' takes " + llvm::Twine(Arity) + " argument" +
                   (Arity == 1 ? "" : "s") + ", got " + llvm::Twine(Args.size()));
    return nullptr;
  }
  if (CastTo) // built directly: cast() would drop a cast to the same type
    return note(std::make_shared<CastNode>(*CastTo, Args[0]));
  if (IsMinMax || *Fn == Intrinsic::Pow) {
    if (!checkSameType(Args[0], Args[1], "'" + Name + "'", Loc))
      return nullptr;
    if (IsMinMax)
      return note(binary(Name == "min" ? BinaryOp::Min : BinaryOp::Max, Args[0], Args[1]));
  }
  return note(call(*Fn, std::move(Args)));
}

/// primary ::= '(' expr ')' | literal | ID | ID '[' exprs ']' | call-like
Expr IRParser::parsePrimary() {
  if (Failed)
    return nullptr;
  llvm::SMLoc Loc = Cur.loc();
  if (is(Tok::LParen)) {
    next();
    Expr E = parseExpr();
    if (!E || !expect(Tok::RParen, "')'"))
      return nullptr;
    return E;
  }
  if (is(Tok::Int) || is(Tok::Float))
    return parseLiteral(/*Negate=*/false, Loc);
  if (!is(Tok::Ident)) {
    error(Loc, "expected an expression, found " + describe(Cur));
    return nullptr;
  }
  bool Escaped = Cur.Escaped;
  if (!Escaped && isFloatLiteralWord(Cur.Text))
    return parseLiteral(/*Negate=*/false, Loc);
  std::string Name = Cur.Text.str();
  next();
  if (!Escaped && is(Tok::LParen))
    return parseCallLike(Name, Loc);
  if (is(Tok::LBracket)) {
    const BufferInfo *B = findBuffer(Name);
    if (!B) {
      error(Loc, "unknown buffer '" + Name + "'");
      return nullptr;
    }
    BufferInfo Info = *B;
    next();
    std::vector<Expr> Indices;
    if (!parseExprList(Tok::RBracket, "']'", Indices) ||
        !checkRank(Info, Indices.size(), Loc))
      return nullptr;
    return note(load(Info.Type, Name, std::move(Indices)));
  }
  if (!Escaped && isReservedIRWord(Name)) {
    error(Loc, "expected '(' after '" + Name + "'");
    return nullptr;
  }
  const auto *V = findVar(Name);
  if (!V) {
    error(Loc, "unknown variable '" + Name + "'");
    return nullptr;
  }
  return note(var(Name, V->second));
}

} // namespace

bool isReservedIRWord(llvm::StringRef Name) {
  static const llvm::StringSet<> Words = {
      "func", "for", "in", "if", "else", "let", "alloc", "barrier", "async_copy",
      "async_commit", "async_wait", "mbarrier", "tensor_copy", "mma", "ldmatrix", "note",
      "launch", "min", "max"};
  return Words.count(Name) || tdsl::parseDType(Name) || parseIntrinsic(Name) ||
         isFloatLiteralWord(Name);
}

std::optional<Module> parseIRModule(llvm::SourceMgr &SM, unsigned BufferID,
                                    DiagEngine &Diags) {
  return IRParser(SM, BufferID, Diags).parseModule();
}

} // namespace tdsl::ir
