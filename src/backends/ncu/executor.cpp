// The `ncu` Collect executor: profiles the reference build with Nsight Compute (clocks untouched,
// source counters), imports the per-PC SASS table and the raw kernel totals into a PC bundle
// (argus/evidence/pc_bundle.h), and checks PC by PC that ncu profiled the build's cubin.
#include <algorithm>
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "argus/backends/ncu.h"
#include "argus/collect/pc_inputs.h"
#include "argus/collect/run_variant.h"
#include "argus/evidence/ncu_source.h"
#include "argus/evidence/pc_bundle.h"
#include "argus/sass/pcmap.h"
#include "argus/support/process.h"

namespace argus::backends {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using collect::materializeExecutable;
using collect::preparePcBundle;
using collect::runVariant;
using evidence::encodePcBundle;
using evidence::PcBundle;

/// The opcode word of an instruction text without its guard (`@!P0 BRA ...` -> `BRA`).
std::string opcodeWord(std::string_view text) {
  size_t at = text.find_first_not_of(" \t");
  if (at == std::string_view::npos) return "";
  text.remove_prefix(at);
  if (text.starts_with('@')) {
    size_t space = text.find_first_of(" \t");
    if (space == std::string_view::npos) return "";
    text.remove_prefix(space);
    text.remove_prefix(std::min(text.size(), text.find_first_not_of(" \t")));
  }
  size_t end = text.find_first_of(" \t;");
  return std::string(text.substr(0, end));
}

Result<runtime::TaskOutputs> collectNcu(const program::ProgramSpec& spec,
                                        runtime::TaskContext& ctx) {
  constexpr std::string_view kName = "ncu";
  PcBundle bundle;
  bundle.collector = "ncu";
  if (auto ok = preparePcBundle(spec, ctx, kName, bundle); !ok) return std::unexpected(ok.error());
  auto exeInput = ctx.inputs.find("executable");
  if (exeInput == ctx.inputs.end())
    return fail("ncu", fmt::format("task `{}` has no `executable` input", ctx.task.id));
  auto exe = materializeExecutable(exeInput->second, ctx.taskDir);
  if (!exe) return std::unexpected(exe.error());
  auto tool = findTool("ncu");
  if (!tool) return std::unexpected(tool.error());

  ncu::NcuProfileOptions options;
  options.ncu = tool->string();
  options.report = ctx.taskDir / "report";
  options.kernels = {bundle.kernel};
  options.launchCount = 1;
  const auto start = std::chrono::steady_clock::now();
  auto prefix = ncu::profileCommand(options, {});
  // -k names the mangled kernel, as the paint map and CUPTI do.
  prefix.insert(std::find(prefix.begin(), prefix.end(), "-k"), {"--kernel-name-base", "mangled"});
  auto ran = runVariant(spec, ctx, *exe, {}, kName, prefix);
  if (!ran) return std::unexpected(ran.error());
  const double wallMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const fs::path report = ctx.taskDir / "report.ncu-rep";
  ProcessOptions quiet;
  quiet.timeout = std::chrono::seconds(120);
  auto source = runProcess(ncu::sourceExportCommand(options.ncu, report), quiet);
  if (!source || source->exitCode != 0)
    return fail("ncu", fmt::format("exporting the source page of {} failed: {}", report.string(),
                                   source ? source->err : source.error().message));
  auto raw = runProcess(ncu::rawExportCommand(options.ncu, report), quiet);
  if (!raw || raw->exitCode != 0)
    return fail("ncu", fmt::format("exporting the raw page of {} failed: {}", report.string(),
                                   raw ? raw->err : raw.error().message));
  auto launches = evidence::ncu::parseNcuSourceCsv(source->out);
  if (!launches) return std::unexpected(launches.error());
  auto totals = evidence::ncu::parseNcuRawCsv(raw->out);
  if (!totals) return std::unexpected(totals.error());
  // -k and -c 1 selected the launch; ncu may print the kernel's name demangled, and the
  // evidence is keyed by the name the map uses.
  for (auto& l : *launches) {
    for (auto& f : l.functions)
      if (f.name == l.kernel) f.name = bundle.kernel;
    l.kernel = bundle.kernel;
    bundle.launches.push_back(std::move(l));
  }
  if (bundle.launches.empty())
    return fail("ncu", fmt::format("ncu profiled no launch of `{}`; its output is in the task log",
                                   bundle.kernel));
  json t = json::array();
  for (const auto& l : *totals) {
    json values = json::object();
    for (const auto& name : options.metrics)
      if (auto v = l.number(name)) values[name] = *v;
    t.push_back(values);
  }
  bundle.totals = {{"launches", t}};
  bundle.run = {{"command", ran->argv}, {"exit_code", ran->result.exitCode}, {"wall_ms", wallMs}};

  // ncu names no cubin; it profiled the build's executable, and every PC must hold the build's
  // instruction (a different cubin would not line up PC for PC).
  auto map = sass::parsePcMap(bundle.disassembly, bundle.paintMap);
  if (!map) return std::unexpected(map.error());
  std::map<uint64_t, std::string> kernelOpcodes;
  for (const auto& e : *map)
    if (e.function == bundle.kernel) kernelOpcodes[e.pc] = opcodeWord(e.instruction);
  size_t compared = 0;
  for (const auto& launch : bundle.launches) {
    for (const auto& f : launch.functions) {
      for (const auto& pc : f.pcs) {
        auto it = kernelOpcodes.find(pc.pc);
        const std::string theirs = opcodeWord(pc.sass);
        if (it == kernelOpcodes.end() || it->second != theirs)
          return fail("ncu", fmt::format("ncu's instruction at {}+{:#x} is `{}`, the build's is "
                                         "`{}`: the profiled cubin is not the variant's build",
                                         f.name, pc.pc, pc.sass,
                                         it == kernelOpcodes.end() ? "(no such PC)" : it->second));
        ++compared;
      }
    }
  }
  bundle.cubinCheck = {{"method", "same instruction at every PC"}, {"pcs", compared}};
  runtime::TaskOutputs out;
  const std::string evidenceName =
      !ctx.task.outputs.empty() ? ctx.task.outputs.front() : "ncu_source_table";
  out.artifacts[evidenceName] = runtime::Artifact::fromData(encodePcBundle(bundle));
  return out;
}

}  // namespace

void registerNcuExecutor(runtime::ExecutorRegistry& registry, program::ProgramSpec spec) {
  auto shared = std::make_shared<const program::ProgramSpec>(std::move(spec));
  (void)registry.add(runtime::ExecutorRecord{
      "ncu",
      "profiles the reference build with ncu --clock-control none (source counters) and imports "
      "its per-PC table",
      std::make_shared<runtime::FunctionExecutor>(
          [shared](runtime::TaskContext& ctx) { return collectNcu(*shared, ctx); })});
}

}  // namespace argus::backends
