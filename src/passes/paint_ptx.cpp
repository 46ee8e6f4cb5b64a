// paint_ptx: the painted variant that the PC-to-region map is read from (docs/architecture.md
// "PC-to-region map by PTX painting").
//
// Every PTX instruction of every function gets its own synthetic source line in a dedicated
// `.file`: the pass declares `.file <F> "argus-paint"` at the top of the module (after `.version`,
// `.target`, `.address_size`; a `.file` declared after its `.loc` uses made `nvdisasm -g` crash),
// removes the original `.loc` directives and puts `.loc <F> <n> 1` before each instruction, n
// counting instructions across the module from 1. ptxas built with `-lineinfo` then names, for
// each SASS PC, the PTX instruction it came from. The paint map (TransformResult::paintMap) says
// for each painted line the function, the statement index (in the body the pass received), the
// opcode, the owning region paths and the original source file/line, so nothing that the removed
// `.loc`s said is lost. `.loc` directives only feed the line table, so the painted build has the
// same SASS as the unpainted one (checked per build by the pcmap tests).
//
// Paint map format (`argus_paint_map 1`):
//   {"format": "argus_paint_map 1", "file": "argus-paint", "fileIndex": F,
//    "lines": [{"line": n, "function": "...", "statement": i, "opcode": "...",
//               "regions": ["mainloop/mma", ...], "source": {"file": "...", "line": L},
//               "owners": [{"kernel": "...", "region": "..."}, ...],
//               "origin": {"function": "...", "statement": i}}, ...],
//    "functions": {"name": {"origin": "...", "owners": [{"kernel", "region"}, ...]}, ...}}
// `lines[n - 1]` is line n. `regions` are the function's own region paths: empty outside every
// region; several paths when markers under data-dependent branches leave the owner ambiguous.
// `owners` composes them with every calling context (call_contexts.h): each (kernel, full path
// from the kernel root) the instruction can run under, region "" meaning outside every region;
// a `__noinline__` helper called from two regions lists both. Empty for functions no kernel
// reaches. `origin` is the instruction before clone_shared_callees copied it (the same function
// and statement when it is no copy): the PTX instruction identity that joins a mapping build to the
// reference build. `functions` gives the same per function. `source.file` is empty when the
// instruction had no `.loc` before it.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "argus/ptx/regions.h"
#include "call_contexts.h"
#include "pass.h"

namespace argus::passes {
namespace {

using ptx::Statement;

constexpr std::string_view kPaintFile = "argus-paint";

bool isLoc(const Statement& s) {
  return s.kind == Statement::Kind::Directive && s.directive.name == ".loc";
}

/// Index and name of a top-level `.file N "name"` directive; false when it is not one.
bool parseFileDirective(const ptx::TopLevel& item, uint32_t& index, std::string& name) {
  if (item.kind != ptx::TopLevel::Kind::Directive || item.directive.name != ".file") return false;
  const std::string& text = item.directive.text;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
  if (ec != std::errc()) return false;
  const size_t open = text.find('"');
  const size_t close = open == std::string::npos ? open : text.find('"', open + 1);
  name = close == std::string::npos ? std::string() : text.substr(open + 1, close - open - 1);
  return true;
}

class PaintPtxPass final : public Pass {
 public:
  std::string_view name() const override { return "paint_ptx"; }
  std::string_view description() const override {
    return "give every PTX instruction its own line in a synthetic .file (the variant the "
           "PC-to-region map is read from)";
  }

  Result<void> run(ptx::Module& module, const TransformOptions& /*options*/,
                   TransformResult& result) override {
    // A free file index, and no earlier painting.
    uint32_t fileIndex = 1;
    for (const auto& item : module.items) {
      uint32_t index = 0;
      std::string fileName;
      if (!parseFileDirective(item, index, fileName)) continue;
      if (fileName == kPaintFile) {
        return fail("passes", fmt::format("{}: module is already painted (`.file {} \"{}\"`)",
                                          module.fileName, index, fileName));
      }
      fileIndex = std::max(fileIndex, index + 1);
    }

    // Regions and source positions come from the module as received, before any `.loc` goes.
    auto regions = ptx::analyzeRegions(module);
    if (!regions) return std::unexpected(regions.error());
    std::map<std::string, const ptx::FunctionRegions*> regionsByFunction;
    for (const auto& fr : *regions) regionsByFunction[fr.function] = &fr;

    const CallContexts contexts = analyzeCallContexts(module, regionsByFunction);
    // Copies made by clone_shared_callees name their original here.
    std::map<std::string, std::string> originOf;
    if (result.cloneMap.contains("functions")) {
      for (const auto& [copy, info] : result.cloneMap["functions"].items()) {
        originOf[copy] = info.value("original", copy);
      }
    }
    auto ownersJson = [](const OwnerSet& owners) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& o : owners) out.push_back({{"kernel", o.kernel}, {"region", o.region}});
      return out;
    };

    nlohmann::json lines = nlohmann::json::array();
    nlohmann::json functions = nlohmann::json::object();
    uint32_t next = 1;
    for (ptx::Function* function : module.functions()) {
      if (!function->hasBody) continue;
      const std::vector<ptx::SourcePosition> positions = ptx::sourcePositions(module, *function);
      auto found = regionsByFunction.find(function->name);
      const ptx::FunctionRegions* fr = found == regionsByFunction.end() ? nullptr : found->second;
      auto reached = contexts.contexts.find(function->name);
      const OwnerSet noContexts;
      const OwnerSet& functionContexts =
          reached == contexts.contexts.end() ? noContexts : reached->second;
      const std::vector<OwnerSet> owners = statementOwners(*function, fr, functionContexts);
      auto origin = originOf.find(function->name);
      const std::string originName = origin == originOf.end() ? function->name : origin->second;
      functions[function->name] = {{"origin", originName},
                                   {"owners", ownersJson(functionContexts)}};

      std::vector<Statement> painted;
      painted.reserve(function->body.size() * 2);
      uint64_t instructions = 0;
      for (size_t i = 0; i < function->body.size(); ++i) {
        Statement& s = function->body[i];
        if (isLoc(s)) {
          ++locsRemoved_;
          continue;
        }
        if (s.kind == Statement::Kind::Instruction) {
          const uint32_t line = next++;
          Statement loc;
          loc.kind = Statement::Kind::Directive;
          loc.directive.name = ".loc";
          loc.directive.text = fmt::format("{} {} 1", fileIndex, line);
          painted.push_back(std::move(loc));

          nlohmann::json localRegions = nlohmann::json::array();
          if (fr != nullptr && i < fr->owners.size()) {
            for (uint32_t r : fr->owners[i]) localRegions.push_back(fr->regions[r].path);
          }
          lines.push_back({
              {"line", line},
              {"function", function->name},
              {"statement", i},
              {"opcode", s.instruction.opcode},
              {"regions", std::move(localRegions)},
              {"source", {{"file", positions[i].file}, {"line", positions[i].line}}},
              {"owners", ownersJson(owners[i])},
              {"origin", {{"function", originName}, {"statement", i}}},
          });
          ++instructions;
        }
        painted.push_back(std::move(s));
      }
      function->body = std::move(painted);
      instructions_ += instructions;
      if (instructions > 0) ++functions_;
    }

    // Declare the paint file before its first use: after the leading .version/.target/
    // .address_size directives (and comments), before any variable or function.
    size_t at = 0;
    for (size_t i = 0; i < module.items.size(); ++i) {
      const auto& item = module.items[i];
      if (item.kind == ptx::TopLevel::Kind::Directive &&
          (item.directive.name == ".version" || item.directive.name == ".target" ||
           item.directive.name == ".address_size")) {
        at = i + 1;
      } else if (item.kind != ptx::TopLevel::Kind::Comment) {
        break;
      }
    }
    ptx::TopLevel file;
    file.kind = ptx::TopLevel::Kind::Directive;
    file.directive.name = ".file";
    file.directive.text = fmt::format("{} \"{}\"", fileIndex, kPaintFile);
    module.items.insert(module.items.begin() + static_cast<std::ptrdiff_t>(at), std::move(file));

    result.paintMap = {
        {"format", "argus_paint_map 1"},
        {"file", kPaintFile},
        {"fileIndex", fileIndex},
        {"lines", std::move(lines)},
        {"functions", std::move(functions)},
    };
    return {};
  }

 private:
  Statistic instructions_{this, "instructions", "instructions painted (one line each)"};
  Statistic functions_{this, "functions", "functions painted"};
  Statistic locsRemoved_{this, "locs_removed", "original .loc directives removed"};
};

}  // namespace

std::unique_ptr<Pass> createPaintPtxPass() {
  return std::make_unique<PaintPtxPass>();
}

}  // namespace argus::passes
