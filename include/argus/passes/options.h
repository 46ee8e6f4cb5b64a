// A pass option's declaration (MLIR's Pass::Option): its key in the task config, the kind of
// value it takes, its default, a line of help and, for a choice, the values allowed. Each pass
// declares its options once, as a table of these rows (the trace pass's in
// include/argus/trace/options.h, which `argus build --pass-option` and a query's
// `--trace-option` also check their keys against); src/passes/pass_options.h binds each row to a
// typed field of the pass's options struct and parses the config in one place. Header-only data,
// so that modules that only check keys need not link the passes.
#pragma once

#include <span>
#include <string_view>

namespace argus::passes {

struct OptionInfo {
  /// The key in TransformOptions::config (and of KEY=VALUE on the command line).
  std::string_view name;
  /// The value it takes: `choice` (one of `allowed`), else a phrase that errors end in
  /// ("option cta is -1; use a linear CTA id").
  std::string_view type;
  /// The default as JSON text (`"compact"`, `256`, `{}`); empty for none (unset, or required).
  std::string_view defaultValue = {};
  /// One line for help and documentation.
  std::string_view help = {};
  /// A choice's values, in the order its error lists them.
  std::span<const std::string_view> allowed = {};
  /// Without it the pass fails, naming the option and its type.
  bool required = false;
  /// Users set it (`--pass-option`, `--trace-option`); Argus sets the others itself.
  bool user = false;
};

}  // namespace argus::passes
