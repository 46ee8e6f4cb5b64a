#include <filesystem>
#include <iostream>

#include "commands.h"

namespace argus::cli {

int reportError(const Error& error) {
  std::cerr << "argus: " << error.text() << "\n";
  return 1;
}

Result<void> checkOutputFolder(const std::string& component, const std::string& flag,
                               const std::string& file) {
  if (file.empty()) return {};
  const auto folder = std::filesystem::absolute(std::filesystem::path(file)).parent_path();
  std::error_code ec;
  if (std::filesystem::is_directory(folder, ec)) return {};
  return fail(component, flag + " " + file + ": folder " + folder.string() +
                             " does not exist; create it or write the file elsewhere");
}

}  // namespace argus::cli
