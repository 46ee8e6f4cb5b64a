// Copies of a callee's machine code inside a cubin, one per calling region (issue 31): the copies
// are the reference build's own bytes, appended to the kernel's text section, and chosen call
// sites are retargeted to them. A mapping run on the patched cubin then counts, per copy, the
// executions of the reference's own PCs under one calling region, so that n(r, p) is exact even
// where ptxas would have specialized per-caller clones compiled from PTX.
//
// Whole-program cubins (nvcc without -rdc) keep a non-inlined device function inside its
// kernel's `.text.<kernel>` section, as a local FUNC symbol `$<kernel>$<callee>`; calls are
// `CALL.REL.NOINC` with a PC-relative target and returns `RET.REL.NODEC Rn` through a register,
// and branches are PC-relative, so a byte-identical copy at another offset runs the same code.
// What would not survive a copy is refused, with the reason: relocations or `.nv.info`
// PC lists that point into the callee, or a call site that is not a CALL.REL to it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"

namespace argus::sass {

/// A function's code in a kernel's text section.
struct CubinFunction {
  std::string symbol;    ///< ELF symbol: the kernel's name, or `$<kernel>$<callee>`.
  std::uint64_t offset;  ///< In the kernel's text section.
  std::uint64_t size;    ///< Bytes, with ptxas's trailing padding.
};

/// One copy to make: `callee`'s code appended to `kernel`'s text, and the CALLs at `callSites`
/// (offsets in the patched text: the kernel's own code, or inside an earlier copy) sent to it.
struct CalleeCopyRequest {
  std::string callee;  ///< The callee's symbol, or its name without the `$<kernel>$` prefix.
  std::vector<std::uint64_t> callSites;
};

/// Where a copy landed.
struct CalleeCopy {
  CubinFunction original;
  std::uint64_t offset = 0;              ///< The copy's first byte in the patched text section.
  std::vector<std::uint64_t> callSites;  ///< The calls sent to it, in the patched text.
  /// copyCalleesPerCallSite: the reference PCs of the calls that lead here, from the kernel's
  /// own code down (one for a callee the kernel calls, two for one that callee calls, ...).
  std::vector<std::uint64_t> context;
  /// The copy's PC `offset + d` runs the reference's PC `original.offset + d`.
  [[nodiscard]] std::uint64_t referencePc(std::uint64_t pc) const {
    return original.offset + (pc - offset);
  }
};

struct PatchedCubin {
  std::vector<std::uint8_t> bytes;
  std::vector<CalleeCopy> copies;  ///< In request order.
};

/// The kernels of a cubin: the names of its `.text.<kernel>` sections, in file order.
[[nodiscard]] Result<std::vector<std::string>> cubinKernels(std::span<const std::uint8_t> cubin);

/// The functions of `kernel`'s text section (the kernel first), from the cubin's symbols.
[[nodiscard]] Result<std::vector<CubinFunction>> cubinFunctions(std::span<const std::uint8_t> cubin,
                                                                std::string_view kernel);

/// The target of the CALL.REL at `pc` of `kernel`'s text; an error if it is not one.
[[nodiscard]] Result<std::uint64_t> callTarget(std::span<const std::uint8_t> cubin,
                                               std::string_view kernel, std::uint64_t pc);

/// `cubin` with one copy of a callee per request (see CalleeCopyRequest). The copies keep their
/// original's offset modulo 128, so instruction-fetch alignment is the reference's too.
[[nodiscard]] Result<PatchedCubin> copyCallees(std::span<const std::uint8_t> cubin,
                                               std::string_view kernel,
                                               const std::vector<CalleeCopyRequest>& requests);

/// `cubin` with a copy of the callee for every call site of `kernel`: each CALL.REL of the
/// kernel's own code gets a copy of its own, and so does each CALL.REL inside a copy, down to
/// `maxDepth` calls (deeper calls keep calling their original, and the copy's context says how
/// deep it is). The copies' PCs then count each call path's executions apart; a call site's
/// region owns its copy.
[[nodiscard]] Result<PatchedCubin> copyCalleesPerCallSite(std::span<const std::uint8_t> cubin,
                                                          std::string_view kernel,
                                                          unsigned maxDepth = 8);

/// Per kernel, the copies a patched cubin holds.
using CalleeCopyMap = std::map<std::string, std::vector<CalleeCopy>>;

/// `cubin` with copyCalleesPerCallSite applied to every kernel; a kernel whose callees cannot be
/// copied (copyCallees says why) keeps the reference's code and its reason.
struct CopiedCubin {
  std::vector<std::uint8_t> bytes;
  CalleeCopyMap copies;
  std::map<std::string, std::string> refused;  ///< kernel -> why its callees were not copied
};
[[nodiscard]] Result<CopiedCubin> copyEveryKernelsCallees(std::span<const std::uint8_t> cubin);

/// The per-build proof that a patched cubin runs the reference's own code, read with the
/// toolkit's disassembler (`cuobjdump -sass`), not with the encodings the patch wrote: every
/// instruction of every kernel's patched text, at PC q, must read as the reference's instruction
/// at q (the kernel's own code and the original callees) or at the copy's reference PC, once the
/// addresses it names that lie inside a copy are read as the reference PCs they stand for; and
/// every call site of a copy must call that very copy (callTarget).
/// {"method", "instructions", "moved_addresses", "equal": true}; an error names the first
/// instruction that differs. [thread-safe]
[[nodiscard]] Result<nlohmann::json> checkCopies(const std::filesystem::path& reference,
                                                 const std::filesystem::path& patched,
                                                 const CalleeCopyMap& copies);

/// The map document (schema `argus.callee_copies/1`): per kernel the copies (callee symbol,
/// reference offset and size, copy offset, call sites, context), the kernels refused with their
/// reasons (`refused`), and the check beside them.
[[nodiscard]] nlohmann::json calleeCopiesJson(const CopiedCubin& copied,
                                              std::uint64_t referenceBytes,
                                              const nlohmann::json& check);
/// Reads a map document back; an error names what is malformed.
[[nodiscard]] Result<CalleeCopyMap> parseCalleeCopies(const nlohmann::json& document);

/// The edit that `argus build --copy-callees` and the mapping variant's build make to the cubin
/// ptxas wrote: every kernel's callees copied per call path in place, the copies checked against
/// the file as it was (checkCopies), and the map document returned. [thread-safe]
[[nodiscard]] Result<nlohmann::json> copyCalleesInFile(const std::filesystem::path& cubin);

}  // namespace argus::sass
