// `argus trace DIR`: decode what libargus_inject.so wrote for a variant run by hand (`argus
// build`, then the program under CUDA_INJECTION64_PATH with ARGUS_TRACE_DIR=DIR) into the same
// region timings `argus query` reports; `argus trace --proton FILE`: the same for a trace Proton
// wrote (triton.profiler, instrumentation backend, data="trace"), in SM cycles.
#include <iostream>
#include <memory>

#include "argus/report/trace.h"
#include "argus/session/trace.h"
#include "commands.h"

namespace argus::cli {
namespace {

struct TraceOptions {
  session::TraceRequest request;
  bool json = false;
};

int runTrace(const TraceOptions& o) {
  auto timings = session::traceTimings(o.request);
  if (!timings) return reportError(timings.error());
  if (o.json)
    std::cout << timings->timing.dump(2) << "\n";
  else
    std::cout << report::traceText(*timings);
  return 0;
}

}  // namespace

std::vector<Command> addTraceCommands(CLI::App& app) {
  auto o = std::make_shared<TraceOptions>();
  auto* verb = app.add_subcommand(
      "trace",
      "Decode a trace directory written by libargus_inject.so (ARGUS_TRACE_DIR) into region\n"
      "timings, as argus query reports them. Example:\n"
      "  argus build --program examples/tma_gemm/argus.yaml -o /tmp/v\n"
      "  CUDA_INJECTION64_PATH=.../libargus_inject.so ARGUS_TRACE_DIR=/tmp/t /tmp/v/tma_gemm\n"
      "  argus trace /tmp/t --trace-map /tmp/v/trace_map.json\n"
      "A trace Proton wrote (triton.profiler, backend=\"instrumentation\", data=\"trace\") is\n"
      "imported the same way, as observed occurrences in SM cycles:\n"
      "  argus trace --proton run.chrome_trace [--kernel K] [--workspace DIR]");
  verb->add_option("DIR", o->request.dir, "The ARGUS_TRACE_DIR of the run");
  verb->add_option("--proton", o->request.proton,
                   "Import this Proton Chrome trace instead (scopes become regions, with the IDs "
                   "Argus gives them in the kernel's TTGIR)");
  verb->add_option("--kernel", o->request.kernel,
                   "--proton: the kernel (default: the trace's only one)");
  verb->add_option("--workspace", o->request.workspace,
                   "--proton: keep the trace and the timings in this workspace as artifacts");
  verb->add_option("--trace-map", o->request.traceMap,
                   "trace_map.json of the variant (default: DIR/trace_map.json)");
  verb->add_option("--region", o->request.region, "Only this region's subtree (path)");
  verb->add_option("--scope", o->request.scope,
                   "Occurrences to keep, e.g. iter=2..5,role=consumer");
  verb->add_option("--chrome-trace", o->request.chromeTrace,
                   "Also write a Chrome/Perfetto timeline");
  verb->add_flag("--json", o->json, "The timings as JSON (duration and occurrences documents)");
  return {Command{verb, [o] { return runTrace(*o); }}};
}

}  // namespace argus::cli
