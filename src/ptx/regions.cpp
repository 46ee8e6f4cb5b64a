#include "argus/ptx/regions.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <deque>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <xxhash.h>

#include "argus/ptx/cfg.h"
#include "call_sites.h"

namespace argus::ptx {
namespace {

constexpr std::string_view kMarkerPrefix = "@argus";

std::vector<std::string_view> splitWords(std::string_view s) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) words.push_back(s.substr(start, i - start));
  }
  return words;
}

/// A sorted set of region-tree nodes that can be open at one point; node 0 is the kernel root.
using NodeSet = std::vector<uint32_t>;

void insertNode(NodeSet& set, uint32_t node) {
  auto it = std::lower_bound(set.begin(), set.end(), node);
  if (it == set.end() || *it != node) set.insert(it, node);
}

struct Node {
  std::string name;
  uint32_t parent = 0;
  uint32_t depth = 0;     // 1 for a top-level region
  size_t pathLength = 0;  // of the region path, names joined by '/'
  std::map<std::string, uint32_t, std::less<>> children;
  size_t firstBegin = 0;  // statement index, for a deterministic pre-order
  Region region;
};

/// The source of each statement as regions report it: its `.loc`, unless that names another
/// file than the inlined call it comes from, i.e. a helper (Argus's Triton markers, a probe in
/// hopper.cuh): then the call in the function's own source. An inlined call within the same
/// file keeps its `.loc` (the end marker of a scoped CUDA region is its destructor, inlined at
/// the closing brace; the `.loc` names the ARGUS_REGION line).
std::vector<SourcePosition> markerPositions(const Module& module, const Function& function) {
  auto positions = sourcePositions(module, function);
  auto sites = callSitePositions(module, function);
  for (size_t i = 0; i < positions.size(); ++i)
    if (!sites[i].file.empty() && sites[i].file != positions[i].file)
      positions[i] = std::move(sites[i]);
  // A derived region's begin (argus/ptx/derive.h) sits on an edge, after the code before it:
  // its place in the source is the region's first instruction with a line, not that code's.
  for (size_t i = positions.size(); i-- > 0;) {
    const Statement& s = function.body[i];
    if (s.kind != Statement::Kind::Comment || !s.text.starts_with("@argus begin ") ||
        s.text.find(" derived=") == std::string::npos)
      continue;
    for (size_t j = i + 1; j < positions.size(); ++j)
      if (function.body[j].kind == Statement::Kind::Instruction && positions[j].line != 0) {
        positions[i] = positions[j];
        break;
      }
  }
  return positions;
}

/// Region analysis of one function; the tree grows as the data-flow discovers paths.
class FunctionAnalysis {
 public:
  FunctionAnalysis(const Module& module, const Function& function)
      : module_(module), function_(function), positions_(markerPositions(module, function)) {
    nodes_.push_back(Node{});  // the kernel root
  }

  Result<FunctionRegions> run() {
    auto cfg = buildControlFlowGraph(function_, module_.fileName);
    if (!cfg) return std::unexpected(cfg.error());
    cfg_ = std::move(*cfg);
    if (auto markers = parseMarkers(); !markers) return std::unexpected(markers.error());

    // Fixed point: in-sets only grow, and the tree is finite because no name repeats on a path.
    std::vector<NodeSet> in(cfg_.blocks.size());
    in[0] = {0};
    std::deque<uint32_t> work{0};
    std::vector<bool> queued(cfg_.blocks.size(), false);
    queued[0] = true;
    while (!work.empty()) {
      uint32_t b = work.front();
      work.pop_front();
      queued[b] = false;
      NodeSet out = in[b];
      if (auto ok = transferBlock(b, out, nullptr); !ok) return std::unexpected(ok.error());
      for (uint32_t s : cfg_.blocks[b].successors) {
        size_t before = in[s].size();
        for (uint32_t n : out) insertNode(in[s], n);
        if (in[s].size() != before && !queued[s]) {
          queued[s] = true;
          work.push_back(s);
        }
      }
    }

    // Final pass over the fixed point: report errors and warnings, record owners and sites.
    FunctionRegions result;
    result.function = function_.name;
    result.isEntry = function_.isEntry;
    std::vector<std::vector<uint32_t>> nodeOwners(function_.body.size());
    for (uint32_t b = 0; b < cfg_.blocks.size(); ++b) {
      if (in[b].empty()) continue;  // unreachable
      NodeSet state = in[b];
      Recorder recorder{&result.warnings, &nodeOwners};
      if (auto ok = transferBlock(b, state, &recorder); !ok) return std::unexpected(ok.error());
    }
    if (auto ok = checkSiblingsOfOneName(); !ok) return std::unexpected(ok.error());
    finish(result, nodeOwners);
    return result;
  }

 private:
  struct Recorder {
    std::vector<RegionWarning>* warnings;
    std::vector<std::vector<uint32_t>>* owners;
  };

  Result<void> parseMarkers() {
    markers_.assign(function_.body.size(), std::nullopt);
    for (size_t i = 0; i < function_.body.size(); ++i) {
      const auto& s = function_.body[i];
      if (s.kind != Statement::Kind::Comment) continue;
      auto marker = parseMarker(s.text);
      if (!marker) return fail("regions", fmt::format("{}: {}", where(i), marker.error().message));
      markers_[i] = std::move(*marker);
    }
    return {};
  }

  /// "kernel.cu:42 (kernel.ptx:120:3)" for messages, or "kernel.ptx:120:3" without `.loc`.
  std::string where(size_t statement) const {
    const auto& loc = function_.body[statement].loc;
    std::string ptx = fmt::format("{}:{}:{}", module_.fileName, loc.line, loc.column);
    const auto& src = positions_[statement];
    if (src.file.empty()) return ptx;
    return fmt::format("{}:{} ({})", src.file, src.line, ptx);
  }

  std::string openedAt(uint32_t node) const {
    const auto& begins = nodes_[node].region.begins;
    if (begins.empty()) return "";
    return fmt::format(" (opened at {})", where(begins.front().statement));
  }

  /// The innermost open region called `name` on the path to `node`, or 0 (the root).
  uint32_t ancestorNamed(uint32_t node, std::string_view name) const {
    for (; node != 0; node = nodes_[node].parent)
      if (nodes_[node].name == name) return node;
    return 0;
  }

  /// The child of `parent` called `name`, made at `statement` if new; an error past the limits
  /// (kMaxRegionDepth, kMaxRegionPathLength, kMaxRegionsPerFunction), which keep the tree, its
  /// paths and every output that lists them bounded by the input.
  Result<uint32_t> child(uint32_t parent, const std::string& name, size_t statement) {
    if (auto it = nodes_[parent].children.find(name); it != nodes_[parent].children.end())
      return it->second;
    Node node;
    node.name = name;
    node.parent = parent;
    node.depth = nodes_[parent].depth + 1;
    node.pathLength = parent == 0 ? name.size() : nodes_[parent].pathLength + 1 + name.size();
    node.firstBegin = statement;
    auto limit = [&](std::string what, size_t max, std::string_view constant,
                     std::string_view fix) {
      return fail("regions", fmt::format("{}: `begin {}` {}, more than the limit of {} ({}); {} "
                                         "(docs/limits.md)",
                                         where(statement), name, what, max, constant, fix));
    };
    if (node.depth > kMaxRegionDepth)
      return limit(fmt::format("nests regions {} deep", node.depth), kMaxRegionDepth,
                   "kMaxRegionDepth",
                   "is an `end` marker missing, or are markers generated in a loop? Real "
                   "kernels nest a few levels");
    if (node.pathLength > kMaxRegionPathLength)
      return limit(fmt::format("makes a region path of {} bytes", node.pathLength),
                   kMaxRegionPathLength, "kMaxRegionPathLength",
                   "use shorter region names or nest fewer levels");
    if (nodes_.size() > kMaxRegionsPerFunction)
      return limit(fmt::format("makes region {} of function `{}`", nodes_.size(), function_.name),
                   kMaxRegionsPerFunction, "kMaxRegionsPerFunction",
                   "markers under data-dependent branches multiply the regions (each combination "
                   "of open regions is one); end each region on the branch that began it");
    auto index = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back(std::move(node));
    nodes_[parent].children.emplace(name, index);
    return index;
  }

  MarkerSite site(size_t statement, const Marker& marker) const {
    return MarkerSite{statement,
                      function_.body[statement].loc,
                      positions_[statement],
                      marker.iteration,
                      marker.role,
                      marker.derived};
  }

  void warn(Recorder* rec, size_t statement, std::string message) const {
    if (rec == nullptr) return;
    rec->warnings->push_back(
        RegionWarning{function_.body[statement].loc, positions_[statement], std::move(message)});
  }

  /// Applies the block's statements to `state`. Without a recorder (during the fixed point)
  /// it fails only past a limit (child): impossible transitions just drop the path, as the
  /// final pass will report.
  Result<void> transferBlock(uint32_t b, NodeSet& state, Recorder* rec) {
    const auto& block = cfg_.blocks[b];
    for (size_t i = block.begin; i < block.end; ++i) {
      const auto& s = function_.body[i];
      if (s.kind == Statement::Kind::Instruction) {
        if (rec != nullptr) (*rec->owners)[i] = state;
        const std::string base = s.instruction.baseOpcode();
        if (base == "ret" || base == "exit") {
          if (auto ok = checkClosedAtExit(i, state, rec); !ok) return ok;
        }
        continue;
      }
      if (!markers_[i]) continue;
      const Marker& marker = *markers_[i];
      NodeSet next;
      if (marker.kind == Marker::Kind::Begin) {
        for (uint32_t n : state) {
          if (uint32_t same = ancestorNamed(n, marker.name); same != 0) {
            if (rec != nullptr)
              return fail(
                  "regions",
                  fmt::format("{}: `begin {}` inside region `{}` that is already open{}; "
                              "a region cannot contain itself (is an `end {}` missing "
                              "before the loop's back edge?)",
                              where(i), marker.name, pathOf(same), openedAt(same), marker.name));
            continue;
          }
          auto c = child(n, marker.name, i);
          if (!c) return std::unexpected(c.error());
          if (rec != nullptr) {
            addSite(nodes_[*c].region.begins, site(i, marker));
            if (!marker.derived.empty()) nodes_[*c].region.selector = marker.derived;
          }
          insertNode(next, *c);
        }
      } else {
        std::vector<uint32_t> mismatched;
        for (uint32_t n : state) {
          if (n != 0 && nodes_[n].name == marker.name) {
            if (rec != nullptr) addSite(nodes_[n].region.ends, site(i, marker));
            insertNode(next, nodes_[n].parent);
          } else {
            mismatched.push_back(n);
          }
        }
        if (rec != nullptr && !mismatched.empty()) {
          uint32_t other = mismatched.front();
          std::string problem = other == 0
                                    ? fmt::format("`end {}` with no region open", marker.name)
                                    : fmt::format("`end {}` closes `{}`{}", marker.name,
                                                  nodes_[other].name, openedAt(other));
          if (next.empty())
            return fail("regions",
                        fmt::format("{}: {}; markers must nest (close inner regions first, and "
                                    "end each region with the name it began with)",
                                    where(i), problem));
          warn(rec, i,
               fmt::format("on some paths {}; those paths are treated as infeasible", problem));
        }
      }
      state = std::move(next);
    }
    return {};
  }

  Result<void> checkClosedAtExit(size_t i, const NodeSet& state, Recorder* rec) const {
    if (rec == nullptr) return {};
    std::vector<uint32_t> open;
    for (uint32_t n : state)
      if (n != 0) open.push_back(n);
    if (open.empty()) return {};
    const std::string op = function_.body[i].instruction.baseOpcode();
    std::string message = fmt::format("region `{}`{} is still open at `{}`", pathOf(open.front()),
                                      openedAt(open.front()), op);
    if (open.size() == state.size())
      return fail("regions", fmt::format("{}: {}; end the region before returning (the scoped "
                                         "ARGUS_REGION form does this on every return path)",
                                         where(i), message));
    warn(rec, i, fmt::format("on some paths {}", message));
    return {};
  }

  /// Two begin markers of one region at different source lines where the first dominates the
  /// second: on every path the second opens again, after its end, the region the first opened,
  /// so they are two sibling regions of one name that would be merged into one. Begins on
  /// exclusive branches (one region entered from several places) and copies of one marker
  /// (unrolled or peeled loops: the same line) are one region; so are begins without `.loc`,
  /// which cannot be told apart from copies, and a derived region's begins (one region of
  /// several parts by design: every run of an op kind, argus/ptx/derive.h).
  Result<void> checkSiblingsOfOneName() const {
    const DominatorTree dom(cfg_);
    auto dominates = [&](size_t a, size_t b) {
      const uint32_t ba = cfg_.blockOf[a], bb = cfg_.blockOf[b];
      return ba == bb ? a < b : dom.dominates(ba, bb);
    };
    for (uint32_t n = 1; n < nodes_.size(); ++n) {
      const auto& begins = nodes_[n].region.begins;
      for (const MarkerSite& first : begins)
        for (const MarkerSite& again : begins) {
          if (first.source.file.empty() || again.source.file.empty() || !first.derived.empty() ||
              !again.derived.empty() ||
              (first.source.file == again.source.file && first.source.line == again.source.line) ||
              !dominates(first.statement, again.statement))
            continue;
          return fail("regions",
                      fmt::format("{}: `begin {}` opens region `{}` again after its end, under "
                                  "the same parent, where every path has opened it at {}: two "
                                  "regions of one name would be merged into one; give them "
                                  "different names (one region entered from several branches "
                                  "is fine)",
                                  where(again.statement), nodes_[n].name, pathOf(n),
                                  where(first.statement)));
        }
    }
    return {};
  }

  static void addSite(std::vector<MarkerSite>& sites, MarkerSite s) {
    for (const auto& existing : sites)
      if (existing.statement == s.statement) return;
    sites.push_back(std::move(s));
  }

  std::string pathOf(uint32_t node) const {
    std::vector<std::string_view> names;
    for (; node != 0; node = nodes_[node].parent) names.push_back(nodes_[node].name);
    std::string path;
    for (auto it = names.rbegin(); it != names.rend(); ++it) {
      if (!path.empty()) path += '/';
      path += *it;
    }
    return path;
  }

  void finish(FunctionRegions& result, const std::vector<std::vector<uint32_t>>& nodeOwners) {
    // Pre-order with children sorted by their first begin marker, with an explicit stack (the
    // tree may be as deep as kMaxRegionDepth); a path is its parent's plus one name, so paths
    // cost their own length, not their depth times it.
    std::vector<uint32_t> regionOf(nodes_.size(), 0);
    // Source order where `.loc` tells it (nvcc may lay out an else-branch first), else PTX.
    auto order = [&](uint32_t n) {
      const auto& src = positions_[nodes_[n].firstBegin];
      return std::tuple(std::string_view(src.file), src.line, nodes_[n].firstBegin);
    };
    auto sortedChildren = [&](uint32_t node) {
      std::vector<uint32_t> kids;
      for (const auto& [name, c] : nodes_[node].children) kids.push_back(c);
      std::sort(kids.begin(), kids.end(),
                [&](uint32_t a, uint32_t b) { return order(a) < order(b); });
      return kids;
    };
    struct Frame {
      std::vector<uint32_t> kids;  // of this node, in order
      size_t next = 0;
      std::optional<uint32_t> region;  // this node's index in result.regions (none: the root)
    };
    std::vector<Frame> stack;
    stack.push_back(Frame{sortedChildren(0), 0, std::nullopt});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next == top.kids.size()) {
        stack.pop_back();
        continue;
      }
      const uint32_t c = top.kids[top.next++];
      const std::optional<uint32_t> parentRegion = top.region;
      auto index = static_cast<uint32_t>(result.regions.size());
      regionOf[c] = index;
      Region region = std::move(nodes_[c].region);
      region.name = nodes_[c].name;
      region.path =
          parentRegion ? result.regions[*parentRegion].path + '/' + region.name : region.name;
      region.id = regionId(function_.name, region.path);
      region.parent = parentRegion;
      result.regions.push_back(std::move(region));
      if (parentRegion) result.regions[*parentRegion].children.push_back(index);
      stack.push_back(Frame{sortedChildren(c), 0, index});  // invalidates `top`
    }

    result.owners.assign(nodeOwners.size(), {});
    for (size_t i = 0; i < nodeOwners.size(); ++i) {
      for (uint32_t n : nodeOwners[i]) {
        if (n == 0) continue;
        result.owners[i].push_back(regionOf[n]);
        ++result.regions[regionOf[n]].instructions;
      }
      std::sort(result.owners[i].begin(), result.owners[i].end());
    }
  }

  const Module& module_;
  const Function& function_;
  std::vector<SourcePosition> positions_;
  ControlFlowGraph cfg_;
  std::vector<std::optional<Marker>> markers_;
  std::vector<Node> nodes_;
};

}  // namespace

bool isRegionNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

bool isValidRegionName(std::string_view s) {
  return !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_') &&
         std::all_of(s.begin(), s.end(), isRegionNameChar);
}

Result<std::optional<Marker>> parseMarker(std::string_view comment) {
  auto words = splitWords(comment);
  if (words.empty() || words[0] != kMarkerPrefix) return std::optional<Marker>{};
  auto bad = [&](std::string_view why) {
    return fail("regions", fmt::format("malformed marker `//{}`: {}; expected `// @argus begin "
                                       "NAME [iter=REG] [role=TAG] [derived=SELECTOR]` or "
                                       "`// @argus end NAME`",
                                       comment, why));
  };
  if (words.size() >= 2 && words[1] == "trip") {
    if (parseTripCounter(comment)) return std::optional<Marker>{};
    return fail("regions", fmt::format("malformed trip counter `//{}`: expected `// @argus trip "
                                       "%argustrip_NAME reset` or `... step` (deriveRegions "
                                       "writes these; re-derive instead of editing them)",
                                       comment));
  }
  if (words.size() < 3) return bad("too few words");
  Marker marker;
  if (words[1] == "begin") {
    marker.kind = Marker::Kind::Begin;
  } else if (words[1] == "end") {
    marker.kind = Marker::Kind::End;
  } else {
    return bad(fmt::format("unknown marker kind `{}`", words[1]));
  }
  if (!isValidRegionName(words[2]))
    return bad(fmt::format("region name `{}` must match [A-Za-z_][A-Za-z0-9_.-]*", words[2]));
  marker.name = std::string(words[2]);
  for (size_t w = 3; w < words.size(); ++w) {
    std::string_view word = words[w];
    if (marker.kind == Marker::Kind::End)
      return bad(fmt::format("`end` takes only a name, found `{}`", word));
    if (word.starts_with("iter=") && word.size() > 5 && marker.iteration.empty()) {
      marker.iteration = std::string(word.substr(5));
    } else if (word.starts_with("role=") && marker.role.empty() &&
               isValidRegionName(word.substr(5))) {
      marker.role = std::string(word.substr(5));
    } else if (word.starts_with("derived=") && word.size() > 8 && marker.derived.empty()) {
      marker.derived = std::string(word.substr(8));
    } else {
      return bad(fmt::format("unexpected `{}`", word));
    }
  }
  return std::optional<Marker>{std::move(marker)};
}

std::optional<TripCounterStep> parseTripCounter(std::string_view comment) {
  auto words = splitWords(comment);
  if (words.size() != 4 || words[0] != kMarkerPrefix || words[1] != "trip" ||
      !words[2].starts_with("%argustrip_") || (words[3] != "reset" && words[3] != "step"))
    return std::nullopt;
  for (char c : words[2].substr(1))
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != '$')
      return std::nullopt;
  return TripCounterStep{std::string(words[2]), words[3] == "reset"};
}

std::string regionId(std::string_view kernel, std::string_view path) {
  std::string key;
  key.reserve(kernel.size() + path.size() + 1);
  key.append(kernel);
  key.push_back('\0');
  key.append(path);
  return fmt::format("{:016x}", XXH3_64bits(key.data(), key.size()));
}

std::vector<SourcePosition> sourcePositions(const Module& module, const Function& function) {
  const auto files = fileTable(module);
  std::vector<SourcePosition> positions(function.body.size());
  SourcePosition current;
  for (size_t i = 0; i < function.body.size(); ++i) {
    const auto& s = function.body[i];
    if (s.kind == Statement::Kind::Directive && s.directive.name == ".loc") {
      auto words = splitWords(s.directive.text);
      uint32_t file = 0, line = 0;
      if (words.size() >= 2) {
        std::from_chars(words[0].data(), words[0].data() + words[0].size(), file);
        std::from_chars(words[1].data(), words[1].data() + words[1].size(), line);
        auto it = files.find(file);
        current = SourcePosition{it == files.end() ? std::string() : it->second, line};
      }
    }
    positions[i] = current;
  }
  return positions;
}

Result<std::vector<FunctionRegions>> analyzeRegions(const Module& module) {
  std::vector<FunctionRegions> all;
  for (const Function* function : module.functions()) {
    if (!function->hasBody) continue;
    FunctionAnalysis analysis(module, *function);
    auto regions = analysis.run();
    if (!regions) return std::unexpected(regions.error());
    all.push_back(std::move(*regions));
  }
  return all;
}

}  // namespace argus::ptx
