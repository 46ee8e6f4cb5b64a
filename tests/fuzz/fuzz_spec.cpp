// The YAML readers: program specs (loadProgramSpec, from a file, as every verb reads them),
// recipes (parseRecipe) and region files (parseRegionFile, then deriveRegions with what it read
// on a fixed kernel: tests/data/ptx/derive_loops.ptx). The first byte picks the reader. Specs are
// written into a scratch tree shaped like examples/: the spec at root/a/b/argus.yaml beside the
// usual source names, with
// ../../include and ../common present, so the seeds (the examples' own specs) get past the
// existence checks and mutations reach the field checks.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "argus/planner/recipe.h"
#include "argus/program/program.h"
#include "argus/program/region_file.h"
#include "argus/ptx/derive.h"
#include "argus/ptx/parser.h"
#include "fuzz_util.h"

namespace {

namespace fs = std::filesystem;

const fs::path& scratch() {
  static const fs::path spec = [] {
    // In memory where there is /dev/shm: one file write per input is most of a run.
    const fs::path tmp =
        fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    fs::path root = tmp / ("argus-fuzz-spec-" + std::to_string(getpid()));
    fs::create_directories(root / "include");
    fs::create_directories(root / "a" / "common");
    fs::create_directories(root / "a" / "b");
    for (const char* name : {"kernel.cu", "main.cu", "kernel.py", "kernel.ttgir", "run.py"})
      std::ofstream(root / "a" / "b" / name) << "\n";
    static const fs::path removeAtExit = root;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(removeAtExit, ec);
    });
    return root / "a" / "b" / "argus.yaml";
  }();
  return spec;
}

/// The kernel region files are derived on: nested loops, a call, a barrier, global memory.
const argus::ptx::Module& kernel() {
  static const argus::ptx::Module module = [] {
    // ARGUS_FUZZ_DATA names tests/data where the tree is not where it was built (a lent machine).
    const char* env = std::getenv("ARGUS_FUZZ_DATA");
    const fs::path file =
        fs::path(env != nullptr ? env : ARGUS_FUZZ_DATA_DIR) / "ptx" / "derive_loops.ptx";
    std::ifstream in(file);
    if (!in) {
      std::fprintf(stderr, "fuzz_spec: no %s (set ARGUS_FUZZ_DATA to the tree's tests/data)\n",
                   file.c_str());
      std::abort();
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto parsed = argus::ptx::parseModule(text, "derive_loops.ptx");
    if (!parsed) {
      std::fprintf(stderr, "fuzz_spec: cannot read derive_loops.ptx: %s\n",
                   parsed.error().text().c_str());
      std::abort();
    }
    return *parsed;
  }();
  return module;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace argus;
  if (size < 1 || size > fuzz::kMaxInput) return -1;
  auto yaml = fuzz::text(data + 1, size - 1);
  if (data[0] % 3 == 2) {
    auto defs = program::parseRegionFile(yaml, "fuzz.yaml");
    if (!defs) return 0;
    ptx::Module module = kernel();
    (void)ptx::deriveRegions(module, *defs);
  } else if (data[0] % 3 == 0) {
    const fs::path& file = scratch();
    {
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out.write(yaml.data(), static_cast<std::streamsize>(yaml.size()));
    }
    if (auto spec = program::loadProgramSpec(file)) (void)program::blockShapes(*spec);
  } else {
    (void)planner::parseRecipe(yaml, "fuzz.yaml");
  }
  return 0;
}
