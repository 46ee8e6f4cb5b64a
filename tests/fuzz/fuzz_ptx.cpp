// PTX parser, printer and CFG: parse; print what parsed and parse that again (the printer's
// output must be PTX the parser accepts and prints the same way); build every body's CFG.
#include <string>

#include "argus/ptx/cfg.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace argus;
  if (size > fuzz::kMaxInput) return -1;
  auto module = ptx::parseModule(fuzz::text(data, size), "fuzz.ptx");
  if (!module) return 0;
  std::string printed = ptx::printModule(*module);
  auto again = ptx::parseModule(printed, "printed.ptx");
  fuzz::require(again.has_value(), "the printer's output parses");
  fuzz::require(ptx::printModule(*again) == printed, "printing is a fixed point");
  for (const ptx::Function* function : module->functions()) {
    if (!function->hasBody) continue;
    auto cfg = ptx::buildControlFlowGraph(*function, "fuzz.ptx");
    if (cfg) (void)ptx::cfgToDot(*function, *cfg);
  }
  return 0;
}
