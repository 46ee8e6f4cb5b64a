#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "ptx_test_util.h"

namespace argus::ptx {
namespace {

using testing::kernelPtx;
using testing::parseOrDie;

/// The statements of the kernel `k` in `kernelPtx(body)`, after its two `.reg` declarations.
std::vector<Statement> bodyOf(const std::string& body) {
  Module module = parseOrDie(kernelPtx(body));
  const Function* k = module.findFunction("k");
  if (k == nullptr || k->body.size() < 2) return {};
  return {k->body.begin() + 2, k->body.end()};
}

Instruction onlyInstruction(const std::string& line) {
  auto body = bodyOf("\t" + line + "\n");
  EXPECT_EQ(body.size(), 1u) << line;
  if (body.empty() || body[0].kind != Statement::Kind::Instruction) return {};
  return body[0].instruction;
}

std::string errorOf(const std::string& text) {
  auto module = parseModule(text, "bad.ptx");
  EXPECT_FALSE(module.has_value()) << "parsed without error:\n" << text;
  return module ? std::string() : module.error().message;
}

std::string readFixture(const std::string& name) {
  std::ifstream in(std::filesystem::path(ARGUS_TEST_DATA_DIR) / "ptx" / name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Parser, ModuleDirectivesVariablesAndFunctions) {
  Module m = parseOrDie(
      "//\n// header\n.version 9.0\n.target sm_90a\n.address_size 64\n"
      ".const .align 4 .b8 kTable[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 252, 255, 255, 255};\n"
      ".global .align 4 .f32 gScale = 0f3FC00000;\n"
      ".extern .shared .align 16 .b8 global_smem[];\n"
      ".extern .func (.param .b32 func_retval0) vprintf(\n\t.param .b64 a,\n\t.param .b64 b\n);\n"
      ".visible .entry k(\n\t.param .align 64 .b8 k_param_0[128],\n"
      "\t.param .u64 .ptr.global.align 16 k_param_1,\n"
      "\t.param .u64 .ptr .global .align 1 k_param_2\n)\n"
      ".maxntid 384, 1, 1\n.minnctapersm 1\n.explicitcluster\n.reqnctapercluster 2, 1, 1\n"
      ".maxnreg 168\n{\n\tret;\n}\n");
  EXPECT_EQ(m.target(), "sm_90a");
  EXPECT_EQ(m.version(), "9.0");
  ASSERT_EQ(m.items.size(), 10u);
  EXPECT_EQ(m.items[0].kind, TopLevel::Kind::Comment);
  EXPECT_EQ(m.items[1].text, "header");
  EXPECT_EQ(m.items[2].directive.name, ".version");
  EXPECT_EQ(m.items[2].directive.text, "9.0");
  const VariableDecl& table = m.items[5].variable;
  EXPECT_EQ(table.stateSpace, ".const");
  EXPECT_EQ(table.align, 4u);
  EXPECT_EQ(table.type, ".b8");
  EXPECT_EQ(table.name, "kTable");
  ASSERT_EQ(table.dims.size(), 1u);
  EXPECT_EQ(table.dims[0], 16u);
  EXPECT_EQ(table.initializer, "{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 252, 255, 255, 255}");
  EXPECT_EQ(m.items[6].variable.initializer, "0f3FC00000");
  const VariableDecl& smem = m.items[7].variable;
  EXPECT_EQ(smem.linkage, ".extern");
  ASSERT_EQ(smem.dims.size(), 1u);
  EXPECT_FALSE(smem.dims[0].has_value());

  const Function& proto = m.items[8].function;
  EXPECT_FALSE(proto.hasBody);
  EXPECT_FALSE(proto.isEntry);
  EXPECT_EQ(proto.linkage, ".extern");
  ASSERT_EQ(proto.returns.size(), 1u);
  EXPECT_EQ(proto.returns[0].name, "func_retval0");
  EXPECT_EQ(proto.params.size(), 2u);

  const Function& k = m.items[9].function;
  EXPECT_TRUE(k.isEntry);
  EXPECT_TRUE(k.hasBody);
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].align, 64u);
  EXPECT_EQ(k.params[0].dims[0], 128u);
  EXPECT_EQ(k.params[1].type, ".u64");
  EXPECT_EQ(k.params[1].modifiers, std::vector<std::string>{".ptr.global.align 16"});
  EXPECT_EQ(k.params[2].modifiers, std::vector<std::string>{".ptr .global .align 1"});
  ASSERT_EQ(k.performanceDirectives.size(), 5u);
  EXPECT_EQ(k.performanceDirectives[0].name, ".maxntid");
  EXPECT_EQ(k.performanceDirectives[0].text, "384, 1, 1");
  EXPECT_EQ(k.performanceDirectives[2].name, ".explicitcluster");
  EXPECT_EQ(k.performanceDirectives[2].text, "");
  EXPECT_EQ(k.performanceDirectives[4].text, "168");
  EXPECT_EQ(m.functions().size(), 2u);
  EXPECT_EQ(m.findFunction("vprintf"), &proto);
  EXPECT_EQ(m.findFunction("nope"), nullptr);
}

TEST(Parser, RegistersLabelsGuardsAndComments) {
  auto body = bodyOf(
      "\t.reg .b64 %rd<39>;\n\t.loc 1 2 3, function_name $L__info_string0, inlined_at 1 4 5\n"
      "\t// @argus begin mainloop iter=%r5 role=producer\n$L__BB0_1:\n\t@%p1 bra $L__BB0_1;\n"
      "\t@!%p2 bra.uni $L__BB0_1; // trailing\n\t/* block */\n\t.pragma \"nounroll\";\n");
  ASSERT_EQ(body.size(), 9u);
  EXPECT_EQ(body[0].kind, Statement::Kind::Variable);
  EXPECT_EQ(body[0].variable.name, "%rd");
  EXPECT_EQ(body[0].variable.registerCount, 39u);
  EXPECT_EQ(body[1].directive.name, ".loc");
  EXPECT_EQ(body[1].directive.text, "1 2 3, function_name $L__info_string0, inlined_at 1 4 5");
  EXPECT_FALSE(body[1].directive.semicolon);
  EXPECT_EQ(body[2].kind, Statement::Kind::Comment);
  EXPECT_EQ(body[2].text, "@argus begin mainloop iter=%r5 role=producer");
  EXPECT_EQ(body[3].kind, Statement::Kind::Label);
  EXPECT_EQ(body[3].text, "$L__BB0_1");
  ASSERT_TRUE(body[4].instruction.guard.has_value());
  EXPECT_EQ(body[4].instruction.guard->predicate, "%p1");
  EXPECT_FALSE(body[4].instruction.guard->negated);
  EXPECT_TRUE(body[5].instruction.guard->negated);
  EXPECT_EQ(body[5].instruction.operands[0].kind, Operand::Kind::Symbol);
  EXPECT_EQ(body[6].text, "trailing");
  EXPECT_EQ(body[7].text, "block");
  EXPECT_TRUE(body[7].blockComment);
  EXPECT_EQ(body[8].directive.name, ".pragma");
  EXPECT_EQ(body[8].directive.text, "\"nounroll\"");
  EXPECT_TRUE(body[8].directive.semicolon);
  EXPECT_EQ(body[2].loc.line, 14u);
  EXPECT_EQ(body[2].loc.column, 2u);
}

// PTX integer literals as the passes and analyses read them: leading 0 is octal, 0b binary, a U
// suffix is allowed; signed values wrap as 64-bit two's complement.
TEST(Parser, IntegerLiterals) {
  EXPECT_EQ(parseUnsigned("42"), 42u);
  EXPECT_EQ(parseUnsigned("0x2A"), 42u);
  EXPECT_EQ(parseUnsigned("052"), 42u);
  EXPECT_EQ(parseUnsigned("0b101010"), 42u);
  EXPECT_EQ(parseUnsigned("42U"), 42u);
  EXPECT_EQ(parseUnsigned("0"), 0u);
  EXPECT_FALSE(parseUnsigned("09"));  // not octal
  EXPECT_FALSE(parseUnsigned("-1"));
  EXPECT_FALSE(parseUnsigned(""));
  EXPECT_EQ(parseSigned("-010"), -8);
  EXPECT_EQ(parseSigned("+7"), 7);
  EXPECT_EQ(parseSigned("0xFFFFFFFFFFFFFFFF"), -1);
  EXPECT_FALSE(parseSigned("0f3F800000"));  // a float literal is not an integer
  EXPECT_FALSE(parseSigned("-"));
}

TEST(Parser, OperandKinds) {
  Instruction i = onlyInstruction("st.local.v4.f32 [%rd38+16], {%f1, %f2, %f3, %f4};");
  ASSERT_EQ(i.operands.size(), 2u);
  EXPECT_EQ(i.operands[0].kind, Operand::Kind::Address);
  EXPECT_EQ(i.operands[0].offset, 16);
  EXPECT_EQ(i.operands[0].elements[0].text, "%rd38");
  EXPECT_EQ(i.operands[1].kind, Operand::Kind::Vector);
  EXPECT_EQ(i.operands[1].elements.size(), 4u);

  i = onlyInstruction("ld.global.f32 %f1, [%rd5+-8];");
  EXPECT_EQ(i.operands[1].offset, -8);
  i = onlyInstruction("ld.global.f32 %f1, [ %rd5 + 0 ];");
  EXPECT_EQ(i.operands[1].offset, 0);
  i = onlyInstruction("ld.global.f32 %f1, [gScale];");
  EXPECT_EQ(i.operands[1].elements[0].kind, Operand::Kind::Symbol);
  i = onlyInstruction("mov.u64 %rd1, kTable+4;");
  EXPECT_EQ(i.operands[1].kind, Operand::Kind::Symbol);
  EXPECT_EQ(i.operands[1].offset, 4);
  i = onlyInstruction("mov.u32 %r1, %tid.x;");
  EXPECT_EQ(i.operands[1].kind, Operand::Kind::Register);
  EXPECT_EQ(i.operands[1].text, "%tid.x");

  i = onlyInstruction("add.s32 %r1, %r2, -1;");
  EXPECT_EQ(i.operands[2].kind, Operand::Kind::Immediate);
  EXPECT_EQ(i.operands[2].text, "-1");
  for (std::string imm :
       {"0xffffffff", "0f3F800000", "0d3FF0000000000000", "4611686293305360384"}) {
    i = onlyInstruction("mov.b64 %rd1, " + imm + ";");
    EXPECT_EQ(i.operands[1].kind, Operand::Kind::Immediate) << imm;
    EXPECT_EQ(i.operands[1].text, imm);
  }
}

TEST(Parser, HopperInstructions) {
  Instruction i = onlyInstruction(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r34], "
      "[%rd10, {%r35, %r36}], [%r32];");
  EXPECT_EQ(i.baseOpcode(), "cp");
  ASSERT_EQ(i.operands.size(), 3u);
  const Operand& tensor = i.operands[1];
  EXPECT_EQ(tensor.kind, Operand::Kind::Address);
  ASSERT_EQ(tensor.elements.size(), 2u);
  EXPECT_EQ(tensor.elements[1].kind, Operand::Kind::Vector);
  EXPECT_EQ(tensor.elements[1].elements.size(), 2u);

  i = onlyInstruction("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r32], %r33;");
  EXPECT_EQ(i.operands[0].kind, Operand::Kind::Sink);

  i = onlyInstruction("elect.sync %r23|%p2, 0xffffffff;");
  const Operand& pair = i.operands[0];
  EXPECT_EQ(pair.kind, Operand::Kind::Vector);
  EXPECT_EQ(pair.text, "|");
  ASSERT_EQ(pair.elements.size(), 2u);
  EXPECT_EQ(pair.elements[0].text, "%r23");
  EXPECT_EQ(pair.elements[1].kind, Operand::Kind::Register);

  i = onlyInstruction("setmaxnreg.inc.sync.aligned.u32 232;");
  EXPECT_EQ(i.operands[0].text, "232");
  for (std::string op :
       {"wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;",
        "griddepcontrol.launch_dependents;", "barrier.cluster.arrive.release.aligned;",
        "fence.proxy.async.shared::cta;", "prefetch.tensormap [%rd10];",
        "wgmma.wait_group.sync.aligned 0;"}) {
    i = onlyInstruction(op);
    EXPECT_EQ(i.opcode, op.substr(0, op.find_first_of(" ;"))) << op;
  }
  std::string accs;
  for (int r = 0; r < 64; ++r) accs += (r ? ", %f" : "%f") + std::to_string(r + 1);
  i = onlyInstruction("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" + accs +
                      "}, %rd1, %rd2, %p1, 1, 1, 0, 1;");
  ASSERT_EQ(i.operands.size(), 8u);
  EXPECT_EQ(i.operands[0].elements.size(), 64u);
}

TEST(Parser, InlineAsmScopesDeclareRegistersWithoutPercent) {
  auto body = bodyOf(
      "\t// begin inline asm\n\t{\n\t.reg .pred p;\nLAB_WAIT:\n"
      "\tmbarrier.try_wait.parity.shared::cta.b64 p, [%r38], %r39;\n\t@p bra.uni DONE;\n"
      "\tbra.uni LAB_WAIT;\nDONE:\n\t}\n\t// end inline asm\n"
      "\t{\n\t.reg .pred P1;\n\telect.sync _|P1, -1;\n\t}\n");
  ASSERT_EQ(body.size(), 14u);
  EXPECT_EQ(body[1].kind, Statement::Kind::ScopeBegin);
  EXPECT_EQ(body[3].kind, Statement::Kind::Label);
  const Instruction& wait = body[4].instruction;
  EXPECT_EQ(wait.operands[0].kind, Operand::Kind::Register);
  EXPECT_EQ(wait.operands[0].text, "p");
  EXPECT_EQ(body[5].instruction.guard->predicate, "p");
  EXPECT_EQ(body[5].instruction.operands[0].kind, Operand::Kind::Symbol);
  EXPECT_EQ(body[8].kind, Statement::Kind::ScopeEnd);
  const Operand& pair = body[12].instruction.operands[0];
  EXPECT_EQ(pair.text, "|");
  EXPECT_EQ(pair.elements[0].kind, Operand::Kind::Sink);
  EXPECT_EQ(pair.elements[1].kind, Operand::Kind::Register);
}

TEST(Parser, CallSequences) {
  auto body = bodyOf(
      "\t{ // callseq 0, 0\n\t.param .b32 param0;\n\t.param .b32 retval0;\n"
      "\tcall.uni (retval0), \n\t_Z10scaleValuefi, \n\t(\n\tparam0, \n\tparam1\n\t);\n"
      "\tcall.uni _Z4stopv, ();\n\tcall (retval0), %rd5, (param0), prototype_0;\n"
      "\t} // callseq 0\n");
  ASSERT_EQ(body.size(), 9u);
  EXPECT_EQ(body[1].text, "callseq 0, 0");
  const Instruction& call = body[4].instruction;
  ASSERT_EQ(call.operands.size(), 3u);
  EXPECT_EQ(call.operands[0].kind, Operand::Kind::Vector);
  EXPECT_EQ(call.operands[0].text, "(");
  EXPECT_EQ(call.operands[0].elements[0].text, "retval0");
  EXPECT_EQ(call.operands[1].kind, Operand::Kind::Symbol);
  EXPECT_EQ(call.operands[2].elements.size(), 2u);
  EXPECT_EQ(printInstruction(call), "call.uni (retval0), _Z10scaleValuefi, (param0, param1);");
  EXPECT_TRUE(body[5].instruction.operands[1].elements.empty());
  EXPECT_EQ(body[6].instruction.operands[3].text, "prototype_0");
}

TEST(Parser, MultipleNamesAndSections) {
  Module m =
      parseOrDie(kernelPtx("\t.reg .pred p, q;\n") +
                 "\t.section\t.debug_str\n\t{\n$L__info_string0:\n.b8 95,90,0 // }\n\n\t}\n");
  const Function* k = m.findFunction("k");
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->body.size(), 4u);
  EXPECT_EQ(k->body[2].variable.name, "p");
  EXPECT_EQ(k->body[3].variable.name, "q");
  const TopLevel& section = m.items.back();
  EXPECT_EQ(section.directive.name, ".section");
  EXPECT_TRUE(section.directive.text.starts_with(".debug_str"));
  EXPECT_TRUE(section.directive.text.ends_with("}"));
  EXPECT_NE(section.directive.text.find(".b8 95,90,0 // }"), std::string::npos);
}

TEST(Parser, IndirectCallsJumpTablesAndAttributes) {
  Module m = parseOrDie(
      ".version 9.0\n.target sm_90a\n.global .attribute(.managed) .align 4 .u32 gManaged;\n"
      ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<3>;\n"
      "\tprototype_2 : .callprototype (.param .b32 _) _ (.param .b32 _);\n"
      "\tcall (retval0), %rd1, (param0), prototype_2;\n"
      "$L_brx_0: .branchtargets\n\t\t$L__BB0_3,\n\t\t$L__BB0_4;\n\tbrx.idx %r2, $L_brx_0;\n"
      "\tst.u16 [%SP+0], %rs1;\n}\n");
  EXPECT_EQ(m.items[2].variable.modifiers, std::vector<std::string>{".attribute(.managed)"});
  const auto& body = m.findFunction("k")->body;
  ASSERT_EQ(body.size(), 9u);
  EXPECT_EQ(body[2].text, "prototype_2");
  EXPECT_EQ(body[3].directive.name, ".callprototype");
  EXPECT_EQ(body[3].directive.text, "(.param .b32 _) _ (.param .b32 _)");
  EXPECT_EQ(body[6].directive.name, ".branchtargets");
  EXPECT_EQ(body[6].directive.text, "$L__BB0_3, $L__BB0_4");
  EXPECT_EQ(body[7].instruction.operands[1].kind, Operand::Kind::Symbol);
  // An explicit +0 is kept: unoptimized ptxas (nvcc -G) compiles [%SP+0] and [%SP] differently.
  EXPECT_EQ(printStatement(body[8]), "st.u16 [%SP+0], %rs1;");
}

TEST(Parser, MalformedInputsGiveLocatedErrors) {
  EXPECT_EQ(errorOf(kernelPtx("\tadd.s32 %r1, %r2, %r3\n\tret;\n")),
            "bad.ptx:13:2: expected ',' or ';' after operand 3 of add.s32 (line 12) but found "
            "identifier 'ret'");
  EXPECT_EQ(
      errorOf(".version 9.0\n.target sm_90a\n.visible .entry k()\n{\n\tret;\n"),
      "bad.ptx:6:1: expected '}' closing the body of k (opened at 4:1) but found end of file");
  EXPECT_EQ(errorOf(kernelPtx("\tmov.b32 %r1, {%r2, %r3;\n")),
            "bad.ptx:12:24: expected ',' or '}' in the vector operand but found ';'");
  EXPECT_EQ(errorOf(kernelPtx("\tmov.b32 %r1, \xff;\n")),
            "bad.ptx:12:15: expected an operand but found unexpected character '\\xFF'");
  auto empty = parseModule("", "empty.ptx");
  ASSERT_TRUE(empty.has_value()) << "an empty file is a valid, empty module";
  EXPECT_TRUE(empty->items.empty());

  // None of these may crash, hang or parse.
  for (std::string bad : {std::string("}"),
                          std::string("{"),
                          std::string(".visible"),
                          std::string(".visible .entry"),
                          std::string(".entry k("),
                          std::string(".entry k(\n"),
                          std::string(".entry k(.param .b32)"),
                          std::string(".entry k() {"),
                          std::string(".global .b8 x[;"),
                          std::string(".global .b8 x[4] = {1, 2;"),
                          std::string(".global .b8 x = ;"),
                          std::string(".global x;"),
                          std::string(".reg .b32 %r<;"),
                          std::string(".pragma \"x\""),
                          std::string(".section .debug_str { .b8 1"),
                          std::string("\"unterminated"),
                          std::string("/* open"),
                          std::string("garbage"),
                          std::string("\x01\x02\x03"),
                          kernelPtx("\t@;\n"),
                          kernelPtx("\t@%p1;\n"),
                          kernelPtx("\tmov.b32 %r1, [%r2;\n"),
                          kernelPtx("\tmov.b32 %r1, [%r2+x];\n"),
                          kernelPtx("\tmov.b32 %r1, {};\n"),
                          kernelPtx("\tmov.b32 %r1, -x;\n"),
                          kernelPtx("\tmov.b32 %r1, %r2|;\n"),
                          kernelPtx("\tcall (a, fn;\n"),
                          kernelPtx("\t}\n\t}\n"),
                          kernelPtx("\t{\n"),
                          kernelPtx("\t.reg .b32 ;\n"),
                          kernelPtx("\t.pragma \"x\"\n"),
                          kernelPtx("\tmov.b32 %r1, " + std::string(100, '{') + "%r1;\n"),
                          kernelPtx("\tmov.b32 %r1, " + std::string(100, '[') + "%r1;\n"),
                          kernelPtx("\t; ;\n"),
                          kernelPtx("\t123;\n")}) {
    std::string message = errorOf(bad);
    EXPECT_TRUE(message.starts_with("bad.ptx:")) << message;
    EXPECT_NE(message.find("expected"), std::string::npos) << message;
  }
}

TEST(Parser, DuplicateLabelsInOneScopeNameBothPlaces) {
  EXPECT_EQ(errorOf(kernelPtx("$L__a:\n\tmov.u32 %r1, 1;\n$L__a:\n\tret;\n")),
            "bad.ptx:14:1: label `$L__a` is defined twice in one scope of `k` (first at "
            "bad.ptx:12:1); rename one (ptxas rejects duplicate labels)");
  EXPECT_EQ(errorOf(kernelPtx("\t{\n$L__a:\n\tbra $L__a;\n$L__a:\n\t}\n\tret;\n")),
            "bad.ptx:15:1: label `$L__a` is defined twice in one scope of `k` (first at "
            "bad.ptx:13:1); rename one (ptxas rejects duplicate labels)");
  // Blocks scope labels: the same name in sibling blocks and in a nested one is valid PTX
  // (nvcc's inline-asm blocks, duplicated by unrolling, repeat their labels).
  auto ok =
      parseModule(kernelPtx("$L__a:\n\t{\n$L__a:\n\t}\n\t{\n$L__a:\n\t}\n\tret;\n"), "ok.ptx");
  EXPECT_TRUE(ok) << ok.error().text();
}

TEST(Parser, DuplicateKernelsAndFunctionsNameBothPlaces) {
  const std::string head = ".version 8.8\n.target sm_90a\n.address_size 64\n";
  EXPECT_EQ(
      errorOf(head + ".visible .entry k()\n{\n\tret;\n}\n.visible .entry k()\n{\n\tret;\n}\n"),
      "bad.ptx:8:1: `.entry k` has the name of the `.entry` at bad.ptx:4:1; a module's "
      "kernels and functions need distinct names (ptxas rejects the module)");
  EXPECT_EQ(errorOf(head + ".func f()\n{\n\tret;\n}\n.visible .entry f()\n{\n\tret;\n}\n"),
            "bad.ptx:8:1: `.entry f` has the name of the `.func` at bad.ptx:4:1; a module's "
            "kernels and functions need distinct names (ptxas rejects the module)");
  EXPECT_EQ(errorOf(head + ".func f()\n{\n\tret;\n}\n.func f()\n{\n\tret;\n}\n"),
            "bad.ptx:8:1: `.func f` is defined twice (first at bad.ptx:4:1); remove or rename "
            "one (ptxas rejects the module)");
  // A prototype and its definition (in either order) are one function.
  auto ok = parseModule(head + ".func f();\n.func f()\n{\n\tret;\n}\n.func f();\n", "ok.ptx");
  EXPECT_TRUE(ok) << ok.error().text();
}

TEST(Parser, EveryTruncationOfARealFixtureFailsCleanly) {
  const std::string text = readFixture("hopper_intrinsics.ptx");
  ASSERT_FALSE(text.empty());
  ASSERT_TRUE(parseModule(text, "full.ptx").has_value());
  int parsed = 0;
  for (std::size_t n = 0; n < text.size(); n += 7) {
    auto module = parseModule(std::string_view(text).substr(0, n), "cut.ptx");
    if (module) {
      ++parsed;
    } else {
      EXPECT_TRUE(module.error().message.starts_with("cut.ptx:")) << module.error().message;
    }
  }
  EXPECT_GT(parsed, 0);  // prefixes ending between top-level items are valid modules
}

TEST(Parser, RandomByteDamageNeverCrashes) {
  const std::string text = readFixture("hopper_intrinsics.ptx");
  ASSERT_FALSE(text.empty());
  std::mt19937 rng(1234);
  std::uniform_int_distribution<std::size_t> position(0, text.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 300; ++round) {
    std::string damaged = text;
    for (int k = 0; k < 4; ++k) damaged[position(rng)] = static_cast<char>(byte(rng));
    auto module = parseModule(damaged, "damaged.ptx");
    if (module) {
      // Whatever parsed must print to text that parses again.
      EXPECT_TRUE(parseModule(printModule(*module), "reprinted.ptx").has_value());
    }
  }
}

}  // namespace
}  // namespace argus::ptx
