// What the evidence format tests share.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace argus::evidence::test {

/// A fixture's text ("" when it cannot be read: the parse under test then fails).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace argus::evidence::test
