// Programs: what Argus measures. A program is a spec file (argus.yaml) naming CUDA sources,
// build flags and a run command, or a single .cu/.ptx file for the front-end verbs.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "argus/program/region_file.h"
#include "argus/ptx/regions.h"
#include "argus/support/status.h"

namespace argus::program {

/// The longest `run.timeout_s` a spec may give (a week); larger values are refused.
inline constexpr double kMaxTimeoutSeconds = 604800;

/// How to run a built program and tell success from failure.
struct RunSpec {
  std::vector<std::string> command;  ///< `{exe}` stands for the executable Argus built.
  int successExitCode = 0;
  std::string stdoutContains;  ///< Success also needs this text on stdout (if set).
  int skipExitCode = -1;       ///< The program's own "cannot run here" code (77), or -1.
  std::map<std::string, std::string> environment;
  double timeoutSeconds = 300;
  /// GPUs one run of the program needs (multi-GPU programs: NCCL, one process per GPU); 0 means
  /// every GPU of the machine. Its collections get them all, alone, as CUDA_VISIBLE_DEVICES.
  unsigned gpus = 1;
};

/// A kernel of interest and the region paths the spec expects it to have (checked).
struct KernelSpec {
  std::string name;
  std::vector<std::string> regions;
  /// `block: [x, y, z]`: the block shape every launch of the kernel uses, when the spec says.
  /// The trace pass's lane-0 analysis then knows %tid.x's warp numbering (as `.reqntid` would
  /// tell it) and keeps warp-index branches uniform; a launch with another shape is noted.
  std::optional<std::array<std::uint32_t, 3>> block;
};

/// A program spec (argus.yaml): CUDA C++ (`language: cuda`, the default) or Triton
/// (`language: triton`). Paths are absolute after loading.
struct ProgramSpec {
  std::filesystem::path file;  ///< The spec itself.
  std::string name;
  std::string language = "cuda";  ///< `cuda` or `triton`.
  /// Triton: the Python script that compiles and launches the kernel (and checks its result);
  /// Argus runs it with Triton's dump and override knobs to get and replace the kernel's PTX.
  std::filesystem::path script;
  std::string python = "python3";                  ///< Triton: the interpreter that runs `script`.
  std::vector<std::filesystem::path> sources;      ///< Device code: PTX is taken from these.
  std::vector<std::filesystem::path> hostSources;  ///< Compiled unchanged.
  std::vector<std::filesystem::path> includeDirs;
  std::string arch = "sm_90a";
  std::vector<std::string> nvccFlags;
  std::vector<std::string> linkLibraries;
  RunSpec run;
  /// Optional correctness check run after a successful run, in the spec's directory; `{exe}` is
  /// replaced like in run.command. A non-zero exit fails the collection.
  std::vector<std::string> check;
  std::vector<KernelSpec> kernels;
  /// `regions: FILE` (a region file beside the spec) and `derive: [SELECTOR...]`: regions
  /// derived into the program's PTX without editing its source (docs/regions-file.md).
  DeriveRequest derive;
};

/// The block shapes the spec gives (kernels[].block), by kernel name.
[[nodiscard]] std::map<std::string, std::array<std::uint32_t, 3>> blockShapes(
    const ProgramSpec& spec);

/// Loads and checks a spec. Errors name the file and the field, and say what is expected;
/// sources and include directories must exist.
[[nodiscard]] Result<ProgramSpec> loadProgramSpec(const std::filesystem::path& file);

/// The PTX of a program target, ready for the front end.
struct ProgramPtx {
  std::string text;
  std::string displayName;  ///< What messages call the PTX (`kernel.ptx`).
  std::string version;      ///< Content hash of everything the PTX came from (program version).
};

/// A target as the CLI accepts it: a spec (`.yaml`), a CUDA source (`.cu`, compiled with
/// Argus's include directory) or PTX (`.ptx`). `.cu` and specs run nvcc -ptx -lineinfo.
/// `derive` adds regions derived into the PTX (after a spec's own `regions`/`derive`), and is
/// part of the version. A Triton spec that derives regions gives its `kernel`'s dumped PTX with
/// them (tritonDerivedPtx: one run of its script, on a GPU); without derived regions a Triton
/// spec has no PTX before a GPU run and the error says what to give instead.
[[nodiscard]] Result<ProgramPtx> loadTargetPtx(const std::filesystem::path& target,
                                               const std::string& arch = "sm_90a",
                                               const std::vector<std::string>& extraFlags = {},
                                               const DeriveRequest& derive = {},
                                               const std::string& kernel = {});

/// The kernel named `name` (mangled or demangled; empty = the only kernel). The error lists the
/// kernels that exist.
[[nodiscard]] Result<const ptx::FunctionRegions*> findKernel(
    const std::vector<ptx::FunctionRegions>& functions, const std::string& name);

/// Demangled C++ name, or the name itself when it is not mangled.
[[nodiscard]] std::string demangle(const std::string& name);

/// Whether two names of a kernel are the same kernel: equal, or equal once demangled (CUPTI and
/// PTX may give either form of a C++ kernel's name).
[[nodiscard]] bool sameKernelName(const std::string& a, const std::string& b);

}  // namespace argus::program
