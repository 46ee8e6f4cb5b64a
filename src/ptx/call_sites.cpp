// Call sites of inlined code: where a statement that came from an inlined function was called in
// the function's own source. Two sources, both written by LLVM's NVPTX back end:
// - `.loc F L C, function_name LABEL, inlined_at F2 L2 C2` (PTX ISA 7.2+): the immediate call
//   site of the statement's location;
// - the DWARF of `.section .debug_info` / `.debug_abbrev` (`-lineinfo` and Triton's PTX):
//   DW_TAG_inlined_subroutine entries whose DW_AT_low_pc / DW_AT_high_pc are PTX labels and
//   whose DW_AT_call_file / DW_AT_call_line name the call. The outermost entry is the call in the
//   function's own source, which is what the user wrote (Argus's Triton markers are helpers that
//   Triton inlines, so the marker's own `.loc` names the helper).
// The sections are byte lists (`.b8 17`, `.b32 .debug_abbrev`, `.b64 $L__tmp4`): they are read
// into a byte stream that remembers which offsets hold a label, then decoded as DWARF 2-5.
// Anything this reader does not know (a form, 64-bit DWARF, ranges lists) ends the decoding with
// what was found so far: call sites are a refinement, never a reason to fail.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "argus/ptx/regions.h"
#include "call_sites.h"

namespace argus::ptx {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<uint64_t> number(std::string_view s) {
  s = trimmed(s);
  int base = 10;
  if (s.starts_with("0x") || s.starts_with("0X")) {
    base = 16;
    s.remove_prefix(2);
  }
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

/// A section's data items as bytes (little endian); a symbolic item (a label) is zeros whose
/// first offset maps to the label.
struct Bytes {
  std::vector<uint8_t> data;
  std::map<size_t, std::string> symbols;
};

Bytes sectionBytes(std::string_view text) {
  Bytes out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (auto comment = line.find("//"); comment != std::string_view::npos)
      line = line.substr(0, comment);
    line = trimmed(line);
    if (!line.starts_with(".b")) continue;  // `{`, `}`, blank
    size_t space = line.find_first_of(" \t");
    if (space == std::string_view::npos) continue;
    auto width = number(line.substr(2, space - 2));
    if (!width || (*width != 8 && *width != 16 && *width != 32 && *width != 64)) continue;
    const size_t size = *width / 8;
    std::string_view values = line.substr(space + 1);
    while (!values.empty()) {
      size_t comma = values.find(',');
      std::string_view item = trimmed(values.substr(0, comma));
      values = comma == std::string_view::npos ? std::string_view{} : values.substr(comma + 1);
      if (item.empty()) continue;
      uint64_t value = 0;
      if (auto n = number(item)) {
        value = *n;
      } else {
        out.symbols.emplace(out.data.size(), std::string(item));
      }
      for (size_t b = 0; b < size; ++b) out.data.push_back(static_cast<uint8_t>(value >> (8 * b)));
    }
  }
  return out;
}

/// Reads a byte stream; any read past the end sets `bad` and returns zeros.
struct Reader {
  explicit Reader(const Bytes& b) : bytes(b) {}

  const Bytes& bytes;
  size_t pos = 0;
  bool bad = false;

  bool more() const { return !bad && pos < bytes.data.size(); }
  uint64_t fixed(size_t n) {
    if (pos + n > bytes.data.size()) {
      bad = true;
      return 0;
    }
    uint64_t v = 0;
    for (size_t b = 0; b < n; ++b) v |= uint64_t{bytes.data[pos + b]} << (8 * b);
    pos += n;
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (pos >= bytes.data.size() || shift > 63) {
        bad = true;
        return 0;
      }
      uint8_t byte = bytes.data[pos++];
      v |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return v;
    }
  }
  void skip(uint64_t n) {
    if (n > bytes.data.size() - pos) {
      bad = true;
      return;
    }
    pos += n;
  }
  void skipString() {
    while (pos < bytes.data.size() && bytes.data[pos] != 0) ++pos;
    skip(1);
  }
  /// The label stored at the current offset (for DW_FORM_addr), then skips n bytes.
  std::optional<std::string> symbol(size_t n) {
    auto it = bytes.symbols.find(pos);
    skip(n);
    if (it == bytes.symbols.end()) return std::nullopt;
    return it->second;
  }
};

struct Abbreviation {
  uint64_t tag = 0;
  bool children = false;
  std::vector<std::pair<uint64_t, uint64_t>> attributes;  // (DW_AT, DW_FORM)
};

std::map<uint64_t, Abbreviation> abbreviations(const Bytes& bytes) {
  std::map<uint64_t, Abbreviation> table;
  Reader r(bytes);
  while (r.more()) {
    uint64_t code = r.uleb();
    if (code == 0) break;
    Abbreviation a;
    a.tag = r.uleb();
    a.children = r.fixed(1) != 0;
    for (;;) {
      uint64_t at = r.uleb(), form = r.uleb();
      if (r.bad || (at == 0 && form == 0)) break;
      if (form == 0x21) r.uleb();  // DW_FORM_implicit_const: the value lives here
      a.attributes.emplace_back(at, form);
    }
    if (r.bad) break;
    table.emplace(code, std::move(a));
  }
  return table;
}

/// An inlined call: the labels bounding its code and the call in the caller's source.
struct InlinedCall {
  std::string low, high;
  uint32_t file = 0, line = 0;
};

constexpr uint64_t kTagInlinedSubroutine = 0x1d;
constexpr uint64_t kAtLowPc = 0x11, kAtHighPc = 0x12, kAtCallFile = 0x58, kAtCallLine = 0x59;

/// DW_FORM codes (DWARF 5, section 7.5.6).
enum Form : uint64_t {
  kAddr = 0x01,
  kBlock2 = 0x03,
  kBlock4 = 0x04,
  kData2 = 0x05,
  kData4 = 0x06,
  kData8 = 0x07,
  kString = 0x08,
  kBlock = 0x09,
  kBlock1 = 0x0a,
  kData1 = 0x0b,
  kFlag = 0x0c,
  kSdata = 0x0d,
  kStrp = 0x0e,
  kUdata = 0x0f,
  kRefAddr = 0x10,
  kRef1 = 0x11,
  kRef2 = 0x12,
  kRef4 = 0x13,
  kRef8 = 0x14,
  kRefUdata = 0x15,
  kSecOffset = 0x17,
  kExprloc = 0x18,
  kFlagPresent = 0x19,
  kStrx = 0x1a,
  kAddrx = 0x1b,
  kRefSup4 = 0x1c,
  kStrpSup = 0x1d,
  kData16 = 0x1e,
  kLineStrp = 0x1f,
  kRefSig8 = 0x20,
  kImplicitConst = 0x21,
  kLoclistx = 0x22,
  kRnglistx = 0x23,
  kStrx1 = 0x25,
  kStrx2 = 0x26,
  kStrx3 = 0x27,
  kStrx4 = 0x28,
  kAddrx1 = 0x29,
  kAddrx2 = 0x2a,
  kAddrx3 = 0x2b,
  kAddrx4 = 0x2c,
};

/// An attribute's value: a number, or the label a DW_FORM_addr names.
struct Value {
  uint64_t number = 0;
  std::optional<std::string> label;
};

/// Reads one attribute value of `form`; nullopt for a form it does not know (DW_FORM_indirect
/// among them), after which the next entry cannot be found.
std::optional<Value> readValue(Reader& r, uint64_t form, uint64_t version, uint64_t addressSize) {
  Value v;
  switch (form) {
    case kAddr:
      v.label = r.symbol(addressSize);
      break;
    case kData1:
    case kRef1:
    case kFlag:
    case kStrx1:
    case kAddrx1:
      v.number = r.fixed(1);
      break;
    case kData2:
    case kRef2:
    case kStrx2:
    case kAddrx2:
      v.number = r.fixed(2);
      break;
    case kStrx3:
    case kAddrx3:
      v.number = r.fixed(3);
      break;
    case kData4:
    case kRef4:
    case kStrp:
    case kSecOffset:
    case kRefSup4:
    case kStrpSup:
    case kLineStrp:
    case kStrx4:
    case kAddrx4:
      v.number = r.fixed(4);
      break;
    case kRefAddr:  // the address size in DWARF 2, an offset after
      v.number = r.fixed(version <= 2 ? addressSize : 4);
      break;
    case kData8:
    case kRef8:
    case kRefSig8:
      v.number = r.fixed(8);
      break;
    case kData16:
      r.skip(16);
      break;
    case kSdata:  // read as unsigned: the same bytes, and never a value used here
    case kUdata:
    case kRefUdata:
    case kStrx:
    case kAddrx:
    case kLoclistx:
    case kRnglistx:
      v.number = r.uleb();
      break;
    case kString:
      r.skipString();
      break;
    case kBlock:
    case kExprloc:
      r.skip(r.uleb());
      break;
    case kBlock1:
      r.skip(r.fixed(1));
      break;
    case kBlock2:
      r.skip(r.fixed(2));
      break;
    case kBlock4:
      r.skip(r.fixed(4));
      break;
    case kFlagPresent:
    case kImplicitConst:  // no bytes in the entry
      break;
    default:
      return std::nullopt;
  }
  return v;
}

/// The outermost DW_TAG_inlined_subroutine entries with label bounds, in order.
std::vector<InlinedCall> outermostInlinedCalls(const Bytes& info,
                                               const std::map<uint64_t, Abbreviation>& abbrev) {
  std::vector<InlinedCall> calls;
  Reader r(info);
  while (r.more()) {
    const size_t unitStart = r.pos;
    uint64_t length = r.fixed(4);
    if (length >= 0xfffffff0) break;  // 64-bit DWARF: not written for PTX
    const size_t unitEnd = r.pos + length;
    const uint64_t version = r.fixed(2);
    uint64_t addressSize = 8;
    if (version >= 5) {
      r.fixed(1);  // unit type
      addressSize = r.fixed(1);
      r.fixed(4);  // abbreviation offset
    } else {
      r.fixed(4);
      addressSize = r.fixed(1);
    }
    // Tags of the open entries with children; an inlined call inside another is not outermost.
    std::vector<uint64_t> open;
    while (!r.bad && r.pos < unitEnd) {
      uint64_t code = r.uleb();
      if (code == 0) {
        if (!open.empty()) open.pop_back();
        continue;
      }
      auto a = abbrev.find(code);
      if (a == abbrev.end()) return calls;
      const bool inlined = a->second.tag == kTagInlinedSubroutine;
      InlinedCall call;
      for (auto [at, form] : a->second.attributes) {
        auto value = readValue(r, form, version, addressSize);
        if (!value) return calls;
        if (!inlined) continue;
        if (at == kAtLowPc && value->label) call.low = *value->label;
        if (at == kAtHighPc && value->label) call.high = *value->label;
        if (at == kAtCallFile) call.file = static_cast<uint32_t>(value->number);
        if (at == kAtCallLine) call.line = static_cast<uint32_t>(value->number);
      }
      if (r.bad) break;
      const bool nested = std::find(open.begin(), open.end(), kTagInlinedSubroutine) != open.end();
      // DW_AT_high_pc as an offset (DWARF 4+ data forms) or DW_AT_ranges: no labels to map.
      if (inlined && !nested && !call.low.empty() && !call.high.empty() && call.line != 0)
        calls.push_back(std::move(call));
      if (a->second.children) open.push_back(a->second.tag);
    }
    if (r.bad || unitEnd <= unitStart) break;
    r.pos = unitEnd;
  }
  return calls;
}

}  // namespace

std::map<uint32_t, std::string> fileTable(const Module& module) {
  std::map<uint32_t, std::string> files;
  for (const auto& item : module.items) {
    if (item.kind != TopLevel::Kind::Directive || item.directive.name != ".file") continue;
    const std::string& text = item.directive.text;
    uint32_t index = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
    if (ec != std::errc()) continue;
    size_t open = text.find('"');
    size_t close = open == std::string::npos ? open : text.find('"', open + 1);
    if (close == std::string::npos) continue;
    files[index] = text.substr(open + 1, close - open - 1);
  }
  return files;
}

namespace {

const std::string* section(const Module& module, std::string_view name) {
  for (const auto& item : module.items) {
    if (item.kind != TopLevel::Kind::Directive || item.directive.name != ".section") continue;
    std::string_view text = item.directive.text;
    if (text.starts_with(name) && text.size() > name.size() &&
        (std::isspace(static_cast<unsigned char>(text[name.size()])) || text[name.size()] == '{'))
      return &item.directive.text;
  }
  return nullptr;
}

/// `inlined_at F L C` of a `.loc` directive's text, if any.
std::optional<std::pair<uint32_t, uint32_t>> inlinedAt(std::string_view loc) {
  size_t at = loc.find("inlined_at");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = trimmed(loc.substr(at + 10));
  size_t space = rest.find_first_of(" \t");
  if (space == std::string_view::npos) return std::nullopt;
  auto file = number(rest.substr(0, space));
  rest = trimmed(rest.substr(space));
  space = rest.find_first_of(" \t,");
  auto line = number(rest.substr(0, space));
  if (!file || !line) return std::nullopt;
  return std::pair{static_cast<uint32_t>(*file), static_cast<uint32_t>(*line)};
}

}  // namespace

std::vector<SourcePosition> callSitePositions(const Module& module, const Function& function) {
  const auto files = fileTable(module);
  auto position = [&](uint32_t file, uint32_t line) {
    auto it = files.find(file);
    return SourcePosition{it == files.end() ? std::string() : it->second, line};
  };
  std::vector<SourcePosition> sites(function.body.size());

  // `.loc ..., inlined_at`: holds until the next `.loc`.
  SourcePosition current;
  for (size_t i = 0; i < function.body.size(); ++i) {
    const auto& s = function.body[i];
    if (s.kind == Statement::Kind::Directive && s.directive.name == ".loc") {
      auto at = inlinedAt(s.directive.text);
      current = at ? position(at->first, at->second) : SourcePosition{};
    }
    sites[i] = current;
  }

  // DWARF inlined calls: the outermost call, over the statements between its labels.
  const std::string* abbrevText = section(module, ".debug_abbrev");
  const std::string* infoText = section(module, ".debug_info");
  if (abbrevText == nullptr || infoText == nullptr) return sites;
  const auto calls =
      outermostInlinedCalls(sectionBytes(*infoText), abbreviations(sectionBytes(*abbrevText)));
  if (calls.empty()) return sites;
  std::map<std::string_view, size_t> labels;
  for (size_t i = 0; i < function.body.size(); ++i)
    if (function.body[i].kind == Statement::Kind::Label) labels.emplace(function.body[i].text, i);
  for (const auto& call : calls) {
    auto low = labels.find(call.low);
    auto high = labels.find(call.high);
    if (low == labels.end() || high == labels.end() || high->second < low->second) continue;
    const SourcePosition site = position(call.file, call.line);
    if (site.file.empty()) continue;
    for (size_t i = low->second; i < high->second; ++i) sites[i] = site;
  }
  return sites;
}

}  // namespace argus::ptx
