// Error handling at module boundaries: every fallible Argus API returns Result<T>.
//
// An Error names the component that failed and says, in one sentence, what went wrong and what
// to do about it ("ptx: demo.ptx:212:3: `end mainloop` closes `producer`; markers must nest").
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace argus {

/// A failure with the component that detected it and a message meant for the user.
struct Error {
  std::string component;  ///< "ptx", "regions", "tools", "cli", ...
  std::string message;    ///< What happened and what to do; no trailing period needed.

  /// "component: message", the form every CLI error is printed in.
  [[nodiscard]] std::string text() const { return component + ": " + message; }
};

/// Value-or-error returned across module boundaries.
template <class T>
using Result = std::expected<T, Error>;

/// Shorthand for returning an error from a function that returns Result<T>.
[[nodiscard]] inline std::unexpected<Error> fail(std::string component, std::string message) {
  return std::unexpected(Error{std::move(component), std::move(message)});
}

}  // namespace argus
