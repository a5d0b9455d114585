#include "progress.h"

#include "dumpsift/support/sizes.h"

#include <cstdio>

namespace dumpsift::tool {

void Progress::endPhase(std::chrono::steady_clock::time_point now) {
  if (!phase_.empty())
    phase_seconds_.emplace_back(phase_, std::chrono::duration<double>(now - phase_start_).count());
}

void Progress::update(llvm::StringRef phase, uint64_t done, uint64_t total) {
  if (!enabled_ && !timings_)
    return;
  auto now = std::chrono::steady_clock::now();
  if (phase != phase_) {
    endPhase(now);
    phase_ = phase.str();
    phase_start_ = now;
  } else if (!enabled_) {
    return;
  } else if (now - last_draw_ < std::chrono::milliseconds(100) && done < total) {
    return;
  }
  if (!enabled_)
    return;
  last_draw_ = now;
  double seconds = std::chrono::duration<double>(now - phase_start_).count();
  std::string line = "dumpsift: " + phase_;
  if (total) {
    char buf[160];
    double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
    double eta = rate > 0 ? static_cast<double>(total - std::min(done, total)) / rate : 0;
    std::snprintf(buf, sizeof buf, " %s / %s (%.0f%%), %s/s, ETA %.0fs", humanBytes(done).c_str(),
                  humanBytes(total).c_str(), 100.0 * static_cast<double>(done) / total,
                  humanBytes(static_cast<uint64_t>(rate)).c_str(), eta);
    line += buf;
  } else {
    line += "...";
  }
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (enabled_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
  if (timings_) {
    endPhase(std::chrono::steady_clock::now());
    phase_.clear();
    for (const auto &[phase, seconds] : phase_seconds_)
      std::fprintf(stderr, "dumpsift: timing: %s: %.3f s\n", phase.c_str(), seconds);
    phase_seconds_.clear();
  }
}

} // namespace dumpsift::tool
