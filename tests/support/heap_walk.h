// Helpers for the heap walkers' tests: one walk of a snapshot by a registered walker, kept whole
// for a test to look at, and reads of a dump and patches of a copy of it at process addresses (to
// corrupt a real core). Header-only, so that only the tests that walk heaps need the heap layer.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/parallel.h"
#include "support/test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dumpsift::test {

/// What one walker reported about one snapshot.
/// A bound on a walk of a real core that catches a hang (an unbounded walk of a damaged heap
/// takes hours), not slowness: CI runs these on 2 loaded cores, and a one-second walk has taken
/// ten there. Speed is measured by bench/, never here.
inline constexpr double kHangGuardSeconds = 120;

struct WalkedHeap {
  std::vector<Allocation> allocations; // in the order reported
  std::map<uint64_t, size_t> by_address;
  HeapWalkResult result;
  std::vector<Diagnostic> warnings;
  std::string error;     // the walk's Error, when it failed
  bool detected = false; // what the walker's detect said
  double seconds = 0;    // the walk's wall time

  /// The allocation at user address `address`, or nullptr.
  const Allocation *at(uint64_t address) const {
    auto it = by_address.find(address);
    return it == by_address.end() ? nullptr : &allocations[it->second];
  }
  /// The allocation whose bytes (or whose block's bytes) hold `address`, or nullptr.
  const Allocation *holding(uint64_t address) const {
    auto it = by_address.upper_bound(address);
    if (it == by_address.begin())
      return nullptr;
    const Allocation &a = allocations[std::prev(it)->second];
    return address - a.address < std::max(a.size, a.chunk_size) ? &a : nullptr;
  }
  /// The value of the fact `key`, or "".
  std::string fact(const std::string &key) const;
  /// The fact `key` read as a number (0 when absent).
  uint64_t count(const std::string &key) const { return std::stoull("0" + fact(key)); }
  /// True when a warning's "where: message" contains `text`.
  bool warned(const std::string &text) const;
};

/// The registered walker `name` (FAILs when there is none).
inline const HeapWalker &walkerNamed(llvm::StringRef name) {
  for (const auto &w : heapWalkers())
    if (w->name() == name)
      return *w;
  FAIL("no walker named " << name.str() << " in the registry");
  return *heapWalkers().front();
}

/// The fact `key` of a walker's result, or "" when it states none.
inline std::string factOf(const HeapWalkResult &result, const std::string &key) {
  for (const auto &[k, v] : result.facts)
    if (k == key)
      return v;
  return "";
}

/// True when one of `warnings`, as "where: message", contains `text`.
inline bool anyWarningHas(const std::vector<Diagnostic> &warnings, const std::string &text) {
  return std::any_of(warnings.begin(), warnings.end(), [&](const Diagnostic &d) {
    return (d.where + ": " + d.message).find(text) != std::string::npos;
  });
}

inline std::string WalkedHeap::fact(const std::string &key) const {
  return factOf(result, key);
}
inline bool WalkedHeap::warned(const std::string &text) const {
  return anyWarningHas(warnings, text);
}

/// Runs `walker`'s detect and walk over `snapshot` (whatever detect says); each warning is also
/// logged for a failing check.
inline WalkedHeap walkHeap(const HeapWalker &walker, const Snapshot &snapshot) {
  AddressSpace memory(snapshot);
  WalkedHeap w;
  w.detected = walker.detect(memory);
  Diagnostics diags;
  const auto start = std::chrono::steady_clock::now();
  auto result = walker.walk(
      memory,
      [&](const Allocation &a) {
        w.by_address[a.address] = w.allocations.size();
        w.allocations.push_back(a);
      },
      diags);
  w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result)
    w.result = std::move(*result);
  else
    w.error = llvm::toString(result.takeError());
  w.warnings = diags.warnings();
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  return w;
}

/// Runs `walker`'s walk over `snapshot` on `threads` threads (WalkOptions::threads): each thread's
/// allocations are gathered apart (by the sink's lane) and then merged by address, the walker's
/// areas never overlapping. `lanes_used` gets the number of threads that reported any.
inline WalkedHeap walkHeapOn(const HeapWalker &walker, const Snapshot &snapshot, unsigned threads,
                             unsigned &lanes_used) {
  AddressSpace memory(snapshot);
  WalkedHeap w;
  w.detected = walker.detect(memory);
  Diagnostics diags;
  std::vector<std::vector<Allocation>> lanes(resolveThreads(threads));
  WalkOptions options;
  options.threads = threads;
  auto result = walker.walk(
      memory, [&](unsigned lane, const Allocation &a) { lanes[lane].push_back(a); }, diags,
      options);
  if (result)
    w.result = std::move(*result);
  else
    w.error = llvm::toString(result.takeError());
  w.warnings = diags.warnings();
  lanes_used = 0;
  for (const std::vector<Allocation> &lane : lanes) {
    lanes_used += !lane.empty();
    w.allocations.insert(w.allocations.end(), lane.begin(), lane.end());
  }
  std::stable_sort(w.allocations.begin(), w.allocations.end(),
                   [](const Allocation &a, const Allocation &b) { return a.address < b.address; });
  for (size_t i = 0; i < w.allocations.size(); ++i)
    w.by_address[w.allocations[i].address] = i;
  return w;
}

/// A copy of the core at `path`, written to `copy`, in which the PT_LOAD starting at each of
/// `no_bytes` keeps no bytes in the file (p_filesz 0: a page not captured) and the one at each of
/// `no_segment` is gone (PT_NULL: what gcore writes for a PROT_NONE page never written). REQUIREs
/// one segment per address.
inline void withoutPages(const std::string &path, const std::vector<uint64_t> &no_bytes,
                         const std::vector<uint64_t> &no_segment, const std::string &copy) {
  std::vector<uint8_t> bytes = readFileBytes(path);
  REQUIRE(bytes.size() >= sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  REQUIRE(eh.e_phentsize == sizeof(Elf64_Phdr));
  REQUIRE(eh.e_phoff + uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr) <= bytes.size());
  auto listed = [](const std::vector<uint64_t> &list, uint64_t v) {
    return std::find(list.begin(), list.end(), v) != list.end();
  };
  size_t changed = 0;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    uint8_t *at = bytes.data() + eh.e_phoff + i * sizeof(Elf64_Phdr);
    Elf64_Phdr ph;
    std::memcpy(&ph, at, sizeof ph);
    if (ph.p_type != PT_LOAD)
      continue;
    if (listed(no_bytes, ph.p_vaddr))
      ph.p_filesz = 0;
    else if (listed(no_segment, ph.p_vaddr))
      ph.p_type = PT_NULL;
    else
      continue;
    std::memcpy(at, &ph, sizeof ph);
    ++changed;
  }
  REQUIRE(changed == no_bytes.size() + no_segment.size());
  writeFileBytes(copy, bytes);
}

/// Runs the registered walker `name` over `snapshot`; REQUIREs that it detects its heaps unless
/// `must_detect` is false.
inline WalkedHeap walkHeap(const Snapshot &snapshot, llvm::StringRef name,
                           bool must_detect = true) {
  WalkedHeap w = walkHeap(walkerNamed(name), snapshot);
  if (must_detect)
    REQUIRE(w.detected);
  return w;
}

/// The dump at `path` (FAILs with the reason when it cannot be opened).
inline std::unique_ptr<Snapshot> openSnapshot(const std::string &path) {
  auto snapshot = openDump(path);
  if (!snapshot)
    FAIL("cannot open " << path << ": " << llvm::toString(snapshot.takeError()));
  return std::move(*snapshot);
}

/// The "address" ("0x...") of a fixture program's manifest line.
inline uint64_t manifestAddress(const nlohmann::json &entry) {
  return *parseHexAddress(entry.at("address").get<std::string>());
}

/// The offset in the dump file behind `snapshot` of the captured process address `addr`.
inline uint64_t fileOffsetOf(const Snapshot &snapshot, uint64_t addr) {
  AddressSpace memory(snapshot);
  const MemoryRange *range = memory.rangeContaining(addr);
  REQUIRE(range != nullptr);
  return static_cast<uint64_t>(range->bytes.data() -
                               reinterpret_cast<const uint8_t *>(snapshot.file->getBufferStart())) +
         (addr - range->start);
}

/// The little-endian T at process address `addr` (REQUIREs that it is captured).
template <typename T> T readAt(const Snapshot &snapshot, uint64_t addr) {
  AddressSpace memory(snapshot);
  const uint8_t *p = memory.tryView(addr, sizeof(T));
  REQUIRE(p != nullptr);
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

/// Writes `value` at process address `addr` into the file `copy`, a byte-for-byte copy of the
/// dump behind `snapshot`, in place: a corrupted core without reading the dump into memory.
template <typename T>
void patchCopyAt(const std::string &copy, const Snapshot &snapshot, uint64_t addr, T value) {
  std::fstream file(copy, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(file.good());
  file.seekp(static_cast<std::streamoff>(fileOffsetOf(snapshot, addr)));
  file.write(reinterpret_cast<const char *>(&value), sizeof(T));
  REQUIRE(file.good());
}

} // namespace dumpsift::test
