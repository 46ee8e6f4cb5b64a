// Golden report tests (issue 28): stored evidence -> synthesis -> report. Each directory of
// tests/data/reports/ (or $ARGUS_REPORT_CASES) with a case.json is one test: the case's synthesis
// task runs on its stored inputs, the report holding that one signal is rendered as JSON and text,
// checked against the argus.report/1 schema and compared with expected.json and expected.txt.
// ARGUS_UPDATE_GOLDEN=1 writes the expected files instead. The case format is in
// tests/data/reports/README.md.
//
//   argus_report_golden_tests --make-workspace CASE_DIR WORKSPACE
// runs a case's tasks through the scheduler into a workspace instead (its stored files published
// by import tasks named like the producers), for the capture script's test.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "argus/planner/recipe.h"
#include "argus/query/scope.h"
#include "argus/report/report.h"
#include "argus/runtime/executor.h"
#include "argus/runtime/scheduler.h"
#include "argus/runtime/workspace_store.h"
#include "argus/support/process.h"
#include "argus/synthesis/executors.h"
#include "argus/synthesis/region_timing.h"
#include "argus/trace/proton.h"
#include "argus/workspace/workspace.h"

namespace argus {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

fs::path casesRoot() {
  if (const char* env = std::getenv("ARGUS_REPORT_CASES"); env != nullptr && *env != '\0')
    return env;
  return fs::path(ARGUS_TEST_DATA_DIR) / "reports";
}

/// Case directory names (those holding a case.json), sorted.
std::vector<std::string> caseNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(casesRoot(), ec))
    if (entry.is_directory() && fs::exists(entry.path() / "case.json"))
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

struct Case {
  fs::path dir;
  json spec;
};

Result<Case> loadCase(const fs::path& dir) {
  auto text = readFile(dir / "case.json");
  if (!text) return std::unexpected(text.error());
  json spec = json::parse(*text, nullptr, false);
  if (!spec.is_object() || !spec.contains("signal") || !spec.contains("task"))
    return fail("golden", fmt::format("{}: not an object with `signal` and `task`",
                                      (dir / "case.json").string()));
  return Case{dir, std::move(spec)};
}

/// Where a file reference of a case points: "data:REL" is tests/data/REL, anything else is
/// relative to the case directory. ("upstream:TASK/OUTPUT" refers to a task's output instead.)
fs::path filePath(const Case& c, const std::string& ref) {
  if (ref.starts_with("data:")) return fs::path(ARGUS_TEST_DATA_DIR) / ref.substr(5);
  return c.dir / ref;
}

using Outputs = std::map<std::string, runtime::Artifact>;  // "task/output" -> bytes

Result<runtime::Artifact> resolve(const Case& c, const std::string& ref, const Outputs& produced) {
  if (ref.starts_with("upstream:")) {
    auto it = produced.find(ref.substr(9));
    if (it == produced.end())
      return fail("golden", fmt::format("`{}`: no upstream task of the case made it", ref));
    return it->second;
  }
  auto bytes = readFile(filePath(c, ref));
  if (!bytes) return std::unexpected(bytes.error());
  return runtime::Artifact::fromData(std::move(*bytes));
}

/// Runs one task of the case (the main one or an upstream one) on its stored inputs and
/// evidence; its outputs join `produced` as "id/output".
Result<void> runTask(const Case& c, const json& spec, const runtime::ExecutorRegistry& registry,
                     Outputs& produced) {
  auto task = runtime::taskFromJson(nlohmann::json::parse(spec["task"].dump()));
  if (!task) return std::unexpected(task.error());
  runtime::TaskContext ctx(*task, fs::temp_directory_path() / "argus-report-golden");
  const json inputs = spec.value("inputs", json::object());
  for (const auto& b : task->inputs) {
    if (!inputs.contains(b.name))
      return fail("golden",
                  fmt::format("task `{}`: input `{}` has no file in `inputs`", task->id, b.name));
    auto a = resolve(c, inputs[b.name].get<std::string>(), produced);
    if (!a) return std::unexpected(a.error());
    ctx.inputs[b.name] = std::move(*a);
  }
  const json evidence = spec.value("evidence", json::object());
  for (const auto& [key, ref] : evidence.items()) {
    auto a = resolve(c, ref.get<std::string>(), produced);
    if (!a) return std::unexpected(a.error());
    ctx.evidence[key] = std::move(*a);
  }
  runtime::Executor* executor = registry.find(task->executor);
  if (executor == nullptr)
    return fail("golden", fmt::format("no synthesis executor `{}`", task->executor));
  auto out = executor->execute(ctx);
  if (!out)
    return fail("golden", fmt::format("task `{}` ({}): {}\n{}", task->id, task->executor,
                                      out.error().text(), ctx.log));
  for (auto& [name, artifact] : out->artifacts)
    produced[task->id + "/" + name] = std::move(artifact);
  return {};
}

/// `function: occurrence_timing`: a Proton trace imported as `argus trace --proton` does
/// (trace::importProtonTrace, then synthesis::occurrenceTiming): no executor consumes it.
Result<json> protonTiming(const Case& c) {
  const json& t = c.spec["task"];
  auto bytes = readFile(filePath(c, c.spec["inputs"].value("proton_trace", "")));
  if (!bytes) return std::unexpected(bytes.error());
  const auto doc = nlohmann::json::parse(*bytes, nullptr, false);
  if (doc.is_discarded()) return fail("golden", "the Proton trace is not JSON");
  const json config = t.value("config", json::object());
  auto imported = trace::importProtonTrace(doc, config.value("kernel", ""));
  if (!imported) return std::unexpected(imported.error());
  auto scope = query::parseScope(t.value("scope", ""));
  if (!scope) return std::unexpected(scope.error());
  auto timing =
      synthesis::occurrenceTiming(imported->trace, imported->map, t.value("region", ""), *scope);
  if (!timing) return std::unexpected(timing.error());
  return json::parse(timing->dump());
}

/// The signal's document: the case's executor (after its upstream tasks) or function.
Result<json> signalValue(const Case& c) {
  const std::string signal = c.spec["signal"].get<std::string>();
  if (c.spec.contains("function")) {
    if (c.spec["function"] != "occurrence_timing")
      return fail("golden", fmt::format("unknown function {}", c.spec["function"].dump()));
    auto timing = protonTiming(c);
    if (!timing) return std::unexpected(timing.error());
    if (!timing->contains(signal))
      return fail("golden", fmt::format("occurrence_timing made no `{}`", signal));
    return (*timing)[signal];
  }
  runtime::ExecutorRegistry registry;
  if (auto ok = synthesis::registerSynthesisModule(registry); !ok)
    return std::unexpected(ok.error());
  Outputs produced;
  for (const auto& up : c.spec.value("upstream", json::array()))
    if (auto ok = runTask(c, up, registry, produced); !ok) return std::unexpected(ok.error());
  if (auto ok = runTask(c, c.spec, registry, produced); !ok) return std::unexpected(ok.error());
  const std::string key = c.spec["task"].value("id", "") + "/" + signal;
  auto it = produced.find(key);
  if (it == produced.end()) return fail("golden", fmt::format("the task made no `{}`", signal));
  auto bytes = it->second.read();
  if (!bytes) return std::unexpected(bytes.error());
  json value = json::parse(*bytes, nullptr, false);
  if (value.is_discarded()) return fail("golden", fmt::format("`{}` is not JSON", key));
  return value;
}

/// The report of the one signal, every field but the value fixed by the case (as
/// session::runQuery fills them: qualification and unit from the recipe producing the signal).
Result<report::QueryReport> caseReport(const Case& c) {
  auto value = signalValue(c);
  if (!value) return std::unexpected(value.error());
  static const auto catalog = planner::RecipeCatalog::load(ARGUS_RECIPE_DIR);
  if (!catalog) return std::unexpected(catalog.error());
  const json r = c.spec.value("report", json::object());
  const std::string signal = c.spec["signal"].get<std::string>();
  auto scope = query::parseScope(c.spec["task"].value("scope", ""));
  if (!scope) return std::unexpected(scope.error());

  report::SignalEntry entry{.signal = signal, .task = c.spec["task"].value("id", ""), .status = {}};
  if (const planner::Recipe* recipe = catalog->producing(signal); recipe != nullptr) {
    entry.qualification = std::string(planner::qualificationName(recipe->qualification));
    for (const auto& s : recipe->signals)
      if (s.name == signal) entry.unit = s.unit;
  }
  // A signal made outside the recipes (a Proton import) says its own.
  if (r.contains("qualification")) entry.qualification = r["qualification"].get<std::string>();
  if (r.contains("unit")) entry.unit = r["unit"].get<std::string>();
  entry.scope = scope->all() ? "all" : scope->canonical();
  entry.status = r.value("status", "succeeded");
  entry.value = std::move(*value);
  if (r.contains("provenance")) entry.provenance = r["provenance"];

  report::QueryReport out;
  out.query = r.value("query", json{{"program", ""}, {"signals", {signal}}});
  out.scope = entry.scope;
  out.programVersion = r.value("program_version", "");
  out.workspaceVersion = r.value("workspace_version", "v1");
  out.workspace = r.value("workspace", "ws");
  for (const auto& v : r.value("new_variant_versions", json::array()))
    out.newVariantVersions.emplace_back(v["variant"].get<std::string>(),
                                        v["version"].get<std::string>());
  out.kernel = r.value("kernel", "");
  out.region = r.value("region", c.spec["task"].value("region", ""));
  out.regionId = r.value("region_id", "");
  out.signals.push_back(std::move(entry));
  for (const auto& n : r.value("not_collected", json::array()))
    out.notCollected.push_back({n["task"].get<std::string>(), n["reason"].get<std::string>()});
  const json run = r.value("run", json::object());
  out.run.planned = run.value("planned", std::size_t{1});
  out.run.ran = run.value("ran", std::size_t{1});
  out.run.executed = run.value("executed", std::size_t{1});
  out.run.devices = run.value("devices", std::vector<std::string>{});
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    out.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

/// One line of a diff; long lines (one-line JSON) are cut around `column`.
std::string diffLine(char mark, const std::string& line, std::size_t column) {
  constexpr std::size_t kWidth = 160;
  if (line.size() <= kWidth) return fmt::format("{}{}\n", mark, line);
  const std::size_t from = column > kWidth / 2 ? column - kWidth / 2 : 0;
  return fmt::format("{}{}{}{}  [{} chars; cut at {}]\n", mark, from > 0 ? "..." : "",
                     line.substr(from, kWidth), from + kWidth < line.size() ? "..." : "",
                     line.size(), from);
}

/// A unified-diff-like text of two texts: the common head and tail are skipped, the middle is
/// diffed line by line (longest common subsequence) when small, else shown whole.
std::string unifiedDiff(const std::string& expected, const std::string& actual,
                        const std::string& name) {
  const auto a = lines(expected);
  const auto b = lines(actual);
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  const std::size_t n = a.size() - head - tail;
  const std::size_t m = b.size() - head - tail;
  constexpr std::size_t kContext = 3;
  const std::size_t from = head > kContext ? head - kContext : 0;
  const std::size_t context = (head - from) + std::min(tail, kContext);
  std::string out = fmt::format("--- {} (expected)\n+++ {} (actual)\n@@ -{},{} +{},{} @@\n", name,
                                name, from + 1, n + context, from + 1, m + context);
  for (std::size_t i = from; i < head; ++i) out += diffLine(' ', a[i], 0);
  // The column where the first changed lines part, to cut long lines there.
  std::size_t column = 0;
  if (n > 0 && m > 0) {
    const std::string& x = a[head];
    const std::string& y = b[head];
    while (column < x.size() && column < y.size() && x[column] == y[column]) ++column;
  }
  constexpr std::size_t kMaxCells = 4'000'000;
  if (n * m > 0 && n * m <= kMaxCells) {
    // lcs[i][j]: common lines of a[head+i..] and b[head+j..].
    std::vector<std::vector<unsigned>> lcs(n + 1, std::vector<unsigned>(m + 1, 0));
    for (std::size_t i = n; i-- > 0;)
      for (std::size_t j = m; j-- > 0;)
        lcs[i][j] = a[head + i] == b[head + j] ? lcs[i + 1][j + 1] + 1
                                               : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[head + i] == b[head + j]) {
        out += diffLine(' ', a[head + i], 0);
        ++i, ++j;
      } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
        out += diffLine('-', a[head + i++], column);
      } else {
        out += diffLine('+', b[head + j++], column);
      }
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) out += diffLine('-', a[head + i], column);
    for (std::size_t j = 0; j < m; ++j) out += diffLine('+', b[head + j], column);
  }
  for (std::size_t i = a.size() - tail; i < a.size() && i < a.size() - tail + kContext; ++i)
    out += diffLine(' ', a[i], 0);
  return out;
}

bool updating() {
  const char* env = std::getenv("ARGUS_UPDATE_GOLDEN");
  return env != nullptr && std::string(env) == "1";
}

class ReportGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ReportGolden, MatchesExpected) {
  auto c = loadCase(casesRoot() / GetParam());
  ASSERT_TRUE(c) << c.error().text();
  auto r = caseReport(*c);
  ASSERT_TRUE(r) << r.error().text();
  const report::Json doc = report::toJson(*r);
  const auto valid = report::validate(doc);
  EXPECT_TRUE(valid) << "the report breaks the argus.report/1 schema: " << valid.error().text();
  const std::map<std::string, std::string> rendered{{"expected.json", doc.dump(2) + "\n"},
                                                    {"expected.txt", report::toText(*r)}};
  for (const auto& [name, actual] : rendered) {
    const fs::path path = c->dir / name;
    if (updating()) {
      auto ok = writeFile(path, actual);
      ASSERT_TRUE(ok) << ok.error().text();
      continue;
    }
    auto expected = readFile(path);
    ASSERT_TRUE(expected) << expected.error().text()
                          << "\n(ARGUS_UPDATE_GOLDEN=1 writes the expected files)";
    EXPECT_TRUE(*expected == actual)
        << "the report differs from " << path.string()
        << " (if the change is meant, rerun with ARGUS_UPDATE_GOLDEN=1 and commit the diff):\n"
        << unifiedDiff(*expected, actual, (fs::path(GetParam()) / name).string());
  }
}

std::string testName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& ch : name)
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, ReportGolden, ::testing::ValuesIn(caseNames()), testName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReportGolden);

TEST(ReportGoldenDiff, ShowsTheChangedLinesWithContext) {
  const std::string diff = unifiedDiff("a\nb\nc\nd\n", "a\nb\nX\nd\n", "t");
  EXPECT_NE(diff.find("-c\n+X\n"), std::string::npos) << diff;
  EXPECT_NE(diff.find(" b\n"), std::string::npos) << diff;
  EXPECT_NE(diff.find(" d\n"), std::string::npos) << diff;
}

/// `--make-workspace CASE WORKSPACE`: the case's tasks through the scheduler into a workspace,
/// each stored input or evidence file published by an import task with its producer's id.
int makeWorkspace(const fs::path& caseDir, const fs::path& wsDir) {
  auto c = loadCase(caseDir);
  if (!c) return fmt::print(stderr, "{}\n", c.error().text()), 1;
  if (c->spec.contains("function"))
    return fmt::print(stderr, "a `function` case has no tasks to run\n"), 1;
  std::vector<json> specs = c->spec.value("upstream", std::vector<json>{});
  specs.push_back(c->spec);
  // Import tasks: producer id -> {output -> file}.
  std::map<std::string, std::map<std::string, std::string>> imports;
  runtime::Plan plan;
  for (const auto& spec : specs) {
    auto task = runtime::taskFromJson(nlohmann::json::parse(spec["task"].dump()));
    if (!task) return fmt::print(stderr, "{}\n", task.error().text()), 1;
    const json inputs = spec.value("inputs", json::object());
    for (const auto& b : task->inputs) {
      const std::string ref = inputs.value(b.name, "");
      if (!ref.starts_with("upstream:"))
        imports[b.task][b.output] = fs::absolute(filePath(*c, ref)).string();
    }
    const json evidence = spec.value("evidence", json::object());
    for (const auto& [key, ref] : evidence.items()) {
      const auto slash = key.rfind('/');
      imports[key.substr(0, slash)][key.substr(slash + 1)] =
          fs::absolute(filePath(*c, ref.get<std::string>())).string();
    }
    if (auto ok = plan.add(*task); !ok) return fmt::print(stderr, "{}\n", ok.error().text()), 1;
  }
  for (const auto& [id, files] : imports) {
    runtime::TaskDescriptor t;
    t.id = id;
    t.type = runtime::TaskType::Transform;
    t.executor = "golden_import";
    for (const auto& [output, path] : files) {
      t.outputs.push_back(output);
      t.config["files"][output] = path;
    }
    if (auto ok = plan.add(t); !ok) return fmt::print(stderr, "{}\n", ok.error().text()), 1;
  }
  runtime::ExecutorRegistry registry;
  if (auto ok = synthesis::registerSynthesisModule(registry); !ok)
    return fmt::print(stderr, "{}\n", ok.error().text()), 1;
  (void)registry.add(runtime::ExecutorRecord{
      "golden_import", "publishes a golden case's stored file as a task output",
      std::make_shared<runtime::FunctionExecutor>(
          [](runtime::TaskContext& ctx) -> Result<runtime::TaskOutputs> {
            runtime::TaskOutputs out;
            for (const auto& [output, path] : ctx.task.config["files"].items()) {
              auto bytes = readFile(path.get<std::string>());
              if (!bytes) return std::unexpected(bytes.error());
              out.artifacts[output] = runtime::Artifact::fromData(std::move(*bytes));
            }
            return out;
          })});
  auto ws = workspace::Workspace::open(wsDir);
  if (!ws) return fmt::print(stderr, "{}\n", ws.error().text()), 1;
  runtime::WorkspaceResultStore store(*ws);
  runtime::Scheduler scheduler(registry, store, runtime::RunOptions{});
  auto run = scheduler.run(plan);
  if (!run) return fmt::print(stderr, "{}\n", run.error().text()), 1;
  fmt::print("{}", run->toText());
  return run->ok() ? 0 : 1;
}

}  // namespace
}  // namespace argus

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--make-workspace")
    return argus::makeWorkspace(argv[2], argv[3]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
