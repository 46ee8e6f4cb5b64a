#include <charconv>

#include <fmt/format.h>

#include "argus/ptx/parser.h"
#include "pass.h"

namespace argus::passes {

Result<std::vector<ptx::Statement>> parseSnippet(const std::string& text, const std::string& target,
                                                 std::string_view pass) {
  const std::string module = fmt::format(
      ".version 8.0\n.target {}\n.address_size 64\n.entry __argus_snippet()\n{{\n{}}}\n",
      target.empty() ? "sm_90a" : target, text);
  auto parsed = ptx::parseModule(module, fmt::format("<{} snippet>", pass));
  if (!parsed) {
    return fail("passes", fmt::format("{}: internal error, generated PTX does not parse: {}", pass,
                                      parsed.error().message));
  }
  for (auto& item : parsed->items) {
    if (item.kind != ptx::TopLevel::Kind::Function) continue;
    std::vector<ptx::Statement> body = std::move(item.function.body);
    for (auto& s : body) {
      s.loc = {};
      s.variable.loc = {};
    }
    return body;
  }
  return fail("passes", fmt::format("{}: internal error: snippet has no function", pass));
}

const ptx::VariableDecl* findRegisterDecl(const ptx::Function& function, std::string_view reg) {
  for (const ptx::Statement& s : function.body) {
    if (s.kind != ptx::Statement::Kind::Variable || s.variable.stateSpace != ".reg") continue;
    const auto& d = s.variable;
    if (!d.registerCount) {
      if (d.name == reg) return &d;
      continue;
    }
    if (reg.size() <= d.name.size() || !reg.starts_with(d.name)) continue;
    std::string_view rest = reg.substr(d.name.size());
    uint64_t index = 0;
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
    if (ec == std::errc{} && ptr == rest.data() + rest.size() && index < *d.registerCount)
      return &d;
  }
  return nullptr;
}

}  // namespace argus::passes
