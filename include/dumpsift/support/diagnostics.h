// Diagnostics: warnings about damage local to one item (a bad stream, a corrupt chunk, a truncated
// segment). The run goes on; every warning ends up in the report.
#pragma once

#include "llvm/ADT/StringSet.h"

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace dumpsift {

/// One warning: `where` names the item (a stream, a segment, an address), `message` says why.
struct Diagnostic {
  std::string where;
  std::string message;
};

/// Collects warnings from every layer. Thread-safe. Identical warnings are kept once; after
/// `kMaxKept` distinct warnings the rest are only counted (hostile input cannot grow memory).
class Diagnostics {
public:
  static constexpr size_t kMaxKept = 1000;

  Diagnostics() = default;
  /// Moving takes the other's warnings (not thread-safe against concurrent warn() on `other`).
  Diagnostics(Diagnostics &&other) noexcept;
  Diagnostics &operator=(Diagnostics &&other) noexcept;

  void warn(std::string where, std::string message);

  /// The kept warnings, in the order first seen.
  std::vector<Diagnostic> warnings() const;
  /// Warnings that were dropped because the cap was reached.
  size_t suppressed() const;
  bool empty() const;

private:
  mutable std::mutex mutex_;
  std::vector<Diagnostic> kept_;
  llvm::StringSet<> kept_keys_; // where + '\0' + message of every kept warning
  size_t suppressed_ = 0;
};

} // namespace dumpsift
