// Progress on stderr while a long run works: only when stderr is a terminal and not --quiet.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dumpsift::tool {

class Progress {
public:
  /// `enabled`: draw the progress line. `timings`: at finish(), print how long each phase took
  /// (one "dumpsift: timing: PHASE: SECONDS s" line each), drawn or not.
  explicit Progress(bool enabled, bool timings = false) : enabled_(enabled), timings_(timings) {}
  ~Progress() { finish(); }

  /// Shows `phase` with done/total bytes (total 0: unknown), the rate and an ETA. Redraws at most
  /// ten times a second.
  void update(llvm::StringRef phase, uint64_t done, uint64_t total);
  /// Clears the progress line (and prints the timings of the phases so far, when asked).
  void finish();

private:
  /// Closes the current phase's timing.
  void endPhase(std::chrono::steady_clock::time_point now);

  bool enabled_;
  bool timings_;
  bool drawn_ = false;
  std::string phase_;
  std::chrono::steady_clock::time_point phase_start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
  std::vector<std::pair<std::string, double>> phase_seconds_;
};

} // namespace dumpsift::tool
