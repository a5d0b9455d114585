#include "dumpsift/support/diagnostics.h"

#include "dumpsift/support/utf8.h"

namespace dumpsift {

Diagnostics::Diagnostics(Diagnostics &&other) noexcept {
  std::lock_guard<std::mutex> lock(other.mutex_);
  kept_ = std::move(other.kept_);
  kept_keys_ = std::move(other.kept_keys_);
  suppressed_ = other.suppressed_;
}

Diagnostics &Diagnostics::operator=(Diagnostics &&other) noexcept {
  if (this != &other) {
    std::scoped_lock lock(mutex_, other.mutex_);
    kept_ = std::move(other.kept_);
    kept_keys_ = std::move(other.kept_keys_);
    suppressed_ = other.suppressed_;
  }
  return *this;
}

void Diagnostics::warn(std::string where, std::string message) {
  // Warnings quote names and bytes from the dump; reports need them as valid UTF-8.
  makeValidUtf8(where);
  makeValidUtf8(message);
  std::string key = where + '\0' + message;
  std::lock_guard<std::mutex> lock(mutex_);
  if (kept_keys_.contains(key))
    return;
  if (kept_.size() >= kMaxKept) {
    ++suppressed_;
    return;
  }
  kept_keys_.insert(key);
  kept_.push_back({std::move(where), std::move(message)});
}

std::vector<Diagnostic> Diagnostics::warnings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kept_;
}

size_t Diagnostics::suppressed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return suppressed_;
}

bool Diagnostics::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kept_.empty() && suppressed_ == 0;
}

} // namespace dumpsift
