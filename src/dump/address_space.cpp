#include "dumpsift/dump/address_space.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"

#include <algorithm>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace dumpsift {

namespace {

template <typename T> const T *findContaining(const std::vector<T> &items, uint64_t addr) {
  auto it = std::upper_bound(items.begin(), items.end(), addr,
                             [](uint64_t a, const T &item) { return a < item.start; });
  if (it == items.begin())
    return nullptr;
  --it;
  return addr < it->end() ? &*it : nullptr;
}

/// Ranges one view may join: a hostile dump of many adjacent ranges costs no more than this.
constexpr size_t kMaxJoinedRanges = 1024;

/// How many bytes from `addr` (inside `*range`) on, up to `limit`, one view can cover: the rest of
/// the range, then each range after it that starts where the one before ends and whose bytes
/// follow that one's bytes in the dump file (adjacent mappings written one after the other, as
/// gcore and the kernel write them: a Go heap arena is several mappings, and its large objects
/// straddle them).
uint64_t contiguousRun(const std::vector<MemoryRange> &memory, const MemoryRange *range,
                       uint64_t addr, uint64_t limit) {
  uint64_t run = range->end() - addr;
  const size_t left = static_cast<size_t>(memory.data() + memory.size() - range);
  const MemoryRange *end = range + std::min(left, kMaxJoinedRanges);
  for (const MemoryRange *next = range + 1;
       run < limit && next < end && next->start == next[-1].end() &&
       next->bytes.data() == next[-1].bytes.data() + next[-1].bytes.size();
       ++next)
    run += next->bytes.size();
  return std::min(run, limit);
}

/// The page size madvise works in.
uintptr_t pageSize() {
  static const uintptr_t page = [] {
    long size = sysconf(_SC_PAGESIZE);
    return size > 0 ? static_cast<uintptr_t>(size) : uintptr_t(4096);
  }();
  return page;
}

} // namespace

llvm::StringRef faultName(Fault fault) {
  switch (fault) {
  case Fault::None:
    return "readable";
  case Fault::Unmapped:
    return "unmapped";
  case Fault::NotCaptured:
    return "not captured in the dump";
  }
  return "unknown";
}

AddressSpace::AddressSpace(const Snapshot &snapshot) : snapshot_(snapshot) {}

const MemoryRange *AddressSpace::rangeContaining(uint64_t addr) const {
  return findContaining(snapshot_.memory, addr);
}

const Region *AddressSpace::regionContaining(uint64_t addr) const {
  return findContaining(snapshot_.regions, addr);
}

const uint8_t *AddressSpace::tryView(uint64_t addr, uint64_t len) const {
  const MemoryRange *range = rangeContaining(addr);
  if (!range ||
      (len > range->end() - addr && contiguousRun(snapshot_.memory, range, addr, len) < len))
    return nullptr;
  return range->bytes.data() + (addr - range->start);
}

Fault AddressSpace::classify(uint64_t addr) const {
  if (rangeContaining(addr))
    return Fault::None;
  return regionContaining(addr) ? Fault::NotCaptured : Fault::Unmapped;
}

uint64_t AddressSpace::capturedRunFrom(uint64_t addr, uint64_t limit) const {
  const MemoryRange *range = rangeContaining(addr);
  return range ? contiguousRun(snapshot_.memory, range, addr, limit) : 0;
}

std::optional<llvm::StringRef> AddressSpace::readCString(uint64_t addr, uint64_t max_bytes) const {
  const uint64_t run = capturedRunFrom(addr, max_bytes);
  const char *p = run ? reinterpret_cast<const char *>(tryView(addr, run)) : nullptr;
  const void *nul = p ? std::memchr(p, 0, run) : nullptr;
  if (!nul)
    return std::nullopt;
  return llvm::StringRef(p, static_cast<const char *>(nul) - p);
}

void AddressSpace::releasePages(uint64_t addr, uint64_t len) const {
  adviseRange(addr, len, MADV_DONTNEED);
}

/// The most bytes of one MADV_WILLNEED: no more than a device's usual largest request.
constexpr uintptr_t kWillNeedChunk = 512u << 10;

void AddressSpace::willRead(uint64_t addr, uint64_t len) const {
  adviseRange(addr, len, MADV_WILLNEED);
}

void AddressSpace::adviseRange(uint64_t addr, uint64_t len, int advice) const {
  const llvm::MemoryBuffer *file = snapshot_.file.get();
  if (!file || file->getBufferKind() != llvm::MemoryBuffer::MemoryBuffer_MMap || len == 0)
    return;
  const uintptr_t page = pageSize();
  const uintptr_t file_begin = reinterpret_cast<uintptr_t>(file->getBufferStart());
  const uintptr_t file_end = reinterpret_cast<uintptr_t>(file->getBufferEnd());
  uint64_t end = len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
  for (uint64_t cursor = addr; cursor < end;) {
    const MemoryRange *range = rangeContaining(cursor);
    if (!range) {
      // Skip to the next captured range, if any starts before `end`.
      auto next = std::upper_bound(snapshot_.memory.begin(), snapshot_.memory.end(), cursor,
                                   [](uint64_t a, const MemoryRange &m) { return a < m.start; });
      if (next == snapshot_.memory.end() || next->start >= end)
        return;
      cursor = next->start;
      continue;
    }
    const uint64_t stop = std::min(end, range->end());
    const auto *first = range->bytes.data() + (cursor - range->start);
    auto from = reinterpret_cast<uintptr_t>(first);
    auto to = from + (stop - cursor);
    // Whole pages inside the range only: the partly covered ones may hold a neighbour's bytes.
    from = std::max((from + page - 1) & ~(page - 1), file_begin);
    to = std::min(to & ~(page - 1), file_end & ~(page - 1));
    // Linux reads at most the device's read-ahead size (or its largest request) for one
    // MADV_WILLNEED and drops the rest of the range (mm/readahead.c, force_page_cache_ra): one
    // call per kWillNeedChunk gets all of it read.
    const uintptr_t step = advice == MADV_WILLNEED ? kWillNeedChunk : UINTPTR_MAX;
    for (uintptr_t at = from; at < to; at += std::min<uintptr_t>(step, to - at))
      (void)madvise(reinterpret_cast<void *>(at), std::min<uintptr_t>(step, to - at), advice);
    cursor = stop;
  }
}

void AddressSpace::adviseAccess(Access access) const {
  const llvm::MemoryBuffer *file = snapshot_.file.get();
  if (!file || file->getBufferKind() != llvm::MemoryBuffer::MemoryBuffer_MMap)
    return;
  const int advice = access == Access::Random       ? MADV_RANDOM
                     : access == Access::Sequential ? MADV_SEQUENTIAL
                                                    : MADV_NORMAL;
  // The mapping starts on a page (the file is mapped from offset 0); its last page may be partial.
  const auto begin = reinterpret_cast<uintptr_t>(file->getBufferStart());
  const auto end = reinterpret_cast<uintptr_t>(file->getBufferEnd());
  const uintptr_t page = pageSize();
  const uintptr_t from = begin & ~(page - 1);
  (void)madvise(reinterpret_cast<void *>(from), end - from, advice);
}

llvm::Expected<llvm::ArrayRef<uint8_t>> AddressSpace::view(uint64_t addr, uint64_t len) const {
  if (const uint8_t *p = tryView(addr, len))
    return llvm::ArrayRef<uint8_t>(p, len);
  uint64_t run = capturedRunFrom(addr);
  uint64_t bad = run == 0 ? addr : addr + run;
  return createError("cannot read " + llvm::Twine(len) + " bytes at " + hexAddress(addr) + ": " +
                     hexAddress(bad) + " is " + faultName(classify(bad)));
}

llvm::Error AddressSpace::read(uint64_t addr, llvm::MutableArrayRef<uint8_t> out) const {
  uint64_t done = 0;
  while (done < out.size()) {
    uint64_t cursor = addr + done;
    if (cursor < addr) // wrapped past the top of the address space
      return createError("read at " + hexAddress(addr) + " wraps around the address space");
    const MemoryRange *range = rangeContaining(cursor);
    if (!range)
      return createError("cannot read " + llvm::Twine(out.size()) + " bytes at " +
                         hexAddress(addr) + ": " + hexAddress(cursor) + " is " +
                         faultName(classify(cursor)));
    uint64_t n = std::min<uint64_t>(out.size() - done, range->end() - cursor);
    std::memcpy(out.data() + done, range->bytes.data() + (cursor - range->start), n);
    done += n;
  }
  return llvm::Error::success();
}

} // namespace dumpsift
