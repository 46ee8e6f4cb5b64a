// Triton programs: getting a kernel's PTX out of Triton and a transformed PTX back in.
//
// Triton compiles a kernel when the script first launches it, so both directions run the
// program's script on a GPU:
//  - dump: TRITON_KERNEL_DUMP=1 with TRITON_DUMP_DIR writes every stage (TTIR, TTGIR, LLIR, PTX,
//    cubin) of every compiled kernel under <dir>/<source hash>/<kernel>.<stage>;
//  - override: TRITON_KERNEL_OVERRIDE=1 with TRITON_OVERRIDE_DIR makes Triton use
//    <dir>/<source hash>/<kernel>.ptx instead of the PTX it generates, then run ptxas on it as
//    usual. The same works for the IR stages: <dir>/<source hash>/<kernel>.ttgir makes Triton
//    compile the later stages from that TTGIR (Triton prints "Overriding kernel with file ...").
//    The source hash names the Python source, constants and options, not Triton's own
//    build, so a dump from one run overrides the next run of the same script.
// TRITON_ALWAYS_COMPILE=1 keeps Triton's cache from hiding either step.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "argus/program/program.h"
#include "argus/ptx/regions.h"
#include "argus/support/status.h"

namespace argus::program {

/// One kernel as Triton compiled it in a dump run.
struct TritonKernelDump {
  std::string kernel;      ///< Triton kernel name (the `.entry` name in its PTX).
  std::string sourceHash;  ///< The dump's directory name: the override key.
  std::string ptx;
  std::string ttgir;  ///< Empty when the stage was not dumped.
  /// Set when the spec lists the kernel's IR (tritonKernelIr): its stage (`ttgir` or `ttir`)
  /// and text. The kernel was compiled from it, and variants override it too.
  std::string irStage;
  std::string ir;
};

/// Whether `file` is a Triton IR file by its extension (`.ttgir` or `.ttir`).
[[nodiscard]] bool isTritonIrFile(const std::filesystem::path& file);

/// The Triton IR file (`.ttgir` or `.ttir`) a Triton spec lists in `sources`, if any: the kernel
/// is compiled from it instead of from the script's Python source (an optimizer's edited TTGIR;
/// `argus ws fork --file kernel.ttgir=EDITED`). It also gives the regions Argus plans with.
[[nodiscard]] std::optional<std::filesystem::path> tritonKernelIr(const ProgramSpec& spec);

/// Runs the spec's script once with Triton's dump knobs in `workDir`/dump and returns `kernel`'s
/// stages. When the spec lists the kernel's IR (tritonKernelIr), a second run compiles the
/// kernel from it through the override knobs (under the first run's source hash) and its stages
/// are returned; it fails unless Triton says it took the file. Errors: the script failed or exited
/// with the skip code (no GPU), the kernel was not compiled (lists the kernels that were), or it
/// was compiled for several sources/configurations (lists the source hashes: narrow the script to
/// one). [not thread-safe per workDir]
[[nodiscard]] Result<TritonKernelDump> dumpTritonKernel(const ProgramSpec& spec,
                                                        const std::string& kernel,
                                                        const std::filesystem::path& workDir);

/// Writes a variant: `outDir`/<name> is an executable wrapper that runs the spec's script with
/// `ptx` substituted for the dumped kernel's PTX through Triton's override knobs (the PTX is
/// embedded, so the wrapper works wherever it is copied). With `cubinBase64` (a cubin Argus
/// assembled from `ptx`, base64-encoded) Triton's cubin is overridden by it too, so the cubin
/// that runs is Argus's own. Returns the wrapper's path.
[[nodiscard]] Result<std::filesystem::path> writeTritonVariant(const ProgramSpec& spec,
                                                               const TritonKernelDump& dump,
                                                               const std::string& ptx,
                                                               const std::filesystem::path& outDir,
                                                               const std::string& cubinBase64 = {});

/// The region tree Argus plans a Triton program's queries with, before any GPU run compiles the
/// kernel: from a `.ttgir`/`.ttir` file listed in `sources` when there is one, else from the
/// spec's `kernels[].regions` paths (a missing parent path is added). Region IDs are
/// ptx::regionId(kernel, path), the IDs the dumped PTX will have. Errors: neither is given (says
/// what to add), or the TTGIR does not parse into regions. [thread-safe]
[[nodiscard]] Result<std::vector<ptx::FunctionRegions>> tritonPlanningRegions(
    const ProgramSpec& spec);

/// The Triton package version the spec's Python imports (with the spec's run environment and
/// PYTHONPATH): "3.6.0", "none" when it has no Triton, "unknown" when the Python cannot tell.
[[nodiscard]] std::string tritonPackageVersion(const ProgramSpec& spec);

/// Content hash of a Triton program: the spec, every file in `sources` (the script first) and
/// the Triton package version (tritonPackageVersion). Changing the kernel, the launcher, the spec
/// (e.g. its `run.env`) or the installed Triton makes a new version.
[[nodiscard]] Result<std::string> tritonProgramVersion(const ProgramSpec& spec);

/// Checks a dumped PTX against the regions the spec declared for `kernel`: every declared path
/// must exist in the PTX's region tree. The error lists both trees; a spec that declares none
/// (its regions are derived) passes. [thread-safe]
[[nodiscard]] Result<void> checkDumpedRegions(const ProgramSpec& spec, const std::string& kernel,
                                              const std::string& ptx);

/// Whether the spec or the request derives regions (the spec's `regions`/`derive`, or
/// --derive/--regions-file): then a Triton program is planned from its dumped PTX.
[[nodiscard]] bool derivesRegions(const ProgramSpec& spec, const DeriveRequest& derive);

/// A dumped PTX of `kernel` with the regions the spec and `derive` define, derived into it (the
/// PTX the triton_dump task publishes). [thread-safe]
[[nodiscard]] Result<std::string> deriveIntoDump(const ProgramSpec& spec, const std::string& kernel,
                                                 std::string ptx, const DeriveRequest& derive);

/// A Triton program's PTX with derived regions, for planning and `argus regions`: the script
/// runs once with the dump knobs in a temporary folder (a GPU run; on a machine without one the
/// error says how to derive on a dumped .ptx instead), and deriveIntoDump places the regions.
/// `kernel` empty: the spec's only kernel. The version is tritonProgramVersion's with the
/// derivation's material, as a CUDA program's is. [thread-safe]
[[nodiscard]] Result<ProgramPtx> tritonDerivedPtx(const ProgramSpec& spec, std::string kernel,
                                                  const DeriveRequest& derive);

}  // namespace argus::program
