// Region files and derive lists: regions an agent or a person defines for a program without
// editing its source (docs/regions-file.md). They are read here and placed into the program's
// PTX by ptx::deriveRegions (argus/ptx/derive.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "argus/ptx/derive.h"
#include "argus/support/status.h"

namespace argus::program {

/// Regions to derive into a program's PTX: a region file, a `--derive` list, or both.
struct DeriveRequest {
  std::string list;            ///< Selectors, comma-separated (`loops,ops`); empty: none.
  std::filesystem::path file;  ///< A region file (YAML or JSON); empty: none.
  [[nodiscard]] bool empty() const { return list.empty() && file.empty(); }
  friend bool operator==(const DeriveRequest&, const DeriveRequest&) = default;
};

/// Reads a region file. Errors name the file, line and column, the field and what to give.
[[nodiscard]] Result<ptx::RegionDefinitions> loadRegionFile(const std::filesystem::path& file);

/// A region file's text, `file` naming it in messages (what loadRegionFile does once read).
[[nodiscard]] Result<ptx::RegionDefinitions> parseRegionFile(std::string_view text,
                                                             const std::filesystem::path& file);

/// The request's definitions: the region file's, then the list's.
[[nodiscard]] Result<std::vector<ptx::RegionDefinitions>> definitionsOf(
    const DeriveRequest& request);

/// PTX with the requests' regions derived into it, in order (a spec's own, then the command
/// line's); the text itself when every request is empty.
[[nodiscard]] Result<std::string> derivePtx(std::string text, const std::string& displayName,
                                            const std::vector<DeriveRequest>& requests);

/// What the request contributes to a program version: the list and the region file's bytes
/// (empty for an empty request).
[[nodiscard]] Result<std::string> deriveMaterial(const DeriveRequest& request);

}  // namespace argus::program
