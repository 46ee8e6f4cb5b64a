// The static PC-to-region map: for every SASS instruction of a painted build, the PTX
// instruction it came from, and through the paint map its regions and original source line.
//
// Input: a cubin that `ptxas -lineinfo` built from PTX painted by the `paint_ptx` pass, and that
// pass's paint map (argus_paint_map 1, TransformResult::paintMap). `nvdisasm -g -c` annotates the
// SASS with `//## File "argus-paint", line N` from the cubin's `.debug_line`; line N is the PTX
// instruction painted with N. (nvdisasm 13's `-json` output carries no line information.)
// The painted build has the same SASS as the unpainted one (docs/architecture.md), so the map
// transfers to the reference build; sameSass() is the per-build check.
//
// Limitation (seen on examples_tma_gemm): the line table gives each SASS instruction ONE PTX
// line. When ptxas folds several PTX instructions into one SASS instruction it may pick an
// operand producer: of the 4 HGMMAs there, one maps to its `wgmma.mma_async`, two to `and.b32` /
// `shr.u32` descriptor arithmetic inside `mainloop/mma`, and one to an `add.s32` that is owned by
// `mainloop` (outside `mainloop/mma`). Region attribution is exact per line-table row, not per
// PTX op site.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"

namespace argus::sass {

/// A possible owner of a PC: a region path of a kernel's tree ("" = outside every region).
struct PcOwner {
  std::string kernel;
  std::string region;
  bool operator==(const PcOwner&) const = default;
};

/// One SASS instruction and what the paint map says about it.
struct PcEntry {
  std::string function;     ///< SASS function (kernel or non-inlined device function).
  uint64_t pc = 0;          ///< Byte offset from the start of the function.
  std::string opcode;       ///< SASS opcode with modifiers, without guard (`HGMMA.64x128x16.F32`).
  std::string instruction;  ///< Whole instruction text without `;` (`@P0 BRA \`(.L_x_1)`).
  /// Painted line (= PTX instruction number); nullopt when the line table names no painted line
  /// for this PC (compiler-generated code with line 0, or another file).
  std::optional<uint32_t> line = std::nullopt;
  std::string ptxFunction;  ///< PTX function of the painted instruction (differs when inlined).
  std::optional<size_t> ptxStatement = std::nullopt;  ///< Statement index, as in the paint map.
  std::string ptxOpcode;                  ///< `wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16`
  std::vector<std::string> regions = {};  ///< Owning region paths; empty outside every region.
  std::string sourceFile;                 ///< Original source position of the PTX instruction.
  uint32_t sourceLine = 0;
  /// The device function whose SASS body holds this PC: `function` itself, or `callee` for the
  /// body nvdisasm labels `$function$callee` (ptxas places called functions in the kernel's text).
  std::string body;
  /// Every (kernel, full region path) this PC can run under, composed through call sites (paint
  /// map `owners`); one entry for code with one owner, e.g. each copy made by
  /// clone_shared_callees. A PC without a painted line inside a called body takes its body's
  /// calling contexts; one in a kernel's own body has none (unknown).
  std::vector<PcOwner> owners = {};
  /// The PTX instruction before clone_shared_callees copied it: function and statement (equal to
  /// ptxFunction/ptxStatement when it is no copy). The identity that joins builds.
  std::string originFunction;
  std::optional<size_t> originStatement = std::nullopt;
  /// Alignment padding at the end of a text section (`.L_x_N: BRA .L_x_N` and the NOPs after
  /// it): never executed; no line and no owners, whatever the line table's last row says.
  bool padding = false;
};

/// Runs `nvdisasm -g -c` on `cubin` and attributes every SASS instruction through `paintMap`.
/// Fails when nvdisasm is missing or fails, when the paint map is malformed, or when the line
/// table names a painted line that the paint map lacks (a cubin from other PTX). [thread-safe]
[[nodiscard]] Result<std::vector<PcEntry>> readPcMap(const std::filesystem::path& cubin,
                                                     const nlohmann::json& paintMap);

/// The same from `nvdisasm -g -c` output already in hand (what readPcMap parses).
[[nodiscard]] Result<std::vector<PcEntry>> parsePcMap(std::string_view nvdisasmOutput,
                                                      const nlohmann::json& paintMap);

/// Per SASS function, the instruction texts (without `;`, offsets and encodings), from
/// `nvdisasm -c`: what sameSass compares. [thread-safe]
[[nodiscard]] Result<std::map<std::string, std::vector<std::string>>> readSass(
    const std::filesystem::path& cubin);

/// Whether two cubins hold the same SASS instructions per function (the painted build against
/// the reference build); on a mismatch the error text names the first differing function and PC.
[[nodiscard]] Result<void> sameSass(const std::filesystem::path& a, const std::filesystem::path& b);

/// ptxas on PTX text: writes `dir/stem.ptx`, assembles it for `arch` (with -lineinfo when
/// `lineInfo`) and returns `dir/stem.cubin`; the error carries ptxas's messages. [thread-safe]
[[nodiscard]] Result<std::filesystem::path> assemblePtx(std::string_view ptx,
                                                        const std::string& arch,
                                                        const std::filesystem::path& dir,
                                                        const std::string& stem, bool lineInfo);

/// A reference build's check that painting changed no SASS: assembles the unpainted and the
/// painted PTX in `dir` (ptxas -lineinfo for `arch`) and compares them with sameSass.
/// {"painted_equals_unpainted": bool, "detail": what matched, or the first difference}; an
/// error only when either text does not assemble. [thread-safe]
[[nodiscard]] Result<nlohmann::json> paintedSassCheck(std::string_view unpaintedPtx,
                                                      std::string_view paintedPtx,
                                                      const std::string& arch,
                                                      const std::filesystem::path& dir);

/// `cuobjdump -sass`: per function, PC -> instruction text (without `;` and the encoding).
/// [thread-safe]
[[nodiscard]] Result<std::map<std::string, std::map<uint64_t, std::string>>> cuobjdumpSassByPc(
    const std::filesystem::path& cubin);

/// `cuobjdump -sass`: per function, the instruction texts without offsets and encodings.
/// [thread-safe]
[[nodiscard]] Result<std::map<std::string, std::vector<std::string>>> cuobjdumpSass(
    const std::filesystem::path& cubin);

/// The raw `nvdisasm -c` (with `-g` when `lineInfo`) text of a cubin. [thread-safe]
[[nodiscard]] Result<std::string> disassemble(const std::filesystem::path& cubin, bool lineInfo);

/// {"function", "pc", "opcode", "instruction", "line", "ptx_function", "ptx_statement",
///  "ptx_opcode", "regions", "source": {"file", "line"}, "body", "owners": [{"kernel",
///  "region"}], "origin": {"function", "statement"}}; `line` etc. null when unattributed.
[[nodiscard]] nlohmann::json toJson(const PcEntry& entry);

}  // namespace argus::sass
