#include "argus/ptx/printer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "argus/ptx/parser.h"
#include "ptx_test_util.h"

namespace argus::ptx {
namespace {

using testing::kernelPtx;
using testing::parseOrDie;

Operand reg(std::string name) {
  return Operand{Operand::Kind::Register, std::move(name), 0, false, {}};
}

TEST(Printer, Operands) {
  Operand address{Operand::Kind::Address, "", -8, false, {reg("%rd1")}};
  EXPECT_EQ(printOperand(address), "[%rd1+-8]");
  address.offset = 16;
  EXPECT_EQ(printOperand(address), "[%rd1+16]");
  address.offset = 0;
  address.elements.push_back(
      Operand{Operand::Kind::Vector, "", 0, false, {reg("%r1"), reg("%r2")}});
  EXPECT_EQ(printOperand(address), "[%rd1, {%r1, %r2}]");
  EXPECT_EQ(printOperand(Operand{Operand::Kind::Vector,
                                 "|",
                                 0,
                                 false,
                                 {Operand{Operand::Kind::Sink, "_", 0, false, {}}, reg("P1")}}),
            "_|P1");
  EXPECT_EQ(printOperand(Operand{Operand::Kind::Vector, "(", 0, false, {}}), "()");
  EXPECT_EQ(printOperand(Operand{Operand::Kind::Vector, "(", 0, false, {reg("a"), reg("b")}}),
            "(a, b)");
  EXPECT_EQ(printOperand(Operand{Operand::Kind::Register, "%p1", 0, true, {}}), "!%p1");
  EXPECT_EQ(printOperand(Operand{Operand::Kind::Symbol, "kTable", 4, false, {}}), "kTable+4");
  EXPECT_EQ(printOperand(Operand{Operand::Kind::Sink, "", 0, false, {}}), "_");
  EXPECT_EQ(printOperand(Operand{Operand::Kind::Immediate, "0f3F800000", 0, false, {}}),
            "0f3F800000");
}

TEST(Printer, StatementsReadBackTheSame) {
  const std::string body =
      "\t@!%p1 bra.uni $L__BB0_2;\n\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], %r2;\n"
      "\telect.sync %r3|%p3, -1;\n\t// @argus begin mainloop\n\t/* block */\n"
      "\t.loc 1 2 3\n\t.pragma \"nounroll\";\n\t.shared .align 8 .b8 bar[16];\n$L__BB0_2:\n";
  Module m = parseOrDie(kernelPtx(body));
  const auto& stmts = m.findFunction("k")->body;
  ASSERT_EQ(stmts.size(), 11u);
  EXPECT_EQ(printStatement(stmts[2]), "@!%p1 bra.uni $L__BB0_2;");
  EXPECT_EQ(printStatement(stmts[3]), "mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], %r2;");
  EXPECT_EQ(printStatement(stmts[4]), "elect.sync %r3|%p3, -1;");
  EXPECT_EQ(printStatement(stmts[5]), "// @argus begin mainloop");
  EXPECT_EQ(printStatement(stmts[6]), "/* block */");
  EXPECT_EQ(printStatement(stmts[7]), ".loc 1 2 3");
  EXPECT_EQ(printStatement(stmts[8]), ".pragma \"nounroll\";");
  EXPECT_EQ(printStatement(stmts[9]), ".shared .align 8 .b8 bar[16];");
  EXPECT_EQ(printStatement(stmts[10]), "$L__BB0_2:");
  EXPECT_EQ(printStatement(stmts[0]), ".reg .pred %p<4>;");
}

TEST(Printer, ModuleLayout) {
  Module m = parseOrDie(
      "//\n// Generated\n//\n\n.version 9.0\n.target sm_90a\n.address_size 64\n\n"
      ".global .align 4 .f32 g = 0f3FC00000;\n"
      ".extern .func (.param .b32 r) f(.param .b32 a);\n"
      ".visible .entry k(.param .u64 .ptr.global.align 16 k_param_0, .param .u32 k_param_1)\n"
      ".maxntid 128, 1, 1\n{\n.reg .pred %p<2>;\n  { .reg .pred p;\nL1:\n @p bra L1; }\n"
      "$L__BB0_1:\n\tret;\n}\n// end\n");
  EXPECT_EQ(printModule(m),
            "//\n// Generated\n//\n.version 9.0\n.target sm_90a\n.address_size 64\n\n"
            ".global .align 4 .f32 g = 0f3FC00000;\n\n"
            ".extern .func (.param .b32 r) f(\n\t.param .b32 a\n)\n;\n\n"
            ".visible .entry k(\n\t.param .u64 .ptr.global.align 16 k_param_0,\n"
            "\t.param .u32 k_param_1\n)\n.maxntid 128, 1, 1\n{\n"
            "\t.reg .pred %p<2>;\n\t{\n\t\t.reg .pred p;\n\nL1:\n\t\t@p bra L1;\n\t}\n"
            "\n$L__BB0_1:\n\tret;\n}\n\n// end\n");
}

TEST(Printer, PassInsertedStatementsPrint) {
  Module m = parseOrDie(kernelPtx("\tret;\n"));
  Function* k = m.functions().front();
  Statement marker;
  marker.kind = Statement::Kind::Comment;
  marker.text = "@argus end mainloop";
  k->body.insert(k->body.begin() + 2, marker);
  Statement mov;
  mov.instruction.opcode = "mov.u32";
  mov.instruction.operands = {reg("%r1"), reg("%clock")};
  k->body.insert(k->body.begin() + 2, mov);
  const std::string printed = printModule(m);
  EXPECT_NE(printed.find("\tmov.u32 %r1, %clock;\n\t// @argus end mainloop\n\tret;\n"),
            std::string::npos)
      << printed;
}

TEST(Printer, PrintingIsAFixedPointOnEveryFixture) {
  int seen = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(ARGUS_TEST_DATA_DIR) / "ptx")) {
    if (entry.path().extension() != ".ptx") continue;
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto first = parseModule(ss.str(), entry.path().filename().string());
    ASSERT_TRUE(first.has_value()) << first.error().text();
    const std::string printed = printModule(*first);
    auto second = parseModule(printed, "printed.ptx");
    ASSERT_TRUE(second.has_value()) << second.error().text();
    EXPECT_EQ(printModule(*second), printed);
    ASSERT_EQ(second->items.size(), first->items.size());
    for (std::size_t i = 0; i < first->items.size(); ++i) {
      EXPECT_EQ(second->items[i].function.body.size(), first->items[i].function.body.size());
    }
    ++seen;
  }
  EXPECT_GT(seen, 0);
}

TEST(Printer, DeeplyNestedBlocksPrintWithBoundedIndentation) {
  // 100,000 nested `{ }` scopes: one tab per level would print about 10 GB.
  constexpr size_t kDepth = 100000;
  std::string body;
  for (size_t i = 0; i < kDepth; ++i) body += "{\n";
  body += "mov.u32 %r1, 1;\n";
  for (size_t i = 0; i < kDepth; ++i) body += "}\n";
  Module m = parseOrDie(kernelPtx(body));
  const std::string printed = printModule(m);
  EXPECT_LT(printed.size(), (2 * kDepth + 1) * (kMaxIndentDepth + 2) + 4096);
  // Shallow code keeps nvcc's layout: one tab per level.
  EXPECT_NE(printed.find("\n\t\t{\n"), std::string::npos);
  EXPECT_NE(printed.find(std::string("\n") + std::string(kMaxIndentDepth, '\t') + "{\n"),
            std::string::npos);
  EXPECT_EQ(printed.find(std::string(kMaxIndentDepth + 1, '\t')), std::string::npos);
  Module again = parseOrDie(printed);
  EXPECT_EQ(printModule(again), printed);
  EXPECT_EQ(again.functions().front()->body.size(), m.functions().front()->body.size());
}

}  // namespace
}  // namespace argus::ptx
