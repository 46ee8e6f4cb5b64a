#include "argus/inject/output.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace argus::inject {

std::string jsonString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string kernelsLine(const KernelActivity& k) {
  return "{\"seq\":" + std::to_string(k.seq) + ",\"correlation\":" + std::to_string(k.correlation) +
         ",\"kernel\":" + jsonString(k.kernel) + ",\"start_ns\":" + std::to_string(k.startNs) +
         ",\"end_ns\":" + std::to_string(k.endNs) +
         ",\"duration_ns\":" + std::to_string(k.endNs - k.startNs) +
         ",\"context\":" + std::to_string(k.context) + ",\"stream\":" + std::to_string(k.stream) +
         "}\n";
}

void appendLine(const std::filesystem::path& file, const std::string& line) {
  std::ofstream out(file, std::ios::app);
  out << line << '\n';
}

void reportTo(std::string_view prefix, const std::filesystem::path& dir,
              const std::string& message) {
  const std::string text = std::string(prefix) + ": " + message;
  std::fprintf(stderr, "%s\n", text.c_str());
  if (!dir.empty()) appendLine(dir / "errors.txt", text);
}

std::uint64_t envNumber(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  const bool hex = text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  if (*text == '-' || *text == '+' || std::isspace(static_cast<unsigned char>(*text)))
    return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, hex ? 16 : 10);
  return (errno == 0 && end != text && *end == '\0') ? value : fallback;
}

}  // namespace argus::inject
