// Shared pieces of the managed-heap walkers: which memory to scan, a fixed-size
// verdict cache, and names for element types. Private to src/heap/managed.
#pragma once

#include "dumpsift/dump/address_space.h"

#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dumpsift::managed {

/// One captured, contiguous piece of memory the walkers scan.
struct ScanRange {
  uint64_t start = 0;
  const uint8_t *bytes = nullptr;
  uint64_t size = 0;
  const Region *region = nullptr;
  uint64_t end() const { return start + size; }
};

/// The captured pieces of the regions a managed heap can live in: writable (or of unknown
/// protection), not backed by a file, not an image or a thread stack. In address order. Empty when
/// the dump records no regions at all (then every captured range is returned, since nothing tells
/// heap from non-heap).
std::vector<ScanRange> heapCandidateRanges(const AddressSpace &memory);

/// Lowest and highest captured addresses: a pointer outside them cannot be followed.
struct CapturedBounds {
  uint64_t lo = 0, hi = 0;
  explicit CapturedBounds(const Snapshot &snapshot);
  bool contains(uint64_t addr) const { return addr >= lo && addr < hi; }
};

/// A direct-mapped cache of per-address verdicts (e.g. "is this a MethodTable, and which"):
/// fixed size, no allocation per lookup; a collision just evicts. `Value` must be cheap to copy.
template <typename Value, unsigned Bits = 14> class VerdictCache {
public:
  /// The cached verdict for `key`, or nullptr when not cached.
  const Value *find(uint64_t key) const {
    const Slot &s = slots_[index(key)];
    return s.used && s.key == key ? &s.value : nullptr;
  }
  void put(uint64_t key, const Value &value) { slots_[index(key)] = Slot{key, value, true}; }

private:
  struct Slot {
    uint64_t key = 0;
    Value value{};
    bool used = false;
  };
  static size_t index(uint64_t key) { return ((key >> 3) * 0x9E3779B97F4A7C15ull) >> (64 - Bits); }
  std::vector<Slot> slots_ = std::vector<Slot>(size_t(1) << Bits);
};

inline uint64_t alignUp8(uint64_t v) {
  return (v + 7) & ~uint64_t(7);
}

/// "System.Byte": the framework's full name of the ECMA-335 element type `element_type` of a
/// primitive, string or object (Mono's MonoTypeEnum is the same numbering); "" for the others.
llvm::StringRef elementTypeFullName(uint8_t element_type);

/// True for the ECMA-335 element types of primitives (bool to double, native ints): an array of
/// them holds no reference (Mono's MonoTypeEnum is the same numbering).
bool primitiveElementType(uint8_t element_type);

/// "byte[]"-style C# name of an array whose elements have the ECMA-335 element type `et`
/// (ELEMENT_TYPE_U1 = 5 -> "byte[]"); empty when `et` is not a primitive or string/object.
llvm::StringRef csharpArrayName(uint8_t element_type);

} // namespace dumpsift::managed
