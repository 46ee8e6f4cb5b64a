#include "lexer.h"

#include <fmt/format.h>

namespace argus::ptx::detail {
namespace {

constexpr bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

constexpr bool isPunct(char c) {
  switch (c) {
    case ',':
    case ';':
    case ':':
    case '{':
    case '}':
    case '[':
    case ']':
    case '(':
    case ')':
    case '<':
    case '>':
    case '+':
    case '-':
    case '@':
    case '!':
    case '|':
    case '=':
    case '*':
    case '/':
    case '~':
    case '&':
    case '^':
    case '?':
    case '%':
      return true;
    default:
      return false;
  }
}

}  // namespace

void Lexer::skipWhitespace(bool& sawNewline) {
  while (pos < input.size()) {
    char c = input[pos];
    if (c == '\n') {
      sawNewline = true;
      ++pos;
      ++line;
      lineStart = pos;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++pos;
    } else {
      break;
    }
  }
}

Token Lexer::next() {
  Token token;
  skipWhitespace(token.newlineBefore);
  token.offset = pos;
  token.line = line;
  token.column = static_cast<uint32_t>(pos - lineStart + 1);
  if (pos >= input.size()) {
    token.kind = TokenKind::End;
    token.text = input.substr(input.size());
    return token;
  }
  const std::size_t start = pos;
  const std::size_t n = input.size();
  const char c = input[pos];
  // Extends an identifier over letters/digits and over `.` or `::` that join words.
  auto scanWord = [&] {
    while (pos < n) {
      if (isIdentChar(input[pos])) {
        ++pos;
      } else if (input[pos] == '.' && pos + 1 < n && isIdentChar(input[pos + 1])) {
        pos += 2;
      } else if (input[pos] == ':' && pos + 2 < n && input[pos + 1] == ':' &&
                 isIdentChar(input[pos + 2])) {
        pos += 3;
      } else {
        break;
      }
    }
  };

  if (c == '/' && pos + 1 < n && input[pos + 1] == '/') {
    token.kind = TokenKind::LineComment;
    while (pos < n && input[pos] != '\n') ++pos;
  } else if (c == '/' && pos + 1 < n && input[pos + 1] == '*') {
    std::size_t end = input.find("*/", pos + 2);
    if (end == std::string_view::npos) {
      token.kind = TokenKind::Error;
      pos = n;
    } else {
      token.kind = TokenKind::BlockComment;
      // Keep line counting right across the comment.
      for (std::size_t i = pos; i < end; ++i) {
        if (input[i] == '\n') {
          ++line;
          lineStart = i + 1;
        }
      }
      pos = end + 2;
    }
  } else if (c == '"') {
    ++pos;
    while (pos < n && input[pos] != '"' && input[pos] != '\n') {
      if (input[pos] == '\\' && pos + 1 < n && input[pos + 1] != '\n') ++pos;
      ++pos;
    }
    if (pos < n && input[pos] == '"') {
      ++pos;
      token.kind = TokenKind::String;
    } else {
      token.kind = TokenKind::Error;
    }
  } else if (isDigit(c)) {
    token.kind = TokenKind::Number;
    const bool prefixed =
        c == '0' && pos + 1 < n &&
        (input[pos + 1] == 'x' || input[pos + 1] == 'X' || input[pos + 1] == 'f' ||
         input[pos + 1] == 'F' || input[pos + 1] == 'd' || input[pos + 1] == 'D' ||
         input[pos + 1] == 'b' || input[pos + 1] == 'B');
    while (pos < n) {
      char d = input[pos];
      if (isIdentChar(d) || d == '.') {
        ++pos;
      } else if ((d == '+' || d == '-') && !prefixed &&
                 (input[pos - 1] == 'e' || input[pos - 1] == 'E') && pos + 1 < n &&
                 isDigit(input[pos + 1])) {
        ++pos;  // exponent sign of a decimal float: 1.5e-3
      } else {
        break;
      }
    }
  } else if (c == '.' && pos + 1 < n && isIdentChar(input[pos + 1])) {
    token.kind = TokenKind::Directive;
    ++pos;
    scanWord();
  } else if (isIdentChar(c) || (c == '%' && pos + 1 < n && isIdentChar(input[pos + 1]))) {
    token.kind = TokenKind::Identifier;
    ++pos;
    scanWord();
  } else if (isPunct(c)) {
    token.kind = TokenKind::Punct;
    ++pos;
  } else {
    token.kind = TokenKind::Error;
    ++pos;
  }
  token.text = input.substr(start, pos - start);
  return token;
}

std::string describeToken(const Token& token) {
  if (token.kind == TokenKind::End) return "end of file";
  std::string shown;
  std::string_view text = token.text;
  const bool truncated = text.size() > 32;
  if (truncated) text = text.substr(0, 32);
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      shown += fmt::format("\\x{:02X}", u);
    } else {
      shown += c;
    }
  }
  if (truncated) shown += "...";
  switch (token.kind) {
    case TokenKind::Identifier:
      return fmt::format("identifier '{}'", shown);
    case TokenKind::Directive:
      return fmt::format("directive '{}'", shown);
    case TokenKind::Number:
      return fmt::format("number '{}'", shown);
    case TokenKind::String:
      return fmt::format("string {}", shown);
    case TokenKind::LineComment:
    case TokenKind::BlockComment:
      return "a comment";
    case TokenKind::Error:
      if (!token.text.empty() && (token.text[0] == '"')) return "an unterminated string";
      if (token.text.starts_with("/*")) return "an unterminated /* comment";
      return fmt::format("unexpected character '{}'", shown);
    default:
      return fmt::format("'{}'", shown);
  }
}

}  // namespace argus::ptx::detail
