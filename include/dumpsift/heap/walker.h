// Heap walkers: one per allocator or runtime. Each finds its heaps in a snapshot (detect) and
// reports every allocation it knows (walk). All walkers are listed in one registry
// (src/heap/registry.cpp); adding an allocator is one file plus one line there.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"
#include "dumpsift/support/diagnostics.h"
#include "dumpsift/support/parallel.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

enum class AllocState : uint8_t { Used, Free, Unknown };
llvm::StringRef stateName(AllocState state); // "used", "free", "unknown"

/// Facts about a managed array object (CoreCLR/Mono), where the allocation is one.
struct ManagedArray {
  uint64_t method_table = 0; // MethodTable (CoreCLR) or vtable (Mono) address
  uint64_t length = 0;       // element count
  uint32_t element_size = 0;
  bool large_object_heap = false;
  std::string type_name; // "byte[]" where known, else empty
  /// Where the object lives, where known: "soh", "loh", "poh" (CoreCLR), "los" (Mono); else empty.
  std::string heap_kind;
};

/// One allocation as its allocator sees it. Compact: a walker may emit millions.
struct Allocation {
  uint64_t address = 0; // what malloc returned / the object's start (its MethodTable word)
  uint64_t size = 0;    // malloc_usable_size / the object's size
  uint64_t chunk_address =
      0; // the allocator's block start (glibc chunk header); == address if none
  uint64_t chunk_size = 0;
  uint64_t arena = 0; // owning arena/heap id (glibc: malloc_state address), 0 if none
  /// Offset from `address` where the payload (the bytes a program wrote) starts: 0 for malloc,
  /// 16 for a CoreCLR array, 32 for a Mono array.
  uint32_t data_offset = 0;
  AllocState state = AllocState::Unknown;
  bool mmapped = false;
  /// Set by a walker whose sizes are size classes (HeapWalkResult::size_classes) on the
  /// allocations whose size is whole pages instead: tcmalloc's large allocations and free spans.
  bool whole_pages = false;
  /// The object holds no pointers by its allocator's record (Go: a noscan span, where the
  /// backing arrays of []byte and of strings live).
  bool noscan = false;
  /// Size-class allocators: the allocation's size class, as the allocator numbers them (Go: the
  /// span's size class, 0 for a large object in a span of its own); -1 when it has none.
  int32_t size_class = -1;
  std::optional<ManagedArray> managed;
};

/// A piece of memory a walker understood: an arena's heap, an mmapped chunk run, a GC segment.
struct HeapArea {
  std::string kind; // "main-heap", "thread-heap", "mmapped", "loh", ...
  uint64_t start = 0;
  uint64_t size = 0;
  uint64_t arena = 0;
};

struct HeapStats {
  uint64_t used_count = 0, used_bytes = 0;
  uint64_t free_count = 0, free_bytes = 0;
  uint64_t unknown_count = 0, unknown_bytes = 0;
  void add(const Allocation &a);
  void add(const HeapStats &other); // the sums of both
};

/// What one walker found in one snapshot.
struct HeapWalkResult {
  std::string walker; // registry name: "glibc", "coreclr", "mono"
  /// Walker-specific facts for the report (e.g. "glibc_layout": "2.35+"), as key/value strings.
  std::vector<std::pair<std::string, std::string>> facts;
  std::vector<HeapArea> areas; // sorted by start
  HeapStats stats;
  /// True when every allocation's size is one of the allocator's size classes (jemalloc,
  /// tcmalloc, mimalloc, musl, Go), except those marked whole_pages, so that a size group is a
  /// size class: the summary names it "jemalloc size class 163,840".
  bool size_classes = false;
};

/// Called once per allocation. Within one heap area (HeapArea) the calls come from one thread, in
/// address order. With WalkOptions::threads other than 1 a walker may walk several areas at once
/// and call the sink from several threads concurrently (workerIndex() of
/// dumpsift/support/parallel.h tells them apart): the sink must then be thread-safe, and must not
/// depend on the order of calls across areas (gather per thread, then sort by address: the areas
/// of one walker never overlap).
using AllocationSink = llvm::function_ref<void(const Allocation &)>;

/// How to walk.
struct WalkOptions {
  /// Threads to walk on: 0 for one per core. A walker that walks its areas in parallel (glibc)
  /// takes them in address order from a shared counter, so the dump is read front to back; the
  /// others walk on the calling thread whatever this says. The result (areas, stats, facts,
  /// warnings and their order) is the same for every thread count.
  unsigned threads = 1;
  /// Called now and then (about ten times a second) on the thread that called walk while other
  /// threads walk, so that it can show progress; never called concurrently with itself.
  llvm::function_ref<void()> waiting = nothingToShow;

private:
  static void nothingToShow() {}
};

class HeapWalker {
public:
  virtual ~HeapWalker() = default;
  /// Stable registry name, used in the report and by `--walker`.
  virtual llvm::StringRef name() const = 0;
  /// Cheap test: does this process hold heaps of this kind? Never fails.
  virtual bool detect(const AddressSpace &memory) const = 0;
  /// Reports every allocation found to `sink` (see AllocationSink for the order, and for calls
  /// from several threads). Damage local to one heap (bad size, loop, chunk past its heap) is a
  /// warning in `diags` and the walk goes on with the next heap; an Error is returned only when
  /// nothing can be walked at all.
  virtual llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                              Diagnostics &diags,
                                              const WalkOptions &options) const = 0;
  /// The walk on the calling thread only (WalkOptions' defaults).
  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags) const {
    return walk(memory, sink, diags, WalkOptions{});
  }
};

/// Every known walker, in a fixed order.
const std::vector<std::unique_ptr<HeapWalker>> &heapWalkers();

} // namespace dumpsift
