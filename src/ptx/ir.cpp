#include "argus/ptx/ir.h"

#include <string_view>

namespace argus::ptx {

std::string Module::target() const {
  for (const TopLevel& item : items) {
    if (item.kind != TopLevel::Kind::Directive || item.directive.name != ".target") continue;
    std::string_view text = item.directive.text;
    text = text.substr(0, text.find(','));
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    return std::string(text);
  }
  return {};
}

std::string Module::version() const {
  for (const TopLevel& item : items)
    if (item.kind == TopLevel::Kind::Directive && item.directive.name == ".version")
      return item.directive.text;
  return {};
}

std::vector<const Function*> Module::functions() const {
  std::vector<const Function*> out;
  for (const TopLevel& item : items) {
    if (item.kind == TopLevel::Kind::Function) out.push_back(&item.function);
  }
  return out;
}

std::vector<Function*> Module::functions() {
  std::vector<Function*> out;
  for (TopLevel& item : items) {
    if (item.kind == TopLevel::Kind::Function) out.push_back(&item.function);
  }
  return out;
}

const Function* Module::findFunction(std::string_view name) const {
  for (const TopLevel& item : items) {
    if (item.kind == TopLevel::Kind::Function && item.function.name == name) return &item.function;
  }
  return nullptr;
}

}  // namespace argus::ptx
