// strip_markers: the trace-free variant. Removes every Argus marker comment, and the
// `// begin inline asm` / `// end inline asm` pair nvcc wraps around it, so that the PTX is what
// the program would be without markers. ptxas ignores comments, so the machine code is the same
// as the marked build's (tested on every example).
#include <algorithm>
#include <cctype>
#include <string_view>

#include "pass.h"

namespace argus::passes {
namespace markers {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool isCommentWith(const ptx::Statement& s, std::string_view text) {
  return s.kind == ptx::Statement::Kind::Comment && !s.blockComment && trim(s.text) == text;
}

}  // namespace

bool isMarker(const ptx::Statement& statement) {
  if (statement.kind != ptx::Statement::Kind::Comment) return false;
  std::string_view body = trim(statement.text);
  return body.starts_with("@argus") &&
         (body.size() == 6 || std::isspace(static_cast<unsigned char>(body[6])));
}

Span markerSpan(const std::vector<ptx::Statement>& body, size_t index) {
  if (index > 0 && index + 1 < body.size() && isCommentWith(body[index - 1], "begin inline asm") &&
      isCommentWith(body[index + 1], "end inline asm")) {
    return {index - 1, index + 1};
  }
  return {index, index};
}

uint64_t stripAll(ptx::Function& function) {
  std::vector<bool> drop(function.body.size(), false);
  uint64_t count = 0;
  for (size_t i = 0; i < function.body.size(); ++i) {
    if (!isMarker(function.body[i])) continue;
    ++count;
    Span span = markerSpan(function.body, i);
    for (size_t j = span.first; j <= span.last; ++j) drop[j] = true;
  }
  if (count == 0) return 0;
  std::vector<ptx::Statement> kept;
  kept.reserve(function.body.size());
  for (size_t i = 0; i < function.body.size(); ++i) {
    if (!drop[i]) kept.push_back(std::move(function.body[i]));
  }
  function.body = std::move(kept);
  return count;
}

}  // namespace markers

namespace {

class StripMarkersPass final : public Pass {
 public:
  std::string_view name() const override { return "strip_markers"; }
  std::string_view description() const override {
    return "remove Argus marker comments (the trace-free variant)";
  }

  Result<void> run(ptx::Module& module, const TransformOptions& /*options*/,
                   TransformResult& /*result*/) override {
    for (ptx::Function* function : module.functions()) {
      const uint64_t removed = markers::stripAll(*function);
      markersRemoved_ += removed;
      if (removed > 0) ++functionsChanged_;
    }
    return {};
  }

 private:
  Statistic markersRemoved_{this, "markers", "marker comments removed"};
  Statistic functionsChanged_{this, "functions", "functions that held markers"};
};

}  // namespace

std::unique_ptr<Pass> createStripMarkersPass() {
  return std::make_unique<StripMarkersPass>();
}

}  // namespace argus::passes
