// Checked reads of the dumped process's memory. Tells unmapped, not-captured and captured apart;
// never reads outside the dump file.
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "dumpsift/dump/words.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>

namespace dumpsift {

enum class Fault { None, Unmapped, NotCaptured };

class AddressSpace {
public:
  /// A byte order: llvm::support::little or llvm::support::big.
  using Endian = llvm::support::endianness;

  /// The snapshot must outlive the address space.
  explicit AddressSpace(const Snapshot &snapshot);

  const Snapshot &snapshot() const { return snapshot_; }

  /// Zero-copy view of [addr, addr+len) when the whole range is captured in one memory range, or
  /// in ranges that follow each other both in the address space and in the dump file; nullptr
  /// otherwise. The fast path for walkers.
  const uint8_t *tryView(uint64_t addr, uint64_t len) const;

  /// Like tryView, but fails with an error that names the address and the reason.
  llvm::Expected<llvm::ArrayRef<uint8_t>> view(uint64_t addr, uint64_t len) const;

  /// Copies [addr, addr+out.size()) into `out`; may span adjacent memory ranges. Fails with the
  /// first faulting address and why.
  llvm::Error read(uint64_t addr, llvm::MutableArrayRef<uint8_t> out) const;

  /// The process's words at `addr`, in byte order `order` (little-endian unless said): the value
  /// when the dump holds every byte of it, else nullopt. With tryView and the decoders of
  /// words.h, the one way every walker reads dumped memory.
  std::optional<uint8_t> readU8(uint64_t addr) const {
    const uint8_t *p = tryView(addr, 1);
    return p ? std::optional<uint8_t>(*p) : std::nullopt;
  }
  std::optional<uint16_t> readU16(uint64_t addr, Endian order = llvm::support::little) const {
    return readWord<uint16_t>(addr, order);
  }
  std::optional<uint32_t> readU32(uint64_t addr, Endian order = llvm::support::little) const {
    return readWord<uint32_t>(addr, order);
  }
  std::optional<uint64_t> readU64(uint64_t addr, Endian order = llvm::support::little) const {
    return readWord<uint64_t>(addr, order);
  }
  /// The same, stored in `out` for conditions that chain reads: false (and `out` unchanged) when
  /// the dump does not hold every byte.
  bool readU16(uint64_t addr, uint16_t &out, Endian order = llvm::support::little) const {
    return store(readU16(addr, order), out);
  }
  bool readU32(uint64_t addr, uint32_t &out, Endian order = llvm::support::little) const {
    return store(readU32(addr, order), out);
  }
  bool readU64(uint64_t addr, uint64_t &out, Endian order = llvm::support::little) const {
    return store(readU64(addr, order), out);
  }
  /// The process's pointer at `addr`: as wide and in the byte order of its words (SystemInfo);
  /// nullopt too when its pointers are neither 4 nor 8 bytes.
  std::optional<uint64_t> readPointer(uint64_t addr) const {
    const SystemInfo &system = snapshot_.system;
    if (system.pointer_size != 4 && system.pointer_size != 8)
      return std::nullopt;
    const uint8_t *p = tryView(addr, system.pointer_size);
    if (!p)
      return std::nullopt;
    return readUnsigned(p, system.pointer_size, system.byteOrder());
  }
  /// The NUL-terminated string at `addr`, without its NUL: zero-copy, when the dump holds it and
  /// its NUL lies within `max_bytes` bytes (so it is at most max_bytes - 1 long); else nullopt.
  std::optional<llvm::StringRef> readCString(uint64_t addr, uint64_t max_bytes) const;

  /// Why the byte at `addr` cannot be read (Fault::None when it can).
  Fault classify(uint64_t addr) const;

  /// The memory range holding `addr`, or nullptr.
  const MemoryRange *rangeContaining(uint64_t addr) const;
  /// The region holding `addr`, or nullptr.
  const Region *regionContaining(uint64_t addr) const;

  /// Captured bytes from `addr` on that one view can cover (see tryView), at most `limit`; 0 when
  /// `addr` is not captured.
  uint64_t capturedRunFrom(uint64_t addr, uint64_t limit = UINT64_MAX) const;

  /// Says that the captured bytes of [addr, addr+len) will not be read again soon, so that the
  /// whole pages inside them leave this process's resident memory (madvise MADV_DONTNEED; the
  /// file's pages stay in the page cache and a later read maps them back in). Keeps the resident
  /// size of a run over a large dump bounded. No effect unless the dump is a memory-mapped file;
  /// never changes what a read returns; views taken before stay valid.
  void releasePages(uint64_t addr, uint64_t len) const;

  /// Says that the captured bytes of [addr, addr+len) are about to be read, each page of them
  /// (an object walk over a dense heap): the kernel starts reading their pages from the file in
  /// large requests now (madvise MADV_WILLNEED) instead of one fault at a time under
  /// Access::Random. Whole pages inside the range only; no effect unless the dump is a
  /// memory-mapped file; never changes what a read returns.
  void willRead(uint64_t addr, uint64_t len) const;

  /// How a phase is about to read the dump, for the kernel's readahead: Random while walking
  /// chunk headers (no readahead around each header of a dump that is not in the page cache),
  /// Sequential while scanning memory front to back, Normal otherwise. Applies to the whole
  /// file mapping (madvise); no effect unless the dump is a memory-mapped file; never changes
  /// what a read returns.
  enum class Access { Normal, Random, Sequential };
  void adviseAccess(Access access) const;

private:
  /// madvise(`advice`) over the whole file pages that hold the captured bytes of [addr, addr+len).
  void adviseRange(uint64_t addr, uint64_t len, int advice) const;
  template <typename T> static bool store(std::optional<T> value, T &out) {
    if (value)
      out = *value;
    return value.has_value();
  }
  template <typename T> std::optional<T> readWord(uint64_t addr, Endian order) const {
    const uint8_t *p = tryView(addr, sizeof(T));
    if (!p)
      return std::nullopt;
    return static_cast<T>(readUnsigned(p, sizeof(T), order));
  }

  const Snapshot &snapshot_;
};

llvm::StringRef faultName(Fault fault); // "unmapped", "not captured"

/// Bytes of address space released at once behind a reader: each madvise call that unmaps pages
/// makes the kernel flush the TLBs of the process's other threads, so releases are batched.
constexpr uint64_t kReleaseBatchBytes = 64ull << 20;

/// Releases the dump's pages behind a reader that moves up through [from, end) (see
/// AddressSpace::releasePages): memory below the highest address passed goes in batches of at
/// least kReleaseBatchBytes, and the rest up to `end` when the object is destroyed. Reads map
/// the page-cache pages around them (fault-around, whole large folios), so without this the
/// resident set grows with the memory walked even where only headers are read.
class ReleaseBehind {
public:
  ReleaseBehind(const AddressSpace &memory, uint64_t from, uint64_t end)
      : memory_(memory), released_to_(from), end_(end) {}
  ReleaseBehind(const ReleaseBehind &) = delete;
  ReleaseBehind &operator=(const ReleaseBehind &) = delete;
  ~ReleaseBehind() {
    if (end_ > released_to_)
      memory_.releasePages(released_to_, end_ - released_to_);
  }

  /// Says that the reader is done with everything below `addr`.
  void passed(uint64_t addr) {
    if (addr > released_to_ && addr - released_to_ >= kReleaseBatchBytes) {
      memory_.releasePages(released_to_, addr - released_to_);
      released_to_ = addr;
    }
  }

private:
  const AddressSpace &memory_;
  uint64_t released_to_;
  uint64_t end_;
};

/// Bytes of the dump a ReadAhead keeps requested ahead of its reader.
constexpr uint64_t kReadAheadBytes = 32ull << 20;

/// Asks for the dump's pages ahead of a reader that moves up through [from, end) reading every
/// page of it (see AddressSpace::willRead): from the reader's position, the next kReadAheadBytes
/// are always requested, in requests of at least half that. On a dump that is not in the page
/// cache the kernel then reads the file in large sequential requests while the reader works,
/// instead of one page per fault (the walks run under Access::Random); on a cached dump it costs
/// one madvise per 16 MiB passed.
class ReadAhead {
public:
  ReadAhead(const AddressSpace &memory, uint64_t from, uint64_t end)
      : memory_(memory), requested_to_(from), end_(end) {
    reached(from);
  }
  ReadAhead(const ReadAhead &) = delete;
  ReadAhead &operator=(const ReadAhead &) = delete;

  /// Says that the reader is at `addr`.
  void reached(uint64_t addr) {
    if (requested_to_ >= end_ || addr + kReadAheadBytes / 2 < requested_to_)
      return;
    const uint64_t to = end_ - addr > kReadAheadBytes ? addr + kReadAheadBytes : end_;
    if (to > requested_to_) {
      memory_.willRead(requested_to_, to - requested_to_);
      requested_to_ = to;
    }
  }

private:
  const AddressSpace &memory_;
  uint64_t requested_to_;
  uint64_t end_;
};

} // namespace dumpsift
