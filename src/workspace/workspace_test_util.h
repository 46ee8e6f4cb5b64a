// Shared helpers for the workspace tests: a fresh temporary workspace directory per test.
#pragma once

#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "argus/support/process.h"
#include "argus/workspace/workspace.h"

namespace argus::workspace::testing {

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = makeTempDir("argus-ws-test");
    ASSERT_TRUE(dir) << dir.error().text();
    root_ = *dir;
    dir_ = root_ / ".argus";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  Workspace openWorkspace(OpenOptions options = {}) {
    auto ws = Workspace::open(dir_, options);
    EXPECT_TRUE(ws) << ws.error().text();
    return std::move(*ws);
  }

  std::filesystem::path root_;
  std::filesystem::path dir_;
};

/// Incompressible bytes.
inline std::string randomBytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

/// Compressible text.
inline std::string repetitiveText(std::size_t n, std::string_view unit = "ld.global.f32 %f1;\n") {
  std::string s;
  while (s.size() < n) s += unit;
  return s;
}

/// The value of a Result; an error throws, which GoogleTest reports as a failure with the
/// message.
template <class T>
T must(Result<T> result) {
  if (!result) throw std::runtime_error(result.error().text());
  if constexpr (!std::is_void_v<T>) return std::move(*result);
}

/// Runs SQL against the workspace database behind the API's back (to simulate tampering).
inline int rawSql(const std::filesystem::path& db, const char* sql) {
  sqlite3* handle = nullptr;
  sqlite3_open(db.c_str(), &handle);
  int rc = sqlite3_exec(handle, sql, nullptr, nullptr, nullptr);
  sqlite3_close(handle);
  return rc;
}

}  // namespace argus::workspace::testing
