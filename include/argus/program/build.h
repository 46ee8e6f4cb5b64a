// Variant builds: Argus compiles a program's variants itself. nvcc's front end makes the PTX,
// Argus's passes rewrite it, and the rest of nvcc's own pipeline (taken from `nvcc -dryrun`)
// is replayed with the rewritten PTX substituted for the file cicc wrote, before ptxas runs.
//
// Device code is built for exactly one target, `-gencode=arch=compute_XX,code=sm_XX` from the
// spec's `arch`; the spec's own -gencode/-arch flags are dropped, so no generic PTX is embedded
// and every SASS image in the executable comes from the substituted PTX.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "argus/program/program.h"
#include "argus/support/status.h"
#include "argus/workspace/ids.h"

namespace argus::workspace {
class Workspace;
}

namespace argus::program {

/// The PTX nvcc's front end makes of the spec's device source: the same invocation (and the same
/// text) as loadTargetPtx(spec file). `-lineinfo` is always on. The spec's derived regions,
/// then `derive`'s, are placed into it (argus/ptx/derive.h). Defined in program.cpp.
[[nodiscard]] Result<std::string> frontEndPtx(const ProgramSpec& spec,
                                              const std::vector<std::string>& extraFlags = {},
                                              const DeriveRequest& derive = {});

/// How buildWithPtx builds.
struct BuildOptions {
  bool lineInfo = true;  ///< Pass -lineinfo (cicc and ptxas keep source lines for SASS maps).
  std::vector<std::string> extraFlags;    ///< Appended to the spec's nvcc flags.
  std::chrono::seconds stepTimeout{600};  ///< Per command.
  std::function<bool()> cancelled;        ///< Polled between commands; optional.
  bool keepIntermediates = false;         ///< Keep nvcc's temporary files under outDir/tmp.
  /// Edits ptxas's cubin in place before fatbinary embeds it (callee copies for a mapping
  /// build, issue 31); its error fails the build. Optional.
  std::function<Result<void>(const std::filesystem::path& cubin)> editCubin{};
};

/// One command of a build, as run.
struct BuildStep {
  std::string name;     ///< "nvcc -dryrun", "cicc", "ptxas", "fatbinary", "gcc", "nvcc link", ...
  std::string command;  ///< Shell text as run (environment assignments not repeated).
  int exitCode = 0;
  std::string out;
  std::string err;
  double seconds = 0;
};

/// What a successful build left in outDir.
struct BuildResult {
  std::filesystem::path executable;  ///< outDir/<spec name>
  std::filesystem::path cubin;       ///< outDir/<source stem>.cubin (ptxas output for the PTX).
  std::filesystem::path ptx;         ///< outDir/<source stem>.ptx (the PTX that was substituted).
  std::filesystem::path logFile;     ///< outDir/build.log: every command with its output.
  std::vector<BuildStep> steps;

  /// Every command with its exit code and output, in order (the text of logFile).
  [[nodiscard]] std::string log() const;
};

/// Builds the spec's executable with `ptx` in place of the PTX its device source compiles to:
/// replays `nvcc -dryrun -c` for the device source (cicc still runs, for the host stubs; its PTX
/// file is then overwritten), compiles host sources with nvcc, and links with nvcc (cudart plus
/// the spec's link libraries). Creates outDir. Errors name the failing step, its command and its
/// stderr (for bad PTX: ptxas's `line N` message). [thread-safe: builds use private temp dirs]
[[nodiscard]] Result<BuildResult> buildWithPtx(const ProgramSpec& spec, std::string_view ptx,
                                               const std::filesystem::path& outDir,
                                               const BuildOptions& options = {});

/// One step of an `nvcc -dryrun` listing: an environment assignment or a command.
struct DryrunLine {
  bool assignment = false;
  std::string name;   ///< Assignments: the variable. Commands: the tool's base name ("cicc").
  std::string value;  ///< Assignments: the raw value. Commands: the shell text.
  std::vector<std::string> words;  ///< Commands: shell words (quotes removed, $VARs kept).
};

/// nvcc's embedded fatbin file (`fatbinary --embedded-fatbin`: the fatbin as an `asm` block of
/// `.quad`s, a declaration of `fatbinData` and the registration wrapper pointing at it) without
/// the data: the asm block is removed and the wrapper points at an external
/// `__argus_fatbin_data[]` (fatbinDataAssembly defines it). The result is the same for every
/// variant of a device source, so its host compile is done once. Nothing when the text is not in
/// that form.
[[nodiscard]] std::optional<std::string> splitFatbinData(std::string_view embedded);

/// Assembly that defines `__argus_fatbin_data` in section .nv_fatbin with the bytes of `fatbin`
/// (what nvcc's asm block held), for `gcc -c`.
[[nodiscard]] std::string fatbinDataAssembly(const std::filesystem::path& fatbin);

/// Parses the stderr of `nvcc -dryrun`: lines starting with `#$ ` (others are ignored, e.g.
/// warnings). `NAME=value` lines are assignments (value = rest of the line, as nvcc sets it);
/// the rest are commands. Errors on unbalanced quotes.
[[nodiscard]] Result<std::vector<DryrunLine>> parseDryrun(std::string_view text);

/// Shell words of a command line (double/single quotes and backslashes as sh reads them;
/// `$VAR` is kept literally). Errors on an unbalanced quote.
[[nodiscard]] Result<std::vector<std::string>> splitShellWords(std::string_view line);

/// A built variant to record in the workspace.
struct VariantFiles {
  std::string ptx;         ///< The transformed PTX (file `<stem>.ptx`, kind "ptx").
  std::string cubin;       ///< Optional: the cubin (kind "cubin").
  std::string executable;  ///< Optional: the executable's bytes (kind "executable").
  std::string traceMap;    ///< Optional: trace map JSON (kind "trace_map").
  std::string ptxName = "kernel.ptx";
  std::string optionsJson = "{}";  ///< The transform options (e.g. the variant task's config).
  std::optional<workspace::TaskId> task;
};

/// Records a variant as a workspace version of kind `variant` whose base is `base`, with
/// transform `variantKey` and label `variant/<key>`; its files replace or add to the base's.
/// [thread-safe as Workspace is]
[[nodiscard]] Result<workspace::VersionId> recordVariant(workspace::Workspace& workspace,
                                                         workspace::VersionId base,
                                                         const std::string& variantKey,
                                                         const VariantFiles& files);

}  // namespace argus::program
