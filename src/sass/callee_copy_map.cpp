// Callee copies of a whole cubin, their map document and the disassembler's check that the copies
// are the reference's own code (callee_copies.h).
#include <algorithm>
#include <regex>
#include <span>

#include <fmt/format.h>

#include "argus/sass/callee_copies.h"
#include "argus/sass/pcmap.h"
#include "argus/support/process.h"

namespace argus::sass {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::string_view kSchema = "argus.callee_copies/1";

/// The copy that holds patched-text offset `pc`, or nullptr.
const CalleeCopy* copyAt(const std::vector<CalleeCopy>& copies, std::uint64_t pc) {
  for (const auto& c : copies)
    if (pc >= c.offset && pc < c.offset + c.original.size) return &c;
  return nullptr;
}

/// `text` with every address inside a copy read as the reference PC it stands for; `moved`
/// counts the addresses so read.
std::string asReference(const std::string& text, const std::vector<CalleeCopy>& copies,
                        std::size_t& moved) {
  static const std::regex kHex("0x([0-9a-f]+)");
  std::string out;
  std::size_t last = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kHex); it != std::sregex_iterator();
       ++it) {
    const std::uint64_t a = std::stoull((*it)[1], nullptr, 16);
    out += text.substr(last, static_cast<std::size_t>(it->position()) - last);
    if (const CalleeCopy* c = copyAt(copies, a)) {
      out += fmt::format("{:#x}", c->referencePc(a));
      ++moved;
    } else {
      out += it->str();
    }
    last = static_cast<std::size_t>(it->position() + it->length());
  }
  return out + text.substr(last);
}

}  // namespace

Result<CopiedCubin> copyEveryKernelsCallees(std::span<const std::uint8_t> cubin) {
  auto kernels = cubinKernels(cubin);
  if (!kernels) return std::unexpected(kernels.error());
  CopiedCubin out;
  out.bytes.assign(cubin.begin(), cubin.end());
  for (const auto& kernel : *kernels) {
    auto patched = copyCalleesPerCallSite(out.bytes, kernel);
    if (!patched) {
      // This kernel keeps the reference's code; its shared callees stay an estimate that says so.
      out.refused[kernel] = patched.error().message;
      continue;
    }
    if (!patched->copies.empty()) out.copies[kernel] = std::move(patched->copies);
    out.bytes = std::move(patched->bytes);
  }
  return out;
}

Result<json> checkCopies(const fs::path& reference, const fs::path& patched,
                         const CalleeCopyMap& copies) {
  auto before = cuobjdumpSassByPc(reference);
  if (!before) return std::unexpected(before.error());
  auto after = cuobjdumpSassByPc(patched);
  if (!after) return std::unexpected(after.error());
  if (before->size() != after->size())
    return fail("sass", fmt::format("the patched cubin holds {} functions, the reference {}",
                                    after->size(), before->size()));
  // Each call site calls its own copy: asReference below would read any copy as the reference.
  auto bytes = readFile(patched);
  if (!bytes) return std::unexpected(bytes.error());
  const std::span<const std::uint8_t> image(reinterpret_cast<const std::uint8_t*>(bytes->data()),
                                            bytes->size());
  std::size_t calls = 0;
  for (const auto& [kernel, list] : copies)
    for (const auto& c : list)
      for (std::uint64_t site : c.callSites) {
        auto target = callTarget(image, kernel, site);
        if (!target) return std::unexpected(target.error());
        if (*target != c.offset)
          return fail("sass", fmt::format("`{}` {:#x} calls {:#x}, not its copy of `{}` at {:#x}",
                                          kernel, site, *target, c.original.symbol, c.offset));
        ++calls;
      }
  std::size_t instructions = 0, moved = 0;
  const std::vector<CalleeCopy> none;
  for (const auto& [function, code] : *after) {
    auto ref = before->find(function);
    if (ref == before->end())
      return fail("sass",
                  fmt::format("the patched cubin has function `{}`, the reference not", function));
    auto found = copies.find(function);
    const auto& mine = found == copies.end() ? none : found->second;
    for (const auto& [pc, text] : code) {
      const CalleeCopy* c = copyAt(mine, pc);
      if (c == nullptr && !ref->second.contains(pc)) {
        // Filler between copies (the alignment gap): never reached, nothing calls into it.
        if (text.starts_with("NOP") || text.starts_with("BRA")) continue;
        return fail("sass", fmt::format("`{}` {:#x}: `{}` lies in no copy and not in the "
                                        "reference's text",
                                        function, pc, text));
      }
      const std::uint64_t refPc = c == nullptr ? pc : c->referencePc(pc);
      auto expected = ref->second.find(refPc);
      if (expected == ref->second.end())
        return fail("sass", fmt::format("`{}` {:#x} stands for reference PC {:#x}, which the "
                                        "reference lacks",
                                        function, pc, refPc));
      ++instructions;
      if (text == expected->second) continue;
      std::size_t n = 0;
      if (asReference(text, mine, n) != expected->second)
        return fail("sass", fmt::format("`{}` {:#x} (reference PC {:#x}) reads `{}` in the patched "
                                        "cubin but `{}` in the reference",
                                        function, pc, refPc, text, expected->second));
      moved += n;
    }
  }
  return json{{"method",
               "cuobjdump -sass: every instruction equals the reference's at its "
               "reference PC, addresses inside copies read as reference PCs"},
              {"instructions", instructions},
              {"moved_addresses", moved},
              {"calls_to_their_copy", calls},
              {"equal", true}};
}

json calleeCopiesJson(const CopiedCubin& copied, std::uint64_t referenceBytes, const json& check) {
  json kernels = json::object();
  for (const auto& [kernel, list] : copied.copies) {
    json rows = json::array();
    for (const auto& c : list)
      rows.push_back({{"callee", c.original.symbol},
                      {"reference_offset", c.original.offset},
                      {"size", c.original.size},
                      {"copy_offset", c.offset},
                      {"call_sites", c.callSites},
                      {"context", c.context}});
    kernels[kernel] = std::move(rows);
  }
  return json{{"schema", kSchema},
              {"reference_cubin", {{"bytes", referenceBytes}}},
              {"kernels", std::move(kernels)},
              {"refused", copied.refused},
              {"check", check}};
}

Result<CalleeCopyMap> parseCalleeCopies(const json& document) {
  if (!document.is_object() || document.value("schema", "") != kSchema)
    return fail("sass", fmt::format("not an {} document", kSchema));
  if (!document.contains("kernels") || !document["kernels"].is_object())
    return fail("sass", fmt::format("{}: `kernels` is not an object", kSchema));
  CalleeCopyMap out;
  for (const auto& [kernel, rows] : document["kernels"].items()) {
    if (!rows.is_array())
      return fail("sass", fmt::format("{}: kernels.{} is not a list", kSchema, kernel));
    for (const auto& row : rows) {
      try {
        CalleeCopy c;
        c.original = {row.at("callee").get<std::string>(),
                      row.at("reference_offset").get<std::uint64_t>(),
                      row.at("size").get<std::uint64_t>()};
        c.offset = row.at("copy_offset").get<std::uint64_t>();
        c.callSites = row.at("call_sites").get<std::vector<std::uint64_t>>();
        c.context = row.at("context").get<std::vector<std::uint64_t>>();
        out[kernel].push_back(std::move(c));
      } catch (const json::exception& e) {
        return fail("sass", fmt::format("{}: a copy of kernel `{}` is malformed: {}", kSchema,
                                        kernel, e.what()));
      }
    }
  }
  return out;
}

Result<json> copyCalleesInFile(const fs::path& cubin) {
  auto text = readFile(cubin);
  if (!text) return std::unexpected(text.error());
  const std::vector<std::uint8_t> image(text->begin(), text->end());
  auto copied = copyEveryKernelsCallees(image);
  if (!copied) return std::unexpected(copied.error());
  json check = {{"equal", true}, {"instructions", 0}, {"method", "no callee to copy"}};
  if (!copied->copies.empty()) {
    const fs::path reference = cubin.parent_path() / (cubin.filename().string() + ".reference");
    if (auto ok = writeFile(reference, *text); !ok) return std::unexpected(ok.error());
    if (auto ok = writeFile(cubin, std::string(copied->bytes.begin(), copied->bytes.end())); !ok)
      return std::unexpected(ok.error());
    auto checked = checkCopies(reference, cubin, copied->copies);
    std::error_code ec;
    fs::remove(reference, ec);
    if (!checked) {
      (void)writeFile(cubin, *text);  // the build's cubin stays the reference's on failure
      return fail("sass", fmt::format("the callee copies do not read as the reference's code, so "
                                      "their counts would not be the reference's: {}",
                                      checked.error().message));
    }
    check = std::move(*checked);
  }
  return calleeCopiesJson(*copied, image.size(), check);
}

}  // namespace argus::sass
