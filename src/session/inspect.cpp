// The inspection verbs' engine (argus/session/inspect.h).
#include "argus/session/inspect.h"

#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "argus/passes/transforms.h"
#include "argus/program/program.h"
#include "argus/ptx/callee_regions.h"
#include "argus/ptx/cfg.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/ptx/regions.h"
#include "argus/sass/pcmap.h"
#include "argus/support/process.h"
#include "argus/ttgir/regions.h"

namespace argus::session {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

Result<ptx::Module> loadPtx(const std::string& file) {
  auto text = readFile(file);
  if (!text) return std::unexpected(text.error());
  return ptx::parseModule(*text, file);
}

}  // namespace

Result<report::RegionTree> regions(const RegionsRequest& request) {
  const std::string ext = fs::path(request.target).extension().string();
  if (ext == ".ttgir" || ext == ".ttir") {
    if (!request.derive.empty())
      return fail("regions", fmt::format("{}: regions are derived on PTX; give the kernel's "
                                         ".ptx (TRITON_KERNEL_DUMP=1 writes it beside the "
                                         ".ttgir)",
                                         request.target));
    auto text = readFile(request.target);
    if (!text) return std::unexpected(text.error());
    if (!ttgir::looksLikeTtgir(*text)) {
      return fail("regions", fmt::format("`{}` is not a Triton MLIR module (no "
                                         "`module` with a `tt.func`); dump one with "
                                         "TRITON_KERNEL_DUMP=1 or kernel.asm[\"ttgir\"]",
                                         request.target));
    }
    auto analysis = ttgir::analyzeRegions(*text, fs::path(request.target).filename().string());
    if (!analysis) return std::unexpected(analysis.error());
    return report::RegionTree{request.target, "ttgir", std::move(*analysis)};
  }
  auto source = program::loadTargetPtx(request.target, request.arch, request.nvccFlags,
                                       request.derive, request.kernel);
  if (!source) return std::unexpected(source.error());
  if (!request.ptxOut.empty())
    if (auto ok = writeFile(request.ptxOut, source->text); !ok) return std::unexpected(ok.error());
  auto module = ptx::parseModule(source->text, source->displayName);
  if (!module) return std::unexpected(module.error());
  auto analysis = ptx::analyzeRegions(*module);
  if (!analysis) return std::unexpected(analysis.error());
  // Each kernel's tree with the regions of the functions it calls, under the calling region.
  if (auto composed = ptx::composeCalleeRegions(*module, *analysis); !composed)
    return std::unexpected(composed.error());
  return report::RegionTree{request.target, "ptx", std::move(*analysis)};
}

Result<std::string> printPtx(const PtxPrintRequest& request) {
  auto module = loadPtx(request.file);
  if (!module) return std::unexpected(module.error());
  std::string printed = ptx::printModule(*module);
  if (!request.output.empty())
    if (auto ok = writeFile(request.output, printed); !ok) return std::unexpected(ok.error());
  return printed;
}

Result<json> ptxSummary(const std::string& file) {
  auto module = loadPtx(file);
  if (!module) return std::unexpected(module.error());
  json functions = json::array();
  for (const auto* fn : module->functions())
    functions.push_back({{"name", fn->name},
                         {"entry", fn->isEntry},
                         {"has_body", fn->hasBody},
                         {"params", fn->params.size()},
                         {"statements", fn->body.size()}});
  return json{{"schema", "argus.ptx/1"},
              {"file", file},
              {"target", module->target()},
              {"functions", functions}};
}

Result<PtxCfg> ptxCfg(const PtxCfgRequest& request) {
  auto module = loadPtx(request.file);
  if (!module) return std::unexpected(module.error());
  PtxCfg result{.dot = {}, .json = json::array()};
  bool found = false;
  for (const auto* fn : module->functions()) {
    if (!fn->hasBody || (!request.function.empty() && fn->name != request.function)) continue;
    found = true;
    auto graph = ptx::buildControlFlowGraph(*fn, request.file);
    if (!graph) return std::unexpected(graph.error());
    result.dot += ptx::cfgToDot(*fn, *graph);
    json blocks = json::array();
    for (const auto& b : graph->blocks)
      blocks.push_back({{"begin", b.begin}, {"end", b.end}, {"successors", b.successors}});
    result.json.push_back({{"function", fn->name}, {"blocks", blocks}});
  }
  if (!found)
    return fail("cli", fmt::format("no function with a body named `{}` in `{}`; `argus ptx print "
                                   "{} --json` lists the functions",
                                   request.function, request.file, request.file));
  return result;
}

Result<std::vector<analysis::OpSite>> discoverOps(const DiscoverRequest& request) {
  auto module = loadPtx(request.file);
  if (!module) return std::unexpected(module.error());
  return analysis::discoverAsyncOps(*module, request.kernel, request.region);
}

Result<report::PcMap> pcmap(const PcmapRequest& request) {
  auto source = program::loadTargetPtx(request.target, request.arch);
  if (!source) return std::unexpected(source.error());
  auto module = ptx::parseModule(source->text, source->displayName);
  if (!module) return std::unexpected(module.error());
  std::string arch = module->target();
  if (arch.empty()) arch = request.arch;
  const std::string reference = ptx::printModule(*module);
  auto painted = passes::applyTransforms(*module, {"paint_ptx"}, {});
  if (!painted) return std::unexpected(painted.error());
  auto dir = makeTempDir("argus-pcmap");
  if (!dir) return std::unexpected(dir.error());
  auto cleanup = std::shared_ptr<void>(nullptr, [&](void*) {
    std::error_code ec;
    fs::remove_all(*dir, ec);
  });
  auto referenceCubin = sass::assemblePtx(reference, arch, *dir, "reference", true);
  if (!referenceCubin) return std::unexpected(referenceCubin.error());
  auto paintedCubin = sass::assemblePtx(ptx::printModule(*module), arch, *dir, "painted", true);
  if (!paintedCubin) return std::unexpected(paintedCubin.error());
  // The map is only valid for the reference build if painting changed no SASS.
  auto same = sass::sameSass(*referenceCubin, *paintedCubin);
  auto entries = sass::readPcMap(*paintedCubin, painted->paintMap);
  if (!entries) return std::unexpected(entries.error());

  report::PcMap map;
  map.target = request.target;
  map.paintedEqualsReference = same.has_value();
  if (!same) map.mismatch = same.error().message;
  map.entries = std::move(*entries);
  for (const auto& e : map.entries) {
    if (e.regions.empty()) {
      ++map.perRegion[e.function]["(outside every region)"];
    } else {
      for (const auto& r : e.regions) ++map.perRegion[e.function][r];
    }
    ++map.perFile[e.function][e.sourceFile.empty() ? "(no source line)"
                                                   : fs::path(e.sourceFile).filename().string()];
  }
  return map;
}

}  // namespace argus::session
