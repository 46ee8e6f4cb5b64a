// What the injection skeleton writes without a GPU: kernels.jsonl lines from CUPTI's kernel
// records, numeric settings, error lines, JSON strings.
#include <argus/inject/kernel_activity.h>
#include <argus/inject/output.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace argus::inject {
namespace {

// A CUPTI kernel record (built here as CUPTI lays it out) becomes one kernels.jsonl line; other
// kinds of record are skipped.
TEST(KernelActivity, CuptiKernelRecordsBecomeKernelsLines) {
  CUpti_ActivityKernel10 record{};
  record.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  record.start = 1000;
  record.end = 1750;
  record.correlationId = 42;
  record.contextId = 1;
  record.streamId = 7;
  record.name = "tma_gemm";
  auto kernel = kernelActivity(reinterpret_cast<const CUpti_Activity*>(&record));
  ASSERT_TRUE(kernel.has_value());
  kernel->seq = 3;
  EXPECT_EQ(kernelsLine(*kernel),
            R"({"seq":3,"correlation":42,"kernel":"tma_gemm","start_ns":1000,"end_ns":1750,)"
            R"("duration_ns":750,"context":1,"stream":7})"
            "\n");
  record.name = nullptr;
  EXPECT_EQ(kernelActivity(reinterpret_cast<const CUpti_Activity*>(&record))->kernel, "");
  // The kernel libargus_inject.so launches to empty the L2 is not the program's.
  record.name = "argus_l2_read";
  EXPECT_EQ(kernelActivity(reinterpret_cast<const CUpti_Activity*>(&record)), std::nullopt);
  record.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  EXPECT_EQ(kernelActivity(reinterpret_cast<const CUpti_Activity*>(&record)), std::nullopt);
  EXPECT_EQ(kernelsLine({}), R"({"seq":-1,"correlation":0,"kernel":"","start_ns":0,"end_ns":0,)"
                             R"("duration_ns":0,"context":0,"stream":0})"
                             "\n");
}

// The injection libraries' numeric settings: decimal, or hexadecimal with 0x; a leading 0 is not
// octal; anything else (a sign, a unit, an overflow) falls back.
TEST(EnvNumber, DecimalOrHexElseTheFallback) {
  const char* name = "ARGUS_TEST_ENV_NUMBER";
  const auto read = [&](const char* text) {
    ::setenv(name, text, 1);
    return envNumber(name, 7);
  };
  EXPECT_EQ(read("256"), 256u);
  EXPECT_EQ(read("08"), 8u);
  EXPECT_EQ(read("0x100"), 256u);
  EXPECT_EQ(read("0X1f"), 31u);
  EXPECT_EQ(read(""), 7u);
  EXPECT_EQ(read("12ms"), 7u);
  EXPECT_EQ(read("-1"), 7u);
  EXPECT_EQ(read(" 5"), 7u);
  EXPECT_EQ(read("0x"), 7u);
  EXPECT_EQ(read("99999999999999999999999"), 7u);
  ::unsetenv(name);
  EXPECT_EQ(envNumber(name, 7), 7u);
}

// A library's problems go to stderr and, with an output folder, to errors.txt, one line each.
TEST(ReportTo, AppendsPrefixedLinesToErrorsTxt) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("argus-report-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  reportTo("argus-inject", dir, "cuMemAlloc failed: out of memory");
  reportTo("argus-inject", dir, "second");
  reportTo("argus-inject", {}, "stderr only");
  std::ifstream in(dir / "errors.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "argus-inject: cuMemAlloc failed: out of memory\nargus-inject: second\n");
  std::filesystem::remove_all(dir);
}

TEST(JsonString, EscapesControlCharacters) {
  EXPECT_EQ(jsonString("a\nb\x01"), "\"a\\nb\\u0001\"");
}

}  // namespace
}  // namespace argus::inject
