// Finding a Go runtime's heap in a dump: the program's Go version, runtime.mheap_ (by symbol or
// by shape), and the layout its structures have. Private to src/heap/go.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/module_file.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/diagnostics.h"
#include "go_layout.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift::golang {

/// The Go version a program's build info states ("go1.19.8" -> minor 19), where the dump holds it.
struct GoVersion {
  std::string text; // "go1.19.8"; empty when not found
  unsigned minor = 0;
};

/// The `.go.buildinfo` of the executable, read from the dump: its version string. Empty when the
/// executable's writable data is not in the dump or holds no build info of Go 1.18 or later.
GoVersion findGoVersion(const AddressSpace &memory);

/// True when the dump holds a Go build info block (what `detect` asks).
bool hasGoBuildInfo(const AddressSpace &memory);

/// The fields of one mspan the walker uses, read with a SpanLayout.
struct Span {
  uint64_t address = 0; // the mspan struct
  uint64_t start = 0, npages = 0;
  uint64_t freeindex = 0, nelems = 0;
  uint64_t alloc_bits = 0, gcmark_bits = 0;
  uint32_t sweepgen = 0;
  uint16_t alloc_count = 0;
  uint8_t spanclass = 0, state = 0;
  uint64_t elemsize = 0;

  unsigned sizeClass() const { return spanclass >> 1; }
  bool noscan() const { return spanclass & 1; }
  uint64_t bytes() const { return npages * kPageSize; }
};

/// Reads the mspan at `address`; false when the dump does not hold it.
bool readSpan(const AddressSpace &memory, const SpanLayout &layout, uint64_t address, Span &out);

/// Empty when `s` (state in use) is consistent with the runtime's rules for its size class: a
/// known class whose element size and pages match, element counts that fit the span, a large
/// object's span holding one object of the span's size. Else why not.
std::string inUseSpanProblem(const Span &s, bool inline_mark_bits);

/// Where the heap is, as found.
struct HeapRoots {
  const Layout *layout = nullptr;
  uint64_t allspans = 0;    // address of mheap_.allspans (the slice header)
  uint64_t mheap = 0;       // runtime.mheap_ when a symbol gave it, else 0
  uint64_t arenas_l2 = 0;   // mheap_.arenas[0]: the [1<<22]*heapArena table
  uint64_t all_arenas = 0;  // mheap_.allArenas: {ptr, len, cap} of arena indices
  uint64_t arena_spans = 0; // offset of heapArena.spans
  uint32_t sweepgen = 0;    // mheap_.sweepgen
  std::string found_by;     // how mheap_ was found, for the report
  GoVersion version;
};

/// Finds mheap_ and the layout of the runtime's structures: through the executable's symbol
/// table when the executable is at hand and is the one that ran (Snapshot::executable_file, or
/// the path the dump names when its build ID matches), else by the shape of mheap_.allspans in
/// the executable's writable memory. Every candidate is checked against the spans it lists and the
/// arena table that maps their pages back to them. Fails when no candidate holds.
llvm::Expected<HeapRoots> findHeap(const AddressSpace &memory, Diagnostics &diags);

/// The address of `symbol` in the dumped process, from the executable's symbol table; see
/// findHeap for which file is used. Empty (with the reason in `why`) when there is no usable
/// executable or no such symbol; a file whose build ID differs from the dump's is a warning.
std::optional<uint64_t> executableSymbol(const AddressSpace &memory, llvm::StringRef symbol,
                                         std::string &source, std::string &why, Diagnostics &diags);

/// The executable's file when it is on this machine and is the build that ran (see findHeap for
/// which file), else nullptr with the reason in `why`; `source` names the file used. A file
/// whose build ID differs from the dump's, or a file the user named that is missing, is a
/// warning in `diags` when given.
std::unique_ptr<ModuleFile> openExecutable(const AddressSpace &memory, std::string &source,
                                           std::string &why, Diagnostics *diags);

/// An in-use span of heap objects: `count` objects of `size` bytes from `start`, each one's data
/// `data_offset` bytes in (Go 1.22+'s malloc header); `noscan` when they hold no pointer.
struct ObjectSpan {
  uint64_t start = 0, size = 0, count = 0;
  uint32_t data_offset = 0;
  bool noscan = false;
};

/// The object finder of a Go heap (go_objects.cpp): it names an object by the type its DWARF
/// gives it, propagated from the executable's typed globals along typed pointers, on its first
/// question. `spans` by start.
std::shared_ptr<ObjectFinder> makeGoObjectFinder(const AddressSpace &memory,
                                                 std::vector<ObjectSpan> spans);

} // namespace dumpsift::golang
