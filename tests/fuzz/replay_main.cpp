// The fuzz targets' main where libFuzzer is absent (g++ builds, sanitizer builds): runs
// LLVMFuzzerTestOneInput once on every file named, or on every file of every directory named,
// so each target's seed corpus and its regression inputs are a test of every build.
// Usage: fuzz_<target> [--expect-min N] PATH...   (fails when fewer than N inputs were found)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int runOne(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
    return 1;
  }
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // A copy of exactly `size` bytes, as libFuzzer passes: reads past the end are ASan errors.
  std::vector<uint8_t> input(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(input.data(), input.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t expectMin = 0;
  std::size_t ran = 0;
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--expect-min" && i + 1 < argc) {
      expectMin = std::strtoul(argv[++i], nullptr, 10);
      continue;
    }
    std::filesystem::path path(arg);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(path))
        if (entry.is_regular_file()) files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const auto& file : files) {
        failed += runOne(file);
        ++ran;
      }
    } else {
      failed += runOne(path);
      ++ran;
    }
  }
  std::printf("replay: %zu inputs ran\n", ran);
  if (ran < expectMin) {
    std::fprintf(stderr, "replay: expected at least %zu inputs; the corpus paths are wrong\n",
                 expectMin);
    return 1;
  }
  return failed == 0 ? 0 : 1;
}
