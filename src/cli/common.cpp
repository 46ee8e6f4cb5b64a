#include <iostream>

#include "commands.h"

namespace argus::cli {

int reportError(const Error& error) {
  std::cerr << "argus: " << error.text() << "\n";
  return 1;
}

}  // namespace argus::cli
