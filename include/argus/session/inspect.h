// The inspection verbs' engine: a file's region tree, its PTX printed back, control-flow graphs,
// async op sites and the static PC-to-region map. Each takes a request and returns data; the
// report module renders it (argus/report/inspect.h) and the fronts print it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/analysis/discover.h"
#include "argus/program/region_file.h"
#include "argus/report/inspect.h"
#include "argus/support/status.h"

namespace argus::session {

struct RegionsRequest {
  std::string target;  ///< Program spec, .cu, .ptx, or Triton .ttgir/.ttir.
  std::string arch = "sm_90a";
  std::vector<std::string> nvccFlags;  ///< Extra nvcc flags for .cu and spec targets.
  program::DeriveRequest derive;       ///< Regions derived into the PTX (not for .ttgir).
  std::string ptxOut;  ///< Write the PTX the tree comes from (with derived markers) here.
  /// A Triton spec that derives regions: the kernel (empty: the spec's only one), dumped by one
  /// run of its script (on a GPU).
  std::string kernel;
};

/// The region tree of every kernel of the target (a .ttgir/.ttir is read as Triton MLIR, whose
/// regions are Proton scopes; anything else is compiled to PTX when needed).
[[nodiscard]] Result<report::RegionTree> regions(const RegionsRequest& request);

struct PtxPrintRequest {
  std::string file;    ///< PTX file.
  std::string output;  ///< Write the printed PTX here; empty: only return it.
};

/// The PTX file parsed and printed back (the round trip); written to `output` when given.
[[nodiscard]] Result<std::string> printPtx(const PtxPrintRequest& request);

/// A summary of the parsed module (schema argus.ptx/1): target and functions.
[[nodiscard]] Result<nlohmann::ordered_json> ptxSummary(const std::string& file);

struct PtxCfgRequest {
  std::string file;
  std::string function;  ///< Only this function; empty: every function with a body.
};

/// The control-flow graphs of a PTX file's functions, as Graphviz DOT (one graph per function)
/// and as JSON (blocks with their successors).
struct PtxCfg {
  std::string dot;
  nlohmann::ordered_json json;
};
[[nodiscard]] Result<PtxCfg> ptxCfg(const PtxCfgRequest& request);

struct DiscoverRequest {
  std::string file;    ///< PTX file.
  std::string kernel;  ///< Only this kernel; empty: every kernel.
  std::string region;  ///< Only this region's subtree (path); empty: everywhere.
};

/// The asynchronous op sites (TMA, bulk copies, cp.async, WGMMA) with their completion
/// conditions; analysis::toJson gives their JSON.
[[nodiscard]] Result<std::vector<analysis::OpSite>> discoverOps(const DiscoverRequest& request);

struct PcmapRequest {
  std::string target;  ///< Program spec, .cu or .ptx.
  std::string arch = "sm_90a";
};

/// The static PC-to-region map of every kernel: the target painted (paint_ptx) and assembled
/// beside its reference build, whose SASS is compared with the painted one's.
[[nodiscard]] Result<report::PcMap> pcmap(const PcmapRequest& request);

}  // namespace argus::session
