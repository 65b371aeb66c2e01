// The CEL subset's lexer and recursive-descent parser, after the CEL grammar (cel-spec
// doc/langdef.md "Syntax"): Expr = Or; Or = And {"||" And}; And = Relation {"&&" Relation};
// Relation = Unary {Relop Unary}; Unary = Member | "!" Unary | "-" Unary;
// Member = Primary {"." IDENT}; Primary = IDENT | "has" "(" Member ")" | "(" Expr ")" |
// "[" [Expr {"," Expr}] "]" | literal. Arithmetic, the ternary, indexing, maps and calls other
// than has() are recognised only to be refused by name.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/cel.h"
#include "tests/support/apiserver/cel_internal.h"

namespace wavepool::testing::apiserver::cel {
namespace {

// What the refusals of constructs outside the subset add, so that an author knows the rule is
// fine CEL and the limit is this server's.
constexpr char kSubset[] =
    " (this API server evaluates a CEL subset: self, field selection, has(), literals, lists, "
    "!, -, &&, ||, ==, !=, <, <=, >, >=, in)";

enum class Tok { kEnd, kIdent, kInt, kDouble, kString, kPunct };

struct Token {
  Tok kind = Tok::kEnd;
  std::size_t position = 0;
  std::string text;  // identifier, punctuation, or a string literal's decoded value
  std::int64_t int_value = 0;
  double double_value = 0;
};

class Parser {
 public:
  explicit Parser(std::string_view expression) : in_(expression) {}

  absl::StatusOr<std::unique_ptr<Node>> ParseAll() {
    if (absl::Status s = Advance(); !s.ok()) return s;
    absl::StatusOr<std::unique_ptr<Node>> root = ParseOr();
    if (!root.ok()) return root;
    if (tok_.kind != Tok::kEnd) return Unexpected();
    // Chains of comparisons and selections grow the tree without recursing here; evaluation
    // recurses over the tree, so its depth is bounded too.
    if ((*root)->depth > kMaxNestingDepth) {
      return Error(0, absl::StrCat("expression nested deeper than ", kMaxNestingDepth, " levels"));
    }
    return root;
  }

 private:
  absl::Status Error(std::size_t position, std::string_view message) const {
    return absl::InvalidArgumentError(Issue(in_, position, message));
  }

  absl::Status Unexpected() const {
    if (tok_.kind == Tok::kEnd)
      return Error(tok_.position, "Syntax error: unexpected end of input");
    return Error(tok_.position,
                 absl::StrCat("Syntax error: unexpected '",
                              std::string(in_.substr(tok_.position, TokenLength())), "'"));
  }

  std::size_t TokenLength() const {
    return tok_.kind == Tok::kPunct || tok_.kind == Tok::kIdent ? tok_.text.size() : 1;
  }

  bool IsPunct(std::string_view text) const {
    return tok_.kind == Tok::kPunct && tok_.text == text;
  }

  // ---- lexer ----

  void SkipSpaceAndComments() {
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
        ++pos_;
      } else if (in_.substr(pos_, 2) == "//") {
        while (pos_ < in_.size() && in_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  absl::Status Advance() {
    SkipSpaceAndComments();
    tok_ = Token{};
    tok_.position = pos_;
    if (pos_ >= in_.size()) return absl::OkStatus();
    const char c = in_[pos_];
    const bool digit_next =
        pos_ + 1 < in_.size() && std::isdigit(static_cast<unsigned char>(in_[pos_ + 1]));
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && digit_next)) return LexNumber();
    if (c == '\'' || c == '"') return LexString(false);
    if ((c == 'r' || c == 'R') && pos_ + 1 < in_.size() &&
        (in_[pos_ + 1] == '\'' || in_[pos_ + 1] == '"')) {
      ++pos_;
      return LexString(true);
    }
    if ((c == 'b' || c == 'B') && pos_ + 1 < in_.size() &&
        (in_[pos_ + 1] == '\'' || in_[pos_ + 1] == '"')) {
      return Error(pos_, absl::StrCat("bytes literals are not supported here", kSubset));
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < in_.size() &&
             (std::isalnum(static_cast<unsigned char>(in_[pos_])) || in_[pos_] == '_')) {
        ++pos_;
      }
      tok_.kind = Tok::kIdent;
      tok_.text = std::string(in_.substr(start, pos_ - start));
      return absl::OkStatus();
    }
    for (const char* punct : {"==", "!=", "<=", ">=", "&&", "||"}) {
      if (in_.substr(pos_, 2) == punct) {
        tok_.kind = Tok::kPunct;
        tok_.text = punct;
        pos_ += 2;
        return absl::OkStatus();
      }
    }
    if (std::string_view("()[]{}.,!-+*/%<>?:").find(c) != std::string_view::npos) {
      tok_.kind = Tok::kPunct;
      tok_.text = std::string(1, c);
      ++pos_;
      return absl::OkStatus();
    }
    return Error(
        pos_, absl::StrCat("Syntax error: token recognition error at: '", std::string(1, c), "'"));
  }

  absl::Status LexNumber() {
    const std::size_t start = pos_;
    if (in_.substr(pos_, 2) == "0x" || in_.substr(pos_, 2) == "0X") {
      pos_ += 2;
      while (pos_ < in_.size() && std::isxdigit(static_cast<unsigned char>(in_[pos_]))) ++pos_;
      return FinishInt(start, 16);
    }
    bool is_double = false;
    while (pos_ < in_.size() && std::isdigit(static_cast<unsigned char>(in_[pos_]))) ++pos_;
    if (pos_ + 1 < in_.size() && in_[pos_] == '.' &&
        std::isdigit(static_cast<unsigned char>(in_[pos_ + 1]))) {
      is_double = true;
      ++pos_;
      while (pos_ < in_.size() && std::isdigit(static_cast<unsigned char>(in_[pos_]))) ++pos_;
    }
    if (pos_ < in_.size() && (in_[pos_] == 'e' || in_[pos_] == 'E')) {
      std::size_t p = pos_ + 1;
      if (p < in_.size() && (in_[p] == '+' || in_[p] == '-')) ++p;
      if (p < in_.size() && std::isdigit(static_cast<unsigned char>(in_[p]))) {
        is_double = true;
        pos_ = p;
        while (pos_ < in_.size() && std::isdigit(static_cast<unsigned char>(in_[pos_]))) ++pos_;
      }
    }
    if (!is_double) return FinishInt(start, 10);
    const std::string text(in_.substr(start, pos_ - start));
    tok_.kind = Tok::kDouble;
    tok_.double_value = std::strtod(text.c_str(), nullptr);
    return absl::OkStatus();
  }

  absl::Status FinishInt(std::size_t start, int base) {
    if (pos_ < in_.size() && (in_[pos_] == 'u' || in_[pos_] == 'U')) {
      return Error(start,
                   absl::StrCat("unsigned integer literals are not supported here", kSubset));
    }
    const std::string text(in_.substr(start, pos_ - start));
    errno = 0;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text.c_str(), &end, base);
    // 9223372036854775808 is allowed only as the operand of a minus (CEL's int64 minimum).
    if (errno == ERANGE || end == text.c_str() ||
        value > static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max()) + 1) {
      return Error(start, absl::StrCat("invalid int literal: ", text));
    }
    tok_.kind = Tok::kInt;
    tok_.text = text;
    tok_.int_value = static_cast<std::int64_t>(value);  // wraps only for the minimum
    tok_.double_value = static_cast<double>(value);
    return absl::OkStatus();
  }

  static void AppendUtf8(std::string& out, std::uint32_t code) {
    if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (code >> 6)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (code >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (code >> 18)));
      out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  // A backslash escape at pos_ (after the backslash), appended to `out`.
  absl::Status LexEscape(std::string& out) {
    const std::size_t at = pos_ - 1;
    if (pos_ >= in_.size()) return Error(at, "Syntax error: unterminated string");
    const char c = in_[pos_++];
    static const std::string_view kSimple = "abfnrtv\\'\"`?";
    static const char kSimpleValue[] = {'\a', '\b', '\f', '\n', '\r', '\t',
                                        '\v', '\\', '\'', '"',  '`',  '?'};
    if (std::size_t i = kSimple.find(c); i != std::string_view::npos) {
      out.push_back(kSimpleValue[i]);
      return absl::OkStatus();
    }
    int digits = 0;
    int base = 16;
    if (c == 'x' || c == 'X') {
      digits = 2;
    } else if (c == 'u') {
      digits = 4;
    } else if (c == 'U') {
      digits = 8;
    } else if (c >= '0' && c <= '3') {
      digits = 3;  // \ooo: the first digit is part of the code
      base = 8;
      --pos_;
    } else {
      return Error(
          at, absl::StrCat("Syntax error: invalid escape sequence '\\", std::string(1, c), "'"));
    }
    if (pos_ + static_cast<std::size_t>(digits) > in_.size()) {
      return Error(at, "Syntax error: invalid escape sequence");
    }
    const std::string hex(in_.substr(pos_, static_cast<std::size_t>(digits)));
    char* end = nullptr;
    const unsigned long code = std::strtoul(hex.c_str(), &end, base);
    if (end != hex.c_str() + hex.size() || code > 0x10FFFF || (code >= 0xD800 && code < 0xE000)) {
      return Error(at, "Syntax error: invalid escape sequence");
    }
    pos_ += static_cast<std::size_t>(digits);
    AppendUtf8(out, static_cast<std::uint32_t>(code));  // a code point, as cel-go reads \x too
    return absl::OkStatus();
  }

  // A quoted string at pos_ ('...', "...", '''...''', """...""").
  absl::Status LexString(bool raw) {
    const char quote = in_[pos_];
    const bool triple = in_.substr(pos_, 3) == std::string(3, quote);
    pos_ += triple ? 3 : 1;
    std::string value;
    while (true) {
      if (pos_ >= in_.size()) return Error(tok_.position, "Syntax error: unterminated string");
      const char c = in_[pos_];
      if (triple ? in_.substr(pos_, 3) == std::string(3, quote) : c == quote) {
        pos_ += triple ? 3 : 1;
        break;
      }
      if (!triple && (c == '\n' || c == '\r')) {
        return Error(tok_.position, "Syntax error: unterminated string");
      }
      ++pos_;
      if (c == '\\' && !raw) {
        if (absl::Status s = LexEscape(value); !s.ok()) return s;
      } else {
        value.push_back(c);
      }
    }
    tok_.kind = Tok::kString;
    tok_.text = std::move(value);
    return absl::OkStatus();
  }

  // ---- parser ----

  std::unique_ptr<Node> MakeNode(Op op, std::size_t position) {
    auto node = std::make_unique<Node>();
    node->op = op;
    node->position = position;
    return node;
  }

  // Makes `child` the next operand of `parent`, keeping parent's depth.
  static void Adopt(Node& parent, std::unique_ptr<Node> child) {
    parent.depth = std::max(parent.depth, child->depth + 1);
    parent.operands.push_back(std::move(child));
  }

  // Guards the recursion: nesting deeper than kMaxNestingDepth is refused before the stack
  // grows with it.
  absl::Status Enter() {
    if (++depth_ > kMaxNestingDepth) {
      return Error(tok_.position,
                   absl::StrCat("expression nested deeper than ", kMaxNestingDepth, " levels"));
    }
    return absl::OkStatus();
  }

  // cel-go balances chains of && and || into trees of logarithmic depth.
  std::unique_ptr<Node> Balance(Op op, std::vector<std::unique_ptr<Node>>& terms,
                                const std::vector<std::size_t>& positions, std::size_t lo,
                                std::size_t hi) {
    if (lo == hi) return std::move(terms[lo]);
    const std::size_t mid = (lo + hi + 1) / 2;
    auto node = MakeNode(op, positions[mid - 1]);
    Adopt(*node, Balance(op, terms, positions, lo, mid - 1));
    Adopt(*node, Balance(op, terms, positions, mid, hi));
    return node;
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseLogical(Op op) {
    const char* punct = op == Op::kOr ? "||" : "&&";
    std::vector<std::unique_ptr<Node>> terms;
    std::vector<std::size_t> positions;  // of each operator
    while (true) {
      absl::StatusOr<std::unique_ptr<Node>> term =
          op == Op::kOr ? ParseLogical(Op::kAnd) : ParseRelation();
      if (!term.ok()) return term;
      terms.push_back(*std::move(term));
      if (!IsPunct(punct)) break;
      positions.push_back(tok_.position);
      if (absl::Status s = Advance(); !s.ok()) return s;
    }
    return Balance(op, terms, positions, 0, terms.size() - 1);
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseOr() {
    absl::StatusOr<std::unique_ptr<Node>> node = ParseLogical(Op::kOr);
    if (node.ok() && IsPunct("?")) {
      return Error(tok_.position,
                   absl::StrCat("the conditional operator ?: is not supported here", kSubset));
    }
    return node;
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseRelation() {
    absl::StatusOr<std::unique_ptr<Node>> left = ParseUnary();
    if (!left.ok()) return left;
    while (true) {
      Op op;
      if (IsPunct("==")) {
        op = Op::kEq;
      } else if (IsPunct("!=")) {
        op = Op::kNe;
      } else if (IsPunct("<")) {
        op = Op::kLt;
      } else if (IsPunct("<=")) {
        op = Op::kLe;
      } else if (IsPunct(">")) {
        op = Op::kGt;
      } else if (IsPunct(">=")) {
        op = Op::kGe;
      } else if (tok_.kind == Tok::kIdent && tok_.text == "in") {
        op = Op::kIn;
      } else if (IsPunct("+") || IsPunct("-") || IsPunct("*") || IsPunct("/") || IsPunct("%")) {
        return Error(tok_.position, absl::StrCat("arithmetic operator '", tok_.text,
                                                 "' is not supported here", kSubset));
      } else {
        return left;
      }
      auto node = MakeNode(op, tok_.position);
      if (absl::Status s = Advance(); !s.ok()) return s;
      absl::StatusOr<std::unique_ptr<Node>> right = ParseUnary();
      if (!right.ok()) return right;
      Adopt(*node, *std::move(left));
      Adopt(*node, *std::move(right));
      left = std::move(node);
    }
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseUnary() {
    if (absl::Status s = Enter(); !s.ok()) return s;
    absl::StatusOr<std::unique_ptr<Node>> result;
    if (IsPunct("!") || IsPunct("-")) {
      const bool negate = tok_.text == "-";
      const std::size_t at = tok_.position;
      if (absl::Status s = Advance(); !s.ok()) return s;
      // -9223372036854775808 is a literal, not a negation of an int that overflows.
      if (negate && tok_.kind == Tok::kInt) {
        auto literal = MakeNode(Op::kInt, at);
        literal->int_value = static_cast<std::int64_t>(-static_cast<std::uint64_t>(tok_.int_value));
        if (absl::Status s = Advance(); !s.ok()) return s;
        result = ParseMember(std::move(literal));
      } else {
        absl::StatusOr<std::unique_ptr<Node>> operand = ParseUnary();
        if (!operand.ok()) return operand;
        auto node = MakeNode(negate ? Op::kNegate : Op::kNot, at);
        Adopt(*node, *std::move(operand));
        result = std::move(node);
      }
    } else {
      absl::StatusOr<std::unique_ptr<Node>> primary = ParsePrimary();
      if (!primary.ok()) return primary;
      result = ParseMember(*std::move(primary));
    }
    --depth_;
    return result;
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseMember(std::unique_ptr<Node> operand) {
    while (true) {
      if (IsPunct("[")) {
        return Error(tok_.position,
                     absl::StrCat("indexing with [] is not supported here", kSubset));
      }
      if (!IsPunct(".")) return operand;
      if (absl::Status s = Advance(); !s.ok()) return s;
      if (tok_.kind != Tok::kIdent) return Unexpected();
      auto node = MakeNode(Op::kSelect, tok_.position);
      node->text = tok_.text;
      if (absl::Status s = Advance(); !s.ok()) return s;
      if (IsPunct("(")) {
        return Error(node->position,
                     absl::StrCat("function '", node->text, "' is not supported here", kSubset));
      }
      Adopt(*node, std::move(operand));
      operand = std::move(node);
    }
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseList() {
    auto list = MakeNode(Op::kList, tok_.position);
    if (absl::Status s = Advance(); !s.ok()) return s;
    while (!IsPunct("]")) {
      absl::StatusOr<std::unique_ptr<Node>> element = ParseOr();
      if (!element.ok()) return element;
      Adopt(*list, *std::move(element));
      if (IsPunct(",")) {
        if (absl::Status s = Advance(); !s.ok()) return s;
      } else if (!IsPunct("]")) {
        return Unexpected();
      }
    }
    if (absl::Status s = Advance(); !s.ok()) return s;
    return list;
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseHas(std::size_t at) {
    if (absl::Status s = Advance(); !s.ok()) return s;  // the '('
    absl::StatusOr<std::unique_ptr<Node>> argument = ParseOr();
    if (!argument.ok()) return argument;
    if (!IsPunct(")")) {
      return IsPunct(",") ? Error(tok_.position, "invalid argument to has() macro") : Unexpected();
    }
    if (absl::Status s = Advance(); !s.ok()) return s;
    if ((*argument)->op != Op::kSelect) return Error(at, "invalid argument to has() macro");
    auto node = MakeNode(Op::kHas, at);
    node->text = (*argument)->text;
    Adopt(*node, std::move((*argument)->operands[0]));
    return node;
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseIdent() {
    const Token ident = tok_;
    if (absl::Status s = Advance(); !s.ok()) return s;
    if (IsPunct("(")) {
      if (ident.text == "has") return ParseHas(ident.position);
      return Error(ident.position,
                   absl::StrCat("function '", ident.text, "' is not supported here", kSubset));
    }
    if (ident.text == "true" || ident.text == "false") {
      auto node = MakeNode(Op::kBool, ident.position);
      node->bool_value = ident.text == "true";
      return node;
    }
    if (ident.text == "null") return MakeNode(Op::kNull, ident.position);
    if (ident.text == "self") return MakeNode(Op::kSelf, ident.position);
    if (ident.text == "oldSelf") {
      return Error(ident.position,
                   absl::StrCat("transition rules (oldSelf) are not supported here", kSubset));
    }
    return Error(ident.position,
                 absl::StrCat("undeclared reference to '", ident.text, "' (in container '')"));
  }

  absl::StatusOr<std::unique_ptr<Node>> ParsePrimary() {
    switch (tok_.kind) {
      case Tok::kInt: {
        if (tok_.int_value < 0) return Error(tok_.position, "invalid int literal: " + tok_.text);
        auto node = MakeNode(Op::kInt, tok_.position);
        node->int_value = tok_.int_value;
        if (absl::Status s = Advance(); !s.ok()) return s;
        return node;
      }
      case Tok::kDouble: {
        auto node = MakeNode(Op::kDouble, tok_.position);
        node->double_value = tok_.double_value;
        if (absl::Status s = Advance(); !s.ok()) return s;
        return node;
      }
      case Tok::kString: {
        auto node = MakeNode(Op::kString, tok_.position);
        node->text = tok_.text;
        if (absl::Status s = Advance(); !s.ok()) return s;
        return node;
      }
      case Tok::kIdent:
        return ParseIdent();
      case Tok::kPunct:
        break;
      case Tok::kEnd:
        return Unexpected();
    }
    if (IsPunct("[")) return ParseList();
    if (IsPunct("{")) {
      return Error(tok_.position, absl::StrCat("map literals are not supported here", kSubset));
    }
    if (IsPunct(".")) {
      return Error(tok_.position, absl::StrCat("qualified names are not supported here", kSubset));
    }
    if (!IsPunct("(")) return Unexpected();
    if (absl::Status s = Advance(); !s.ok()) return s;
    absl::StatusOr<std::unique_ptr<Node>> inner = ParseOr();
    if (!inner.ok()) return inner;
    if (!IsPunct(")")) {
      return tok_.kind == Tok::kEnd ? Error(tok_.position, "Syntax error: missing ')'")
                                    : Unexpected();
    }
    if (absl::Status s = Advance(); !s.ok()) return s;
    return inner;
  }

  std::string_view in_;
  std::size_t pos_ = 0;
  Token tok_;
  int depth_ = 0;
};

}  // namespace

std::string Issue(std::string_view expression, std::size_t position, std::string_view message) {
  position = std::min(position, expression.size());
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < position; ++i) {
    if (expression[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  std::size_t line_end = expression.find('\n', line_start);
  if (line_end == std::string_view::npos) line_end = expression.size();
  const std::size_t column = position - line_start;
  return absl::StrCat("ERROR: <input>:", line, ":", column + 1, ": ", std::string(message), "\n | ",
                      std::string(expression.substr(line_start, line_end - line_start)), "\n | ",
                      std::string(column, '.'), "^");
}

absl::StatusOr<std::unique_ptr<Node>> Parse(std::string_view expression) {
  if (expression.size() > kMaxExpressionBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expression is ", expression.size(), " bytes long; the limit is ", kMaxExpressionBytes));
  }
  return Parser(expression).ParseAll();
}

}  // namespace wavepool::testing::apiserver::cel
