// Content-addressed blob files of a workspace: write-to-temp, fsync, rename, fsync directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "argus/support/status.h"
#include "argus/workspace/workspace.h"

namespace argus::workspace {

/// Where and how one content is stored.
struct BlobInfo {
  ContentHash hash;
  std::uint64_t size = 0;
  std::uint64_t storedSize = 0;
  Compression compression = Compression::none;
  bool storedInline = false;  ///< Not written: `inlineData` goes into the database.
  std::string inlineData;     ///< The stored (possibly compressed) bytes of an inline blob.
};

/// A blob file found on disk by scan().
struct BlobFile {
  std::filesystem::path path;
  ContentHash hash;
  Compression compression = Compression::none;
  std::uint64_t storedSize = 0;
};

class BlobStore {
 public:
  BlobStore(std::filesystem::path root, const OpenOptions& options);

  /// Creates blobs/ and tmp/ when missing.
  [[nodiscard]] Result<void> prepare() const;
  /// Stores bytes unless a blob with their hash exists already; returns how it is stored.
  /// Contents up to kInlineBlobLimit are only encoded (the caller stores them in the database).
  [[nodiscard]] Result<BlobInfo> put(std::string_view bytes) const;
  /// Decompresses and checks stored bytes; errors name `where`.
  [[nodiscard]] static Result<std::string> decode(std::string stored, const ContentHash& hash,
                                                  Compression compression, std::uint64_t size,
                                                  const std::string& where);
  /// Reads, decompresses and checks the blob; errors name the blob path.
  [[nodiscard]] Result<std::string> read(const ContentHash& hash, Compression compression,
                                         std::uint64_t size) const;
  [[nodiscard]] std::filesystem::path pathOf(const ContentHash& hash,
                                             Compression compression) const;
  /// Every blob file, plus (in `unknown`) files under blobs/ that are not blob names.
  [[nodiscard]] Result<std::vector<BlobFile>> scan(
      std::vector<std::filesystem::path>* unknown = nullptr) const;
  /// Files under tmp/.
  [[nodiscard]] Result<std::vector<std::filesystem::path>> tempFiles() const;
  [[nodiscard]] const std::filesystem::path& blobDir() const { return blobs_; }

 private:
  std::filesystem::path blobs_;
  std::filesystem::path tmp_;
  OpenOptions options_;
};

}  // namespace argus::workspace
