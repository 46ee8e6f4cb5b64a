// PTX tokenizer (private to the PTX front end). Works on a string_view and never allocates:
// every token is a view into the text being parsed.
//
// PTX lexing has one twist: dots and `::` join words into one token, so `ld.global.v4.f32`,
// `.shared::cta`, `%tid.x` and `mbarrier::complete_tx::bytes` are single Identifier or
// Directive tokens. The parser splits them where it needs to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace argus::ptx::detail {

/// What a token is. Punctuation tokens carry their single character in `text`.
enum class TokenKind : uint8_t {
  End,           ///< End of input; `text` is empty.
  Identifier,    ///< `ld.global.f32`, `%r1`, `%tid.x`, `$L__BB0_3`, `_`, `sm_90a`.
  Directive,     ///< A word starting with a dot: `.reg`, `.shared::cta`, `.ptr.global.align`.
  Number,        ///< `12`, `0x1F`, `0f3F800000`, `0d3FF0000000000000`, `1.5`, `9.0`.
  String,        ///< `"nounroll"` including the quotes.
  LineComment,   ///< `// text`; `text` includes the slashes, not the newline.
  BlockComment,  ///< `/* text */` including the delimiters.
  Punct,         ///< One of `, ; : { } [ ] ( ) < > + - @ ! | = * / ~ & ^ ?`.
  Error,         ///< A byte that cannot start any token, or an unterminated string/comment.
};

/// One token: a view into the source plus where it starts.
struct Token {
  TokenKind kind = TokenKind::End;
  std::string_view text;
  std::size_t offset = 0;      ///< Byte offset of the first character.
  uint32_t line = 1;           ///< 1-based.
  uint32_t column = 1;         ///< 1-based, in bytes.
  bool newlineBefore = false;  ///< A line break separates this token from the previous one.

  /// True for a punctuation token with this character.
  [[nodiscard]] bool is(char c) const {
    return kind == TokenKind::Punct && text.size() == 1 && text[0] == c;
  }
  /// True for an Identifier or Directive token with exactly this text.
  [[nodiscard]] bool isWord(std::string_view word) const {
    return (kind == TokenKind::Identifier || kind == TokenKind::Directive) && text == word;
  }
};

/// Sequential tokenizer. Copying a Lexer snapshots its position (used for lookahead).
class Lexer {
 public:
  /// Tokenizes `text`, which must outlive the lexer and every token it returns.
  explicit Lexer(std::string_view text) : input(text) {}

  /// Returns the next token (comments included) and advances; End repeats forever at the end.
  Token next();
  /// Returns the next token without advancing.
  [[nodiscard]] Token peek() const {
    Lexer copy = *this;
    return copy.next();
  }
  /// The whole input.
  [[nodiscard]] std::string_view source() const { return input; }

 private:
  void skipWhitespace(bool& sawNewline);

  std::string_view input;
  std::size_t pos = 0;
  uint32_t line = 1;
  std::size_t lineStart = 0;
};

/// A printable description of a token for error messages: `';'`, `identifier 'foo'`, `end of
/// file`; non-printable bytes are written as \xNN.
[[nodiscard]] std::string describeToken(const Token& token);

/// True for characters that may continue a PTX identifier (letters, digits, `_`, `$`).
[[nodiscard]] constexpr bool isIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$';
}

}  // namespace argus::ptx::detail
