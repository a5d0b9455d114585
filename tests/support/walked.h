// One heap walker's walk of a snapshot, kept for a test to look at: the allocations by address,
// the result's facts, the warnings, the error when the walk failed, and how long it took.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace dumpsift::test {

/// The registered walker named `name` (FAILs when there is none).
inline const HeapWalker &walkerNamed(llvm::StringRef name) {
  for (const auto &w : heapWalkers())
    if (w->name() == name)
      return *w;
  FAIL("no walker named " << name.str() << " in the registry");
  return *heapWalkers().front();
}

struct Walked {
  std::vector<Allocation> allocations; // in report order
  std::map<uint64_t, size_t> by_address;
  HeapWalkResult result;
  std::vector<Diagnostic> warnings;
  std::string error; // the walk's error; empty when it succeeded
  double seconds = 0;

  /// The allocation at `address`, or nullptr.
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
  /// The fact `key`, or "".
  std::string fact(const std::string &key) const {
    for (const auto &[k, v] : result.facts)
      if (k == key)
        return v;
    return "";
  }
  /// The fact `key` read as a number (0 when absent).
  uint64_t count(const std::string &key) const { return std::stoull("0" + fact(key)); }
  /// True when a warning's "where: message" contains `text`.
  bool warned(const std::string &text) const {
    for (const Diagnostic &d : warnings)
      if ((d.where + ": " + d.message).find(text) != std::string::npos)
        return true;
    return false;
  }
};

/// Walks `snapshot` with `walker` alone (without asking detect); every warning goes to Catch's
/// log of the test.
inline Walked walkWith(const HeapWalker &walker, const Snapshot &snapshot) {
  AddressSpace memory(snapshot);
  Diagnostics diags;
  Walked w;
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

} // namespace dumpsift::test
