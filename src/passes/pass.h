// The base every PTX pass derives from, in the style of MLIR's pass infrastructure: one class
// per pass, options typed and declared once (a table of passes::OptionInfo rows bound to the
// fields of the pass's options struct, parsed from the task config by pass_options.h), statistics
// declared as members and reported by name, failure returned through the Result. A pass object is
// created for one application and keeps no state between applications (no globals, no caches).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/passes/transforms.h"
#include "argus/ptx/ir.h"
#include "argus/support/status.h"

namespace argus::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  Pass() = default;
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;

  /// Registry name, e.g. `lower_markers_to_trace`.
  [[nodiscard]] virtual std::string_view name() const = 0;
  /// One line for `argus recipes` and error messages.
  [[nodiscard]] virtual std::string_view description() const = 0;

  /// Rewrites `module`. Adds trace maps to `result.traceMap`; statistics are collected by the
  /// caller through statistics(). On failure the module may be partly rewritten: callers work on
  /// a copy.
  [[nodiscard]] virtual Result<void> run(ptx::Module& module, const TransformOptions& options,
                                         TransformResult& result) = 0;

  /// A counter the pass declares as a member (MLIR's Statistic); registered with its owner.
  class Statistic {
   public:
    Statistic(Pass* owner, std::string name, std::string description)
        : name_(std::move(name)), description_(std::move(description)) {
      owner->statistics_.push_back(this);
    }
    Statistic(const Statistic&) = delete;
    Statistic& operator=(const Statistic&) = delete;
    Statistic& operator+=(uint64_t n) {
      value_ += n;
      return *this;
    }
    Statistic& operator++() { return *this += 1; }
    [[nodiscard]] uint64_t value() const { return value_; }
    [[nodiscard]] const std::string& name() const { return name_; }
    [[nodiscard]] const std::string& description() const { return description_; }

   private:
    std::string name_;
    std::string description_;
    uint64_t value_ = 0;
  };

  /// {"statistic name": value, ...} in declaration order (nlohmann::json sorts keys).
  [[nodiscard]] nlohmann::json statisticsJson() const {
    nlohmann::json out = nlohmann::json::object();
    for (const Statistic* s : statistics_) out[s->name()] = s->value();
    return out;
  }

 private:
  std::vector<Statistic*> statistics_;
};

/// Marker-comment helpers shared by the passes.
namespace markers {

/// True when the statement is an Argus marker comment (`// @argus ...`).
[[nodiscard]] bool isMarker(const ptx::Statement& statement);

/// For a marker at `index`, the [first, last] statement range to replace: the marker alone, or
/// the marker with its `// begin inline asm` / `// end inline asm` wrapper when the wrapper holds
/// nothing else.
struct Span {
  size_t first = 0;
  size_t last = 0;
};
[[nodiscard]] Span markerSpan(const std::vector<ptx::Statement>& body, size_t index);

/// Removes every marker comment of `function` (with its wrapper); returns how many.
uint64_t stripAll(ptx::Function& function);

}  // namespace markers

/// Parses PTX text a pass generated (instructions, declarations, labels) into statements, with
/// locations cleared: the pass synthesized them. Errors are internal errors of `pass`.
[[nodiscard]] Result<std::vector<ptx::Statement>> parseSnippet(const std::string& text,
                                                               const std::string& target,
                                                               std::string_view pass);

/// The `.reg` declaration of register `reg` in `function` (a plain name or one of a
/// `%r<N>` family), or nullptr when it is not declared there.
[[nodiscard]] const ptx::VariableDecl* findRegisterDecl(const ptx::Function& function,
                                                        std::string_view reg);

/// Factories, one per pass (transforms.cpp holds the name -> factory table).
[[nodiscard]] std::unique_ptr<Pass> createStripMarkersPass();
[[nodiscard]] std::unique_ptr<Pass> createLowerMarkersToTracePass();
[[nodiscard]] std::unique_ptr<Pass> createPaintPtxPass();
[[nodiscard]] std::unique_ptr<Pass> createInsertForcedWaitPass();
[[nodiscard]] std::unique_ptr<Pass> createCloneSharedCalleesPass();

}  // namespace argus::passes
