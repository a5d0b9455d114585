#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "dumpsift/support/utf8.h"
#include "readers.h"

#include <algorithm>

namespace dumpsift::detail {

namespace {

// Keeps the first of any overlapping items (sorted by start) and warns about the others.
template <typename T, typename EndFn>
void dropOverlaps(std::vector<T> &items, EndFn end, Diagnostics &diags, const char *what) {
  std::stable_sort(items.begin(), items.end(),
                   [](const T &a, const T &b) { return a.start < b.start; });
  std::vector<T> kept;
  kept.reserve(items.size());
  for (T &item : items) {
    if (!kept.empty() && item.start < end(kept.back())) {
      diags.warn(std::string(what) + " at " + hexAddress(item.start),
                 "overlaps the one at " + hexAddress(kept.back().start) + "; ignored");
      continue;
    }
    kept.push_back(std::move(item));
  }
  items = std::move(kept);
}

/// Makes every file byte back at most one memory range: a hostile dump may point many PT_LOADs or
/// minidump descriptors at the same bytes, so that "captured" memory exceeds the file by orders of
/// magnitude and every later pass reads the same bytes again and again. Among ranges sharing file
/// bytes the one whose bytes start first in the file keeps them (the lower address on a tie); the
/// others lose the shared bytes (a shared front is cut off, a range left with nothing is dropped).
/// One warning says how many ranges and bytes were aliases. `memory` is sorted by start and
/// disjoint, and stays so. Work: one sort of the ranges.
void dropFileAliases(std::vector<MemoryRange> &memory, Diagnostics &diags) {
  std::vector<size_t> by_file(memory.size());
  for (size_t i = 0; i < by_file.size(); ++i)
    by_file[i] = i;
  std::sort(by_file.begin(), by_file.end(), [&](size_t a, size_t b) {
    const uint8_t *pa = memory[a].bytes.data(), *pb = memory[b].bytes.data();
    return pa != pb ? std::less<const uint8_t *>()(pa, pb) : a < b;
  });
  const uint8_t *covered_end = nullptr;
  size_t aliases = 0;
  uint64_t aliased_bytes = 0, first_alias = 0, first_original = 0;
  std::vector<bool> dropped(memory.size());
  const MemoryRange *covering = nullptr;
  for (size_t i : by_file) {
    MemoryRange &m = memory[i];
    const uint8_t *begin = m.bytes.data(), *end = begin + m.bytes.size();
    if (covered_end && std::less<const uint8_t *>()(begin, covered_end)) {
      const uint64_t shared = std::min(end, covered_end) - begin;
      if (aliases++ == 0) {
        first_alias = m.start;
        first_original = covering->start + (begin - covering->bytes.data());
      }
      aliased_bytes += shared;
      if (shared == m.bytes.size()) {
        dropped[i] = true;
        continue;
      }
      m.bytes = m.bytes.drop_front(shared);
      m.start += shared;
    }
    if (!covered_end || std::less<const uint8_t *>()(covered_end, m.bytes.end())) {
      covered_end = m.bytes.end();
      covering = &m;
    }
  }
  if (aliases == 0)
    return;
  size_t kept = 0;
  for (size_t i = 0; i < memory.size(); ++i)
    if (!dropped[i])
      memory[kept++] = memory[i];
  memory.resize(kept);
  diags.warn("memory ranges", std::to_string(aliases) + " ranges (" + humanBytes(aliased_bytes) +
                                  ") point at file bytes another range holds (the first: " +
                                  hexAddress(first_alias) + " repeats the bytes of " +
                                  hexAddress(first_original) +
                                  "); each byte of the file is kept in one range only");
}

/// Auxiliary vector entries that point into the process's initial stack (the strings and random
/// bytes the kernel puts above argv and envp): AT_PLATFORM, AT_RANDOM, AT_EXECFN.
constexpr uint64_t kAtPlatform = 15, kAtRandom = 25, kAtExecfn = 31;

/// A guard below a thread stack is at most this large: glibc's and musl's pthread guards are a
/// page or two, HotSpot's guard zones a few pages (of 64 KiB on some arm64 kernels).
constexpr uint64_t kMaxGuardBytes = 1 << 20;

/// The index of the region holding `addr` (regions sorted, disjoint), or regions.size().
size_t regionIndex(const std::vector<Region> &regions, uint64_t addr) {
  auto it = std::upper_bound(regions.begin(), regions.end(), addr,
                             [](uint64_t a, const Region &r) { return a < r.start; });
  if (it == regions.begin() || addr >= std::prev(it)->end())
    return regions.size();
  return static_cast<size_t>(std::prev(it) - regions.begin());
}

/// True when the region below regions[i] is a guard: adjacent, small, without a file and not
/// writable (PROT_NONE; gdb writes such a mapping as a read-only segment of zeros). glibc's and
/// musl's pthread_create and the JVM put one under every thread stack they map.
bool hasGuardBelow(const std::vector<Region> &regions, size_t i) {
  if (i == 0)
    return false;
  const Region &below = regions[i - 1];
  return below.end() == regions[i].start && below.size <= kMaxGuardBytes && !below.perms.write &&
         below.backing_file.empty();
}

/// Classes the thread stacks Stack and gives each thread without a known stack range the range of
/// its stack mapping. A region is a stack because it is a thread's stack mapping, not because a
/// stack pointer lands in it: the Go runtime runs its threads on stacks carved out of its heap
/// arenas, so a stack pointer may point into a heap. A stack mapping is
/// - the process's initial stack: the region the auxiliary vector's strings lie in;
/// - a region inside a thread's stack range as the dump gives it (a minidump's thread list or
///   TEB), and the region holding its stack pointer when that lies in the range;
/// - a region holding a thread's stack pointer with a guard right below it (hasGuardBelow);
/// - on Windows, the region holding a thread's stack pointer;
/// - a WOW64 thread's 64-bit stack, by its range and its stack pointer.
/// A dump that shows neither the initial stack (no auxiliary vector) nor stack ranges does not say
/// enough to tell stacks from heaps: there every region holding a stack pointer is a stack. Only
/// anonymous and unclassified regions change class. Stack ranges are merged first, so the work is
/// bounded by threads plus regions however many threads claim the same memory.
void markThreadStacks(Snapshot &snapshot) {
  std::vector<Region> &regions = snapshot.regions;
  auto mayBeStack = [](const Region &r) {
    return r.cls == RegionClass::Anonymous || r.cls == RegionClass::Other;
  };
  auto mark = [&](Region &r, RegionSource source) {
    if (mayBeStack(r)) {
      r.cls = RegionClass::Stack;
      r.class_source = source;
    }
  };
  bool initial_stack_known = false;
  for (const auto &[type, value] : snapshot.auxv) {
    if (type != kAtPlatform && type != kAtRandom && type != kAtExecfn)
      continue;
    size_t i = regionIndex(regions, value);
    if (i == regions.size() || (regions[i].cls != RegionClass::Stack &&
                                (!regions[i].backing_file.empty() || !regions[i].perms.write)))
      continue;
    mark(regions[i], RegionSource::InitialStack);
    initial_stack_known = true;
  }
  bool ranges_known = false;
  for (const Thread &t : snapshot.threads)
    ranges_known |= t.stack_end > t.stack_start;
  const bool by_stack_pointer =
      (!initial_stack_known && !ranges_known) || snapshot.system.os == Os::Windows;

  struct Span {
    uint64_t start, end;
    RegionSource source;
  };
  std::vector<Span> spans;
  for (const Thread &t : snapshot.threads) {
    // A WOW64 thread's 64-bit stack is a stack too, beside the 32-bit one the rest is about.
    if (t.wow64_stack_end > t.wow64_stack_start)
      spans.push_back({t.wow64_stack_start, t.wow64_stack_end, RegionSource::Teb});
    const size_t i = regionIndex(regions, t.wow64_stack_pointer);
    if (t.wow64_stack_pointer && i != regions.size())
      mark(regions[i], RegionSource::StackPointer);
  }
  for (Thread &t : snapshot.threads) {
    const bool range_known = t.stack_end > t.stack_start;
    if (range_known)
      spans.push_back({t.stack_start, t.stack_end, t.stack_source});
    size_t i = regionIndex(regions, t.stack_pointer);
    if (i == regions.size())
      continue;
    const bool in_range =
        range_known && t.stack_pointer >= t.stack_start && t.stack_pointer < t.stack_end;
    if (regions[i].cls != RegionClass::Stack &&
        (by_stack_pointer || in_range || hasGuardBelow(regions, i)))
      mark(regions[i], in_range ? t.stack_source : RegionSource::StackPointer);
    if (regions[i].cls == RegionClass::Stack && !range_known) {
      t.stack_start = regions[i].start;
      t.stack_end = regions[i].end();
      t.stack_source = RegionSource::StackPointer;
    }
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span &a, const Span &b) { return a.start < b.start; });
  std::vector<Span> merged;
  for (const Span &s : spans) {
    if (!merged.empty() && s.start <= merged.back().end)
      merged.back().end = std::max(merged.back().end, s.end);
    else
      merged.push_back(s);
  }
  auto r = regions.begin();
  for (const Span &s : merged) {
    r = std::lower_bound(r, regions.end(), s.start,
                         [](const Region &region, uint64_t a) { return region.start < a; });
    for (; r != regions.end() && r->end() <= s.end; ++r)
      mark(*r, s.source);
  }
}

} // namespace

uint64_t cappedRangeCount(uint64_t count, const std::string &where, Diagnostics &diags) {
  if (count <= kMaxRanges)
    return count;
  diags.warn(where, groupedDigits(count) + " entries; only the first " + groupedDigits(kMaxRanges) +
                        " are read (the limit on memory ranges and regions per dump)");
  return kMaxRanges;
}

void finalizeSnapshot(Snapshot &snapshot) {
  Diagnostics &diags = snapshot.diagnostics;
  // Names read from the dump may hold any bytes; the reports need valid UTF-8.
  makeValidUtf8(snapshot.path);
  makeValidUtf8(snapshot.system.arch);
  makeValidUtf8(snapshot.process.name);
  makeValidUtf8(snapshot.process.command_line);
  for (Module &m : snapshot.modules) {
    makeValidUtf8(m.path);
    makeValidUtf8(m.build_id);
  }
  for (Region &r : snapshot.regions)
    makeValidUtf8(r.backing_file);
  // Empty or wrapping ranges say nothing useful.
  std::erase_if(snapshot.regions,
                [&](const Region &r) { return r.size == 0 || r.start + r.size < r.start; });
  std::erase_if(snapshot.memory, [&](const MemoryRange &m) {
    return m.bytes.empty() || m.start + m.bytes.size() < m.start;
  });
  dropOverlaps(
      snapshot.regions, [](const Region &r) { return r.end(); }, diags, "region");
  dropOverlaps(
      snapshot.memory, [](const MemoryRange &m) { return m.end(); }, diags, "memory range");
  dropFileAliases(snapshot.memory, diags);

  // Captured bytes that no region describes get a region of their own, so every captured byte
  // belongs to exactly one region.
  std::vector<Region> extra;
  size_t ri = 0;
  for (const MemoryRange &m : snapshot.memory) {
    uint64_t cursor = m.start;
    while (cursor < m.end()) {
      while (ri < snapshot.regions.size() && snapshot.regions[ri].end() <= cursor)
        ++ri;
      uint64_t gap_end = m.end();
      if (ri < snapshot.regions.size()) {
        const Region &r = snapshot.regions[ri];
        if (r.start <= cursor) {
          cursor = std::min(m.end(), r.end());
          continue;
        }
        gap_end = std::min(gap_end, r.start);
      }
      Region region;
      region.start = cursor;
      region.size = gap_end - cursor;
      region.perms.read = true;
      region.cls = RegionClass::Other;
      extra.push_back(region);
      cursor = gap_end;
    }
  }
  if (!extra.empty()) {
    snapshot.regions.insert(snapshot.regions.end(), extra.begin(), extra.end());
    std::sort(snapshot.regions.begin(), snapshot.regions.end(),
              [](const Region &a, const Region &b) { return a.start < b.start; });
  }

  // Captured bytes per region: one merge pass over both sorted lists.
  size_t mi = 0;
  for (Region &r : snapshot.regions) {
    r.captured = 0;
    while (mi < snapshot.memory.size() && snapshot.memory[mi].end() <= r.start)
      ++mi;
    for (size_t j = mi; j < snapshot.memory.size() && snapshot.memory[j].start < r.end(); ++j) {
      uint64_t lo = std::max(r.start, snapshot.memory[j].start);
      uint64_t hi = std::min(r.end(), snapshot.memory[j].end());
      if (hi > lo)
        r.captured += hi - lo;
    }
  }

  markThreadStacks(snapshot);
}

} // namespace dumpsift::detail
