#include "blob_store.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace argus::workspace {
namespace {

constexpr std::string_view kZstdSuffix = ".zst";

Error ioError(const fs::path& path, std::string_view what, int err) {
  return Error{"workspace", fmt::format("{}: {} failed: {}; check permissions and free disk space",
                                        path.string(), what, std::strerror(err))};
}

/// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int value) : fd(value) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Result<void> syncDirectory(const fs::path& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.fd < 0) return std::unexpected(ioError(dir, "opening directory", errno));
  if (::fsync(fd.fd) != 0) return std::unexpected(ioError(dir, "fsync", errno));
  return {};
}

Result<void> writeAll(int fd, const fs::path& path, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(ioError(path, "write", errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

std::string uniqueSuffix() {
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t seed = std::random_device{}();
  return fmt::format("{}.{:x}.{}", ::getpid(), seed, counter.fetch_add(1));
}

}  // namespace

BlobStore::BlobStore(fs::path root, const OpenOptions& options)
    : blobs_(root / "blobs"), tmp_(root / "tmp"), options_(options) {}

Result<void> BlobStore::prepare() const {
  for (const auto& dir : {blobs_, tmp_}) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      return fail("workspace", fmt::format("cannot create {}: {}; check permissions", dir.string(),
                                           ec.message()));
  }
  return {};
}

fs::path BlobStore::pathOf(const ContentHash& hash, Compression compression) const {
  std::string hex = hash.hex();
  std::string name = hex;
  if (compression == Compression::zstd) name += kZstdSuffix;
  return blobs_ / hex.substr(0, 2) / name;
}

Result<BlobInfo> BlobStore::put(std::string_view bytes) const {
  BlobInfo info{hashBytes(bytes), bytes.size(), bytes.size(), Compression::none, false, {}};
  bool small = bytes.size() <= kInlineBlobLimit;
  // Dedup: either stored form of this content will do.
  for (Compression c : {Compression::none, Compression::zstd}) {
    if (small) break;
    std::error_code ec;
    auto size = fs::file_size(pathOf(info.hash, c), ec);
    if (!ec) {
      info.compression = c;
      info.storedSize = size;
      return info;
    }
  }

  std::string compressed;
  std::string_view stored = bytes;
  if (bytes.size() >= 64) {
    compressed.resize(ZSTD_compressBound(bytes.size()));
    std::size_t n = ZSTD_compress(compressed.data(), compressed.size(), bytes.data(), bytes.size(),
                                  options_.zstdLevel);
    if (!ZSTD_isError(n) && static_cast<double>(n) <= static_cast<double>(bytes.size()) *
                                                          (1.0 - options_.minCompressionSaving)) {
      compressed.resize(n);
      stored = compressed;
      info.compression = Compression::zstd;
      info.storedSize = n;
    }
  }
  if (small) {
    info.storedInline = true;
    info.inlineData = std::string(stored);
    return info;
  }

  fs::path final = pathOf(info.hash, info.compression);
  fs::path temp = tmp_ / (final.filename().string() + "." + uniqueSuffix() + ".tmp");
  {
    Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd.fd < 0) return std::unexpected(ioError(temp, "creating", errno));
    if (auto ok = writeAll(fd.fd, temp, stored); !ok) {
      ::unlink(temp.c_str());
      return std::unexpected(ok.error());
    }
    if (options_.syncBlobs && ::fsync(fd.fd) != 0) {
      int err = errno;
      ::unlink(temp.c_str());
      return std::unexpected(ioError(temp, "fsync", err));
    }
  }
  fs::path shard = final.parent_path();
  std::error_code ec;
  if (fs::create_directory(shard, ec) && options_.syncBlobs) {
    if (auto ok = syncDirectory(blobs_); !ok) return std::unexpected(ok.error());
  }
  if (ec) {
    ::unlink(temp.c_str());
    return fail("workspace", fmt::format("cannot create {}: {}", shard.string(), ec.message()));
  }
  // rename() is atomic: readers see no file or the complete one. A concurrent writer of the same
  // content renames identical bytes over it, which is harmless.
  if (::rename(temp.c_str(), final.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return std::unexpected(ioError(final, "renaming the temp file into place", err));
  }
  if (options_.syncBlobs) {
    if (auto ok = syncDirectory(shard); !ok) return std::unexpected(ok.error());
  }
  return info;
}

Result<std::string> BlobStore::read(const ContentHash& hash, Compression compression,
                                    std::uint64_t size) const {
  fs::path path = pathOf(hash, compression);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) {
    int err = errno;
    if (err == ENOENT)
      return fail("workspace", fmt::format("blob {} is missing; the workspace was damaged (files "
                                           "deleted by hand?); rerun the task that produced it",
                                           path.string()));
    return std::unexpected(ioError(path, "opening", err));
  }
  std::string stored;
  std::string buffer(1 << 16, '\0');
  for (;;) {
    ssize_t n = ::read(fd.fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(ioError(path, "read", errno));
    }
    if (n == 0) break;
    stored.append(buffer.data(), static_cast<std::size_t>(n));
  }
  return decode(std::move(stored), hash, compression, size, path.string());
}

Result<std::string> BlobStore::decode(std::string stored, const ContentHash& hash,
                                      Compression compression, std::uint64_t size,
                                      const std::string& where) {
  auto corrupt = [&](std::string_view why) {
    return fail("workspace",
                fmt::format("blob {} is corrupt ({}); delete it and rerun the task that produced "
                            "it (`argus ws show` on the artifact names the task)",
                            where, why));
  };
  std::string bytes;
  if (compression == Compression::zstd) {
    unsigned long long expected = ZSTD_getFrameContentSize(stored.data(), stored.size());
    if (expected == ZSTD_CONTENTSIZE_ERROR || expected == ZSTD_CONTENTSIZE_UNKNOWN ||
        expected != size)
      return corrupt("bad zstd frame header");
    bytes.resize(static_cast<std::size_t>(expected));
    std::size_t n = ZSTD_decompress(bytes.data(), bytes.size(), stored.data(), stored.size());
    if (ZSTD_isError(n) || n != bytes.size())
      return corrupt(fmt::format("zstd: {}", ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short"));
  } else {
    bytes = std::move(stored);
  }
  ContentHash actual = hashBytes(bytes);
  if (actual != hash)
    return corrupt(fmt::format("content hash {}, expected {}", actual.hex(), hash.hex()));
  return bytes;
}

Result<std::vector<BlobFile>> BlobStore::scan(std::vector<fs::path>* unknown) const {
  std::vector<BlobFile> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(blobs_, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory()) continue;
    std::string name = it->path().filename().string();
    Compression compression = Compression::none;
    std::string_view hex = name;
    if (hex.ends_with(kZstdSuffix)) {
      compression = Compression::zstd;
      hex.remove_suffix(kZstdSuffix.size());
    }
    auto hash = ContentHash::fromHex(hex);
    if (!hash || it.depth() != 1 ||
        hash->hex().substr(0, 2) != it->path().parent_path().filename().string()) {
      if (unknown != nullptr) unknown->push_back(it->path());
      continue;
    }
    std::error_code sizeEc;
    auto size = it->file_size(sizeEc);
    files.push_back(BlobFile{it->path(), *hash, compression, sizeEc ? 0 : size});
  }
  if (ec)
    return fail("workspace", fmt::format("cannot list {}: {}", blobs_.string(), ec.message()));
  return files;
}

Result<std::vector<fs::path>> BlobStore::tempFiles() const {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(tmp_, ec), end; !ec && it != end; it.increment(ec))
    files.push_back(it->path());
  if (ec && ec != std::errc::no_such_file_or_directory)
    return fail("workspace", fmt::format("cannot list {}: {}", tmp_.string(), ec.message()));
  return files;
}

}  // namespace argus::workspace
