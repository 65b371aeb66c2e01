// The grammar of k8s.io/apimachinery/pkg/labels/selector.go: a lexer over identifiers and the
// operators = == != ! in notin ( ) , < >, then one requirement per comma-separated term.
#include "tests/support/apiserver/label_selector.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/names.h"

namespace wavepool::testing::apiserver {
namespace {

enum class Token {
  kEnd,
  kIdentifier,
  kEquals,
  kDoubleEquals,
  kNotEquals,
  kBang,
  kIn,
  kNotIn,
  kOpenParen,
  kCloseParen,
  kComma,
  kGreater,
  kLess
};

struct Lexeme {
  Token token = Token::kEnd;
  std::string text;
};

bool IsSpecial(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '<' || c == '>';
}

std::vector<Lexeme> Lex(std::string_view text) {
  std::vector<Lexeme> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '=' || c == '!') {
      const bool two = i + 1 < text.size() && text[i + 1] == '=';
      if (c == '=') out.push_back({two ? Token::kDoubleEquals : Token::kEquals, two ? "==" : "="});
      if (c == '!') out.push_back({two ? Token::kNotEquals : Token::kBang, two ? "!=" : "!"});
      i += two ? 2 : 1;
    } else if (IsSpecial(c)) {
      const Token t = c == '('   ? Token::kOpenParen
                      : c == ')' ? Token::kCloseParen
                      : c == ',' ? Token::kComma
                      : c == '<' ? Token::kLess
                                 : Token::kGreater;
      out.push_back({t, std::string(1, c)});
      ++i;
    } else {
      std::size_t j = i;
      while (j < text.size() && !IsSpecial(text[j]) &&
             !std::isspace(static_cast<unsigned char>(text[j]))) {
        ++j;
      }
      std::string word(text.substr(i, j - i));
      const Token t = word == "in"      ? Token::kIn
                      : word == "notin" ? Token::kNotIn
                                        : Token::kIdentifier;
      out.push_back({t, std::move(word)});
      i = j;
    }
  }
  out.push_back({Token::kEnd, ""});
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<Lexeme> lexemes) : lexemes_(std::move(lexemes)) {}

  absl::StatusOr<std::vector<LabelSelector::Requirement>> ParseAll() {
    std::vector<LabelSelector::Requirement> out;
    if (Peek().token == Token::kEnd) return out;
    for (;;) {
      absl::StatusOr<LabelSelector::Requirement> r = ParseRequirement();
      if (!r.ok()) return r.status();
      out.push_back(*std::move(r));
      const Lexeme& next = Take();
      if (next.token == Token::kEnd) return out;
      if (next.token != Token::kComma) {
        return Error(absl::StrCat("found '", next.text, "', expected: ',' or 'end of string'"));
      }
    }
  }

 private:
  const Lexeme& Peek() const { return lexemes_[pos_]; }
  const Lexeme& Take() {
    const Lexeme& l = lexemes_[pos_];
    if (pos_ + 1 < lexemes_.size()) ++pos_;
    return l;
  }
  static absl::Status Error(std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("unable to parse requirement: ", std::string(what)));
  }
  static std::string Shown(const Lexeme& l) {
    return l.token == Token::kEnd ? "end of string" : l.text;
  }

  absl::StatusOr<LabelSelector::Requirement> ParseRequirement() {
    LabelSelector::Requirement r;
    const bool negated = Peek().token == Token::kBang;
    if (negated) Take();
    const Lexeme& key = Take();
    if (key.token != Token::kIdentifier) {
      return Error(absl::StrCat("found '", Shown(key), "', expected: identifier"));
    }
    const std::string key_problem = CheckQualifiedName(key.text);
    if (!key_problem.empty()) {
      return Error(absl::StrCat("key: ", InvalidValueBody(key.text, key_problem)));
    }
    r.key = key.text;
    const Token next = Peek().token;
    if (negated || next == Token::kEnd || next == Token::kComma) {
      r.op = negated ? LabelSelector::Operator::kDoesNotExist : LabelSelector::Operator::kExists;
      if (negated && next != Token::kEnd && next != Token::kComma) {
        return Error(absl::StrCat("found '", Peek().text, "', expected: ',' or 'end of string'"));
      }
      return r;
    }
    const Lexeme& op = Take();
    switch (op.token) {
      case Token::kEquals:
      case Token::kDoubleEquals:
        r.op = LabelSelector::Operator::kEquals;
        break;
      case Token::kNotEquals:
        r.op = LabelSelector::Operator::kNotEquals;
        break;
      case Token::kIn:
        r.op = LabelSelector::Operator::kIn;
        break;
      case Token::kNotIn:
        r.op = LabelSelector::Operator::kNotIn;
        break;
      case Token::kGreater:
        r.op = LabelSelector::Operator::kGreater;
        break;
      case Token::kLess:
        r.op = LabelSelector::Operator::kLess;
        break;
      default:
        return Error(
            absl::StrCat("found '", Shown(op), "', expected: in, notin, =, ==, !=, gt, lt"));
    }
    absl::Status values =
        (r.op == LabelSelector::Operator::kIn || r.op == LabelSelector::Operator::kNotIn)
            ? ParseSet(r)
            : ParseSingle(r);
    if (!values.ok()) return values;
    return r;
  }

  absl::Status ParseSingle(LabelSelector::Requirement& r) {
    std::string value;
    if (Peek().token == Token::kIdentifier)
      value = Take().text;
    else if (Peek().token != Token::kEnd && Peek().token != Token::kComma) {
      return Error(absl::StrCat("found '", Peek().text, "', expected: identifier"));
    }
    if (r.op == LabelSelector::Operator::kGreater || r.op == LabelSelector::Operator::kLess) {
      std::int64_t unused = 0;
      if (!absl::SimpleAtoi(value, &unused)) {
        return Error(absl::StrCat("for 'Gt', 'Lt' operators, the value must be an integer, got \"",
                                  value, "\""));
      }
    } else if (std::string problem = CheckLabelValue(value); !problem.empty()) {
      return Error(absl::StrCat("values[0][", r.key, "]: ", InvalidValueBody(value, problem)));
    }
    r.values.push_back(std::move(value));
    return absl::OkStatus();
  }

  absl::Status ParseSet(LabelSelector::Requirement& r) {
    const Lexeme& open = Take();
    if (open.token != Token::kOpenParen) {
      return Error(absl::StrCat("found '", Shown(open), "', expected: '('"));
    }
    if (Peek().token == Token::kCloseParen) {
      return Error("for 'in', 'notin' operators, values set can't be empty");
    }
    for (;;) {
      std::string value;
      if (Peek().token == Token::kIdentifier) value = Take().text;
      if (std::string problem = CheckLabelValue(value); !problem.empty()) {
        return Error(absl::StrCat("values[", r.values.size(), "][", r.key,
                                  "]: ", InvalidValueBody(value, problem)));
      }
      r.values.push_back(std::move(value));
      const Lexeme& sep = Take();
      if (sep.token == Token::kCloseParen) return absl::OkStatus();
      if (sep.token != Token::kComma) {
        return Error(absl::StrCat("found '", Shown(sep), "', expected: ',', ')' or identifier"));
      }
    }
  }

  std::vector<Lexeme> lexemes_;
  std::size_t pos_ = 0;
};

bool Contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

}  // namespace

absl::StatusOr<LabelSelector> LabelSelector::Parse(std::string_view text) {
  Parser parser(Lex(text));
  absl::StatusOr<std::vector<Requirement>> requirements = parser.ParseAll();
  if (!requirements.ok()) return requirements.status();
  LabelSelector selector;
  selector.requirements_ = *std::move(requirements);
  return selector;
}

bool LabelSelector::Matches(const nlohmann::json& labels) const {
  for (const Requirement& r : requirements_) {
    const bool has = labels.is_object() && labels.contains(r.key) && labels[r.key].is_string();
    const std::string value = has ? labels[r.key].get<std::string>() : "";
    bool ok = false;
    switch (r.op) {
      case Operator::kExists:
        ok = has;
        break;
      case Operator::kDoesNotExist:
        ok = !has;
        break;
      case Operator::kEquals:
      case Operator::kIn:
        ok = has && Contains(r.values, value);
        break;
      case Operator::kNotEquals:
      case Operator::kNotIn:
        ok = !has || !Contains(r.values, value);
        break;
      case Operator::kGreater:
      case Operator::kLess: {
        std::int64_t have = 0, want = 0;
        ok = has && absl::SimpleAtoi(value, &have) && absl::SimpleAtoi(r.values[0], &want) &&
             (r.op == Operator::kGreater ? have > want : have < want);
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace wavepool::testing::apiserver
