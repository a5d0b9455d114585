// Hand-laid bytes for the tests: a buffer written field by field in either byte order (ELF cores,
// minidumps, fuzz inputs, frames), and a process memory of regions at addresses, turned into a
// Snapshot (heap images, pools). Tests lay out each format from its documentation with these,
// never from dumpsift's own structs, so that a wrong offset in the code under test fails a test
// instead of being copied into it. Header-only and free of Catch2: the fuzz seed maker uses it too.
#pragma once

#include "dumpsift/dump/snapshot.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift::test {

/// A growing byte buffer written field by field: integers in the writer's byte order (little
/// endian unless `little` is false), at the end or at an offset.
struct ByteWriter {
  explicit ByteWriter(bool little_endian = true) : little(little_endian) {}

  bool little;
  std::vector<uint8_t> bytes;

  /// Writes the `size` low bytes of `value` at `at`, growing the buffer as needed.
  ByteWriter &put(size_t at, uint64_t value, unsigned size) {
    if (bytes.size() < at + size)
      bytes.resize(at + size);
    for (unsigned i = 0; i < size; ++i)
      bytes[at + i] = static_cast<uint8_t>(value >> (little ? 8 * i : 8 * (size - 1 - i)));
    return *this;
  }
  /// Appends the `size` low bytes of `value`.
  ByteWriter &append(uint64_t value, unsigned size) { return put(bytes.size(), value, size); }
  ByteWriter &u8(uint8_t x) { return append(x, 1); }
  ByteWriter &u16(uint16_t x) { return append(x, 2); }
  ByteWriter &u32(uint32_t x) { return append(x, 4); }
  ByteWriter &u64(uint64_t x) { return append(x, 8); }
  ByteWriter &raw(llvm::ArrayRef<uint8_t> b) {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return *this;
  }
  ByteWriter &text(llvm::StringRef s) {
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  ByteWriter &zeros(size_t n) {
    bytes.insert(bytes.end(), n, 0);
    return *this;
  }
  /// Appends zero bytes up to a multiple of `alignment`.
  ByteWriter &padTo(size_t alignment) {
    return zeros((alignment - bytes.size() % alignment) % alignment);
  }
  size_t size() const { return bytes.size(); }
};

/// How a FakeMemory region appears in the snapshot.
struct FakeRegion {
  bool write = true;
  std::string file;               // the backing file, if any
  std::optional<RegionClass> cls; // default: Image when it has a file, else Anonymous
  uint64_t captured = UINT64_MAX; // bytes the dump holds, from the start (default: all)
  bool module = false;            // a module too (its file, over the region)
};

/// A process memory under construction: regions at addresses, whose bytes are those written so far
/// (little-endian integers), up to the last one; snapshot() turns it into a Snapshot.
class FakeMemory {
public:
  /// Adds the region [start, start + size), replacing one at the same start.
  void addRegion(uint64_t start, uint64_t size, FakeRegion options = {}) {
    if (regions_.count(start) == 0)
      added_.push_back(start);
    regions_[start] = Block{size, {}, std::move(options)};
  }

  void put64(uint64_t addr, uint64_t v) { putLe(addr, v, 8); }
  void put32(uint64_t addr, uint32_t v) { putLe(addr, v, 4); }
  void put16(uint64_t addr, uint16_t v) { putLe(addr, v, 2); }
  void put8(uint64_t addr, uint8_t v) { *at(addr, 1) = v; }
  void putBytes(uint64_t addr, llvm::ArrayRef<uint8_t> b) {
    if (!b.empty())
      std::memcpy(at(addr, b.size()), b.data(), b.size());
  }
  void putBytes(uint64_t addr, llvm::StringRef s) {
    putBytes(addr, llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(s.data()), s.size()));
  }

  struct Block {
    uint64_t size = 0;
    std::vector<uint8_t> bytes; // written so far: at most `size`
    FakeRegion options;
  };
  /// The regions by start address.
  std::map<uint64_t, Block> &regions() { return regions_; }
  const std::map<uint64_t, Block> &regions() const { return regions_; }
  /// The regions' start addresses in the order they were first added.
  const std::vector<uint64_t> &addedOrder() const { return added_; }

  /// A snapshot of the regions as they are now, by address: each captured up to its `captured`
  /// bytes (zeros past the last byte written), readable, writable unless said otherwise; only
  /// regions, memory and modules are filled in (the caller sets the system and the rest). The
  /// bytes are not copied: this FakeMemory must outlive the snapshot, unwritten meanwhile.
  std::unique_ptr<Snapshot> snapshot() {
    auto snap = std::make_unique<Snapshot>();
    for (auto &[start, block] : regions_) {
      const FakeRegion &o = block.options;
      Region r;
      r.start = start;
      r.size = block.size;
      r.captured = std::min(block.size, o.captured);
      r.perms.read = true;
      r.perms.write = o.write;
      r.backing_file = o.file;
      r.cls = o.cls.value_or(o.file.empty() ? RegionClass::Anonymous : RegionClass::Image);
      block.bytes.resize(r.captured);
      snap->regions.push_back(r);
      if (r.captured)
        snap->memory.push_back({start, llvm::ArrayRef<uint8_t>(block.bytes)});
      if (o.module)
        snap->modules.push_back({o.file, r.start, r.end(), ""});
    }
    return snap;
  }

private:
  void putLe(uint64_t addr, uint64_t v, unsigned n) {
    uint8_t *p = at(addr, n);
    for (unsigned i = 0; i < n; ++i)
      p[i] = static_cast<uint8_t>(v >> (8 * i));
  }
  /// The bytes at [addr, addr + len), which one region must hold (anything else is a bug in the
  /// test, and ends the program with a message).
  uint8_t *at(uint64_t addr, uint64_t len) {
    auto it = regions_.upper_bound(addr);
    if (it == regions_.begin() || addr - std::prev(it)->first + len > std::prev(it)->second.size)
      llvm::report_fatal_error(llvm::Twine("FakeMemory: no region holds the write at 0x") +
                               llvm::utohexstr(addr));
    --it;
    Block &r = it->second;
    const uint64_t end = addr - it->first + len;
    if (r.bytes.size() < end)
      r.bytes.resize(end);
    return r.bytes.data() + (addr - it->first);
  }

  std::map<uint64_t, Block> regions_;
  std::vector<uint64_t> added_;
};

} // namespace dumpsift::test
