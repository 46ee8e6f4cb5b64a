// The CUPTI per-PC collectors (pc_mapping, cupti_sass, cupti_pc_sampling), which publish PC
// bundles (argus/evidence/pc_bundle.h); see argus/backends/pc_collect.h.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "argus/backends/pc_collect.h"
#include "argus/collect/pc_inputs.h"
#include "argus/collect/run_variant.h"
#include "argus/evidence/pc_bundle.h"
#include "argus/sass/pcmap.h"
#include "argus/support/process.h"

namespace argus::backends {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using collect::configString;
using collect::inputFile;
using collect::materializeExecutable;
using collect::preparePcBundle;
using collect::runVariant;
using evidence::encodePcBundle;
using evidence::PcBundle;
using evidence::PcFunction;
using evidence::readPcEvidenceDir;

/// Which collection a CUPTI executor makes.
enum class Family { Mapping, SassMetrics, PcSampling };

/// The metric the mapping run counts (n(r,p)).
constexpr std::string_view kMappingMetric = "smsp__sass_inst_executed";
/// Per-PC SASS metrics of the reference build: executed warp and thread instructions (their ratio
/// is threads per instruction), predicated-on threads, and global / shared memory instructions.
constexpr std::string_view kReferenceMetrics =
    "smsp__sass_inst_executed,smsp__sass_thread_inst_executed,"
    "smsp__sass_thread_inst_executed_pred_on,smsp__sass_inst_executed_op_global,"
    "smsp__sass_inst_executed_op_shared";

uint64_t configLaunches(const runtime::TaskContext& ctx) {
  const auto& c = ctx.task.config;
  if (c.is_object() && c.contains("launches") && c["launches"].is_number_unsigned())
    return std::max<uint64_t>(1, c["launches"].get<uint64_t>());
  return 1;
}

Result<runtime::TaskOutputs> collectCupti(const program::ProgramSpec& spec,
                                          runtime::TaskContext& ctx, Family family) {
  const std::string component = family == Family::Mapping       ? "pc_mapping"
                                : family == Family::SassMetrics ? "cupti_sass"
                                                                : "cupti_pc_sampling";
  PcBundle bundle;
  bundle.collector = component;
  if (auto ok = preparePcBundle(spec, ctx, component, bundle); !ok)
    return std::unexpected(ok.error());
  auto exeInput = ctx.inputs.find("executable");
  if (exeInput == ctx.inputs.end())
    return fail(component, fmt::format("task `{}` has no `executable` input", ctx.task.id));
  auto exe = materializeExecutable(exeInput->second, ctx.taskDir);
  if (!exe) return std::unexpected(exe.error());
  auto library = cuptiSassLibrary();
  if (!library) return std::unexpected(library.error());

  const fs::path outDir = ctx.taskDir / "pc";
  std::error_code ec;
  fs::remove_all(outDir, ec);
  fs::create_directories(outDir, ec);
  const uint64_t launches = configLaunches(ctx);
  std::vector<std::pair<std::string, std::string>> env = {
      {"CUDA_INJECTION64_PATH", library->string()},
      {"ARGUS_OUT_DIR", outDir.string()},
      {"ARGUS_PC_KERNELS", bundle.kernel},
      {"ARGUS_PC_MAX_LAUNCHES", std::to_string(launches)},
      {"CUDA_MODULE_LOADING", "EAGER"}};
  if (family == Family::PcSampling) {
    env.emplace_back("ARGUS_PC_SAMPLING", "1");
  } else {
    const std::string metrics = family == Family::Mapping
                                    ? std::string(kMappingMetric)
                                    : configString(ctx, "metrics", std::string(kReferenceMetrics));
    env.emplace_back("ARGUS_SASS_METRICS", metrics);
    env.emplace_back("ARGUS_SASS_GRANULARITY", "gpu");
  }
  const auto start = std::chrono::steady_clock::now();
  auto ran = runVariant(spec, ctx, *exe, env, component);
  if (!ran) return std::unexpected(ran.error());
  const double wallMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::string errors;
  if (auto text = readFile(outDir / "errors.txt")) errors = *text;
  bundle.run = {{"command", ran->argv},
                {"exit_code", ran->result.exitCode},
                {"wall_ms", wallMs},
                {"collector_errors", errors}};

  auto evidence = readPcEvidenceDir(outDir);
  if (!evidence) return std::unexpected(evidence.error());
  for (auto& e : *evidence)
    if (e.kernel == bundle.kernel) bundle.launches.push_back(std::move(e));
  if (bundle.launches.empty())
    return fail(component,
                fmt::format("the program ran, but the collector recorded no launch of kernel "
                            "`{}` ({} other launches; collector errors: {})",
                            bundle.kernel, evidence->size(), errors.empty() ? "none" : errors));

  // The evidence is keyed by the cubin the driver loaded; it must be the build's.
  auto cubin = inputFile(ctx, "cubin", ctx.taskDir / "build.cubin", component);
  if (!cubin) return std::unexpected(cubin.error());
  auto built = readFile(*cubin);
  if (!built) return std::unexpected(built.error());
  for (const auto& launch : bundle.launches) {
    const PcFunction* f = launch.function(bundle.kernel);
    if (f == nullptr && !launch.functions.empty()) f = &launch.functions.front();
    if (f == nullptr) continue;  // e.g. PC sampling saw no sample; nothing to join
    if (f->cubinFile.empty())
      return fail(component, fmt::format("launch {} of `{}`: the collector saved no cubin (CRC "
                                         "{}), so the evidence cannot be tied to the build",
                                         launch.seq, bundle.kernel, f->cubinCrc));
    const fs::path saved = outDir / f->cubinFile;
    auto bytes = readFile(saved);
    if (!bytes) return std::unexpected(bytes.error());
    json check = {{"crc", f->cubinCrc}, {"file", f->cubinFile}};
    if (*bytes == *built) {
      check["method"] = "identical bytes";
    } else {
      auto same = sass::sameSass(saved, *cubin);
      if (!same)
        return fail(component,
                    fmt::format("launch {} of `{}` ran cubin {} (CRC {}), which is not the "
                                "variant's build ({} bytes vs {}): {}; evidence is joined only "
                                "with the map of the same cubin",
                                launch.seq, bundle.kernel, f->cubinFile, f->cubinCrc, bytes->size(),
                                built->size(), same.error().message));
      check["method"] = "same SASS (bytes differ)";
    }
    bundle.cubinCheck = check;
  }
  runtime::TaskOutputs out;
  const std::string evidenceName = !ctx.task.outputs.empty()   ? ctx.task.outputs.front()
                                   : family == Family::Mapping ? "pc_region_map"
                                                               : "pc_counters";
  out.artifacts[evidenceName] = runtime::Artifact::fromData(encodePcBundle(bundle));
  return out;
}

}  // namespace

Result<fs::path> cuptiSassLibrary() {
  if (const char* env = std::getenv("ARGUS_CUPTI_SASS_LIB"); env && *env) {
    if (fs::exists(env)) return fs::path(env);
    return fail("cupti_sass",
                fmt::format("$ARGUS_CUPTI_SASS_LIB names `{}`, which does not exist", env));
  }
  fs::path built = ARGUS_CUPTI_SASS_LIB_DEFAULT;
  std::error_code ec;
  if (!built.empty() && fs::exists(built, ec)) return built;
  return fail("cupti_sass", fmt::format("libargus_cupti_sass.so (`{}`) is not built; build the "
                                        "`argus_cupti_sass` target (needs CUPTI headers) or set "
                                        "$ARGUS_CUPTI_SASS_LIB",
                                        built.string()));
}

void registerCuptiPcExecutors(runtime::ExecutorRegistry& registry, program::ProgramSpec spec) {
  auto shared = std::make_shared<const program::ProgramSpec>(std::move(spec));
  const std::pair<const char*, Family> kinds[] = {{"pc_mapping", Family::Mapping},
                                                  {"cupti_sass", Family::SassMetrics},
                                                  {"cupti_pc_sampling", Family::PcSampling}};
  const char* descriptions[] = {
      ("runs the mapping build (shared callees cloned, PTX painted) under CUPTI SASS metrics: "
       "exact per-PC counts n(r,p)"),
      "runs the reference build under CUPTI SASS metrics: per-PC warp/thread instructions",
      "runs the reference build under CUPTI PC sampling: per-PC stall reasons"};
  for (size_t i = 0; i < 3; ++i) {
    const Family family = kinds[i].second;
    (void)registry.add(runtime::ExecutorRecord{
        kinds[i].first, descriptions[i],
        std::make_shared<runtime::FunctionExecutor>([shared, family](runtime::TaskContext& ctx) {
          return collectCupti(*shared, ctx, family);
        })});
  }
}

}  // namespace argus::backends
