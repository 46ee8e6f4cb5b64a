#include "argus/evidence/ncu_source.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

namespace argus::evidence::ncu {
namespace {

constexpr const char* kComponent = "ncu";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

/// "1,024" -> "1024"; whitespace dropped.
std::string withoutSeparators(std::string_view cell) {
  std::string out;
  for (char c : trim(cell)) {
    if (c != ',' && c != ' ') out += c;
  }
  return out;
}

std::optional<std::uint64_t> parseInteger(std::string_view text) {
  std::uint64_t value = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> parseReal(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return value;
}

std::optional<std::uint64_t> parseAddress(std::string_view cell) {
  cell = trim(cell);
  if (cell.size() < 3 || cell[0] != '0' || (cell[1] != 'x' && cell[1] != 'X')) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(cell.data() + 2, cell.data() + cell.size(), value, 16);
  if (ec != std::errc{} || end != cell.data() + cell.size()) return std::nullopt;
  return value;
}

/// The rows of one function of one launch, before columns are typed.
struct PendingFunction {
  std::string name;
  std::vector<std::pair<std::uint64_t, std::vector<std::string>>> rows;  ///< address, cells
};

struct PendingLaunch {
  std::string kernel;
  std::vector<std::string> header;
  size_t addressColumn = 0;
  size_t sourceColumn = 0;
  std::vector<PendingFunction> functions;
};

Result<PcEvidence> finish(PendingLaunch& launch, std::uint64_t seq) {
  PcEvidence e;
  e.collector = "ncu";
  e.seq = seq;
  e.kernel = launch.kernel;
  e.instances = 1;
  std::uint64_t base = 0;
  bool haveBase = false;
  for (const auto& f : launch.functions) {
    if (!f.rows.empty() && !haveBase) {
      base = f.rows.front().first;
      haveBase = true;
    }
  }
  // A column is a metric when every non-empty value of the launch is an integer.
  std::vector<bool> integral(launch.header.size(), true), present(launch.header.size(), false);
  for (const auto& f : launch.functions) {
    for (const auto& [address, cells] : f.rows) {
      for (size_t c = 0; c < cells.size() && c < launch.header.size(); ++c) {
        if (c == launch.addressColumn || c == launch.sourceColumn) continue;
        const std::string value = withoutSeparators(cells[c]);
        if (value.empty() || value == "-") continue;
        if (parseInteger(value)) {
          present[c] = true;
        } else if (parseReal(value)) {
          present[c] = true;
          integral[c] = false;
        } else {
          integral[c] = false;  // Text: neither metric nor fractional.
        }
      }
    }
  }
  for (size_t c = 0; c < launch.header.size(); ++c) {
    if (c != launch.addressColumn && c != launch.sourceColumn && present[c] && integral[c]) {
      e.metrics.push_back(launch.header[c]);
    }
  }
  for (auto& pf : launch.functions) {
    PcFunction f;
    f.name = pf.name.empty() ? launch.kernel : pf.name;
    std::sort(pf.rows.begin(), pf.rows.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [address, cells] : pf.rows) {
      if (address < base) {
        return fail(kComponent, fmt::format("launch {} ({}): address {:#x} lies before the "
                                            "table's first address {:#x}",
                                            seq, launch.kernel, address, base));
      }
      PcRecord r;
      r.pc = address - base;
      if (!f.pcs.empty() && f.pcs.back().pc == r.pc) {
        return fail(kComponent, fmt::format("launch {} ({}): address {:#x} appears twice", seq,
                                            launch.kernel, address));
      }
      if (launch.sourceColumn < cells.size())
        r.sass = std::string(trim(cells[launch.sourceColumn]));
      for (size_t c = 0; c < cells.size() && c < launch.header.size(); ++c) {
        if (c == launch.addressColumn || c == launch.sourceColumn || !present[c]) continue;
        const std::string value = withoutSeparators(cells[c]);
        if (value.empty() || value == "-") continue;
        if (integral[c]) {
          r.metrics[launch.header[c]].total = *parseInteger(value);
        } else if (auto real = parseReal(value)) {
          r.fractional[launch.header[c]] = *real;
        }
      }
      f.pcs.push_back(std::move(r));
    }
    e.functions.push_back(std::move(f));
  }
  if (haveBase) e.note = fmt::format("PC offsets are ncu addresses minus {:#x}", base);
  return e;
}

}  // namespace

std::vector<std::string> splitCsvLine(std::string_view line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  bool any = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    any = true;
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(std::move(cell));
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  if (any) cells.push_back(std::move(cell));
  return cells;
}

Result<std::vector<PcEvidence>> parseNcuSourceCsv(std::string_view csv) {
  std::vector<PcEvidence> out;
  std::optional<PendingLaunch> launch;
  auto close = [&]() -> Result<void> {
    if (!launch) return {};
    if (launch->header.empty()) {
      return fail(kComponent, fmt::format("launch {} ({}): no header row with `Address` and "
                                          "`Source` (was the report exported with --page source "
                                          "--print-source sass --csv?)",
                                          out.size(), launch->kernel));
    }
    auto e = finish(*launch, out.size());
    if (!e) return std::unexpected(e.error());
    out.push_back(std::move(*e));
    launch.reset();
    return {};
  };
  size_t lineNumber = 0;
  size_t start = 0;
  while (start < csv.size()) {
    size_t end = csv.find('\n', start);
    if (end == std::string_view::npos) end = csv.size();
    const std::string_view line = csv.substr(start, end - start);
    start = end + 1;
    ++lineNumber;
    if (trim(line).empty()) continue;
    const auto cells = splitCsvLine(line);
    const std::string first(trim(cells.front()));
    if (first == "Kernel Name") {
      if (auto ok = close(); !ok) return std::unexpected(ok.error());
      launch.emplace();
      launch->kernel = cells.size() > 1 ? std::string(trim(cells[1])) : "";
      continue;
    }
    if (!launch) {
      // ncu prints `==PROF==` and other notes before the first launch; anything else before a
      // "Kernel Name" line means this is not a source-page export.
      if (first.starts_with("==")) continue;
      return fail(kComponent, fmt::format("line {}: expected `\"Kernel Name\",...` before the "
                                          "table, got `{}`",
                                          lineNumber, std::string(line.substr(0, 80))));
    }
    auto address = std::find(cells.begin(), cells.end(), "Address");
    auto source = std::find(cells.begin(), cells.end(), "Source");
    if (address != cells.end() && source != cells.end()) {
      launch->header = cells;
      launch->addressColumn = static_cast<size_t>(address - cells.begin());
      launch->sourceColumn = static_cast<size_t>(source - cells.begin());
      continue;
    }
    if (launch->header.empty()) {
      if (first == "Function Name" && cells.size() > 1) {
        launch->functions.push_back({std::string(trim(cells[1])), {}});
      }
      continue;  // Other "Key","Value" lines before the table.
    }
    if (first == "Function Name" && cells.size() > 1) {
      launch->functions.push_back({std::string(trim(cells[1])), {}});
      continue;
    }
    if (launch->addressColumn >= cells.size()) {
      return fail(kComponent, fmt::format("line {}: {} cells, the header has {}", lineNumber,
                                          cells.size(), launch->header.size()));
    }
    auto pc = parseAddress(cells[launch->addressColumn]);
    if (!pc) {
      return fail(kComponent, fmt::format("line {}: address `{}` is not hex (0x...)", lineNumber,
                                          cells[launch->addressColumn]));
    }
    if (launch->functions.empty()) launch->functions.push_back({"", {}});
    launch->functions.back().rows.emplace_back(*pc, cells);
  }
  if (auto ok = close(); !ok) return std::unexpected(ok.error());
  return out;
}

std::optional<double> NcuRawLaunch::number(const std::string& column) const {
  auto it = values.find(column);
  if (it == values.end()) return std::nullopt;
  return parseReal(withoutSeparators(it->second));
}

Result<std::vector<NcuRawLaunch>> parseNcuRawCsv(std::string_view csv) {
  std::vector<NcuRawLaunch> out;
  std::vector<std::string> header;
  size_t kernelColumn = 0;
  size_t lineNumber = 0;
  size_t start = 0;
  bool unitsSeen = false;
  while (start < csv.size()) {
    size_t end = csv.find('\n', start);
    if (end == std::string_view::npos) end = csv.size();
    const std::string_view line = csv.substr(start, end - start);
    start = end + 1;
    ++lineNumber;
    if (trim(line).empty() || trim(line).starts_with("==")) continue;
    auto cells = splitCsvLine(line);
    if (header.empty()) {
      auto k = std::find(cells.begin(), cells.end(), "Kernel Name");
      if (k == cells.end()) {
        return fail(kComponent,
                    fmt::format("raw page line {}: the header lacks `Kernel Name`", lineNumber));
      }
      kernelColumn = static_cast<size_t>(k - cells.begin());
      header = std::move(cells);
      continue;
    }
    if (!unitsSeen && out.empty() && kernelColumn < cells.size() &&
        trim(cells[kernelColumn]).empty()) {
      unitsSeen = true;  // The units row: empty under the identity columns.
      continue;
    }
    NcuRawLaunch launch;
    for (size_t c = 0; c < cells.size() && c < header.size(); ++c) {
      launch.values[header[c]] = cells[c];
    }
    launch.kernel = kernelColumn < cells.size() ? cells[kernelColumn] : "";
    out.push_back(std::move(launch));
  }
  if (header.empty()) return fail(kComponent, "raw page: no header row");
  return out;
}

std::string_view sourceColumnFor(std::string_view cuptiMetric) {
  if (cuptiMetric == "smsp__sass_inst_executed") return "Instructions Executed";
  if (cuptiMetric == "smsp__sass_thread_inst_executed") return "Thread Instructions Executed";
  if (cuptiMetric == "smsp__sass_thread_inst_executed_pred_on") {
    return "Predicated-On Thread Instructions Executed";
  }
  return "";
}

}  // namespace argus::evidence::ncu
