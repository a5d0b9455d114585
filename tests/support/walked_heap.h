// One heap walker's walk of a snapshot, kept whole for a test to look at: every allocation (and
// by address), the result, the warnings. Header-only; for the heap walker tests.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dumpsift::test {

/// The dump at `path` (a test failure when it cannot be opened).
inline std::unique_ptr<Snapshot> openDumpOrFail(const std::string &path) {
  auto snap = openDump(path);
  if (!snap)
    FAIL("cannot open " << path << ": " << llvm::toString(snap.takeError()));
  return std::move(*snap);
}

/// The registered walker named `name` (a test failure when there is none).
inline const HeapWalker &walkerNamed(llvm::StringRef name) {
  for (const auto &w : heapWalkers())
    if (w->name() == name)
      return *w;
  FAIL("no walker named " << name.str() << " in the registry");
  return *heapWalkers().front();
}

struct WalkedHeap {
  std::vector<Allocation> allocations; // in report order
  std::map<uint64_t, size_t> by_address;
  HeapWalkResult result;
  std::vector<Diagnostic> warnings;
  std::string error; // the walk's error, when it failed
  bool detected = false;
  double seconds = 0; // the walk's wall time

  /// The allocation at `address`, or nullptr.
  const Allocation *at(uint64_t address) const {
    auto it = by_address.find(address);
    return it == by_address.end() ? nullptr : &allocations[it->second];
  }
  /// The value of fact `key`, or "".
  std::string fact(const std::string &key) const {
    for (const auto &[k, v] : result.facts)
      if (k == key)
        return v;
    return "";
  }
  /// True when a warning's "where: message" contains `text`.
  bool warned(const std::string &text) const {
    for (const Diagnostic &d : warnings)
      if ((d.where + ": " + d.message).find(text) != std::string::npos)
        return true;
    return false;
  }
};

/// Runs `walker`'s detect and walk over `snap`; each warning is also logged for a failing check.
inline WalkedHeap walkHeap(const HeapWalker &walker, const Snapshot &snap) {
  AddressSpace memory(snap);
  WalkedHeap w;
  w.detected = walker.detect(memory);
  Diagnostics diags;
  const auto t0 = std::chrono::steady_clock::now();
  auto result = walker.walk(
      memory,
      [&](const Allocation &a) {
        w.by_address[a.address] = w.allocations.size();
        w.allocations.push_back(a);
      },
      diags);
  w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (result)
    w.result = std::move(*result);
  else
    w.error = llvm::toString(result.takeError());
  w.warnings = diags.warnings();
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  return w;
}

} // namespace dumpsift::test
