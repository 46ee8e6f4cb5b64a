// Callee copies on cubins that ptxas assembles from tests/data/sass/callee_copies.ptx (how it was
// made is in its .cu), checked with the toolkit's own disassembler: cuobjdump must read the
// patched cubin, every copy must disassemble to its original's instructions (addresses inside
// the function moved with it, every other target unchanged), and each retargeted call must name
// its copy.
#include "argus/sass/callee_copies.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "argus/sass/pcmap.h"
#include "argus/support/process.h"

namespace argus::sass {
namespace {

namespace fs = std::filesystem;
const fs::path kPtx = fs::path(ARGUS_TEST_DATA_DIR) / "sass" / "callee_copies.ptx";

class CalleeCopies : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!findTool("ptxas") || !findTool("cuobjdump"))
      GTEST_SKIP() << "ptxas or cuobjdump is not installed (scripts/setup.sh installs both)";
    dir_ = *makeTempDir("argus-callee-copies");
    auto built = runProcess({findTool("ptxas")->string(), "-arch=sm_90a", kPtx.string(), "-o",
                             (dir_ / "reference.cubin").string()});
    ASSERT_TRUE(built && built->exitCode == 0) << (built ? built->err : built.error().text());
    cubin_ = read(dir_ / "reference.cubin");
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  static std::vector<std::uint8_t> read(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  /// `kernel`'s instructions as cuobjdump prints them: PC -> text.
  std::map<std::uint64_t, std::string> sass(const std::vector<std::uint8_t>& bytes,
                                            const std::string& kernel) {
    const fs::path file = dir_ / fmt::format("sass{}.cubin", files_++);
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    auto dump = cuobjdumpSassByPc(file);
    EXPECT_TRUE(dump.has_value()) << (dump ? "" : dump.error().text());
    if (!dump || !dump->contains(kernel)) return {};
    return dump->at(kernel);
  }
  /// `kernel`'s function `symbol` (the test fails where there is none).
  CubinFunction function(const std::string& kernel, const std::string& symbol) {
    auto functions = *cubinFunctions(cubin_, kernel);
    auto f = std::ranges::find(functions, symbol, &CubinFunction::symbol);
    EXPECT_NE(f, functions.end()) << symbol;
    return f == functions.end() ? CubinFunction{} : *f;
  }
  /// The CALL.REL sites of `kernel`'s own code (before its first callee) that call `callee`.
  std::vector<std::uint64_t> callsTo(const std::string& kernel, const CubinFunction& callee) {
    std::vector<std::uint64_t> sites;
    auto functions = *cubinFunctions(cubin_, kernel);
    std::uint64_t end = functions.front().size;
    for (const auto& f : functions)
      if (f.symbol != kernel) end = std::min(end, f.offset);
    for (std::uint64_t pc = 0; pc < end; pc += 16)
      if (auto t = callTarget(cubin_, kernel, pc); t && *t == callee.offset) sites.push_back(pc);
    return sites;
  }

  fs::path dir_;
  std::vector<std::uint8_t> cubin_;
  int files_ = 0;
};

CalleeCopyRequest copyFor(std::string callee, std::uint64_t site) {
  CalleeCopyRequest r;
  r.callee = std::move(callee);
  r.callSites = {site};
  return r;
}

/// `text` with every hexadecimal address in [from, from + size) moved to `to + (a - from)`.
std::string moved(const std::string& text, std::uint64_t from, std::uint64_t size,
                  std::uint64_t to) {
  static const std::regex kHex("0x([0-9a-f]+)");
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), kHex);
  std::size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const std::uint64_t a = std::stoull((*it)[1], nullptr, 16);
    out += text.substr(last, static_cast<std::size_t>(it->position()) - last);
    out += a >= from && a < from + size ? fmt::format("{:#x}", to + (a - from)) : it->str();
    last = static_cast<std::size_t>(it->position() + it->length());
  }
  return out + text.substr(last);
}

/// Every instruction of `copy` reads as its original's, moved; but for the calls in `retargeted`.
void expectSameCode(const std::map<std::uint64_t, std::string>& before,
                    const std::map<std::uint64_t, std::string>& after, const CalleeCopy& copy,
                    const std::set<std::uint64_t>& retargeted = {}) {
  for (std::uint64_t d = 0; d < copy.original.size; d += 16) {
    if (retargeted.contains(copy.offset + d)) continue;
    ASSERT_TRUE(before.contains(copy.original.offset + d) && after.contains(copy.offset + d)) << d;
    EXPECT_EQ(after.at(copy.offset + d),
              moved(before.at(copy.original.offset + d), copy.original.offset, copy.original.size,
                    copy.offset))
        << copy.original.symbol << " + " << d;
  }
}

TEST_F(CalleeCopies, EachCallerGetsTheReferencesOwnCodeOfTheCallee) {
  auto functions = cubinFunctions(cubin_, "trips");
  ASSERT_TRUE(functions) << functions.error().text();
  ASSERT_EQ(functions->size(), 2u);
  const CubinFunction helper = (*functions)[1];
  EXPECT_EQ(helper.symbol, "$trips$_Z6helperfi");
  const auto sites = callsTo("trips", helper);
  ASSERT_EQ(sites.size(), 2u) << "the trip-8 and the trip-3 call";

  auto patched = copyCallees(cubin_, "trips",
                             {copyFor("_Z6helperfi", sites[0]), copyFor("_Z6helperfi", sites[1])});
  ASSERT_TRUE(patched) << patched.error().text();
  ASSERT_EQ(patched->copies.size(), 2u);
  const auto before = sass(cubin_, "trips");
  const auto after = sass(patched->bytes, "trips");
  for (std::size_t k = 0; k < 2; ++k) {
    const CalleeCopy& copy = patched->copies[k];
    EXPECT_EQ(copy.offset % 128, helper.offset % 128);
    EXPECT_GE(copy.offset, helper.offset + helper.size);
    expectSameCode(before, after, copy);
    EXPECT_EQ(after.at(sites[k]), fmt::format("CALL.REL.NOINC {:#x}", copy.offset));
    EXPECT_EQ(*callTarget(patched->bytes, "trips", sites[k]), copy.offset);
  }
  // The kernel's own code is the reference's, but for the two calls; the original helper is still
  // there, unchanged (nothing calls it).
  for (const auto& [pc, text] : before)
    if (pc != sites[0] && pc != sites[1]) {
      EXPECT_EQ(after.at(pc), text) << fmt::format("{:#x}", pc);
    }
  EXPECT_EQ(patched->copies[1].referencePc(patched->copies[1].offset + 0x40), helper.offset + 0x40);
}

TEST_F(CalleeCopies, ACopyOfACalleeThatCallsKeepsItsReturnsInTheCopy) {
  const auto outer = function("nested", "$nested$_Z5outerfi");
  const auto inner = function("nested", "$nested$_Z5innerfi");
  const auto sites = callsTo("nested", outer);
  ASSERT_EQ(sites.size(), 2u);
  // outer's call of inner, at the same place in each copy of outer.
  std::optional<std::uint64_t> innerCall;
  for (std::uint64_t pc = outer.offset; pc < outer.offset + outer.size; pc += 16)
    if (auto t = callTarget(cubin_, "nested", pc); t && *t == inner.offset) innerCall = pc;
  ASSERT_TRUE(innerCall);

  // Two copies of outer (one per call site); the first one's call of inner goes to a copy of
  // inner, the second's still to the original inner.
  auto first = copyCallees(cubin_, "nested",
                           {copyFor("_Z5outerfi", sites[0]), copyFor("_Z5outerfi", sites[1])});
  ASSERT_TRUE(first) << first.error().text();
  const CalleeCopy outerCopy = first->copies[0];
  const std::uint64_t copiedCall = outerCopy.offset + (*innerCall - outer.offset);
  auto patched = copyCallees(cubin_, "nested",
                             {copyFor("_Z5outerfi", sites[0]), copyFor("_Z5outerfi", sites[1]),
                              copyFor("_Z5innerfi", copiedCall)});
  ASSERT_TRUE(patched) << patched.error().text();
  const auto before = sass(cubin_, "nested");
  const auto after = sass(patched->bytes, "nested");
  const CalleeCopy& innerCopy = patched->copies[2];
  expectSameCode(before, after, patched->copies[1]);
  expectSameCode(before, after, innerCopy);
  EXPECT_EQ(after.at(copiedCall), fmt::format("CALL.REL.NOINC {:#x}", innerCopy.offset));
  // The copy's return PC for that call is its own, and the second copy calls the original inner.
  EXPECT_NE(after.at(copiedCall - 16).find(fmt::format("{:#x}", copiedCall + 16)),
            std::string::npos)
      << after.at(copiedCall - 16);
  const std::uint64_t secondCall = patched->copies[1].offset + (*innerCall - outer.offset);
  EXPECT_EQ(after.at(secondCall), fmt::format("CALL.REL.NOINC {:#x}", inner.offset));
  // RET's base is the section's start in every copy.
  for (const auto& copy : patched->copies)
    for (std::uint64_t d = 0; d < copy.original.size; d += 16)
      if (after.at(copy.offset + d).starts_with("RET.REL.NODEC")) {
        EXPECT_TRUE(after.at(copy.offset + d).ends_with(" 0x0")) << after.at(copy.offset + d);
      }
}

TEST_F(CalleeCopies, EveryCallPathGetsItsOwnCopy) {
  const auto outer = function("nested", "$nested$_Z5outerfi");
  const auto inner = function("nested", "$nested$_Z5innerfi");
  const auto sites = callsTo("nested", outer);
  ASSERT_EQ(sites.size(), 2u);
  auto patched = copyCalleesPerCallSite(cubin_, "nested");
  ASSERT_TRUE(patched) << patched.error().text();
  // outer from each of the kernel's two calls, and inner from each copy of outer.
  ASSERT_EQ(patched->copies.size(), 4u);
  const auto before = sass(cubin_, "nested");
  const auto after = sass(patched->bytes, "nested");
  std::set<std::uint64_t> retargeted;
  for (const auto& copy : patched->copies)
    retargeted.insert(copy.callSites.begin(), copy.callSites.end());
  for (const auto& copy : patched->copies) expectSameCode(before, after, copy, retargeted);
  EXPECT_EQ(patched->copies[0].context, std::vector<std::uint64_t>{sites[0]});
  EXPECT_EQ(patched->copies[1].context, std::vector<std::uint64_t>{sites[1]});
  for (std::size_t k = 0; k < 2; ++k) {
    const CalleeCopy& outerCopy = patched->copies[k];
    const CalleeCopy& innerCopy = patched->copies[2 + k];
    EXPECT_EQ(outerCopy.original.symbol, outer.symbol);
    EXPECT_EQ(innerCopy.original.symbol, inner.symbol);
    ASSERT_EQ(innerCopy.context.size(), 2u);
    EXPECT_EQ(innerCopy.context[0], sites[k]);
    ASSERT_EQ(innerCopy.callSites.size(), 1u);
    // The call sits in this path's copy of outer, at the reference call's place, and names the
    // path's copy of inner.
    EXPECT_EQ(outerCopy.referencePc(innerCopy.callSites[0]), innerCopy.context[1]);
    EXPECT_EQ(after.at(innerCopy.callSites[0]),
              fmt::format("CALL.REL.NOINC {:#x}", innerCopy.offset));
  }
  // Depth 1: only the kernel's own calls get copies.
  auto shallow = copyCalleesPerCallSite(cubin_, "nested", 1);
  ASSERT_TRUE(shallow);
  EXPECT_EQ(shallow->copies.size(), 2u);
  // The trip-count kernel: one copy per call, as the two hand-made requests gave.
  auto trips = copyCalleesPerCallSite(cubin_, "trips");
  ASSERT_TRUE(trips);
  EXPECT_EQ(trips->copies.size(), 2u);
}

// The per-build check reads the patched cubin with cuobjdump: the whole cubin's copies pass, and
// a map that sends a call to another path's copy (the same code, so only routing differs) fails.
TEST_F(CalleeCopies, TheCheckReadsEveryCopyAsTheReferenceAndEveryCallAsItsCopys) {
  auto copied = copyEveryKernelsCallees(cubin_);
  ASSERT_TRUE(copied) << copied.error().text();
  EXPECT_TRUE(copied->refused.empty());
  ASSERT_EQ(copied->copies.at("trips").size(), 2u);
  ASSERT_EQ(copied->copies.at("nested").size(), 4u);
  const fs::path patched = dir_ / "patched.cubin";
  std::ofstream(patched, std::ios::binary)
      .write(reinterpret_cast<const char*>(copied->bytes.data()),
             static_cast<std::streamsize>(copied->bytes.size()));
  auto check = checkCopies(dir_ / "reference.cubin", patched, copied->copies);
  ASSERT_TRUE(check) << check.error().text();
  EXPECT_TRUE((*check)["equal"].get<bool>());
  EXPECT_EQ((*check)["calls_to_their_copy"], 6);
  auto swapped = copied->copies;
  std::swap(swapped.at("trips")[0].callSites, swapped.at("trips")[1].callSites);
  auto wrong = checkCopies(dir_ / "reference.cubin", patched, swapped);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().text().find("not its copy"), std::string::npos) << wrong.error().text();
  // The map document reads back to the same copies.
  auto parsed = parseCalleeCopies(calleeCopiesJson(*copied, cubin_.size(), *check));
  ASSERT_TRUE(parsed) << parsed.error().text();
  EXPECT_EQ(parsed->at("nested").size(), 4u);
  EXPECT_EQ(parsed->at("nested")[3].context, copied->copies.at("nested")[3].context);
}

TEST_F(CalleeCopies, WhatCannotBeCopiedIsAnErrorThatSaysWhy) {
  auto unknown = copyCallees(cubin_, "trips", {CalleeCopyRequest{"nosuch", {}}});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().text().find("its callees: $trips$_Z6helperfi"), std::string::npos)
      << unknown.error().text();
  auto notACall = copyCallees(cubin_, "trips", {copyFor("_Z6helperfi", 0x10)});
  ASSERT_FALSE(notACall);
  EXPECT_NE(notACall.error().text().find("not a CALL.REL"), std::string::npos)
      << notACall.error().text();
  auto noKernel = copyCallees(cubin_, "nosuchkernel", {});
  ASSERT_FALSE(noKernel);
  EXPECT_NE(noKernel.error().text().find("no kernel `nosuchkernel`"), std::string::npos);
  const std::vector<std::uint8_t> notElf = {'P', 'T', 'X'};
  EXPECT_FALSE(copyCallees(notElf, "trips", {}));
}

}  // namespace
}  // namespace argus::sass
