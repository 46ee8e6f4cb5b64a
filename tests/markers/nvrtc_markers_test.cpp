// Compiles kernels that use every Argus marker with NVRTC (no std headers, device pass only) and
// checks the PTX: each marker becomes exactly the comment line the region analysis parses.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#ifndef ARGUS_TEST_INCLUDE_DIR
#error "ARGUS_TEST_INCLUDE_DIR must name the directory that holds argus/region.cuh"
#endif

namespace {

struct NvrtcResult {
  bool compiled = false;
  std::string ptx;
  std::string log;
};

// Compiles `source` for compute_90a with the Argus include directory and `extraOptions`.
NvrtcResult compileWithNvrtc(const std::string& source, const std::vector<std::string>& extra) {
  NvrtcResult result;
  nvrtcProgram program = nullptr;
  if (nvrtcCreateProgram(&program, source.c_str(), "markers.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    result.log = "nvrtcCreateProgram failed";
    return result;
  }
  std::vector<std::string> options = {"--gpu-architecture=compute_90a", "-std=c++17",
                                      std::string("--include-path=") + ARGUS_TEST_INCLUDE_DIR};
  options.insert(options.end(), extra.begin(), extra.end());
  std::vector<const char*> optionPointers;
  for (const std::string& option : options) optionPointers.push_back(option.c_str());
  const nvrtcResult status =
      nvrtcCompileProgram(program, static_cast<int>(optionPointers.size()), optionPointers.data());
  std::size_t logSize = 0;
  if (nvrtcGetProgramLogSize(program, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    result.log.resize(logSize);
    if (nvrtcGetProgramLog(program, result.log.data()) != NVRTC_SUCCESS) result.log.clear();
  }
  if (status == NVRTC_SUCCESS) {
    std::size_t ptxSize = 0;
    if (nvrtcGetPTXSize(program, &ptxSize) == NVRTC_SUCCESS) {
      result.ptx.resize(ptxSize);
      result.compiled = nvrtcGetPTX(program, result.ptx.data()) == NVRTC_SUCCESS;
    }
  }
  nvrtcDestroyProgram(&program);
  return result;
}

// The PTX lines that hold a marker, without surrounding whitespace.
std::vector<std::string> markerLines(const std::string& ptx) {
  std::vector<std::string> lines;
  std::istringstream stream(ptx);
  std::string line;
  while (std::getline(stream, line)) {
    if (line.find("@argus") == std::string::npos) continue;
    const auto first = line.find_first_not_of(" \t");
    const auto last = line.find_last_not_of(" \t\r\0");
    lines.push_back(line.substr(first, last - first + 1));
  }
  return lines;
}

// Every macro, in a kernel NVRTC compiles with no headers besides region.cuh.
constexpr const char* kEveryMacro = R"(
#include <argus/region.cuh>

extern "C" __global__ void every_macro(float* data, int n, long long wide) {
  ARGUS_REGION_BEGIN("main");
  for (int i = 0; i < n; ++i) {
    ARGUS_REGION_BEGIN_ITER("body", i);
    if (threadIdx.x < 32) {
      ARGUS_REGION_BEGIN_ROLE("producer", "producer");
      data[i] += 1.0f;
      ARGUS_REGION_END("producer");
    } else {
      ARGUS_REGION_BEGIN_ITER_ROLE("consumer", i, "consumer");
      data[i] *= 2.0f;
      ARGUS_REGION_END("consumer");
    }
    ARGUS_REGION_END("body");
  }
  {
    ARGUS_REGION("scoped");
    ARGUS_REGION_ITER("scoped_iter", n);
    ARGUS_REGION_ROLE("scoped_role", "warp.role-1");
    ARGUS_REGION_ITER_ROLE("scoped_iter_role", n + 1, "consumer");
    ARGUS_REGION_ITER("wide", wide);
    ARGUS_REGION_BEGIN_ITER_ROLE("wide_role", wide + 1, "producer");
    data[n] = 0.0f;
    ARGUS_REGION_END("wide_role");
  }
  ARGUS_REGION_END("main");
}
)";

bool anyLineMatches(const std::vector<std::string>& lines, const std::string& pattern) {
  const std::regex re(pattern);
  for (const std::string& line : lines) {
    if (std::regex_match(line, re)) return true;
  }
  return false;
}

TEST(NvrtcMarkers, EveryMacroEmitsItsCommentLine) {
  const NvrtcResult result = compileWithNvrtc(kEveryMacro, {});
  ASSERT_TRUE(result.compiled) << result.log;
  const std::vector<std::string> lines = markerLines(result.ptx);
  const std::vector<std::string> expected = {
      R"(// @argus begin main)",
      R"(// @argus end main)",
      R"(// @argus begin body iter=%r\d+)",
      R"(// @argus end body)",
      R"(// @argus begin producer role=producer)",
      R"(// @argus end producer)",
      R"(// @argus begin consumer iter=%r\d+ role=consumer)",
      R"(// @argus end consumer)",
      R"(// @argus begin scoped)",
      R"(// @argus end scoped)",
      R"(// @argus begin scoped_iter iter=%r\d+)",
      R"(// @argus end scoped_iter)",
      R"(// @argus begin scoped_role role=warp\.role-1)",
      R"(// @argus end scoped_role)",
      R"(// @argus begin scoped_iter_role iter=%r\d+ role=consumer)",
      R"(// @argus end scoped_iter_role)",
      // 64-bit indices use an "l" operand: a %rd register.
      R"(// @argus begin wide iter=%rd\d+)",
      R"(// @argus end wide)",
      R"(// @argus begin wide_role iter=%rd\d+ role=producer)",
      R"(// @argus end wide_role)",
  };
  for (const std::string& pattern : expected) {
    EXPECT_TRUE(anyLineMatches(lines, pattern)) << "no PTX line matches " << pattern;
  }
}

TEST(NvrtcMarkers, EveryMarkerLineFollowsTheGrammar) {
  const NvrtcResult result = compileWithNvrtc(kEveryMacro, {});
  ASSERT_TRUE(result.compiled) << result.log;
  const std::regex grammar(
      R"(// @argus (begin [A-Za-z_][A-Za-z0-9_.-]*( iter=%r[d]?\d+)?( role=[A-Za-z_][A-Za-z0-9_.-]*)?)"
      R"(|end [A-Za-z_][A-Za-z0-9_.-]*))");
  const std::vector<std::string> lines = markerLines(result.ptx);
  ASSERT_FALSE(lines.empty());
  for (const std::string& line : lines) {
    EXPECT_TRUE(std::regex_match(line, grammar)) << "not in the marker grammar: " << line;
  }
}

TEST(NvrtcMarkers, DisabledMarkersLeaveNoComments) {
  const NvrtcResult result = compileWithNvrtc(kEveryMacro, {"-DARGUS_DISABLE_MARKERS"});
  ASSERT_TRUE(result.compiled) << result.log;
  EXPECT_EQ(result.ptx.find("@argus"), std::string::npos);
  EXPECT_NE(result.ptx.find(".entry every_macro"), std::string::npos);
}

TEST(NvrtcMarkers, NonLiteralNameIsRejected) {
  const NvrtcResult result = compileWithNvrtc(R"(
#include <argus/region.cuh>
extern "C" __global__ void k(float* p) {
  constexpr const char kName[] = "main";
  ARGUS_REGION_BEGIN(kName);
  p[0] = 1.0f;
  ARGUS_REGION_END("main");
}
)",
                                              {});
  EXPECT_FALSE(result.compiled);
  EXPECT_NE(result.log.find("argus: a region name must be a string literal"), std::string::npos)
      << result.log;
}

TEST(NvrtcMarkers, NameOutsideTheGrammarIsRejected) {
  const NvrtcResult result = compileWithNvrtc(R"(
#include <argus/region.cuh>
extern "C" __global__ void k(float* p) {
  ARGUS_REGION("main/body");
  p[0] = 1.0f;
}
)",
                                              {});
  EXPECT_FALSE(result.compiled);
  EXPECT_NE(result.log.find("argus: a region name must be a string literal that matches"),
            std::string::npos)
      << result.log;
}

TEST(NvrtcMarkers, BadRoleAndIterationAreRejected) {
  const NvrtcResult role = compileWithNvrtc(R"(
#include <argus/region.cuh>
extern "C" __global__ void k(float* p) {
  ARGUS_REGION_ROLE("main", "2nd");
  p[0] = 1.0f;
}
)",
                                            {});
  EXPECT_FALSE(role.compiled);
  EXPECT_NE(role.log.find("argus: a warp-role tag must be a string literal"), std::string::npos)
      << role.log;

  const NvrtcResult iter = compileWithNvrtc(R"(
#include <argus/region.cuh>
extern "C" __global__ void k(float* p, float f) {
  ARGUS_REGION_ITER("main", f);
  p[0] = 1.0f;
}
)",
                                            {});
  EXPECT_FALSE(iter.compiled);
  EXPECT_NE(iter.log.find("argus: an iteration index must be an integer expression"),
            std::string::npos)
      << iter.log;
}

}  // namespace
