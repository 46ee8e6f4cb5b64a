// TTGIR region reader (include/argus/ttgir/regions.h). Line-oriented: Triton prints one
// operation per line, block openings end a line with `{` and closings start one with `}`, and
// location aliases (`#locN = loc(...)`) are defined before the module.
#include "argus/ttgir/regions.h"

#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace argus::ttgir {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

/// The first double-quoted string at or after `from` (no escapes in names Triton prints).
std::optional<std::string> quoted(std::string_view s, size_t from = 0) {
  size_t a = s.find('"', from);
  if (a == std::string_view::npos) return std::nullopt;
  size_t b = s.find('"', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  return std::string(s.substr(a + 1, b - a - 1));
}

/// Location aliases: `#locN = loc(...)` -> its text inside `loc(...)`.
using Aliases = std::map<std::string, std::string, std::less<>>;

/// Resolves a location (alias name or `loc(...)` body) to a file and line: `"file":L:C` directly,
/// `"name"(#locM)` through M, `callsite(#callee at #caller)` through the caller, `fused[...]`
/// through its first part.
ptx::SourcePosition resolve(const Aliases& aliases, std::string_view loc, int depth = 0) {
  loc = trim(loc);
  if (depth > 32 || loc.empty()) return {};
  if (loc.starts_with("#")) {
    size_t end = 1;
    while (end < loc.size() &&
           (std::isalnum(static_cast<unsigned char>(loc[end])) != 0 || loc[end] == '_'))
      ++end;
    auto it = aliases.find(loc.substr(0, end));
    return it == aliases.end() ? ptx::SourcePosition{} : resolve(aliases, it->second, depth + 1);
  }
  if (loc.starts_with("callsite(")) {
    // callsite(CALLEE at CALLER): the caller's line is the user's code (a marker helper or an
    // inlined @triton.jit function is the callee).
    size_t at = loc.rfind(" at ");
    return resolve(aliases, at == std::string_view::npos ? loc.substr(9) : loc.substr(at + 4),
                   depth + 1);
  }
  if (loc.starts_with("fused")) {
    size_t open = loc.find('[');
    return open == std::string_view::npos ? ptx::SourcePosition{}
                                          : resolve(aliases, loc.substr(open + 1), depth + 1);
  }
  if (loc.starts_with("\"")) {
    size_t close = loc.find('"', 1);
    if (close == std::string_view::npos) return {};
    std::string_view rest = loc.substr(close + 1);
    if (rest.starts_with(":")) {
      uint32_t line = 0;
      std::from_chars(rest.data() + 1, rest.data() + rest.size(), line);
      return {std::string(loc.substr(1, close - 1)), line};
    }
    if (rest.starts_with("(")) return resolve(aliases, rest.substr(1), depth + 1);  // named
  }
  return {};
}

/// The location of an operation line: the text inside its trailing `loc(...)`.
std::string_view opLocation(std::string_view line) {
  size_t at = line.rfind(" loc(");
  if (at == std::string_view::npos) return {};
  std::string_view inner = line.substr(at + 5);
  if (!inner.empty() && inner.back() == ')') inner.remove_suffix(1);
  return inner;
}

/// Argus markers in a `tt.elementwise_inline_asm "ASM" {...} %a, %b : ...` op (the Triton
/// marker helpers of python/argus/triton.py): every `// @argus ...` line of ASM, after MLIR's
/// escapes (`\0A`, `\09`, `\22`, `\5C`). An `iter=$N` operand is replaced by the op's N-th
/// operand counting the result as $0, i.e. the TTGIR value the iteration comes from.
Result<std::vector<ptx::Marker>> inlineAsmMarkers(std::string_view line) {
  const size_t open = line.find("tt.elementwise_inline_asm \"") + 26;
  std::string asmText;
  size_t at = open + 1;
  for (; at < line.size() && line[at] != '"'; ++at) {
    if (line[at] == '\\' && at + 2 < line.size()) {
      unsigned value = 0;
      auto [p, ec] = std::from_chars(line.data() + at + 1, line.data() + at + 3, value, 16);
      if (ec == std::errc{} && p == line.data() + at + 3) {
        asmText += static_cast<char>(value);
        at += 2;
        continue;
      }
    }
    asmText += line[at];
  }
  // Operands: after the attribute dictionary, up to the type signature.
  std::vector<std::string> operands;
  if (size_t close = line.find("} ", at); close != std::string_view::npos) {
    std::string_view list = line.substr(close + 2);
    list = list.substr(0, list.find(" :"));
    while (!list.empty()) {
      size_t comma = list.find(',');
      operands.emplace_back(trim(list.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  std::vector<ptx::Marker> markers;
  size_t start = 0;
  while (start <= asmText.size()) {
    size_t nl = asmText.find('\n', start);
    std::string_view piece = trim(std::string_view(asmText).substr(
        start, nl == std::string::npos ? std::string::npos : nl - start));
    if (piece.starts_with("//")) {
      auto marker = ptx::parseMarker(piece.substr(2));
      if (!marker) return std::unexpected(marker.error());
      if (*marker) {
        ptx::Marker m = **marker;
        if (m.iteration.starts_with("$")) {
          unsigned n = 0;
          std::from_chars(m.iteration.data() + 1, m.iteration.data() + m.iteration.size(), n);
          if (n >= 1 && n <= operands.size()) m.iteration = operands[n - 1];
        }
        markers.push_back(std::move(m));
      }
    }
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return markers;
}

struct OpenScope {
  uint32_t region = 0;
  int depth = 0;  ///< Block depth at the start.
  ptx::MarkerSite site;
};

Error parseError(std::string_view file, uint32_t line, const std::string& message) {
  return Error{"ttgir", fmt::format("{}:{}: {}", file, line, message)};
}

}  // namespace

bool looksLikeTtgir(std::string_view text) {
  return text.find("tt.func") != std::string_view::npos &&
         (text.find("module attributes") != std::string_view::npos ||
          text.find("module {") != std::string_view::npos);
}

Result<std::vector<ptx::FunctionRegions>> analyzeRegions(std::string_view text,
                                                         std::string_view fileName) {
  Aliases aliases;
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  for (std::string_view raw : lines) {
    std::string_view l = trim(raw);
    if (!l.starts_with("#loc")) continue;
    size_t eq = l.find(" = loc(");
    if (eq == std::string_view::npos) continue;
    std::string_view body = l.substr(eq + 7);
    if (!body.empty() && body.back() == ')') body.remove_suffix(1);
    aliases.emplace(std::string(l.substr(0, eq)), std::string(body));
  }

  std::vector<ptx::FunctionRegions> out;
  std::optional<ptx::FunctionRegions> fn;
  std::vector<OpenScope> open;
  int depth = 0;     // block depth inside the current function (function body = 1)
  uint32_t ops = 0;  // operations since the last scope boundary, owned by the innermost scope
  auto credit = [&] {
    if (fn && !open.empty()) fn->regions[open.back().region].instructions += ops;
    ops = 0;
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto lineNo = static_cast<uint32_t>(i + 1);
    std::string_view l = trim(lines[i]);
    if (!fn) {
      if (!l.starts_with("tt.func")) continue;
      size_t at = l.find('@');
      size_t paren = l.find('(', at);
      if (at == std::string_view::npos || paren == std::string_view::npos) continue;
      fn.emplace();
      fn->function = std::string(l.substr(at + 1, paren - at - 1));
      fn->isEntry = l.find(" public ") != std::string_view::npos;
      depth = l.ends_with("{") ? 1 : 0;
      open.clear();
      ops = 0;
      continue;
    }
    if (l.starts_with("}")) {
      // A block closes: a scope opened inside it must have ended.
      if (!open.empty() && open.back().depth == depth) {
        const auto& s = open.back();
        return std::unexpected(parseError(
            fileName, lineNo,
            fmt::format("Proton scope `{}` (started at line {}) is still open where its block "
                        "ends; end it in the same block (the same `scf.for` body or function "
                        "body) it started in",
                        fn->regions[s.region].name, s.site.ptx.line)));
      }
      --depth;
      if (depth == 0) {
        credit();
        out.push_back(std::move(*fn));
        fn.reset();
        continue;
      }
    }
    if (l.ends_with("{")) ++depth;
    // One boundary per Proton record; an Argus marker inline-asm op may carry several.
    struct Boundary {
      bool start = true;
      std::string name;
      std::string iteration;
      std::string role;
    };
    std::vector<Boundary> boundaries;
    if (l.starts_with("proton.record start") || l.starts_with("proton.record end")) {
      auto name = quoted(l);
      if (!name || name->empty()) {
        return std::unexpected(
            parseError(fileName, lineNo, "proton.record without a quoted scope name"));
      }
      boundaries.push_back({l.starts_with("proton.record start"), *name, {}, {}});
    } else if (l.find("tt.elementwise_inline_asm \"") != std::string_view::npos) {
      auto markers = inlineAsmMarkers(l);
      if (!markers) return std::unexpected(parseError(fileName, lineNo, markers.error().message));
      for (auto& m : *markers)
        boundaries.push_back(
            {m.kind == ptx::Marker::Kind::Begin, m.name, std::move(m.iteration), m.role});
    }
    if (boundaries.empty()) {
      if (!l.empty() && !l.starts_with("}") && !l.starts_with("^") && !l.starts_with("//")) ++ops;
      continue;
    }
    ptx::MarkerSite site;
    site.statement = i;
    site.ptx.line = lineNo;
    site.source = resolve(aliases, opLocation(l));
    credit();
    for (const Boundary& boundary : boundaries) {
      const std::string& name = boundary.name;
      site.iteration = boundary.iteration;
      site.role = boundary.role;
      if (boundary.start) {
        std::string path = open.empty() ? name : fn->regions[open.back().region].path + "/" + name;
        for (const auto& s : open) {
          if (fn->regions[s.region].name == name) {
            return std::unexpected(parseError(
                fileName, lineNo,
                fmt::format("region `{}` starts again inside itself (open since line {})", name,
                            s.site.ptx.line)));
          }
        }
        uint32_t index = 0;
        while (index < fn->regions.size() && fn->regions[index].path != path) ++index;
        if (index == fn->regions.size()) {
          ptx::Region r;
          r.id = ptx::regionId(fn->function, path);
          r.name = name;
          r.path = path;
          if (!open.empty()) {
            r.parent = open.back().region;
            fn->regions[open.back().region].children.push_back(index);
          }
          fn->regions.push_back(std::move(r));
        }
        fn->regions[index].begins.push_back(site);
        open.push_back({index, depth, site});
        continue;
      }
      if (open.empty()) {
        return std::unexpected(
            parseError(fileName, lineNo, fmt::format("the end of `{}` has no open scope", name)));
      }
      const OpenScope& top = open.back();
      if (fn->regions[top.region].name != name) {
        return std::unexpected(parseError(
            fileName, lineNo,
            fmt::format("scope `{}` ends while `{}` (started at line {}) is still open inside "
                        "it; scopes must nest",
                        name, fn->regions[top.region].name, top.site.ptx.line)));
      }
      if (top.depth != depth) {
        return std::unexpected(parseError(
            fileName, lineNo,
            fmt::format("scope `{}` ends in another block than the one it started in (line {}); "
                        "start and end it in the same `scf.for` body or function body",
                        name, top.site.ptx.line)));
      }
      fn->regions[top.region].ends.push_back(site);
      open.pop_back();
    }
  }
  if (fn) {
    return std::unexpected(
        parseError(fileName, static_cast<uint32_t>(lines.size()),
                   fmt::format("function `{}` does not end (missing `}}`)", fn->function)));
  }
  // Pre-order (parent before children) holds: a region is added when its start is seen, after
  // its parent's start.
  return out;
}

}  // namespace argus::ttgir
