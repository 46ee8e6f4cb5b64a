// `argus query --executor slurm` as a user on a cluster's login node runs it: this machine has no
// GPU (ARGUS_DEVICES empty), the cluster's one node does (two GPUs that Slurm counts and grants;
// stand-in device files where no real GPU is here; on a GPU machine the first stand-in is its
// GPU 0). The query must plan its GPU collections on the partition's GPUs and run them as jobs
// there; on a partition without GPUs it must say that this is why they did not run.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "argus/support/process.h"

namespace {

namespace fs = std::filesystem;
const std::string kGemmSpec = std::string(ARGUS_SOURCE_DIR) + "/examples/tma_gemm/argus.yaml";

/// A cluster of `gpus` counted GPUs for one test, stopped when it goes out of scope.
class Cluster {
 public:
  explicit Cluster(int gpus) {
    auto root = argus::makeTempDir("argus-slurm-query");
    if (!root) {
      skip = root.error().text();
      return;
    }
    root_ = *root;
    auto started = argus::runProcess(
        {ARGUS_SLURM_CLUSTER, "start", (root_ / "cluster").string(), std::to_string(gpus)},
        {.timeout = std::chrono::seconds(60)});
    if (!started || started->exitCode != 0)
      skip =
          "no Slurm cluster could start here: " + (started ? started->err : started.error().text());
  }
  ~Cluster() {
    (void)argus::runProcess({ARGUS_SLURM_CLUSTER, "stop", (root_ / "cluster").string()});
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  /// `argus query` of the GEMM's mainloop duration on this cluster, as JSON.
  nlohmann::json query() const {
    argus::ProcessOptions options;
    options.timeout = std::chrono::seconds(240);
    options.environment = {{"ARGUS_DEVICES", ""},  // this machine: no GPU
                           {"SLURM_CONF", (root_ / "cluster" / "slurm.conf").string()}};
    auto r = argus::runProcess(
        {ARGUS_BIN, "query", "--program", kGemmSpec, "--region", "mainloop", "--signals",
         "duration", "--workspace", (root_ / "ws").string(), "--executor", "slurm", "--json"},
        options);
    EXPECT_TRUE(r) << (r ? "" : r.error().text());
    if (!r) return {};
    auto doc = nlohmann::json::parse(r->out, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << r->out << r->err;
    return doc;
  }
  std::string skip;

 private:
  fs::path root_;
};

TEST(SlurmQuery, AGpuLessCoordinatorRunsTheGpuCollectionsOnThePartitionsGpus) {
  Cluster cluster(2);
  if (!cluster.skip.empty()) GTEST_SKIP() << cluster.skip;
  const auto doc = cluster.query();
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["run"]["devices"], (nlohmann::json{"0", "1"})) << doc["run"].dump();
  // Nothing was left out for want of a GPU: the traced run went to the node as a job.
  EXPECT_TRUE(doc["not_collected"].empty()) << doc["not_collected"].dump();
  if (doc["failures"].empty()) {
    // The node has a real GPU (this machine is a GPU machine run with ARGUS_DEVICES empty), and
    // Slurm's CUDA_VISIBLE_DEVICES named it: the duration was collected through Slurm.
    EXPECT_EQ(doc["signals"]["duration"]["status"], "succeeded") << doc["signals"].dump();
    std::cout << "the node's GPU is real: the duration was collected through Slurm\n";
    return;
  }
  std::cout << "the node's GPUs are stand-ins: the program said it has no CUDA device\n";
  // There the program itself said that its GPU is not a CUDA device (the stand-ins are not).
  ASSERT_EQ(doc["failures"].size(), 1u) << doc.dump(1);
  const auto& failure = doc["failures"][0];
  EXPECT_EQ(failure["task"], "collect/p0");
  const std::string error = failure["error"];
  EXPECT_NE(error.find("the program says it cannot run here"), std::string::npos) << error;
  EXPECT_NE(error.find("no CUDA device"), std::string::npos) << error;
  EXPECT_NE(error.find("srun"), std::string::npos) << "not run by srun: " << error;
}

TEST(SlurmQuery, APartitionWithoutGpusIsWhyTheGpuCollectionsDidNotRun) {
  Cluster cluster(0);
  if (!cluster.skip.empty()) GTEST_SKIP() << cluster.skip;
  const auto doc = cluster.query();
  ASSERT_TRUE(doc.is_object());
  EXPECT_TRUE(doc["run"]["devices"].empty());
  const std::string reason = doc["signals"]["duration"].value("reason", "");
  EXPECT_NE(reason.find("needs a GPU, and the Slurm partition has none (sinfo lists no gpu GRES"),
            std::string::npos)
      << doc["signals"]["duration"].dump();
}

}  // namespace
