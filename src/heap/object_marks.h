// An object-start index a managed runtime's walker leaves for the holders pass: every
// kObjectsPerMark-th object of each run of objects it walked, with the run's end. The pass's object
// finder steps from the mark at or below a word to the object that holds it. Private to src/heap.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dumpsift {

class ObjectMarks {
public:
  struct Mark {
    uint64_t start = 0; // an object's start
    uint64_t limit = 0; // the end of the run of objects it is in
  };
  static constexpr unsigned kObjectsPerMark = 64;

  /// Notes the object at `addr`, in a run of objects ending at `limit`: marked when it is the
  /// first of its run (`walked` 0) or the kObjectsPerMark-th since the last mark; counted in
  /// `walked`. The objects of one run come in address order; runs in any order until sort().
  void note(uint64_t addr, uint64_t limit, uint64_t &walked) {
    ++noted_;
    if (walked++ % kObjectsPerMark == 0)
      marks_.push_back({addr, limit});
  }

  /// The objects noted.
  uint64_t objects() const { return noted_; }

  /// Calls `each(mark, end)` for each mark, by address, with the end of its stretch of objects:
  /// the next mark of its run, or the run's end. Once sorted.
  template <typename Each> void eachStretch(Each each) const {
    for (size_t i = 0; i < marks_.size(); ++i) {
      const Mark &m = marks_[i];
      const uint64_t next = i + 1 < marks_.size() ? marks_[i + 1].start : m.limit;
      each(m, std::min(m.limit, std::max(next, m.start)));
    }
  }

  /// The mark at or below `slot` whose run holds it, or nullptr.
  const Mark *below(uint64_t slot) const {
    auto it = std::upper_bound(marks_.begin(), marks_.end(), slot,
                               [](uint64_t s, const Mark &m) { return s < m.start; });
    if (it == marks_.begin() || slot >= std::prev(it)->limit)
      return nullptr;
    return &*std::prev(it);
  }

  /// Puts the runs in address order: once every object is noted, before below().
  void sort() {
    std::sort(marks_.begin(), marks_.end(),
              [](const Mark &a, const Mark &b) { return a.start < b.start; });
  }

  size_t size() const { return marks_.size(); }
  bool empty() const { return marks_.empty(); }

private:
  std::vector<Mark> marks_; // by start
  uint64_t noted_ = 0;
};

} // namespace dumpsift
