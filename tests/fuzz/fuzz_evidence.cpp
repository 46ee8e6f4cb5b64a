// The readers of other tools' output that collections store: PC bundles (and the nvdisasm text
// and paint map inside, joined by sass::parsePcMap), PC evidence JSON, Nsight Compute's CSV
// pages and the system trace (CUPTI/NVTX JSON lines) with the signals built from it. The first
// byte picks the reader, so one corpus serves all and mutations move between them.
#include <string>

#include "argus/evidence/ncu_source.h"
#include "argus/evidence/pc_bundle.h"
#include "argus/evidence/pc_evidence.h"
#include "argus/evidence/system_trace.h"
#include "argus/sass/pcmap.h"
#include "argus/synthesis/comm_signals.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace argus;
  if (size < 1 || size > fuzz::kMaxInput) return -1;
  auto rest = fuzz::text(data + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      if (auto bundle = evidence::decodePcBundle(rest)) {
        auto again = evidence::decodePcBundle(evidence::encodePcBundle(*bundle));
        fuzz::require(again.has_value(), "an encoded PC bundle decodes");
        (void)sass::parsePcMap(bundle->disassembly, bundle->paintMap);
      }
      break;
    case 1:
      (void)evidence::parsePcEvidence(rest);
      break;
    case 2:
      (void)evidence::ncu::parseNcuSourceCsv(rest);
      break;
    case 3:
      (void)evidence::ncu::parseNcuRawCsv(rest);
      break;
    default:
      if (auto trace = evidence::parseSystemTrace(rest)) {
        auto signals = synthesis::commSignals(*trace);
        (void)synthesis::commSignalsJson(signals);
        (void)synthesis::kernelTimelineJson(*trace);
      }
      break;
  }
  return 0;
}
