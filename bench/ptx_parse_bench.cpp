// PTX front-end throughput on the largest fixture in tests/data/ptx (chosen when the benchmark
// starts, so larger fixtures added later are picked up). Counters: bytes/s (MB/s) and
// statements/s parsed; the print benchmark reports bytes/s of PTX written.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/support/process.h"

namespace {

namespace fs = std::filesystem;

struct Fixture {
  std::string name;
  std::string text;
};

/// The largest *.ptx under tests/data/ptx; empty text if there is none.
const Fixture& largestFixture() {
  static const Fixture fixture = [] {
    Fixture best;
    std::uintmax_t bestSize = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(ARGUS_TEST_DATA_DIR) / "ptx", ec)) {
      if (entry.path().extension() != ".ptx" || entry.file_size() <= bestSize) continue;
      if (auto text = argus::readFile(entry.path())) {
        bestSize = entry.file_size();
        best = Fixture{entry.path().filename().string(), std::move(*text)};
      }
    }
    return best;
  }();
  return fixture;
}

std::size_t countStatements(const argus::ptx::Module& module) {
  std::size_t count = module.items.size();
  for (const auto* function : module.functions()) count += function->body.size();
  return count;
}

void BM_ParsePtx(benchmark::State& state) {
  const Fixture& fixture = largestFixture();
  if (fixture.text.empty()) {
    state.SkipWithError("no .ptx fixture in tests/data/ptx");
    return;
  }
  std::size_t statements = 0;
  for (auto _ : state) {
    auto module = argus::ptx::parseModule(fixture.text, fixture.name);
    if (!module) {
      state.SkipWithError(module.error().text().c_str());
      return;
    }
    statements = countStatements(*module);
    benchmark::DoNotOptimize(module);
  }
  state.SetLabel(fixture.name);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * fixture.text.size()));
  state.counters["statements/s"] =
      benchmark::Counter(static_cast<double>(statements) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["MB/s"] = benchmark::Counter(
      static_cast<double>(fixture.text.size()) * static_cast<double>(state.iterations()) / 1e6,
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ParsePtx)->Unit(benchmark::kMicrosecond);

void BM_PrintPtx(benchmark::State& state) {
  const Fixture& fixture = largestFixture();
  auto module = argus::ptx::parseModule(fixture.text, fixture.name);
  if (fixture.text.empty() || !module) {
    state.SkipWithError("no parsable .ptx fixture in tests/data/ptx");
    return;
  }
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = argus::ptx::printModule(*module);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.SetLabel(fixture.name);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_PrintPtx)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
