// The reference pass: every captured writable word read once, each that points into a block of
// the probe directory classed by where it lies. Internal to src/holders.
#pragma once

#include "directory.h"
#include "dumpsift/dump/address_space.h"

#include "llvm/ADT/DenseMap.h"

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

namespace dumpsift::holders {

/// The live stacks the runtimes keep in their own areas (HeapWalkResult::live_stacks), of every
/// walker result, by start. A Stack slot's `where` at or past the snapshot's thread count is that
/// count plus the index of its stack here.
std::vector<HeapArea> runtimeStacks(llvm::ArrayRef<HeapWalkResult> heaps);

/// Where a word lies, as the pass classes it.
enum class SlotClass : uint8_t {
  Drop,     // no reference of the program: bookkeeping, free memory, noscan words, dead stack
  Heap,     // inside a listed block (`node`)
  Unlisted, // inside a walker's area but in no block the directory holds (`where`: the heap)
  Stack,    // a thread's live stack (`where`: the thread's index; past the threads, a runtime's
            // stack: runtimeStacks)
  Global,   // a module's image (`where`: the module's index in the snapshot)
  Other,    // other writable memory
};

/// The kind of holder a slot of class `cls` is (Heap for Heap and Unlisted).
HolderKind holderKindOf(SlotClass cls);

/// The class of a slot and what it names.
struct Slot {
  SlotClass cls = SlotClass::Other;
  uint32_t node = kNoEntry; // Heap
  uint32_t where = 0;       // Unlisted: heap; Stack: thread; Global: module
};

/// A reference between blocks: the word at offset `offset` of block `src` points into `dst`
/// (offset saturated at UINT32_MAX).
struct Edge {
  uint32_t src, dst, offset;
};

/// A reference from a root into block `node`. Registers: `slot` is 0 and `where` is the thread's
/// index times 256 plus the register's.
struct RootRef {
  uint64_t slot;
  uint32_t node;
  uint32_t where;
  HolderKind kind;
};

/// A reference into target `target`, as found.
struct TargetRef {
  uint64_t slot, value;
  uint32_t target;
  Slot from;
  bool is_register = false; // then from.where is the thread's index times 256 plus the register's
};

/// What one piece of memory gave. Edges come in the order of their words (so by source block);
/// roots and unlisted references once per block and kind in the piece; target references at most
/// kHoldersShown per target and kind in the piece, all of them counted.
struct PieceHits {
  PieceHits() = default;
  // Moved, never copied: DenseMap's move does not throw but is not declared noexcept, and without
  // these a vector of pieces copied every piece each time it grew.
  PieceHits(PieceHits &&) noexcept = default;
  PieceHits &operator=(PieceHits &&) noexcept = default;

  std::vector<Edge> edges;
  std::vector<RootRef> roots;
  std::vector<uint32_t> unlisted; // blocks referenced from words of unlisted objects
  std::vector<TargetRef> target_refs;
  llvm::DenseMap<uint32_t, uint64_t> target_counts; // target -> references
  uint64_t bytes = 0;
};

/// Classes slots: the walkers' bookkeeping, their areas, the threads' stacks and the modules'
/// images, by address.
class SlotClassifier {
public:
  /// `nodes` names every listed block when `complete` (else the words of an area outside the
  /// blocks it holds are Unlisted, whatever the walker's listing); `partial` (partialHeaps) says
  /// of each walker result whether its area's words outside its blocks are Unlisted anyway.
  SlotClassifier(const Snapshot &snapshot, llvm::ArrayRef<HeapWalkResult> heaps,
                 const std::vector<bool> &partial, const Directory &nodes, bool complete);

  /// The class of the word at `slot`; `cursor` is the caller's position in the node directory
  /// (kNoEntry to start), which only moves forward while slots grow.
  Slot classify(uint64_t slot, uint32_t &cursor) const;
  /// Where node `node` starts.
  uint64_t nodeStart(uint32_t node) const { return nodes_.starts[node]; }
  /// True when `value` points inside node `node` but not at its start, and the node's runtime
  /// refers to its objects only by their start (HeapWalkResult::references_at_start).
  bool interior(uint32_t node, uint64_t value) const {
    const uint16_t heap = nodes_.heaps[node];
    return value != nodes_.starts[node] && heap < at_start_.size() && at_start_[heap];
  }
  /// True when the word at `slot`, of class `from`, is no reference to node `node` by what its
  /// runtime says: a stack other than those that may hold its objects
  /// (HeapWalkResult::stacks), or, for a runtime held only through handles
  /// (HeapWalkResult::held_through_handles), a word outside its areas and outside its handles.
  bool ruledOutByRuntime(const Slot &from, uint64_t slot, uint32_t node) const;

private:
  struct Zone {
    uint64_t start, end;
    uint32_t where;
    bool partial; // areas: the walker's listing is partial
  };
  /// The zone of `zones` (sorted, not overlapping) holding `address`, or nullptr.
  static const Zone *find(const std::vector<Zone> &zones, uint64_t address);

  const Directory &nodes_;
  bool complete_;
  std::vector<Zone> bookkeeping_, areas_, live_stacks_, dead_stacks_, modules_;
  std::vector<Zone> runtime_stacks_; // `where` as a Stack slot's
  /// Per walker result: its handle slots, when it is held only through handles (else empty and
  /// held_through_handles_ false).
  std::vector<std::vector<Zone>> handles_;
  /// Per walker result: the stacks that may hold its objects (empty: every stack).
  std::vector<std::vector<Zone>> stacks_;
  std::vector<bool> held_through_handles_;
  std::vector<bool> at_start_; // per walker result: references_at_start
};

/// A walker's area whose references are 32-bit words (HeapWalkResult::narrow_references).
struct NarrowZone {
  uint64_t start, end; // [start, end)
  uint64_t base;
  unsigned shift;
};

/// The areas of `heaps` whose references are 32-bit words, by start, not overlapping.
std::vector<NarrowZone> narrowZones(llvm::ArrayRef<HeapWalkResult> heaps);

/// What the pass looks for and keeps.
struct PassPlan {
  const Directory *probe = nullptr; // the blocks references are looked for into
  const PageFilter *filter = nullptr;
  /// For each probe entry: its node in the node directory (empty: the same index).
  const std::vector<uint32_t> *probe_nodes = nullptr;
  /// For each probe entry that is a target (kTarget): its target index, else kNoEntry.
  const std::vector<uint32_t> *probe_targets = nullptr;
  const SlotClassifier *slots = nullptr;
  /// Address ranges [first, second) not read (sorted, not overlapping): the targets' opaque
  /// bytes.
  const std::vector<std::pair<uint64_t, uint64_t>> *opaque = nullptr;
  /// Address ranges [first, second) not read either, and not counted as opaque (sorted, not
  /// overlapping): whole pages of the walkers' bookkeeping, whose words are no holder.
  const std::vector<std::pair<uint64_t, uint64_t>> *unread = nullptr;
  /// The areas read as 32-bit references (narrowZones), or nullptr.
  const std::vector<NarrowZone> *narrow = nullptr;
  bool edges = false;  // keep references between blocks (and from roots): chains
  uint64_t budget = 0; // the most edges and root references kept in all
  unsigned threads = 1;
};

/// The pass over every captured writable memory range (regions writable, or whose permissions the
/// dump does not give) but plan.opaque and plan.unread, each word read as a pointer (32-bit words
/// decoded inside plan.narrow), cut into pieces of at most a few tens of MiB scanned on
/// plan.threads threads; pieces in address order. `over_budget` is set when the references kept
/// passed the budget (the pieces then keep no more edges and roots); `opaque_bytes` receives the
/// captured writable bytes plan.opaque kept from being read. Pages are released behind each piece.
std::vector<PieceHits> scanMemory(const AddressSpace &memory, const PassPlan &plan,
                                  bool &over_budget, uint64_t &opaque_bytes, ProgressFn progress);

/// The references in the threads' registers, as one piece.
PieceHits scanRegisters(const Snapshot &snapshot, const PassPlan &plan);

} // namespace dumpsift::holders
