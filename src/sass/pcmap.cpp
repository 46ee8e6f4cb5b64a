// readPcMap: parse `nvdisasm -g -c` of a painted build and join it with the paint map.
//
// nvdisasm 13 prints, per function, a `.text.NAME:` label, then instructions `/*0040*/ OP ... ;`,
// each run of instructions preceded by `//## File "F", line N` when the line-table row changes.
// A row holds until the next annotation, so every instruction takes the last annotation seen in
// its function.
#include "argus/sass/pcmap.h"

#include <cctype>
#include <charconv>
#include <chrono>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "argus/support/json_number.h"
#include "argus/support/process.h"

namespace argus::sass {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

/// One paint-map line, unpacked.
struct Painted {
  bool present = false;
  std::string function;
  size_t statement = 0;
  std::string opcode;
  std::vector<std::string> regions;
  std::string sourceFile;
  uint32_t sourceLine = 0;
  std::vector<PcOwner> owners;
  std::string originFunction;
  size_t originStatement = 0;
};

std::vector<PcOwner> unpackOwners(const nlohmann::json& owners) {
  std::vector<PcOwner> out;
  for (const auto& o : owners) {
    out.push_back({o.at("kernel").get<std::string>(), o.at("region").get<std::string>()});
  }
  return out;
}

Result<std::vector<Painted>> unpack(const nlohmann::json& paintMap) {
  if (!paintMap.is_object() || paintMap.value("format", "") != "argus_paint_map 1" ||
      !paintMap.contains("lines") || !paintMap["lines"].is_array()) {
    return fail("sass", "not a paint map (argus_paint_map 1 from the paint_ptx transform)");
  }
  std::vector<Painted> out(paintMap["lines"].size() + 1);
  try {
    for (const auto& line : paintMap["lines"]) {
      const auto n = exactInteger<size_t>(line.at("line"), "`line`");
      if (n == 0 || n >= out.size() || out[n].present) {
        return fail("sass", fmt::format("paint map: bad or repeated line {}", n));
      }
      Painted& p = out[n];
      p.present = true;
      p.function = line.at("function").get<std::string>();
      p.statement = exactInteger<size_t>(line.at("statement"), "`statement`");
      p.opcode = line.at("opcode").get<std::string>();
      p.regions = line.at("regions").get<std::vector<std::string>>();
      p.sourceFile = line.at("source").at("file").get<std::string>();
      p.sourceLine = exactInteger<uint32_t>(line.at("source").at("line"), "`line`");
      // Maps written before `owners`/`origin` existed: the function's own view.
      if (line.contains("owners")) p.owners = unpackOwners(line["owners"]);
      p.originFunction = p.function;
      p.originStatement = p.statement;
      if (line.contains("origin")) {
        p.originFunction = line["origin"].at("function").get<std::string>();
        p.originStatement = exactInteger<size_t>(line["origin"].at("statement"), "`statement`");
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return fail("sass", fmt::format("paint map: {}", e.what()));
  }
  return out;
}

/// `//## File "F", line N[, ...]` -> (F, N); false when the line is not an annotation.
bool parseAnnotation(std::string_view text, std::string& file, uint32_t& line) {
  const size_t at = text.find("//## File \"");
  if (at == std::string_view::npos) return false;
  text.remove_prefix(at + 11);
  const size_t close = text.find('"');
  if (close == std::string_view::npos) return false;
  file = std::string(text.substr(0, close));
  text.remove_prefix(close + 1);
  const size_t lineAt = text.find("line ");
  line = 0;
  if (lineAt != std::string_view::npos) {
    text.remove_prefix(lineAt + 5);
    std::from_chars(text.data(), text.data() + text.size(), line);
  }
  return true;
}

/// `/*0040*/ [{] [@P0] OP operands ;` -> (pc, text without `;`); false when not an instruction.
bool parseInstruction(std::string_view text, uint64_t& pc, std::string& instruction) {
  text = trim(text);
  if (!text.starts_with("/*")) return false;
  const size_t close = text.find("*/");
  if (close == std::string_view::npos) return false;
  std::string_view hex = text.substr(2, close - 2);
  auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), pc, 16);
  if (ec != std::errc() || ptr != hex.data() + hex.size()) return false;
  std::string_view rest = text.substr(close + 2);
  const size_t semi = rest.find(';');
  if (semi == std::string_view::npos) return false;
  rest = trim(rest.substr(0, semi));
  if (rest.starts_with('{')) rest = trim(rest.substr(1));
  instruction = std::string(rest);
  return !instruction.empty();
}

std::string opcodeOf(std::string_view instruction) {
  std::istringstream in{std::string(instruction)};
  std::string word;
  in >> word;
  if (word.starts_with('@')) in >> word;
  return word;
}

/// `$KERNEL$CALLEE:` (a called function's body inside a kernel's text) -> CALLEE.
bool parseBodyLabel(std::string_view text, std::string_view function, std::string& body) {
  text = trim(text);
  if (function.empty() || !text.starts_with('$') || !text.ends_with(':')) return false;
  text = text.substr(1, text.size() - 2);
  if (!text.starts_with(function) || text.size() <= function.size() + 1 ||
      text[function.size()] != '$') {
    return false;
  }
  body = std::string(text.substr(function.size() + 1));
  return true;
}

/// `.text.NAME:` -> NAME.
bool parseFunctionLabel(std::string_view text, std::string& function) {
  text = trim(text);
  if (!text.starts_with(".text.") || !text.ends_with(':')) return false;
  function = std::string(text.substr(6, text.size() - 7));
  return true;
}

Result<std::string> runNvdisasm(const std::filesystem::path& cubin, bool lineInfo) {
  auto tool = findTool("nvdisasm");
  if (!tool) return std::unexpected(tool.error());
  std::vector<std::string> argv{tool->string()};
  if (lineInfo) argv.emplace_back("-g");
  argv.emplace_back("-c");
  argv.push_back(cubin.string());
  ProcessOptions options;
  options.timeout = std::chrono::seconds(300);
  auto run = runProcess(argv, options);
  if (!run) return std::unexpected(run.error());
  if (run->exitCode != 0) {
    return fail("sass",
                fmt::format("nvdisasm {}-c {} exited with {}{}: {}", lineInfo ? "-g " : "",
                            cubin.string(), run->exitCode,
                            lineInfo ? " (a crash here can mean a .file declared after its .loc "
                                       "uses, or a gap in the .file indices)"
                                     : "",
                            run->err));
  }
  return std::move(run->out);
}

}  // namespace

Result<std::vector<PcEntry>> parsePcMap(std::string_view nvdisasmOutput,
                                        const nlohmann::json& paintMap) {
  auto painted = unpack(paintMap);
  if (!painted) return std::unexpected(painted.error());
  const std::string paintFile = paintMap.value("file", "argus-paint");
  std::map<std::string, std::vector<PcOwner>> bodyOwners;
  try {
    if (paintMap.contains("functions")) {
      for (const auto& [name, info] : paintMap["functions"].items()) {
        bodyOwners[name] = unpackOwners(info.at("owners"));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return fail("sass", fmt::format("paint map: functions: {}", e.what()));
  }

  std::vector<PcEntry> entries;
  std::string function;
  std::string body;
  std::optional<uint32_t> line;
  std::string labelBefore;  // a label directly before the next instruction
  bool padding = false;
  std::istringstream in{std::string(nvdisasmOutput)};
  std::string text;
  while (std::getline(in, text)) {
    std::string name;
    if (parseFunctionLabel(text, name)) {
      function = std::move(name);
      body = function;
      line.reset();
      labelBefore.clear();
      padding = false;
      continue;
    }
    if (parseBodyLabel(text, function, name)) {
      body = std::move(name);
      continue;
    }
    if (const std::string_view label = trim(text);
        label.starts_with(".L") && label.ends_with(':')) {
      labelBefore = std::string(label.substr(0, label.size() - 1));
      continue;
    }
    std::string file;
    uint32_t n = 0;
    if (parseAnnotation(text, file, n)) {
      if (file == paintFile && n > 0) {
        line = n;
      } else {
        line.reset();
      }
      continue;
    }
    PcEntry entry;
    if (function.empty() || !parseInstruction(text, entry.pc, entry.instruction)) continue;
    entry.function = function;
    entry.body = body;
    entry.opcode = opcodeOf(entry.instruction);
    // ptxas ends a text section with a branch to itself and NOPs up to the alignment.
    padding =
        padding || (!labelBefore.empty() && entry.instruction == "BRA `(" + labelBefore + ")");
    labelBefore.clear();
    entry.padding = padding;
    if (padding) {
      // Neither owned nor attributed: the line table's last row runs on over the padding.
    } else if (line) {
      if (*line >= painted->size() || !(*painted)[*line].present) {
        return fail("sass", fmt::format("{} /*{:04x}*/: painted line {} is not in the paint map "
                                        "(cubin built from other PTX?)",
                                        function, entry.pc, *line));
      }
      const Painted& p = (*painted)[*line];
      entry.line = line;
      entry.ptxFunction = p.function;
      entry.ptxStatement = p.statement;
      entry.ptxOpcode = p.opcode;
      entry.regions = p.regions;
      entry.sourceFile = p.sourceFile;
      entry.sourceLine = p.sourceLine;
      entry.owners = p.owners;
      entry.originFunction = p.originFunction;
      entry.originStatement = p.originStatement;
    } else if (body != function) {
      if (auto found = bodyOwners.find(body); found != bodyOwners.end()) {
        entry.owners = found->second;
      }
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Result<std::string> disassemble(const std::filesystem::path& cubin, bool lineInfo) {
  return runNvdisasm(cubin, lineInfo);
}

Result<std::vector<PcEntry>> readPcMap(const std::filesystem::path& cubin,
                                       const nlohmann::json& paintMap) {
  auto out = runNvdisasm(cubin, true);
  if (!out) return std::unexpected(out.error());
  return parsePcMap(*out, paintMap);
}

Result<std::map<std::string, std::vector<std::string>>> readSass(
    const std::filesystem::path& cubin) {
  auto out = runNvdisasm(cubin, false);
  if (!out) return std::unexpected(out.error());
  std::map<std::string, std::vector<std::string>> sass;
  std::string function;
  std::istringstream in(*out);
  std::string text;
  while (std::getline(in, text)) {
    std::string name;
    if (parseFunctionLabel(text, name)) {
      function = std::move(name);
      sass[function];
      continue;
    }
    uint64_t pc = 0;
    std::string instruction;
    if (!function.empty() && parseInstruction(text, pc, instruction)) {
      sass[function].push_back(std::move(instruction));
    }
  }
  return sass;
}

Result<void> sameSass(const std::filesystem::path& a, const std::filesystem::path& b) {
  auto sassA = readSass(a);
  if (!sassA) return std::unexpected(sassA.error());
  auto sassB = readSass(b);
  if (!sassB) return std::unexpected(sassB.error());
  for (const auto& [function, instructions] : *sassA) {
    auto other = sassB->find(function);
    if (other == sassB->end()) {
      return fail("sass",
                  fmt::format("{} has function {}, {} does not", a.string(), function, b.string()));
    }
    const auto& theirs = other->second;
    for (size_t i = 0; i < std::max(instructions.size(), theirs.size()); ++i) {
      const std::string mine = i < instructions.size() ? instructions[i] : "<end>";
      const std::string their = i < theirs.size() ? theirs[i] : "<end>";
      if (mine != their) {
        return fail("sass", fmt::format("SASS differs in {} at instruction {}: `{}` vs `{}`",
                                        function, i, mine, their));
      }
    }
  }
  for (const auto& [function, instructions] : *sassB) {
    if (!sassA->contains(function)) {
      return fail("sass",
                  fmt::format("{} has function {}, {} does not", b.string(), function, a.string()));
    }
  }
  return {};
}

nlohmann::json toJson(const PcEntry& entry) {
  nlohmann::json j = {
      {"function", entry.function},
      {"pc", entry.pc},
      {"opcode", entry.opcode},
      {"instruction", entry.instruction},
      {"line", nullptr},
      {"ptx_function", nullptr},
      {"ptx_statement", nullptr},
      {"ptx_opcode", nullptr},
      {"regions", entry.regions},
      {"source", nullptr},
      {"body", entry.body},
      {"owners", nlohmann::json::array()},
      {"origin", nullptr},
  };
  for (const auto& o : entry.owners) {
    j["owners"].push_back({{"kernel", o.kernel}, {"region", o.region}});
  }
  if (entry.padding) j["padding"] = true;
  if (entry.originStatement) {
    j["origin"] = {{"function", entry.originFunction}, {"statement", *entry.originStatement}};
  }
  if (entry.line) {
    j["line"] = *entry.line;
    j["ptx_function"] = entry.ptxFunction;
    j["ptx_opcode"] = entry.ptxOpcode;
    if (entry.ptxStatement) j["ptx_statement"] = *entry.ptxStatement;
    j["source"] = {{"file", entry.sourceFile}, {"line", entry.sourceLine}};
  }
  return j;
}

Result<nlohmann::json> paintedSassCheck(std::string_view unpaintedPtx, std::string_view paintedPtx,
                                        const std::string& arch, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  auto a = assemblePtx(unpaintedPtx, arch, dir, "unpainted", true);
  if (!a) return std::unexpected(a.error());
  auto b = assemblePtx(paintedPtx, arch, dir, "painted", true);
  if (!b) return std::unexpected(b.error());
  auto same = sameSass(*a, *b);
  return nlohmann::json{
      {"painted_equals_unpainted", same.has_value()},
      {"detail", same ? "identical SASS per function (ptxas -lineinfo, " + arch + ")"
                      : same.error().message}};
}

Result<std::filesystem::path> assemblePtx(std::string_view ptx, const std::string& arch,
                                          const std::filesystem::path& dir, const std::string& stem,
                                          bool lineInfo) {
  auto ptxas = findTool("ptxas");
  if (!ptxas) return std::unexpected(ptxas.error());
  const std::filesystem::path ptxPath = dir / (stem + ".ptx");
  const std::filesystem::path cubin = dir / (stem + ".cubin");
  if (auto ok = writeFile(ptxPath, ptx); !ok) return std::unexpected(ok.error());
  std::vector<std::string> argv{ptxas->string(), "-arch=" + arch};
  if (lineInfo) argv.push_back("-lineinfo");
  argv.insert(argv.end(), {"-o", cubin.string(), ptxPath.string()});
  ProcessOptions options;
  options.timeout = std::chrono::seconds(300);
  auto run = runProcess(argv, options);
  if (!run) return std::unexpected(run.error());
  if (run->exitCode != 0)
    return fail("sass", fmt::format("ptxas failed on {}:\n{}", ptxPath.string(), run->err));
  return cubin;
}

Result<std::map<std::string, std::map<uint64_t, std::string>>> cuobjdumpSassByPc(
    const std::filesystem::path& cubin) {
  auto tool = findTool("cuobjdump");
  if (!tool) return std::unexpected(tool.error());
  auto run = runProcess({tool->string(), "-sass", cubin.string()});
  if (!run) return std::unexpected(run.error());
  if (run->exitCode != 0)
    return fail("sass", fmt::format("cuobjdump -sass {} failed:\n{}", cubin.string(), run->err));
  std::map<std::string, std::map<uint64_t, std::string>> out;
  std::istringstream in(run->out);
  std::string line;
  std::string current;
  while (std::getline(in, line)) {
    if (auto at = line.find("Function : "); at != std::string::npos) {
      current = line.substr(at + 11);
      continue;
    }
    // `        /*0040*/                   MOV R1, c[0x0][0x28] ;   /* 0x... */`
    auto open = line.find("/*");
    auto close = line.find("*/", open == std::string::npos ? 0 : open);
    if (current.empty() || open == std::string::npos || close == std::string::npos) continue;
    std::string rest = line.substr(close + 2);
    auto semi = rest.find(';');
    if (semi == std::string::npos) continue;
    uint64_t pc = 0;
    const std::string_view digits(line.data() + open + 2, close - open - 2);
    if (std::from_chars(digits.data(), digits.data() + digits.size(), pc, 16).ec != std::errc())
      continue;
    rest = rest.substr(0, semi);
    rest.erase(0, rest.find_first_not_of(' '));
    rest.erase(rest.find_last_not_of(' ') + 1);
    out[current][pc] = std::move(rest);
  }
  return out;
}

Result<std::map<std::string, std::vector<std::string>>> cuobjdumpSass(
    const std::filesystem::path& cubin) {
  auto byPc = cuobjdumpSassByPc(cubin);
  if (!byPc) return std::unexpected(byPc.error());
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [function, code] : *byPc)
    for (const auto& [pc, text] : code) out[function].push_back(text);
  return out;
}

}  // namespace argus::sass
