// Progress on stderr while a long run works: only when stderr is a terminal and not --quiet.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace dumpsift::tool {

class Progress {
public:
  explicit Progress(bool enabled) : enabled_(enabled) {}
  ~Progress() { finish(); }

  /// Shows `phase` with done/total bytes (total 0: unknown), the rate and an ETA. Redraws at most
  /// ten times a second.
  void update(llvm::StringRef phase, uint64_t done, uint64_t total);
  /// Clears the progress line.
  void finish();

private:
  bool enabled_;
  bool drawn_ = false;
  std::string phase_;
  std::chrono::steady_clock::time_point phase_start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
};

} // namespace dumpsift::tool
