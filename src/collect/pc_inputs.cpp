#include "argus/collect/pc_inputs.h"

#include <fmt/format.h>

#include "argus/sass/pcmap.h"
#include "argus/support/process.h"

namespace argus::collect {

namespace fs = std::filesystem;
using json = nlohmann::json;
using evidence::PcBundle;

std::string configString(const runtime::TaskContext& ctx, const char* key, std::string fallback) {
  const auto& c = ctx.task.config;
  if (c.is_object() && c.contains(key) && c[key].is_string()) return c[key].get<std::string>();
  return fallback;
}

Result<fs::path> inputFile(runtime::TaskContext& ctx, const std::string& name,
                           const fs::path& fallback, std::string_view component) {
  auto it = ctx.inputs.find(name);
  if (it == ctx.inputs.end())
    return fail(std::string(component),
                fmt::format("task `{}` has no `{}` input; the planner binds build/<variant>'s "
                            "outputs to PC collections",
                            ctx.task.id, name));
  if (it->second.file) return *it->second.file;
  std::error_code ec;
  fs::create_directories(fallback.parent_path(), ec);
  if (auto ok = writeFile(fallback, it->second.data); !ok) return std::unexpected(ok.error());
  return fallback;
}

Result<void> preparePcBundle(const program::ProgramSpec& spec, runtime::TaskContext& ctx,
                             std::string_view component, PcBundle& bundle) {
  const std::string who(component);
  std::error_code ec;
  fs::create_directories(ctx.taskDir, ec);
  bundle.variant = configString(ctx, "variant", "");
  bundle.kernel = configString(ctx, "kernel", "");
  if (bundle.kernel.empty() && spec.kernels.size() == 1) bundle.kernel = spec.kernels[0].name;
  if (bundle.kernel.empty())
    return fail(who, fmt::format("task `{}` names no kernel (config.kernel)", ctx.task.id));
  auto cubin = inputFile(ctx, "cubin", ctx.taskDir / "build.cubin", component);
  if (!cubin) return std::unexpected(cubin.error());
  bundle.cubinHash = ctx.inputs.at("cubin").hash;
  bundle.cubinBytes = fs::file_size(*cubin, ec);
  auto paint = ctx.readInput("paint_map", component);
  if (!paint) return std::unexpected(paint.error());
  bundle.paintMap = json::parse(*paint, nullptr, false);
  if (bundle.paintMap.is_discarded() || !bundle.paintMap.is_object() || bundle.paintMap.empty())
    return fail(who,
                "the variant's paint map is empty or not JSON; PC collections need a "
                "variant made with paint_ptx");
  if (ctx.inputs.contains("callee_copies")) {
    auto copies = ctx.readInput("callee_copies", component);
    if (!copies) return std::unexpected(copies.error());
    bundle.calleeCopies = json::parse(*copies, nullptr, false);
    if (bundle.calleeCopies.is_discarded())
      return fail(who, "the build's callee_copies map is not JSON");
  }
  auto text = sass::disassemble(*cubin, /*lineInfo=*/true);
  if (!text) return std::unexpected(text.error());
  bundle.disassembly = std::move(*text);
  // Fails here, not in synthesis, when the map and the cubin do not belong together.
  auto map = sass::parsePcMap(bundle.disassembly, bundle.paintMap);
  if (!map) return std::unexpected(map.error());

  // The reference build is the painted one; its SASS must be the unpainted program's.
  if (ctx.inputs.contains("unpainted_ptx") && ctx.inputs.contains("ptx")) {
    auto unpainted = ctx.readInput("unpainted_ptx", component);
    auto painted = ctx.readInput("ptx", component);
    if (!unpainted) return std::unexpected(unpainted.error());
    if (!painted) return std::unexpected(painted.error());
    auto check =
        sass::paintedSassCheck(*unpainted, *painted, spec.arch, ctx.taskDir / "sass_check");
    if (!check) return std::unexpected(check.error());
    bundle.sassCheck = std::move(*check);
    if (!bundle.sassCheck.value("painted_equals_unpainted", false))
      ctx.log += fmt::format("{}: warning: painting changed the SASS: {}\n", who,
                             bundle.sassCheck.value("detail", std::string()));
  }
  return {};
}

}  // namespace argus::collect
