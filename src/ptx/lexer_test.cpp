#include "lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace argus::ptx::detail {
namespace {

std::vector<Token> lexAll(std::string_view text) {
  std::vector<Token> tokens;
  Lexer lexer(text);
  for (int guard = 0; guard < 10000; ++guard) {
    Token t = lexer.next();
    if (t.kind == TokenKind::End) break;
    tokens.push_back(t);
  }
  return tokens;
}

std::vector<std::string> texts(std::string_view text) {
  std::vector<std::string> out;
  for (const Token& t : lexAll(text)) out.emplace_back(t.text);
  return out;
}

TEST(Lexer, DottedOpcodesAreOneToken) {
  auto t =
      lexAll("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1];");
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].kind, TokenKind::Identifier);
  EXPECT_EQ(t[0].text,
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes");
  EXPECT_TRUE(t[1].is('['));
  EXPECT_EQ(t[2].text, "%r1");
  EXPECT_TRUE(t[3].is(']'));
  EXPECT_TRUE(t[4].is(';'));
}

TEST(Lexer, RegistersDirectivesAndSpecialRegisters) {
  EXPECT_EQ(texts(".reg .b32 %r<10>;"),
            (std::vector<std::string>{".reg", ".b32", "%r", "<", "10", ">", ";"}));
  EXPECT_EQ(texts("mov.u32 %r1, %tid.x;"),
            (std::vector<std::string>{"mov.u32", "%r1", ",", "%tid.x", ";"}));
  auto t = lexAll(".param .u64 .ptr.global.align 16 p");
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[2].kind, TokenKind::Directive);
  EXPECT_EQ(t[2].text, ".ptr.global.align");
  EXPECT_EQ(t[3].kind, TokenKind::Number);
}

TEST(Lexer, Numbers) {
  for (std::string_view n : {"0", "42", "0x1F", "0xffffffff", "0f3F800000", "0d3FF0000000000000",
                             "9.0", "1.5e-3", "0b101", "17U"}) {
    auto t = lexAll(n);
    ASSERT_EQ(t.size(), 1u) << n;
    EXPECT_EQ(t[0].kind, TokenKind::Number) << n;
    EXPECT_EQ(t[0].text, n);
  }
  EXPECT_EQ(texts("[%rd1+-8]"), (std::vector<std::string>{"[", "%rd1", "+", "-", "8", "]"}));
}

TEST(Lexer, PairsLabelsAndSinks) {
  EXPECT_EQ(texts("elect.sync %r1|%p1, -1;"),
            (std::vector<std::string>{"elect.sync", "%r1", "|", "%p1", ",", "-", "1", ";"}));
  EXPECT_EQ(texts("$L__BB0_3:"), (std::vector<std::string>{"$L__BB0_3", ":"}));
  EXPECT_EQ(texts("_|P1"), (std::vector<std::string>{"_", "|", "P1"}));
}

TEST(Lexer, CommentsAndStrings) {
  auto t = lexAll("// @argus begin main iter=%r5\n/* a\nb */ .pragma \"nounroll\";");
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].kind, TokenKind::LineComment);
  EXPECT_EQ(t[0].text, "// @argus begin main iter=%r5");
  EXPECT_EQ(t[1].kind, TokenKind::BlockComment);
  EXPECT_TRUE(t[1].newlineBefore);
  EXPECT_EQ(t[2].line, 3u);
  EXPECT_EQ(t[2].column, 6u);
  EXPECT_FALSE(t[2].newlineBefore);
  EXPECT_EQ(t[3].kind, TokenKind::String);
  EXPECT_EQ(t[3].text, "\"nounroll\"");
}

TEST(Lexer, LineAndColumn) {
  auto t = lexAll("a\n\tb c\n\n  d");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[1].line, 2u);
  EXPECT_EQ(t[1].column, 2u);
  EXPECT_EQ(t[2].column, 4u);
  EXPECT_EQ(t[3].line, 4u);
  EXPECT_EQ(t[3].column, 3u);
  EXPECT_TRUE(t[3].newlineBefore);
}

TEST(Lexer, ErrorsNeverStall) {
  for (std::string_view bad : {"\"unterminated", "/* open", "\x01\x02\xff", "#", "`"}) {
    auto t = lexAll(bad);
    ASSERT_FALSE(t.empty()) << bad;
    EXPECT_EQ(t[0].kind, TokenKind::Error) << bad;
  }
  EXPECT_EQ(describeToken(lexAll("\xff")[0]), "unexpected character '\\xFF'");
  EXPECT_EQ(describeToken(Lexer("").next()), "end of file");
}

TEST(Lexer, EndRepeats) {
  Lexer lexer("x");
  EXPECT_EQ(lexer.next().text, "x");
  EXPECT_EQ(lexer.next().kind, TokenKind::End);
  EXPECT_EQ(lexer.next().kind, TokenKind::End);
}

}  // namespace
}  // namespace argus::ptx::detail
