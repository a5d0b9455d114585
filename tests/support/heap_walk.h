// One heap walker's walk of a whole snapshot, kept for the tests to look at (header-only: it
// needs the heap layer, which dumpsift_test_support does not link).
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dumpsift::test {

/// What one walk produced: the allocations in report order, indexed by address.
struct WalkedHeap {
  std::vector<Allocation> allocations;
  std::map<uint64_t, size_t> by_address;
  HeapWalkResult result;
  std::vector<Diagnostic> warnings;
  std::string error; // the walk's error, empty when it succeeded
  double seconds = 0;

  const Allocation *at(uint64_t address) const {
    auto it = by_address.find(address);
    return it == by_address.end() ? nullptr : &allocations[it->second];
  }
  std::string fact(const std::string &key) const {
    for (const auto &[k, v] : result.facts)
      if (k == key)
        return v;
    return "";
  }
  bool warned(const std::string &text) const {
    for (const Diagnostic &d : warnings)
      if ((d.where + ": " + d.message).find(text) != std::string::npos)
        return true;
    return false;
  }
};

/// The dump at `path` (FAILs when it cannot be opened).
inline std::unique_ptr<Snapshot> openCore(const std::string &path) {
  auto snap = openDump(path);
  if (!snap)
    FAIL("cannot open " << path << ": " << llvm::toString(snap.takeError()));
  return std::move(*snap);
}

/// The "address" ("0x...") of a fixture program's manifest line.
inline uint64_t manifestAddress(const nlohmann::json &entry) {
  return *parseHexAddress(entry.at("address").get<std::string>());
}

/// The registered walker called `name` (FAILs when there is none).
inline const HeapWalker &registeredWalker(llvm::StringRef name) {
  for (const auto &w : heapWalkers())
    if (w->name() == name)
      return *w;
  FAIL("no " << name.str() << " walker in the registry");
  return *heapWalkers().front();
}

/// Runs the registered walker `name` over `snap`; REQUIREs that it detects the snapshot.
inline WalkedHeap walkHeap(const Snapshot &snap, llvm::StringRef name) {
  const HeapWalker &walker = registeredWalker(name);
  AddressSpace memory(snap);
  Diagnostics diags;
  WalkedHeap w;
  REQUIRE(walker.detect(memory));
  auto t0 = std::chrono::steady_clock::now();
  auto result = walker.walk(
      memory,
      [&](const Allocation &a) {
        w.by_address[a.address] = w.allocations.size();
        w.allocations.push_back(a);
      },
      diags);
  w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!result)
    w.error = llvm::toString(result.takeError());
  else
    w.result = std::move(*result);
  w.warnings = diags.warnings();
  return w;
}

} // namespace dumpsift::test
