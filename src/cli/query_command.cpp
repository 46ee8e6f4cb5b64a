// `argus query`: the session runs the query (plan, build, run, synthesize); this verb parses the
// flags and renders the report.
#include <iostream>
#include <memory>

#include <filesystem>

#include "argus/report/report.h"
#include "argus/session/query.h"
#include "commands.h"

namespace argus::cli {
namespace {

struct QueryCommandOptions {
  session::QueryRequest query;
  bool json = false;
  bool requireGpu = false;
  bool progress = false;  ///< --progress: progress lines on stderr with --json too
  std::string chromeTraceOut;
  std::string htmlOut;  ///< --html: the report as a self-contained page
  std::size_t concurrentProbes = session::defaultConcurrentProbes();
  std::string executor = "local";  ///< --executor local|slurm
  runtime::SlurmOptions slurm;
};

int runQuery(const QueryCommandOptions& o) {
  // Before a query that may run for minutes.
  for (const auto& [flag, file] :
       {std::pair{"--html", &o.htmlOut}, std::pair{"--chrome-trace", &o.chromeTraceOut}})
    if (auto ok = checkOutputFolder("query", flag, *file); !ok) return reportError(ok.error());
  auto prepared = session::prepareQuery(o.query);
  if (!prepared) return reportError(prepared.error());
  session::RunSettings settings;
  settings.concurrentProbes = o.concurrentProbes;
  settings.progress = !o.json || o.progress;
  if (!o.chromeTraceOut.empty()) settings.timeline = o.chromeTraceOut;
  if (!o.htmlOut.empty()) settings.html = o.htmlOut;
  if (o.executor == "slurm") settings.slurm = o.slurm;
  auto run = session::runQuery(*prepared, settings);
  if (!run) return reportError(run.error());
  if (o.json) {
    const auto document = report::toJson(run->report);
    std::cout << document.dump(2) << "\n";
    // A report that breaks its own schema is an Argus bug: say so, and fail the command, so
    // that no test or agent reads it as a valid answer.
    if (auto ok = report::validate(document); !ok) {
      (void)reportError(ok.error());
      return 3;
    }
  } else {
    std::cout << report::toText(run->report);
  }
  if (!run->reportArtifact.empty())
    std::cerr << "argus: query: report kept as " << run->reportArtifact << " (`argus report "
              << run->reportArtifact << " --workspace " << run->report.workspace
              << "` shows it again; --html FILE draws it)\n";
  else
    std::cerr << "argus: query: the report was not kept in the workspace: " << run->reportNotKept
              << "\n";
  if (run->htmlError) return reportError(*run->htmlError);  // after the report itself
  if (!o.htmlOut.empty()) std::cerr << "argus: query: wrote " << o.htmlOut << "\n";
  if (o.requireGpu && run->gpuSkipped > 0) {
    std::cerr << "argus: query: --require-gpu: " << run->gpuSkipped
              << " GPU collection(s) could not run on this machine\n";
    return 2;
  }
  return run->failed ? 1 : 0;
}

}  // namespace

std::vector<Command> addQueryCommands(CLI::App& app) {
  auto o = std::make_shared<QueryCommandOptions>();
  auto* verb = app.add_subcommand(
      "query",
      "Answer a region query: plan, build the variants, run the collections on the GPU,\n"
      "synthesize and report. Results are kept in the workspace; asking again reuses them.\n"
      "Example: argus query --program examples/tma_gemm/argus.yaml --region mainloop "
      "--signals duration --scope role=producer\n"
      "op_latency probes every async op of the region's subtree in every iteration the reference\n"
      "run recorded; narrow the ops with --region (e.g. mainloop/tma_load) and the iterations\n"
      "with --scope iter=A..B.");
  addQueryOptions(*verb, o->query);
  verb->add_flag("--json", o->json, "The report as JSON (schema argus.report/1)");
  verb->add_flag("--progress", o->progress,
                 "Progress lines on stderr (`argus: N/M done, ...`) also with --json, for a "
                 "caller that reads the JSON from stdout and shows progress (argus.mcp does)");
  verb->add_flag("--require-gpu", o->requireGpu,
                 "Exit with 2 when a GPU collection could not run on this machine");
  verb->add_option("--html", o->htmlOut,
                   "Also write the report as one self-contained HTML page (region tree with "
                   "durations, attributed metrics, probe latencies, the timeline per SM and "
                   "warp, each number's qualification and provenance), drawn by "
                   "python/argus/html.py with python3 ($ARGUS_PYTHON)");
  verb->add_option("--chrome-trace", o->chromeTraceOut,
                   "Write the timeline of the query's collections (region traces, system traces "
                   "of every process) as Chrome/Perfetto JSON to this file");
  verb->add_option("--executor", o->executor,
                   "Where the program's runs (every collection) execute: local (default: this "
                   "machine) or slurm (each run a Slurm job by srun, with --gres=gpu:N and --time "
                   "from its task; the task folders must be on a file system the nodes share; "
                   "this process stays the workspace's only writer; docs/slurm.md)")
      ->check(CLI::IsMember({"local", "slurm"}));
  verb->add_option("--slurm-partition", o->slurm.partition,
                   "With --executor slurm: the partition (default: the cluster's)");
  verb->add_option("--slurm-account", o->slurm.account,
                   "With --executor slurm: the account to charge");
  verb->add_option("--slurm-batch", o->slurm.batchSlots,
                   "With --executor slurm: run the program's runs as job steps of shared "
                   "allocations (salloc), one per GPU count, each holding N runs at once, instead "
                   "of one job each; a step starts in ~15 ms, a job in ~75 ms on an idle cluster "
                   "(default: 0, one job per run)")
      ->check(CLI::Range(0U, 1024U));
  verb->add_option_function<unsigned>(
          "--slurm-batch-minutes",
          [o](unsigned minutes) { o->slurm.batchTime = std::chrono::minutes(minutes); },
          "With --slurm-batch: each allocation's time limit in minutes (default 60; a run whose "
          "own limit does not fit in what is left gets a new allocation)")
      ->check(CLI::Range(1U, 525'600U));
  verb->add_option(
          "--concurrent-probes", o->concurrentProbes,
          "op_latency probe processes started at once per GPU (default: 8, or the host's CPU "
          "threads if fewer; 1 runs them one after another). With N > 1 their start-ups "
          "overlap; each takes the GPU's turn from its first GPU work to its exit, so no two "
          "probes' GPU work overlaps (the join checks their kernels). Every one-GPU probe first "
          "empties "
          "the L2 ($ARGUS_GPU_TURN_L2), so its latencies do not depend on what ran or set up "
          "before it. H200: 0.15 s/probe at 8 and 0.13 at 16 against 0.36 one at a time; "
          "at 8 at once (Triton: its 4 probes at once) the latencies of the TMA, cp.async, "
          "warp-specialized and Triton examples stayed within 16-32 ns (3.6-12.5 %) of one at a "
          "time, where two one-at-a-time runs differed by up to 12.5 %")
      ->check(CLI::Range(1, 64));
  return {Command{verb, [o] { return runQuery(*o); }}};
}

}  // namespace argus::cli
