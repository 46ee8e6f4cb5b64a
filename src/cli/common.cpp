#include <cxxabi.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "commands.h"

namespace argus::cli {

int reportError(const Error& error) {
  std::cerr << "argus: " << error.text() << "\n";
  return 1;
}

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? std::string(text.get()) : name;
}

}  // namespace argus::cli
