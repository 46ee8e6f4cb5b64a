// A program version of the workspace as files on disk, so that it can be built and queried like
// the spec it came from: `argus query --version vN` on an optimizer's fork.
#pragma once

#include <filesystem>

#include "argus/support/status.h"
#include "argus/workspace/workspace.h"

namespace argus::program {

/// Writes program version `id`'s files into `dir` (replacing what is there) and returns the path
/// of its program spec there. A version keeps its files by name only, so the spec written is the
/// version's own with `script`, `sources` and `host_sources` pointing at those names; a Triton IR
/// file (.ttgir/.ttir) the version holds but its spec does not list (a fork's edit) is added to
/// `sources`, so the kernel is compiled from it (see tritonKernelIr). The spec's include_dirs,
/// which a version does not keep, are resolved against the directory of the spec its root version
/// was made from (recorded in the root's options as `directory`). Errors: `id` is not a program
/// version, it holds no program spec (one `argus query --program` made), a file the spec names is
/// missing from it, or its spec names include_dirs and that directory is unknown or gone.
[[nodiscard]] Result<std::filesystem::path> checkoutVersion(const workspace::Workspace& ws,
                                                            workspace::VersionId id,
                                                            const std::filesystem::path& dir);

}  // namespace argus::program
